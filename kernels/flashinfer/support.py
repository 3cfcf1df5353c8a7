"""supports() for the flashinfer target: every decline, with the library source it rests on.

A pure function of (case, backend, graph mode, LibFacts): no flashinfer import, no device. Line
numbers are of flashinfer-python 0.7.2.post1 and of the ROCm fork as written up in
tests/data/sources/rocm_fork.md section 1 (fork rules run only against the CPU fake). Every decline
of the target is made here and nowhere else; each one and the source line it rests on:
docs/flashinfer-adapter.md, section "`kernels/flashinfer/support.py`: every decline and its source".

"auto" is judged as the backend the library's own selector picks for the case in a FRESH wrapper
(flashinfer.utils.determine_attention_backend, passed in as `auto_pick`), never as the sticky
choice of a reused wrapper: that difference is what the lifecycle checks are for.
"""

from __future__ import annotations

from typing import Callable, Optional

from kernels import skips
from kernels.flashinfer.lib import LibFacts, determine_auto
from kernels.protocol import Support
from scenarios.case import Case
from scenarios.dtypes import is_fp8, to_torch

SIXTEEN_BIT = ("fp16", "bf16")
UPSTREAM_DTYPES = ("fp16", "bf16", "e4m3fn", "e5m2")  # jit/utils.py:33 dtype_map (+ kv-only uint8/fp4)
FORK_FP8 = ("e4m3fn", "e4m3fnuz")  # fork FP8_PREFILL_DTYPES (rocm_fork.md section 2, step 4)
FA3_HEAD_DIMS = {(64, 64), (128, 128), (256, 256), (192, 128)}  # utils.py:504
# fa2 prefill tiles the head dim by 64 and validates nothing, in 0.7.2.post1 and 0.7.4 alike: a missing check
# upstream, so a misuse to decline, not a defect for the ledger (docs/ledger.md, "Misuse or defect").
FA2_PREFILL_HEAD_DIM_UNIT = 64
FA2_PREFILL_HEAD_DIM = (
    "fa2 prefill supports head dims that are multiples of 64 and checks none: head dim {dims} makes an illegal "
    "memory access on the H200 (docs/evidence/repro_flashinfer_ragged_head_dim_96.py) or a silently wrong "
    "output; the missing validation is flashinfer-ai/flashinfer#4299, fix proposed in PR #4312"
)
FA3_PAGED_UNEQUAL_HEAD_DIMS = (
    "fa3 paged prefill instantiates equal head dims only (hopper/prefill_sm90.cuh:578, :613-615 "
    "cudaErrorNotSupported) and its run refuses separate K and V caches (batch_prefill_sm90.cu:234-237): a "
    "deliberate check; auto routing a (192, 128) paged plan there is the ledger's flashinfer-fa3-paged-192-128"
)
# cuDNN's fp8 SDPA forward: Blackwell on (the H200's cudnnGraphNotSupportedError, cuDNN 9.19, frontend 1.32)
CUDNN_FP8_FROM = (10, 0)
CUDNN_BLOCK_SIZE = (
    "cuDNN's paged SDPA takes a power-of-2 block size (cudnnGraphNotSupportedError 'block size needs "
    "to be non-zero and a power of 2' for pages of 5 and 12 on the H200, decode and paged prefill "
    "alike: docs/evidence/probe_flashinfer_cudnn_limits.py)"
)

# Which APIs each library backend serves (adapter layouts).
SERVES = {
    "fa2": ("paged", "ragged", "decode", "single"),
    "fa3": ("paged", "ragged", "decode", "single"),
    "cudnn": ("paged", "ragged", "decode"),
    "trtllm-gen": ("paged", "decode"),
    "aiter": ("paged", "ragged", "decode", "single"),
    "auto": ("paged", "ragged", "decode", "single"),
}

AutoPick = Callable[[Case], Optional[str]]


def _no(constant: str, text: str) -> Support:
    return Support.no(skips.detail(constant, text))


def decide(
    case: Case,
    backend: str,
    *,
    graph: bool,
    facts: LibFacts,
    auto_pick: AutoPick,
    decode_tensor_cores: bool = False,
    capability: Optional[tuple[int, int]] = None,
) -> Support:
    """Support for `case` on library backend `backend` ("fa2", "auto", ...; no "+graph" suffix);
    `capability`: the GPU's (major, minor), for limits of one architecture (None: not known, none applied)."""
    api = case.layout
    if graph and api == "single":
        return _no(
            skips.GRAPH_MODE,
            "single_prefill_with_kv_cache has no plan() and no fixed buffers to capture "
            "against; the flashinfer adapter offers graph mode for paged/ragged/decode",
        )
    if backend not in SERVES:
        return _no(skips.DEVICE_BACKEND, f"flashinfer backend {backend!r} is not driven by this adapter")
    if api not in SERVES[backend]:
        return _no(skips.LAYOUT, f"flashinfer {backend} has no {api} path")
    general = _dtype_rules(case, facts)
    if general is not None:
        return general
    if api == "decode":
        if case.mask == "custom":
            return _no(skips.MASK, "BatchDecodeWithPagedKVCacheWrapper.plan() takes no custom mask")
        if case.head_dim_qk != case.head_dim_vo:
            return _no(skips.HEAD_DIM, "BatchDecodeWithPagedKVCacheWrapper.plan() takes one head_dim")
    if facts.fork:
        return _fork_rules(case, backend, facts, graph=graph)
    resolved = backend
    if backend == "auto":
        resolved = auto_resolution(case, auto_pick, decode_tensor_cores)
    elif backend == "fa3" and api == "paged" and case.head_dim_qk != case.head_dim_vo:
        return _no(skips.HEAD_DIM, FA3_PAGED_UNEQUAL_HEAD_DIMS)  # asked for; auto sent there is a defect
    why = _backend_rules(case, resolved, capability)
    if why is not None and backend == "auto":
        return Support.no(f"{why.reason} (auto resolves to {resolved} for this case)")
    return why or Support.yes()


def case_auto_pick(device: str, case: Case) -> Optional[str]:
    """Upstream's selector asked about `case` the way plan() asks it (kernels.flashinfer.lib.determine_auto)."""
    return determine_auto(
        device,
        has_mask=case.mask == "custom",
        q_dtype=to_torch(case.q_dtype),
        kv_dtype=to_torch(case.kv_dtype),
        head_dim_qk=case.head_dim_qk,
        head_dim_vo=case.head_dim_vo,
    )


def auto_resolution(case: Case, auto_pick: AutoPick, decode_tensor_cores: bool) -> str:
    """The library backend `auto` resolves to for `case` (supports() and the JIT prebuild share it)."""
    if case.layout == "decode" and not decode_tensor_cores:
        # decode.py _plan_impl: without tensor cores auto keeps the CUDA-core kernel ("fa2"),
        # cudnn only on SM100/103 for multi-token rows (_auto_decode_prefers_cudnn), never here.
        return "fa2"
    if case.layout == "decode" and not case.is_fp8:
        return "fa2"  # decode.py _plan_impl: tensor-core auto -> "fa2" unless q or kv is fp8
    pick = auto_pick(case)
    return pick if pick in SERVES else "fa2"


def _dtype_rules(case: Case, facts: LibFacts) -> Optional[Support]:
    q, kv, o = case.q_dtype, case.kv_dtype, case.o_dtype
    if facts.fork:
        allowed = SIXTEEN_BIT + FORK_FP8
        src = "the ROCm fork takes fp16/bf16 and fp8 e4m3fn/e4m3fnuz (FP8_PREFILL_DTYPES)"
    else:
        allowed = UPSTREAM_DTYPES
        src = "flashinfer's JIT dtype tables (jit/utils.py:33 dtype_map) know fp16, bf16, e4m3fn, e5m2 only"
    for name, dt in (("q", q), ("kv", kv)):
        if dt not in allowed:
            return _no(skips.DTYPE, f"{name} {dt}: {src}")
    if o not in SIXTEEN_BIT:
        return _no(
            skips.OUTPUT_DTYPE,
            f"o {o}: flashinfer writes fp16/bf16 output (no fp32 in jit/utils.py "
            "dtype_map; fp8 output asserted away in modules.py:1037)",
        )
    if q != kv and not (q in SIXTEEN_BIT and is_fp8(kv)):
        return _no(
            skips.MIXED_QKV_DTYPE,
            f"q {q}, kv {kv}: only a 16-bit query over fp8 KV (KV-only quantisation, modules.py:1029) mixes dtypes",
        )
    return None


def _backend_rules(case: Case, backend: str, capability: Optional[tuple[int, int]] = None) -> Optional[Support]:
    api = case.layout
    q, kv, o = case.q_dtype, case.kv_dtype, case.o_dtype
    fp8_q = is_fp8(q)
    kv_only_fp8 = q in SIXTEEN_BIT and is_fp8(kv)
    custom = case.mask == "custom"
    cap = case.logits_soft_cap > 0
    window = case.window_left >= 0
    if backend == "fa2":
        if fp8_q:
            return _no(
                skips.NO_FP8,
                "fa2 has no fp8 query path (modules.py:1042/:555 'fp8 tensor core is not supported in fa2 backend')",
            )
        if api == "single" and case.causal and not custom and case.qo_lens[0] > case.kv_lens[0]:
            return _no(
                skips.LIBRARY_REFUSED,
                "fa2 single prefill refuses causal with qo_len > kv_len "
                "(include/flashinfer/attention/prefill.cuh:2735 'kv_len must be "
                "greater than or equal to qo_len'); the batch APIs take it",
            )
        odd = [d for d in (case.head_dim_qk, case.head_dim_vo) if d % FA2_PREFILL_HEAD_DIM_UNIT]
        if api != "decode" and odd:
            return _no(skips.HEAD_DIM, FA2_PREFILL_HEAD_DIM.format(dims=odd[0]))
    elif backend == "fa3":
        if kv_only_fp8:
            return _no(
                skips.MIXED_QKV_DTYPE,
                f"q {q}, kv {kv}: 'FA3 FP8 KV cache currently requires FP8 query' "
                "(utils.py:456 is_fa3_backend_supported)",
            )
        if custom:
            return _no(
                skips.MASK,
                "fa3 takes no custom mask (is_fa3_backend_supported; cudaErrorNotSupported "
                "under MaskMode.CUSTOM per the wrapper __init__ docstring)",
            )
        if (case.head_dim_qk, case.head_dim_vo) not in FA3_HEAD_DIMS:
            return _no(
                skips.HEAD_DIM,
                f"fa3 instantiates head dims {sorted(FA3_HEAD_DIMS)} (utils.py:504 is_fa3_prefill_head_dim_supported)",
            )
        if fp8_q and cap:
            return _no(
                skips.NO_SOFT_CAP, "fa3's fp8 variant DefaultFP8Attention has no logits_soft_cap (modules.py:1092-1105)"
            )
    elif backend == "cudnn":
        if api in ("paged", "ragged"):
            if window or cap or custom:
                what = "window_left" if window else "logits_soft_cap" if cap else "a custom mask"
                return _no(
                    skips.MASK if custom or window else skips.NO_SOFT_CAP,
                    f"cuDNN {api} prefill supports only causal or full attention, not {what} (plan() "
                    "NotImplementedError)",
                )
            if api == "ragged" and case.kv_layout != "NHD":
                return _no(skips.LAYOUT, "cuDNN ragged prefill requires kv_layout='NHD' (run() NotImplementedError)")
            if q != kv:
                return _no(skips.MIXED_QKV_DTYPE, f"q {q}, kv {kv}: the cuDNN graph takes one input dtype")
            if api == "paged" and case.page_size & (case.page_size - 1):
                return _no(skips.PAGE_SIZE, f"page size {case.page_size}: {CUDNN_BLOCK_SIZE}")
            if fp8_q and capability is not None and capability < CUDNN_FP8_FROM:
                return _no(
                    skips.NO_FP8,
                    f"cuDNN's fp8 SDPA forward runs from sm{CUDNN_FP8_FROM[0]}0 on, this GPU is "
                    f"sm{capability[0]}{capability[1]} (cudnnGraphNotSupportedError 'only "
                    "supported on Blackwell architecture and newer' on the H200: "
                    "docs/evidence/probe_flashinfer_cudnn_limits.py)",
                )
            if (
                case.return_lse
                and case.batch_size > 0
                and max(case.qo_lens) == 1
                and case.num_qo_heads != case.num_kv_heads
            ):
                return _no(
                    skips.LSE,
                    "cuDNN single-token GQA prefill does not write every LSE head (run() "
                    "NotImplementedError, NVBug 6783545)",
                )
        elif api == "decode":
            if is_fp8(q) or is_fp8(kv):
                return _no(skips.NO_FP8, "cudnn decode takes no fp8 (BatchDecode __init__ docstring)")
            if q != kv:
                return _no(skips.MIXED_QKV_DTYPE, "cudnn decode takes fp16/bf16 q/kv/o of one dtype")
            if o != q:
                return _no(skips.OUTPUT_DTYPE, "cudnn decode takes fp16/bf16 q/kv/o of one dtype")
            if cap:
                return _no(skips.NO_SOFT_CAP, "cudnn decode does not apply a soft cap (BatchDecode __init__ docstring)")
            if case.page_size & (case.page_size - 1):
                return _no(skips.PAGE_SIZE, f"page size {case.page_size}: {CUDNN_BLOCK_SIZE}")
    elif backend == "trtllm-gen":
        if cap:
            return _no(
                skips.NO_SOFT_CAP, "trtllm-gen takes no logits_soft_cap (paged plan() ValueError, decode assert)"
            )
        if api == "paged" and window and not case.causal:
            return _no(skips.MASK, "trtllm-gen paged KV has no non-causal sliding window (plan() NotImplementedError)")
        if custom:
            return _no(skips.MASK, "trtllm-gen's paged run takes only is_causal; a custom mask would be ignored")
    if api == "single" and fp8_q:
        if window:
            return _no(skips.MASK, "fp8 single prefill asserts window_left == -1 (single_prefill_with_kv_cache)")
        if case.head_dim_qk != case.head_dim_vo:
            return _no(skips.HEAD_DIM, "fp8 single prefill asserts equal head dims (single_prefill_with_kv_cache)")
    return None


def _fork_rules(case: Case, backend: str, facts: LibFacts, *, graph: bool = False) -> Support:
    """The ROCm fork (rocm_fork.md sections 1 and 4); exercised against the CPU stand-in and fake."""
    api = case.layout
    fp8 = case.is_fp8
    if fp8:
        if api != "paged":
            return _no(skips.NO_FP8, f"the fork has fp8 on paged prefill only ({api}: NotImplementedError)")
        if backend == "fa2":
            return _no(skips.NO_FP8, "fp8 prefill query has no in-tree fa2 kernel (fork paged plan())")
        if case.q_dtype != case.kv_dtype:
            return _no(skips.MIXED_QKV_DTYPE, "the fork's fp8 route takes q and kv in one fp8 dtype")
        if case.o_dtype != "bf16":
            return _no(skips.OUTPUT_DTYPE, "fork fp8 prefill writes bf16 output only (plan() NotImplementedError)")
        if facts.native_fp8 is not None and case.q_dtype != facts.native_fp8:
            return _no(
                skips.DTYPE,
                f"{case.q_dtype} is not this GPU's fp8 encoding {facts.native_fp8} "
                "(NotImplementedError 'wrong exponent bias')",
            )
    elif case.q_dtype != case.kv_dtype:
        return _no(skips.MIXED_QKV_DTYPE, f"q {case.q_dtype}, kv {case.kv_dtype}")
    elif case.o_dtype != case.q_dtype:
        return _no(skips.OUTPUT_DTYPE, "the fork writes the output in the query dtype (plan() NotImplementedError)")
    if backend == "aiter":
        if graph and api == "decode" and case.return_lse:
            return _no(
                skips.LSE,
                "AITER decode cannot return LSE under CUDA-graph capture (decode run() "
                "ValueError; rocm_fork.md section 4, rule 32)",
            )
        if case.kv_layout != "NHD":
            return _no(skips.LAYOUT, "AITER requires NHD (plan() ValueError)")
        if case.mask == "custom":
            return _no(skips.MASK, "custom mask (not supported by AITER)")
        if case.head_dim_qk != case.head_dim_vo:
            return _no(skips.HEAD_DIM, "AITER requires equal head dims")
        if (
            facts.softcap_defect
            and case.causal
            and case.logits_soft_cap > 0
            and case.head_dim_qk == 128
            and api in ("ragged", "single")
        ):
            return _no(
                skips.NO_SOFT_CAP,
                "AITER miscomputes logits_soft_cap for causal head_dim=128 on this GPU (plan() ValueError)",
            )
    return Support.yes()
