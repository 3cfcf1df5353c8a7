"""The stand-ins' "kernels": plain fp32 torch attention, bit packing and page gathering.

Shared by the upstream FlashInfer model (kernels/standins/upstream_flashinfer/) and the ROCm fork
layered on it (kernels/standins/rocm_flashinfer/); part of neither library's API. Every backend of
a stand-in (fa2, fa3, aiter, ...) computes with these, so a stand-in result says what the adapter
asked for, never how a real kernel answers.

Conventions are FlashInfer's: q [qo, Hq, D], k/v [kv, Hkv, D] (GQA by division), bottom-right
causal, window_left counted back from the diagonal, soft cap before masking, base-2 LSE from the
kernels (the caller converts the natural log returned here), packed masks in "little" bit order
(bit b of byte n is element 8n + b).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import torch

__attncheck_standin__ = "flashinfer-standin-kernels"

LOG2E = 1.44269504088896340736
LN2 = 0.6931471805599453094
NON_CAUSAL, CAUSAL, CUSTOM = 0, 1, 2  # MaskMode values


def pack_bits(x: torch.Tensor, bitorder: str = "big") -> torch.Tensor:
    """Bool/0-1 tensor -> uint8, 8 elements a byte, zero-padded at the end."""
    bits = x.reshape(-1).to(torch.uint8)
    pad = (-bits.numel()) % 8
    if pad:
        bits = torch.cat([bits, bits.new_zeros(pad)])
    shifts = torch.arange(8, dtype=torch.int32) if bitorder == "little" else torch.arange(7, -1, -1, dtype=torch.int32)
    w = (1 << shifts).to(torch.int32).to(bits.device)
    return (bits.view(-1, 8).to(torch.int32) * w).sum(1).to(torch.uint8)


def segment_pack_bits(
    x: torch.Tensor, indptr: torch.Tensor, bitorder: str = "big"
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Each segment packed on its own; returns (packed, byte indptr)."""
    ip = indptr.cpu().tolist()
    parts = [pack_bits(x[ip[i] : ip[i + 1]], bitorder) for i in range(len(ip) - 1)]
    packed = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.uint8, device=x.device)
    sizes = torch.tensor([(ip[i + 1] - ip[i] + 7) // 8 for i in range(len(ip) - 1)], dtype=torch.int64)
    new = torch.zeros(len(ip), dtype=indptr.dtype)
    if len(ip) > 1:
        new[1:] = torch.cumsum(sizes, 0).to(indptr.dtype)
    total = int(new[-1])
    if total < 0:  # upstream allocates its output as torch.empty(indptr_new[-1]) (packbits.py:128-132)
        raise RuntimeError(f"Trying to create tensor with negative dimension {total}: [{total}]")
    return packed, new.to(indptr.device)


def unpack_bits(packed: torch.Tensor, byte_off: int, n: int) -> torch.Tensor:
    """n little-endian bits starting at byte `byte_off` of a packed mask."""
    if n == 0:
        return torch.zeros(0, dtype=torch.bool)
    nbytes = (n + 7) // 8
    chunk = packed[byte_off : byte_off + nbytes].to(torch.int32).cpu()
    if chunk.numel() < nbytes:
        chunk = torch.cat([chunk, torch.zeros(nbytes - chunk.numel(), dtype=torch.int32)])
    return (((chunk.view(-1, 1) >> torch.arange(8)) & 1).reshape(-1)[:n]).to(torch.bool)


def keep_mask(qo: int, kv: int, mask_mode: int, window_left: int, custom: Optional[torch.Tensor]) -> torch.Tensor:
    """[qo, kv] bool: what one request may attend to (a custom mask replaces causal, as in FlashInfer)."""
    row = torch.arange(qo).view(-1, 1) + (kv - qo)
    col = torch.arange(kv).view(1, -1)
    keep = torch.ones((qo, kv), dtype=torch.bool)
    if mask_mode == CUSTOM:
        assert custom is not None
        keep &= custom.view(qo, kv)
    elif mask_mode == CAUSAL:
        keep &= col <= row
    if window_left >= 0:
        keep &= col >= row - window_left
    return keep


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    keep: Optional[torch.Tensor],
    sm_scale: float,
    cap: float,
    q_head_scale: Optional[torch.Tensor] = None,
    v_head_scale: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """q [qo, Hq, D], k [kv, Hk, D], v [kv, Hk, Dv] -> (out [qo, Hq, Dv] fp32, natural-log lse [qo, Hq])."""
    hq, hk = q.shape[1], k.shape[1]
    g = hq // hk
    qf, kf, vf = q.float(), k.float().repeat_interleave(g, 1), v.float().repeat_interleave(g, 1)
    s = torch.einsum("qhd,khd->hqk", qf, kf) * sm_scale
    if q_head_scale is not None:
        s = s * q_head_scale.float().view(-1, 1, 1)
    if cap > 0:
        s = cap * torch.tanh(s / cap)
    if keep is not None:
        s = s.masked_fill(~keep.view(1, *keep.shape), float("-inf"))
    lse = torch.logsumexp(s, -1)  # [h, q]
    p = torch.nan_to_num(torch.exp(s - lse.unsqueeze(-1)), nan=0.0)
    out = torch.einsum("hqk,khd->qhd", p, vf)
    if v_head_scale is not None:
        out = out * v_head_scale.float().view(1, -1, 1)
    return out, lse.t()


def page_tokens(cache: torch.Tensor, layout: str, pages: List[int], kv: int) -> torch.Tensor:
    """The first `kv` tokens of `pages` of a paged cache ([P, page, H, D] NHD / [P, H, page, D] HND) as [kv, H, D]."""
    if not pages or kv <= 0:
        d = cache.shape[-1]
        h = cache.shape[2] if layout == "NHD" else cache.shape[1]
        return cache.new_zeros((0, h, d))
    sel = cache[torch.tensor(pages, dtype=torch.long)]
    if layout == "HND":
        sel = sel.transpose(1, 2)
    return sel.reshape(-1, sel.shape[2], sel.shape[3])[:kv]


def seq_lens(indptr: torch.Tensor, last_page_len: torch.Tensor, page_size: int) -> torch.Tensor:
    """KV length of each request of a page table: (pages - 1) * page_size + last_page_len (get_seq_lens)."""
    n = indptr[1:] - indptr[:-1]
    return ((n - 1).clamp(min=0) * page_size + last_page_len).to(torch.int32)


def page_mask_indptr(
    qo_indptr: torch.Tensor, paged_kv_indptr: torch.Tensor, paged_kv_last_page_len: torch.Tensor, page_size: int
) -> torch.Tensor:
    """Element offsets of each request's [qo, kv] mask block, kv read from the page table."""
    mask_indptr = torch.empty_like(qo_indptr)
    mask_indptr[0] = 0
    mask_indptr[1:] = torch.cumsum(
        (qo_indptr[1:] - qo_indptr[:-1])
        * ((paged_kv_indptr[1:] - paged_kv_indptr[:-1] - 1) * page_size + paged_kv_last_page_len),
        0,
    )
    return mask_indptr


def mask_indptr(qo_indptr: torch.Tensor, kv_indptr: torch.Tensor) -> torch.Tensor:
    """Element offsets of each request's [qo, kv] mask block of a ragged batch."""
    out = torch.empty_like(qo_indptr)
    out[0] = 0
    out[1:] = torch.cumsum((qo_indptr[1:] - qo_indptr[:-1]) * (kv_indptr[1:] - kv_indptr[:-1]), 0)
    return out


def merge_state_in_place(v: torch.Tensor, s: torch.Tensor, v_other: torch.Tensor, s_other: torch.Tensor) -> None:
    """(v, s) <- the merge of two partial attention states with base-2 LSEs s, s_other ([n, H])."""
    m = torch.maximum(s, s_other)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    a, b = torch.exp2(s - m), torch.exp2(s_other - m)
    tot = a + b
    merged = (v.float() * a.unsqueeze(-1) + v_other.float() * b.unsqueeze(-1)) / tot.clamp(min=1e-30).unsqueeze(-1)
    v.copy_(merged.to(v.dtype))
    s.copy_(m + torch.log2(tot))
