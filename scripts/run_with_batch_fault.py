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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fault_command import run_with_fault  # noqa: E402
from kernels.torch_batch_faults import FAULTS, injected  # noqa: E402

if __name__ == "__main__":
    sys.exit(
        run_with_fault(
            sys.argv[1:],
            "batch fault",
            FAULTS,
            injected,
            lambda f: f"{f.name:26} {f.description} (reaches {', '.join(f.backends)})",
        )
    )
