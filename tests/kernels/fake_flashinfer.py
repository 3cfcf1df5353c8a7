"""A CPU stand-in for the `flashinfer` package, used by the FlashInfer tests (the `fake` fixture below installs it).

install(monkeypatch, ...) puts a fake package into sys.modules under "flashinfer" (and the
submodules the adapter reads: utils, prefill, decode, quantization, cudnn.prefill; with fork=True
also rocm.arch_caps and rocm.prefill), so that kernels/flashinfer/adapter.py runs unchanged on a CPU.

What is copied from flashinfer-python 0.7.2.post1 (prefill.py, decode.py, utils.py,
quantization/packbits.py):
  * the class and function names and the __init__/plan/run signatures (parameter names, order,
    defaults) of BatchPrefillWithPagedKVCacheWrapper, BatchPrefillWithRaggedKVCacheWrapper,
    BatchDecodeWithPagedKVCacheWrapper and single_prefill_with_kv_cache; packbits/segment_packbits;
  * the Python-side behaviour the adapter depends on: where `auto` is resolved and stored (paged
    `_backend`, sticky; ragged `_backend` from `_requested_backend`, every plan; decode
    `resolved_backend`; single inside the function through get_single_prefill_module), the
    custom-mask packing (segment_packbits, bit order "little") and mask_indptr arithmetic,
    MaskMode.CUSTOM iff `_custom_mask_buf is not None` (the ragged wrapper keeps a stale one, as the
    real one does), the CUDA-graph constraints (fixed batch, indices buffer, rows fixed by the first
    plan), the fp8 scale folding of each run(), and lse_base / _finish_lse.
The kernels themselves are a plain fp32 reference (GQA, paging, causal/window/custom masks, soft
cap, base-2 LSE; the math is kernels/standins/rocm_flashinfer/_kernels.py, shared with the ROCm
fork's stand-in), run on whatever the wrapper's buffers hold when the "kernel" launches: under the
fake CUDA graph (FakeGraphs) a run() records launches whose Python scalars are bound at capture and
whose buffers are read at replay, like a real graph. Knobs on STATE let tests break the fake
(leave rows unwritten, emit natural-log LSE) to prove the adapter notices.

Every call is logged in STATE.calls as dicts {"api", "method", "wrapper", "args", "kwargs"}.
"""
from __future__ import annotations

import importlib.machinery
import math
import sys
import types
from dataclasses import dataclass, field
from functools import partialmethod
from typing import Any, Dict, List, Optional, Tuple, Union

import pytest
import torch

from kernels.standins.rocm_flashinfer import _kernels as _k  # the plain-torch math, shared with the ROCm stand-in

VERSION = "0.7.2.post1+fake"
LN2 = 0.6931471805599453094
LOG2E = 1.44269504088896340736
NON_CAUSAL, CAUSAL, CUSTOM = 0, 1, 2  # utils.MaskMode values
FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


@dataclass
class State:
    fork: bool = False
    sm90: bool = True
    cudnn: bool = False
    calls: list = field(default_factory=list)
    wrappers: list = field(default_factory=list)
    capturing: Optional[list] = None
    skip_rows: set = field(default_factory=set)  # output/LSE rows the "kernels" leave unwritten
    lse_natural: bool = False  # a broken kernel: natural-log LSE under the base-2 contract
    single_modules: list = field(default_factory=list)  # backends get_single_prefill_module was asked for
    aiter_ok: bool = True


STATE = State()


def _log(api: str, method: str, wrapper: Any, args: tuple, kwargs: dict) -> None:
    STATE.calls.append({"api": api, "method": method, "wrapper": id(wrapper) if wrapper is not None else None,
                        "args": args, "kwargs": dict(kwargs)})


def _launch(fn: Any) -> None:
    """Run a "kernel" now, or record it when a FakeGraphs capture is in progress."""
    if STATE.capturing is not None:
        STATE.capturing.append(fn)
    else:
        fn()


class FakeGraphs:
    """kernels.flashinfer.adapter.TorchGraphs' interface over recorded launches (no CUDA)."""

    def __init__(self) -> None:
        self.captures = 0
        self.replays = 0
        self.warmups = 0

    def warmup(self, fn: Any) -> None:
        self.warmups += 1
        fn()

    def capture(self, fn: Any) -> list:
        STATE.capturing = []
        try:
            fn()
            return STATE.capturing
        finally:
            self.captures += 1
            STATE.capturing = None

    def replay(self, launches: list) -> None:
        self.replays += 1
        for f in launches:
            f()


# ---- utils ------------------------------------------------------------------------------------

def canonicalize_torch_dtype(dtype: Union[torch.dtype, str]) -> torch.dtype:
    if isinstance(dtype, str):
        return getattr(torch, dtype)
    return dtype


def is_float8(x: torch.Tensor) -> bool:
    return x.dtype in FP8


def is_sm90a_supported(device: torch.device) -> bool:
    return STATE.sm90


def is_fa3_prefill_head_dim_supported(head_dim_qk: int, head_dim_vo: int) -> bool:
    if head_dim_qk == head_dim_vo:
        return head_dim_qk in {64, 128, 256}
    return (head_dim_qk, head_dim_vo) == (192, 128)


def is_fa3_backend_supported(pos_encoding_mode: int, use_fp16_qk_reductions: bool, use_custom_mask: bool,
                             dtype_q: torch.dtype, dtype_kv: torch.dtype) -> bool:
    if use_custom_mask or pos_encoding_mode != 0 or use_fp16_qk_reductions:
        return False
    if dtype_kv in FP8 and dtype_q not in FP8:
        return False
    return True


def determine_attention_backend(device: torch.device, pos_encoding_mode: int, use_fp16_qk_reductions: bool,
                                use_custom_mask: bool, dtype_q: torch.dtype, dtype_kv: torch.dtype, *,
                                head_dim_qk: Optional[int] = None, head_dim_vo: Optional[int] = None) -> str:
    if is_sm90a_supported(device) and is_fa3_backend_supported(pos_encoding_mode, use_fp16_qk_reductions,
                                                                 use_custom_mask, dtype_q, dtype_kv):
        if head_dim_qk is None or head_dim_vo is None:
            return "fa3"
        if is_fa3_prefill_head_dim_supported(head_dim_qk, head_dim_vo):
            return "fa3"
    return "fa2"


def check_shape_dtype_device(x: torch.Tensor, shape: tuple, dtype: torch.dtype, device: torch.device,
                             name: str) -> None:
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"Invalid shape of {name}: expected {tuple(shape)}, got {tuple(x.shape)}")
    if x.dtype != dtype:
        raise ValueError(f"Invalid dtype of {name}: expected {dtype}, got {x.dtype}")


def _check_cached_qkv_data_type(q: torch.Tensor, k: torch.Tensor, dtype_q: torch.dtype,
                                dtype_kv: torch.dtype) -> None:
    if q.dtype != dtype_q:
        raise ValueError(f"The dtype of q {q.dtype} does not match the q_data_type {dtype_q} specified in plan "
                         "function.")
    if k.dtype != dtype_kv:
        raise ValueError(f"The dtype of k {k.dtype} does not match the kv_data_type {dtype_kv} specified in plan "
                         "function.")


def _finish_lse(lse: torch.Tensor, lse_base: str) -> torch.Tensor:
    if lse_base == "ln":
        lse.mul_(LN2)
    return lse


def get_seq_lens(indptr: torch.Tensor, last_page_len: torch.Tensor, page_size: int) -> torch.Tensor:
    return _k.seq_lens(indptr, last_page_len, page_size)


# ---- quantization -----------------------------------------------------------------------------

def packbits(x: torch.Tensor, bitorder: str = "big") -> torch.Tensor:
    _log("quantization", "packbits", None, (x,), {"bitorder": bitorder})
    return _k.pack_bits(x, bitorder)


def segment_packbits(x: torch.Tensor, indptr: torch.Tensor, bitorder: str = "big") -> Tuple[torch.Tensor,
                                                                                            torch.Tensor]:
    _log("quantization", "segment_packbits", None, (x, indptr), {"bitorder": bitorder})
    ip = indptr.cpu().tolist()
    for i in range(len(ip) - 1):  # logged per segment, as the packbits calls of the original were
        _log("quantization", "packbits", None, (x[ip[i]:ip[i + 1]],), {"bitorder": bitorder})
    return _k.segment_pack_bits(x, indptr, bitorder)


_bits = _k.unpack_bits


# ---- the reference "kernel" -------------------------------------------------------------------

def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: Optional[torch.Tensor], sm_scale: float,
            cap: float, q_head_scale: Optional[torch.Tensor] = None,
            v_head_scale: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """q [qo, Hq, D], k [kv, Hk, D], v [kv, Hk, Dv] -> out [qo, Hq, Dv] fp32, base-2 lse [qo, Hq]."""
    out, lse = _k.attend(q, k, v, keep, sm_scale, cap, q_head_scale, v_head_scale)
    return out, lse * (1.0 if STATE.lse_natural else LOG2E)


_keep = _k.keep_mask


def _store(out: torch.Tensor, lse: Optional[torch.Tensor], q0: int, o: torch.Tensor, l2: torch.Tensor) -> None:
    for r in range(o.shape[0]):
        if q0 + r in STATE.skip_rows:
            continue
        out[q0 + r] = o[r].to(out.dtype)
        if lse is not None:
            lse[q0 + r] = l2[r]


_kv_tokens = _k.page_tokens


def _batch_kernel(*, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                  lse: Optional[torch.Tensor], qo_indptr: torch.Tensor, kv_lens: List[int],
                  kv_index: Any, layout: str, mask_mode: int, window_left: int, cap: float, sm_scale: float,
                  custom_mask: Optional[torch.Tensor], mask_indptr: Optional[torch.Tensor], batch: int,
                  v_scale_scalar: float = 1.0) -> None:
    qi = qo_indptr.cpu().tolist()
    mi = mask_indptr.cpu().tolist() if mask_indptr is not None else None
    for b in range(batch):
        q0, q1 = qi[b], qi[b + 1]
        qo, kv = q1 - q0, max(0, kv_lens[b])
        kb, vb = kv_index(k, b, kv), kv_index(v, b, kv)
        custom = None
        if mask_mode == CUSTOM:
            assert custom_mask is not None and mi is not None
            custom = _bits(custom_mask, mi[b], qo * kv)
        keep = _keep(qo, kv, mask_mode, window_left, custom)
        o, l2 = _attend(q[q0:q1], kb, vb, keep, sm_scale, cap)
        _store(out, lse, q0, o * v_scale_scalar, l2)


_compute_page_mask_indptr = _k.page_mask_indptr
_compute_mask_indptr = _k.mask_indptr


def _fork_select(has_mask: bool, kv_layout: str, dtype_q: torch.dtype, dtype_kv: torch.dtype
                 ) -> Tuple[str, Optional[str]]:
    """A tiny stand-in for the fork's _auto_select_prefill_backend (reason strings from rocm_fork.md)."""
    if kv_layout != "NHD":
        return "fa2", f"kv_layout={kv_layout!r} (AITER requires NHD)"
    if has_mask:
        return "fa2", "custom mask (not supported by AITER)"
    if dtype_q != dtype_kv:
        return "fa2", f"dtype_q={dtype_q} != dtype_kv={dtype_kv} (AITER requires equal dtypes)"
    if not STATE.aiter_ok:
        return "fa2", "aiter package not installed (see docs/rocm/backends.md for the wheel index and pinned version)"
    return "aiter", None


# ---- paged prefill ----------------------------------------------------------------------------

class BatchPrefillWithPagedKVCacheWrapper:
    def __init__(
        self,
        float_workspace_buffer: torch.Tensor,
        kv_layout: str = "NHD",
        use_cuda_graph: bool = False,
        qo_indptr_buf: Optional[torch.Tensor] = None,
        paged_kv_indptr_buf: Optional[torch.Tensor] = None,
        paged_kv_indices_buf: Optional[torch.Tensor] = None,
        paged_kv_last_page_len_buf: Optional[torch.Tensor] = None,
        custom_mask_buf: Optional[torch.Tensor] = None,
        mask_indptr_buf: Optional[torch.Tensor] = None,
        backend: str = "auto",
        jit_args: Optional[List[Any]] = None,
        jit_kwargs: Optional[Dict[str, Any]] = None,
        variant_owns_mask: bool = False,
    ) -> None:
        _log("paged", "__init__", self, (float_workspace_buffer, kv_layout),
             dict(use_cuda_graph=use_cuda_graph, qo_indptr_buf=qo_indptr_buf, paged_kv_indptr_buf=paged_kv_indptr_buf,
                  paged_kv_indices_buf=paged_kv_indices_buf, paged_kv_last_page_len_buf=paged_kv_last_page_len_buf,
                  custom_mask_buf=custom_mask_buf, mask_indptr_buf=mask_indptr_buf, backend=backend))
        STATE.wrappers.append(self)
        self._kv_layout = kv_layout
        self.device = float_workspace_buffer.device
        self._use_cuda_graph = use_cuda_graph
        if use_cuda_graph:
            for name, buf in (("qo_indptr_buf", qo_indptr_buf), ("paged_kv_indptr_buf", paged_kv_indptr_buf),
                              ("paged_kv_indices_buf", paged_kv_indices_buf),
                              ("paged_kv_last_page_len_buf", paged_kv_last_page_len_buf)):
                if not torch.is_tensor(buf):
                    raise ValueError(f"{name} should be a torch.Tensor in CUDA graph mode")
            self._fixed_batch_size = len(qo_indptr_buf) - 1
        else:
            self._fixed_batch_size = 0
        self._qo_indptr_buf = qo_indptr_buf
        self._paged_kv_indptr_buf = paged_kv_indptr_buf
        self._paged_kv_indices_buf = paged_kv_indices_buf
        self._paged_kv_last_page_len_buf = paged_kv_last_page_len_buf
        self._custom_mask_buf = custom_mask_buf
        self._mask_indptr_buf = mask_indptr_buf
        self._max_total_num_rows: Optional[int] = None
        self._cudnn_block_tables: Optional[torch.Tensor] = None
        self._backend = backend
        self._init_fork(backend)

    def _init_fork(self, backend: str) -> None:
        pass

    @property
    def is_cuda_graph_enabled(self) -> bool:
        return self._use_cuda_graph

    def plan(
        self,
        qo_indptr: torch.Tensor,
        paged_kv_indptr: torch.Tensor,
        paged_kv_indices: torch.Tensor,
        paged_kv_last_page_len: torch.Tensor,
        num_qo_heads: int,
        num_kv_heads: int,
        head_dim_qk: int,
        page_size: int,
        head_dim_vo: Optional[int] = None,
        custom_mask: Optional[torch.Tensor] = None,
        packed_custom_mask: Optional[torch.Tensor] = None,
        causal: bool = False,
        pos_encoding_mode: str = "NONE",
        use_fp16_qk_reduction: bool = False,
        sm_scale: Optional[float] = None,
        window_left: int = -1,
        logits_soft_cap: Optional[float] = None,
        rope_scale: Optional[float] = None,
        rope_theta: Optional[float] = None,
        q_data_type: Union[str, torch.dtype] = "float16",
        kv_data_type: Optional[Union[str, torch.dtype]] = None,
        o_data_type: Optional[Union[str, torch.dtype]] = None,
        non_blocking: bool = True,
        prefix_len_ptr: Optional[torch.Tensor] = None,
        token_pos_in_items_ptr: Optional[torch.Tensor] = None,
        token_pos_in_items_len: int = 0,
        max_item_len_ptr: Optional[torch.Tensor] = None,
        seq_lens: Optional[torch.Tensor] = None,
        seq_lens_q: Optional[torch.Tensor] = None,
        block_tables: Optional[torch.Tensor] = None,
        max_token_per_sequence: Optional[int] = None,
        max_sequence_kv: Optional[int] = None,
        fixed_split_size: Optional[int] = None,
        disable_split_kv: bool = False,
        uniform_q_len: Optional[int] = None,
    ) -> None:
        _log("paged", "plan", self, (qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len,
                                     num_qo_heads, num_kv_heads, head_dim_qk, page_size),
             dict(head_dim_vo=head_dim_vo, custom_mask=custom_mask, packed_custom_mask=packed_custom_mask,
                  causal=causal, sm_scale=sm_scale, window_left=window_left, logits_soft_cap=logits_soft_cap,
                  q_data_type=q_data_type, kv_data_type=kv_data_type, o_data_type=o_data_type))
        q_data_type = canonicalize_torch_dtype(q_data_type)
        kv_data_type = canonicalize_torch_dtype(kv_data_type) if kv_data_type is not None else q_data_type
        o_data_type = canonicalize_torch_dtype(o_data_type) if o_data_type is not None else q_data_type
        if logits_soft_cap is None:
            logits_soft_cap = 0.0
        if head_dim_vo is None:
            head_dim_vo = head_dim_qk
        batch_size = len(qo_indptr) - 1
        self._batch_size = batch_size
        self._num_qo_heads = num_qo_heads
        self._num_kv_heads = num_kv_heads
        if custom_mask is not None or packed_custom_mask is not None:
            mask_indptr = _compute_page_mask_indptr(qo_indptr, paged_kv_indptr, paged_kv_last_page_len, page_size)
        if packed_custom_mask is None and custom_mask is not None:
            packed_custom_mask, mask_indptr = segment_packbits(custom_mask.contiguous().view(-1),
                                                               mask_indptr.to(custom_mask.device), bitorder="little")
        qo_indptr_host = qo_indptr.to("cpu")
        total_num_rows = int(qo_indptr_host[-1])
        self._qo_indptr_last = total_num_rows
        self._max_q_len = (qo_indptr_host[1:] - qo_indptr_host[:-1]).max().item()  # raises on an empty batch
        self._page_size = page_size
        if self.is_cuda_graph_enabled:
            if self._max_total_num_rows is None:
                self._max_total_num_rows = total_num_rows
            elif total_num_rows > self._max_total_num_rows:
                raise ValueError(f"The total number of rows in qo_indptr {total_num_rows} in cuda graph mode cannot "
                                 f"exceed the number of rows set during initialization {self._max_total_num_rows}.")
            if batch_size != self._fixed_batch_size:
                raise ValueError("The batch size should be fixed during the lifecycle of the wrapper in cuda graph "
                                 f"mode, the runtime batch size {batch_size} mismatches the batch size "
                                 f"{self._fixed_batch_size}  set during initialization.")
            if len(paged_kv_indices) > len(self._paged_kv_indices_buf):
                raise ValueError("The length of paged_kv_indices exceeds the allocated buffer size.")
            if self._backend == "cudnn" and block_tables is None:
                # prefill.py:3872-3890: the auto-built [batch, widest request's pages] table is captured
                # at its first width; a later plan needing a wider one raises under CUDA graphs.
                width = int((paged_kv_indptr[1:] - paged_kv_indptr[:-1]).max()) if batch_size else 0
                old = self._cudnn_block_tables
                if old is not None and old.shape[1] < width:
                    raise ValueError("captured cuDNN block table cannot grow; supply a fixed block_tables buffer")
                if old is None:
                    self._cudnn_block_tables = torch.zeros(batch_size, width, dtype=torch.int32)
            self._qo_indptr_buf.copy_(qo_indptr)
            self._paged_kv_indptr_buf.copy_(paged_kv_indptr)
            self._paged_kv_last_page_len_buf.copy_(paged_kv_last_page_len)
            self._paged_kv_indices_buf[: len(paged_kv_indices)].copy_(paged_kv_indices)
            if packed_custom_mask is not None:
                if not torch.is_tensor(self._custom_mask_buf):
                    raise ValueError("custom_mask_buf must be initialized with a torch.Tensor in cuda graph mode if "
                                     "we use custom mask in attention computation.")
                self._custom_mask_buf[: len(packed_custom_mask)].copy_(packed_custom_mask)
                self._mask_indptr_buf.copy_(mask_indptr)
        else:
            self._qo_indptr_buf = qo_indptr.to(self.device)
            self._paged_kv_indptr_buf = paged_kv_indptr.to(self.device)
            self._paged_kv_indices_buf = paged_kv_indices.to(self.device)
            self._paged_kv_last_page_len_buf = paged_kv_last_page_len.to(self.device)
            if packed_custom_mask is not None:
                self._custom_mask_buf = packed_custom_mask.to(self.device)
                self._mask_indptr_buf = mask_indptr.to(self.device)
            else:
                self._custom_mask_buf = None
                self._mask_indptr_buf = None
        self._cached_q_data_type = q_data_type
        self._cached_kv_data_type = kv_data_type
        self._cached_o_data_type = o_data_type
        self._resolve(q_data_type, kv_data_type, head_dim_qk, head_dim_vo)
        self._causal = causal
        self._window_left = window_left
        self._logits_soft_cap = logits_soft_cap
        self._sm_scale = sm_scale

    def _resolve(self, q_data_type: torch.dtype, kv_data_type: torch.dtype, head_dim_qk: int, head_dim_vo: int) -> None:
        if self._backend == "auto":  # sticky: prefill.py:3669-3670
            self._backend = determine_attention_backend(self.device, 0, False, self._custom_mask_buf is not None,
                                                        q_data_type, kv_data_type, head_dim_qk=head_dim_qk,
                                                        head_dim_vo=head_dim_vo)

    begin_forward = plan

    def run(
        self,
        q: torch.Tensor,
        paged_kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
        *args,
        q_scale: Optional[Union[float, torch.Tensor]] = None,
        k_scale: Optional[Union[float, torch.Tensor]] = None,
        v_scale: Optional[Union[float, torch.Tensor]] = None,
        out: Optional[torch.Tensor] = None,
        lse: Optional[torch.Tensor] = None,
        return_lse: bool = False,
        lse_base: str = "log2",
        lse_layout: str = "NH",
        enable_pdl: Optional[bool] = None,
        window_left: Optional[int] = None,
        sinks: Optional[torch.Tensor] = None,
        kv_cache_sf: Optional[Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]] = None,
        skip_softmax_threshold_scale_factor: Optional[float] = None,
        use_fp16_softmax: Optional[bool] = None,
        uses_spcompress: Optional[bool] = None,
    ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        _log("paged", "run", self, (q, paged_kv_cache) + tuple(args),
             dict(q_scale=q_scale, k_scale=k_scale, v_scale=v_scale, out=out, lse=lse, return_lse=return_lse,
                  lse_base=lse_base))
        return self._run(q, paged_kv_cache, args, q_scale, k_scale, v_scale, out, lse, return_lse, lse_base)

    def _run(self, q: torch.Tensor, paged_kv_cache: Any, args: tuple, q_scale: Any, k_scale: Any, v_scale: Any,
             out: Optional[torch.Tensor], lse: Optional[torch.Tensor], return_lse: bool, lse_base: str) -> Any:
        if lse_base not in ("log2", "ln"):
            raise ValueError(f"lse_base must be one of ('log2', 'ln'), got {lse_base!r}")
        k_cache, v_cache = paged_kv_cache
        _check_cached_qkv_data_type(q, k_cache, self._cached_q_data_type, self._cached_kv_data_type)
        if q.size(0) != self._qo_indptr_last:
            raise ValueError(f"q.shape[0] ({q.size(0)}) does not match qo_indptr[-1] ({self._qo_indptr_last}).")
        page_size = k_cache.shape[1] if self._kv_layout == "NHD" else k_cache.shape[2]
        sm_scale = self._sm_scale if self._sm_scale is not None else 1.0 / math.sqrt(q.size(-1))
        if self._backend != "cudnn":
            if q_scale is not None:
                sm_scale *= q_scale
            if k_scale is not None:
                sm_scale *= k_scale
        scale_v_scalar = 1.0
        if is_float8(q) and len(args) >= 3:  # prefill.py:4581: fp8 scale tensors from *args
            sm_scale *= float(args[0]) * float(args[1])
            scale_v_scalar = float(args[2])
        if return_lse:
            if lse is None:
                lse = torch.empty((q.size(0), q.size(1)), dtype=torch.float32, device=q.device)
            else:
                check_shape_dtype_device(lse, (q.size(0), q.size(1)), torch.float32, q.device, "lse")
        if out is None:
            out = torch.zeros(q.shape[:-1] + (v_cache.shape[-1],), dtype=self._cached_o_data_type, device=q.device)
        else:
            check_shape_dtype_device(out, q.shape[:-1] + (v_cache.shape[-1],), self._cached_o_data_type, q.device,
                                     "out")
        if self._custom_mask_buf is not None:
            mask_mode = CUSTOM
        else:
            mask_mode = CAUSAL if self._causal else NON_CAUSAL
        if mask_mode == CUSTOM and self._backend == "fa3" and not STATE.fork:  # a held fa3 meets a mask (the
            raise RuntimeError("Check failed: (status == cudaSuccess) is false: BatchPrefillWithPagedKVCacheSM90Run "
                               "failed with error: operation not supported")  # __init__ docstring; seen on the H200
        layout, window, cap, batch = self._kv_layout, self._window_left, self._logits_soft_cap, self._batch_size

        def kv_index(t: torch.Tensor, b: int, kv: int) -> torch.Tensor:
            ip = self._paged_kv_indptr_buf.cpu().tolist()
            pages = self._paged_kv_indices_buf[ip[b]:ip[b + 1]].cpu().tolist()
            return _kv_tokens(t, layout, pages, kv)

        def launch(sm_scale: float = sm_scale, mask_mode: int = mask_mode, lse: Optional[torch.Tensor] = lse) -> None:
            kv_lens = get_seq_lens(self._paged_kv_indptr_buf[: batch + 1].cpu(),
                                   self._paged_kv_last_page_len_buf[:batch].cpu(), page_size).tolist()
            _batch_kernel(q=q, k=k_cache, v=v_cache, out=out, lse=lse if return_lse else None,
                          qo_indptr=self._qo_indptr_buf, kv_lens=kv_lens, kv_index=kv_index, layout=layout,
                          mask_mode=mask_mode, window_left=window, cap=cap, sm_scale=sm_scale,
                          custom_mask=self._custom_mask_buf, mask_indptr=self._mask_indptr_buf, batch=batch,
                          v_scale_scalar=scale_v_scalar)
            if v_scale is not None and not (isinstance(v_scale, float) and v_scale == 1.0):
                out.mul_(v_scale)  # prefill.py:4631
            if return_lse:
                _finish_lse(lse, "log2" if self._backend == "cudnn" else lse_base)

        _launch(launch)
        return (out, lse) if return_lse else out

    run_return_lse = partialmethod(run, return_lse=True)


# ---- ragged prefill ---------------------------------------------------------------------------

class BatchPrefillWithRaggedKVCacheWrapper:
    def __init__(
        self,
        float_workspace_buffer: torch.Tensor,
        kv_layout: str = "NHD",
        use_cuda_graph: bool = False,
        qo_indptr_buf: Optional[torch.Tensor] = None,
        kv_indptr_buf: Optional[torch.Tensor] = None,
        custom_mask_buf: Optional[torch.Tensor] = None,
        mask_indptr_buf: Optional[torch.Tensor] = None,
        backend: str = "auto",
        jit_args: Optional[List[Any]] = None,
        jit_kwargs: Optional[Dict[str, Any]] = None,
        variant_owns_mask: bool = False,
    ) -> None:
        _log("ragged", "__init__", self, (float_workspace_buffer, kv_layout),
             dict(use_cuda_graph=use_cuda_graph, qo_indptr_buf=qo_indptr_buf, kv_indptr_buf=kv_indptr_buf,
                  custom_mask_buf=custom_mask_buf, mask_indptr_buf=mask_indptr_buf, backend=backend))
        STATE.wrappers.append(self)
        self._kv_layout = kv_layout
        self.device = float_workspace_buffer.device
        self._use_cuda_graph = use_cuda_graph
        if use_cuda_graph:
            if not torch.is_tensor(qo_indptr_buf) or not torch.is_tensor(kv_indptr_buf):
                raise ValueError("qo_indptr_buf should be a torch.Tensor in cuda graph mode")
            self._fixed_batch_size = len(qo_indptr_buf) - 1
        self._qo_indptr_buf = qo_indptr_buf
        self._kv_indptr_buf = kv_indptr_buf
        self._custom_mask_buf = custom_mask_buf
        self._mask_indptr_buf = mask_indptr_buf
        self._max_total_num_rows: Optional[int] = None
        self._requested_backend = backend
        self._backend = backend
        self._init_fork(backend)

    def _init_fork(self, backend: str) -> None:
        pass

    @property
    def is_cuda_graph_enabled(self) -> bool:
        return self._use_cuda_graph

    def plan(
        self,
        qo_indptr: torch.Tensor,
        kv_indptr: torch.Tensor,
        num_qo_heads: int,
        num_kv_heads: int,
        head_dim_qk: int,
        head_dim_vo: Optional[int] = None,
        custom_mask: Optional[torch.Tensor] = None,
        packed_custom_mask: Optional[torch.Tensor] = None,
        causal: bool = False,
        pos_encoding_mode: str = "NONE",
        use_fp16_qk_reduction: bool = False,
        window_left: int = -1,
        logits_soft_cap: Optional[float] = None,
        sm_scale: Optional[float] = None,
        rope_scale: Optional[float] = None,
        rope_theta: Optional[float] = None,
        q_data_type: Union[str, torch.dtype] = "float16",
        kv_data_type: Optional[Union[str, torch.dtype]] = None,
        o_data_type: Optional[Union[str, torch.dtype]] = None,
        non_blocking: bool = True,
        prefix_len_ptr: Optional[torch.Tensor] = None,
        token_pos_in_items_ptr: Optional[torch.Tensor] = None,
        token_pos_in_items_len: int = 0,
        max_item_len_ptr: Optional[torch.Tensor] = None,
        fixed_split_size: Optional[int] = None,
        disable_split_kv: bool = False,
        seq_lens: Optional[torch.Tensor] = None,
        seq_lens_q: Optional[torch.Tensor] = None,
        max_token_per_sequence: Optional[int] = None,
        max_sequence_kv: Optional[int] = None,
        v_indptr: Optional[torch.Tensor] = None,
        o_indptr: Optional[torch.Tensor] = None,
        uniform_q_len: Optional[int] = None,
    ) -> None:
        _log("ragged", "plan", self, (qo_indptr, kv_indptr, num_qo_heads, num_kv_heads, head_dim_qk),
             dict(head_dim_vo=head_dim_vo, custom_mask=custom_mask, packed_custom_mask=packed_custom_mask,
                  causal=causal, sm_scale=sm_scale, window_left=window_left, logits_soft_cap=logits_soft_cap,
                  q_data_type=q_data_type, kv_data_type=kv_data_type, o_data_type=o_data_type))
        q_data_type = canonicalize_torch_dtype(q_data_type)
        kv_data_type = canonicalize_torch_dtype(kv_data_type) if kv_data_type is not None else q_data_type
        o_data_type = canonicalize_torch_dtype(o_data_type) if o_data_type is not None else q_data_type
        if head_dim_vo is None:
            head_dim_vo = head_dim_qk
        if logits_soft_cap is None:
            logits_soft_cap = 0.0
        batch_size = len(qo_indptr) - 1
        if custom_mask is not None or packed_custom_mask is not None:
            mask_indptr = _compute_mask_indptr(qo_indptr, kv_indptr)
        if packed_custom_mask is None and custom_mask is not None:
            packed_custom_mask, mask_indptr = segment_packbits(custom_mask.contiguous().view(-1),
                                                               mask_indptr.to(custom_mask.device), bitorder="little")
        qo_indptr_host = qo_indptr.to("cpu")
        kv_indptr_host = kv_indptr.to("cpu")
        total_num_rows = int(qo_indptr_host[-1])
        self._qo_indptr_last = total_num_rows
        if self.is_cuda_graph_enabled:
            if self._max_total_num_rows is None:
                self._max_total_num_rows = total_num_rows
            elif total_num_rows > self._max_total_num_rows:
                raise ValueError(f"The total number of rows in qo_indptr {total_num_rows} in cuda graph mode cannot "
                                 f"exceed the number of rows set during initialization {self._max_total_num_rows}.")
            if batch_size != self._fixed_batch_size:
                raise ValueError("The batch size should be fixed in cudagraph mode")
            self._qo_indptr_buf.copy_(qo_indptr)
            self._kv_indptr_buf.copy_(kv_indptr)
            if packed_custom_mask is not None:
                if not torch.is_tensor(self._custom_mask_buf):
                    raise ValueError("custom_mask_buf must be initialized with a torch.Tensor in cuda graph mode if "
                                     "we use custom mask in attention computation.")
                self._custom_mask_buf[: len(packed_custom_mask)] = packed_custom_mask
                self._mask_indptr_buf.copy_(mask_indptr)
        else:
            self._qo_indptr_buf = qo_indptr.to(self.device)
            self._kv_indptr_buf = kv_indptr.to(self.device)
            if packed_custom_mask is not None:  # no else: a stale mask survives (prefill.py:5296)
                self._custom_mask_buf = packed_custom_mask.to(self.device)
                self._mask_indptr_buf = mask_indptr.to(self.device)
        self._cached_q_data_type = q_data_type
        self._cached_kv_data_type = kv_data_type
        self._cached_o_data_type = o_data_type
        kv_len_arr = kv_indptr_host[1:] - kv_indptr_host[:-1]
        int(kv_len_arr.max().item())  # raises on an empty batch, as the real plan() does
        self._resolve(q_data_type, kv_data_type, head_dim_qk, head_dim_vo)
        self._batch_size = batch_size
        self._causal = causal
        self._window_left = window_left
        self._logits_soft_cap = logits_soft_cap
        self._sm_scale = sm_scale

    def _resolve(self, q_data_type: torch.dtype, kv_data_type: torch.dtype, head_dim_qk: int, head_dim_vo: int) -> None:
        if self._requested_backend == "auto":  # every plan: prefill.py:5527-5528
            self._backend = determine_attention_backend(self.device, 0, False, self._custom_mask_buf is not None,
                                                        q_data_type, kv_data_type, head_dim_qk=head_dim_qk,
                                                        head_dim_vo=head_dim_vo)

    def run(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        *args,
        q_scale: Optional[float] = None,
        k_scale: Optional[float] = None,
        v_scale: Optional[float] = None,
        o_scale: Optional[float] = None,
        out: Optional[torch.Tensor] = None,
        lse: Optional[torch.Tensor] = None,
        return_lse: bool = False,
        lse_base: str = "log2",
        lse_layout: str = "NH",
        enable_pdl: Optional[bool] = None,
        kv_cache_sf: Optional[Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]] = None,
    ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        _log("ragged", "run", self, (q, k, v) + tuple(args),
             dict(q_scale=q_scale, k_scale=k_scale, v_scale=v_scale, out=out, lse=lse, return_lse=return_lse,
                  lse_base=lse_base))
        if lse_base not in ("log2", "ln"):
            raise ValueError(f"lse_base must be one of ('log2', 'ln'), got {lse_base!r}")
        _check_cached_qkv_data_type(q, k, self._cached_q_data_type, self._cached_kv_data_type)
        if q.size(0) != self._qo_indptr_last:
            raise ValueError(f"q.shape[0] ({q.size(0)}) does not match qo_indptr[-1] ({self._qo_indptr_last}).")
        sm_scale = self._sm_scale if self._sm_scale is not None else 1.0 / math.sqrt(q.size(-1))
        apply_kv_scales = self._backend in ("fa2", "fa3") and is_float8(k) and not is_float8(q)  # prefill.py:5999
        if apply_kv_scales and k_scale is not None:
            sm_scale *= k_scale
        scale_v_scalar = 1.0
        if is_float8(q) and len(args) >= 3:  # prefill.py:6461: scale_q, scale_k, scale_v
            sm_scale *= float(args[0]) * float(args[1])
            scale_v_scalar = float(args[2])
        if return_lse:
            if lse is None:
                lse = torch.empty((q.size(0), q.size(1)), dtype=torch.float32, device=q.device)
            else:
                check_shape_dtype_device(lse, (q.size(0), q.size(1)), torch.float32, q.device, "lse")
        if out is None:
            out = torch.empty(q.shape[:-1] + (v.shape[-1],), dtype=self._cached_o_data_type, device=q.device)
        else:
            check_shape_dtype_device(out, q.shape[:-1] + (v.shape[-1],), self._cached_o_data_type, q.device, "out")
        mask_mode = CUSTOM if self._custom_mask_buf is not None else (CAUSAL if self._causal else NON_CAUSAL)
        layout, window, cap, batch = self._kv_layout, self._window_left, self._logits_soft_cap, self._batch_size

        def kv_index(t: torch.Tensor, b: int, kv: int) -> torch.Tensor:
            ip = self._kv_indptr_buf.cpu().tolist()
            s = ip[b]
            return t[s:s + kv] if layout == "NHD" else t[:, s:s + kv].transpose(0, 1)

        def launch(sm_scale: float = sm_scale, mask_mode: int = mask_mode, lse: Optional[torch.Tensor] = lse) -> None:
            ip = self._kv_indptr_buf.cpu().tolist()
            kv_lens = [ip[b + 1] - ip[b] for b in range(batch)]
            _batch_kernel(q=q, k=k, v=v, out=out, lse=lse if return_lse else None, qo_indptr=self._qo_indptr_buf,
                          kv_lens=kv_lens, kv_index=kv_index, layout=layout, mask_mode=mask_mode,
                          window_left=window, cap=cap, sm_scale=sm_scale, custom_mask=self._custom_mask_buf,
                          mask_indptr=self._mask_indptr_buf, batch=batch, v_scale_scalar=scale_v_scalar)
            if apply_kv_scales and v_scale is not None and not (isinstance(v_scale, float) and v_scale == 1.0):
                out.mul_(v_scale)  # prefill.py:6469
            if return_lse:
                _finish_lse(lse, lse_base)

        _launch(launch)
        return (out, lse) if return_lse else out

    run_return_lse = partialmethod(run, return_lse=True)


# ---- decode -----------------------------------------------------------------------------------

class BatchDecodeWithPagedKVCacheWrapper:
    def __init__(
        self,
        float_workspace_buffer: torch.Tensor,
        kv_layout: str = "NHD",
        use_cuda_graph: bool = False,
        use_tensor_cores: bool = False,
        paged_kv_indptr_buffer: Optional[torch.Tensor] = None,
        paged_kv_indices_buffer: Optional[torch.Tensor] = None,
        paged_kv_last_page_len_buffer: Optional[torch.Tensor] = None,
        backend: str = "auto",
        jit_args: Optional[List[Any]] = None,
    ) -> None:
        _log("decode", "__init__", self, (float_workspace_buffer, kv_layout),
             dict(use_cuda_graph=use_cuda_graph, use_tensor_cores=use_tensor_cores,
                  paged_kv_indptr_buffer=paged_kv_indptr_buffer, paged_kv_indices_buffer=paged_kv_indices_buffer,
                  paged_kv_last_page_len_buffer=paged_kv_last_page_len_buffer, backend=backend))
        STATE.wrappers.append(self)
        self._kv_layout = kv_layout
        self.device = float_workspace_buffer.device
        self._use_cuda_graph = use_cuda_graph
        if use_cuda_graph:
            for name, buf in (("paged_kv_indptr_buffer", paged_kv_indptr_buffer),
                              ("paged_kv_indices_buffer", paged_kv_indices_buffer),
                              ("paged_kv_last_page_len_buffer", paged_kv_last_page_len_buffer)):
                if not torch.is_tensor(buf):
                    raise ValueError(f"{name} should be a torch.Tensor in cudagraph mode")
            self._fixed_batch_size = len(paged_kv_last_page_len_buffer)
        self._paged_kv_indptr_buf = paged_kv_indptr_buffer
        self._paged_kv_indices_buf = paged_kv_indices_buffer
        self._paged_kv_last_page_len_buf = paged_kv_last_page_len_buffer
        self._use_tensor_cores = use_tensor_cores or backend in ("trtllm-gen", "cute-dsl")
        self._backend = backend
        self._requested_backend = backend
        self._init_fork(backend)

    def _init_fork(self, backend: str) -> None:
        pass

    @property
    def use_tensor_cores(self) -> bool:
        return self._use_tensor_cores

    @property
    def resolved_backend(self) -> str:
        if self._backend == "auto" and not self._use_tensor_cores:
            return "fa2"
        return self._backend

    @property
    def is_cuda_graph_enabled(self) -> bool:
        return self._use_cuda_graph

    def plan(
        self,
        indptr: torch.Tensor,
        indices: torch.Tensor,
        last_page_len: torch.Tensor,
        num_qo_heads: int,
        num_kv_heads: int,
        head_dim: int,
        page_size: int,
        *deprecated_positional_args: Any,
        **kwargs: Any,
    ) -> None:
        _log("decode", "plan", self, (indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size)
             + tuple(deprecated_positional_args), kwargs)
        if deprecated_positional_args:
            raise NotImplementedError("the fake takes plan() options by keyword only")
        return self._plan_impl(indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size,
                               **kwargs)

    def _plan_impl(
        self,
        indptr: torch.Tensor,
        indices: torch.Tensor,
        last_page_len: torch.Tensor,
        num_qo_heads: int,
        num_kv_heads: int,
        head_dim: int,
        page_size: int,
        *,
        pos_encoding_mode: str = "NONE",
        window_left: int = -1,
        window_right: int = 0,
        logits_soft_cap: Optional[float] = None,
        q_data_type: Optional[Union[str, torch.dtype]] = "float16",
        kv_data_type: Optional[Union[str, torch.dtype]] = None,
        o_data_type: Optional[Union[str, torch.dtype]] = None,
        data_type: Optional[Union[str, torch.dtype]] = None,
        sm_scale: Optional[float] = None,
        rope_scale: Optional[float] = None,
        rope_theta: Optional[float] = None,
        non_blocking: bool = True,
        block_tables: Optional[torch.Tensor] = None,
        seq_lens: Optional[torch.Tensor] = None,
        fixed_split_size: Optional[int] = None,
        disable_split_kv: bool = False,
        q_len_per_req: int = 1,
        is_causal: Optional[bool] = None,
    ) -> None:
        batch_size = len(last_page_len)
        if logits_soft_cap is None:
            logits_soft_cap = 0.0
        q_data_type = canonicalize_torch_dtype(q_data_type)
        kv_data_type = canonicalize_torch_dtype(kv_data_type) if kv_data_type is not None else q_data_type
        o_data_type = canonicalize_torch_dtype(o_data_type) if o_data_type is not None else q_data_type
        if self.is_cuda_graph_enabled:
            if batch_size != self._fixed_batch_size:
                raise ValueError("The batch size should be fixed in cudagraph mode")
            if len(indices) > len(self._paged_kv_indices_buf):
                raise ValueError("The size of indices should be less than or equal to the allocated buffer")
            self._paged_kv_indptr_buf.copy_(indptr)
            self._paged_kv_last_page_len_buf.copy_(last_page_len)
            self._paged_kv_indices_buf[: len(indices)].copy_(indices)
        else:
            self._paged_kv_indptr_buf = indptr.to(self.device)
            self._paged_kv_indices_buf = indices.to(self.device)
            self._paged_kv_last_page_len_buf = last_page_len.to(self.device)
        self._cached_q_data_type = q_data_type
        self._cached_kv_data_type = kv_data_type
        self._cached_o_data_type = o_data_type
        self._batch_size = batch_size
        if self._use_tensor_cores and batch_size == 0 and not STATE.fork:  # decode.py:2371 kv_lens_arr_host.max()
            raise RuntimeError("max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                               "reduction dim with the 'dim' argument.")
        if self._use_tensor_cores and self._backend == "auto":
            if {torch.float8_e4m3fn, torch.float8_e5m2} & {q_data_type, kv_data_type}:
                self._backend = determine_attention_backend(self.device, 0, False, False, q_data_type, kv_data_type,
                                                            head_dim_qk=head_dim, head_dim_vo=head_dim)
            else:
                self._backend = "fa2"
        self._resolve_fork()
        self._page_size = page_size
        self._window_left = window_left
        self._logits_soft_cap = logits_soft_cap
        self._sm_scale = sm_scale

    def _resolve_fork(self) -> None:
        pass

    def run(
        self,
        q: torch.Tensor,
        paged_kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
        *args,
        q_scale: Optional[float] = None,
        k_scale: Optional[float] = None,
        v_scale: Optional[float] = None,
        out: Optional[torch.Tensor] = None,
        lse: Optional[torch.Tensor] = None,
        return_lse: bool = False,
        enable_pdl: Optional[bool] = None,
        window_left: Optional[int] = None,
        sinks: Optional[torch.Tensor] = None,
        q_len_per_req: Optional[int] = None,
        skip_softmax_threshold_scale_factor: Optional[float] = None,
        kv_cache_sf: Optional[Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]] = None,
    ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        _log("decode", "run", self, (q, paged_kv_cache) + tuple(args),
             dict(q_scale=q_scale, k_scale=k_scale, v_scale=v_scale, out=out, lse=lse, return_lse=return_lse))
        k_cache, v_cache = paged_kv_cache
        _check_cached_qkv_data_type(q, k_cache, self._cached_q_data_type, self._cached_kv_data_type)
        if q_len_per_req is None and not STATE.fork:  # decode.py:2835, :2855 infer it, dividing by the batch size
            q.size(0) // len(self._paged_kv_last_page_len_buf)  # ZeroDivisionError on an empty batch, as upstream
        sm_scale = self._sm_scale if self._sm_scale is not None else 1.0 / math.sqrt(q.shape[-1])
        if q_scale is not None:
            sm_scale *= q_scale  # decode.py:2908
        if k_scale is not None:
            sm_scale *= k_scale
        if return_lse:
            if lse is None:
                lse = torch.empty((q.size(0), q.size(1)), dtype=torch.float32, device=q.device)
            else:
                check_shape_dtype_device(lse, (q.size(0), q.size(1)), torch.float32, q.device, "lse")
        if out is None:
            out = torch.empty(q.shape, dtype=self._cached_o_data_type, device=q.device)
        else:
            check_shape_dtype_device(out, q.shape, self._cached_o_data_type, q.device, "out")
        layout, window, cap, batch, page_size = (self._kv_layout, self._window_left, self._logits_soft_cap,
                                                 self._batch_size, self._page_size)

        def kv_index(t: torch.Tensor, b: int, kv: int) -> torch.Tensor:
            ip = self._paged_kv_indptr_buf.cpu().tolist()
            pages = self._paged_kv_indices_buf[ip[b]:ip[b + 1]].cpu().tolist()
            return _kv_tokens(t, layout, pages, kv)

        def launch(sm_scale: float = sm_scale, lse: Optional[torch.Tensor] = lse) -> None:
            kv_lens = get_seq_lens(self._paged_kv_indptr_buf[: batch + 1].cpu(),
                                   self._paged_kv_last_page_len_buf[:batch].cpu(), page_size).tolist()
            qo_indptr = torch.arange(batch + 1, dtype=torch.int32)
            _batch_kernel(q=q, k=k_cache, v=v_cache, out=out, lse=lse if return_lse else None, qo_indptr=qo_indptr,
                          kv_lens=kv_lens, kv_index=kv_index, layout=layout, mask_mode=NON_CAUSAL,
                          window_left=window, cap=cap, sm_scale=sm_scale, custom_mask=None, mask_indptr=None,
                          batch=batch)
            if v_scale is not None and not (isinstance(v_scale, float) and v_scale == 1.0):
                out.mul_(v_scale)  # decode.py:3318

        _launch(launch)
        return (out, lse) if return_lse else out


# ---- single prefill ---------------------------------------------------------------------------

def get_single_prefill_module(backend: str, *args: Any) -> Any:
    STATE.single_modules.append(backend)
    return types.SimpleNamespace(backend=backend, args=args)


def single_prefill_with_kv_cache(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale_q: Optional[torch.Tensor] = None,
    scale_k: Optional[torch.Tensor] = None,
    scale_v: Optional[torch.Tensor] = None,
    o_dtype: Optional[torch.dtype] = None,
    custom_mask: Optional[torch.Tensor] = None,
    packed_custom_mask: Optional[torch.Tensor] = None,
    causal: bool = False,
    kv_layout: str = "NHD",
    pos_encoding_mode: str = "NONE",
    use_fp16_qk_reduction: bool = False,
    sm_scale: Optional[float] = None,
    window_left: int = -1,
    logits_soft_cap: Optional[float] = None,
    rope_scale: Optional[float] = None,
    rope_theta: Optional[float] = None,
    backend: str = "auto",
    return_lse: bool = False,
    kv_cache_sf: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
    k_scale: Optional[float] = None,
    v_scale: Optional[float] = None,
) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    _log("single", "call", None, (q, k, v),
         dict(scale_q=scale_q, scale_k=scale_k, scale_v=scale_v, o_dtype=o_dtype, custom_mask=custom_mask,
              packed_custom_mask=packed_custom_mask, causal=causal, kv_layout=kv_layout, sm_scale=sm_scale,
              window_left=window_left, logits_soft_cap=logits_soft_cap, backend=backend, return_lse=return_lse,
              k_scale=k_scale, v_scale=v_scale))
    if logits_soft_cap is None:
        logits_soft_cap = 0.0
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(q.size(-1))
    if custom_mask is not None and packed_custom_mask is None:
        packed_custom_mask = packbits(custom_mask.contiguous().view(-1), bitorder="little")
    mask_mode = CUSTOM if packed_custom_mask is not None else (CAUSAL if causal else NON_CAUSAL)
    lse = torch.empty((q.size(0), q.size(1)), dtype=torch.float32, device=q.device) if return_lse else None
    if is_float8(q):
        assert window_left == -1
        assert q.dtype == k.dtype == v.dtype
        if scale_q is None:
            scale_q = torch.ones(q.shape[1], dtype=torch.float32)
        if scale_k is None:
            scale_k = torch.ones(k.shape[1] if kv_layout == "NHD" else k.shape[0], dtype=torch.float32)
        if scale_v is None:
            scale_v = torch.ones(v.shape[1] if kv_layout == "NHD" else v.shape[0], dtype=torch.float32)
    if backend == "auto":
        backend = determine_attention_backend(q.device, 0, use_fp16_qk_reduction, packed_custom_mask is not None,
                                              q.dtype, k.dtype, head_dim_qk=q.shape[-1], head_dim_vo=v.shape[-1])
    if k_scale is not None:
        sm_scale *= k_scale
    if o_dtype is None:
        o_dtype = q.dtype
    out = torch.empty(q.shape[:-1] + (v.shape[-1],), dtype=o_dtype, device=q.device)
    get_single_prefill_module(backend, q.dtype, k.dtype, out.dtype, q.shape[-1], v.shape[-1])
    kk = k if kv_layout == "NHD" else k.transpose(0, 1)
    vv = v if kv_layout == "NHD" else v.transpose(0, 1)
    qo, kv = q.shape[0], kk.shape[0]
    custom = _bits(packed_custom_mask, 0, qo * kv) if mask_mode == CUSTOM else None
    keep = _keep(qo, kv, mask_mode, window_left, custom)
    q_head, v_head = None, None
    if is_float8(q):
        g = q.shape[1] // kk.shape[1]
        q_head = scale_q.float() * scale_k.float().repeat_interleave(g)
        v_head = scale_v.float().repeat_interleave(g)
    o, l2 = _attend(q, kk, vv, keep, sm_scale, logits_soft_cap, q_head, v_head)
    _store(out, lse, 0, o, l2)
    if v_scale is not None and not (isinstance(v_scale, float) and v_scale == 1.0):
        out *= v_scale
    return (out, lse) if return_lse else out


# ---- the ROCm fork ----------------------------------------------------------------------------

class _ForkMixin:
    """backend="aiter", backend_fallback_reason, re-resolution on every eager plan (fork MAIN)."""

    def _init_fork(self, backend: str) -> None:
        if backend not in ("fa2", "aiter", "auto"):
            raise ValueError(f"backend must be one of 'fa2', 'aiter', 'auto'; got {backend!r}")
        self._backend_requested = backend
        self._backend_fallback_reason: Optional[str] = None

    @property
    def backend(self) -> str:
        return self._backend

    @property
    def backend_fallback_reason(self) -> Optional[str]:
        return self._backend_fallback_reason

    def _resolve(self, q_data_type: torch.dtype, kv_data_type: torch.dtype, head_dim_qk: int, head_dim_vo: int) -> None:
        if self._backend_requested == "auto" and (self._backend == "auto" or not self._use_cuda_graph):
            self._backend, self._backend_fallback_reason = _fork_select(
                self._custom_mask_buf is not None, self._kv_layout, q_data_type, kv_data_type)


class ForkBatchPrefillWithPagedKVCacheWrapper(_ForkMixin, BatchPrefillWithPagedKVCacheWrapper):
    def run(
        self,
        q: torch.Tensor,
        paged_kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
        *args,
        q_scale: Optional[float] = None,
        k_scale: Optional[float] = None,
        v_scale: Optional[float] = None,
        out: Optional[torch.Tensor] = None,
        lse: Optional[torch.Tensor] = None,
        return_lse: bool = False,
        enable_pdl: Optional[bool] = None,
        window_left: Optional[int] = None,
        sinks: Optional[torch.Tensor] = None,
        partial_state: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
        kv_cache_sf: Optional[torch.Tensor] = None,
        skip_softmax_threshold_scale_factor: Optional[float] = None,
        use_fp16_softmax: Optional[bool] = None,
        uses_spcompress: Optional[bool] = None,
        scale_q: Optional[torch.Tensor] = None,
        scale_k: Optional[torch.Tensor] = None,
        scale_v: Optional[torch.Tensor] = None,
    ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        _log("paged", "run", self, (q, paged_kv_cache) + tuple(args),
             dict(q_scale=q_scale, k_scale=k_scale, v_scale=v_scale, out=out, lse=lse, return_lse=return_lse,
                  scale_q=scale_q, scale_k=scale_k, scale_v=scale_v))
        if is_float8(q) and any(s is not None for s in (q_scale, k_scale, v_scale)):
            raise ValueError("q_scale/k_scale/v_scale cannot be combined with an fp8 query: ...")
        if is_float8(q) and (return_lse or lse is not None):
            raise NotImplementedError("fp8 prefill cannot produce LSE: ...")
        if self._backend == "fa2" and any(s is not None for s in (scale_q, scale_k, scale_v)):
            raise NotImplementedError("scale_q/scale_k/scale_v are fp8 descales honoured only by the AITER paged "
                                      f"route; this call resolved to fa2, which would ignore them "
                                      f"({self._backend_fallback_reason}).")
        if scale_q is not None:
            q_scale, k_scale, v_scale = float(scale_q[0]), float(scale_k[0]), float(scale_v[0])
        return self._run(q, paged_kv_cache, args, q_scale, k_scale, v_scale, out, lse, return_lse, "log2")


class ForkBatchPrefillWithRaggedKVCacheWrapper(_ForkMixin, BatchPrefillWithRaggedKVCacheWrapper):
    pass


class ForkBatchDecodeWithPagedKVCacheWrapper(BatchDecodeWithPagedKVCacheWrapper):
    """Fork decode @05005763: sticky resolution while _backend == "auto"; no resolved_backend property."""

    resolved_backend = None  # type: ignore[assignment]  # the fork's decode has no such property

    def _init_fork(self, backend: str) -> None:
        self._backend_fallback_reason: Optional[str] = None

    @property
    def backend_fallback_reason(self) -> Optional[str]:
        return self._backend_fallback_reason

    def _resolve_fork(self) -> None:
        if self._backend == "auto":
            self._backend, self._backend_fallback_reason = (
                ("aiter", None) if STATE.aiter_ok else ("fa2", "aiter package not installed"))


# ---- installation -----------------------------------------------------------------------------

def _module(name: str, **attrs: Any) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    m.__dict__.update(attrs)
    return m


def install(monkeypatch: Any, *, fork: bool = False, sm90: bool = True, cudnn: bool = False,
            aiter_ok: bool = True) -> types.ModuleType:
    """Put the fake into sys.modules (undone by monkeypatch) and reset STATE; returns the package."""
    global STATE
    STATE = State(fork=fork, sm90=sm90, cudnn=cudnn, aiter_ok=aiter_ok)
    paged = ForkBatchPrefillWithPagedKVCacheWrapper if fork else BatchPrefillWithPagedKVCacheWrapper
    ragged = ForkBatchPrefillWithRaggedKVCacheWrapper if fork else BatchPrefillWithRaggedKVCacheWrapper
    decode = ForkBatchDecodeWithPagedKVCacheWrapper if fork else BatchDecodeWithPagedKVCacheWrapper
    utils = _module("flashinfer.utils", determine_attention_backend=determine_attention_backend,
                    is_sm90a_supported=is_sm90a_supported, is_fa3_backend_supported=is_fa3_backend_supported)
    quant = _module("flashinfer.quantization", packbits=packbits, segment_packbits=segment_packbits)
    prefill = _module("flashinfer.prefill", BatchPrefillWithPagedKVCacheWrapper=paged,
                      BatchPrefillWithRaggedKVCacheWrapper=ragged,
                      single_prefill_with_kv_cache=single_prefill_with_kv_cache,
                      get_single_prefill_module=get_single_prefill_module)
    dec = _module("flashinfer.decode", BatchDecodeWithPagedKVCacheWrapper=decode)
    cud = _module("flashinfer.cudnn")
    cud_prefill = _module("flashinfer.cudnn.prefill", CUDNN_AVAILABLE=cudnn)
    pkg = _module("flashinfer", __version__=VERSION, BatchPrefillWithPagedKVCacheWrapper=paged,
                  BatchPrefillWithRaggedKVCacheWrapper=ragged, BatchDecodeWithPagedKVCacheWrapper=decode,
                  single_prefill_with_kv_cache=single_prefill_with_kv_cache, packbits=packbits,
                  segment_packbits=segment_packbits, utils=utils, prefill=prefill, decode=dec, quantization=quant,
                  cudnn=cud)
    mods = {"flashinfer": pkg, "flashinfer.utils": utils, "flashinfer.quantization": quant,
            "flashinfer.prefill": prefill, "flashinfer.decode": dec, "flashinfer.cudnn": cud,
            "flashinfer.cudnn.prefill": cud_prefill}
    if fork:
        def capability_reason(device: Any, op: str, backend: str) -> Optional[str]:
            return None if STATE.aiter_ok else f"aiter {op} requires an AMD gfx942/gfx950 device; got 'unknown'"

        mods["flashinfer.rocm"] = _module("flashinfer.rocm")
        mods["flashinfer.rocm.arch_caps"] = _module(
            "flashinfer.rocm.arch_caps", capability_reason=capability_reason,
            aiter_softcap_defect_arch=lambda arch: arch == "gfx950", _device_arch=lambda device: "gfx942")
        mods["flashinfer.rocm.prefill"] = _module("flashinfer.rocm.prefill",
                                                  _aiter_ops_importable=lambda: STATE.aiter_ok)
    for name, m in mods.items():
        monkeypatch.setitem(sys.modules, name, m)
    return pkg



@pytest.fixture
def fake(monkeypatch: Any) -> Any:
    """The fake installed as `flashinfer` for one test, with the adapter's library caches reset around it.

    Test modules take it with `from fake_flashinfer import fake  # noqa: F401`.
    """
    import kernels.flashinfer.lib as fl
    from kernels.flashinfer.variants import reset_seen

    install(monkeypatch)
    fl.lib_facts.cache_clear()
    reset_seen()
    yield sys.modules[__name__]
    fl.lib_facts.cache_clear()
