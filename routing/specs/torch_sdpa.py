"""torch SDPA's own choice (`backend="auto"` of kernels/torch_sdpa.py) as data: torch 2.13 on the
CPU, torch 2.11.0+cu130 on CUDA (sm90, cuDNN 9.19).

Data only: rows in precedence order. The engine is `routing/spec.py`; the comparison is
`routing/check.py`; the two-way check against torch is tests/routing/test_torch_spec.py.

Observed per request: the backend torch picks, joined with '+' when requests differ; "empty" when
no request ran one. torch gives no reason text, so every row expects `NOT_REPORTED` (not None,
which would claim "no fallback happened"). The CUDA rows (`cuda_*`) describe ONE request
(`routing.per_request.batch_route` splits a batch and joins); an arch other than sm90 reads MISSING
in `cuda_rows`, a spec gap. Where each rule was read and how it was checked: docs/routing-specs.md,
section "`routing/specs/torch_sdpa.py`: where the rules come from".
"""

from __future__ import annotations

from typing import Callable

from kernels.protocol import NOT_REPORTED
from routing.spec import Ctx, Lifecycle, RouteRule, RoutingQuery, RoutingSpec, ThresholdTable, validate

# The CPU rule does not vary by arch; the CUDA rows are written for sm90 only.
ARCHS: tuple[str, ...] = ("sm90",)
CPU_FLASH_DTYPES = frozenset({"fp16", "bf16", "fp32", "fp64"})
# The adapter's name for a batch with no request that ran a backend (kernels.torch_sdpa.EMPTY_PATH).
EMPTY = "empty"

# ---- CUDA facts (sdp_utils.cpp line numbers of the copy read: docs/routing-specs.md) --------------
CUDA_SIXTEEN_BIT = frozenset({"fp16", "bf16"})  # check_dtypes_low_precision, sdp_utils.cpp:702-712 (sm80+)
EFFICIENT_DTYPES = frozenset({"fp16", "bf16", "fp32"})  # sdp_utils.cpp:885-886, :948-950
# minimum_gemm_alignment (sdp_utils.cpp:127-141) on sm80+: 128 bits / element size, at least 4.
EFFICIENT_HEAD_DIM_MULTIPLE = {"fp16": 8, "bf16": 8, "fp32": 4}
FLASH_MAX_HEAD_DIM = 256  # check_head_dim_size_flash, sdp_utils.cpp:171-178
CUDNN_HEAD_DIM_MULTIPLE = 8  # check_cudnn_tensor_shapes, sdp_utils.cpp:550-555

# What the CUDA rows were read and measured against, per arch: an arch absent is a gap.
CUDA_ROWS = ThresholdTable(
    "cuda_rows",
    {"sm90": "torch 2.11.0+cu130, cuDNN 9.19 (91900), NVIDIA H200"},
    "CUDA SDPA selection written for these archs only",
)
CUDNN_MAX_HEAD_DIM = ThresholdTable(
    "cudnn_max_head_dim",
    {"sm90": 256},
    "check_cudnn_tensor_shapes, sdp_utils.cpp:528-535: 128; 256 on sm90 with cuDNN >= 9.10",
)


Pred = Callable[[RoutingQuery, Ctx], bool]


def _cuda(p: Pred) -> Pred:
    """A CUDA row: not the CPU, and an arch the CUDA rows are written for (else a gap)."""
    return lambda q, c: q.device != "cpu" and bool(c.table("cuda_rows")) and p(q, c)


def _request(q: RoutingQuery) -> tuple[int, int]:
    """(qo_len, kv_len) of the one request a CUDA query describes."""
    if q.batch_size != 1:
        raise ValueError(
            f"torch CUDA rows describe one request, got qo_lens={q.qo_lens}: split the batch "
            "with routing.per_request.batch_route"
        )
    return q.qo_lens[0], q.kv_lens[0]


def _lower_right(q: RoutingQuery) -> bool:
    """Causal alone with qo != kv: the adapter passes causal_lower_right (kernels/torch_sdpa.py call_form)."""
    qo, kv = _request(q)
    return q.causal and not q.custom_mask and q.window_left < 0 and qo != kv


def _masked(q: RoutingQuery) -> bool:
    """SDPA gets an attn_mask: the explicit bool mask (custom mask or window), or the materialised
    lower-right mask once the direct dispatch declined."""
    return q.custom_mask or q.window_left >= 0 or _lower_right(q)


def _gqa(q: RoutingQuery) -> bool:
    return q.num_qo_heads != q.num_kv_heads  # the adapter passes enable_gqa exactly then


def _cudnn_takes(q: RoutingQuery, c: Ctx) -> bool:
    """can_use_cudnn_attention, sdp_utils.cpp:752-809."""
    limit = c.table("cudnn_max_head_dim")
    _, kv = _request(q)
    return (
        q.q_dtype in CUDA_SIXTEEN_BIT
        and q.head_dim_qk <= limit
        and q.head_dim_vo <= limit
        and q.head_dim_qk % CUDNN_HEAD_DIM_MULTIPLE == 0
        and q.head_dim_vo % CUDNN_HEAD_DIM_MULTIPLE == 0
        and kv != 1
    )


def _flash_takes(q: RoutingQuery, masked: bool) -> bool:
    """can_use_flash_attention, sdp_utils.cpp:819-869."""
    return (
        not masked
        and q.q_dtype in CUDA_SIXTEEN_BIT
        and q.head_dim_qk == q.head_dim_vo
        and q.head_dim_qk <= FLASH_MAX_HEAD_DIM
    )


def _efficient_takes(q: RoutingQuery) -> bool:
    """can_use_mem_efficient_attention, sdp_utils.cpp:871-954."""
    if q.q_dtype not in EFFICIENT_DTYPES:
        return False
    m = EFFICIENT_HEAD_DIM_MULTIPLE[q.q_dtype]
    return q.head_dim_qk % m == 0 and q.head_dim_vo % m == 0 and not _gqa(q)


CUDA_RULES: tuple[RouteRule, ...] = (
    RouteRule(
        "cuda_no_requests",
        _cuda(lambda q, c: q.batch_size == 0),
        EMPTY,
        NOT_REPORTED,
        tables=("cuda_rows",),
        source="kernels/torch_sdpa.py:335: no request, no SDPA call: EMPTY_PATH",
    ),
    RouteRule(
        "cuda_zero_length",
        _cuda(lambda q, c: 0 in _request(q)),
        "math",
        NOT_REPORTED,
        tables=("cuda_rows",),
        source="torch 2.11: no empty-input shortcut (kernels/torch_sdpa.py:329 routes the request); "
        "check_nonzero_sequence_lengths_dense in cudnn, flash, efficient (sdp_utils.cpp:795, "
        ":859, :924) -> math (:989-991)",
    ),
    RouteRule(
        "cuda_lower_right_flash",
        _cuda(lambda q, c: _lower_right(q) and _flash_takes(q, masked=False)),
        "flash",
        NOT_REPORTED,
        tables=("cuda_rows",),
        source="torch.nn.attention.bias.CausalBias._dispatch (kernels/torch_sdpa.py:142-148): "
        "can_use_flash_attention with no mask, sdp_utils.cpp:819-869",
    ),
    RouteRule(
        "cuda_lower_right_efficient",
        _cuda(lambda q, c: _lower_right(q) and _efficient_takes(q)),
        "efficient",
        NOT_REPORTED,
        tables=("cuda_rows",),
        source="CausalBias._dispatch (kernels/torch_sdpa.py:149-150): then can_use_efficient_attention, "
        "sdp_utils.cpp:871-954",
    ),
    RouteRule(
        "cuda_cudnn",
        _cuda(_cudnn_takes),
        "cudnn",
        NOT_REPORTED,
        tables=("cuda_rows", "cudnn_max_head_dim"),
        source="select_sdp_backend sdp_utils.cpp:956-991, priority_order :104-116 cudnn first "
        "(check_prefer_cudnn_attention :78-101: cuDNN > 9.15, sm90); can_use_cudnn_attention "
        ":752-809: fp16/bf16 :783, head dims <= 256 :528-549 and % 8 :550-555, kv_len != 1 "
        ":577-582; masks :784 and GQA :797 taken",
    ),
    RouteRule(
        "cuda_flash",
        _cuda(lambda q, c: _flash_takes(q, masked=_masked(q))),
        "flash",
        NOT_REPORTED,
        tables=("cuda_rows",),
        source="second in priority_order; can_use_flash_attention sdp_utils.cpp:819-869: no attn_mask "
        "(check_for_attn_mask :832), equal head dims <= 256 (:833, :171-178), fp16/bf16 (:837, "
        ":714-723); GQA taken (:855-858)",
    ),
    RouteRule(
        "cuda_efficient",
        _cuda(lambda q, c: _efficient_takes(q)),
        "efficient",
        NOT_REPORTED,
        tables=("cuda_rows",),
        source="third; can_use_mem_efficient_attention sdp_utils.cpp:871-954: fp16/bf16/fp32 (:885-886, "
        ":948-950), head dims multiples of 8 / 4 (:247-270, :127-141), no GQA (:926); masks taken",
    ),
    RouteRule(
        "cuda_math",
        _cuda(lambda q, c: True),
        "math",
        NOT_REPORTED,
        tables=("cuda_rows",),
        source="select_sdp_backend sdp_utils.cpp:989-991: math when no fused backend takes the request",
    ),
)

# Rows that no CPU run can reach, by design; coverage on CPU must leave exactly these unreached.
GAP_ROWS: tuple[str, ...] = tuple(r.name for r in CUDA_RULES)

# ---- the batched backends (kernels/torch_padded.py, torch_nested.py, torch_flex_padded.py) ----------
# One call for the whole batch, so one name: no '+' join. Every row is gated on the backend asked
# for (`RoutingQuery.requested`); the per-request rows above and below never see these names.
PADDED_AUTO = "padded-auto"
NESTED_AUTO = "nested-auto"
# Backends forced by name: each resolves to itself (the adapter reports the name it was made with).
FORCED_BATCHED: tuple[str, ...] = (
    "padded-math",
    "padded-flash",
    "padded-efficient",
    "padded-cudnn",
    "nested-math",
    "nested-flash",
    "nested-efficient",
    "nested-cudnn",
    "flex-padded",
)
# Every batched backend: one SDPA (or FlexAttention) call for the whole batch, read by its own rows.
BATCHED_REQUESTS: frozenset[str] = frozenset(FORCED_BATCHED + (PADDED_AUTO, NESTED_AUTO))
# The forced batched backends a CPU offers none of (kernels.torch_target.batched_backends).
CUDA_ONLY_FORCED: tuple[str, ...] = (
    "padded-efficient",
    "padded-cudnn",
    "nested-flash",
    "nested-efficient",
    "nested-cudnn",
)
# Jagged SDPA's CUDA choice (torch/nested/_internal/sdpa.py _select_sdp_backend), read in torch 2.11 and held
# against the H200's records (tests/routing/test_torch_batched_spec.py): an arch absent is a named gap.
NESTED_CUDA_ROWS = ThresholdTable(
    "nested_cuda_rows",
    {"sm90": "torch 2.11.0+cu130, NVIDIA H200"},
    "jagged SDPA on CUDA: written for these archs only (docs/routing-specs.md)",
)


def _nested_cuda(p: Pred) -> Pred:
    """A jagged SDPA row on CUDA: nested-auto asked, not the CPU, an arch the nested rows are written for."""
    return lambda q, c: (
        q.requested == NESTED_AUTO and q.device != "cpu" and bool(c.table("nested_cuda_rows")) and p(q, c)
    )


def _nested_fused(q: RoutingQuery) -> bool:
    """The jagged checks both fused kernels share (_check_for_seq_len_0_nested): no request of length 0 in the
    query or the keys, the same number of heads (the adapter's GQA: 8 over 2 is not broadcastable, 8 over 1 is
    refused further on, so only equal heads run)."""
    return min(q.qo_lens) > 0 and min(q.kv_lens) > 0 and not _gqa(q)


def _asked(name: str) -> Pred:
    return lambda q, c: q.requested == name


def _padded_call(q: RoutingQuery) -> RoutingQuery:
    """The one SDPA call of a padded batch, as a one-request query: lengths (Lq, Lk), and an attn_mask
    (read as `custom_mask`) unless the batch has no padding and at most causal (kernels.torch_padded
    padded_form)."""
    lq, lk = max(q.qo_lens, default=0), max(q.kv_lens, default=0)
    masked = q.custom_mask or q.window_left >= 0 or len(set(zip(q.qo_lens, q.kv_lens))) > 1
    return q.replace(qo_lens=(lq,), kv_lens=(lk,), max_q_len=lq, max_kv_len=lk, custom_mask=masked)


def _padded_cuda(rule: RouteRule) -> RouteRule:
    """A CUDA row read for the padded batch's one call: derived from the per-request row (each of the seven held
    on an H200: docs/routing-specs.md)."""
    when = rule.when

    def padded(q: RoutingQuery, c: Ctx) -> bool:
        return q.requested == PADDED_AUTO and when(_padded_call(q), c)

    return RouteRule(
        "padded_" + rule.name,
        padded,
        rule.expect_backend,
        NOT_REPORTED,
        tables=rule.tables,
        source=f"{rule.name} applied to the padded call (_padded_call); derived, held on an H200",
    )


BATCHED_FORCED_RULES: tuple[RouteRule, ...] = tuple(
    RouteRule(
        "forced_" + name.replace("-", "_"),
        _asked(name),
        name,
        NOT_REPORTED,
        source="kernels/torch_target.py: a batched backend forced by name runs it and reports its name",
    )
    for name in FORCED_BATCHED
)
PADDED_CUDA_RULES: tuple[RouteRule, ...] = tuple(_padded_cuda(r) for r in CUDA_RULES if r.name != "cuda_no_requests")
BATCHED_AUTO_RULES: tuple[RouteRule, ...] = (
    RouteRule(
        "padded_cpu_no_query_or_key",
        lambda q, c: (
            q.requested == PADDED_AUTO
            and q.device == "cpu"
            and (max(q.qo_lens, default=0) == 0 or max(q.kv_lens, default=0) == 0)
        ),
        EMPTY,
        NOT_REPORTED,
        source="torch 2.13 empty-input shortcut on the padded call: Lq or Lk is 0 (every request's qo_len "
        "or every request's kv_len 0), answered before any backend",
    ),
    RouteRule(
        "padded_cpu_head_dims_differ",
        lambda q, c: q.requested == PADDED_AUTO and q.device == "cpu" and q.head_dim_qk != q.head_dim_vo,
        "math",
        NOT_REPORTED,
        source="sdp_utils_cpp.cpp use_flash_attention_cpp: check_head_dim_size_cpp (the padded call's dims)",
    ),
    RouteRule(
        "padded_cpu_flash",
        lambda q, c: q.requested == PADDED_AUTO and q.device == "cpu" and q.q_dtype in CPU_FLASH_DTYPES,
        "flash",
        NOT_REPORTED,
        source="sdp_utils_cpp.cpp select_sdp_backend_cpp: flash first (a boolean attn_mask and GQA taken)",
    ),
    *PADDED_CUDA_RULES,
    RouteRule(
        "nested_no_requests",
        lambda q, c: q.requested == NESTED_AUTO and q.batch_size == 0,
        EMPTY,
        NOT_REPORTED,
        source="kernels/torch_nested.py run(): an empty batch makes no call",
    ),
    RouteRule(
        "nested_cpu_math",
        lambda q, c: q.requested == NESTED_AUTO and q.device == "cpu",
        "math",
        NOT_REPORTED,
        source="torch/nested/_internal/sdpa.py _select_sdp_backend: flash and efficient are CUDA kernels "
        "(can_use_flash_attention / can_use_efficient_attention refuse CPU tensors), math next",
    ),
    RouteRule(
        "nested_cuda_flash",
        _nested_cuda(lambda q, c: _nested_fused(q) and _flash_takes(q, masked=False) and q.head_dim_qk % 8 == 0),
        "flash",
        NOT_REPORTED,
        tables=("nested_cuda_rows",),
        source="torch/nested/_internal/sdpa.py _select_sdp_backend: flash first; _can_use_flash_sdpa_jagged "
        "(equal head dims, % 8, <= 256; _check_for_seq_len_0_nested) and can_use_flash_attention (fp16/bf16)",
    ),
    RouteRule(
        "nested_cuda_efficient",
        _nested_cuda(lambda q, c: _nested_fused(q) and _efficient_takes(q)),
        "efficient",
        NOT_REPORTED,
        tables=("nested_cuda_rows",),
        source="then _can_use_efficient_sdpa_jagged (_check_for_seq_len_0_nested) and can_use_efficient_attention "
        "(fp16/bf16/fp32, head dims multiples of 8 / 4)",
    ),
    RouteRule(
        "nested_cuda_cudnn",
        _nested_cuda(lambda q, c: q.causal),
        "cudnn",
        NOT_REPORTED,
        tables=("nested_cuda_rows",),
        source="then math, which refuses is_causal, then cuDNN last: on the H200 a causal call with a query of "
        "length 0 chose it (docs/evidence/repro_torch_nested_causal_empty_query.h200.txt) and raised "
        "(torch-nested-causal-empty-query), so no record of it routes",
    ),
    RouteRule(
        "nested_cuda_math",
        _nested_cuda(lambda q, c: True),
        "math",
        NOT_REPORTED,
        tables=("nested_cuda_rows",),
        source="then math, _can_use_math_sdpa_jagged: every call no fused kernel takes that is not causal",
    ),
)
BATCHED_RULES: tuple[RouteRule, ...] = BATCHED_FORCED_RULES + BATCHED_AUTO_RULES
# Batched rows no CPU run can reach: the CUDA ones, and the forced backends a CPU does not offer.
BATCHED_GAP_ROWS: tuple[str, ...] = (
    tuple(r.name for r in BATCHED_FORCED_RULES if r.expect_backend in CUDA_ONLY_FORCED)
    + tuple(r.name for r in PADDED_CUDA_RULES)
    + ("nested_cuda_flash", "nested_cuda_efficient", "nested_cuda_cudnn", "nested_cuda_math")
)

CPU_RULES: tuple[RouteRule, ...] = (
    RouteRule(
        "cpu_all_requests_empty",
        lambda q, c: q.all_requests_empty,
        EMPTY,
        NOT_REPORTED,
        source="torch 2.13 empty-input shortcut: zero-length q or k answered before any backend",
    ),
    RouteRule(
        "cpu_head_dims_differ",
        lambda q, c: q.head_dim_qk != q.head_dim_vo,
        "math",
        NOT_REPORTED,
        source="sdp_utils_cpp.cpp use_flash_attention_cpp: check_head_dim_size_cpp",
    ),
    RouteRule(
        "cpu_flash",
        lambda q, c: q.q_dtype in CPU_FLASH_DTYPES and q.kv_dtype == q.q_dtype,
        "flash",
        NOT_REPORTED,
        source="sdp_utils_cpp.cpp select_sdp_backend_cpp: flash first, then math",
    ),
)
# The batched rows first: each is gated on the batched backend asked for, the others never are.
RULES: tuple[RouteRule, ...] = BATCHED_RULES + CUDA_RULES + CPU_RULES

SPEC = RoutingSpec(
    library="torch",
    archs=ARCHS,
    rules=RULES,
    thresholds={
        CUDA_ROWS.name: CUDA_ROWS,
        CUDNN_MAX_HEAD_DIM.name: CUDNN_MAX_HEAD_DIM,
        NESTED_CUDA_ROWS.name: NESTED_CUDA_ROWS,
    },
    # torch has no plan stage: every call chooses afresh.
    lifecycle=Lifecycle(
        re_resolve_every_eager_plan=frozenset({"paged", "ragged", "single", "decode"}),
        graph_mode_first_plan_decides=False,
        nonpositive_length_never_short=True,
        before_plan=("auto", NOT_REPORTED),
    ),
)

validate(SPEC)
