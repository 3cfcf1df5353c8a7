"""The honest-kernel baseline (oracle/honest.py, oracle.reference precision="honest"): each rounding point.

Hand cases pin one point each with values written out here; the last test holds the oracle's
chunked computation to the seven points written out as whole-tensor torch code.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import pytest
import torch

from oracle import honest
from oracle.reference import attention
from oracle_support import UNIT, assert_hand_close, hand_inputs
from scenarios.case import Case
from scenarios.dtypes import to_torch
from scenarios.tensors import Inputs, materialize

FP32 = UNIT["oracle-fp32"]


def f32(x: float) -> float:
    """x as a float32 tensor holds it."""
    return float(torch.tensor(x, dtype=torch.float32))


def f16(x: float) -> float:
    """x rounded to fp16 (from fp32, as the oracle rounds)."""
    return float(torch.tensor(x, dtype=torch.float32).half())


def with_output(inputs: Inputs, o_dtype: str) -> Inputs:
    return dataclasses.replace(inputs, case=inputs.case.replace(o_dtype=o_dtype))


def test_the_normalised_probabilities_are_rounded_before_p_dot_v() -> None:
    """fp16, two keys (scores 1 and 0), V = (1, 0): the output is P's first entry, 1 / (1 + e^-1), rounded to fp16."""
    inputs = hand_inputs(q=[[[1.0]]], k=[[[1.0]], [[0.0]]], v=[[[1.0]], [[0.0]]], dtype="fp16", sm_scale=1.0)
    ref = attention(inputs, precision="honest")
    p0 = f32(1.0 / f32(1.0 + f32(math.exp(-1.0))))  # 0.7310586; fp16 holds 0.7309570
    assert torch.equal(ref.out, torch.tensor([[[f16(p0)]]]))


def test_the_output_is_rounded_once_to_its_dtype() -> None:
    """fp16 output, V = (3, 1): 3 p0 + p1 over P rounded to fp16, summed in fp32, then rounded to fp16 once."""
    inputs = hand_inputs(q=[[[1.0]]], k=[[[1.0]], [[0.0]]], v=[[[3.0]], [[1.0]]], dtype="fp16", sm_scale=1.0)
    ref = attention(with_output(inputs, "fp16"), precision="honest")
    e1 = f32(math.exp(-1.0))
    row_sum = f32(1.0 + e1)
    p0, p1 = f16(f32(1.0 / row_sum)), f16(f32(e1 / row_sum))
    exact = f32(3.0 * p0 + p1)  # 2.4619141: not an fp16 value
    assert f16(exact) != exact
    assert torch.equal(ref.out, torch.tensor([[[f16(exact)]]]))


def test_the_lse_carries_every_rounding_of_p_at_its_magnitude() -> None:
    """fp16, scores (1, 0, 0.5): exp(s - 1) is exact, rounds up, rounds down; the LSE adds the errors' magnitudes."""
    inputs = hand_inputs(
        q=[[[1.0]]], k=[[[1.0]], [[0.0]], [[0.5]]], v=[[[1.0]], [[0.0]], [[0.0]]], dtype="fp16", sm_scale=1.0
    )
    ref = attention(inputs, precision="honest")
    e = [1.0, f32(math.exp(-1.0)), f32(math.exp(-0.5))]
    errors = [f16(x) - x for x in e]
    assert errors[1] > 0 > errors[2]  # a signed sum would cancel them
    row_sum = sum(e) + sum(abs(x) for x in errors)
    assert_hand_close(ref.lse, [[1.0 + math.log(row_sum) + honest.SCORE_ERROR_PER_ROOT_D]], FP32, "lse")


def test_the_lse_allows_the_scores_fp32_summation_order() -> None:
    """One key, q.k = 0 from products of 1024 over 4 dims: the LSE is sqrt(4) unit roundoffs of |q| |k| = 4096."""
    inputs = hand_inputs(q=[[[32.0] * 4]], k=[[[32.0, -32.0, 32.0, -32.0]]], v=[[[1.0]]], dtype="fp16", sm_scale=1.0)
    ref = attention(inputs, precision="honest")
    assert torch.equal(ref.lse, torch.tensor([[2 * 2.0**-24 * 4096.0]]))


def test_the_soft_caps_tanh_keeps_sixteen_significant_bits() -> None:
    """One key, score 22 under a soft cap of 30: the LSE is 30 * tanh(22 / 30) with tanh rounded to 16 bits."""
    inputs = hand_inputs(q=[[[1.0]]], k=[[[22.0]]], v=[[[1.0]]], dtype="fp16", sm_scale=1.0, logits_soft_cap=30.0)
    ref = attention(inputs, precision="honest")
    t = float(torch.tensor(f32(22.0 / 30.0)).tanh())
    mant, exp = math.frexp(t)
    t16 = round(mant * 2**16) / 2**16 * 2.0**exp
    assert abs(t16 - t) * 30.0 > 2 * 64 * FP32 * 30.0 * t16  # twice the hand tolerance from fp32's tanh
    assert_hand_close(ref.lse, [[30.0 * t16]], FP32, "lse")


@pytest.mark.parametrize(
    "q_dtype, kv_dtype, p",
    [
        ("bf16", "bf16", "bf16"),
        ("fp16", "fp16", "fp16"),
        ("bf16", "e4m3fn", "bf16"),
        ("fp16", "e5m2", "fp16"),
        ("e4m3fn", "e4m3fn", "e4m3fn"),
        ("e4m3fn", "bf16", "bf16"),
        ("fp32", "e4m3fn", None),
        ("fp32", "fp32", None),
    ],
    ids=lambda x: str(x),
)
def test_p_is_rounded_to_the_dtype_it_enters_p_dot_v_in(q_dtype: str, kv_dtype: str, p: Optional[str]) -> None:
    """V's dtype, except that a wider query widens fp8 V to its own (FlashInfer's mixed kernels); fp32: none."""
    assert honest.p_dtype(q_dtype, kv_dtype) == (to_torch(p) if p else None)


def test_an_all_fp32_case_rounds_nothing() -> None:
    """With fp32 values the honest kernel is the fp32 oracle: no rounding point, no LSE allowance."""
    case = Case("single", (3,), (5,), 2, 1, 8, 8, "fp32", "fp32", "fp32", logits_soft_cap=5.0)
    assert honest.honest(case) == honest.Rounding(p=None, out=None, tanh_bits=None, score_error=0.0)


# ---- the seven points written out, against the oracle's chunked computation ---------------------
WRITTEN_OUT_CASE = Case(
    "single",
    (6,),
    (37,),
    num_qo_heads=4,
    num_kv_heads=2,
    head_dim_qk=16,
    head_dim_vo=8,
    q_dtype="bf16",
    kv_dtype="bf16",
    o_dtype="bf16",
    causal=True,
    mask="custom",  # materialize masks one row out entirely
    logits_soft_cap=4.0,
    input_scale=2.0,
)


def written_out_honest(inputs: Inputs) -> tuple[torch.Tensor, torch.Tensor]:
    """oracle/honest.py's points 1-7 for one request, whole tensors at once (fp32, bf16 P and output)."""
    c = inputs.case
    kv_head = torch.arange(c.num_qo_heads) // c.group_size
    q, k, v = inputs.q.float(), inputs.k.float()[:, kv_head], inputs.v.float()[:, kv_head]
    s = torch.einsum("ihd,jhd->hij", q, k) * c.scale
    t = torch.tanh(s / c.logits_soft_cap)
    mant, exp = torch.frexp(t)
    s = c.logits_soft_cap * (torch.round(mant * 2**16) / 2**16 * torch.pow(2.0, exp.float()))
    keep = torch.ones((c.qo_lens[0], c.kv_lens[0]), dtype=torch.bool).tril(c.kv_lens[0] - c.qo_lens[0])
    keep &= inputs.request_mask(0)
    s = s.masked_fill(~keep, -math.inf)
    m = s.amax(dim=-1, keepdim=True)
    empty = torch.isneginf(m)
    e = torch.exp(s - torch.where(empty, 0.0, m))
    row_sum = e.sum(dim=-1, keepdim=True)
    p = (e / torch.where(empty, 1.0, row_sum)).to(torch.bfloat16).float()
    out = torch.einsum("hij,jhd->ihd", p, v).to(torch.bfloat16).float()
    drift = (e.to(torch.bfloat16).float() - e).abs().sum(dim=-1, keepdim=True)
    size = q.norm(dim=-1).t().unsqueeze(-1) * k.norm(dim=-1).amax(dim=0).view(-1, 1, 1) * c.scale  # [h, i, 1]
    slack = math.sqrt(c.head_dim_qk) * 2.0**-24 * torch.where(empty, 0.0, size)
    lse = (m + torch.log(row_sum + drift) + slack).squeeze(-1).transpose(0, 1)
    return out, lse


def test_the_chunked_baseline_equals_its_rounding_points_written_out() -> None:
    """GQA, causal, a custom mask with an empty row, a soft cap: out within one bf16 step, LSE within fp32 rounding."""
    inputs = materialize(WRITTEN_OUT_CASE, seed=5)
    assert not bool(inputs.request_mask(0).any(dim=1).all())  # a row with nothing to attend
    got = attention(inputs, precision="honest")
    out, lse = written_out_honest(inputs)
    assert torch.equal(torch.isneginf(got.lse), torch.isneginf(lse))
    # Summed in another order, a probability may round the other way: one bf16 step of P times |v|.
    step = 2.0**-8 * float(inputs.v.float().abs().max())
    assert float((got.out - out).abs().max()) <= step
    fin = torch.isfinite(lse)
    assert float((got.lse[fin] - lse[fin]).abs().max()) <= 64 * FP32 * float(lse[fin].abs().max())


def test_the_baseline_takes_the_literal_softmax_whatever_fused_says() -> None:
    """The fused softmax has no rounding points: "honest" on a fused device rounds P as the literal path does."""
    case = Case("ragged", (5, 3), (40, 9), 4, 2, head_dim_qk=16, head_dim_vo=16, causal=True, mask="custom")
    inputs = materialize(case, seed=3)
    literal, asked_fused = attention(inputs, "honest", fused=False), attention(inputs, "honest", fused=True)
    assert torch.equal(literal.out, asked_fused.out) and torch.equal(literal.lse, asked_fused.lse)
    assert not torch.equal(literal.out, attention(inputs, fused=True).out)  # the rounding shows on this case
