"""What the batched torch adapters share: a batch as users hand it to torch, B > 1 in one call.

The per-request adapters (kernels/torch_sdpa.py, kernels/torch_flex.py) call torch with batch 1;
the batched ones build, from the same physical KV store and slot indices (kernels/_torch_common.py):

  * a PADDED batch: q [B, Hq, Lq, Dqk], k [B, Hkv, Lk, Dqk], v [B, Hkv, Lk, Dvo] with Lq, Lk the
    batch's largest lengths, zeros past each request's own length (what users pad with), laid out
    [B, L, H, D] and transposed, as a model's projections come out;
  * a boolean mask [B, 1, Lq, Lk] (True = attend) that hides the padding and carries each
    request's own bottom-right causal, window and custom mask (padded query rows: all False);
  * PACKED (jagged) q, k, v [total, H, D] with offsets, for nested tensors.

Only real rows are written to the output (`store_padded`): a padded row's value is never reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from kernels import skips
from kernels._torch_common import KVSlots, physical_kv, store_rows
from kernels.protocol import Support
from kernels.torch_sdpa import explicit_mask
from scenarios.case import Case
from scenarios.tensors import Inputs

# The smallest batch a padded backend serves: a batch of one is the very call its per-request
# backend makes (no padding, the request's own mask), so it would only repeat that record.
MIN_PADDED_BATCH = 2


@dataclass(frozen=True)
class Padded:
    q: torch.Tensor  # [B, Hq, Lq, Dqk]
    k: torch.Tensor  # [B, Hkv, Lk, Dqk]
    v: torch.Tensor  # [B, Hkv, Lk, Dvo]


def max_lengths(qo_lens: tuple[int, ...], kv_lens: tuple[int, ...]) -> tuple[int, int]:
    """(Lq, Lk): the padded lengths of a batch, 0 for an empty batch."""
    return max(qo_lens, default=0), max(kv_lens, default=0)


def uniform(qo_lens: tuple[int, ...], kv_lens: tuple[int, ...]) -> bool:
    """Whether every request has the same (qo_len, kv_len): a batch with no padding at all."""
    return len(set(zip(qo_lens, kv_lens))) <= 1


def batch_decline(case: Case, per_request: str) -> Optional[Support]:
    """The decline of a padded backend for a batch smaller than MIN_PADDED_BATCH, naming the
    per-request backend that makes that call."""
    if case.batch_size >= MIN_PADDED_BATCH:
        return None
    return Support.no(
        skips.detail(
            skips.LAYOUT,
            f"a batch of {case.batch_size}: padded calls start at B={MIN_PADDED_BATCH}; "
            f"backend {per_request!r} makes this call",
        )
    )


def pad_batch(inputs: Inputs, slots: KVSlots) -> Padded:
    """q, k, v of every request padded with zeros to the batch's largest lengths."""
    c = inputs.case
    lq, lk = max_lengths(c.qo_lens, c.kv_lens)
    dev, b = inputs.device, c.batch_size
    k_store, v_store = physical_kv(inputs)
    q = torch.zeros((b, lq, c.num_qo_heads, c.head_dim_qk), dtype=inputs.q.dtype, device=dev)
    k = torch.zeros((b, lk, c.num_kv_heads, c.head_dim_qk), dtype=k_store.dtype, device=dev)
    v = torch.zeros((b, lk, c.num_kv_heads, c.head_dim_vo), dtype=v_store.dtype, device=dev)
    q0 = 0
    for i, (qo, kv) in enumerate(zip(c.qo_lens, c.kv_lens)):
        q[i, :qo] = inputs.q[q0 : q0 + qo]
        s = slots.per_request[i]
        k[i, :kv] = k_store.index_select(1, s).transpose(0, 1)
        v[i, :kv] = v_store.index_select(1, s).transpose(0, 1)
        q0 += qo
    return Padded(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))


def padded_mask(inputs: Inputs) -> torch.Tensor:
    """Boolean [B, 1, Lq, Lk], True = attend: each request's own mask, padding hidden."""
    c = inputs.case
    lq, lk = max_lengths(c.qo_lens, c.kv_lens)
    keep = torch.zeros((c.batch_size, 1, lq, lk), dtype=torch.bool, device=inputs.device)
    for i, (qo, kv) in enumerate(zip(c.qo_lens, c.kv_lens)):
        keep[i, 0, :qo, :kv] = explicit_mask(
            qo, kv, causal=c.causal, window_left=c.window_left, custom=inputs.request_mask(i), device=inputs.device
        )
    return keep


def store_padded(out: torch.Tensor, qo_lens: tuple[int, ...], o: torch.Tensor) -> None:
    """Write each request's real rows of o [B, H, Lq, D] (or [B, H, Lq]) into the packed out."""
    q0 = 0
    for i, qo in enumerate(qo_lens):
        store_rows(out, q0, o[i, :, :qo].transpose(0, 1))
        q0 += qo


def packed_kv(inputs: Inputs, slots: KVSlots) -> tuple[torch.Tensor, torch.Tensor]:
    """K and V of every request, packed in request order, contiguous: [total_kv, Hkv, D]."""
    k_store, v_store = physical_kv(inputs)
    dev = inputs.device
    allslots = torch.cat(slots.per_request) if slots.per_request else torch.zeros(0, dtype=torch.int64, device=dev)
    k = k_store.index_select(1, allslots).transpose(0, 1).contiguous()
    return k, v_store.index_select(1, allslots).transpose(0, 1).contiguous()
