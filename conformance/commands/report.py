"""`attncheck report RESULTS...`: render or merge the results of several runners (markdown, JSON, HTML).

Exit status: 0 written (a run with no end record, or a path with no record beside others, is said
in the report's first line), 2 bad usage (results that cannot be merged or hold no record at all,
an output directory that cannot be created), in one line naming the value and the fix.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Sequence

from conformance.commands.common import EXIT_OK, out_dir
from scenarios.errors import InvalidValue

NAME = "report"
REPORT_MD, REPORT_JSON, REPORT_HTML = "report.md", "report.json", "report.html"


def add_parser(sub: Any) -> None:
    r = sub.add_parser(NAME, help="render or merge results of several runners: markdown, JSON, HTML")
    r.add_argument("results", nargs="+", metavar="RESULTS", help="results files or directories (any number)")
    r.add_argument("--out", default="attncheck-report", help=f"directory for {REPORT_MD}, {REPORT_JSON}, {REPORT_HTML}")
    r.add_argument("--title", default="attncheck report", help="the report's title")
    r.set_defaults(handler=handle)


def model_of(paths: Sequence[str], empty: Sequence[str] = ()) -> dict[str, Any]:
    """The combined report's model of the runs in `paths` (results files or directories), routing checked."""
    from conformance.route_records import check_runs  # imports the FlashInfer adapter module: only here
    from reports import combined
    from reports.merge import load_runs

    runs = load_runs(list(paths))
    return combined.build(runs, routing=check_runs(runs), empty_paths=list(empty))


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from reports import combined
    from reports.html import render_html
    from reports.merge import load_runs

    empty = [p for p in args.results if not load_runs([p])]
    if len(empty) == len(args.results):
        raise InvalidValue(
            "RESULTS",
            ", ".join(empty),
            "results holding at least one attncheck record",
            "pass the results of a run that wrote records (a run that died at once wrote none)",
        )
    model = model_of(args.results, empty)
    md, page = combined.render_markdown(model, args.title), render_html(model, args.title)
    out_dir("--out", args.out)
    for name, text in (
        (REPORT_MD, md),
        (REPORT_HTML, page),
        (REPORT_JSON, json.dumps(model, indent=1, sort_keys=True, allow_nan=False)),
    ):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write(text)
    print(md)
    print(f"written: {', '.join(os.path.join(args.out, n) for n in (REPORT_MD, REPORT_JSON, REPORT_HTML))}")
    return EXIT_OK
