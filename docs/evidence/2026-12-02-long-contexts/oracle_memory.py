#!/usr/bin/env python3
"""Peak memory and time of one long case's inputs and oracle on the CPU (one torch thread).

    python docs/evidence/2026-12-02-long-contexts/oracle_memory.py KV INDEX

KV: the key count of scenarios/matrix.py long_cases(KV); INDEX: which of its cases. Prints the inputs'
size and the process's peak RSS after materialising them and after the oracle's truth (fp32 and the
honest baseline): the oracle's chunks (oracle/reference.py, 256 MiB of temporaries at most) add to
the peak only where they exceed what materialising already took. Run each case in its own process.
"""

import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

import torch  # noqa: E402

from oracle.judge import truth  # noqa: E402
from scenarios.matrix import long_cases  # noqa: E402
from scenarios.tensors import materialize  # noqa: E402


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    torch.set_num_threads(1)
    kv, i = int(sys.argv[1]), int(sys.argv[2])
    c = long_cases(kv)[i]
    r0 = peak_mib()
    t0 = time.perf_counter()
    inputs = materialize(c, 0, "cpu")
    t1 = time.perf_counter()
    r1 = peak_mib()
    size = sum(t.numel() * t.element_size() for t in (inputs.q, inputs.k, inputs.v)) / 2**20
    truth(inputs)
    t2 = time.perf_counter()
    r2 = peak_mib()
    print(
        f"{c.id}: inputs {size:.0f} MiB; peak RSS {r0:.0f} MiB at start, {r1:.0f} after materialize, "
        f"{r2:.0f} after the oracle (+{r2 - r1:.0f}); materialize {t1 - t0:.1f} s, oracle {t2 - t1:.1f} s"
    )


if __name__ == "__main__":
    main()
