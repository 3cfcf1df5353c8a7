"""The only mask math in attncheck: which keys a query row may attend.

Conventions (DESIGN.md), for one request with q = qo_len query rows and k = kv_len keys,
query row i and key j:
  causal (bottom-right aligned)   j <= i + (k - q)
  sliding window, window_left=w   j >= i + (k - q) - w        (w >= 0; independent of causal)
  custom mask                     mask[i, j] is True          (True = attend)
Every feature that is on is ANDed. Rows of a request whose qo_len exceeds kv_len therefore have
nothing to attend under causal masking at the top; the oracle returns 0 and LSE -inf for them.
"""

from __future__ import annotations

from typing import Optional

import torch


def masks_any(causal: bool, window_left: int, custom: Optional[torch.Tensor]) -> bool:
    """Whether these options mask any key (else allowed() is None: every key attended)."""
    return causal or window_left >= 0 or custom is not None


def allowed(
    rows: torch.Tensor,
    qo_len: int,
    kv_len: int,
    *,
    causal: bool,
    window_left: int,
    custom: Optional[torch.Tensor] = None,
) -> Optional[torch.Tensor]:
    """Boolean [len(rows), kv_len] of attendable keys for query rows `rows`; None means all.

    `custom` is the request's full [qo_len, kv_len] custom mask (or None).
    """
    if not masks_any(causal, window_left, custom):
        return None
    i = rows.view(-1, 1)
    j = torch.arange(kv_len, device=rows.device).view(1, -1)
    diag = i + (kv_len - qo_len)  # the key aligned with query row i, bottom-right
    keep = torch.ones((rows.numel(), kv_len), dtype=torch.bool, device=rows.device)
    if causal:
        keep &= j <= diag
    if window_left >= 0:
        keep &= j >= diag - window_left
    if custom is not None:
        keep &= custom[rows]
    return keep


def pack_bits(mask: torch.Tensor) -> torch.Tensor:
    """FlashInfer's packed form of a flat boolean mask: uint8, little bit order, zero padded.

    Bit b of byte n holds element 8*n + b (flashinfer.quantization.packbits(..., "little")).
    """
    flat = mask.reshape(-1).to(torch.uint8)
    pad = (-flat.numel()) % 8
    if pad:
        flat = torch.cat([flat, flat.new_zeros(pad)])
    weights = (2 ** torch.arange(8, dtype=torch.int32, device=flat.device)).to(torch.uint8)
    return (flat.view(-1, 8) * weights).sum(dim=1, dtype=torch.int32).to(torch.uint8)


def unpack_bits(packed: torch.Tensor, numel: int) -> torch.Tensor:
    """Inverse of pack_bits: the first `numel` booleans."""
    bits = (packed.to(torch.int32).view(-1, 1) >> torch.arange(8, device=packed.device)) & 1
    return bits.reshape(-1)[:numel].to(torch.bool)


def packed_segment_indptr(mask_indptr: torch.Tensor) -> torch.Tensor:
    """Per-request offsets into the packed mask when each request is packed on its own.

    FlashInfer's segment_packbits pads each request's bits to a whole byte; this gives the byte
    offsets (the `mask_indptr` its kernels read after packing).
    """
    lens = mask_indptr[1:] - mask_indptr[:-1]
    nbytes = (lens + 7) // 8
    out = torch.zeros_like(mask_indptr)
    out[1:] = torch.cumsum(nbytes, 0)
    return out


def segment_pack_bits(custom_mask: torch.Tensor, mask_indptr: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Pack each request's mask separately (byte-aligned), as FlashInfer's segment_packbits does."""
    parts = [
        pack_bits(custom_mask[int(mask_indptr[i]) : int(mask_indptr[i + 1])]) for i in range(mask_indptr.numel() - 1)
    ]
    packed = torch.cat(parts) if parts else custom_mask.new_zeros(0, dtype=torch.uint8)
    return packed, packed_segment_indptr(mask_indptr)
