"""flashinfer.prefill of the upstream model, a CPU stand-in of 0.7.2.post1: paged and ragged wrappers, single prefill.

Signatures and the Python-side behaviour the adapter depends on are upstream's (line numbers cite
prefill.py of 0.7.2.post1): where `auto` is resolved and stored (paged sticky, ragged every plan,
single inside the call), mask packing and MaskMode.CUSTOM iff a mask buffer is held (the ragged
wrapper keeps a stale one, as the real one does), the CUDA-graph constraints, fp8 scale folding.

A CUDA-graph wrapper keeps the custom_mask_buf/mask_indptr_buf it was built with: a plan without a mask
leaves them as they are (no raise, no clearing), so run() takes MaskMode.CUSTOM over a zeroed or stale
mask, and `auto` sees use_custom_mask -- as 0.7.2.post1 and 0.7.4 both do (cited where modelled).
"""

from __future__ import annotations

import math
import types
from functools import partialmethod
from typing import Any, Dict, List, Optional, Tuple, Union

import torch

from kernels.standins._launch import launch as _launch
from kernels.standins.upstream_flashinfer._run import (
    CUSTOM,
    _attend,
    _batch_kernel,
    _bits,
    _compute_mask_indptr,
    _compute_page_mask_indptr,
    _keep,
    _kv_tokens,
    _store,
)
from kernels.standins.upstream_flashinfer._state import STATE
from kernels.standins.upstream_flashinfer._state import log as _log
from kernels.standins.upstream_flashinfer.quantization import packbits, segment_packbits
from kernels.standins.upstream_flashinfer.utils import (
    MaskMode,
    _check_cached_qkv_data_type,
    _finish_lse,
    canonicalize_torch_dtype,
    check_shape_dtype_device,
    determine_attention_backend,
    get_seq_lens,
    is_float8,
)

__attncheck_standin__ = "flashinfer-upstream"
NON_CAUSAL, CAUSAL = MaskMode.NON_CAUSAL, MaskMode.CAUSAL


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
        _log(
            "paged",
            "__init__",
            self,
            (float_workspace_buffer, kv_layout),
            dict(
                use_cuda_graph=use_cuda_graph,
                qo_indptr_buf=qo_indptr_buf,
                paged_kv_indptr_buf=paged_kv_indptr_buf,
                paged_kv_indices_buf=paged_kv_indices_buf,
                paged_kv_last_page_len_buf=paged_kv_last_page_len_buf,
                custom_mask_buf=custom_mask_buf,
                mask_indptr_buf=mask_indptr_buf,
                backend=backend,
            ),
        )
        STATE.wrappers.append(self)
        self._kv_layout = kv_layout
        self.device = float_workspace_buffer.device
        self._use_cuda_graph = use_cuda_graph
        if use_cuda_graph:
            for name, buf in (
                ("qo_indptr_buf", qo_indptr_buf),
                ("paged_kv_indptr_buf", paged_kv_indptr_buf),
                ("paged_kv_indices_buf", paged_kv_indices_buf),
                ("paged_kv_last_page_len_buf", paged_kv_last_page_len_buf),
            ):
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
        _log(
            "paged",
            "plan",
            self,
            (
                qo_indptr,
                paged_kv_indptr,
                paged_kv_indices,
                paged_kv_last_page_len,
                num_qo_heads,
                num_kv_heads,
                head_dim_qk,
                page_size,
            ),
            dict(
                head_dim_vo=head_dim_vo,
                custom_mask=custom_mask,
                packed_custom_mask=packed_custom_mask,
                causal=causal,
                sm_scale=sm_scale,
                window_left=window_left,
                logits_soft_cap=logits_soft_cap,
                q_data_type=q_data_type,
                kv_data_type=kv_data_type,
                o_data_type=o_data_type,
            ),
        )
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
            packed_custom_mask, mask_indptr = segment_packbits(
                custom_mask.contiguous().view(-1), mask_indptr.to(custom_mask.device), bitorder="little"
            )
        qo_indptr_host = qo_indptr.to("cpu")
        total_num_rows = int(qo_indptr_host[-1])
        self._qo_indptr_last = total_num_rows
        self._max_q_len = (qo_indptr_host[1:] - qo_indptr_host[:-1]).max().item()  # raises on an empty batch
        self._page_size = page_size
        if self.is_cuda_graph_enabled:
            if self._max_total_num_rows is None:
                self._max_total_num_rows = total_num_rows
            elif total_num_rows > self._max_total_num_rows:
                raise ValueError(
                    f"The total number of rows in qo_indptr {total_num_rows} in cuda graph mode cannot "
                    f"exceed the number of rows set during initialization {self._max_total_num_rows}."
                )
            if batch_size != self._fixed_batch_size:
                raise ValueError(
                    "The batch size should be fixed during the lifecycle of the wrapper in cuda graph "
                    f"mode, the runtime batch size {batch_size} mismatches the batch size "
                    f"{self._fixed_batch_size}  set during initialization."
                )
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
            # Only a masked plan touches the mask buffers; an unmasked one keeps those __init__ gave, zeroed or
            # holding the last masked plan's bits (0.7.2 prefill.py:3509-3524, 0.7.4 :4068-4083: no else).
            if packed_custom_mask is not None:
                if not torch.is_tensor(self._custom_mask_buf):
                    raise ValueError(
                        "custom_mask_buf must be initialized with a torch.Tensor in cuda graph mode if "
                        "we use custom mask in attention computation."
                    )
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
            self._backend = determine_attention_backend(
                self.device,
                0,
                False,
                # the buffer, not the plan's mask (0.7.2 :3674): a graph wrapper built with custom_mask_buf
                # is masked for auto on every plan (0.7.4 :3821-3829 says so outright)
                self._custom_mask_buf is not None,
                q_data_type,
                kv_data_type,
                head_dim_qk=head_dim_qk,
                head_dim_vo=head_dim_vo,
            )

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
        _log(
            "paged",
            "run",
            self,
            (q, paged_kv_cache) + tuple(args),
            dict(
                q_scale=q_scale,
                k_scale=k_scale,
                v_scale=v_scale,
                out=out,
                lse=lse,
                return_lse=return_lse,
                lse_base=lse_base,
            ),
        )
        return self._run(q, paged_kv_cache, args, q_scale, k_scale, v_scale, out, lse, return_lse, lse_base)

    def _run(
        self,
        q: torch.Tensor,
        paged_kv_cache: Any,
        args: tuple,
        q_scale: Any,
        k_scale: Any,
        v_scale: Any,
        out: Optional[torch.Tensor],
        lse: Optional[torch.Tensor],
        return_lse: bool,
        lse_base: str,
    ) -> Any:
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
            check_shape_dtype_device(
                out, q.shape[:-1] + (v_cache.shape[-1],), self._cached_o_data_type, q.device, "out"
            )
        # CUSTOM iff a buffer is held (0.7.2 prefill.py:4382-4388, 0.7.4 :5112-5118): in graph mode that is the
        # __init__ buffer for every plan, so an unmasked plan reads a zeroed or stale mask and ignores causal.
        if self._custom_mask_buf is not None:
            mask_mode = CUSTOM
        else:
            mask_mode = CAUSAL if self._causal else NON_CAUSAL
        if mask_mode == CUSTOM and self._backend == "fa3":  # a held fa3 meets a mask (the
            raise RuntimeError(
                "Check failed: (status == cudaSuccess) is false: BatchPrefillWithPagedKVCacheSM90Run "
                "failed with error: operation not supported"
            )  # __init__ docstring; seen on the H200
        layout, window, cap, batch = self._kv_layout, self._window_left, self._logits_soft_cap, self._batch_size

        def kv_index(t: torch.Tensor, b: int, kv: int) -> torch.Tensor:
            ip = self._paged_kv_indptr_buf.cpu().tolist()
            pages = self._paged_kv_indices_buf[ip[b] : ip[b + 1]].cpu().tolist()
            return _kv_tokens(t, layout, pages, kv)

        def launch(sm_scale: float = sm_scale, mask_mode: int = mask_mode, lse: Optional[torch.Tensor] = lse) -> None:
            kv_lens = get_seq_lens(
                self._paged_kv_indptr_buf[: batch + 1].cpu(), self._paged_kv_last_page_len_buf[:batch].cpu(), page_size
            ).tolist()
            _batch_kernel(
                q=q,
                k=k_cache,
                v=v_cache,
                out=out,
                lse=lse if return_lse else None,
                qo_indptr=self._qo_indptr_buf,
                kv_lens=kv_lens,
                kv_index=kv_index,
                layout=layout,
                mask_mode=mask_mode,
                window_left=window,
                cap=cap,
                sm_scale=sm_scale,
                custom_mask=self._custom_mask_buf,
                mask_indptr=self._mask_indptr_buf,
                batch=batch,
                v_scale_scalar=scale_v_scalar,
            )
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
        _log(
            "ragged",
            "__init__",
            self,
            (float_workspace_buffer, kv_layout),
            dict(
                use_cuda_graph=use_cuda_graph,
                qo_indptr_buf=qo_indptr_buf,
                kv_indptr_buf=kv_indptr_buf,
                custom_mask_buf=custom_mask_buf,
                mask_indptr_buf=mask_indptr_buf,
                backend=backend,
            ),
        )
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
        _log(
            "ragged",
            "plan",
            self,
            (qo_indptr, kv_indptr, num_qo_heads, num_kv_heads, head_dim_qk),
            dict(
                head_dim_vo=head_dim_vo,
                custom_mask=custom_mask,
                packed_custom_mask=packed_custom_mask,
                causal=causal,
                sm_scale=sm_scale,
                window_left=window_left,
                logits_soft_cap=logits_soft_cap,
                q_data_type=q_data_type,
                kv_data_type=kv_data_type,
                o_data_type=o_data_type,
            ),
        )
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
            packed_custom_mask, mask_indptr = segment_packbits(
                custom_mask.contiguous().view(-1), mask_indptr.to(custom_mask.device), bitorder="little"
            )
        qo_indptr_host = qo_indptr.to("cpu")
        kv_indptr_host = kv_indptr.to("cpu")
        total_num_rows = int(qo_indptr_host[-1])
        self._qo_indptr_last = total_num_rows
        if self.is_cuda_graph_enabled:
            if self._max_total_num_rows is None:
                self._max_total_num_rows = total_num_rows
            elif total_num_rows > self._max_total_num_rows:
                raise ValueError(
                    f"The total number of rows in qo_indptr {total_num_rows} in cuda graph mode cannot "
                    f"exceed the number of rows set during initialization {self._max_total_num_rows}."
                )
            if batch_size != self._fixed_batch_size:
                raise ValueError("The batch size should be fixed in cudagraph mode")
            self._qo_indptr_buf.copy_(qo_indptr)
            self._kv_indptr_buf.copy_(kv_indptr)
            # As paged: an unmasked plan leaves the __init__ mask buffers as they are (0.7.2 prefill.py:5267-5277,
            # 0.7.4 :6099-6109; its __init__ says of them "they may not be used", 0.7.4 :5706-5707).
            if packed_custom_mask is not None:
                if not torch.is_tensor(self._custom_mask_buf):
                    raise ValueError(
                        "custom_mask_buf must be initialized with a torch.Tensor in cuda graph mode if "
                        "we use custom mask in attention computation."
                    )
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
            self._backend = determine_attention_backend(
                self.device,
                0,
                False,
                self._custom_mask_buf is not None,  # the buffer (0.7.2 :5532, 0.7.4 :6394), graph mode too
                q_data_type,
                kv_data_type,
                head_dim_qk=head_dim_qk,
                head_dim_vo=head_dim_vo,
            )

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
        _log(
            "ragged",
            "run",
            self,
            (q, k, v) + tuple(args),
            dict(
                q_scale=q_scale,
                k_scale=k_scale,
                v_scale=v_scale,
                out=out,
                lse=lse,
                return_lse=return_lse,
                lse_base=lse_base,
            ),
        )
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
        # CUSTOM iff a buffer is held (0.7.2 prefill.py:6405-6411, 0.7.4 :7423-7429), an unmasked graph plan too
        mask_mode = CUSTOM if self._custom_mask_buf is not None else (CAUSAL if self._causal else NON_CAUSAL)
        layout, window, cap, batch = self._kv_layout, self._window_left, self._logits_soft_cap, self._batch_size

        def kv_index(t: torch.Tensor, b: int, kv: int) -> torch.Tensor:
            ip = self._kv_indptr_buf.cpu().tolist()
            s = ip[b]
            return t[s : s + kv] if layout == "NHD" else t[:, s : s + kv].transpose(0, 1)

        def launch(sm_scale: float = sm_scale, mask_mode: int = mask_mode, lse: Optional[torch.Tensor] = lse) -> None:
            ip = self._kv_indptr_buf.cpu().tolist()
            kv_lens = [ip[b + 1] - ip[b] for b in range(batch)]
            _batch_kernel(
                q=q,
                k=k,
                v=v,
                out=out,
                lse=lse if return_lse else None,
                qo_indptr=self._qo_indptr_buf,
                kv_lens=kv_lens,
                kv_index=kv_index,
                layout=layout,
                mask_mode=mask_mode,
                window_left=window,
                cap=cap,
                sm_scale=sm_scale,
                custom_mask=self._custom_mask_buf,
                mask_indptr=self._mask_indptr_buf,
                batch=batch,
                v_scale_scalar=scale_v_scalar,
            )
            if apply_kv_scales and v_scale is not None and not (isinstance(v_scale, float) and v_scale == 1.0):
                out.mul_(v_scale)  # prefill.py:6469
            if return_lse:
                _finish_lse(lse, lse_base)

        _launch(launch)
        return (out, lse) if return_lse else out

    run_return_lse = partialmethod(run, return_lse=True)


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
    _log(
        "single",
        "call",
        None,
        (q, k, v),
        dict(
            scale_q=scale_q,
            scale_k=scale_k,
            scale_v=scale_v,
            o_dtype=o_dtype,
            custom_mask=custom_mask,
            packed_custom_mask=packed_custom_mask,
            causal=causal,
            kv_layout=kv_layout,
            sm_scale=sm_scale,
            window_left=window_left,
            logits_soft_cap=logits_soft_cap,
            backend=backend,
            return_lse=return_lse,
            k_scale=k_scale,
            v_scale=v_scale,
        ),
    )
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
        backend = determine_attention_backend(
            q.device,
            0,
            use_fp16_qk_reduction,
            packed_custom_mask is not None,
            q.dtype,
            k.dtype,
            head_dim_qk=q.shape[-1],
            head_dim_vo=v.shape[-1],
        )
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
