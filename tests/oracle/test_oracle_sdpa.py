"""The oracle against torch's SDPA math backend, an implementation neither of ours wrote.

SDPA has no soft cap and returns no LSE, so only outputs of uncapped cases are compared. It
runs in float64 on the dequantised inputs (fp8 times its descale), so it stands for the exact
result and the fp32 oracle must be within fp32 rounding of it. Masks are given to SDPA the way
torch users give them: boolean matrices built with tril/triu, or torch's own bottom-right
causal bias, and GQA through enable_gqa (query head h reads KV head h // group).
"""

from __future__ import annotations

from typing import Optional

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

from oracle.reference import attention
from oracle_cases import CASE_IDS, CASES
from oracle_support import U32, assert_within_rounding
from scenarios.case import Case
from scenarios.tensors import Inputs, fp8_descales, materialize
from textbook import real_values, request_kv, textbook_attention

COMPARABLE = [(c, i) for c, i in zip(CASES, CASE_IDS) if c.logits_soft_cap == 0]
# Causal-only cases with qo <= kv in every request: torch's causal_lower_right bias applies
# (it yields NaN rows, by its own warning, when qo > kv).
LOWER_RIGHT = [
    (c, i)
    for c, i in COMPARABLE
    if c.causal and c.mask == "none" and c.window_left < 0 and all(q <= k for q, k in zip(c.qo_lens, c.kv_lens))
]


def bool_mask(inputs: Inputs, r: int) -> Optional[torch.Tensor]:
    """Request r's [qo, kv] attend-mask from torch's tril/triu (bottom-right diagonal kv - qo)."""
    c = inputs.case
    qo, kv = c.qo_lens[r], c.kv_lens[r]
    mask = torch.ones(qo, kv, dtype=torch.bool)
    if c.causal:
        mask = mask.tril(diagonal=kv - qo)
    if c.window_left >= 0:
        mask = mask.triu(diagonal=kv - qo - c.window_left)
    custom = inputs.request_mask(r)
    if custom is not None:
        mask = mask & custom.cpu()
    return mask


def sdpa_out(inputs: Inputs, style: str) -> torch.Tensor:
    """SDPA math backend output for every request, in float64, packed like the oracle's."""
    c = inputs.case
    q_descale, _, _ = fp8_descales(c)
    out = torch.zeros((c.total_qo, c.num_qo_heads, c.head_dim_vo), dtype=torch.float64)
    for r, (qo, kv) in enumerate(zip(c.qo_lens, c.kv_lens)):
        if qo == 0 or kv == 0:
            continue  # SDPA has no answer for an empty softmax; the hand tests pin ours.
        q0 = int(inputs.qo_indptr[r])
        q = real_values(inputs.q[q0 : q0 + qo], q_descale).permute(1, 0, 2).unsqueeze(0)
        k = request_kv(inputs, "k", r).permute(1, 0, 2).unsqueeze(0)
        v = request_kv(inputs, "v", r).permute(1, 0, 2).unsqueeze(0)
        mask = causal_lower_right(qo, kv) if style == "causal_lower_right" else bool_mask(inputs, r)
        with sdpa_kernel([SDPBackend.MATH]):
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=c.scale, enable_gqa=True)
        out[q0 : q0 + qo] = o.squeeze(0).permute(1, 0, 2)
    return out


@pytest.mark.parametrize("case", [c for c, _ in COMPARABLE], ids=[i for _, i in COMPARABLE])
def test_oracle_output_matches_sdpa_math_with_boolean_masks(case: Case) -> None:
    """The fp32 oracle's output is within fp32 rounding of SDPA math (fp64) given explicit boolean masks."""
    inputs = materialize(case, seed=23)
    ref = attention(inputs)
    tb = textbook_attention(inputs)
    assert_within_rounding(
        ref.out, ref.lse, tb, U32, expected=(sdpa_out(inputs, "bool"), tb.lse), what=f"{case.label} vs SDPA"
    )


@pytest.mark.parametrize("case", [c for c, _ in LOWER_RIGHT], ids=[i for _, i in LOWER_RIGHT])
def test_oracle_causal_matches_sdpa_causal_lower_right(case: Case) -> None:
    """The oracle's causal mask is torch's causal_lower_right bias (bottom-right aligned)."""
    inputs = materialize(case, seed=29)
    ref = attention(inputs)
    tb = textbook_attention(inputs)
    assert_within_rounding(
        ref.out,
        ref.lse,
        tb,
        U32,
        expected=(sdpa_out(inputs, "causal_lower_right"), tb.lse),
        what=f"{case.label} vs SDPA causal_lower_right",
    )


def test_lower_right_list_is_not_empty() -> None:
    """At least one fixed case is compared with torch's own bottom-right causal bias."""
    assert LOWER_RIGHT
