"""`attncheck explore`: the stateful scenario machines (conformance/explore/loop.py keeps the parser).

Exit status as loop.py says: 0 everything held, 1 otherwise, 2 bad usage.
"""

from __future__ import annotations

from typing import Any, Sequence

from conformance.commands.common import add_forwarded, prog

NAME = "explore"


def add_parser(sub: Any) -> None:
    add_forwarded(sub, NAME, "drive the stateful scenario machines")


def forward(argv: Sequence[str]) -> int:
    from conformance.explore.loop import main

    return main(list(argv), prog=prog(NAME))
