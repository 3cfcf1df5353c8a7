"""`attncheck threshold [NAME ...]`: the seeds' A/B tables with the routing threshold each gives.

The rule is routing/threshold.py's, the tables routing/ab_tables.py's. Exit status: 0 rendered,
2 an unknown table name (one line naming it and the fix).
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

from conformance.commands.common import EXIT_OK, EXIT_USAGE, add_forwarded, prog
from conformance.usage import Parser

NAME = "threshold"


def add_parser(sub: Any) -> None:
    add_forwarded(sub, NAME, "derive short-query thresholds from the seeds' A/B tables")


def forward(argv: Sequence[str]) -> int:
    from routing import ab_tables
    from routing.threshold import derive, render
    from scenarios.errors import InvalidValue

    p = Parser(prog=prog(NAME), description="Derive short-query thresholds from the seeds' A/B tables.")
    p.add_argument("names", nargs="*", help=f"tables to render (default: all): {', '.join(ab_tables.TABLES)}")
    args = p.parse_args(list(argv))
    try:
        for name in args.names:
            if name not in ab_tables.TABLES:
                raise InvalidValue(
                    "NAME", name, f"one of {', '.join(ab_tables.TABLES)}", "run with no argument to render every table"
                )
        for name in args.names or list(ab_tables.TABLES):
            table = ab_tables.TABLES[name]
            print(f"## {name}\n")
            print(render(table, derive(table, ab_tables.OBSERVATIONS.get(name, ()))))
    except InvalidValue as e:
        print(f"{prog(NAME)}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
