"""The oracle's memory contract: work in chunks, never a [heads, q, kv] score tensor over budget.

Chunks are observed by wrapping oracle.reference._softmax (it receives each chunk's whole score
rows) and oracle.reference._kv_rows (each gathered K or V key block), so the tests see the
tensors the oracle really built, not the sizes it planned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from oracle import reference
from oracle.reference import _FUSED_SCORE_COPIES, _SCORE_COPIES, _plan_chunks, attention
from oracle_support import ORACLE_SETTINGS, U32, assert_within_rounding, seeds, small_cases
from scenarios.case import Case
from scenarios.tensors import Inputs, materialize
from textbook import Textbook, textbook_attention

FP32 = dict(q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32")
SMALL_BUDGET = 8 * 2**10
LONG_KV = 20000
LONG_BUDGET = 2**20


@dataclass
class Chunks:
    """What the oracle built: score chunks [heads, rows, kv] and K/V key blocks, with their bytes."""

    scores: list[tuple[int, int, int]] = field(default_factory=list)
    score_bytes: list[int] = field(default_factory=list)
    kv_block_bytes: list[int] = field(default_factory=list)


@pytest.fixture
def chunks(monkeypatch: pytest.MonkeyPatch) -> Chunks:
    """Every score chunk and K/V block the oracle makes during the test, in order."""
    seen = Chunks()
    softmax, kv_rows = reference._softmax, reference._kv_rows

    def recording_softmax(s: torch.Tensor, *rest: Any) -> Any:
        seen.scores.append(tuple(s.shape))
        seen.score_bytes.append(s.numel() * s.element_size())
        return softmax(s, *rest)

    def recording_kv_rows(*args: Any) -> torch.Tensor:
        blk = kv_rows(*args)
        seen.kv_block_bytes.append(blk.numel() * blk.element_size())
        return blk

    monkeypatch.setattr(reference, "_softmax", recording_softmax)
    monkeypatch.setattr(reference, "_kv_rows", recording_kv_rows)
    return seen


@pytest.mark.parametrize(
    "case",
    [
        Case(
            layout="single",
            qo_lens=(16,),
            kv_lens=(64,),
            num_qo_heads=4,
            num_kv_heads=2,
            head_dim_qk=8,
            head_dim_vo=8,
            causal=True,
            **FP32,
        ),
        Case(
            layout="paged",
            qo_lens=(16, 9),
            kv_lens=(64, 40),
            num_qo_heads=4,
            num_kv_heads=1,
            head_dim_qk=8,
            head_dim_vo=4,
            page_size=5,
            mask="custom",
            **FP32,
        ),
    ],
    ids=["single", "paged"],
)
def test_score_chunks_stay_within_budget(case: Case, chunks: Chunks) -> None:
    """With a budget smaller than one request's scores, every score chunk plus a K/V block fits the budget."""
    assert max(q * k for q, k in zip(case.qo_lens, case.kv_lens)) * case.num_qo_heads * 4 > SMALL_BUDGET
    attention(materialize(case, seed=0), budget_bytes=SMALL_BUDGET)
    assert len(chunks.scores) > case.batch_size
    assert max(chunks.score_bytes) + max(chunks.kv_block_bytes) <= SMALL_BUDGET
    covered = sum(h * r for h, r, _ in chunks.scores)
    assert covered == case.total_qo * case.num_qo_heads  # every (row, head) exactly once


@pytest.mark.parametrize(
    "case",
    [
        Case(
            layout="ragged",
            qo_lens=(5, 3),
            kv_lens=(9, 6),
            num_qo_heads=4,
            num_kv_heads=2,
            head_dim_qk=6,
            head_dim_vo=5,
            causal=True,
            mask="custom",
            **FP32,
        ),
        Case(
            layout="paged",
            qo_lens=(4, 3),
            kv_lens=(11, 7),
            num_qo_heads=4,
            num_kv_heads=2,
            head_dim_qk=6,
            head_dim_vo=5,
            page_size=3,
            kv_layout="HND",
            window_left=4,
            **FP32,
        ),
    ],
    ids=["ragged", "paged"],
)
def test_tiny_budget_equals_default_budget(case: Case, chunks: Chunks) -> None:
    """A one-byte budget (one head, one row, one key per block) gives the default budget's result."""
    inputs = materialize(case, seed=4)
    tiny = attention(inputs, budget_bytes=1)
    assert {(h, r) for h, r, _ in chunks.scores} == {(1, 1)} and len(chunks.scores) == case.total_qo * 4
    default = attention(inputs)
    # Both are within one rounding bound of the exact result, hence within two of each other.
    assert_within_rounding(
        tiny.out, tiny.lse, textbook_attention(inputs), U32, factor=2.0, expected=(default.out, default.lse)
    )


def test_head_blocks_keep_gqa_groups_whole(chunks: Chunks) -> None:
    """A budget that fits six of eight heads (groups of four) gets head blocks of one whole group, same result."""
    case = Case(
        layout="single",
        qo_lens=(4,),
        kv_lens=(16,),
        num_qo_heads=8,
        num_kv_heads=2,
        head_dim_qk=4,
        head_dim_vo=4,
        causal=True,
        **FP32,
    )
    budget = 4400  # score rows for 6 heads x 4 rows at _SCORE_COPIES copies, K/V for many keys
    assert budget * 3 // 4 // (case.qo_lens[0] * _SCORE_COPIES * case.kv_lens[0] * 4) == 6
    inputs = materialize(case, seed=3)
    got = attention(inputs, budget_bytes=budget)
    assert {h for h, _, _ in chunks.scores} == {4}
    default = attention(inputs)
    assert_within_rounding(
        got.out, got.lse, textbook_attention(inputs), U32, factor=2.0, expected=(default.out, default.lse)
    )


@ORACLE_SETTINGS
@given(case=small_cases(), seed=seeds, budget=st.integers(1, 2**14))
def test_result_is_independent_of_any_budget(case: Case, seed: int, budget: int) -> None:
    """Any budget (so any head, row and key blocking, grouped or not) gives the default budget's result."""
    inputs = materialize(case, seed)
    got = attention(inputs, budget_bytes=budget)
    default = attention(inputs)
    assert_within_rounding(
        got.out,
        got.lse,
        textbook_attention(inputs),
        U32,
        factor=2.0,
        expected=(default.out, default.lse),
        what=f"{case.id} budget {budget}",
    )


def _magnitudes(inputs: Inputs, exact: reference.Reference) -> Textbook:
    """Condition numbers of an unmasked-or-causal single request, vectorised (the textbook is too slow here).

    Maxima are taken over all keys, a superset of the visible ones, which only loosens the bound.
    """
    c = inputs.case
    q, k, v = inputs.q.double(), inputs.k.double(), inputs.v.double()
    kv_head = torch.arange(c.num_qo_heads) // c.group_size
    score_abs = torch.einsum("ihd,jhd->ihj", q.abs(), k[:, kv_head].abs()).amax(dim=-1) * c.scale
    rows = torch.arange(c.qo_lens[0], dtype=torch.float64)
    n = (
        (rows + c.kv_lens[0] - c.qo_lens[0] + 1).clamp(0, c.kv_lens[0])
        if c.causal
        else torch.full_like(rows, c.kv_lens[0])
    )
    v_rows = v[:, kv_head]  # [kv, Hq, D]
    return Textbook(
        out=exact.out,
        lse=exact.lse,
        score_abs=score_abs,
        v_lo=v_rows.amin(dim=0).expand_as(exact.out),
        v_hi=v_rows.amax(dim=0).expand_as(exact.out),
        n_visible=n.view(-1, 1).expand_as(exact.lse),
        visible=[],
        head_dim_qk=c.head_dim_qk,
    )


def test_long_request_completes_within_a_small_budget(chunks: Chunks) -> None:
    """A 20000-key request under a 1 MiB budget completes in bounded chunks and matches the fp64 oracle."""
    case = Case(
        layout="single",
        qo_lens=(16,),
        kv_lens=(LONG_KV,),
        num_qo_heads=2,
        num_kv_heads=1,
        head_dim_qk=16,
        head_dim_vo=16,
        causal=True,
        **FP32,
    )
    inputs = materialize(case, seed=8)
    got = attention(inputs, budget_bytes=LONG_BUDGET)
    assert chunks.scores and max(chunks.score_bytes) + max(chunks.kv_block_bytes) <= LONG_BUDGET
    assert case.total_qo * case.num_qo_heads * LONG_KV * 4 > 2 * LONG_BUDGET  # the whole would not fit
    exact = attention(inputs, precision="fp64")
    assert_within_rounding(got.out, got.lse, _magnitudes(inputs, exact), U32, what="20000 keys, 1 MiB")


@ORACLE_SETTINGS
@given(
    heads=st.integers(1, 64),
    group=st.sampled_from((1, 2, 4, 8)),
    rows=st.integers(1, 4096),
    kv=st.integers(1, 200_000),
    dkv=st.integers(1, 512),
    elem=st.sampled_from((4, 8)),
    stored_elem=st.sampled_from((1, 2, 4)),
    budget=st.integers(2**16, 2**30),
    copies=st.sampled_from((_SCORE_COPIES, _FUSED_SCORE_COPIES)),
)
def test_planned_chunks_fit_the_budget_when_the_smallest_chunk_does(
    heads: int, group: int, rows: int, kv: int, dkv: int, elem: int, stored_elem: int, budget: int, copies: int
) -> None:
    """_plan_chunks keeps score rows (the literal or the fused softmax's copies) plus one K/V key block within
    budget whenever 1 head x 1 row x 1 key fits."""
    group = min(group, heads)
    hb, rb, kb = _plan_chunks(heads, group, rows, kv, dkv, elem, stored_elem, budget, copies)
    assert 1 <= hb <= heads and 1 <= rb <= rows and 1 <= kb <= kv
    smallest = copies * kv * elem + dkv * (elem + stored_elem)
    if 4 * smallest <= budget:
        assert copies * hb * rb * kv * elem + hb * kb * dkv * (elem + stored_elem) <= budget


@ORACLE_SETTINGS
@given(
    kv_heads=st.integers(1, 8),
    group=st.integers(1, 8),
    rows=st.integers(1, 64),
    kv=st.integers(1, 4096),
    dkv=st.integers(1, 256),
    pairs=st.integers(1, 64),
    slack=st.integers(0, 1024),
)
def test_head_blocks_are_whole_groups_or_divide_one(
    kv_heads: int, group: int, rows: int, kv: int, dkv: int, pairs: int, slack: int
) -> None:
    """A head block is a multiple of the GQA group or a divisor of it, so no block splits a group unevenly.

    The budget holds score rows for about `pairs` (head, row) pairs, so blocks of every size come up.
    """
    budget = pairs * _SCORE_COPIES * kv * 4 * 4 // 3 + slack
    hb, _, _ = _plan_chunks(kv_heads * group, group, rows, kv, dkv, 4, 2, budget, _SCORE_COPIES)
    assert hb % group == 0 or group % hb == 0


@pytest.mark.parametrize(
    ("total_gib", "budget_mib"),
    [(139, 4096), (80, 2560), (24, 768), (4, 256), (0.5, 256)],
    ids=["h200", "80g", "24g", "4g", "tiny"],
)
def test_gpu_budget_is_a_share_of_memory_within_floor_and_cap(total_gib: float, budget_mib: int) -> None:
    """A GPU's default budget: 1/32 of its memory, never under the CPU's 256 MiB nor over 4 GiB."""
    assert reference.gpu_budget(int(total_gib * 2**30)) == budget_mib * 2**20


def test_cpu_default_budget_is_256_mib(chunks: Chunks) -> None:
    """attention() without a budget takes the device's default: on the CPU, score chunks of 256 MiB at most."""
    assert reference.default_budget(torch.device("cpu")) == 256 * 2**20
    case = Case("single", (64,), (4096,), 8, 8, **FP32)
    attention(materialize(case, seed=0))
    # 8 heads x 64 rows x 4096 keys x 2 copies x 4 bytes = 16 MiB: one chunk under 256 MiB, eight under 2 MiB.
    assert chunks.scores == [(8, 64, 4096)]
