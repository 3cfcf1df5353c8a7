"""Data of the model router (conformance/explore/model_router.py): per-architecture gates and reason texts.

The model is a small CPU library written in the style of the ROCm FlashInfer fork (see
routing/specs/flashinfer_rocm.py): a fast backend ("aiter") and a fallback ("fa2") computing the
same attention, and an `auto` that declines the fast one by capability checks and length gates.
Its tables mirror the fork's arch_caps at the commit the ROCm routing spec cites; they are the
model's own copy, so the routing spec checks the model rather than reading the model's numbers.
Every reason text holds the stable fragment of its routing.reasons constant (checked at import),
which is how the routing checker recognises it.
"""
from __future__ import annotations

from typing import Optional

from routing import reasons as R

FAST = "aiter"
FALLBACK = "fa2"
AUTO = "auto"
BACKENDS: tuple[str, ...] = (FALLBACK, FAST, AUTO)
ARCHS: tuple[str, ...] = ("gfx942", "gfx950")
LAYOUTS: tuple[str, ...] = ("ragged", "paged")
DTYPES: tuple[str, ...] = ("fp16", "bf16", "fp32")
HALF: frozenset[str] = frozenset({"fp16", "bf16"})
GRAPH_SUFFIX = "+graph"

# Paged: a query this short does not amortise the flat gather of the whole KV cache.
FLAT_GATHER_GATED_Q_LEN: dict[str, Optional[int]] = {"gfx942": 16, "gfx950": 8}
# Ragged: gfx950's None is a measured "never gate", not a missing row.
RAGGED_GATED_Q_LEN: dict[str, Optional[int]] = {"gfx942": 16, "gfx950": None}
# Archs where the fast backend computes a causal soft cap at head_dim 128 wrongly.
SOFTCAP_DEFECT_ARCHS: dict[str, bool] = {"gfx942": False, "gfx950": True}
SOFTCAP_DEFECT_HEAD_DIM = 128

# What `auto` reports when it declines the fast backend, formatted with the plan's values.
REASON_TEXT: dict[R.ReasonCode, str] = {
    R.LAYOUT: "kv_layout={kv_layout!r} (AITER requires NHD)",
    R.CUSTOM_MASK: "custom mask (not supported by AITER)",
    R.DTYPE: "dtype={dtype} (AITER requires fp16/bf16)",
    R.DTYPE_FP8_ALLOWED: "dtype={dtype} (AITER requires fp16/bf16/fp8)",
    R.HEAD_DIMS: "head_dim_qk={qk} != head_dim_vo={vo} (AITER requires equal head dims)",
    R.SOFTCAP_DEFECT: ("logits_soft_cap={cap} with causal head_dim={hd} (AITER mha_varlen_fwd computes "
                       "the soft cap incorrectly)"),
    R.PAGED_SHORT_QUERY: ("query length <= {t} on a page size AITER cannot page natively (its flat gather "
                          "copies the whole KV cache, which a short query cannot amortise)"),
    R.RAGGED_SHORT_QUERY: ("query length <= {t} on ragged KV (AITER's mha_varlen_fwd costs more per call "
                           "than the in-tree kernel, which a short query cannot amortise)"),
}

# What an explicit backend="aiter" raises (ValueError) for a plan the fast backend cannot serve.
EXPLICIT_FAST_REFUSALS: dict[str, str] = {
    "layout": "backend='aiter' requires kv_layout='NHD'; got {kv_layout!r}",
    "softcap_defect": ("backend='aiter' computes logits_soft_cap={cap} with causal head_dim={hd} incorrectly "
                       "on {arch}; use backend='fa2'"),
}

_SAMPLE = dict(kv_layout="HND", dtype="fp32", qk=192, vo=128, cap=30.0, hd=128, t=16)


def _check_tables() -> None:
    """Import-time self-check: every arch in every table, every text parses as its own constant."""
    for name, table in (("FLAT_GATHER_GATED_Q_LEN", FLAT_GATHER_GATED_Q_LEN),
                        ("RAGGED_GATED_Q_LEN", RAGGED_GATED_Q_LEN), ("SOFTCAP_DEFECT_ARCHS", SOFTCAP_DEFECT_ARCHS)):
        if set(table) != set(ARCHS):
            raise AssertionError(f"model_tables.{name} rows {sorted(table)} != ARCHS {sorted(ARCHS)}")
    for code, text in REASON_TEXT.items():
        if R.parse_reason(text.format(**_SAMPLE)) is not code:
            raise AssertionError(f"model_tables.REASON_TEXT[{code.name}] does not parse as {code.name}")


_check_tables()
del _check_tables
