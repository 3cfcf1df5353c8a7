"""Upstream FlashInfer's `backend="auto"` on CUDA as data: one spec per measured flashinfer-python version.

Data only: rows in precedence order, per-architecture tables, lifecycle flags. The engine is
`routing/spec.py`; the comparison is `routing/check.py`; `routing.specs` picks the spec of the
installed version (BY_VERSION; a version with no spec here is unmodelled, never the nearest one).
Every `source=` cites file:line of each wheel whose spec holds the row (flashinfer/prefill.py,
decode.py, utils.py), prefixed with the version: a row both versions share cites both.

Architectures are compute capabilities ("sm90"); an arch absent from ARCHS reads MISSING in every
table, so each row that depends on it reports a spec gap there, never a guess. Upstream gives no
fallback reason, so every row expects NOT_REPORTED (never None), the raise rows included. Where
`auto` is resolved per API and version, the selector's checks in order, and the CUDA toolkit the
tables assume: docs/routing-specs.md, section "`routing/specs/flashinfer_cuda.py`: how auto resolves".
"""

from __future__ import annotations

from typing import Callable

from kernels.protocol import NOT_REPORTED
from routing.spec import Ctx, Lifecycle, RouteRule, RoutingQuery, RoutingSpec, ThresholdTable, validate

V072 = "0.7.2.post1"
V074 = "0.7.4"

ARCHS = ("sm80", "sm90", "sm100", "sm120")
SIXTEEN_BIT = frozenset({"fp16", "bf16"})
FP8 = frozenset({"e4m3fn", "e5m2"})  # utils.py:493-496 (0.7.2.post1), :548-551 (0.7.4)
FA3_HEAD_DIMS = frozenset({(64, 64), (128, 128), (256, 256), (192, 128)})  # utils.py:504-508, :559-563
FMHA_V2_HEAD_DIMS = frozenset({64, 128, 256})  # prefill.py:5548-5552, :6410-6414
CUDNN_RAGGED_HEAD_DIMS = frozenset({(128, 128), (192, 128), (256, 256)})  # prefill.py:2411, :2642
CUTLASS_RAGGED_HEAD_DIMS = frozenset({(128, 128), (192, 128)})  # prefill.py:2419, :2650
CUTLASS_WORK_CAPACITY = 131072  # prefill.py:2427, :2658 _CUTLASS_PLAN_WORK_CAPACITY
CUTLASS_QO_TILE = 256  # prefill.py:2428, :2659 _CUTLASS_PLAN_QO_TILE_SIZE
FMHA_V2_MIN_KV = 256  # prefill.py:5561, :6423 max_seq_in_batch >= 256
# 0.7.4 only. The paged wrapper demotes fa3 to fa2 for a batch whose longest query has at most this
# many rows (_determine_auto_backend, prefill.py:3275-3281).
PAGED_FA2_MAX_Q_ROWS = 64
# 0.7.4 only. _blackwell_paged_auto_cudnn's measured domain (prefill.py:2540-2586).
PAGED_CUDNN_PREFIX_Q = (64, 1024)  # max_q range of a prefix batch
PAGED_CUDNN_PREFIX_KV = (2048, 32768)  # its max_kv range, and max_kv >= 4 * max_q
PAGED_CUDNN_FULL_Q = (1024, 8192)  # max_q range of a full (q == kv per request) batch
PAGED_CUDNN_BATCH = (1, 4)
PAGED_CUDNN_QO_HEADS = (8, 64)
PAGED_CUDNN_GROUPS = frozenset({1, 2, 4, 8, 16})
PAGED_CUDNN_PAGE_SIZE = 16
PAGED_CUDNN_MIN_WORK = 8 * 1024 * 1024  # qo heads x query rows x keys
# 0.7.4 only. _auto_decode_prefers_cudnn's single-token envelope (decode.py:677-680, :844-857): head
# dim 256, these GQA groups, batch x kv heads in this band (the wrapper's replay hint is graph-only).
DECODE_CUDNN_HEAD_DIM = 256
DECODE_CUDNN_GROUPS = frozenset({4, 8, 16})
DECODE_CUDNN_UNITS = (96, 256)


def _cite(v072: str, v074: str) -> str:
    """A shared row's source: the same code, at its place in each version's wheel."""
    return f"{V072} {v072}; {V074} {v074}"


# --- per-architecture tables ----------------------------------------------------------------------
FA3_CAPABLE = ThresholdTable(
    "fa3_capable",
    {"sm80": False, "sm90": True, "sm100": False, "sm120": False},
    _cite("is_sm90a_supported, utils.py:663-665: major == 9", "utils.py:719-722"),
)
FMHA_V2 = ThresholdTable(
    "fmha_v2",
    {"sm80": False, "sm90": False, "sm100": False, "sm120": True},
    _cite("_should_use_fmha_v2_sm120, utils.py:565-566: is_sm120a or is_sm121a", "utils.py:620-621"),
)
BLACKWELL_CUDNN = ThresholdTable(
    "blackwell_cudnn",
    {"sm80": False, "sm90": False, "sm100": True, "sm120": False},
    _cite("_blackwell_ragged_auto_upgrade cudnn leg, prefill.py:2523: is_sm100a_supported", "prefill.py:2773"),
)
BLACKWELL_CUTLASS = ThresholdTable(
    "blackwell_cutlass",
    {"sm80": False, "sm90": False, "sm100": True, "sm120": False},
    _cite("cutlass leg, prefill.py:2544: is_sm100a_supported or is_sm110a_supported", "prefill.py:2803"),
)
# 0.7.4 only.
PAGED_CUDNN = ThresholdTable(
    "paged_cudnn",
    {"sm80": False, "sm90": False, "sm100": True, "sm120": False},
    f"{V074} _blackwell_paged_auto_cudnn, prefill.py:2556: get_compute_capability(device) == (10, 0)",
)
DECODE_CUDNN = ThresholdTable(
    "decode_cudnn",
    {"sm80": False, "sm90": False, "sm100": True, "sm120": False},
    f"{V074} _auto_decode_prefers_cudnn, decode.py:799: compute capability (10, 0) or (10, 3)",
)
GRAPH_FA2_SERVES_E4M3 = ThresholdTable(
    "graph_fa2_serves_e4m3",
    {"sm80": False, "sm90": False, "sm100": False, "sm120": True},
    f"{V074} _determine_auto_backend, prefill.py:3261-3264: e4m3 q and kv on compute capability (12, 0)",
)

# Rows no plan of kernels/flashinfer/adapter.py reaches: it never passes pos_encoding_mode or
# use_fp16_qk_reduction (plan() defaults "NONE" and False), and fmha_v2 needs the latter.
NOT_DRIVEN_BY_ADAPTER: tuple[str, ...] = ("ragged_fmha_v2", "fa3_pos_encoding", "fa3_fp16_qk_reduction")

Pred = Callable[[RoutingQuery, Ctx], bool]


def _auto(p: Pred) -> Pred:
    return lambda q, c: q.requested == "auto" and p(q, c)


# --- what each API hands determine_attention_backend ----------------------------------------------
def _sel_custom_mask(q: RoutingQuery) -> bool:
    """Decode passes use_custom_mask=False (decode.py:2384, :2804); the others their mask state."""
    return q.custom_mask and q.api != "decode"


def _sel_fp16_qk_reduction(q: RoutingQuery) -> bool:
    """Decode passes use_fp16_qk_reductions=False (decode.py:2383, :2803)."""
    return q.use_fp16_qk_reduction and q.api != "decode"


def _sel_head_dims(q: RoutingQuery) -> tuple[int, int]:
    """Decode passes (head_dim, head_dim) (decode.py:2387-2388, :2807-2808); single q's and v's last dims."""
    return (q.head_dim_qk, q.head_dim_qk) if q.api == "decode" else (q.head_dim_qk, q.head_dim_vo)


def _kv_only_fp8(q: RoutingQuery) -> bool:
    return q.kv_dtype in FP8 and q.q_dtype not in FP8


# is_fa3_backend_supported then the head-dim check, in order (the same code in both versions).
_FA3_DECLINES: tuple[tuple[str, Callable[[RoutingQuery], bool], str], ...] = (
    ("fa3_custom_mask", _sel_custom_mask, _cite("utils.py:486-487", "utils.py:541-542") + " use_custom_mask"),
    (
        "fa3_pos_encoding",
        lambda q: q.pos_encoding != "NONE",
        _cite("utils.py:488-489", "utils.py:543-544") + " pos_encoding_mode != NONE",
    ),
    (
        "fa3_fp16_qk_reduction",
        _sel_fp16_qk_reduction,
        _cite("utils.py:490-491", "utils.py:545-546") + " use_fp16_qk_reductions",
    ),
    (
        "fa3_fp8_kv_needs_fp8_q",
        _kv_only_fp8,
        _cite("utils.py:492-497", "utils.py:547-552") + " 'FA3 FP8 KV cache currently requires FP8 query'",
    ),
    (
        "fa3_head_dims",
        lambda q: _sel_head_dims(q) not in FA3_HEAD_DIMS,
        _cite("utils.py:623-629 is_fa3_prefill_head_dim_supported (utils.py:504-508)", "utils.py:678-684 (:559-563)")
        + " false -> fa2",
    ),
)


def _declined_by(declines: Callable[[RoutingQuery], bool]) -> Pred:
    """One _FA3_DECLINES check as a row's `when` (each row keeps its own check)."""
    return lambda q, c: declines(q)


def _selector_picks_fa2(q: RoutingQuery, c: Ctx) -> bool:
    """determine_attention_backend answers fa2 (utils.py:616-629, :671-684)."""
    return not c.table("fa3_capable") or any(declines(q) for _, declines, _ in _FA3_DECLINES)


# --- the ragged upgrades of an fa2 answer ---------------------------------------------------------
def _fmha_v2(q: RoutingQuery, c: Ctx) -> bool:
    """prefill.py:5547-5575, :6409-6437 (qo_indptr == kv_indptr), _should_use_fmha_v2_sm120 last."""
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
    """The upgrade is tried on an fa2 answer unless a feature rules every leg out: 0.7.2.post1
    prefill.py:5583, :2509-2519; 0.7.4 :6445, :2757-2765 (0.7.4 leaves a window to each leg)."""
    return (
        q.api == "ragged"
        and _selector_picks_fa2(q, c)
        and not _fmha_v2(q, c)
        and q.kv_layout == "NHD"
        and q.q_dtype == q.kv_dtype
        and q.pos_encoding == "NONE"
        and not q.custom_mask
        and q.logits_soft_cap == 0.0
    )


def _cudnn_leg(q: RoutingQuery, c: Ctx) -> bool:
    """The cudnn leg's checks both versions share (indptrs are int32: the adapter passes int32)."""
    return (
        _blackwell_candidate(q, c)
        and bool(c.table("blackwell_cudnn"))
        and q.q_dtype in SIXTEEN_BIT
        and q.cudnn_direct_seqlens
        and (q.head_dim_qk, q.head_dim_vo) in CUDNN_RAGGED_HEAD_DIMS
    )


def _cudnn_leg_072(q: RoutingQuery, c: Ctx) -> bool:
    """prefill.py:2521-2541: no window (a universal disqualifier, :2515), no single-token GQA (:5626-5628)."""
    single_token_gqa = q.max_q_len == 1 and q.num_qo_heads != q.num_kv_heads
    return _cudnn_leg(q, c) and q.window_left < 0 and not single_token_gqa


def _cudnn_leg_074(q: RoutingQuery, c: Ctx) -> bool:
    """prefill.py:2771-2798: a window allowed; single-token GQA refused only where some request has no
    row and cuDNN is below 9.27 (:6488-6493, cudnn/prefill.py:125-132)."""
    gqa_with_empty_rows = (
        q.max_q_len == 1
        and q.num_qo_heads != q.num_kv_heads
        and sum(q.qo_lens) != q.batch_size
        and q.cudnn_single_token_gqa_stats_broken
    )
    return _cudnn_leg(q, c) and not gqa_with_empty_rows


def _cutlass_work_items(q: RoutingQuery) -> int:
    """_cutlass_plan_work_items (prefill.py:2431-2441, :2678-2688): query tiles of 256 rows, times q heads."""
    return sum(-(-n // CUTLASS_QO_TILE) for n in q.qo_lens) * q.num_qo_heads


def _cutlass_leg(q: RoutingQuery, c: Ctx) -> bool:
    """prefill.py:2542-2566, :2799-2829: never with a window, never under CUDA graphs."""
    return (
        _blackwell_candidate(q, c)
        and q.window_left < 0
        and bool(c.table("blackwell_cutlass"))
        and q.q_dtype in SIXTEEN_BIT
        and q.o_dtype == q.q_dtype
        and (q.head_dim_qk, q.head_dim_vo) in CUTLASS_RAGGED_HEAD_DIMS
        and _cutlass_work_items(q) <= CUTLASS_WORK_CAPACITY
        and not q.graph_mode
    )


# --- 0.7.4's paged and decode additions -----------------------------------------------------------
def _paged_short_query(q: RoutingQuery, c: Ctx) -> bool:
    """An fa3 answer, a 16-bit query, a non-empty batch, no query longer than PAGED_FA2_MAX_Q_ROWS."""
    return (
        q.api == "paged"
        and not _selector_picks_fa2(q, c)
        and q.q_dtype not in FP8
        and q.batch_size >= 1
        and q.max_q_len <= PAGED_FA2_MAX_Q_ROWS
    )


def _in(x: int, bounds: tuple[int, int]) -> bool:
    return bounds[0] <= x <= bounds[1]


def _paged_cudnn_domain(q: RoutingQuery) -> bool:
    """_blackwell_paged_auto_cudnn's lengths (prefill.py:2540-2586), host lengths given (the adapter's)."""
    max_q, max_kv = q.max_q_len, q.max_kv_len
    prefix = _in(max_q, PAGED_CUDNN_PREFIX_Q) and _in(max_kv, PAGED_CUDNN_PREFIX_KV) and max_kv >= 4 * max_q
    full = _in(max_q, PAGED_CUDNN_FULL_Q) and max_q == max_kv
    if full and not all(qo == kv and qo > 0 for qo, kv in zip(q.qo_lens, q.kv_lens)):
        return False
    work = q.num_qo_heads * sum(qo * kv for qo, kv in zip(q.qo_lens, q.kv_lens))
    return (prefix or full) and work >= PAGED_CUDNN_MIN_WORK


def _paged_cudnn(q: RoutingQuery, c: Ctx) -> bool:
    """prefill.py:3952-3996 on an fa2 answer, then _blackwell_paged_auto_cudnn (:2520-2586)."""
    group = q.num_qo_heads // q.num_kv_heads if q.num_kv_heads > 0 else 0
    return (
        q.api == "paged"
        and _selector_picks_fa2(q, c)
        and q.causal
        and q.pos_encoding == "NONE"
        and not q.use_fp16_qk_reduction
        and not q.custom_mask
        and q.window_left == -1
        and q.logits_soft_cap == 0.0
        and q.kv_layout == "HND"
        and q.q_dtype == q.kv_dtype == q.o_dtype == "bf16"
        and q.head_dim_qk == q.head_dim_vo == 128
        and _in(q.batch_size, PAGED_CUDNN_BATCH)
        and _in(q.num_qo_heads, PAGED_CUDNN_QO_HEADS)
        and q.num_kv_heads > 0
        and q.num_qo_heads % q.num_kv_heads == 0
        and group in PAGED_CUDNN_GROUPS
        and q.page_size == PAGED_CUDNN_PAGE_SIZE
        and sum(q.qo_lens) * q.num_qo_heads * q.max_kv_len >= PAGED_CUDNN_MIN_WORK
        and bool(c.table("paged_cudnn"))
        and q.cudnn_paged_auto
        and _paged_cudnn_domain(q)
    )


def _decode_cudnn(q: RoutingQuery, c: Ctx) -> bool:
    """_auto_prefers_cudnn (decode.py:1693-1737) -> _auto_decode_prefers_cudnn (:797-857) at the adapter's
    q_len_per_req of 1, no caller block tables, no split controls: only the head-dim-256 band."""
    group = q.num_qo_heads // q.num_kv_heads if q.num_kv_heads > 0 else 0
    return (
        q.api == "decode"
        and not q.graph_mode  # :1701-1706: under CUDA graphs without caller block tables auto stays off cudnn
        and q.cudnn_decode_auto
        and bool(c.table("decode_cudnn"))
        and q.q_dtype in SIXTEEN_BIT
        and q.q_dtype == q.kv_dtype == q.o_dtype
        and q.num_kv_heads > 0
        and q.num_qo_heads % q.num_kv_heads == 0
        and q.pos_encoding == "NONE"
        and q.logits_soft_cap <= 0.0
        and q.head_dim_qk == DECODE_CUDNN_HEAD_DIM
        and q.page_size > 0
        and q.page_size % 8 == 0
        and (128 % q.page_size == 0 or q.page_size % 128 == 0)
        and q.window_left < 0
        and group in DECODE_CUDNN_GROUPS
        and _in(q.batch_size * q.num_kv_heads, DECODE_CUDNN_UNITS)
    )


def _held_fa3_refused(q: RoutingQuery, c: Ctx) -> bool:
    """A graph wrapper held on fa3 and a plan the selector answers otherwise (prefill.py:3255-3269)."""
    return q.api == "paged" and q.graph_mode and q.held_backend == "fa3" and _selector_picks_fa2(q, c)


def _held_fa2_fp8_query(q: RoutingQuery, c: Ctx) -> bool:
    """A graph wrapper held on fa2 and an fp8 query, unless e4m3 q and kv on (12, 0) (prefill.py:3258-3265)."""
    e4m3_served = q.q_dtype == q.kv_dtype == "e4m3fn" and bool(c.table("graph_fa2_serves_e4m3"))
    return q.api == "paged" and q.graph_mode and q.held_backend == "fa2" and q.q_dtype in FP8 and not e4m3_served


def _decode_tc_fp8(q: RoutingQuery) -> bool:
    return q.use_tensor_cores and (q.q_dtype in FP8 or q.kv_dtype in FP8)


# --- rows both versions share ---------------------------------------------------------------------
EMPTY_BATCH_072 = RouteRule(
    "empty_batch",
    lambda q, c: q.api in ("paged", "ragged") and q.batch_size == 0,
    None,
    NOT_REPORTED,
    expect_raises="RuntimeError",
    source=f"{V072} prefill.py:3449 paged `(qo_indptr[1:] - qo_indptr[:-1]).max()`, :5336 ragged "
    "`kv_len_arr.max()` on an empty batch, before the resolution (:3669, :5527)",
)
EMPTY_BATCH_074 = RouteRule(
    "empty_batch",
    lambda q, c: q.api in ("paged", "ragged") and q.batch_size == 0,
    None,
    NOT_REPORTED,
    expect_raises="RuntimeError",
    source=f"{V074} prefill.py:3936 paged `(qo_indptr_host[1:] - qo_indptr_host[:-1]).max()` before "
    "`self._backend` is set (:3951), :6187 ragged `qo_len_arr.max()` before the resolution (:6389)",
)
DECODE_TC_EMPTY_BATCH = RouteRule(
    "decode_tensor_cores_empty_batch",
    lambda q, c: q.api == "decode" and q.use_tensor_cores and q.batch_size == 0,
    None,
    NOT_REPORTED,
    expect_raises="RuntimeError",
    source=_cite("decode.py:2371", "decode.py:2791") + " `kv_lens_arr_host.max()` before the tensor-core "
    "resolution (:2375, :2795)",
)
# An explicit backend is what runs: upstream never redirects one (no performance gates).
_EXPLICIT_SOURCE = _cite("prefill.py:3669, :5527, decode.py:2375", "prefill.py:3812, :6389, decode.py:2795")
EXPLICIT = (
    RouteRule(
        "explicit_fa2",
        lambda q, c: q.requested == "fa2",
        "fa2",
        NOT_REPORTED,
        source=_EXPLICIT_SOURCE + " resolve only `auto`",
    ),
    RouteRule(
        "explicit_fa3",
        lambda q, c: q.requested == "fa3",
        "fa3",
        NOT_REPORTED,
        source=_EXPLICIT_SOURCE + " resolve only `auto`",
    ),
    RouteRule(
        "explicit_cudnn",
        lambda q, c: q.requested == "cudnn",
        "cudnn",
        NOT_REPORTED,
        source=_EXPLICIT_SOURCE + " resolve only `auto`",
    ),
)
DECODE_CUDA_CORES = RouteRule(
    "decode_cuda_cores",
    _auto(lambda q, c: q.api == "decode" and not q.use_tensor_cores),
    "fa2",
    NOT_REPORTED,
    source=_cite("decode.py:1507-1508", "decode.py:1754-1755") + " resolved_backend reads fa2 for auto without "
    "tensor cores (the batch_decode module); 0.7.2.post1's cuDNN auto needs q_len_per_req 2..4 (:807)",
)
DECODE_TC_16BIT = RouteRule(
    "decode_tensor_cores_16bit",
    _auto(lambda q, c: q.api == "decode" and q.use_tensor_cores and not _decode_tc_fp8(q)),
    "fa2",
    NOT_REPORTED,
    source=_cite("decode.py:2375-2391", "decode.py:2795-2811") + ": no fp8 in q or kv -> fa2",
)
RAGGED_FMHA_V2 = RouteRule(
    "ragged_fmha_v2",
    _auto(_fmha_v2),
    "fmha_v2",
    NOT_REPORTED,
    tables=("fmha_v2", "fa3_capable"),
    source=_cite("prefill.py:5538-5575; utils.py:552-571", "prefill.py:6400-6437; utils.py:607-627")
    + " _should_use_fmha_v2_sm120",
)
# determine_attention_backend (paged, ragged, single, tensor-core fp8 decode).
NOT_SM90A = RouteRule(
    "not_sm90a",
    _auto(lambda q, c: not c.table("fa3_capable")),
    "fa2",
    NOT_REPORTED,
    tables=("fa3_capable",),
    source=_cite("utils.py:616, :627-628", "utils.py:671, :682-683") + ": is_sm90a_supported first",
)
FA3_DECLINES = tuple(
    RouteRule(name, _auto(_declined_by(declines)), "fa2", NOT_REPORTED, source=src)
    for name, declines, src in _FA3_DECLINES
)
FA3 = RouteRule(
    "fa3", _auto(lambda q, c: True), "fa3", NOT_REPORTED, source=_cite("utils.py:616-626", "utils.py:671-681")
)

# --- flashinfer-python 0.7.2.post1 ----------------------------------------------------------------
RULES_072: tuple[RouteRule, ...] = (
    # plan() fails before auto is looked at (any requested backend: these raises precede every use of it)
    EMPTY_BATCH_072,
    DECODE_TC_EMPTY_BATCH,
    *EXPLICIT,
    # decode: which kernel family, before any selector call
    DECODE_CUDA_CORES,
    DECODE_TC_16BIT,
    # ragged: an fa2 answer upgraded (the selector's own rows follow)
    RAGGED_FMHA_V2,
    RouteRule(
        "ragged_blackwell_cudnn",
        _auto(_cudnn_leg_072),
        "cudnn",
        NOT_REPORTED,
        tables=("blackwell_cudnn", "fa3_capable", "fmha_v2"),
        source=f"{V072} prefill.py:5583-5631 -> _blackwell_ragged_auto_upgrade :2509-2541 (order :2372 cudnn first)",
    ),
    RouteRule(
        "ragged_blackwell_cutlass",
        _auto(_cutlass_leg),
        "cutlass",
        NOT_REPORTED,
        tables=("blackwell_cutlass", "fa3_capable", "fmha_v2"),
        source=f"{V072} prefill.py:2542-2566 (cutlass second; never under CUDA graphs :2564)",
    ),
    NOT_SM90A,
    *FA3_DECLINES,
    FA3,
)

SPEC_072 = RoutingSpec(
    library="flashinfer-cuda",
    version=V072,
    archs=ARCHS,
    rules=RULES_072,
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

# --- flashinfer-python 0.7.4 ----------------------------------------------------------------------
RULES_074: tuple[RouteRule, ...] = (
    # a graph wrapper held on a backend refuses a plan it cannot serve, before anything else (prefill.py:3820)
    RouteRule(
        "paged_graph_held_fa3_refused",
        _auto(_held_fa3_refused),
        None,
        NOT_REPORTED,
        expect_raises="ValueError",
        tables=("fa3_capable",),
        source=f"{V074} prefill.py:3255-3269 `_cuda_graph_backend` fa3 and the selector's answer (:3244) not fa3",
    ),
    RouteRule(
        "paged_graph_held_fa2_fp8_query",
        _auto(_held_fa2_fp8_query),
        None,
        NOT_REPORTED,
        expect_raises="ValueError",
        tables=("graph_fa2_serves_e4m3",),
        source=f"{V074} prefill.py:3258-3269 `_cuda_graph_backend` fa2 and an fp8 query",
    ),
    EMPTY_BATCH_074,
    DECODE_TC_EMPTY_BATCH,
    *EXPLICIT,
    # decode: cuDNN per plan (decode.py:2395-2414, read first by resolved_backend :1752-1753), then the family
    RouteRule(
        "decode_blackwell_cudnn",
        _auto(_decode_cudnn),
        "cudnn",
        NOT_REPORTED,
        tables=("decode_cudnn",),
        source=f"{V074} decode.py:2397 -> _auto_prefers_cudnn :1693-1737 -> _auto_decode_prefers_cudnn :797-857",
    ),
    DECODE_CUDA_CORES,
    DECODE_TC_16BIT,
    # ragged: as 0.7.2.post1, but a window no longer rules the cudnn leg out
    RAGGED_FMHA_V2,
    RouteRule(
        "ragged_blackwell_cudnn",
        _auto(_cudnn_leg_074),
        "cudnn",
        NOT_REPORTED,
        tables=("blackwell_cudnn", "fa3_capable", "fmha_v2"),
        source=f"{V074} prefill.py:6439-6496 -> _blackwell_ragged_auto_upgrade :2757-2798 (order :2601 cudnn first)",
    ),
    RouteRule(
        "ragged_blackwell_cutlass",
        _auto(_cutlass_leg),
        "cutlass",
        NOT_REPORTED,
        tables=("blackwell_cutlass", "fa3_capable", "fmha_v2"),
        source=f"{V074} prefill.py:2799-2829 (cutlass second; never with a window :2799, nor under CUDA graphs :2822)",
    ),
    # paged on SM100: an fa2 answer upgraded to cuDNN inside its measured domain
    RouteRule(
        "paged_blackwell_cudnn",
        _auto(_paged_cudnn),
        "cudnn",
        NOT_REPORTED,
        tables=("paged_cudnn", "fa3_capable"),
        source=f"{V074} prefill.py:3950-3996 -> _blackwell_paged_auto_cudnn :2520-2586",
    ),
    NOT_SM90A,
    *FA3_DECLINES,
    RouteRule(
        "paged_short_query_fa2",
        _auto(_paged_short_query),
        "fa2",
        NOT_REPORTED,
        tables=("fa3_capable",),
        source=f"{V074} prefill.py:3275-3281 _determine_auto_backend: fa3 -> fa2 for query rows <= 64",
    ),
    FA3,
)

SPEC_074 = RoutingSpec(
    library="flashinfer-cuda",
    version=V074,
    archs=ARCHS,
    rules=RULES_074,
    thresholds={
        t.name: t
        for t in (
            FA3_CAPABLE,
            FMHA_V2,
            BLACKWELL_CUDNN,
            BLACKWELL_CUTLASS,
            PAGED_CUDNN,
            DECODE_CUDNN,
            GRAPH_FA2_SERVES_E4M3,
        )
    },
    lifecycle=Lifecycle(
        # paged: every plan (prefill.py:3812-3832, "`auto` is re-resolved on every plan()", :3162-3163);
        # ragged: every plan, graph mode too (:6389); single: per call.
        re_resolve_every_eager_plan=frozenset({"paged", "ragged", "single"}),
        graph_mode_first_plan_decides=False,
        # a paged graph wrapper keeps its first fa2/fa3 plan's backend (:4540-4547, read back :3255-3270)
        graph_held_apis=frozenset({"paged"}),
        # decode with tensor cores: only while `_backend == "auto"` (decode.py:2795)
        sticky_apis=frozenset({"decode"}),
        per_plan_rules=frozenset({"empty_batch", "decode_tensor_cores_empty_batch", "decode_blackwell_cudnn"}),
        # cuDNN picks hold nothing: paged sets `_cuda_graph_backend` for fa2/fa3 only (:4544), and decode
        # leaves `_backend` "auto" on a cuDNN plan (decode.py:2678)
        unfixing_rules=frozenset({"paged_blackwell_cudnn", "decode_blackwell_cudnn"}),
        held_rules=frozenset({"paged_graph_held_fa3_refused", "paged_graph_held_fa2_fp8_query"}),
        explicit_backend_never_gated=True,  # no performance gates in this spec
        nonpositive_length_never_short=True,
        before_plan=("auto", NOT_REPORTED),  # paged `_backend` before plan()
        stale_mask_apis=frozenset({"ragged"}),  # prefill.py:6129-6135 (paged clears it, :4118-4127)
        # the raises precede `self._backend = auto_backend` (:3951) and the graph hold (:4546 "A failed
        # plan must not establish the backend")
        raised_plan_fixes_nothing=True,
    ),
)

BY_VERSION: dict[str, RoutingSpec] = {s.version: s for s in (SPEC_072, SPEC_074)}

for _spec in BY_VERSION.values():
    validate(_spec)
