"""Hand-computed cases: tiny inputs whose outputs and LSEs are written out in the test.

Each convention of the oracle (DESIGN.md, "Oracle conventions") is pinned here by a case small
enough to check on paper. Every case runs against the oracle in fp32 and fp64 and against the
textbook, so the textbook is held to the same written-out values it is trusted with elsewhere.
Most of these tests are also the fast killers of the oracle mutants
(conformance/mutations/catalogue.py).
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from oracle_support import IMPLEMENTATIONS, UNIT, assert_hand_close, assert_within_rounding, hand_inputs, run_impl
from scenarios.case import Case
from scenarios.dtypes import to_torch
from scenarios.tensors import Inputs, materialize
from textbook import textbook_attention

NEG_INF = -math.inf


def fp32(x: float) -> float:
    """x as stored in a float32 tensor (hand values are computed from what is stored)."""
    return float(torch.tensor(x, dtype=torch.float32))


@pytest.fixture(params=IMPLEMENTATIONS)
def impl(request: pytest.FixtureRequest) -> str:
    return request.param


def test_empty_kv_gives_zero_output_and_neg_inf_lse(impl: str) -> None:
    """A request with no keys has output 0 and LSE -inf in every row and head."""
    inputs = hand_inputs(
        q=[[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]], k=torch.zeros(0, 1, 2), v=torch.zeros(0, 1, 3)
    )
    out, lse = run_impl(impl, inputs)
    assert torch.equal(out, torch.zeros(2, 2, 3, dtype=torch.float64))
    assert torch.equal(lse, torch.full((2, 2), NEG_INF, dtype=torch.float64))


def test_empty_query_gives_empty_result(impl: str) -> None:
    """A request with no query rows yields [0, heads, head_dim_vo] output and [0, heads] LSE."""
    inputs = hand_inputs(q=torch.zeros(0, 2, 2), k=[[[1.0, 0.0]]], v=[[[1.0, 2.0, 3.0]]])
    out, lse = run_impl(impl, inputs)
    assert out.shape == (0, 2, 3) and lse.shape == (0, 2)


@pytest.mark.parametrize("layout", ["ragged", "paged", "decode"])
def test_empty_batch_gives_empty_result(impl: str, layout: str) -> None:
    """A batch with no requests yields empty output and LSE of the right trailing shape."""
    case = Case(
        layout=layout,
        qo_lens=(),
        kv_lens=(),
        num_qo_heads=4,
        num_kv_heads=2,
        head_dim_qk=8,
        head_dim_vo=5,
        page_size=1 if layout == "ragged" else 3,
    )
    out, lse = run_impl(impl, materialize(case, seed=0))
    assert out.shape == (0, 4, 5) and lse.shape == (0, 4)


def test_fully_masked_row_gives_zero_output_and_neg_inf_lse(impl: str) -> None:
    """A row whose custom-mask row is all False has output 0 and LSE -inf; its neighbour is unaffected."""
    inputs = hand_inputs(
        q=[[[1.0, 0.0]], [[0.0, 1.0]]],
        k=[[[1.0, 0.0]], [[0.0, 1.0]]],
        v=[[[1.0, 2.0]], [[3.0, 4.0]]],
        mask=[[False, False], [True, False]],
        sm_scale=1.0,
    )
    out, lse = run_impl(impl, inputs)
    # row 0 sees nothing; row 1 sees key 0 only, with score q1.k0 = 0.
    assert torch.equal(out, torch.tensor([[[0.0, 0.0]], [[1.0, 2.0]]], dtype=torch.float64))
    assert torch.equal(lse, torch.tensor([[NEG_INF], [0.0]], dtype=torch.float64))


def test_custom_mask_is_row_major_per_request(impl: str) -> None:
    """The flat custom mask is read as [qo_len, kv_len] row-major: element i*kv_len + j gates (i, j)."""
    inputs = hand_inputs(
        q=[[[0.0]], [[0.0]]],
        k=[[[1.0]], [[1.0]], [[1.0]]],
        v=[[[1.0]], [[2.0]], [[4.0]]],
        mask=[[True, False, False], [False, True, True]],
        sm_scale=1.0,
    )
    out, lse = run_impl(impl, inputs)
    # all scores are 0: row 0 averages key 0 only, row 1 keys 1 and 2.
    assert_hand_close(out, [[[1.0]], [[3.0]]], UNIT[impl], "out")
    assert_hand_close(lse, [[0.0], [math.log(2)]], UNIT[impl], "lse")


def test_causal_window_zero_attends_only_the_diagonal_key(impl: str) -> None:
    """Causal with window_left 0 leaves each row exactly its bottom-right diagonal key j = i + kv - qo."""
    inputs = hand_inputs(
        q=[[[1.0]], [[2.0]]],
        k=[[[1.0]], [[1.0]], [[0.5]], [[2.0]]],
        v=[[[10.0]], [[20.0]], [[30.0]], [[40.0]]],
        causal=True,
        window_left=0,
        sm_scale=1.0,
    )
    out, lse = run_impl(impl, inputs)
    # qo 2, kv 4: row 0 sees key 2 (score 1 * 0.5), row 1 sees key 3 (score 2 * 2).
    assert torch.equal(out, torch.tensor([[[30.0]], [[40.0]]], dtype=torch.float64))
    assert torch.equal(lse, torch.tensor([[0.5], [4.0]], dtype=torch.float64))


def test_window_one_attends_the_diagonal_and_one_key_left(impl: str) -> None:
    """Causal with window_left 1 gives each row its diagonal key and the one before it, no more."""
    inputs = hand_inputs(
        q=[[[0.0]], [[0.0]]],
        k=[[[1.0]], [[1.0]], [[1.0]], [[1.0]]],
        v=[[[2.0]], [[4.0]], [[8.0]], [[16.0]]],
        causal=True,
        window_left=1,
        sm_scale=1.0,
    )
    out, lse = run_impl(impl, inputs)
    # scores all 0: row 0 averages keys 1..2, row 1 keys 2..3.
    assert_hand_close(out, [[[6.0]], [[12.0]]], UNIT[impl], "out")
    assert_hand_close(lse, [[math.log(2)], [math.log(2)]], UNIT[impl], "lse")


def test_window_without_causal_limits_only_the_left_side(impl: str) -> None:
    """window_left without causal bounds keys on the left (j >= i + kv - qo - w) and leaves the right open."""
    inputs = hand_inputs(q=[[[0.0]], [[0.0]]], k=[[[1.0]], [[1.0]]], v=[[[2.0]], [[4.0]]], window_left=0, sm_scale=1.0)
    out, lse = run_impl(impl, inputs)
    # row 0 sees keys 0 and 1 (mean 3, lse log 2); row 1 sees key 1 only.
    assert_hand_close(out, [[[3.0]], [[4.0]]], UNIT[impl], "out")
    assert_hand_close(lse, [[math.log(2)], [0.0]], UNIT[impl], "lse")


def test_single_key_output_equals_v_and_lse_equals_scaled_score(impl: str) -> None:
    """With one visible key the output is exactly that key's V and the LSE exactly sm_scale * q.k."""
    inputs = hand_inputs(q=[[[1.0, 2.0]]], k=[[[3.0, 0.5]]], v=[[[-1.5, 7.0, 0.25]]], sm_scale=0.25)
    out, lse = run_impl(impl, inputs)
    assert torch.equal(out, torch.tensor([[[-1.5, 7.0, 0.25]]], dtype=torch.float64))
    assert torch.equal(lse, torch.tensor([[0.25 * 4.0]], dtype=torch.float64))


def test_default_scale_is_inverse_sqrt_of_head_dim_qk(impl: str) -> None:
    """sm_scale=None scales scores by 1/sqrt(head_dim_qk), whatever head_dim_vo is."""
    inputs = hand_inputs(q=[[[1.0, 1.0, 1.0, 1.0]]], k=[[[1.0, 1.0, 1.0, 1.0]]], v=[[[5.0]]])
    _, lse = run_impl(impl, inputs)
    assert torch.equal(lse, torch.tensor([[4.0 / math.sqrt(4)]], dtype=torch.float64))


def test_two_keys_weights_follow_softmax(impl: str) -> None:
    """Scores ln 3 and 0 weight the keys 3/4 and 1/4, and the LSE is the natural log ln 4."""
    ln3 = fp32(math.log(3.0))
    inputs = hand_inputs(q=[[[1.0]]], k=[[[ln3]], [[0.0]]], v=[[[4.0, 0.0]], [[0.0, 8.0]]], sm_scale=1.0)
    out, lse = run_impl(impl, inputs)
    w0 = math.exp(ln3) / (math.exp(ln3) + 1.0)  # 3/4 up to the float32 rounding of ln 3
    assert_hand_close(out, [[[4.0 * w0, 8.0 * (1.0 - w0)]]], UNIT[impl], "out")  # ~[3, 2]
    assert_hand_close(lse, [[math.log(math.exp(ln3) + 1.0)]], UNIT[impl], "lse")  # ~ln 4


def test_tiny_soft_cap_saturates_scaled_scores_to_plus_minus_cap(impl: str) -> None:
    """A cap far below |sm_scale * q.k| pins the scores to +cap and -cap (the cap acts on the scaled score)."""
    inputs = hand_inputs(q=[[[1.0]]], k=[[[40.0]], [[-40.0]]], v=[[[1.0]], [[-1.0]]], sm_scale=0.5, logits_soft_cap=0.5)
    out, lse = run_impl(impl, inputs)
    # scaled scores +-20, capped to +-0.5 * tanh(40) = +-0.5 exactly in float32 and float64.
    assert_hand_close(out, [[[math.tanh(0.5)]]], UNIT[impl], "out")
    assert_hand_close(lse, [[math.log(2 * math.cosh(0.5))]], UNIT[impl], "lse")


def test_huge_soft_cap_equals_no_cap(impl: str) -> None:
    """A cap so large that tanh is linear to working precision changes nothing."""
    case = Case(
        layout="single",
        qo_lens=(3,),
        kv_lens=(5,),
        num_qo_heads=2,
        num_kv_heads=1,
        head_dim_qk=4,
        head_dim_vo=3,
        q_dtype="fp32",
        kv_dtype="fp32",
        o_dtype="fp32",
    )
    plain = materialize(case, seed=3)
    capped = materialize(case.replace(logits_soft_cap=1e9), seed=3)
    out, lse = run_impl(impl, capped)
    assert_within_rounding(out, lse, textbook_attention(plain), UNIT[impl], what="capped vs uncapped")


def test_soft_cap_applies_before_masking(impl: str) -> None:
    """A masked key stays masked under a soft cap (the cap never turns -inf into -cap)."""
    inputs = hand_inputs(
        q=[[[1.0]], [[1.0]]], k=[[[0.0]], [[0.0]]], v=[[[2.0]], [[6.0]]], causal=True, sm_scale=1.0, logits_soft_cap=1.0
    )
    out, lse = run_impl(impl, inputs)
    # row 0 sees key 0 only; row 1 both keys at score 0.
    assert_hand_close(out, [[[2.0]], [[4.0]]], UNIT[impl], "out")
    assert_hand_close(lse, [[0.0], [math.log(2)]], UNIT[impl], "lse")


def test_causal_with_more_queries_than_keys_empties_the_top_rows(impl: str) -> None:
    """Bottom-right causal with qo 4 > kv 2 leaves rows 0-1 empty (0, -inf); row 2 sees key 0, row 3 both."""
    inputs = hand_inputs(q=[[[1.0]]] * 4, k=[[[0.0]], [[0.0]]], v=[[[2.0]], [[6.0]]], causal=True, sm_scale=1.0)
    out, lse = run_impl(impl, inputs)
    assert_hand_close(out, [[[0.0]], [[0.0]], [[2.0]], [[4.0]]], UNIT[impl], "out")
    assert_hand_close(lse, [[NEG_INF], [NEG_INF], [0.0], [math.log(2)]], UNIT[impl], "lse")


def test_causal_with_fewer_queries_than_keys_aligns_bottom_right(impl: str) -> None:
    """Bottom-right causal with qo 2 < kv 3: row 0 sees keys 0-1, row 1 all three."""
    inputs = hand_inputs(
        q=[[[0.0]], [[0.0]]], k=[[[1.0]], [[1.0]], [[1.0]]], v=[[[3.0]], [[6.0]], [[9.0]]], causal=True, sm_scale=1.0
    )
    out, lse = run_impl(impl, inputs)
    assert_hand_close(out, [[[4.5]], [[6.0]]], UNIT[impl], "out")
    assert_hand_close(lse, [[math.log(2)], [math.log(3)]], UNIT[impl], "lse")


def test_gqa_query_head_reads_kv_head_by_division(impl: str) -> None:
    """With 4 query heads over 2 KV heads, heads 0-1 read KV head 0 and heads 2-3 read KV head 1."""
    inputs = hand_inputs(q=[[[1.0], [1.0], [1.0], [1.0]]], k=[[[1.0], [2.0]]], v=[[[10.0], [20.0]]], sm_scale=1.0)
    out, lse = run_impl(impl, inputs)
    assert torch.equal(out, torch.tensor([[[10.0], [10.0], [20.0], [20.0]]], dtype=torch.float64))
    assert torch.equal(lse, torch.tensor([[1.0, 1.0, 2.0, 2.0]], dtype=torch.float64))


def test_gqa_each_query_head_keeps_its_own_query(impl: str) -> None:
    """Query heads sharing a KV head are not swapped: head h scores its own q against KV head h // group."""
    inputs = hand_inputs(
        q=[[[0.0], [1.0], [2.0], [3.0]]],
        k=[[[0.0], [0.0]], [[1.0], [2.0]]],
        v=[[[0.0], [0.0]], [[1.0], [1.0]]],
        sm_scale=1.0,
    )
    out, lse = run_impl(impl, inputs)
    # key 0 scores 0 and holds v 0; key 1 scores q_h * k1[h // 2] = 0, 1, 4, 6 and holds v 1.
    s1 = [0.0, 1.0, 4.0, 6.0]
    assert_hand_close(out, [[[1.0 / (1.0 + math.exp(-x))] for x in s1]], UNIT[impl], "out")
    assert_hand_close(lse, [[math.log(1.0 + math.exp(x)) for x in s1]], UNIT[impl], "lse")


def _paged_inputs(
    q: list, k_pool: torch.Tensor, v_pool: torch.Tensor, indices: list[int], kv_len: int, **case_fields: object
) -> Inputs:
    """One paged request with the given NHD pools [P, page, 1, D] and page list."""
    page = k_pool.shape[1]
    case = Case(
        layout="paged",
        qo_lens=(len(q),),
        kv_lens=(kv_len,),
        num_qo_heads=1,
        num_kv_heads=1,
        head_dim_qk=k_pool.shape[-1],
        head_dim_vo=v_pool.shape[-1],
        q_dtype="fp32",
        kv_dtype="fp32",
        o_dtype="fp32",
        page_size=page,
        sm_scale=1.0,
        **case_fields,
    )  # type: ignore[arg-type]
    inputs = materialize(case, seed=0)
    inputs.q = torch.tensor(q, dtype=torch.float32)
    inputs.k, inputs.v = k_pool, v_pool
    inputs.kv_page_indices = torch.tensor(indices, dtype=torch.int32)
    return inputs


def test_paged_kv_is_read_through_the_page_table(impl: str) -> None:
    """Key n of a request lives in page kv_page_indices[n // page_size], never in pool order."""
    v_pool = torch.tensor([[100.0, 101.0], [200.0, 201.0], [300.0, 301.0]]).view(3, 2, 1, 1)
    inputs = _paged_inputs(
        q=[[[1.0]], [[2.0]]],
        k_pool=torch.ones(3, 2, 1, 1),
        v_pool=v_pool,
        indices=[2, 0],
        kv_len=3,
        causal=True,
        window_left=0,
    )
    out, lse = run_impl(impl, inputs)
    # qo 2, kv 3: row 0 sees key 1 = page 2 slot 1; row 1 sees key 2 = page 0 slot 0.
    assert torch.equal(out, torch.tensor([[[301.0]], [[100.0]]], dtype=torch.float64))
    assert torch.equal(lse, torch.tensor([[1.0], [2.0]], dtype=torch.float64))


def test_partial_last_page_tail_is_ignored(impl: str) -> None:
    """Slots past kv_len in the last page are never attended, whatever they hold."""
    k_pool = torch.tensor([[0.0, 0.0], [0.0, 1000.0]]).view(2, 2, 1, 1)
    v_pool = torch.tensor([[2.0, 4.0], [6.0, 1000.0]]).view(2, 2, 1, 1)
    inputs = _paged_inputs(q=[[[1.0]]], k_pool=k_pool, v_pool=v_pool, indices=[0, 1], kv_len=3)
    out, lse = run_impl(impl, inputs)
    # three keys at score 0 (the garbage slot would score 1000).
    assert_hand_close(out, [[[4.0]]], UNIT[impl], "out")
    assert_hand_close(lse, [[math.log(3)]], UNIT[impl], "lse")


@pytest.mark.parametrize("layout", ["ragged", "paged"])
def test_hnd_layout_equals_nhd_layout(impl: str, layout: str) -> None:
    """The same KV stored HND ([.., heads, tokens, D]) gives the NHD result, to rounding."""
    case = Case(
        layout=layout,
        qo_lens=(3, 2),
        kv_lens=(7, 4),
        num_qo_heads=4,
        num_kv_heads=2,
        head_dim_qk=3,
        head_dim_vo=2,
        q_dtype="fp32",
        kv_dtype="fp32",
        o_dtype="fp32",
        page_size=3 if layout == "paged" else 1,
        causal=True,
    )
    nhd = materialize(case, seed=5)
    token_dim = 1 if layout == "paged" else 0
    hnd = dataclasses.replace(
        nhd,
        case=case.replace(kv_layout="HND"),
        k=nhd.k.transpose(token_dim, token_dim + 1).contiguous(),
        v=nhd.v.transpose(token_dim, token_dim + 1).contiguous(),
    )
    out_n, lse_n = run_impl(impl, nhd)
    out_h, lse_h = run_impl(impl, hnd)
    # Each is within one rounding bound of the exact result, hence within two of the other.
    assert_within_rounding(out_h, lse_h, textbook_attention(nhd), UNIT[impl], expected=(out_n, lse_n), factor=2.0)


@pytest.mark.parametrize("fp8", ["e4m3fn", "e4m3fnuz", "e5m2"])
def test_fp8_inputs_are_scaled_by_their_descales(impl: str, fp8: str) -> None:
    """fp8 q, k and v are each multiplied by their per-tensor descale before any math."""
    inputs = hand_inputs(
        q=[[[1.0, 2.0]]],
        k=[[[1.5, 0.25]]],
        v=[[[3.0]]],
        dtype=fp8,
        sm_scale=1.0,
        q_scale=0.5,
        k_scale=2.0,
        v_scale=0.25,
    )
    assert inputs.q.dtype == to_torch(fp8)
    out, lse = run_impl(impl, inputs)
    # real q = [0.5, 1], k = [3, 0.5], v = [0.75]: score 1.5 + 0.5 = 2.
    assert torch.equal(out, torch.tensor([[[0.75]]], dtype=torch.float64))
    assert torch.equal(lse, torch.tensor([[2.0]], dtype=torch.float64))
