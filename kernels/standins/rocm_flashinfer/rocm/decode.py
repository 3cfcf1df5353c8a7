"""Stand-in for the ROCm fork's `flashinfer.rocm.decode` (@05005763), built from rocm_fork.md.

A CPU stand-in, never the library; plain-torch numerics for fa2 and aiter alike. From
tests/data/sources/rocm_fork.md (sN = section N, "rule N" = section 7):
  s1  BatchDecodeWithPagedKVCacheWrapper.__init__ / plan parameter names and order, max_seq_len
      validation (TypeError for a non-int or bool, ValueError "must be positive", ValueError
      "requires use_cuda_graph=True"), positional plan() options warn (DeprecationWarning),
      o_data_type equal to q's, window_right 0, q_len_per_req > 1 only with tensor cores;
      CUDAGraphBatchDecodeWithPagedKVCacheWrapper = the same wrapper with graph mode on.
  s4  resolution only while `_backend == "auto"` (sticky); tensor cores, or graph mode without
      max_seq_len -> fa2 silently (rules 28, 29); else the selector with op="batch_decode", no
      mask, no lengths (rule 33); a failed `_aiter_pa_v1_available` bootstrap -> fa2 with its
      reason, never re-promoted; capacity from indptr/last_page_len (never seq_lens): auto -> fa2
      "exceeding the declared max_seq_len" with `_backend_capacity_demoted`, reset by the next
      plan; explicit aiter -> ValueError before any buffer write (rule 30); aiter with tensor
      cores / HND / RoPE -> ValueError (rule 29); aiter run(return_lse=True): ValueError during a
      capture, else an FA2 shadow plan with a one-time warning (rule 32).
Not in rocm_fork.md, chosen here: an unknown backend raises the ragged wrapper's ValueError; the
"pages" variant of the capacity reason is not modelled (the kv_len one is).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, List, Optional, Tuple, Union

import torch

from kernels.standins import _kernels as K
from kernels.standins._launch import capturing, launch
from kernels.standins.upstream_flashinfer._run import batch_attention
from kernels.standins.rocm_flashinfer.rocm import aiter_utils, prefill
from kernels.standins.rocm_flashinfer.rocm import reason_text as text

__attncheck_standin__ = "flashinfer-rocm-fork"

# plan()'s optional parameters in their old positional order (passing them so warns).
POSITIONAL_OPTIONS = (
    "pos_encoding_mode",
    "window_left",
    "logits_soft_cap",
    "q_data_type",
    "kv_data_type",
    "data_type",
    "sm_scale",
    "rope_scale",
    "rope_theta",
    "non_blocking",
)
_lse_shadow_warned = False


def _aiter_pa_v1_available() -> bool:
    """Bootstrap of AITER's paged-attention decode kernel: True, or what the build raised."""
    import importlib

    importlib.import_module("aiter")
    return True


def _stream_capturing() -> bool:
    """A CUDA-graph capture under way: torch's stream capture, or the stand-in's recorded one."""
    if capturing():
        return True
    try:
        return bool(torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())
    except Exception:
        return False


class BatchDecodeWithPagedKVCacheWrapper:
    """Paged-KV batch decode of the fork (decode @05005763)."""

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
        max_seq_len: Optional[int] = None,
    ) -> None:
        prefill.reject_cuda_only(jit_args=jit_args)
        if backend not in prefill.BACKENDS:
            raise ValueError(text.RAGGED_BACKEND.format(backend=backend))
        if max_seq_len is not None:
            if isinstance(max_seq_len, bool) or not isinstance(max_seq_len, int):
                raise TypeError(text.MAX_SEQ_LEN_TYPE.format(value=max_seq_len))
            if max_seq_len <= 0:
                raise ValueError(text.MAX_SEQ_LEN_POSITIVE.format(value=max_seq_len))
            if not use_cuda_graph:
                raise ValueError(text.MAX_SEQ_LEN_GRAPH)
        if use_cuda_graph:
            for name, buf in (
                ("paged_kv_indptr_buffer", paged_kv_indptr_buffer),
                ("paged_kv_indices_buffer", paged_kv_indices_buffer),
                ("paged_kv_last_page_len_buffer", paged_kv_last_page_len_buffer),
            ):
                if not torch.is_tensor(buf):
                    raise ValueError(text.GRAPH_BUFFER.format(name=name))
        self.device = float_workspace_buffer.device
        self._float_workspace_buffer = float_workspace_buffer
        self._kv_layout = kv_layout
        self._use_cuda_graph = use_cuda_graph
        self._use_tensor_cores = use_tensor_cores
        self._fixed_batch_size = len(paged_kv_last_page_len_buffer) if use_cuda_graph else 0  # type: ignore[arg-type]
        self._paged_kv_indptr_buf = paged_kv_indptr_buffer
        self._paged_kv_indices_buf = paged_kv_indices_buffer
        self._paged_kv_last_page_len_buf = paged_kv_last_page_len_buffer
        self._backend_requested = backend
        self._backend = backend
        self._backend_fallback_reason: Optional[str] = None
        self._backend_capacity_demoted = False
        self._aiter_graph_max_seq_len = max_seq_len
        if backend == "aiter":
            prefill._require_aiter_runtime(self.device, "batch_decode")

    @property
    def backend(self) -> str:
        return self._backend

    @property
    def backend_fallback_reason(self) -> Optional[str]:
        return self._backend_fallback_reason

    @property
    def is_cuda_graph_enabled(self) -> bool:
        return self._use_cuda_graph

    @property
    def use_tensor_cores(self) -> bool:
        return self._use_tensor_cores

    def plan(
        self,
        indptr: torch.Tensor,
        indices: torch.Tensor,
        last_page_len: torch.Tensor,
        num_qo_heads: int,
        num_kv_heads: int,
        head_dim: int,
        page_size: int,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        if args:
            warnings.warn(text.DEPRECATED_POSITIONAL, DeprecationWarning, stacklevel=2)
            if len(args) > len(POSITIONAL_OPTIONS):
                raise TypeError(f"plan() takes at most {7 + len(POSITIONAL_OPTIONS)} positional arguments")
            for name, value in zip(POSITIONAL_OPTIONS, args):
                if name in kwargs:
                    raise TypeError(f"plan() got multiple values for argument {name!r}")
                kwargs[name] = value
        self._plan_impl(indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size, **kwargs)

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
        prefill.reject_cuda_only(
            block_tables=block_tables,
            fixed_split_size=fixed_split_size,
            disable_split_kv=disable_split_kv,
            is_causal=is_causal,
        )
        if window_right != 0:
            raise ValueError(text.WINDOW_RIGHT.format(value=window_right))
        if q_len_per_req > 1 and not self._use_tensor_cores:
            raise ValueError(text.Q_LEN_PER_REQ.format(value=q_len_per_req))
        q_dt = prefill._dtype(q_data_type if data_type is None else data_type, torch.float16)
        kv_dt = prefill._dtype(kv_data_type, q_dt)
        o_dt = prefill._dtype(o_data_type, q_dt)
        if o_dt != q_dt:
            raise NotImplementedError(text.O_DTYPE.format(o_dtype=o_dt, q_dtype=q_dt))
        batch = len(last_page_len)
        # capacity is read from the page table, never from seq_lens (rule 30)
        kv_lens = K.seq_lens(indptr.to("cpu", torch.int64), last_page_len.to("cpu", torch.int64), page_size).tolist()
        if self._use_cuda_graph:
            if batch != self._fixed_batch_size:
                raise ValueError(text.GRAPH_BATCH.format(got=batch, fixed=self._fixed_batch_size))
            if len(indices) > len(self._paged_kv_indices_buf):  # type: ignore[arg-type]
                raise ValueError(text.GRAPH_INDICES)
        self._resolve(q_dt, kv_dt, head_dim, pos_encoding_mode, logits_soft_cap)
        self._check_capacity(max(kv_lens, default=0))
        if self._use_cuda_graph:
            self._paged_kv_indptr_buf.copy_(indptr)  # type: ignore[union-attr]
            self._paged_kv_last_page_len_buf.copy_(last_page_len)  # type: ignore[union-attr]
            self._paged_kv_indices_buf[: len(indices)].copy_(indices)  # type: ignore[index]
        else:
            self._paged_kv_indptr_buf = indptr.to(self.device)
            self._paged_kv_indices_buf = indices.to(self.device)
            self._paged_kv_last_page_len_buf = last_page_len.to(self.device)
        self._batch_size, self._page_size, self._q_len_per_req = batch, page_size, q_len_per_req
        self._cached_q_data_type, self._cached_kv_data_type, self._cached_o_data_type = q_dt, kv_dt, o_dt
        self._window_left, self._sm_scale = window_left, sm_scale
        self._logits_soft_cap = logits_soft_cap if logits_soft_cap is not None else 0.0

    def _resolve(self, q_dt: torch.dtype, kv_dt: torch.dtype, head_dim: int, pos: str, cap: Optional[float]) -> None:
        if self._backend_capacity_demoted:  # reset by the next plan (rule 30)
            self._backend, self._backend_fallback_reason = "aiter", None
            self._backend_capacity_demoted = False
        if self._backend == "auto":  # sticky: resolved once
            if self._use_tensor_cores or (self._use_cuda_graph and self._aiter_graph_max_seq_len is None):
                self._backend, self._backend_fallback_reason = "fa2", None
            else:
                self._backend, self._backend_fallback_reason = prefill._auto_select_prefill_backend(
                    self.device,
                    dtype_q=q_dt,
                    dtype_kv=kv_dt,
                    kv_layout=self._kv_layout,
                    has_custom_mask=False,
                    head_dim_qk=head_dim,
                    head_dim_vo=head_dim,
                    pos_encoding_mode=pos,
                    op="batch_decode",
                    logits_soft_cap=cap,
                )
        if self._backend != "aiter":
            return
        if self._backend_requested == "aiter":
            what = (
                "use_tensor_cores=True"
                if self._use_tensor_cores
                else f"kv_layout={self._kv_layout!r}"
                if self._kv_layout != "NHD"
                else f"pos_encoding_mode={pos!r}"
                if pos != "NONE"
                else None
            )
            if what is not None:
                raise ValueError(text.AITER_UNSUPPORTED.format(what=what))
            _aiter_pa_v1_available()
            return
        try:  # every plan re-probes; a failure demotes for good
            _aiter_pa_v1_available()
        except Exception as e:
            self._backend_fallback_reason = aiter_utils.handle_aiter_probe_failure(e, "batch_decode")
            self._backend = "fa2"

    def _check_capacity(self, max_kv_len: int) -> None:
        cap = self._aiter_graph_max_seq_len
        if cap is None or self._use_tensor_cores or self._backend != "aiter" or max_kv_len <= cap:
            return
        if self._backend_requested == "aiter":
            raise ValueError(text.DECODE_CAPACITY_RAISE.format(kv_len=max_kv_len, max_seq_len=cap))
        self._backend = "fa2"
        self._backend_fallback_reason = text.DECODE_CAPACITY.format(kv_len=max_kv_len, max_seq_len=cap)
        self._backend_capacity_demoted = True

    def run(
        self,
        q: torch.Tensor,
        paged_kv_cache: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
        *args: Any,
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
        global _lse_shadow_warned
        prefill.reject_cuda_only(
            args=args,
            enable_pdl=enable_pdl,
            sinks=sinks,
            kv_cache_sf=kv_cache_sf,
            skip_softmax_threshold_scale_factor=skip_softmax_threshold_scale_factor,
        )
        if return_lse and self._backend == "aiter":
            if _stream_capturing():
                raise ValueError(text.DECODE_LSE_CAPTURE)
            if not _lse_shadow_warned:
                _lse_shadow_warned = True
                warnings.warn(text.DECODE_LSE_SHADOW, UserWarning, stacklevel=2)
        k_cache, v_cache = paged_kv_cache if isinstance(paged_kv_cache, tuple) else paged_kv_cache.unbind(1)
        if q.dtype != self._cached_q_data_type or k_cache.dtype != self._cached_kv_data_type:
            raise ValueError(
                f"q/kv dtypes {q.dtype}/{k_cache.dtype} do not match plan()'s "
                f"{self._cached_q_data_type}/{self._cached_kv_data_type}"
            )
        rows, heads = q.size(0), q.size(1)
        out = prefill._out_buffer(out, (rows, heads, v_cache.shape[-1]), self._cached_o_data_type, q.device)
        lse = prefill._lse_buffer(lse, (rows, heads), q.device) if return_lse else None
        sm = self._sm_scale if self._sm_scale is not None else 1.0 / math.sqrt(q.size(-1))
        sm *= (q_scale if q_scale is not None else 1.0) * (k_scale if k_scale is not None else 1.0)
        layout, batch, page_size, cap = self._kv_layout, self._batch_size, self._page_size, self._logits_soft_cap
        window = self._window_left if window_left is None else window_left
        qo_indptr = torch.arange(batch + 1, dtype=torch.int32) * self._q_len_per_req

        def kernel(sm: float = sm) -> None:
            indptr = self._paged_kv_indptr_buf[: batch + 1].cpu()  # type: ignore[index]
            last = self._paged_kv_last_page_len_buf[:batch].cpu()  # type: ignore[index]
            ip = indptr.tolist()
            kv_lens = K.seq_lens(indptr, last, page_size).tolist()

            def kv_of(b: int, kv: int) -> tuple[torch.Tensor, torch.Tensor]:
                pages = self._paged_kv_indices_buf[ip[b] : ip[b + 1]].cpu().tolist()  # type: ignore[index]
                return K.page_tokens(k_cache, layout, pages, kv), K.page_tokens(v_cache, layout, pages, kv)

            batch_attention(q, out, lse, qo_indptr, kv_lens, kv_of, K.NON_CAUSAL, window, cap, sm, None, None, batch)
            if v_scale is not None:
                out.mul_(v_scale)

        launch(kernel)
        return (out, lse) if return_lse else out  # type: ignore[return-value]


class CUDAGraphBatchDecodeWithPagedKVCacheWrapper(BatchDecodeWithPagedKVCacheWrapper):
    """The decode wrapper with graph mode on (s1)."""

    def __init__(
        self,
        workspace: torch.Tensor,
        indptr_buf: torch.Tensor,
        indices_buf: torch.Tensor,
        last_page_len_buf: torch.Tensor,
        kv_layout: str = "NHD",
        use_tensor_cores: bool = False,
        backend: str = "auto",
        max_seq_len: Optional[int] = None,
    ) -> None:
        super().__init__(
            workspace,
            kv_layout,
            True,
            use_tensor_cores,
            indptr_buf,
            indices_buf,
            last_page_len_buf,
            backend,
            None,
            max_seq_len,
        )
