"""The ROCm FlashInfer fork's routing (AMD-Ecosystem/flashinfer MAIN @10f72434) as data.

Data only: rows in precedence order, per-architecture tables, lifecycle flags. The engine is
`routing/spec.py`; the comparison is `routing/check.py`. Every row cites its rule in
tests/data/sources/rocm_fork.md section 7 ("rule N") or the section it comes from ("s2 step
N" = section 2, the selector; "s4" = section 4, the wrapper lifecycle).

Precedence (rule 3, section 2): wrapper-level refusals and explicit backends first, then the
selector: capability > layout > mask > dtype > dtype mismatch > head dims > pos_enc > soft-cap
> install (rule 4: a perf gate only runs when AITER is importable, so the install reason wins)
> perf gates; then post-selection probes and decode capacity; then ("aiter", None).

What the wrappers pass to the selector (section 2, "What each caller passes") is encoded in the
small `_sel_*` helpers: a natively routed page passes no length and no kv_len (rule 10), ragged
always passes its length, decode and single prefill pass none (rule 33).
"""

from __future__ import annotations

from typing import Callable, Optional

from routing import reasons as R
from routing.spec import (
    Ctx,
    LengthGate,
    Lifecycle,
    RouteRule,
    RoutingQuery,
    RoutingSpec,
    ThresholdTable,
    validate,
)

ARCHS = ("gfx942", "gfx950")
HALF = frozenset({"fp16", "bf16"})
FP8_PREFILL = frozenset({"e4m3fnuz", "e4m3fn"})  # FP8_PREFILL_DTYPES
# amd-aiter >= 0.1.10 pages {1, 16, 1024} natively; the 0.1.20 ABI floor implies it (s3).
NATIVE_PAGE_SIZES = frozenset({1, 16, 1024})

# --- per-architecture tables (section 3, arch_caps @10f72434) -----------------------------------
FLAT_GATHER = ThresholdTable("flat_gather", {"gfx942": 16, "gfx950": 8}, "_AITER_FLAT_GATHER_GATED_Q_LEN; rule 5")
# gfx950 None is a MEASURED "never gate" (#373), not a gap; deleting it must fail (rule 6).
RAGGED = ThresholdTable("ragged", {"gfx942": 16, "gfx950": None}, "_AITER_RAGGED_GATED_Q_LEN; rule 6")
SOFTCAP_DEFECT = ThresholdTable(
    "softcap_defect", {"gfx942": False, "gfx950": True}, "_AITER_SOFTCAP_DEFECT_ARCHS; rule 19"
)
NATIVE_FP8 = ThresholdTable(
    "native_fp8", {"gfx942": "e4m3fnuz", "gfx950": "e4m3fn"}, "aiter.dtypes.fp8 per arch; rule 24"
)

Pred = Callable[[RoutingQuery, Ctx], bool]


# --- what the wrapper hands the selector ---------------------------------------------------------
def _routed_page(q: RoutingQuery) -> bool:
    """_aiter_paged_route_page_sizes: fp8 -> native set; fp16/bf16 -> native & {1024}."""
    sizes = NATIVE_PAGE_SIZES if q.q_dtype in FP8_PREFILL else NATIVE_PAGE_SIZES & {1024}
    return q.api == "paged" and q.page_size in sizes


def _sel_max_q_len(q: RoutingQuery) -> Optional[int]:
    if q.both_length_gates or (q.api == "paged" and not _routed_page(q)):
        return q.max_q_len
    return None


def _sel_ragged_q_len(q: RoutingQuery) -> Optional[int]:
    return q.max_q_len if (q.api == "ragged" or q.both_length_gates) else None


def _sel_kv_len(q: RoutingQuery) -> Optional[int]:
    if q.api in ("ragged", "single") or (q.api == "paged" and not _routed_page(q)):
        return q.max_kv_len
    return None


def _probe_q_len(q: RoutingQuery) -> Optional[int]:
    """Paged probe site: a routed page whose native-paging probe failed re-checks _max_q_len."""
    return q.max_q_len if _routed_page(q) and not q.native_paging_ok else None


def _softcap_shape(q: RoutingQuery, kv_len: Optional[int], ctx: Ctx) -> bool:
    return (
        q.causal
        and q.logits_soft_cap > 0
        and q.head_dim_qk == 128
        and kv_len is not None
        and q.arch in ARCHS
        and bool(ctx.table("softcap_defect"))
    )


def _auto(p: Pred) -> Pred:
    return lambda q, c: q.requested == "auto" and p(q, c)


# --- the selector's decline rows (s2 steps 1-8, 11), reused by the fp8 refusal row --------------
_SELECTOR_DECLINES: tuple[RouteRule, ...] = (
    RouteRule(
        "capability_undeclared",
        _auto(lambda q, c: q.arch not in ARCHS),
        "fa2",
        R.CAPABILITY_UNDECLARED,
        source="rule 3; s2 step 1",
    ),
    RouteRule("layout", _auto(lambda q, c: q.kv_layout != "NHD"), "fa2", R.LAYOUT, source="rule 3; s2 step 2"),
    RouteRule(
        "custom_mask",
        _auto(lambda q, c: q.custom_mask and q.api != "decode"),
        "fa2",
        R.CUSTOM_MASK,
        source="rules 3, 13; s2 step 3 (decode passes no mask)",
    ),
    RouteRule(
        "dtype_paged",
        _auto(lambda q, c: q.api == "paged" and q.q_dtype not in HALF | FP8_PREFILL),
        "fa2",
        R.DTYPE_FP8_ALLOWED,
        source="rule 3; s2 step 4, paged allow_fp8=True",
    ),
    RouteRule(
        "dtype",
        _auto(lambda q, c: q.api != "paged" and q.q_dtype not in HALF),
        "fa2",
        R.DTYPE,
        source="rule 3; s2 step 4",
    ),
    RouteRule(
        "dtype_mismatch",
        _auto(lambda q, c: q.q_dtype != q.kv_dtype),
        "fa2",
        R.DTYPE_MISMATCH,
        source="rule 3; s2 step 5",
    ),
    RouteRule(
        "head_dims", _auto(lambda q, c: q.head_dim_qk != q.head_dim_vo), "fa2", R.HEAD_DIMS, source="rule 3; s2 step 6"
    ),
    RouteRule(
        "pos_encoding", _auto(lambda q, c: q.pos_encoding != "NONE"), "fa2", R.POS_ENCODING, source="rule 3; s2 step 7"
    ),
    RouteRule(
        "softcap_defect",
        _auto(lambda q, c: _softcap_shape(q, _sel_kv_len(q), c)),
        "fa2",
        R.SOFTCAP_DEFECT,
        tables=("softcap_defect",),
        source="rules 3, 10, 19; s2 step 8 (a routed page passes kv_len=None)",
    ),
    RouteRule(
        "not_installed",
        _auto(lambda q, c: q.aiter_install == "not_installed"),
        "fa2",
        R.NOT_INSTALLED,
        source="rule 4; s2 steps 9, 11",
    ),
    RouteRule(
        "below_abi_floor",
        _auto(lambda q, c: q.aiter_install == "below_abi_floor"),
        "fa2",
        R.ABI_FLOOR,
        source="rule 4; s2 steps 9, 11 (amd-aiter < 0.1.20)",
    ),
)


def _selector_declines(q: RoutingQuery, c: Ctx) -> bool:
    return any(r.when(q, c) for r in _SELECTOR_DECLINES)


def _aiter_bad_feature(q: RoutingQuery) -> bool:
    if q.api == "decode":
        return q.use_tensor_cores or q.kv_layout != "NHD" or q.pos_encoding != "NONE"
    return q.kv_layout != "NHD" or q.pos_encoding != "NONE"


def _decode_over_capacity(q: RoutingQuery) -> bool:
    return q.api == "decode" and q.max_seq_len is not None and not q.use_tensor_cores and q.max_kv_len > q.max_seq_len


RULES: tuple[RouteRule, ...] = (
    # -- refusals that precede any backend choice --
    RouteRule(
        "unknown_backend_ragged",
        lambda q, c: q.api == "ragged" and q.requested not in ("auto", "fa2", "aiter"),
        None,
        None,
        expect_raises="ValueError",
        source="rule 26; s1 ragged __init__",
    ),
    RouteRule(
        "unknown_backend_paged",
        lambda q, c: q.api == "paged" and q.requested not in ("auto", "fa2", "aiter"),
        "fa2",
        None,
        source="rule 26; s1 paged __init__ (warns, becomes fa2)",
    ),
    RouteRule(
        "both_length_gates_armed",
        _auto(lambda q, c: q.both_length_gates),
        None,
        None,
        expect_raises="ValueError",
        source="rule 2; s2 step 0 (#373)",
    ),
    RouteRule(
        "ragged_fp8",
        lambda q, c: q.api == "ragged" and q.q_dtype in FP8_PREFILL,
        None,
        None,
        expect_raises="NotImplementedError",
        source="rule 22; s4 ragged plan() (every backend, before the selector)",
    ),
    RouteRule(
        "paged_fp8_off_native_paging",
        lambda q, c: q.api == "paged" and q.q_dtype in FP8_PREFILL and not _routed_page(q),
        None,
        None,
        expect_raises="NotImplementedError",
        source="rule 21; _reject_fp8_off_native_paging (auto and aiter)",
    ),
    RouteRule(
        "paged_fp8_output_not_bf16",
        lambda q, c: q.api == "paged" and q.q_dtype in FP8_PREFILL and q.o_dtype != "bf16",
        None,
        None,
        expect_raises="NotImplementedError",
        source="rule 20; s1 plan() o_data_type",
    ),
    RouteRule(
        "paged_fp8_wrong_encoding",
        lambda q, c: (
            q.api == "paged"
            and q.requested in ("auto", "aiter")
            and q.arch in ARCHS
            and q.q_dtype in FP8_PREFILL
            and q.q_dtype != c.table("native_fp8")
        ),
        None,
        None,
        expect_raises="NotImplementedError",
        tables=("native_fp8",),
        source="rule 24; _require_native_fp8_dtype",
    ),
    RouteRule(
        "fp8_on_fa2",
        lambda q, c: (
            q.api in ("paged", "single")
            and q.q_dtype in FP8_PREFILL
            and (q.requested == "fa2" or (q.requested == "auto" and (q.api == "single" or _selector_declines(q, c))))
        ),
        None,
        None,
        expect_raises="NotImplementedError",
        source="rule 22; _reject_fp8_on_fa2 / paged plan() 'no in-tree fa2 kernel'",
    ),
    # -- explicit backends: never redirected by a perf gate, reason None --
    RouteRule(
        "explicit_fa2",
        lambda q, c: q.requested == "fa2",
        "fa2",
        None,
        source="rules 15, 34 (reason None for an explicit backend)",
    ),
    RouteRule(
        "explicit_aiter_softcap_defect",
        lambda q, c: q.requested == "aiter" and _softcap_shape(q, _sel_kv_len(q), c),
        None,
        None,
        expect_raises="ValueError",
        tables=("softcap_defect",),
        source="rule 19; s4 (ragged/single; paged off a routed page)",
    ),
    RouteRule(
        "explicit_aiter_unsupported_feature",
        lambda q, c: q.requested == "aiter" and _aiter_bad_feature(q),
        None,
        None,
        expect_raises="ValueError",
        source="rule 29; s4 (pos_enc/layout; decode TC/HND/RoPE)",
    ),
    RouteRule(
        "explicit_aiter_decode_over_capacity",
        lambda q, c: q.requested == "aiter" and _decode_over_capacity(q),
        None,
        None,
        expect_raises="ValueError",
        source="rule 30; 'increase max_seq_len'",
    ),
    RouteRule(
        "explicit_aiter",
        lambda q, c: q.requested == "aiter",
        "aiter",
        None,
        source="rule 15; tests *explicit*survives*",
    ),
    # -- auto, decode before its selector call --
    RouteRule(
        "decode_tensor_cores",
        _auto(lambda q, c: q.api == "decode" and q.use_tensor_cores),
        "fa2",
        None,
        source="rule 29; decode _plan_impl (silent)",
    ),
    RouteRule(
        "decode_graph_without_max_seq_len",
        _auto(lambda q, c: q.api == "decode" and q.graph_mode and q.max_seq_len is None),
        "fa2",
        None,
        source="rule 28; decode _plan_impl (silent)",
    ),
    # -- auto, the selector --
    *_SELECTOR_DECLINES,
    RouteRule(
        "paged_short_query",
        _auto(lambda q, c: True),
        "fa2",
        R.PAGED_SHORT_QUERY,
        gate=LengthGate("flat_gather", _sel_max_q_len),
        source="rules 5, 7, 8, 10; s2 step 9",
    ),
    RouteRule(
        "ragged_short_query",
        _auto(lambda q, c: True),
        "fa2",
        R.RAGGED_SHORT_QUERY,
        gate=LengthGate("ragged", _sel_ragged_q_len),
        source="rules 6, 7, 8; s2 step 9 (#373)",
    ),
    # -- auto resolved to aiter: probes and capacity --
    RouteRule(
        "paged_probe_softcap_defect",
        _auto(lambda q, c: _probe_q_len(q) is not None and _softcap_shape(q, q.max_kv_len, c)),
        "fa2",
        R.NATIVE_PAGING_UNAVAILABLE,
        tables=("softcap_defect",),
        source="s4 paged probe site, soft-cap branch",
    ),
    RouteRule(
        "paged_probe_short_query",
        _auto(lambda q, c: True),
        "fa2",
        R.PAGED_SHORT_QUERY,
        gate=LengthGate("flat_gather", _probe_q_len),
        source="rule 16; s4 paged probe site",
    ),
    RouteRule(
        "bootstrap_failed",
        _auto(lambda q, c: q.api in ("paged", "ragged", "decode") and not q.bootstrap_ok),
        "fa2",
        R.BOOTSTRAP_FAILED,
        source="rule 17; handle_aiter_probe_failure",
    ),
    RouteRule(
        "single_bootstrap_failed",
        _auto(lambda q, c: q.api == "single" and not q.bootstrap_ok),
        "fa2",
        None,
        source="s4 single prefill: 'silently falls back to fa2'",
    ),
    RouteRule(
        "decode_over_capacity",
        _auto(lambda q, c: _decode_over_capacity(q)),
        "fa2",
        R.DECODE_CAPACITY,
        source="rule 30; _aiter_graph_capacity_overrun",
    ),
    RouteRule("aiter", _auto(lambda q, c: True), "aiter", None, source="rule 1; s2 step 12"),
)

SPEC = RoutingSpec(
    library="flashinfer-rocm",
    archs=ARCHS,
    rules=RULES,
    thresholds={t.name: t for t in (FLAT_GATHER, RAGGED, SOFTCAP_DEFECT, NATIVE_FP8)},
    lifecycle=Lifecycle(
        # rules 12, 14: eager paged/ragged re-resolve every plan; graph mode: the first plan decides.
        re_resolve_every_eager_plan=frozenset({"paged", "ragged", "single"}),
        graph_mode_first_plan_decides=True,
        # s4 decode: resolution only while _backend == "auto" (sticky) ...
        sticky_apis=frozenset({"decode"}),
        # ... but capacity is checked on every plan and reset by the next (rule 30).
        per_plan_rules=frozenset({"decode_over_capacity"}),
        explicit_backend_never_gated=True,  # rule 15
        nonpositive_length_never_short=True,  # rule 7; #373 empty batch
        before_plan=("auto", None),  # rule 34
    ),
)

validate(SPEC)
