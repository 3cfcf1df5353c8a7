"""`attncheck ledger verify [ID ...]` runs the known-failure ledger's evidence scripts against the installed library;
`attncheck ledger report [ID ...]` writes each family of entries up for the library's maintainers (docs/ledger.md).

verify's exit status: 0 when nothing contradicts the ledger (every entry judged here reproduces, or does not
where the entry does not list the installed version; an entry this machine cannot judge, for want of its
library, its architecture or a GPU, counts for nothing), 1 when an entry listed for the installed version does
not reproduce or a script could not run here, 2 on bad usage before anything is written, 130/143 interrupted
(what ran is kept). report's: 0 written, 2 on bad usage (an unknown id, an --out that cannot be written).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Sequence

from conformance.commands.common import EXIT_OK, PROG, out_dir, writable_file
from conformance.progress import pace
from conformance.usage import usable_out_dir
from scenarios.errors import InvalidValue

NAME = "ledger"
DEFAULT_OUT = "attncheck-ledger-verify"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="the known-failure ledger: `verify` runs each entry's evidence script")
    actions = p.add_subparsers(dest="ledger_action", required=True, metavar="ACTION")
    v = actions.add_parser(
        "verify",
        help="run each entry's evidence script against the installed library; exit 1 where the ledger is wrong",
        description=__doc__.splitlines()[0],
    )
    v.add_argument("ids", nargs="*", metavar="ID", help="entries to verify (default: every entry)")
    v.add_argument("--target", choices=("flashinfer", "torch"), default=None, help="only this library's entries")
    v.add_argument(
        "--out", default=DEFAULT_OUT, help=f"directory for ledger-verify.json, .md and <id>.txt (default {DEFAULT_OUT})"
    )
    v.add_argument("--timeout", type=float, default=300.0, help="wall-clock seconds per script (default 300)")
    v.add_argument("--python", default=None, help="interpreter of the environment under test (default: this one)")
    v.set_defaults(handler=handle_verify)
    r = actions.add_parser(
        "report",
        help="write each family of entries up as Markdown a maintainer would accept (title, versions, "
        "environment, script, expected and observed, root cause, related reports)",
        description="Write the ledger's families up as upstream reports, from the recorded evidence.",
    )
    r.add_argument("ids", nargs="*", metavar="ID", help="entries or families to write up (default: every family)")
    r.add_argument("--out", default=None, metavar="FILE", help="write the Markdown here (default: standard output)")
    r.set_defaults(handler=handle_report)


def handle_verify(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from conformance import known_failures, ledger_env
    from conformance import ledger_verify as lv
    from conformance.ledger_verify_files import VERIFY_MD

    entries = lv.select(known_failures.LEDGER, list(dict.fromkeys(args.ids)), args.target)
    if not args.timeout > 0:
        raise InvalidValue("--timeout", args.timeout, "a positive number of seconds", "pass e.g. --timeout 300")
    python = lv.interpreter(args.python)
    usable_out_dir("--out", args.out)
    env = ledger_env.probe(python)
    out_dir("--out", args.out)

    started, done = time.monotonic(), [0]

    def said(o: Any) -> None:
        done[0] += 1
        print(
            f"[{done[0]}/{len(entries)}] {o.id}: {o.status} ({o.reason}){' [fails]' if o.fails else ''}; "
            f"{pace(done[0], len(entries), time.monotonic() - started)}",
            flush=True,
        )

    report = lv.verify(entries, env, args.out, args.timeout, [PROG, *argv], on_outcome=said)
    print(f"{args.out}/{VERIFY_MD}: exit {report.exit_status}")
    return report.exit_status


def handle_report(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from conformance import known_failures
    from conformance.ledger_env import ROOT
    from conformance.ledger_report import render

    text = render(list(dict.fromkeys(args.ids)), known_failures.LEDGER, ROOT)
    if args.out is None:
        sys.stdout.write(text)
        return EXIT_OK
    writable_file("--out", args.out)
    tmp = args.out + ".partial"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, args.out)
    print(f"{args.out}: {text.count(chr(10) + '## ')} report(s)")
    return EXIT_OK
