#!/usr/bin/env python3
"""An attncheck command run with one of attncheck's library-state faults injected into torch.

    python scripts/run_with_state_fault.py FAULT explore --target torch --out DIR
    python scripts/run_with_state_fault.py --list

FAULT is a name of kernels/torch_state_faults.py's catalogue; everything after it is an attncheck command line,
run in this process with the fault switched on (its records say "+fault:FAULT" in the torch version). The
scripts an exploration writes are verified in fresh processes with the same fault injected (ATTNCHECK_INJECTED).
Exit status: the command's, 2 for an unknown fault.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fault_command import run_with_fault  # noqa: E402
from kernels.torch_state_faults import FAULTS, injected  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_with_fault(sys.argv[1:], "state fault", FAULTS, injected, lambda f: f"{f.name:12} {f.description}"))
