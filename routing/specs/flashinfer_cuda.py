"""Upstream FlashInfer's `backend="auto"` on CUDA (flashinfer-python 0.7.2.post1) as data.

Data only: rows in precedence order, per-architecture tables, lifecycle flags. The engine is
`routing/spec.py`; the comparison is `routing/check.py`. Every `source=` cites file:line of the
0.7.2.post1 wheel (flashinfer/prefill.py, decode.py, utils.py).

Architectures are compute capabilities ("sm90"); an arch absent from ARCHS reads MISSING in every
table, so each row that depends on it reports a spec gap there, never a guess. Upstream gives no
fallback reason, so every row expects NOT_REPORTED (never None), the raise rows included. Where
`auto` is resolved per API, the selector's checks in order, and the CUDA toolkit the tables assume:
docs/routing-specs.md, section "`routing/specs/flashinfer_cuda.py`: how auto resolves".
"""

from __future__ import annotations

from typing import Callable

from kernels.protocol import NOT_REPORTED
from routing.spec import Ctx, Lifecycle, RouteRule, RoutingQuery, RoutingSpec, ThresholdTable, validate

ARCHS = ("sm80", "sm90", "sm100", "sm120")
SIXTEEN_BIT = frozenset({"fp16", "bf16"})
FP8 = frozenset({"e4m3fn", "e5m2"})  # utils.py:493-496
FA3_HEAD_DIMS = frozenset({(64, 64), (128, 128), (256, 256), (192, 128)})  # utils.py:504-508
FMHA_V2_HEAD_DIMS = frozenset({64, 128, 256})  # prefill.py:5548-5552
CUDNN_RAGGED_HEAD_DIMS = frozenset({(128, 128), (192, 128), (256, 256)})  # prefill.py:2411
CUTLASS_RAGGED_HEAD_DIMS = frozenset({(128, 128), (192, 128)})  # prefill.py:2419
CUTLASS_WORK_CAPACITY = 131072  # prefill.py:2427 _CUTLASS_PLAN_WORK_CAPACITY
CUTLASS_QO_TILE = 256  # prefill.py:2428 _CUTLASS_PLAN_QO_TILE_SIZE
FMHA_V2_MIN_KV = 256  # prefill.py:5561 max_seq_in_batch >= 256

# --- per-architecture tables ----------------------------------------------------------------------
FA3_CAPABLE = ThresholdTable(
    "fa3_capable",
    {"sm80": False, "sm90": True, "sm100": False, "sm120": False},
    "is_sm90a_supported, utils.py:663-665: major == 9",
)
FMHA_V2 = ThresholdTable(
    "fmha_v2",
    {"sm80": False, "sm90": False, "sm100": False, "sm120": True},
    "_should_use_fmha_v2_sm120, utils.py:565-566: is_sm120a or is_sm121a",
)
BLACKWELL_CUDNN = ThresholdTable(
    "blackwell_cudnn",
    {"sm80": False, "sm90": False, "sm100": True, "sm120": False},
    "_blackwell_ragged_auto_upgrade cudnn leg, prefill.py:2523: is_sm100a_supported",
)
BLACKWELL_CUTLASS = ThresholdTable(
    "blackwell_cutlass",
    {"sm80": False, "sm90": False, "sm100": True, "sm120": False},
    "cutlass leg, prefill.py:2544: is_sm100a_supported or is_sm110a_supported",
)

# Rows no plan of kernels/flashinfer/adapter.py reaches: it never passes pos_encoding_mode or
# use_fp16_qk_reduction (plan() defaults "NONE" and False), and fmha_v2 needs the latter.
NOT_DRIVEN_BY_ADAPTER: tuple[str, ...] = ("ragged_fmha_v2", "fa3_pos_encoding", "fa3_fp16_qk_reduction")

Pred = Callable[[RoutingQuery, Ctx], bool]


def _auto(p: Pred) -> Pred:
    return lambda q, c: q.requested == "auto" and p(q, c)


# --- what each API hands determine_attention_backend ----------------------------------------------
def _sel_custom_mask(q: RoutingQuery) -> bool:
    """Decode passes use_custom_mask=False (decode.py:2384); the others their mask state."""
    return q.custom_mask and q.api != "decode"


def _sel_fp16_qk_reduction(q: RoutingQuery) -> bool:
    """Decode passes use_fp16_qk_reductions=False (decode.py:2383)."""
    return q.use_fp16_qk_reduction and q.api != "decode"


def _sel_head_dims(q: RoutingQuery) -> tuple[int, int]:
    """Decode passes (head_dim, head_dim) (decode.py:2387-2388); single passes q's and v's last dims."""
    return (q.head_dim_qk, q.head_dim_qk) if q.api == "decode" else (q.head_dim_qk, q.head_dim_vo)


def _kv_only_fp8(q: RoutingQuery) -> bool:
    return q.kv_dtype in FP8 and q.q_dtype not in FP8


# is_fa3_backend_supported (utils.py:486-501) then the head-dim check (utils.py:623-629), in order.
_FA3_DECLINES: tuple[tuple[str, Callable[[RoutingQuery], bool], str], ...] = (
    ("fa3_custom_mask", _sel_custom_mask, "utils.py:486-487 use_custom_mask"),
    ("fa3_pos_encoding", lambda q: q.pos_encoding != "NONE", "utils.py:488-489 pos_encoding_mode != NONE"),
    ("fa3_fp16_qk_reduction", _sel_fp16_qk_reduction, "utils.py:490-491 use_fp16_qk_reductions"),
    ("fa3_fp8_kv_needs_fp8_q", _kv_only_fp8, "utils.py:492-497 'FA3 FP8 KV cache currently requires FP8 query'"),
    (
        "fa3_head_dims",
        lambda q: _sel_head_dims(q) not in FA3_HEAD_DIMS,
        "utils.py:623-629 is_fa3_prefill_head_dim_supported (utils.py:504-508) false -> fa2",
    ),
)


def _declined_by(declines: Callable[[RoutingQuery], bool]) -> Pred:
    """One _FA3_DECLINES check as a row's `when` (each row keeps its own check)."""
    return lambda q, c: declines(q)


def _selector_picks_fa2(q: RoutingQuery, c: Ctx) -> bool:
    """determine_attention_backend answers fa2 (utils.py:616-629)."""
    return not c.table("fa3_capable") or any(declines(q) for _, declines, _ in _FA3_DECLINES)


# --- the ragged upgrades of an fa2 answer ---------------------------------------------------------
def _fmha_v2(q: RoutingQuery, c: Ctx) -> bool:
    """prefill.py:5547-5575 (qo_indptr == kv_indptr, :5547), _should_use_fmha_v2_sm120 (utils.py:565-571) last."""
    return (
        q.api == "ragged"
        and _selector_picks_fa2(q, c)
        and q.kv_layout == "NHD"
        and q.num_qo_heads == q.num_kv_heads
        and q.qo_lens == q.kv_lens
        and q.head_dim_qk == q.head_dim_vo
        and q.head_dim_qk in FMHA_V2_HEAD_DIMS
        and q.q_dtype == q.kv_dtype
        and q.use_fp16_qk_reduction
        and q.max_kv_len >= FMHA_V2_MIN_KV
        and q.window_left < 0
        and q.logits_soft_cap == 0.0
        and bool(c.table("fmha_v2"))
        and not q.custom_mask
        and q.pos_encoding == "NONE"
        and q.q_dtype in SIXTEEN_BIT
        and q.kv_dtype in SIXTEEN_BIT
    )


def _blackwell_candidate(q: RoutingQuery, c: Ctx) -> bool:
    """The upgrade is tried on an fa2 answer (prefill.py:5583) unless a feature rules every leg out (:2509-2519)."""
    return (
        q.api == "ragged"
        and _selector_picks_fa2(q, c)
        and not _fmha_v2(q, c)
        and q.kv_layout == "NHD"
        and q.q_dtype == q.kv_dtype
        and q.pos_encoding == "NONE"
        and not q.custom_mask
        and q.window_left < 0
        and q.logits_soft_cap == 0.0
    )


def _cudnn_leg(q: RoutingQuery, c: Ctx) -> bool:
    """prefill.py:2521-2541 (indptrs are int32: the adapter passes int32, so that check holds)."""
    single_token_gqa = q.max_q_len == 1 and q.num_qo_heads != q.num_kv_heads  # prefill.py:5626-5628
    return (
        _blackwell_candidate(q, c)
        and bool(c.table("blackwell_cudnn"))
        and q.q_dtype in SIXTEEN_BIT
        and q.cudnn_direct_seqlens
        and (q.head_dim_qk, q.head_dim_vo) in CUDNN_RAGGED_HEAD_DIMS
        and not single_token_gqa
    )


def _cutlass_work_items(q: RoutingQuery) -> int:
    """_cutlass_plan_work_items (prefill.py:2431-2441): query tiles of 256 rows, times the q heads."""
    return sum(-(-n // CUTLASS_QO_TILE) for n in q.qo_lens) * q.num_qo_heads


def _cutlass_leg(q: RoutingQuery, c: Ctx) -> bool:
    """prefill.py:2542-2566."""
    return (
        _blackwell_candidate(q, c)
        and bool(c.table("blackwell_cutlass"))
        and q.q_dtype in SIXTEEN_BIT
        and q.o_dtype == q.q_dtype
        and (q.head_dim_qk, q.head_dim_vo) in CUTLASS_RAGGED_HEAD_DIMS
        and _cutlass_work_items(q) <= CUTLASS_WORK_CAPACITY
        and not q.graph_mode
    )


def _decode_tc_fp8(q: RoutingQuery) -> bool:
    return q.use_tensor_cores and (q.q_dtype in FP8 or q.kv_dtype in FP8)


RULES: tuple[RouteRule, ...] = (
    # -- plan() fails before auto is looked at --
    # (any requested backend: these raises precede every use of it)
    RouteRule(
        "empty_batch",
        lambda q, c: q.api in ("paged", "ragged") and q.batch_size == 0,
        None,
        NOT_REPORTED,
        expect_raises="RuntimeError",
        source="prefill.py:3449 paged `(qo_indptr[1:] - qo_indptr[:-1]).max()`, :5336 ragged "
        "`kv_len_arr.max()` on an empty batch, before the resolution (:3669, :5527)",
    ),
    RouteRule(
        "decode_tensor_cores_empty_batch",
        lambda q, c: q.api == "decode" and q.use_tensor_cores and q.batch_size == 0,
        None,
        NOT_REPORTED,
        expect_raises="RuntimeError",
        source="decode.py:2371 `kv_lens_arr_host.max()` before the tensor-core resolution (:2375)",
    ),
    # -- an explicit backend is what runs: upstream never redirects one (no performance gates) --
    RouteRule(
        "explicit_fa2",
        lambda q, c: q.requested == "fa2",
        "fa2",
        NOT_REPORTED,
        source="prefill.py:3669, :5527, decode.py:2375 resolve only `auto`",
    ),
    RouteRule(
        "explicit_fa3",
        lambda q, c: q.requested == "fa3",
        "fa3",
        NOT_REPORTED,
        source="prefill.py:3669, :5527, decode.py:2375 resolve only `auto`",
    ),
    RouteRule(
        "explicit_cudnn",
        lambda q, c: q.requested == "cudnn",
        "cudnn",
        NOT_REPORTED,
        source="prefill.py:3669, :5527, decode.py:2375 resolve only `auto`",
    ),
    # -- decode: which kernel family, before any selector call --
    RouteRule(
        "decode_cuda_cores",
        _auto(lambda q, c: q.api == "decode" and not q.use_tensor_cores),
        "fa2",
        NOT_REPORTED,
        source="decode.py:1507-1508 resolved_backend reads fa2 for auto without tensor cores "
        "(batch_decode module, :2436-2448); cuDNN auto needs q_len_per_req 2..4 (:807)",
    ),
    RouteRule(
        "decode_tensor_cores_16bit",
        _auto(lambda q, c: q.api == "decode" and q.use_tensor_cores and not _decode_tc_fp8(q)),
        "fa2",
        NOT_REPORTED,
        source="decode.py:2375-2391: no fp8 in q or kv -> fa2",
    ),
    # -- ragged: an fa2 answer upgraded (the selector's own rows follow) --
    RouteRule(
        "ragged_fmha_v2",
        _auto(_fmha_v2),
        "fmha_v2",
        NOT_REPORTED,
        tables=("fmha_v2", "fa3_capable"),
        source="prefill.py:5538-5575; utils.py:552-571 _should_use_fmha_v2_sm120",
    ),
    RouteRule(
        "ragged_blackwell_cudnn",
        _auto(_cudnn_leg),
        "cudnn",
        NOT_REPORTED,
        tables=("blackwell_cudnn", "fa3_capable", "fmha_v2"),
        source="prefill.py:5583-5631 -> _blackwell_ragged_auto_upgrade :2509-2541 (order :2372 cudnn first)",
    ),
    RouteRule(
        "ragged_blackwell_cutlass",
        _auto(_cutlass_leg),
        "cutlass",
        NOT_REPORTED,
        tables=("blackwell_cutlass", "fa3_capable", "fmha_v2"),
        source="prefill.py:2542-2566 (cutlass second; never under CUDA graphs :2564)",
    ),
    # -- determine_attention_backend (paged, ragged, single, tensor-core fp8 decode) --
    RouteRule(
        "not_sm90a",
        _auto(lambda q, c: not c.table("fa3_capable")),
        "fa2",
        NOT_REPORTED,
        tables=("fa3_capable",),
        source="utils.py:616, :627-628: is_sm90a_supported (utils.py:663-665) first",
    ),
    *(
        RouteRule(name, _auto(_declined_by(declines)), "fa2", NOT_REPORTED, source=src)
        for name, declines, src in _FA3_DECLINES
    ),
    RouteRule("fa3", _auto(lambda q, c: True), "fa3", NOT_REPORTED, source="utils.py:616-626"),
)

SPEC = RoutingSpec(
    library="flashinfer-cuda",
    archs=ARCHS,
    rules=RULES,
    thresholds={t.name: t for t in (FA3_CAPABLE, FMHA_V2, BLACKWELL_CUDNN, BLACKWELL_CUTLASS)},
    lifecycle=Lifecycle(
        # ragged: every plan, graph mode too (prefill.py:5527 reads no graph flag); single: per call.
        re_resolve_every_eager_plan=frozenset({"ragged", "single"}),
        graph_mode_first_plan_decides=False,
        # paged: only while `_backend == "auto"` (prefill.py:3669); decode with tensor cores alike
        # (decode.py:2375); decode without them is never resolved and always reads fa2.
        sticky_apis=frozenset({"paged", "decode"}),
        per_plan_rules=frozenset({"empty_batch", "decode_tensor_cores_empty_batch"}),
        explicit_backend_never_gated=True,  # no performance gates in this spec
        nonpositive_length_never_short=True,
        before_plan=("auto", NOT_REPORTED),  # paged `_backend` before plan()
        stale_mask_apis=frozenset({"ragged"}),  # prefill.py:5295-5300 (paged clears it, :3543-3545)
        raised_plan_fixes_nothing=True,  # the raises precede `self._backend = ...`
    ),
)

validate(SPEC)
