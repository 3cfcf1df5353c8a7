#!/usr/bin/env python3
"""Probe: the oracle's GEMMs as three TF32 GEMMs each (split precision, "3xTF32") on a GPU: speed and error.

Each fp32 operand is split x = hi + lo, hi = x rounded to TF32's 10-bit mantissa (exact in fp32), lo = x - hi;
a.b is taken as hi_a.hi_b + hi_a.lo_b + lo_a.hi_b with TF32 on, each product exact or off by TF32's rounding of
a lo (2^-22 of the whole), accumulated in fp32; the lo.lo term (2^-22) is dropped. Splitting q and K is cheap
(rows x head dim); splitting P is three passes over the scores, so P.V is measured both ways. The probe patches
oracle.reference._scaled_scores and _add_weighted_values and reports, for issue 20's shape and the bench's
shapes: the oracle's time both ways, and each way's max abs error of out and LSE against the fp64 oracle (the
fp32 oracle's own error is the yardstick). Run from the repository root: python3 docs/evidence/probe_oracle_3xtf32.py
"""

import os
import sys

sys.path.insert(0, os.getcwd())

import torch  # noqa: E402

from benchmarks.oracle_bench import SHAPES as BENCH_SHAPES  # noqa: E402
from benchmarks.oracle_bench import _best, attended_flops  # noqa: E402
from oracle import reference  # noqa: E402
from oracle.reference import attention  # noqa: E402
from scenarios.case import Case  # noqa: E402
from scenarios.tensors import materialize  # noqa: E402

SCORES, VALUES = reference._scaled_scores, reference._add_weighted_values


def split(x):
    hi = x.clone()
    hi.view(torch.int32).bitwise_and_(~((1 << 13) - 1))  # keep 11 significant bits: TF32 holds hi exactly
    return hi, x - hi


def tf32(fn):
    def wrapped(*a, **k):
        saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return fn(*a, **k)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved

    return wrapped


@tf32
def scores_3x(s, q, kt, scale):
    qh, ql = split(q)
    kh, kl = split(kt)
    s.baddbmm_(qh, kh, beta=0.0, alpha=scale)
    s.baddbmm_(qh, kl, alpha=scale)
    s.baddbmm_(ql, kh, alpha=scale)


@tf32
def values_3x(o, p, v, first):
    ph, pl = split(p)
    vh, vl = split(v)
    o.baddbmm_(ph, vh, beta=0.0 if first else 1.0)
    o.baddbmm_(ph, vl)
    o.baddbmm_(pl, vh)


# The bench's shapes (benchmarks/oracle_bench.py), and a bf16 one whose large scores make the GEMMs' error show.
SHAPES = {
    **{
        k: BENCH_SHAPES[k]
        for k in ("q4096 kv8192 h32/8", "prefill q512 kv4096 h32/8 causal", "long q64 kv32768 h32/8 causal")
    },
    "bf16 q1024 kv8192 h32/8, input_scale 16": Case(
        "single", (1024,), (8192,), 32, 8, input_scale=16.0, q_dtype="bf16", kv_dtype="bf16", o_dtype="bf16"
    ),
}


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print("| shape | way | ms | TFLOP/s (attended pairs) | max abs err out vs fp64 | max abs err lse vs fp64 |")
    print("|---|---|---|---|---|---|")
    for name, case in SHAPES.items():
        inputs = materialize(case, device="cuda")
        exact = attention(inputs, precision="fp64")
        flops = attended_flops(case)
        ways = {
            "fp32 (TF32 off)": (SCORES, VALUES),
            "3xTF32 q.k^T, fp32 P.V": (scores_3x, VALUES),
            "3xTF32 both": (scores_3x, values_3x),
        }
        for way, (sc, va) in ways.items():
            reference._scaled_scores, reference._add_weighted_values = sc, va
            got = attention(inputs)  # also the warm-up
            t = _best(lambda inputs=inputs: attention(inputs), "cuda", 3) * 1e3
            eo = (got.out.double() - exact.out).abs().max().item()
            el = (got.lse.double() - exact.lse).nan_to_num(0.0, 0.0, 0.0).abs().max().item()
            print(f"| {name} | {way} | {t:.2f} | {flops / t / 1e9:.1f} | {eo:.3g} | {el:.3g} |", flush=True)
        reference._scaled_scores, reference._add_weighted_values = SCORES, VALUES
        del inputs, exact
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
