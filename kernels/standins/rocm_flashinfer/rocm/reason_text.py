"""Every fallback reason and error text of the ROCm fork stand-in, as format strings (data only).

Part of the ROCm FlashInfer fork stand-in, not of the fork's API (the fork formats these inline).
Kept apart so the texts can be compared with tests/data/sources/rocm_fork.md one by one
(tests/kernels/test_rocm_standin.py). Where the document quotes a text whole, the template
renders to exactly that text; where it quotes only part ("...", "…", a fragment in quotes), the
quoted part is kept verbatim and the rest is written here, marked "(completed)".
"""

from __future__ import annotations

__attncheck_standin__ = "flashinfer-rocm-fork"

# --- section 2, _auto_select_prefill_backend, by step -------------------------------------------
BOTH_LENGTHS = "max_q_len (paged) and ragged_q_len (ragged) are different routes; pass at most one"  # 0
CAPABILITY_UNDECLARED = (
    "{backend} {op} requires an AMD gfx942/gfx950 device; got '{arch}'. Use backend='fa2' instead"  # 1
)
CAPABILITY_UNSUPPORTED = "{backend} {op} is not supported on {arch}"  # 1
CAPABILITY_UNKNOWN_OP = "{backend} {op} is not a declared capability"  # 1 (completed)
CAPABILITY_KNOWN_BAD = (
    "{backend} {op} on {arch} is known-broken ({why}); "
    "set FLASHINFER_ARCH_ALLOW_KNOWN_BAD=1 to override"
)  # 1 (completed)
LAYOUT = "kv_layout={kv_layout!r} (AITER requires NHD)"  # 2
CUSTOM_MASK = "custom mask (not supported by AITER)"  # 3
DTYPE = "dtype={dtype_q} (AITER requires fp16/bf16{fp8})"  # 4; fp8 = "/fp8" if allow_fp8 else ""
DTYPE_MISMATCH = "dtype_q={dtype_q} != dtype_kv={dtype_kv} (AITER requires equal dtypes)"  # 5
HEAD_DIMS = "head_dim_qk={head_dim_qk} != head_dim_vo={head_dim_vo} (AITER requires equal head dims)"  # 6
POS_ENCODING = "pos_encoding_mode={pos_encoding_mode!r} (AITER only supports NONE)"  # 7
SOFTCAP_DEFECT = (
    "logits_soft_cap={cap} with causal head_dim={hd} (AITER mha_varlen_fwd computes the soft cap incorrectly)"  # 8
)
PAGED_SHORT_QUERY = (
    "query length <= {T} on a page size AITER cannot page natively (its flat gather copies "
    "the whole KV cache, which a short query cannot amortise)"
)  # 9
RAGGED_SHORT_QUERY = (
    "query length <= {T} on ragged KV (AITER's mha_varlen_fwd costs more per call than the "
    "in-tree kernel, which a short query cannot amortise)"
)  # 9
ABI_FLOOR = (
    "amd-aiter {v} is below the {floor} ABI floor (the vendored struct layouts do not match older releases)"  # 11
)
NOT_INSTALLED = "aiter package not installed (see docs/rocm/backends.md for the wheel index and pinned version)"  # 11

# --- section 4, lifecycle: reasons -----------------------------------------------------------------
BOOTSTRAP_FAILED = (
    "aiter {op} kernel bootstrap failed on this install: {exc}: {detail} "
    "(set FLASHINFER_AITER_STRICT=1 to raise instead)"
)
NATIVE_PAGING_UNAVAILABLE = (
    "aiter native paging was unavailable for page_size={page_size}; the flat-gather "
    "fallback would hit the soft-cap defect on {arch}"
)  # (completed)
DECODE_CAPACITY = "batch has kv_len={kv_len} exceeding the declared max_seq_len={max_seq_len}"

# --- section 1 / 4: errors -------------------------------------------------------------------------
RAGGED_BACKEND = "backend must be one of 'fa2', 'aiter', 'auto'; got {backend!r}"
PAGED_UNKNOWN_BACKEND = (
    "unknown backend {backend!r} for BatchPrefillWithPagedKVCacheWrapper; using 'fa2'"  # (completed)
)
GRAPH_BUFFER = "{name} should be a torch.Tensor in CUDA graph mode"  # (completed)
GRAPH_MASK_BUFFERS = (
    "custom_mask_buf and mask_indptr_buf must be given at construction to plan a custom "
    "mask in CUDA graph mode"
)  # (completed)
GRAPH_BATCH = "the batch size is fixed in CUDA graph mode: got {got}, the wrapper was built for {fixed}"
GRAPH_ROWS = (
    "The total number of rows in qo_indptr {got} in cuda graph mode cannot exceed the number of rows "
    "set during initialization {fixed}."
)
GRAPH_INDICES = "The length of paged_kv_indices exceeds the allocated buffer size."
WORKSPACE_SIZE = "workspace_size() is not implemented on ROCm"  # (completed)
CUDA_ONLY = "{name}={value!r} is a CUDA-only argument; ROCm takes only its neutral value"  # (completed)
O_DTYPE = "o_data_type={o_dtype} must equal the query dtype {q_dtype} on ROCm"  # (completed)
FP8_OUTPUT = "fp8 prefill writes bf16 output; got o_data_type={o_dtype}"  # (completed)
FP8_RAGGED = (
    "fp8 prefill (dtype={dtype_q}) is not supported on ragged batch prefill. Use "
    "BatchPrefillWithPagedKVCacheWrapper with scale_q/scale_k/scale_v, or cast q/k/v to bf16/fp16."
)
FP8_ON_FA2 = (
    "fp8 prefill query (dtype={dtype_q}) has no in-tree fa2 kernel on ROCm; AITER serves fp8 only "
    "on paged batch prefill, with per-tensor scale_q/scale_k/scale_v."
)
FP8_OFF_NATIVE_PAGING = (
    "fp8 prefill (dtype={dtype_q}) runs only where AITER pages natively "
    "(page_size in {routed}); page_size={page_size} would take the paged flat-gather "
    "route, which has no fp8 path."
)
FP8_NOT_NATIVE_PAGED = (
    "fp8 prefill at page_size={page_size}: aiter native paging was unavailable, and the "
    "paged flat-gather route has no fp8 path."
)
FP8_WRONG_ENCODING = (
    "fp8 prefill on this GPU needs its encoding {native}; got {dtype_q}, which the kernel "
    "would read under the wrong exponent bias. Re-quantize with aiter.dtypes.fp8."
)
FP8_ENCODING_UNREADABLE = (
    "fp8 prefill needs this GPU's fp8 encoding, and aiter.dtypes.fp8 could not be read: "
    "refusing rather than guessing the exponent bias."
)
FP8_NOT_PAGED = "AITER serves fp8 only on paged batch prefill; {api} got dtype={dtype_q}"  # (completed)
FP8_FLOAT_SCALES = (
    "q_scale/k_scale/v_scale cannot be combined with an fp8 query: pass the per-tensor descales "
    "as scale_q/scale_k/scale_v"
)
FP8_NO_LSE = "fp8 prefill cannot produce LSE: return_lse, lse and partial_state are refused with an fp8 query"
SCALES_ON_FA2 = (
    "scale_q/scale_k/scale_v are fp8 descales honoured only by the AITER paged route; this call "
    "resolved to fa2, which would ignore them ({reason})."
)
PER_TENSOR = "{name} must be a per-tensor descale (one float32 element); got shape {shape}"
O_SCALE = "o_scale must be None or 1.0; got {value!r}"
AITER_UNSUPPORTED = "backend='aiter' cannot run {what}"
STRICT_NATIVE_PAGING = (
    "aiter native paging probe failed for page_size={page_size} "
    "(FLASHINFER_AITER_STRICT=1 raises instead of falling back)"
)

# --- decode (@05005763) ----------------------------------------------------------------------------
MAX_SEQ_LEN_TYPE = "max_seq_len must be an int; got {value!r}"
MAX_SEQ_LEN_POSITIVE = "max_seq_len must be positive; got {value}"
MAX_SEQ_LEN_GRAPH = "max_seq_len requires use_cuda_graph=True"
DECODE_CAPACITY_RAISE = (
    "AITER graph decode: batch has kv_len={kv_len} exceeding the declared "
    "max_seq_len={max_seq_len}; increase max_seq_len."
)
DECODE_LSE_CAPTURE = (
    "return_lse=True is not supported for AITER decode under CUDA-graph capture (its LSE "
    "comes from an FA2 shadow plan, which cannot run inside a capture)"
)
DECODE_LSE_SHADOW = "AITER decode returns no LSE; return_lse=True runs an FA2 shadow plan for it"
WINDOW_RIGHT = "window_right must be 0; got {value}"
Q_LEN_PER_REQ = "q_len_per_req={value} > 1 needs use_tensor_cores=True"
DEPRECATED_POSITIONAL = "passing plan() options positionally is deprecated; pass them by keyword"
