"""The upstream model's batch "kernel" (a CPU stand-in): per request gather keys, mask, attend, store (base-2 LSE).

Part of the upstream FlashInfer model, not of its API; numerics are kernels/standins/_kernels.py.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import torch

from kernels.standins import _kernels as K

__attncheck_standin__ = "flashinfer-upstream"
CUSTOM = K.CUSTOM
_bits = K.unpack_bits
_keep = K.keep_mask
_kv_tokens = K.page_tokens
_compute_page_mask_indptr = K.page_mask_indptr
_compute_mask_indptr = K.mask_indptr


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    keep: Optional[torch.Tensor],
    sm_scale: float,
    cap: float,
    q_head_scale: Optional[torch.Tensor] = None,
    v_head_scale: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """q [qo, Hq, D], k [kv, Hk, D], v [kv, Hk, Dv] -> out [qo, Hq, Dv] fp32, base-2 lse [qo, Hq]."""
    out, lse = K.attend(q, k, v, keep, sm_scale, cap, q_head_scale, v_head_scale)
    return out, lse * K.LOG2E


def _store(out: torch.Tensor, lse: Optional[torch.Tensor], q0: int, o: torch.Tensor, l2: torch.Tensor) -> None:
    out[q0 : q0 + o.shape[0]] = o.to(out.dtype)
    if lse is not None:
        lse[q0 : q0 + o.shape[0]] = l2


def batch_attention(
    q: torch.Tensor,
    out: torch.Tensor,
    lse: Optional[torch.Tensor],
    qo_indptr: torch.Tensor,
    kv_lens: List[int],
    kv_of: Callable[[int, int], Tuple[torch.Tensor, torch.Tensor]],
    mask_mode: int,
    window_left: int,
    cap: float,
    sm_scale: float,
    custom_mask: Optional[torch.Tensor],
    mask_indptr: Optional[torch.Tensor],
    batch: int,
    v_scale: float = 1.0,
) -> None:
    """Every request of a batch: its keys and values from kv_of(b, kv_len), its mask, attention, stored rows."""
    qi = qo_indptr[: batch + 1].cpu().tolist()
    mi = mask_indptr.cpu().tolist() if mask_indptr is not None else None
    for b in range(batch):
        q0, q1 = qi[b], qi[b + 1]
        qo, kv = q1 - q0, max(0, kv_lens[b])
        kb, vb = kv_of(b, kv)
        custom = None
        if mask_mode == CUSTOM:
            assert custom_mask is not None and mi is not None
            custom = _bits(custom_mask, mi[b], qo * kv)
        keep = _keep(qo, kv, mask_mode, window_left, custom)
        o, l2 = _attend(q[q0:q1], kb, vb, keep, sm_scale, cap)
        _store(out, lse, q0, o * v_scale if v_scale != 1.0 else o, l2)


def _batch_kernel(
    *,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: Optional[torch.Tensor],
    qo_indptr: torch.Tensor,
    kv_lens: List[int],
    kv_index: Any,
    layout: str,
    mask_mode: int,
    window_left: int,
    cap: float,
    sm_scale: float,
    custom_mask: Optional[torch.Tensor],
    mask_indptr: Optional[torch.Tensor],
    batch: int,
    v_scale_scalar: float = 1.0,
) -> None:
    """batch_attention with keys and values gathered one tensor at a time by kv_index(t, b, kv_len)."""
    batch_attention(
        q,
        out,
        lse,
        qo_indptr,
        kv_lens,
        lambda b, kv: (kv_index(k, b, kv), kv_index(v, b, kv)),
        mask_mode,
        window_left,
        cap,
        sm_scale,
        custom_mask,
        mask_indptr,
        batch,
        v_scale_scalar,
    )
