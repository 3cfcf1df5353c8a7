"""`attncheck routes RESULTS.jsonl --spec NAME --arch ARCH [--out DIR]`: a run's records against a routing spec.

conformance/route_records.py keeps the parser (also `python -m conformance.route_records`). Exit
status: 0 every observation passes and is explained, 1 one does not, 2 bad input.
"""

from __future__ import annotations

from typing import Any, Sequence

from conformance.commands.common import add_forwarded, prog

NAME = "routes"


def add_parser(sub: Any) -> None:
    add_forwarded(sub, NAME, "check a run's records against a routing spec")


def forward(argv: Sequence[str]) -> int:
    from conformance.route_records import main  # imports the FlashInfer adapter module: only here

    return main(list(argv), prog=prog(NAME))
