"""Fourth probe (issue 20 item 3): where the final oracle's time goes on the H200, kept as it ran.

    PYTHONPATH=$PWD python3 docs/evidence/2026-12-02-oracle-speed-probe4.py $OUT

torch.profiler over one oracle call on three shapes of benchmarks/oracle_bench.py (top kernels by
device time, and the number of launches), then issue 20's shape at budgets of 256 MiB to 4 GiB
(time and the peak memory the call adds): how far the chunked eager oracle goes with more memory.
Last, every bench shape: the old oracle (.probe/reference_orig.py, commit 0057c98, if carried)
against the new one with _SCORE_COPIES at 2 (the default) and 3 (the old accounting).
"""
import importlib.util
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
from oracle_bench import SHAPES, attended_flops  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from oracle import reference  # noqa: E402
from oracle.reference import attention  # noqa: E402
from scenarios.tensors import materialize  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
res: dict = {"profiles": {}, "budgets": {}}
for name in ("decode b32 kv4096 h32/8", "prefill q512 kv4096 h32/8 causal", "q4096 kv8192 h32/8"):
    inp = materialize(SHAPES[name], 0, "cuda")
    attention(inp)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        attention(inp)
        torch.cuda.synchronize()
    ka = prof.key_averages()
    rows = sorted(((e.key, e.count, e.device_time_total / 1e3, e.cpu_time_total / 1e3) for e in ka
                   if e.device_time_total > 0), key=lambda r: -r[2])
    launches = sum(e.count for e in ka if e.key in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC"))
    res["profiles"][name] = {"launches": launches, "top": rows[:12]}
    print(f"== {name}: {launches} launches")
    for r in rows[:12]:
        print(f"  {r[0][:60]:60s} x{r[1]:5d}  device {r[2]:8.2f} ms  cpu {r[3]:8.2f} ms")
    del inp
case = SHAPES["q4096 kv8192 h32/8"]
inp = materialize(case, 0, "cuda")
for mib in (256, 512, 1024, 4096):
    attention(inp, budget_bytes=mib * 2**20)
    best = float("inf")
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        attention(inp, budget_bytes=mib * 2**20)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    attention(inp, budget_bytes=mib * 2**20)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    res["budgets"][mib] = {"ms": round(best * 1e3, 2), "tflops": round(attended_flops(case) / best / 1e12, 1),
                           "peak_mib": round(peak / 2**20, 1)}
    print(f"budget {mib} MiB: {res['budgets'][mib]}", flush=True)
old = None
if os.path.exists(".probe/reference_orig.py"):
    spec = importlib.util.spec_from_file_location("reference_orig", ".probe/reference_orig.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["reference_orig"] = mod
    spec.loader.exec_module(mod)
    old = mod.attention


def wall(fn, reps=5):
    fn()
    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return round(best * 1e3, 2)


res["old_new"] = {}
for name, case in SHAPES.items():
    inp = materialize(case, 0, "cuda")
    row = {"new_ms": wall(lambda: attention(inp))}
    reference._SCORE_COPIES = 3
    row["new_3copies_ms"] = wall(lambda: attention(inp))
    reference._SCORE_COPIES = 2
    if old is not None:
        row["old_ms"] = wall(lambda: old(inp))
    res["old_new"][name] = row
    print(f"{name:34s} {row}", flush=True)
    del inp
with open(os.path.join(OUT, "probe4.json"), "w") as f:
    json.dump(res, f, indent=1)
