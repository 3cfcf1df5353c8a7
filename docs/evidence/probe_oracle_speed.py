#!/usr/bin/env python3
"""Probe: where the oracle's time goes on a GPU, on issue 20's shape (fp32, TF32 off, 32/8 and 32/32 heads,
q 4096, kv 8192, head dim 128).

For each memory budget (the GPU's default last) and each layout of K in the q.k^T GEMM (`strided`: the oracle's
view of the gathered block, [KV heads, D, keys] with keys n*D apart; `kt-contiguous`: that view copied
contiguous; `k-contiguous`: [KV heads, keys, D] contiguous, transposed), by monkeypatching
oracle.reference._scaled_scores: the oracle's best of 3 (ms, TFLOP/s, peak memory it adds) and the GPU's busy
time inside one call (the sum of its kernels' times from torch.profiler) against the wall time: a GPU busy much
less than the wall is waiting on the host (launches, Python); at the default budget, the ten kernels that take
the most GPU time. Run from the repository root: python3 docs/evidence/probe_oracle_speed.py
"""

import os
import sys
import time

sys.path.insert(0, os.getcwd())

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from oracle import reference  # noqa: E402
from oracle.reference import DEFAULT_BUDGET_BYTES, attention, default_budget  # noqa: E402
from scenarios.case import Case  # noqa: E402
from scenarios.tensors import materialize  # noqa: E402

BUDGETS = (DEFAULT_BUDGET_BYTES, 1 << 30, default_budget(torch.device("cuda")))
STRIDED = reference._scaled_scores


def kt_contiguous(s, q, kt, scale):
    STRIDED(s, q, kt.contiguous(), scale)


def k_contiguous(s, q, kt, scale):
    STRIDED(s, q, kt.transpose(1, 2).contiguous().transpose(1, 2), scale)


LAYOUTS = {"strided": STRIDED, "kt-contiguous": kt_contiguous, "k-contiguous": k_contiguous}


def best(fn, n=3):
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return min(times)


def gpu_busy_ms(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return sum(getattr(e, "device_time", 0.0) or e.cuda_time for e in events) / 1000.0, len(events), prof


def main():
    dev = "cuda"
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for hkv in (8, 32):
        case = Case("single", (4096,), (8192,), 32, hkv, q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32")
        inputs = materialize(case, device=dev)
        flops = 4 * 32 * 4096 * 8192 * 128
        for budget in BUDGETS:
            for layout, scores in LAYOUTS.items():
                reference._scaled_scores = scores
                fn = lambda inputs=inputs, budget=budget: attention(inputs, budget_bytes=budget)  # noqa: E731
                fn()
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
                t = best(fn)
                peak = (torch.cuda.max_memory_allocated() - base) / 2**20
                busy, kernels, prof = gpu_busy_ms(fn)
                print(
                    f"h32/{hkv} budget {budget >> 20:6d} MiB {layout:13s}: {t * 1e3:7.2f} ms "
                    f"{flops / t / 1e12:6.2f} TFLOP/s, peak +{peak:8.1f} MiB, GPU busy {busy:7.2f} ms in "
                    f"{kernels} kernels",
                    flush=True,
                )
                if budget == BUDGETS[-1] and hkv == 8:
                    kw = dict(row_limit=10, max_name_column_width=60)
                    try:
                        table = prof.key_averages().table(sort_by="device_time_total", **kw)
                    except Exception:  # noqa: BLE001 - older names
                        table = prof.key_averages().table(sort_by="cuda_time_total", **kw)
                    print(table)
            reference._scaled_scores = STRIDED
        torch.backends.cuda.matmul.allow_tf32 = False
        q = inputs.q.transpose(0, 1).reshape(hkv, -1, 128)
        k = inputs.k.transpose(0, 1)
        s = torch.empty(hkv, q.shape[1], 8192, device=dev)
        t = best(lambda q=q, k=k, s=s: torch.bmm(q, k.transpose(1, 2), out=s))
        print(
            f"h32/{hkv} one bmm of all scores [{hkv}, {q.shape[1]}, 128] x [{hkv}, 128, 8192]: "
            f"{t * 1e3:.2f} ms, {flops / 2 / t / 1e12:.2f} TFLOP/s"
        )


if __name__ == "__main__":
    main()
