#!/usr/bin/env python3
"""Probe: what could take the oracle past 30 TFLOP/s on issue 20's shape, measured on a GPU.

One chunk as the oracle holds it at the H200's 4 GiB budget (8 query heads over 2 KV heads, 4096 rows, 8192 keys,
fp32, TF32 off), best of 5, ms:
  * the row max with its key, then torch.softmax (the fused softmax's two passes), one after the other and with
    the max on a second stream beside the softmax (both only read the scores);
  * log_softmax and torch._safe_softmax beside torch.softmax;
  * the two GEMMs (q.k^T into the scores, P.V) with torch's default BLAS and with cuBLASLt preferred.
Then the whole oracle on the shape (32/8 heads): as it is, with the max on a second stream, with cuBLASLt
preferred, and at an 8 GiB budget. Run from the repository root: python3 docs/evidence/probe_oracle_overlap.py
"""

import math
import os
import sys
import time

sys.path.insert(0, os.getcwd())

import torch  # noqa: E402

from oracle import reference  # noqa: E402
from oracle.reference import attention  # noqa: E402
from scenarios.case import Case  # noqa: E402
from scenarios.tensors import materialize  # noqa: E402

FUSED = reference._softmax_fused


def best(fn, n=5):
    fn()
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


def softmax_side_max(s, keep, cap, rounding, size):
    """_softmax_fused with the row max taken on a second stream while torch.softmax runs on the first."""
    reference._cap_and_mask(s, keep, cap, rounding)
    main, side = torch.cuda.current_stream(), SIDE
    m = torch.empty((*s.shape[:-1], 1), dtype=s.dtype, device=s.device)
    at = torch.empty((*s.shape[:-1], 1), dtype=torch.long, device=s.device)
    side.wait_stream(main)
    with torch.cuda.stream(side):
        torch.max(s, dim=-1, keepdim=True, out=(m, at))
    empty_fix = keep is not None
    if empty_fix:  # the empty rows' fix needs m before the softmax: no overlap under a mask
        main.wait_stream(side)
        empty = torch.isneginf(m)
        s[..., :1].masked_fill_(empty, 0.0)
    p = torch.softmax(s, dim=-1)
    main.wait_stream(side)
    empty = torch.isneginf(m)
    lse = (m - torch.log(p.gather(-1, at))).squeeze(-1)
    return p, torch.where(empty, math.inf, 1.0), lse.transpose(0, 1)


SIDE = None


def one_chunk(dev):
    torch.manual_seed(0)
    n, g, rows, kv, d = 2, 4, 4096, 8192, 128
    q = torch.randn(n, g * rows, d, device=dev)
    kt = torch.randn(kv, n, d, device=dev).permute(1, 2, 0)
    v = torch.randn(kv, n, d, device=dev).transpose(0, 1)
    s = torch.empty(n * g, rows, kv, device=dev)
    s.view(n, -1, kv).baddbmm_(q, kt, beta=0.0, alpha=d**-0.5)
    o = torch.empty(n, g * rows, d, device=dev)

    def seq():
        m, at = s.max(dim=-1, keepdim=True)
        torch.softmax(s, dim=-1)

    def overlapped():
        main_stream = torch.cuda.current_stream()
        SIDE.wait_stream(main_stream)
        with torch.cuda.stream(SIDE):
            s.max(dim=-1, keepdim=True)
        torch.softmax(s, dim=-1)
        main_stream.wait_stream(SIDE)

    p = torch.softmax(s, dim=-1)
    rows_ = {
        "max with index, then torch.softmax": seq,
        "max with index on a second stream beside torch.softmax": overlapped,
        "torch.softmax": lambda: torch.softmax(s, dim=-1),
        "log_softmax": lambda: torch.log_softmax(s, dim=-1),
        "torch._safe_softmax": lambda: torch._safe_softmax(s, -1),
        "q.k^T (baddbmm into the scores)": lambda: s.view(n, -1, kv).baddbmm_(q, kt, beta=0.0, alpha=d**-0.5),
        "P.V (baddbmm)": lambda: o.baddbmm_(p.view(n, -1, kv), v, beta=0.0),
    }
    print("| one chunk [8, 4096, 8192] | ms |\n|---|---|")
    for name, fn in rows_.items():
        print(f"| {name} | {best(fn):.3f} |", flush=True)
    for lib in ("cublaslt", "cublas"):
        try:
            torch.backends.cuda.preferred_blas_library(lib)
        except Exception as e:  # noqa: BLE001
            print(f"| preferred_blas_library({lib}) | {type(e).__name__}: {e} |")
            continue
        qk = best(lambda: s.view(n, -1, kv).baddbmm_(q, kt, beta=0.0, alpha=d**-0.5))
        pv = best(lambda: o.baddbmm_(p.view(n, -1, kv), v, beta=0.0))
        print(f"| {lib} preferred: q.k^T | {qk:.3f} |\n| {lib} preferred: P.V | {pv:.3f} |", flush=True)
    torch.backends.cuda.preferred_blas_library("cublas")


def main():
    global SIDE
    dev = "cuda"
    SIDE = torch.cuda.Stream()
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    one_chunk(dev)
    torch.cuda.empty_cache()
    case = Case("single", (4096,), (8192,), 32, 8, q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32")
    inputs = materialize(case, device=dev)
    flops = 4 * 32 * 4096 * 8192 * 128
    want = attention(inputs)
    print("\n| the oracle, q4096 kv8192 h32/8 | ms | TFLOP/s | max abs diff to as-is |\n|---|---|---|---|")

    def variant(name, fn):
        got = fn()
        t = best(fn, n=3)
        diff = max((got.out - want.out).abs().max().item(), (got.lse - want.lse).abs().max().item())
        print(f"| {name} | {t:.2f} | {flops / t / 1e9:.2f} | {diff:.3g} |", flush=True)

    variant("as it is", lambda: attention(inputs))
    reference._softmax_fused = softmax_side_max
    variant("the row max on a second stream", lambda: attention(inputs))
    reference._softmax_fused = FUSED
    torch.backends.cuda.preferred_blas_library("cublaslt")
    variant("cuBLASLt preferred", lambda: attention(inputs))
    torch.backends.cuda.preferred_blas_library("cublas")
    variant("8 GiB budget", lambda: attention(inputs, budget_bytes=8 << 30))
    variant("as it is, again", lambda: attention(inputs))


if __name__ == "__main__":
    main()
