"""An attncheck command run in this process with one fault of a torch fault catalogue switched on: the body
of scripts/run_with_batch_fault.py and scripts/run_with_precision_fault.py, which name their catalogue."""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, ContextManager, Mapping


def run_with_fault(
    argv: list[str],
    kind: str,
    faults: Mapping[str, Any],
    injected: Callable[[str], ContextManager[Any]],
    line: Callable[[Any], str],
) -> int:
    """`--list` prints `line(fault)` for each fault; `FAULT CMD...` runs the attncheck command CMD with FAULT on
    and returns its exit status; 2 for an unknown fault. The listing and the refusal import no torch."""
    if argv[:1] == ["--list"]:
        for f in faults.values():
            print(line(f))
        return 0
    if not argv or argv[0] not in faults:
        given = argv[0] if argv else "nothing"
        print(f"{kind}: got {given!r}; pass one of {', '.join(faults)} (or --list)", file=sys.stderr)
        return 2
    from conformance.cli import main
    from conformance.isolate import INJECTED_ENV

    # `--isolate` children inject it again (conformance/isolate.py INJECTED_ENV): a child is a fresh interpreter
    os.environ[INJECTED_ENV] = f"{injected.__module__}:{argv[0]}"
    with injected(argv[0]):
        return main(argv[1:])
