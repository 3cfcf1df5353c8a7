"""Third probe (issue 20 item 3): the new oracle's chunk plan and budget on the H200, kept as it ran.

    PYTHONPATH=$PWD python3 docs/evidence/2026-12-02-oracle-speed-probe3.py $OUT

For every shape of benchmarks/oracle_bench.py, the oracle's time (best of 5, synchronised) with
oracle.reference._GEMM_ROWS at 0 (one KV head's group per chunk, always), 128 (the default:
several groups only when a group has < 128 query rows) and 10**9 (several groups whenever all
rows fit, the old plan). Then issue 20's shape at larger budgets, with the peak memory each adds.
"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
from oracle_bench import SHAPES, attended_flops  # noqa: E402

from oracle import reference  # noqa: E402
from scenarios.tensors import materialize  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
DEV = "cuda"


def wall(fn, reps=5):
    fn()
    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


res: dict = {"gemm_rows": {}, "budgets": {}}
default = reference._GEMM_ROWS
for name, case in SHAPES.items():
    inp = materialize(case, 0, DEV)
    row = {}
    for g in (0, 128, 10**9):
        reference._GEMM_ROWS = g
        row[g] = round(wall(lambda: reference.attention(inp)) * 1e3, 2)
    reference._GEMM_ROWS = default
    res["gemm_rows"][name] = row
    print(f"{name:34s} ms by _GEMM_ROWS {row}", flush=True)
    del inp
case = SHAPES["q4096 kv8192 h32/8"]
inp = materialize(case, 0, DEV)
for mib in (256, 512, 1024, 4096):
    t = wall(lambda: reference.attention(inp, budget_bytes=mib * 2**20), 3)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    reference.attention(inp, budget_bytes=mib * 2**20)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    res["budgets"][mib] = {"ms": round(t * 1e3, 2), "tflops": round(attended_flops(case) / t / 1e12, 1),
                           "peak_mib": round(peak / 2**20, 1)}
    print(f"budget {mib} MiB: {res['budgets'][mib]}", flush=True)
with open(os.path.join(OUT, "probe3.json"), "w") as f:
    json.dump(res, f, indent=1)
