#!/usr/bin/env python3
"""An attncheck command run with one of attncheck's batch-axis faults injected into torch.

    python scripts/run_with_batch_fault.py FAULT run --target torch --budget quick --backend padded-math --out DIR
    python scripts/run_with_batch_fault.py --list

FAULT is a name of kernels/torch_batch_faults.py's catalogue; everything after it is an attncheck
command line, run in this process with the fault switched on, so its records say "+fault:FAULT" in
the torch version. Exit status: the command's (a run exits 1 when a record fails), 2 for an
unknown fault.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conformance.cli import main  # noqa: E402
from kernels.torch_batch_faults import FAULTS, injected  # noqa: E402


def run(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        for f in FAULTS.values():
            print(f"{f.name:26} {f.description} (reaches {', '.join(f.backends)})")
        return 0
    if not argv or argv[0] not in FAULTS:
        given = argv[0] if argv else "nothing"
        print(f"batch fault: got {given!r}; pass one of {', '.join(FAULTS)} (or --list)", file=sys.stderr)
        return 2
    with injected(argv[0]):
        return main(argv[1:])


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
