"""Stand-in for the ROCm fork's `flashinfer.rocm.prefill` (MAIN @10f72434), built from rocm_fork.md.

A CPU stand-in, never the library: what tests/data/sources/rocm_fork.md documents of the fork's
prefill module, with plain-torch numerics (kernels/standins/rocm_flashinfer/_kernels.py) for
every backend. One module, as in the fork, so a test patches a probe where the fork's own tests
do (`prefill._aiter_ops_importable`, `prefill._aiter_native_paging_available`, ...).

What comes from where (sN = section N, "rule N" = section 7):
  s1  class/function names, __init__/plan/run parameter names and order (where s1 elides with
      "...", upstream 0.7.2.post1's parameters in upstream's order), backend="aiter",
      backend_fallback_reason, _backend_requested, is_cuda_graph_enabled, scale_q/k/v,
      workspace_size() raising, unknown backend (paged: warn and fa2; ragged: ValueError),
      graph mode needing the index buffers, o_data_type rules.
  s2  _auto_select_prefill_backend: signature, steps 0-12 in order, exact reason texts
      (reason_text.py), warn once per (device, reason) in `_aiter_auto_warned`; and what each
      caller passes (paged: mask from its buffer, no lengths/kv_len at a routed page, allow_fp8;
      ragged: ragged_q_len, 0 for an empty batch; single: op="single_prefill", kv_len only).
  s3  _aiter_native_page_sizes ({1,16,1024} from amd-aiter 0.1.10, else {16,1024}),
      _aiter_paged_route_page_sizes (fp8: native; fp16/bf16: native & {1024}); tables in arch_caps.
  s4  paged plan(): short-query demotion flag and its reset, re-resolution (every eager plan;
      graph mode: the first plan), checks after selection, the native-paging probe site with
      its demotable/soft-cap/short-query/bootstrap branches, flat-gather buffers (graph mode:
      allocated once at paged_kv_indices_buf.numel() * page_size), mask clearing; paged run()
      errors in order; ragged plan() (fp8 refused first, re-resolution, empty batch never
      short, aiter ValueErrors, bootstrap demotion); single prefill (auto: selector then
      _reject_fp8_on_fa2; aiter: _require_aiter_runtime then ValueErrors; a failed probe under
      auto silently falls back to fa2, explicit aiter re-raises).
Not in rocm_fork.md, chosen here and marked where used: which probe bootstraps the paged
flat-gather route and single prefill (`_aiter_batch_ragged_available`,
`_aiter_single_prefill_available`), the amd-aiter version probe (`_aiter_installed_version`),
exception types the document leaves open (NotImplementedError for refused CUDA-only arguments).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import itertools
import logging
import math
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import torch

from kernels.standins import _kernels as K
from kernels.standins._launch import launch
from kernels.standins.upstream_flashinfer._run import _store, batch_attention
from kernels.standins.rocm_flashinfer.rocm import aiter_utils, arch_caps
from kernels.standins.rocm_flashinfer.rocm import reason_text as text

__attncheck_standin__ = "flashinfer-rocm-fork"

logger = logging.getLogger("flashinfer")

FP8_PREFILL_DTYPES = (torch.float8_e4m3fnuz, torch.float8_e4m3fn)
FP8_ANY_DTYPES = FP8_PREFILL_DTYPES + (torch.float8_e5m2, torch.float8_e5m2fnuz)
HALF_DTYPES = (torch.float16, torch.bfloat16)
BACKENDS = ("fa2", "aiter", "auto")
ROUTED_HALF_PAGE_SIZES = frozenset({1024})  # s3: fp16/bf16 route natively only at 1024
NATIVE_PAGE_SIZES_FROM_0_1_10 = frozenset({1, 16, 1024})
NATIVE_PAGE_SIZES_BEFORE = frozenset({16, 1024})
AITER_DISTRIBUTIONS = ("amd-aiter", "aiter")

_aiter_auto_warned: set = set()  # s2 step 10: (device, reason) pairs already warned about


# ---- probes (what the fork's tests patch) --------------------------------------------------------


def _aiter_installed_version() -> Optional[str]:
    """amd-aiter's version from package metadata; None when absent (probe name chosen here)."""
    for dist in AITER_DISTRIBUTIONS:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _version_tuple(v: str) -> tuple[int, ...]:
    head = v.split("+", 1)[0]
    return tuple(int("".join(itertools.takewhile(str.isdigit, p)) or 0) for p in head.split("."))


def _below_abi_floor(v: str) -> bool:
    return _version_tuple(v) < _version_tuple(arch_caps.AITER_MIN_VERSION)


def _aiter_ops_importable() -> bool:
    """Whether AITER's ops import, at or above the ABI floor (s2 step 9/11)."""
    v = _aiter_installed_version()
    if v is None or _below_abi_floor(v):
        return False
    try:
        importlib.import_module("aiter")
        return True
    except Exception:
        return False


def _native_fp8_dtype() -> Optional[torch.dtype]:
    """aiter.dtypes.fp8, the GPU's fp8 encoding (e4m3fnuz gfx942, e4m3fn gfx950); None if unreadable."""
    try:
        aiter = importlib.import_module("aiter")
        return aiter.dtypes.fp8
    except Exception:
        return None


@functools.lru_cache(maxsize=None)
def _aiter_native_paging_available(page_size: int) -> bool:
    """Whether AITER's native paged kernel runs at this page size (the fork launches it once, lru-cached)."""
    return _aiter_ops_importable()


def _aiter_batch_ragged_available() -> bool:
    """Bootstrap of AITER's mha_varlen_fwd (ragged; the paged flat gather): True, or what the build raised."""
    importlib.import_module("aiter")
    return True


def _aiter_single_prefill_available() -> bool:
    """Bootstrap of AITER's single prefill (probe name chosen here): True, or what the build raised."""
    importlib.import_module("aiter")
    return True


def _install_reason() -> str:
    """s2 step 11: below the ABI floor, else not installed."""
    v = _aiter_installed_version()
    if v is not None and _below_abi_floor(v):
        return text.ABI_FLOOR.format(v=v, floor=arch_caps.AITER_MIN_VERSION)
    return text.NOT_INSTALLED


def _require_aiter_runtime(device: Any, op: str) -> None:
    """An explicit backend="aiter": ArchCapabilityError off a supporting GPU, ImportError without AITER (s1)."""
    reason = arch_caps.capability_reason(device, op, "aiter")
    if reason is not None:
        raise arch_caps.ArchCapabilityError(reason)
    if not _aiter_ops_importable():
        raise ImportError(_install_reason())


def _aiter_native_page_sizes() -> frozenset[int]:
    v = _aiter_installed_version()
    if v is not None and _version_tuple(v) >= (0, 1, 10):
        return NATIVE_PAGE_SIZES_FROM_0_1_10
    return NATIVE_PAGE_SIZES_BEFORE


def _aiter_paged_route_page_sizes(q_dtype: torch.dtype) -> frozenset[int]:
    native = _aiter_native_page_sizes()
    return native if q_dtype in FP8_PREFILL_DTYPES else native & ROUTED_HALF_PAGE_SIZES


# ---- the selector (s2) ---------------------------------------------------------------------------


def _aiter_softcap_defect(
    arch: str, causal: bool, logits_soft_cap: Optional[float], head_dim: int, kv_len: Optional[int]
) -> bool:
    return bool(
        causal
        and logits_soft_cap is not None
        and logits_soft_cap > 0
        and head_dim == 128
        and kv_len is not None
        and arch_caps.aiter_softcap_defect_arch(arch)
    )


def _aiter_flat_gather_short_query(arch: str, max_q_len: Optional[int]) -> Optional[str]:
    t = arch_caps.aiter_flat_gather_gated_q_len(arch)
    if t is None or max_q_len is None or not 1 <= max_q_len <= t:  # rule 7: <= 0 is never short
        return None
    return text.PAGED_SHORT_QUERY.format(T=t)


def _aiter_ragged_short_query(arch: str, ragged_q_len: Optional[int]) -> Optional[str]:
    t = arch_caps.aiter_ragged_gated_q_len(arch)
    if t is None or ragged_q_len is None or not 1 <= ragged_q_len <= t:
        return None
    return text.RAGGED_SHORT_QUERY.format(T=t)


def _warn_auto_fallback_once(device: Any, reason: str) -> None:
    key = (str(device), reason)
    if key in _aiter_auto_warned:
        return
    _aiter_auto_warned.add(key)
    logger.warning("backend='auto' declined AITER and uses fa2: %s", reason)


def _constraint_reason(
    device: Any,
    arch: str,
    *,
    dtype_q: torch.dtype,
    dtype_kv: torch.dtype,
    kv_layout: str,
    has_custom_mask: bool,
    head_dim_qk: int,
    head_dim_vo: int,
    pos_encoding_mode: str,
    op: str,
    causal: bool,
    logits_soft_cap: Optional[float],
    kv_len: Optional[int],
    allow_fp8: bool,
) -> Optional[str]:
    """Steps 1-8: the first constraint AITER does not meet, or None."""
    reason = arch_caps.capability_reason(device, op, "aiter")
    if reason is not None:
        return reason
    if kv_layout != "NHD":
        return text.LAYOUT.format(kv_layout=kv_layout)
    if has_custom_mask:
        return text.CUSTOM_MASK
    if not (dtype_q in HALF_DTYPES or (allow_fp8 and dtype_q in FP8_PREFILL_DTYPES)):
        return text.DTYPE.format(dtype_q=dtype_q, fp8="/fp8" if allow_fp8 else "")
    if dtype_q != dtype_kv:
        return text.DTYPE_MISMATCH.format(dtype_q=dtype_q, dtype_kv=dtype_kv)
    if head_dim_qk != head_dim_vo:
        return text.HEAD_DIMS.format(head_dim_qk=head_dim_qk, head_dim_vo=head_dim_vo)
    if pos_encoding_mode != "NONE":
        return text.POS_ENCODING.format(pos_encoding_mode=pos_encoding_mode)
    if _aiter_softcap_defect(arch, causal, logits_soft_cap, head_dim_qk, kv_len):
        return text.SOFTCAP_DEFECT.format(cap=logits_soft_cap, hd=head_dim_qk)
    return None


def _auto_select_prefill_backend(
    device: torch.device,
    *,
    dtype_q: torch.dtype,
    dtype_kv: torch.dtype,
    kv_layout: str,
    has_custom_mask: bool,
    head_dim_qk: int,
    head_dim_vo: int,
    pos_encoding_mode: str = "NONE",
    op: str = "batch_prefill",
    causal: bool = False,
    logits_soft_cap: Optional[float] = None,
    kv_len: Optional[int] = None,
    allow_fp8: bool = False,
    max_q_len: Optional[int] = None,
    ragged_q_len: Optional[int] = None,
) -> Tuple[str, Optional[str]]:
    """("aiter", None), or ("fa2", why): the first condition of s2 steps 0-12 that applies wins."""
    if max_q_len is not None and ragged_q_len is not None:
        raise ValueError(text.BOTH_LENGTHS)  # step 0, before anything else
    arch = arch_caps._device_arch(device)
    reason = _constraint_reason(
        device,
        arch,
        dtype_q=dtype_q,
        dtype_kv=dtype_kv,
        kv_layout=kv_layout,
        has_custom_mask=has_custom_mask,
        head_dim_qk=head_dim_qk,
        head_dim_vo=head_dim_vo,
        pos_encoding_mode=pos_encoding_mode,
        op=op,
        causal=causal,
        logits_soft_cap=logits_soft_cap,
        kv_len=kv_len,
        allow_fp8=allow_fp8,
    )
    if reason is None and _aiter_ops_importable():  # step 9: perf gates only with AITER importable (rule 4)
        reason = _aiter_flat_gather_short_query(arch, max_q_len) or _aiter_ragged_short_query(arch, ragged_q_len)
    if reason is not None:  # step 10
        _warn_auto_fallback_once(device, reason)
        return "fa2", reason
    if not _aiter_ops_importable():  # step 11
        return "fa2", _install_reason()
    return "aiter", None  # step 12


# ---- checks shared by the prefill APIs ------------------------------------------------------------


def _reject_fp8_on_fa2(dtype_q: torch.dtype, backend: str) -> None:
    if backend == "fa2" and dtype_q in FP8_PREFILL_DTYPES:
        raise NotImplementedError(text.FP8_ON_FA2.format(dtype_q=dtype_q))


def _require_native_fp8_dtype(dtype_q: torch.dtype) -> None:
    """aiter + fp8: the query must be in the GPU's encoding; an unreadable aiter.dtypes fails closed."""
    if dtype_q not in FP8_PREFILL_DTYPES:
        return
    native = _native_fp8_dtype()
    if native is None:
        raise NotImplementedError(text.FP8_ENCODING_UNREADABLE)
    if dtype_q != native:
        raise NotImplementedError(text.FP8_WRONG_ENCODING.format(native=native, dtype_q=dtype_q))


def _reject_fp8_off_native_paging(dtype_q: torch.dtype, page_size: int, routed: frozenset[int]) -> None:
    if dtype_q in FP8_PREFILL_DTYPES and page_size not in routed:
        raise NotImplementedError(
            text.FP8_OFF_NATIVE_PAGING.format(dtype_q=dtype_q, routed=sorted(routed), page_size=page_size)
        )


def _reject_aiter_features(
    arch: str,
    *,
    kv_layout: str,
    pos_encoding_mode: str,
    causal: bool,
    logits_soft_cap: Optional[float],
    head_dim: int,
    kv_len: Optional[int],
) -> None:
    """backend "aiter": ValueError for HND, RoPE, or the soft-cap defect (s4)."""
    if kv_layout != "NHD":
        raise ValueError(text.AITER_UNSUPPORTED.format(what=f"kv_layout={kv_layout!r} (AITER requires NHD)"))
    if pos_encoding_mode != "NONE":
        raise ValueError(text.AITER_UNSUPPORTED.format(what=f"pos_encoding_mode={pos_encoding_mode!r}"))
    if _aiter_softcap_defect(arch, causal, logits_soft_cap, head_dim, kv_len):
        raise ValueError(
            text.AITER_UNSUPPORTED.format(what=text.SOFTCAP_DEFECT.format(cap=logits_soft_cap, hd=head_dim))
        )


def reject_cuda_only(**arguments: Any) -> None:
    """Rule 27: an argument only CUDA serves must carry its neutral value (None, False, 0, empty)."""
    for name, value in arguments.items():
        neutral = value is None or value is False or (isinstance(value, (int, tuple)) and not value)
        if not neutral:
            raise NotImplementedError(text.CUDA_ONLY.format(name=name, value=value))


def _dtype(x: Union[str, torch.dtype, None], default: torch.dtype) -> torch.dtype:
    if x is None:
        return default
    return getattr(torch, x) if isinstance(x, str) else x


def _output_dtype(q: torch.dtype, o: Optional[Union[str, torch.dtype]]) -> torch.dtype:
    """s1: fp8 prefill writes bf16, everything else the query dtype (NotImplementedError otherwise).

    "fp8" read as any 8-bit float query, e5m2 included (s1 does not say; chosen so that an e5m2
    query reaches the selector and fa2, as the BR367 review describes, s7 "uncertain" note).
    """
    if q in FP8_ANY_DTYPES:
        out = _dtype(o, torch.bfloat16)
        if out != torch.bfloat16:
            raise NotImplementedError(text.FP8_OUTPUT.format(o_dtype=out))
        return out
    out = _dtype(o, q)
    if out != q:
        raise NotImplementedError(text.O_DTYPE.format(o_dtype=out, q_dtype=q))
    return out


def _check_buffer(t: torch.Tensor, shape: tuple, dtype: torch.dtype, name: str) -> None:
    if tuple(t.shape) != tuple(shape) or t.dtype != dtype:
        raise ValueError(f"Invalid {name}: expected shape {tuple(shape)} dtype {dtype}, got {tuple(t.shape)} {t.dtype}")


def _descale(t: Optional[torch.Tensor]) -> float:
    return 1.0 if t is None else float(t.reshape(-1)[0])


def _per_tensor(name: str, t: torch.Tensor) -> None:
    if t.numel() != 1:
        raise RuntimeError(text.PER_TENSOR.format(name=name, shape=tuple(t.shape)))


def _pack_mask(
    custom_mask: Optional[torch.Tensor], packed_custom_mask: Optional[torch.Tensor], indptr: Callable[[], torch.Tensor]
) -> tuple[Optional[torch.Tensor], Optional[torch.Tensor]]:
    """(packed mask, mask_indptr) as upstream plan() builds them (segment_packbits, bit order "little")."""
    if custom_mask is None and packed_custom_mask is None:
        return None, None
    m_indptr = indptr()
    if packed_custom_mask is None:
        assert custom_mask is not None
        packed_custom_mask, m_indptr = K.segment_pack_bits(
            custom_mask.contiguous().view(-1), m_indptr.to(custom_mask.device), "little"
        )
    return packed_custom_mask, m_indptr


class _Wrapper:
    """State every fork wrapper exposes (s1 "Attributes")."""

    _op = "batch_prefill"

    def _init_state(
        self, ws: torch.Tensor, kv_layout: str, use_cuda_graph: bool, backend: str, jit_args: Any, jit_kwargs: Any
    ) -> None:
        reject_cuda_only(jit_args=jit_args, jit_kwargs=jit_kwargs)
        self._float_workspace_buffer = ws
        self.device = ws.device
        self._kv_layout = kv_layout
        self._use_cuda_graph = use_cuda_graph
        self._backend_requested = backend
        self._backend = backend
        self._backend_fallback_reason: Optional[str] = None
        self._max_total_num_rows: Optional[int] = None
        self._custom_mask_buf: Optional[torch.Tensor] = None
        self._mask_indptr_buf: Optional[torch.Tensor] = None
        if backend == "aiter":
            _require_aiter_runtime(self.device, self._op)

    @property
    def backend(self) -> str:
        return self._backend

    @property
    def backend_fallback_reason(self) -> Optional[str]:
        return self._backend_fallback_reason

    @property
    def is_cuda_graph_enabled(self) -> bool:
        return self._use_cuda_graph

    def _graph_rows(self, total: int, batch: int) -> None:
        if self._max_total_num_rows is None:
            self._max_total_num_rows = total
        elif total > self._max_total_num_rows:
            raise ValueError(text.GRAPH_ROWS.format(got=total, fixed=self._max_total_num_rows))
        if batch != self._fixed_batch_size:
            raise ValueError(text.GRAPH_BATCH.format(got=batch, fixed=self._fixed_batch_size))

    def _set_mask(self, packed: Optional[torch.Tensor], m_indptr: Optional[torch.Tensor]) -> None:
        """Eager: the plan's mask or none (a maskless plan clears it, rule 13). Graph: the init buffers."""
        if self._use_cuda_graph:
            if packed is None:
                return
            if self._custom_mask_buf is None or self._mask_indptr_buf is None:
                raise ValueError(text.GRAPH_MASK_BUFFERS)
            self._custom_mask_buf[: len(packed)].copy_(packed)
            self._mask_indptr_buf.copy_(m_indptr)
        else:
            self._custom_mask_buf = packed.to(self.device) if packed is not None else None
            self._mask_indptr_buf = m_indptr.to(self.device) if m_indptr is not None else None

    def _reresolves(self, from_auto: bool) -> bool:
        """`auto` re-selects on every eager plan; under CUDA graphs the first plan decides (rule 14)."""
        return from_auto and (self._backend == "auto" or not self._use_cuda_graph)

    def _bootstrap_or_demote(self, probe: Callable[[], Any], resolved_from_auto: bool) -> None:
        """Run a bootstrap probe; under auto a failure demotes to fa2 with its reason, else it raises."""
        try:
            probe()
        except Exception as e:
            if not resolved_from_auto:
                raise
            reason = aiter_utils.handle_aiter_probe_failure(e, self._op)
            self._backend, self._backend_fallback_reason = "fa2", reason


class BatchPrefillWithPagedKVCacheWrapper(_Wrapper):
    """Paged-KV batch prefill of the fork (s1; lifecycle s4 "Paged plan() in MAIN", "Paged run() errors")."""

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
    ) -> None:
        if backend not in BACKENDS:  # s1: a warning, and fa2 (no raise)
            warnings.warn(text.PAGED_UNKNOWN_BACKEND.format(backend=backend), UserWarning, stacklevel=2)
            backend = "fa2"
        if use_cuda_graph:
            for name, buf in (
                ("qo_indptr_buf", qo_indptr_buf),
                ("paged_kv_indptr_buf", paged_kv_indptr_buf),
                ("paged_kv_indices_buf", paged_kv_indices_buf),
                ("paged_kv_last_page_len_buf", paged_kv_last_page_len_buf),
            ):
                if not torch.is_tensor(buf):
                    raise ValueError(text.GRAPH_BUFFER.format(name=name))
        self._init_state(float_workspace_buffer, kv_layout, use_cuda_graph, backend, jit_args, jit_kwargs)
        self._fixed_batch_size = len(qo_indptr_buf) - 1 if use_cuda_graph and qo_indptr_buf is not None else 0
        self._qo_indptr_buf = qo_indptr_buf
        self._paged_kv_indptr_buf = paged_kv_indptr_buf
        self._paged_kv_indices_buf = paged_kv_indices_buf
        self._paged_kv_last_page_len_buf = paged_kv_last_page_len_buf
        self._custom_mask_buf = custom_mask_buf
        self._mask_indptr_buf = mask_indptr_buf
        self._backend_short_query_demoted = False
        # not None exactly on the AITER flat-gather route (s1); graph mode allocates the storage once (s4)
        self._aiter_flat_gather_idx: Optional[torch.Tensor] = None
        self._aiter_flat_kv_indptr: Optional[torch.Tensor] = None
        self._flat_gather_storage: Optional[tuple[torch.Tensor, torch.Tensor]] = None

    def workspace_size(self) -> int:
        raise NotImplementedError(text.WORKSPACE_SIZE)

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
    ) -> None:
        reject_cuda_only(
            prefix_len_ptr=prefix_len_ptr,
            token_pos_in_items_ptr=token_pos_in_items_ptr,
            token_pos_in_items_len=token_pos_in_items_len,
            max_item_len_ptr=max_item_len_ptr,
            seq_lens=seq_lens,
            seq_lens_q=seq_lens_q,
            block_tables=block_tables,
            use_fp16_qk_reduction=use_fp16_qk_reduction,
        )
        q_dt = _dtype(q_data_type, torch.float16)
        kv_dt = _dtype(kv_data_type, q_dt)
        o_dt = _output_dtype(q_dt, o_data_type)
        head_dim_vo = head_dim_qk if head_dim_vo is None else head_dim_vo
        graph = self._use_cuda_graph
        qo_host = qo_indptr.to("cpu", torch.int64)
        kvp_host, last_host = paged_kv_indptr.to("cpu", torch.int64), paged_kv_last_page_len.to("cpu", torch.int64)
        batch = len(qo_host) - 1
        qo_lens = (qo_host[1:] - qo_host[:-1]).tolist()
        kv_lens = K.seq_lens(kvp_host, last_host, page_size).tolist()
        total = int(qo_host[-1])
        packed, m_indptr = _pack_mask(
            custom_mask,
            packed_custom_mask,
            lambda: K.page_mask_indptr(qo_indptr, paged_kv_indptr, paged_kv_last_page_len, page_size),
        )
        if graph:
            self._graph_rows(total, batch)
            if len(paged_kv_indices) > len(self._paged_kv_indices_buf):
                raise ValueError(text.GRAPH_INDICES)
            self._qo_indptr_buf.copy_(qo_indptr)
            self._paged_kv_indptr_buf.copy_(paged_kv_indptr)
            self._paged_kv_last_page_len_buf.copy_(paged_kv_last_page_len)
            self._paged_kv_indices_buf[: len(paged_kv_indices)].copy_(paged_kv_indices)
        else:
            self._qo_indptr_buf = qo_indptr.to(self.device)
            self._paged_kv_indptr_buf = paged_kv_indptr.to(self.device)
            self._paged_kv_indices_buf = paged_kv_indices.to(self.device)
            self._paged_kv_last_page_len_buf = paged_kv_last_page_len.to(self.device)
        self._set_mask(packed, m_indptr)
        self._batch_size, self._qo_indptr_last, self._page_size = batch, total, page_size
        self._max_q_len = max_token_per_sequence or max(qo_lens, default=0)
        self._max_kv_len = max(kv_lens, default=0)
        self._cached_q_data_type, self._cached_kv_data_type, self._cached_o_data_type = q_dt, kv_dt, o_dt
        self._causal, self._window_left, self._sm_scale = causal, window_left, sm_scale
        self._logits_soft_cap = logits_soft_cap if logits_soft_cap is not None else 0.0
        self._resolve(
            q_dt,
            kv_dt,
            head_dim_qk,
            head_dim_vo,
            pos_encoding_mode,
            causal,
            logits_soft_cap,
            page_size,
            paged_kv_indices,
        )

    def _resolve(
        self,
        q_dt: torch.dtype,
        kv_dt: torch.dtype,
        head_dim_qk: int,
        head_dim_vo: int,
        pos: str,
        causal: bool,
        cap: Optional[float],
        page_size: int,
        indices: torch.Tensor,
    ) -> None:
        graph = self._use_cuda_graph
        arch = arch_caps._device_arch(self.device)
        fp8 = q_dt in FP8_PREFILL_DTYPES
        routed = _aiter_paged_route_page_sizes(q_dt)
        on_route = page_size in routed
        kv_len = None if on_route else self._max_kv_len  # s2 "what each caller passes"
        if self._backend_short_query_demoted and not graph:
            self._backend, self._backend_fallback_reason = self._backend_requested, None
            self._backend_short_query_demoted = False
        from_auto = self._backend_requested == "auto"
        if self._reresolves(from_auto):
            self._backend, self._backend_fallback_reason = _auto_select_prefill_backend(
                self.device,
                dtype_q=q_dt,
                dtype_kv=kv_dt,
                kv_layout=self._kv_layout,
                has_custom_mask=self._custom_mask_buf is not None,
                head_dim_qk=head_dim_qk,
                head_dim_vo=head_dim_vo,
                pos_encoding_mode=pos,
                op="batch_prefill",
                causal=causal,
                logits_soft_cap=cap,
                kv_len=kv_len,
                allow_fp8=True,
                max_q_len=None if on_route else self._max_q_len,
            )
            self._backend_short_query_demoted = (
                self._backend_fallback_reason is not None
                and self._backend_fallback_reason == _aiter_flat_gather_short_query(arch, self._max_q_len)
            )
        # checks after selection (s4)
        if self._backend == "aiter":
            _require_native_fp8_dtype(q_dt)
        if fp8:
            _reject_fp8_off_native_paging(q_dt, page_size, routed)
        _reject_fp8_on_fa2(q_dt, self._backend)
        if self._backend == "aiter":
            _reject_aiter_features(
                arch,
                kv_layout=self._kv_layout,
                pos_encoding_mode=pos,
                causal=causal,
                logits_soft_cap=cap,
                head_dim=head_dim_qk,
                kv_len=kv_len,
            )
            flat = not on_route or not self._native_paging(q_dt, page_size, arch, causal, cap, head_dim_qk, from_auto)
            if self._backend == "aiter" and flat and not on_route:
                self._bootstrap_or_demote(_aiter_batch_ragged_available, from_auto)  # route chosen here, see docstring
        else:
            flat = False
        if self._backend == "aiter" and flat:
            self._fill_flat_gather(indices, page_size)
        else:
            self._aiter_flat_gather_idx = self._aiter_flat_kv_indptr = None

    def _native_paging(
        self,
        q_dt: torch.dtype,
        page_size: int,
        arch: str,
        causal: bool,
        cap: Optional[float],
        head_dim: int,
        from_auto: bool,
    ) -> bool:
        """s4 probe site at a routed page: True when native; else demote, raise, or stay aiter off-route."""
        if _aiter_native_paging_available(page_size):
            return True
        if aiter_utils.aiter_strict():
            raise RuntimeError(text.STRICT_NATIVE_PAGING.format(page_size=page_size))
        if q_dt in FP8_PREFILL_DTYPES:
            raise NotImplementedError(text.FP8_NOT_NATIVE_PAGED.format(page_size=page_size))
        demotable = from_auto and not (self._use_cuda_graph and self._flat_gather_storage is not None)
        defect = _aiter_softcap_defect(arch, causal, cap, head_dim, self._max_kv_len)
        short = _aiter_flat_gather_short_query(arch, self._max_q_len)
        if defect and not demotable:
            raise ValueError(text.AITER_UNSUPPORTED.format(what=text.SOFTCAP_DEFECT.format(cap=cap, hd=head_dim)))
        if defect:
            self._backend = "fa2"
            self._backend_fallback_reason = text.NATIVE_PAGING_UNAVAILABLE.format(page_size=page_size, arch=arch)
        elif demotable and short is not None:
            self._backend, self._backend_fallback_reason = "fa2", short
            self._backend_short_query_demoted = True
        else:
            self._bootstrap_or_demote(_aiter_batch_ragged_available, demotable)
        return False

    def _fill_flat_gather(self, indices: torch.Tensor, page_size: int) -> None:
        """Token indices of the flattened KV cache per request (AITER's flat gather, s4 "Buffers")."""
        ip = self._paged_kv_indptr_buf[: self._batch_size + 1].cpu().tolist()
        kv_lens = K.seq_lens(
            self._paged_kv_indptr_buf[: self._batch_size + 1].cpu(),
            self._paged_kv_last_page_len_buf[: self._batch_size].cpu(),
            page_size,
        ).tolist()
        pages = indices.cpu().to(torch.int64)
        parts = []
        for b in range(self._batch_size):
            p = pages[ip[b] : ip[b + 1]]
            tokens = (p.view(-1, 1) * page_size + torch.arange(page_size).view(1, -1)).reshape(-1)
            parts.append(tokens[: max(0, kv_lens[b])])
        flat = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64)
        indptr = torch.zeros(self._batch_size + 1, dtype=torch.int32)
        indptr[1:] = torch.cumsum(torch.tensor([len(x) for x in parts], dtype=torch.int32), 0)
        if self._use_cuda_graph:
            if self._flat_gather_storage is None:  # allocated once, reused by every later plan
                self._flat_gather_storage = (
                    torch.zeros(self._paged_kv_indices_buf.numel() * page_size, dtype=torch.int32, device=self.device),
                    torch.zeros(self._batch_size + 1, dtype=torch.int32, device=self.device),
                )
            self._aiter_flat_gather_idx, self._aiter_flat_kv_indptr = self._flat_gather_storage
            self._aiter_flat_gather_idx[: len(flat)].copy_(flat)
            self._aiter_flat_kv_indptr.copy_(indptr)
        else:
            self._aiter_flat_gather_idx = flat.to(torch.int32).to(self.device)
            self._aiter_flat_kv_indptr = indptr.to(self.device)

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
        partial_state: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
        kv_cache_sf: Optional[torch.Tensor] = None,
        skip_softmax_threshold_scale_factor: Optional[float] = None,
        use_fp16_softmax: Optional[bool] = None,
        uses_spcompress: Optional[bool] = None,
        scale_q: Optional[torch.Tensor] = None,
        scale_k: Optional[torch.Tensor] = None,
        scale_v: Optional[torch.Tensor] = None,
    ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        reject_cuda_only(
            args=args,
            enable_pdl=enable_pdl,
            sinks=sinks,
            kv_cache_sf=kv_cache_sf,
            skip_softmax_threshold_scale_factor=skip_softmax_threshold_scale_factor,
            use_fp16_softmax=use_fp16_softmax,
            uses_spcompress=uses_spcompress,
        )
        fp8 = q.dtype in FP8_PREFILL_DTYPES
        scales = (scale_q, scale_k, scale_v)
        if fp8 and any(s is not None for s in (q_scale, k_scale, v_scale)):
            raise ValueError(text.FP8_FLOAT_SCALES)
        if fp8 and (return_lse or lse is not None or partial_state is not None):
            raise NotImplementedError(text.FP8_NO_LSE)
        if self._backend == "fa2" and any(s is not None for s in scales):
            raise NotImplementedError(text.SCALES_ON_FA2.format(reason=self._backend_fallback_reason))
        for name, s in zip(("scale_q", "scale_k", "scale_v"), scales):
            if s is not None:
                _per_tensor(name, s)
        if fp8 and self._backend == "aiter":
            _require_native_fp8_dtype(q.dtype)
        k_cache, v_cache = paged_kv_cache if isinstance(paged_kv_cache, tuple) else paged_kv_cache.unbind(1)
        if q.dtype != self._cached_q_data_type or k_cache.dtype != self._cached_kv_data_type:
            raise ValueError(
                f"q/kv dtypes {q.dtype}/{k_cache.dtype} do not match plan()'s "
                f"{self._cached_q_data_type}/{self._cached_kv_data_type}"
            )
        if q.size(0) != self._qo_indptr_last:
            raise ValueError(f"q.shape[0] ({q.size(0)}) does not match qo_indptr[-1] ({self._qo_indptr_last}).")
        rows, heads, dv = q.size(0), q.size(1), v_cache.shape[-1]
        out = _out_buffer(out, (rows, heads, dv), self._cached_o_data_type, q.device)
        want_lse = return_lse or partial_state is not None
        lse = _lse_buffer(lse, (rows, heads), q.device) if want_lse else None
        sm = self._sm_scale if self._sm_scale is not None else 1.0 / math.sqrt(q.size(-1))
        sm *= (q_scale if q_scale is not None else 1.0) * (k_scale if k_scale is not None else 1.0)
        window = self._window_left if window_left is None else window_left
        layout, batch, cap, page_size = self._kv_layout, self._batch_size, self._logits_soft_cap, self._page_size
        flat = self._backend == "aiter" and self._aiter_flat_gather_idx is not None
        mask_mode = K.CUSTOM if self._custom_mask_buf is not None else (K.CAUSAL if self._causal else K.NON_CAUSAL)

        def kernel(sm: float = sm, mask_mode: int = mask_mode) -> None:
            scale = sm * _descale(scale_q) * _descale(scale_k)  # AITER reads its descale tensors at launch
            ip = self._paged_kv_indptr_buf[: batch + 1].cpu().tolist()
            kv_lens = K.seq_lens(
                self._paged_kv_indptr_buf[: batch + 1].cpu(), self._paged_kv_last_page_len_buf[:batch].cpu(), page_size
            ).tolist()
            if flat:
                fi = self._aiter_flat_kv_indptr.cpu().tolist()  # type: ignore[union-attr]
                k_flat, v_flat = k_cache.reshape(-1, *k_cache.shape[2:]), v_cache.reshape(-1, *v_cache.shape[2:])

            def kv_of(b: int, kv: int) -> tuple[torch.Tensor, torch.Tensor]:
                if flat:
                    idx = self._aiter_flat_gather_idx[fi[b] : fi[b + 1]].long()  # type: ignore[index]
                    return k_flat[idx], v_flat[idx]
                pages = self._paged_kv_indices_buf[ip[b] : ip[b + 1]].cpu().tolist()
                return K.page_tokens(k_cache, layout, pages, kv), K.page_tokens(v_cache, layout, pages, kv)

            batch_attention(
                q,
                out,
                lse,
                self._qo_indptr_buf,
                kv_lens,
                kv_of,
                mask_mode,
                window,
                cap,
                scale,
                self._custom_mask_buf,
                self._mask_indptr_buf,
                batch,
            )
            if scale_v is not None:
                out.mul_(_descale(scale_v))
            elif v_scale is not None:
                out.mul_(v_scale)
            if partial_state is not None:
                assert lse is not None
                K.merge_state_in_place(out, lse, partial_state[0], partial_state[1])

        launch(kernel)
        return (out, lse) if return_lse else out  # type: ignore[return-value]


class BatchPrefillWithRaggedKVCacheWrapper(_Wrapper):
    """Ragged-KV batch prefill of the fork (s1; lifecycle s4 "Ragged plan() in MAIN")."""

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
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(text.RAGGED_BACKEND.format(backend=backend))
        if use_cuda_graph:
            for name, buf in (("qo_indptr_buf", qo_indptr_buf), ("kv_indptr_buf", kv_indptr_buf)):
                if not torch.is_tensor(buf):
                    raise ValueError(text.GRAPH_BUFFER.format(name=name))
        self._init_state(float_workspace_buffer, kv_layout, use_cuda_graph, backend, jit_args, jit_kwargs)
        self._fixed_batch_size = len(qo_indptr_buf) - 1 if use_cuda_graph and qo_indptr_buf is not None else 0
        self._qo_indptr_buf = qo_indptr_buf
        self._kv_indptr_buf = kv_indptr_buf
        self._custom_mask_buf = custom_mask_buf
        self._mask_indptr_buf = mask_indptr_buf

    def _ragged_gate_len(self) -> Optional[int]:
        """The length the ragged gate reads: this plan's longest query, on every plan (PR #373)."""
        return self._max_q_len

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
    ) -> None:
        reject_cuda_only(
            prefix_len_ptr=prefix_len_ptr,
            token_pos_in_items_ptr=token_pos_in_items_ptr,
            token_pos_in_items_len=token_pos_in_items_len,
            max_item_len_ptr=max_item_len_ptr,
            fixed_split_size=fixed_split_size,
            disable_split_kv=disable_split_kv,
            seq_lens=seq_lens,
            seq_lens_q=seq_lens_q,
            max_token_per_sequence=max_token_per_sequence,
            max_sequence_kv=max_sequence_kv,
            v_indptr=v_indptr,
            o_indptr=o_indptr,
            use_fp16_qk_reduction=use_fp16_qk_reduction,
        )
        q_dt = _dtype(q_data_type, torch.float16)
        kv_dt = _dtype(kv_data_type, q_dt)
        if q_dt in FP8_PREFILL_DTYPES:  # every backend, before the selector (rule 22)
            raise NotImplementedError(text.FP8_RAGGED.format(dtype_q=q_dt))
        o_dt = _output_dtype(q_dt, o_data_type)
        head_dim_vo = head_dim_qk if head_dim_vo is None else head_dim_vo
        qo_host, kv_host = qo_indptr.to("cpu", torch.int64), kv_indptr.to("cpu", torch.int64)
        batch = len(qo_host) - 1
        total = int(qo_host[-1])
        packed, m_indptr = _pack_mask(custom_mask, packed_custom_mask, lambda: K.mask_indptr(qo_indptr, kv_indptr))
        if self._use_cuda_graph:
            self._graph_rows(total, batch)
            self._qo_indptr_buf.copy_(qo_indptr)
            self._kv_indptr_buf.copy_(kv_indptr)
        else:
            self._qo_indptr_buf = qo_indptr.to(self.device)
            self._kv_indptr_buf = kv_indptr.to(self.device)
        self._set_mask(packed, m_indptr)
        self._batch_size, self._qo_indptr_last = batch, total
        self._max_q_len = int((qo_host[1:] - qo_host[:-1]).max()) if batch else 0  # empty batch: 0, never short
        self._max_kv_len = int((kv_host[1:] - kv_host[:-1]).max()) if batch else 0
        self._cached_q_data_type, self._cached_kv_data_type, self._cached_o_data_type = q_dt, kv_dt, o_dt
        self._causal, self._window_left, self._sm_scale = causal, window_left, sm_scale
        self._logits_soft_cap = logits_soft_cap if logits_soft_cap is not None else 0.0
        arch = arch_caps._device_arch(self.device)
        from_auto = self._backend_requested == "auto"
        if self._reresolves(from_auto):
            self._backend, self._backend_fallback_reason = _auto_select_prefill_backend(
                self.device,
                dtype_q=q_dt,
                dtype_kv=kv_dt,
                kv_layout=self._kv_layout,
                has_custom_mask=self._custom_mask_buf is not None,
                head_dim_qk=head_dim_qk,
                head_dim_vo=head_dim_vo,
                pos_encoding_mode=pos_encoding_mode,
                op="batch_prefill",
                causal=causal,
                logits_soft_cap=logits_soft_cap,
                kv_len=self._max_kv_len,
                ragged_q_len=self._ragged_gate_len(),
            )
            if self._backend == "aiter":
                self._bootstrap_or_demote(_aiter_batch_ragged_available, True)
        elif self._backend == "aiter" and not from_auto:
            _reject_aiter_features(
                arch,
                kv_layout=self._kv_layout,
                pos_encoding_mode=pos_encoding_mode,
                causal=causal,
                logits_soft_cap=logits_soft_cap,
                head_dim=head_dim_qk,
                kv_len=self._max_kv_len,
            )
            _aiter_batch_ragged_available()

    def run(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        *args: Any,
        q_scale: Optional[float] = None,
        k_scale: Optional[float] = None,
        v_scale: Optional[float] = None,
        o_scale: Optional[float] = None,
        out: Optional[torch.Tensor] = None,
        lse: Optional[torch.Tensor] = None,
        return_lse: bool = False,
        enable_pdl: Optional[bool] = None,
        kv_cache_sf: Optional[torch.Tensor] = None,
    ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        reject_cuda_only(args=args, enable_pdl=enable_pdl, kv_cache_sf=kv_cache_sf)
        if o_scale is not None and o_scale != 1.0:
            raise ValueError(text.O_SCALE.format(value=o_scale))
        if q.dtype != self._cached_q_data_type or k.dtype != self._cached_kv_data_type:
            raise ValueError(
                f"q/kv dtypes {q.dtype}/{k.dtype} do not match plan()'s "
                f"{self._cached_q_data_type}/{self._cached_kv_data_type}"
            )
        if q.size(0) != self._qo_indptr_last:
            raise ValueError(f"q.shape[0] ({q.size(0)}) does not match qo_indptr[-1] ({self._qo_indptr_last}).")
        rows, heads = q.size(0), q.size(1)
        out = _out_buffer(out, (rows, heads, v.shape[-1]), self._cached_o_data_type, q.device)
        lse = _lse_buffer(lse, (rows, heads), q.device) if return_lse else None
        sm = self._sm_scale if self._sm_scale is not None else 1.0 / math.sqrt(q.size(-1))
        sm *= (q_scale if q_scale is not None else 1.0) * (k_scale if k_scale is not None else 1.0)
        layout, batch, cap, window = self._kv_layout, self._batch_size, self._logits_soft_cap, self._window_left
        mask_mode = K.CUSTOM if self._custom_mask_buf is not None else (K.CAUSAL if self._causal else K.NON_CAUSAL)

        def kernel(sm: float = sm, mask_mode: int = mask_mode) -> None:
            ip = self._kv_indptr_buf[: batch + 1].cpu().tolist()
            kv_lens = [ip[b + 1] - ip[b] for b in range(batch)]

            def kv_of(b: int, kv: int) -> tuple[torch.Tensor, torch.Tensor]:
                s = ip[b]
                if layout == "NHD":
                    return k[s : s + kv], v[s : s + kv]
                return k[:, s : s + kv].transpose(0, 1), v[:, s : s + kv].transpose(0, 1)

            batch_attention(
                q,
                out,
                lse,
                self._qo_indptr_buf,
                kv_lens,
                kv_of,
                mask_mode,
                window,
                cap,
                sm,
                self._custom_mask_buf,
                self._mask_indptr_buf,
                batch,
            )
            if v_scale is not None:
                out.mul_(v_scale)

        launch(kernel)
        return (out, lse) if return_lse else out  # type: ignore[return-value]


def _out_buffer(out: Optional[torch.Tensor], shape: tuple, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    if out is None:
        return torch.empty(shape, dtype=dtype, device=device)
    _check_buffer(out, shape, dtype, "out")
    return out


def _lse_buffer(lse: Optional[torch.Tensor], shape: tuple, device: torch.device) -> torch.Tensor:
    if lse is None:
        return torch.empty(shape, dtype=torch.float32, device=device)
    _check_buffer(lse, shape, torch.float32, "lse")
    return lse


# ---- single prefill ------------------------------------------------------------------------------


def get_single_prefill_module(backend: str, *args: Any) -> Any:
    """The module single prefill runs; the fork's tests patch this global to see the resolved backend."""
    return (backend, args)


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
) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """Single-request prefill (s1, s4 "Single prefill"); nothing exposes the resolved backend."""
    reject_cuda_only(use_fp16_qk_reduction=use_fp16_qk_reduction)
    if backend not in BACKENDS:
        raise ValueError(text.RAGGED_BACKEND.format(backend=backend))
    kk = k if kv_layout == "NHD" else k.transpose(0, 1)
    vv = v if kv_layout == "NHD" else v.transpose(0, 1)
    qo, kv = q.shape[0], kk.shape[0]
    arch = arch_caps._device_arch(q.device)
    if backend == "auto":
        backend, _ = _auto_select_prefill_backend(
            q.device,
            dtype_q=q.dtype,
            dtype_kv=k.dtype,
            kv_layout=kv_layout,
            has_custom_mask=custom_mask is not None or packed_custom_mask is not None,
            head_dim_qk=q.shape[-1],
            head_dim_vo=v.shape[-1],
            pos_encoding_mode=pos_encoding_mode,
            op="single_prefill",
            causal=causal,
            logits_soft_cap=logits_soft_cap,
            kv_len=kv,
        )
        if backend == "aiter":
            try:
                _aiter_single_prefill_available()
            except Exception as e:
                aiter_utils.handle_aiter_probe_failure(e, "single_prefill")  # fatal ones re-raise
                backend = "fa2"  # silently (s4)
        _reject_fp8_on_fa2(q.dtype, backend)
    elif backend == "aiter":
        _require_aiter_runtime(q.device, "single_prefill")
        _reject_aiter_features(
            arch,
            kv_layout=kv_layout,
            pos_encoding_mode=pos_encoding_mode,
            causal=causal,
            logits_soft_cap=logits_soft_cap,
            head_dim=q.shape[-1],
            kv_len=kv,
        )
        _aiter_single_prefill_available()
    else:
        _reject_fp8_on_fa2(q.dtype, backend)
    if backend == "aiter" and q.dtype in FP8_PREFILL_DTYPES:
        raise NotImplementedError(text.FP8_NOT_PAGED.format(api="single prefill", dtype_q=q.dtype))
    out_dtype = _output_dtype(q.dtype, o_dtype)
    get_single_prefill_module(backend, q.dtype, k.dtype, out_dtype, q.shape[-1], v.shape[-1])
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(q.size(-1))
    if custom_mask is not None and packed_custom_mask is None:
        packed_custom_mask = K.pack_bits(custom_mask.contiguous().view(-1), "little")
    mask_mode = K.CUSTOM if packed_custom_mask is not None else (K.CAUSAL if causal else K.NON_CAUSAL)
    custom = K.unpack_bits(packed_custom_mask, 0, qo * kv) if packed_custom_mask is not None else None
    out = torch.empty(q.shape[:-1] + (v.shape[-1],), dtype=out_dtype, device=q.device)
    lse = torch.empty((qo, q.size(1)), dtype=torch.float32, device=q.device) if return_lse else None
    o, lse_nat = K.attend(
        q, kk, vv, K.keep_mask(qo, kv, mask_mode, window_left, custom), sm_scale, logits_soft_cap or 0.0
    )
    _store(out, lse, 0, o, lse_nat * K.LOG2E)  # the kernels' base 2
    return (out, lse) if return_lse else out  # type: ignore[return-value]
