"""Properties of the oracle over Hypothesis-drawn shapes, features, dtypes and input magnitudes.

Magnitudes run from unit scale through large logits (input_scale 4 and 16, scores in the
hundreds) to values near the fp16 limit (fp32 and fp16 inputs a quarter of fp16's largest
value apart from the mean). Settings come from the registered profile in oracle_support.py.
"""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from oracle.reference import attention
from oracle_support import (
    NEAR_FP16_LIMIT_SCALE,
    ORACLE_SETTINGS,
    U32,
    U64,
    assert_within_rounding,
    convex_bounds,
    relabel_pages,
    seeds,
    small_cases,
)
from scenarios.case import Case
from scenarios.tensors import fp8_descales, materialize
from textbook import real_values, request_kv, textbook_attention

near_fp16_limit = small_cases(dtypes=("fp32", "fp16"), input_scales=(NEAR_FP16_LIMIT_SCALE,))
any_magnitude = st.one_of(small_cases(), near_fp16_limit)


@ORACLE_SETTINGS
@given(case=small_cases(), seed=seeds)
def test_oracle_matches_textbook_within_rounding(case: Case, seed: int) -> None:
    """For any small case the fp32 oracle is within fp32 rounding of the fp64 textbook."""
    inputs = materialize(case, seed)
    ref = attention(inputs)
    assert_within_rounding(ref.out, ref.lse, textbook_attention(inputs), U32, what=case.id)


@ORACLE_SETTINGS
@given(case=near_fp16_limit, seed=seeds)
def test_oracle_matches_textbook_near_the_fp16_limit(case: Case, seed: int) -> None:
    """With values near the fp16 limit the oracle neither overflows nor leaves fp32 rounding of the textbook."""
    inputs = materialize(case, seed)
    ref = attention(inputs)
    assert not bool(torch.isnan(ref.out).any()) and not bool(torch.isinf(ref.out).any())
    assert_within_rounding(ref.out, ref.lse, textbook_attention(inputs), U32, what=case.id)


@ORACLE_SETTINGS
@given(case=small_cases(), seed=seeds)
def test_result_is_independent_of_budget_bytes(case: Case, seed: int) -> None:
    """A one-byte budget (one head and one row per chunk) gives the default budget's result."""
    inputs = materialize(case, seed)
    tiny = attention(inputs, budget_bytes=1)
    default = attention(inputs)
    # Both are within one rounding bound of the exact result, hence within two of each other.
    assert_within_rounding(
        tiny.out,
        tiny.lse,
        textbook_attention(inputs),
        U32,
        factor=2.0,
        expected=(default.out, default.lse),
        what=case.id,
    )


@ORACLE_SETTINGS
@given(case=small_cases(layouts=("paged", "decode")), seed=seeds, perm_seed=seeds)
def test_result_is_independent_of_page_labels(case: Case, seed: int, perm_seed: int) -> None:
    """Relabelling the pool's pages (and remapping the page table to match) changes nothing, bit for bit."""
    inputs = materialize(case, seed)
    perm = torch.randperm(inputs.k.shape[0], generator=torch.Generator().manual_seed(perm_seed))
    moved = attention(relabel_pages(inputs, perm.to(torch.int32)))
    ref = attention(inputs)
    assert torch.equal(moved.out, ref.out) and torch.equal(moved.lse, ref.lse)


@ORACLE_SETTINGS
@given(case=any_magnitude, seed=seeds)
def test_lse_is_logsumexp_of_visible_scaled_capped_scores(case: Case, seed: int) -> None:
    """The LSE is torch.logsumexp over the visible keys of cap * tanh(sm_scale * q.k / cap), natural log."""
    inputs = materialize(case, seed)
    tb = textbook_attention(inputs)
    q_descale, _, _ = fp8_descales(case)
    expected = torch.full_like(tb.lse, -torch.inf)
    kv_head = torch.arange(case.num_qo_heads) // case.group_size
    for r, qo in enumerate(case.qo_lens):
        q0 = int(inputs.qo_indptr[r])
        q = real_values(inputs.q[q0 : q0 + qo], q_descale)
        k = request_kv(inputs, "k", r)[:, kv_head]
        s = torch.einsum("ihd,jhd->ihj", q, k) * case.scale
        if case.logits_soft_cap > 0:
            s = case.logits_soft_cap * torch.tanh(s / case.logits_soft_cap)
        expected[q0 : q0 + qo] = torch.logsumexp(s.masked_fill(~tb.visible[r], -torch.inf), dim=-1)
    ref = attention(inputs)
    assert_within_rounding(ref.out, ref.lse, tb, U32, expected=(tb.out, expected), quantities=("lse",), what=case.id)


@ORACLE_SETTINGS
@given(case=any_magnitude, seed=seeds)
def test_outputs_are_convex_combinations_of_visible_values(case: Case, seed: int) -> None:
    """Each output column lies within the range of the V rows its row attends (0 for an empty row)."""
    inputs = materialize(case, seed)
    tb = textbook_attention(inputs)
    out = attention(inputs).out.double()
    slack = convex_bounds(tb, U32)
    empty = (tb.n_visible == 0).unsqueeze(-1)
    inside = (out >= tb.v_lo - slack) & (out <= tb.v_hi + slack)
    ok = torch.where(empty, out == 0, inside)
    assert bool(ok.all()), f"{case.id}: outside the convex hull at {ok.logical_not().nonzero()[:5].tolist()}"


@ORACLE_SETTINGS
@given(case=small_cases(), seed=seeds)
def test_fp32_and_fp64_oracles_agree(case: Case, seed: int) -> None:
    """The fp32 and fp64 oracles differ by no more than their two rounding bounds together."""
    inputs = materialize(case, seed)
    f32, f64 = attention(inputs, "fp32"), attention(inputs, "fp64")
    assert_within_rounding(
        f32.out,
        f32.lse,
        textbook_attention(inputs),
        U32,
        factor=1.0 + U64 / U32,
        expected=(f64.out, f64.lse),
        what=case.id,
    )
