"""The fp32 oracle against the independent fp64 textbook, over the fixed list of oracle_cases.py.

Hypothesis explores around this list in test_oracle_properties.py.
"""

from __future__ import annotations

import pytest

from oracle.reference import attention
from oracle_cases import CASE_IDS, CASES
from oracle_support import U32, U64, assert_within_rounding
from scenarios.case import Case
from scenarios.tensors import materialize
from textbook import textbook_attention


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_fp32_oracle_matches_fp64_textbook(case: Case) -> None:
    """The fp32 oracle is within fp32 rounding of the fp64 textbook, output and LSE."""
    inputs = materialize(case, seed=11)
    ref = attention(inputs)
    assert_within_rounding(ref.out, ref.lse, textbook_attention(inputs), U32, what=case.label)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_fused_fp32_oracle_matches_fp64_textbook(case: Case) -> None:
    """The GPU's fused softmax (three passes over the scores, the LSE from P at the row max), run here on the CPU,
    is within fp32 rounding of the textbook as the literal softmax is."""
    inputs = materialize(case, seed=11)
    ref = attention(inputs, fused=True)
    assert_within_rounding(ref.out, ref.lse, textbook_attention(inputs), U32, what=case.label)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_fp64_oracle_matches_fp64_textbook(case: Case) -> None:
    """In fp64 the oracle and the textbook agree to fp64 rounding: they compute the same function."""
    inputs = materialize(case, seed=11)
    ref = attention(inputs, precision="fp64")
    assert_within_rounding(ref.out, ref.lse, textbook_attention(inputs), U64, what=case.label)


def test_case_list_covers_every_axis() -> None:
    """The fixed list names every layout, KV layout, dtype, feature and degenerate shape at least once."""
    seen = {
        "layouts": {c.layout for c in CASES},
        "kv_layouts": {c.kv_layout for c in CASES},
        "dtypes": {c.q_dtype for c in CASES} | {c.kv_dtype for c in CASES},
        "page_sizes": {c.page_size for c in CASES if c.is_paged},
        "groups": {"mha" if c.group_size == 1 else "mqa" if c.num_kv_heads == 1 else "gqa" for c in CASES},
        "features": {f for c in CASES for f in c.features},
        "causal_shapes": {
            (q > k) - (q < k) for c in CASES if c.causal for q, k in zip(c.qo_lens, c.kv_lens) if q and k
        },
    }
    assert seen["layouts"] == {"ragged", "paged", "decode", "single"}
    assert seen["kv_layouts"] == {"NHD", "HND"}
    assert seen["dtypes"] == {"fp32", "fp16", "bf16", "e4m3fn", "e4m3fnuz", "e5m2"}
    assert {1, 16}.issubset(seen["page_sizes"]) and any(p & (p - 1) for p in seen["page_sizes"])
    assert seen["groups"] == {"mha", "mqa", "gqa"}
    assert {"causal", "custom_mask", "window", "soft_cap", "fp8", "zero_len", "empty_batch"} <= seen["features"]
    assert seen["causal_shapes"] == {-1, 0, 1}
    assert any(c.window_left == 0 for c in CASES) and any(c.sm_scale is not None for c in CASES)
    assert any(c.head_dim_qk != c.head_dim_vo for c in CASES)
