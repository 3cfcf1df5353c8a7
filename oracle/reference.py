"""The reference: attention for every layout and feature, computed exactly and memory-bounded.

    attention(inputs, precision="fp32") -> Reference(out, lse)

Shapes: out [total_qo, num_qo_heads, head_dim_vo], lse [total_qo, num_qo_heads], rows in the
packed order of `inputs.q` (request 0's rows first). For decode that is [batch, heads, ...]; for
single it is [qo_len, heads, ...].

Conventions, each tested in tests/oracle/:
  * scores s = sm_scale * q.k over the dequantised inputs (fp8 tensors times their per-tensor
    descale; other dtypes exactly as stored);
  * soft cap: s = cap * tanh(s / cap) on the scaled score, BEFORE masking;
  * masks: oracle/masks.py (bottom-right causal, window, custom; ANDed);
  * GQA/MQA: query head h reads KV head h // (num_qo_heads // num_kv_heads);
  * paged KV is read only through kv_page_indices (never in pool order);
  * a row with nothing to attend (kv_len 0, or fully masked) has out 0 and lse -inf;
  * lse is the NATURAL log of sum(exp(s)) over attended keys; lse_to_base2 converts.

Precision:
  "fp32"  (default) the oracle: all math in float32 on dequantised inputs.
  "fp64"  the same in float64.
  "input" the baseline of the tolerance model: the same math done the way a kernel in the input
          dtype does it. fp16/bf16 queries: both matmuls in that dtype, softmax in fp32 and its
          probabilities rounded to that dtype. fp8 queries: fp32 scores, probabilities rounded to
          the KV dtype (as fp8 kernels feed P to the second matmul). The output is rounded to
          o_dtype in every case.

Memory: work is split into (query-head block x query-row block) chunks whose full score rows
fit in `budget_bytes`, with K and V gathered and dequantised one key block at a time; a
[heads, q, kv] tensor for a whole long request is never built. Softmax stays exact (two passes
over whole rows), not an online rescaling.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch

from oracle.masks import allowed
from scenarios.dtypes import is_fp8, to_torch
from scenarios.tensors import Inputs, fp8_descales

Precision = Literal["fp32", "fp64", "input"]
PRECISIONS: tuple[str, ...] = ("fp32", "fp64", "input")
DEFAULT_BUDGET_BYTES = 256 * 2**20
LOG2E = 1.0 / math.log(2.0)
# Bytes of live temporaries per score element at a chunk's peak, in units of the score dtype:
# the scores themselves, the mask and its comparisons, and the probabilities' low-precision copy
# ("input" precision). _softmax works in place to keep this small.
_SCORE_COPIES = 3


@dataclass
class Reference:
    out: torch.Tensor
    lse: torch.Tensor
    precision: str


def lse_to_base2(lse: torch.Tensor) -> torch.Tensor:
    """Natural-log LSE to base 2 (FlashInfer's convention); -inf stays -inf."""
    return lse * LOG2E


def lse_from_base2(lse2: torch.Tensor) -> torch.Tensor:
    return lse2 / LOG2E


def _compute_dtypes(inputs: Inputs, precision: str) -> tuple[torch.dtype, torch.dtype | None]:
    """(dtype of the matmuls, dtype P is rounded to before P@V or None)."""
    c = inputs.case
    if precision == "fp64":
        return torch.float64, None
    if precision == "fp32" or c.q_dtype == "fp32":
        return torch.float32, None
    if is_fp8(c.q_dtype):
        return torch.float32, to_torch(c.kv_dtype) if is_fp8(c.kv_dtype) else None
    dt = to_torch(c.q_dtype)
    return dt, dt


def _dequant(x: torch.Tensor, descale: float, dtype: torch.dtype) -> torch.Tensor:
    """Stored values to real values in `dtype`: fp8 times its per-tensor descale."""
    if x.dtype in (torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2):
        return (x.to(torch.float32) * descale).to(dtype)
    return x.to(dtype)


def _kv_rows(inputs: Inputs, which: str, i: int, heads: torch.Tensor, k0: int, k1: int) -> torch.Tensor:
    """Keys [k0, k1) of request i's K or V for the given KV heads, [k1 - k0, len(heads), D], as stored.

    Paged KV is read through the page table: page n of request i is kv_page_indices[indptr[i]+n].
    """
    c = inputs.case
    src = inputs.k if which == "k" else inputs.v
    hnd = c.kv_layout == "HND"
    if c.is_paged:
        assert inputs.kv_page_indptr is not None and inputs.kv_page_indices is not None
        ps = c.page_size
        lo, hi = int(inputs.kv_page_indptr[i]), int(inputs.kv_page_indptr[i + 1])
        pages = inputs.kv_page_indices[lo:hi].long()
        pages = pages[k0 // ps:(k1 - 1) // ps + 1]
        # Pages and heads in one gather, so only the wanted heads are copied: [n, h, page, D].
        if hnd:  # pool [P, H, page, D]
            blk = src[pages.view(-1, 1), heads.view(1, -1)]
        else:  # pool [P, page, H, D]; advanced indices split by a slice come first
            blk = src[pages.view(-1, 1), :, heads.view(1, -1)]
        blk = blk.transpose(1, 2)  # [n, page, h, D]
        first = k0 % ps
        return blk.reshape(-1, heads.numel(), blk.shape[-1])[first:first + (k1 - k0)]
    assert inputs.kv_indptr is not None
    lo = int(inputs.kv_indptr[i])
    if hnd:
        return src[heads, lo + k0:lo + k1].transpose(0, 1)
    return src[lo + k0:lo + k1, heads]


def _plan_chunks(heads: int, group: int, rows: int, kv: int, dkv: int, elem: int, stored_elem: int,
                 budget: int) -> tuple[int, int, int]:
    """(query-head block, row block, key block) so one chunk's temporaries fit `budget`.

    Three quarters go to the chunk's full score rows [heads, rows, kv] (softmax is exact, over
    whole rows); one quarter to one key block of K or V (computed copy plus stored gather).
    Head blocks start at one KV head's group, so each gather serves as many rows as fit: K and V
    are re-read once per row block, and few row blocks keep the oracle fast on long contexts.
    """
    score_budget = budget * 3 // 4
    per_row = _SCORE_COPIES * kv * elem
    all_rows = max(1, score_budget // (rows * per_row))
    # The head block must also leave one key of K/V per head room in the K/V quarter.
    kv_heads_fit = (budget - score_budget) // (dkv * (elem + stored_elem))
    hb = max(1, min(heads, max(min(group, score_budget // per_row), all_rows), kv_heads_fit))
    rb = max(1, min(rows, score_budget // (hb * per_row)))
    kb = max(1, min(kv, (budget - score_budget) // (hb * dkv * (elem + stored_elem))))
    return hb, rb, kb


def attention(inputs: Inputs, precision: Precision = "fp32",
              budget_bytes: int = DEFAULT_BUDGET_BYTES) -> Reference:
    """Reference output and natural-log LSE for `inputs` (see the module docstring)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r} is not one of {PRECISIONS}")
    c = inputs.case
    mm_dtype, p_dtype = _compute_dtypes(inputs, precision)
    acc = torch.float64 if precision == "fp64" else torch.float32
    dev = inputs.device
    out = torch.zeros((c.total_qo, c.num_qo_heads, c.head_dim_vo), dtype=acc, device=dev)
    lse = torch.full((c.total_qo, c.num_qo_heads), -math.inf, dtype=acc, device=dev)
    qs, ks, vs = fp8_descales(c)
    group = c.group_size
    elem = torch.tensor([], dtype=acc).element_size()
    for i, (qo, kv) in enumerate(zip(c.qo_lens, c.kv_lens)):
        if qo == 0 or kv == 0:
            continue  # nothing to attend: out 0, lse -inf
        q0 = int(inputs.qo_indptr[i])
        custom = inputs.request_mask(i)
        hb, rb, kb = _plan_chunks(c.num_qo_heads, group, qo, kv, max(c.head_dim_qk, c.head_dim_vo), elem,
                                  inputs.k.element_size(), budget_bytes)
        for h0 in range(0, c.num_qo_heads, hb):
            qheads = torch.arange(h0, min(h0 + hb, c.num_qo_heads), device=dev)
            kv_heads = qheads // group
            for r0 in range(0, qo, rb):
                rows = torch.arange(r0, min(r0 + rb, qo), device=dev)
                q = _dequant(inputs.q[q0 + rows][:, qheads], qs, mm_dtype)
                keep = allowed(rows, qo, kv, causal=c.causal, window_left=c.window_left, custom=custom)
                s = torch.empty((qheads.numel(), rows.numel(), kv), dtype=acc, device=dev)
                for k0 in range(0, kv, kb):
                    k = _dequant(_kv_rows(inputs, "k", i, kv_heads, k0, min(k0 + kb, kv)), ks, mm_dtype)
                    s[:, :, k0:k0 + kb] = torch.einsum("rhd,khd->hrk", q, k)
                p, l_blk = _softmax(s, keep, c.scale, c.logits_soft_cap)
                if p_dtype is not None:
                    p = p.to(p_dtype)
                o_blk = torch.zeros((rows.numel(), qheads.numel(), c.head_dim_vo), dtype=acc, device=dev)
                for k0 in range(0, kv, kb):
                    v = _dequant(_kv_rows(inputs, "v", i, kv_heads, k0, min(k0 + kb, kv)), vs, mm_dtype)
                    o_blk += torch.einsum("hrk,khd->rhd", p[:, :, k0:k0 + kb].to(v.dtype), v).to(acc)
                out[q0 + rows.view(-1, 1), qheads.view(1, -1)] = o_blk
                lse[q0 + rows.view(-1, 1), qheads.view(1, -1)] = l_blk
    if precision == "input":
        out = out.to(to_torch(c.o_dtype)).to(acc)
    return Reference(out=out, lse=lse, precision=precision)


def _softmax(s: torch.Tensor, keep: torch.Tensor | None, scale: float, cap: float
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw scores [h, r, kv] -> probabilities (in place, in s) and natural-log LSE [r, h]."""
    s.mul_(scale)
    if cap > 0:
        s.div_(cap).tanh_().mul_(cap)
    if keep is not None:
        s.masked_fill_(~keep.unsqueeze(0), -math.inf)
    m = s.amax(dim=-1, keepdim=True)
    empty = torch.isneginf(m)
    p = s.sub_(torch.where(empty, torch.zeros_like(m), m)).exp_()
    denom = p.sum(dim=-1, keepdim=True)
    lse = (m + torch.log(denom)).squeeze(-1)
    p.div_(torch.where(empty, torch.ones_like(denom), denom))
    return p, lse.transpose(0, 1)
