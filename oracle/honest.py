"""The honest low-precision kernel the tolerance model measures against: where it rounds, in one place.

A correct kernel on fp16, bf16 or fp8 inputs still rounds. This is the model of one that rounds
only where it must; oracle.reference computes it (precision="honest") with these rounding points
and no others:

  1. inputs as stored: q, k and v in their own dtype, widened exactly to fp32; fp8 times its
     per-tensor descale in fp32 (the oracle's dequantisation);
  2. scores s = sm_scale * q.k, the soft cap and the masks in fp32, except that the soft cap's
     tanh keeps TANH_BITS significant bits (GPU kernels use tanh.approx.f32, MUFU.TANH: a
     maximum relative error of 1.1e-5, about 2^-16.5);
  3. softmax statistics in fp32: the row max m, the row sum l = sum(exp(s - m));
  4. P = exp(s - m) / l rounded to `p_dtype` (below), the dtype P enters P.V in;
  5. O = P.V accumulated in fp32 (products of 16-bit or fp8 values are exact in fp32);
  6. O rounded once, to o_dtype;
  7. LSE = m + log(l) in fp32, with its two honest errors taken at their magnitude: P's rounding
     in the row sum, log(1 + sum|round(exp(s - m)) - exp(s - m)| / l), and the scores' fp32
     summation order, SCORE_ERROR_PER_ROOT_D * sqrt(head_dim_qk) * |q| * max|k| * |sm_scale|
     (the row's query and the request's longest key: Cauchy-Schwarz bounds sum_d |q_d k_d| so).

Points 4 and 7 take the larger of what honest kernels do. Rounding the normalised P (two-pass
kernels, FlexAttention's unfused path) errs more than rounding exp(s - m), whose largest entry
is exactly 1 (flash kernels: FA2, FA3, cuDNN, FlashInfer). FlashInfer's fa2 sums P after
rounding it (include/flashinfer/attention/prefill.cuh, compute_sfm_v: m16k16_rowsum over P cast
to DTypeQ; 0.7.2.post1 lines 1862-1884, 0.7.4 lines 2200-2222), so its LSE carries P's rounding;
those errors cancel by chance and on one row may all but vanish (an H200 decode row: 8e-6 where
the kernel's was 1.8e-4), so the model adds them at their magnitude. The scores of any kernel
are fp32 sums in an order of their own, apart from the oracle's by a few ulps of the products'
magnitudes, which an LSE shows where P's rounding is small: large logits (1500 on an fp16 case
with input_scale 16, ulps of 1.2e-4 there) or a row of one key (FA3's fp8 LSE on the H200,
1.3e-6 off where |q.k| was small but its products were not). Where P needs
no rounding (fp32 values) the model is the fp32 oracle itself, which is why oracle.judge judges
all-fp32 cases against fp64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from scenarios.case import Case
from scenarios.dtypes import is_fp8, to_torch

TANH_BITS = 16  # significant bits of the soft cap's tanh: relative error at most 2^-16
SCORE_ERROR_PER_ROOT_D = 2.0**-24  # fp32's unit roundoff, per sqrt(head_dim_qk) products summed in q.k


@dataclass(frozen=True)
class Rounding:
    """Where a computation rounds beyond its accumulation dtype; None (or 0): it does not."""

    p: Optional[torch.dtype]  # P, normalised, before P.V; the LSE then carries P's rounding
    out: Optional[torch.dtype]  # the output, once, at the end
    tanh_bits: Optional[int]  # the soft cap's tanh, to this many significant bits
    score_error: float  # an fp32 score's error in another summation order, per unit of sum|q_d k_d| sm_scale


EXACT = Rounding(p=None, out=None, tanh_bits=None, score_error=0.0)  # the oracle: nothing beyond fp32/fp64


def p_dtype(q_dtype: str, kv_dtype: str) -> Optional[torch.dtype]:
    """The dtype P enters P.V in: V's, except that a wider query widens fp8 V to its own dtype
    (FlashInfer's mixed kernels cast P to DTypeQ, prefill.cuh compute_sfm_v). None: fp32, no rounding."""
    widest = q_dtype if is_fp8(kv_dtype) and not is_fp8(q_dtype) else kv_dtype
    return None if widest == "fp32" else to_torch(widest)


def honest(case: Case) -> Rounding:
    """The rounding points of an honest kernel for `case` (the module docstring lists them)."""
    p = p_dtype(case.q_dtype, case.kv_dtype)
    out = None if case.o_dtype == "fp32" else to_torch(case.o_dtype)
    if p is None:  # fp32 P: the fp32 oracle's own arithmetic, judged against fp64
        return Rounding(p=None, out=out, tanh_bits=None, score_error=0.0)
    return Rounding(p=p, out=out, tanh_bits=TANH_BITS, score_error=SCORE_ERROR_PER_ROOT_D * math.sqrt(case.head_dim_qk))
