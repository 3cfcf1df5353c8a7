"""flashinfer.decode of the upstream model (a CPU stand-in of 0.7.2.post1): BatchDecodeWithPagedKVCacheWrapper.

`auto` resolves in plan() with tensor cores (fa2, or determine_attention_backend for fp8) and reads
as fa2 without; the empty-batch failures of the real wrapper are reproduced where the adapter meets them.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple, Union

import torch

from kernels.standins._launch import launch as _launch
from kernels.standins.upstream_flashinfer._run import _batch_kernel, _kv_tokens
from kernels.standins.upstream_flashinfer._state import STATE
from kernels.standins.upstream_flashinfer._state import log as _log
from kernels.standins.upstream_flashinfer.utils import (
    MaskMode,
    _check_cached_qkv_data_type,
    canonicalize_torch_dtype,
    check_shape_dtype_device,
    determine_attention_backend,
    get_seq_lens,
)

__attncheck_standin__ = "flashinfer-upstream"
NON_CAUSAL = MaskMode.NON_CAUSAL


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
        _log(
            "decode",
            "__init__",
            self,
            (float_workspace_buffer, kv_layout),
            dict(
                use_cuda_graph=use_cuda_graph,
                use_tensor_cores=use_tensor_cores,
                paged_kv_indptr_buffer=paged_kv_indptr_buffer,
                paged_kv_indices_buffer=paged_kv_indices_buffer,
                paged_kv_last_page_len_buffer=paged_kv_last_page_len_buffer,
                backend=backend,
            ),
        )
        STATE.wrappers.append(self)
        self._kv_layout = kv_layout
        self.device = float_workspace_buffer.device
        self._use_cuda_graph = use_cuda_graph
        if use_cuda_graph:
            for name, buf in (
                ("paged_kv_indptr_buffer", paged_kv_indptr_buffer),
                ("paged_kv_indices_buffer", paged_kv_indices_buffer),
                ("paged_kv_last_page_len_buffer", paged_kv_last_page_len_buffer),
            ):
                if not torch.is_tensor(buf):
                    raise ValueError(f"{name} should be a torch.Tensor in cudagraph mode")
            self._fixed_batch_size = len(paged_kv_last_page_len_buffer)
        self._paged_kv_indptr_buf = paged_kv_indptr_buffer
        self._paged_kv_indices_buf = paged_kv_indices_buffer
        self._paged_kv_last_page_len_buf = paged_kv_last_page_len_buffer
        self._use_tensor_cores = use_tensor_cores or backend in ("trtllm-gen", "cute-dsl")
        self._backend = backend
        self._requested_backend = backend

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
        _log(
            "decode",
            "plan",
            self,
            (indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size)
            + tuple(deprecated_positional_args),
            kwargs,
        )
        if deprecated_positional_args:
            raise NotImplementedError("the fake takes plan() options by keyword only")
        return self._plan_impl(
            indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size, **kwargs
        )

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
        if self._use_tensor_cores and batch_size == 0:  # decode.py:2371 kv_lens_arr_host.max()
            raise RuntimeError(
                "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                "reduction dim with the 'dim' argument."
            )
        if self._use_tensor_cores and self._backend == "auto":
            if {torch.float8_e4m3fn, torch.float8_e5m2} & {q_data_type, kv_data_type}:
                self._backend = determine_attention_backend(
                    self.device, 0, False, False, q_data_type, kv_data_type, head_dim_qk=head_dim, head_dim_vo=head_dim
                )
            else:
                self._backend = "fa2"
        self._page_size = page_size
        self._window_left = window_left
        self._logits_soft_cap = logits_soft_cap
        self._sm_scale = sm_scale

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
        _log(
            "decode",
            "run",
            self,
            (q, paged_kv_cache) + tuple(args),
            dict(q_scale=q_scale, k_scale=k_scale, v_scale=v_scale, out=out, lse=lse, return_lse=return_lse),
        )
        k_cache, v_cache = paged_kv_cache
        _check_cached_qkv_data_type(q, k_cache, self._cached_q_data_type, self._cached_kv_data_type)
        if q_len_per_req is None:  # decode.py:2835, :2855 infer it, dividing by the batch size
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
        layout, window, cap, batch, page_size = (
            self._kv_layout,
            self._window_left,
            self._logits_soft_cap,
            self._batch_size,
            self._page_size,
        )

        def kv_index(t: torch.Tensor, b: int, kv: int) -> torch.Tensor:
            ip = self._paged_kv_indptr_buf.cpu().tolist()
            pages = self._paged_kv_indices_buf[ip[b] : ip[b + 1]].cpu().tolist()
            return _kv_tokens(t, layout, pages, kv)

        def launch(sm_scale: float = sm_scale, lse: Optional[torch.Tensor] = lse) -> None:
            kv_lens = get_seq_lens(
                self._paged_kv_indptr_buf[: batch + 1].cpu(), self._paged_kv_last_page_len_buf[:batch].cpu(), page_size
            ).tolist()
            qo_indptr = torch.arange(batch + 1, dtype=torch.int32)
            _batch_kernel(
                q=q,
                k=k_cache,
                v=v_cache,
                out=out,
                lse=lse if return_lse else None,
                qo_indptr=qo_indptr,
                kv_lens=kv_lens,
                kv_index=kv_index,
                layout=layout,
                mask_mode=NON_CAUSAL,
                window_left=window,
                cap=cap,
                sm_scale=sm_scale,
                custom_mask=None,
                mask_indptr=None,
                batch=batch,
            )
            if v_scale is not None and not (isinstance(v_scale, float) and v_scale == 1.0):
                out.mul_(v_scale)  # decode.py:3318

        _launch(launch)
        return (out, lse) if return_lse else out
