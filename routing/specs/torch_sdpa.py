"""torch SDPA's own choice (`backend="auto"` of kernels/torch_sdpa.py) as data: torch 2.13, CPU.

Data only: rows in precedence order. The engine is `routing/spec.py`; the comparison is
`routing/check.py`; the two-way check against torch is tests/routing/test_torch_spec.py.

What is observed (kernels/torch_sdpa.py, "auto"): per request, the backend
`torch._fused_sdp_choice` picks, joined with '+' when requests differ; "empty" when every
request has a zero length (torch 2.13 answers zero-length q or k itself, before any backend:
`empty_input_shortcut`, so such requests are never routed). torch gives no reason text, so every
row expects `NOT_REPORTED` (explicitly: not None, which would claim "no fallback happened").

The CPU rule (aten/src/ATen/native/transformers/sdp_utils_cpp.cpp `use_flash_attention_cpp`,
read through its observable effect; the C++ is not in the wheel). Confirmed with
`torch._fused_sdp_choice` on torch 2.13.0+cpu; each fact is pinned by
`test_cpu_rule_facts_on_raw_tensors`:

* flash for fp16, bf16, fp32 and fp64 alike; with or without a bool or float attn_mask, is_causal
  (qo == kv or not), a custom scale, enable_gqa (4 q heads on 2 kv heads), head dims 7 .. 512,
  a non-contiguous (transposed) q whose last dim has stride 1, requires_grad;
* math when head_dim_qk != head_dim_vo (`check_head_dim_size_cpp`: q, k, v last dims equal);
* math when q or k/v has sequence length 0 (`check_nonzero_sequence_lengths_dense`); the adapter
  never routes those on 2.13 (the empty shortcut), hence the "empty" row and not a math row;
* math for dropout_p > 0, 3-D inputs and mixed q/k/v dtypes: unreachable through the adapter
  (it passes dropout 0, 4-D tensors, and declines mixed dtypes before running), so not rows.

CUDA has its own rule (flash > efficient > cudnn > math with sm/head-dim/dtype limits) that is
NOT written yet: the first row matches every non-CPU query and reads the table `cuda_rows`,
which has no rows at all, so `expected_route` returns `SpecGap("cuda_rows", arch)`; the checker
reports `spec_gap` and `coverage` counts the observation as unexplained, never as a pass.
"""
from __future__ import annotations

from kernels.protocol import NOT_REPORTED
from routing.spec import Lifecycle, RouteRule, RoutingSpec, ThresholdTable, validate

# No architecture rows: the CPU rule does not vary by arch, and CUDA's is not written.
ARCHS: tuple[str, ...] = ()
CPU_FLASH_DTYPES = frozenset({"fp16", "bf16", "fp32", "fp64"})
# The adapter's name for a batch with no non-empty request (kernels.torch_sdpa.EMPTY_PATH).
EMPTY = "empty"

# Empty on purpose: reading it for any arch is a spec gap, which is exactly the CUDA state.
CUDA_ROWS = ThresholdTable("cuda_rows", {}, "CUDA SDPA selection: not written yet (a named gap)")

# Rows that no CPU run can reach, by design; coverage on CPU must leave exactly these unreached.
GAP_ROWS: tuple[str, ...] = ("cuda_rows_not_written",)

RULES: tuple[RouteRule, ...] = (
    RouteRule("cuda_rows_not_written",
              lambda q, c: q.device != "cpu" and c.table("cuda_rows") is not None,
              "<cuda rows not written>", NOT_REPORTED, tables=("cuda_rows",),
              source="gap: sdp_utils.cpp select_sdp_backend is not encoded"),
    RouteRule("cpu_all_requests_empty", lambda q, c: q.all_requests_empty,
              EMPTY, NOT_REPORTED,
              source="torch 2.13 empty-input shortcut: zero-length q or k answered before any backend"),
    RouteRule("cpu_head_dims_differ", lambda q, c: q.head_dim_qk != q.head_dim_vo,
              "math", NOT_REPORTED,
              source="sdp_utils_cpp.cpp use_flash_attention_cpp: check_head_dim_size_cpp"),
    RouteRule("cpu_flash",
              lambda q, c: q.q_dtype in CPU_FLASH_DTYPES and q.kv_dtype == q.q_dtype,
              "flash", NOT_REPORTED,
              source="sdp_utils_cpp.cpp select_sdp_backend_cpp: flash first, then math"),
)

SPEC = RoutingSpec(
    library="torch",
    archs=ARCHS,
    rules=RULES,
    thresholds={CUDA_ROWS.name: CUDA_ROWS},
    # torch has no plan stage: every call chooses afresh.
    lifecycle=Lifecycle(re_resolve_every_eager_plan=frozenset({"paged", "ragged", "single", "decode"}),
                        graph_mode_first_plan_decides=False, nonpositive_length_never_short=True,
                        before_plan=("auto", NOT_REPORTED)),  # type: ignore[arg-type]
)

validate(SPEC)
