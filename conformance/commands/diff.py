"""`attncheck diff BASE NEW`: compare new results with a baseline (attncheck record) for regressions.

Exit status: 0 no regression in a complete comparison, 1 a regression or an incomplete comparison
(a side without its end record, or lacking pairs the other has: said in the report's first line),
2 bad usage or sides that cannot be compared (no pair in common included), in one line naming the
value and the fix, before any file is written.

A side's `attncheck ledger verify` results are read from ledger-verify.json in its directory, or
from --base-ledger / --new-ledger FILE (repeatable: several runs of one version, per entry the newest
that ran its script): newly failing records a reproduced entry explains are
"known, still present", entries no longer reproduced "fixed by the upgrade" (docs/upgrade-diff.md).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Optional, Sequence

from conformance.commands.common import EXIT_FAILED, EXIT_OK, out_dir
from scenarios.errors import InvalidValue

NAME = "diff"
DEFAULTS = {"--error-factor": 2.0, "--error-floor": 0.25}
DIFF_MD, DIFF_JSON = "diff.md", "diff.json"


def add_parser(sub: Any) -> None:
    d = sub.add_parser(NAME, help="compare NEW results with a BASE baseline; exit 1 on a regression")
    d.add_argument("base", metavar="BASE", help="baseline: results file or directory (attncheck record --out)")
    d.add_argument("new", metavar="NEW", help="new results: file or directory")
    d.add_argument(
        "--error-factor",
        type=float,
        default=DEFAULTS["--error-factor"],
        help="error growth that is a regression: NEW worst err/bound > FACTOR x BASE (default 2)",
    )
    d.add_argument(
        "--error-floor",
        type=float,
        default=DEFAULTS["--error-floor"],
        help="... and NEW worst err/bound at least this (default 0.25 of the bound)",
    )
    d.add_argument(
        "--max-slowdown",
        type=float,
        default=0.10,
        help="allowed slowdown: a timing regression when the interval of NEW/BASE lies above 1 + this (default 0.10)",
    )
    d.add_argument("--out", default=None, help=f"directory for {DIFF_MD} and {DIFF_JSON}")
    for side in ("base", "new"):
        d.add_argument(
            f"--{side}-ledger",
            action="append",
            default=None,
            metavar="FILE",
            help=f"{side.upper()}'s `attncheck ledger verify` results (default: ledger-verify.json in {side.upper()}, "
            "if there); repeatable: several runs of one version, per entry the newest that ran its script",
        )
    d.set_defaults(handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from conformance import record_diff as rd
    from reports.merge import load_runs

    for flag, v in (("--error-factor", args.error_factor), ("--error-floor", args.error_floor)):
        if not v > 0:
            raise InvalidValue(flag, v, "a positive number", f"pass e.g. {flag} {DEFAULTS[flag]}")
    if not args.max_slowdown >= 0:
        raise InvalidValue("--max-slowdown", args.max_slowdown, "a fraction >= 0", "pass e.g. --max-slowdown 0.10")
    base, new = rd.side("BASE", load_runs([args.base])), rd.side("NEW", load_runs([args.new]))
    rd.check_compatible(base, new)
    base, new = _with_ledger(base, args.base, args.base_ledger), _with_ledger(new, args.new, args.new_ledger)
    rep = rd.diff(base, new, args.error_factor, args.error_floor, args.max_slowdown)
    md = rd.render_markdown(rep)
    if args.out:
        out_dir("--out", args.out)
        with open(os.path.join(args.out, DIFF_MD), "w", encoding="utf-8") as f:
            f.write(md)
        with open(os.path.join(args.out, DIFF_JSON), "w", encoding="utf-8") as f:
            json.dump(rd.to_json(rep), f, indent=1, sort_keys=True)
    print(md)
    return EXIT_FAILED if rep.exit_status else EXIT_OK


def _with_ledger(side: Any, path: str, given: Optional[list[str]]) -> Any:
    """The side with its verify results: the files given (combined), else ledger-verify.json in its directory,
    else none."""
    from conformance import ledger_verify_files as files
    from conformance import record_diff as rd

    flag = f"--{side.name.lower()}-ledger"
    found = os.path.join(path, files.VERIFY_JSON)
    if given:
        return rd.with_ledger(side, files.combined([files.load(g, flag) for g in given], flag))
    if not (os.path.isdir(path) and os.path.isfile(found)):
        return side
    return rd.with_ledger(side, files.load(found, side.name))
