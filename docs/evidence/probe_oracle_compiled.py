#!/usr/bin/env python3
"""Probe: the oracle's softmax as one compiled function (Inductor, Triton) on a GPU: speed, compile time, error.

The literal softmax (mask, max, exp, sum, LSE) written once without in-place steps and handed to torch.compile,
which fuses it into one or two kernels: two reads of the scores and one write of exp(s - max), where the eager
fused softmax (max with its key, then torch.softmax) takes three reads and one write. The GEMMs stay fp32 with
TF32 off. The probe reports, for one chunk as the oracle holds it on issue 20's shape, each way's time; for
issue 20's shape and the bench's: the whole oracle with its eager fused softmax and with the compiled one, the
first call's time (the compile), and each way's max abs error of out and LSE against the fp64 oracle.
Run from the repository root: python3 docs/evidence/probe_oracle_compiled.py
"""

import math
import os
import sys
import time

sys.path.insert(0, os.getcwd())

import torch  # noqa: E402

from benchmarks.oracle_bench import SHAPES as BENCH_SHAPES  # noqa: E402
from benchmarks.oracle_bench import _best, attended_flops  # noqa: E402
from oracle import reference  # noqa: E402
from oracle.honest import EXACT  # noqa: E402
from oracle.reference import attention  # noqa: E402

FUSED = reference._softmax_fused


def softmax_exact(s, keep, cap: float):
    """The literal softmax of oracle.reference._softmax (EXACT rounding), without in-place steps."""
    if cap > 0:
        s = torch.tanh(s / cap) * cap
    if keep is not None:
        s = s.masked_fill(~keep.unsqueeze(0), -math.inf)
    m = s.amax(dim=-1, keepdim=True)
    empty = torch.isneginf(m)
    e = torch.exp(s - torch.where(empty, 0.0, m))
    denom = e.sum(dim=-1, keepdim=True)
    lse = (m + torch.log(denom)).squeeze(-1)
    return e, torch.where(empty, 1.0, denom), lse.transpose(0, 1)


COMPILED = torch.compile(softmax_exact, dynamic=True, fullgraph=True)


def compiled_way(s, keep, cap, rounding, size):
    return COMPILED(s, keep, cap)


def chunk_table():
    s0 = torch.randn(8, 4096, 8192, device="cuda") * 3
    t0 = time.perf_counter()
    COMPILED(s0.clone(), None, 0.0)
    torch.cuda.synchronize()
    print(f"first compiled call (compile) on the chunk: {time.perf_counter() - t0:.1f} s", flush=True)
    keep = torch.ones(4096, 8192, dtype=torch.bool, device="cuda").tril(4096)
    for name, fn in {
        "eager fused (max with key, torch.softmax)": lambda s: FUSED(s, None, 0.0, EXACT, None),
        "compiled literal": lambda s: COMPILED(s, None, 0.0),
        "eager fused, causal mask": lambda s: FUSED(s, keep, 0.0, EXACT, None),
        "compiled literal, causal mask": lambda s: COMPILED(s, keep, 0.0),
        "compiled literal, soft cap 30": lambda s: COMPILED(s, None, 30.0),
    }.items():
        s = s0.clone()
        fn(s)
        t = _best(lambda fn=fn, s=s: fn(s.copy_(s0)), "cuda", 5) * 1e3
        c = _best(lambda s=s: s.copy_(s0), "cuda", 5) * 1e3
        print(f"| {name} | {t - c:.3f} ms (less the copy {c:.3f}) |", flush=True)
    e, d, lse = COMPILED(s0.clone(), None, 0.0)
    p, _, lse_f = FUSED(s0.clone(), None, 0.0, EXACT, None)
    print(
        f"chunk: max |e/denom - P_fused| {(e / d - p).abs().max().item():.3g}, "
        f"max |lse - lse_fused| {(lse - lse_f).abs().max().item():.3g}",
        flush=True,
    )


def main():
    import triton

    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}", flush=True)
    chunk_table()
    print("| shape | way | first call s | ms | TFLOP/s (attended pairs) | max abs err out vs fp64 | lse vs fp64 |")
    print("|---|---|---|---|---|---|---|")
    from scenarios.tensors import materialize

    for name, case in BENCH_SHAPES.items():
        inputs = materialize(case, device="cuda")
        exact = attention(inputs, precision="fp64")
        flops = attended_flops(case)
        for way, fn in {"eager fused": FUSED, "compiled": compiled_way}.items():
            reference._softmax_fused = fn
            t0 = time.perf_counter()
            got = attention(inputs)
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
            t = _best(lambda inputs=inputs: attention(inputs), "cuda", 3) * 1e3
            eo = (got.out.double() - exact.out).abs().max().item()
            el = (got.lse.double() - exact.lse).nan_to_num(0.0, 0.0, 0.0).abs().max().item()
            print(
                f"| {name} | {way} | {first:.1f} | {t:.2f} | {flops / t / 1e9:.1f} | {eo:.3g} | {el:.3g} |", flush=True
            )
        reference._softmax_fused = FUSED
        del inputs, exact
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
