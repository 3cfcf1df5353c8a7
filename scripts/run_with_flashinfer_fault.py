#!/usr/bin/env python3
"""An attncheck command run against FlashInfer with one of attncheck's source faults in its kernels.

    python scripts/run_with_flashinfer_fault.py FAULT prebuild --backend fa2 --case @cases.json
    python scripts/run_with_flashinfer_fault.py FAULT run --target flashinfer --backend fa2 --out DIR
    python scripts/run_with_flashinfer_fault.py --list

FAULT is a name of kernels/flashinfer/source_faults.py's catalogue ("honest" is the unedited copy,
the control). The installed package is copied with the fault's header edits under
$ATTNCHECK_FAULT_ROOT (default: the temporary directory), once per fault and version, and that copy
is what the command imports: its modules build into the copy's own JIT cache (so do not pass
--jit-cache), and its records say "+fault:FAULT" in the flashinfer version. Exit status: the
command's (a run exits 1 when a record fails), 2 for an unknown fault or one whose edits do not apply
to the installed version.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fault_command import run_with_fault  # noqa: E402
from kernels.flashinfer.source_faults import FAULTS, FaultDoesNotApply, injected  # noqa: E402

if __name__ == "__main__":
    try:
        code = run_with_fault(
            sys.argv[1:], "FlashInfer source fault", FAULTS, injected, lambda f: f"{f.name:20} {f.description}"
        )
    except FaultDoesNotApply as e:
        print(f"FlashInfer source fault {sys.argv[1]}: {e}. Fix: update the edit for this version", file=sys.stderr)
        code = 2
    sys.exit(code)
