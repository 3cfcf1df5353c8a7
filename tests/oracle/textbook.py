"""A second, independent attention reference in float64, written from DESIGN.md alone.

Why a second reference: the oracle is vectorised, chunked and memory-bounded, and every kernel
verdict rests on it. This module shares none of its code (it imports nothing from `oracle/`)
and none of its structure: it loops over requests, query heads and query rows, walks the page
table one key at a time, and spells each convention out where it is applied:

  * scores  s = sm_scale * q.k over dequantised values (fp8: x.float() * descale);
  * GQA     query head h reads KV head h // (num_qo_heads // num_kv_heads);
  * soft cap s = cap * tanh(s / cap), before any masking;
  * causal  (bottom-right) key j is visible to row i iff j <= i + (kv_len - qo_len);
  * window  window_left = w >= 0 also requires j >= i + (kv_len - qo_len) - w;
  * custom  Inputs.request_mask(r)[i, j] must be True;
  * a row with no visible key has out 0 and lse -inf; lse is the natural log.

It is slow on purpose (plain Python loops): small cases only.

Besides out and lse it returns, per (row, head), the facts the oracle tests need to state their
bounds and properties: the largest |scaled score| magnitude the row's dot products could have
(sm_scale * sum_d |q_d k_d|, the condition number of the score rounding error) and the per-column
range of the V rows the row attends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from scenarios.tensors import Inputs, fp8_descales

_FP8 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2)


@dataclass
class Textbook:
    out: torch.Tensor  # [total_qo, Hq, Dvo] float64
    lse: torch.Tensor  # [total_qo, Hq] float64, natural log, -inf for empty rows
    score_abs: torch.Tensor  # [total_qo, Hq] max over visible keys of sm_scale * sum_d |q_d k_d|
    v_lo: torch.Tensor  # [total_qo, Hq, Dvo] min of visible V rows (+inf for empty rows)
    v_hi: torch.Tensor  # [total_qo, Hq, Dvo] max of visible V rows (-inf for empty rows)
    n_visible: torch.Tensor  # [total_qo, Hq] number of visible keys
    visible: list[torch.Tensor]  # per request, bool [qo_len, Hq, kv_len]
    head_dim_qk: int


def real_values(x: torch.Tensor, descale: float) -> torch.Tensor:
    """Stored values to float64 real values: fp8 is x.float() * descale, others exact."""
    if x.dtype in _FP8:
        return (x.float() * descale).double()
    return x.double()


def kv_token(inputs: Inputs, which: str, r: int, j: int) -> torch.Tensor:
    """Key or value token j of request r, all KV heads, as stored: [Hkv, D]."""
    c = inputs.case
    pool = inputs.k if which == "k" else inputs.v
    if c.is_paged:
        assert inputs.kv_page_indptr is not None and inputs.kv_page_indices is not None
        nth_page, slot = divmod(j, c.page_size)
        page = int(inputs.kv_page_indices[int(inputs.kv_page_indptr[r]) + nth_page])
        return pool[page, slot] if c.kv_layout == "NHD" else pool[page, :, slot]
    assert inputs.kv_indptr is not None
    t = int(inputs.kv_indptr[r]) + j
    return pool[t] if c.kv_layout == "NHD" else pool[:, t]


def request_kv(inputs: Inputs, which: str, r: int) -> torch.Tensor:
    """Request r's dequantised K or V, [kv_len, Hkv, D] float64, gathered token by token."""
    c = inputs.case
    _, k_descale, v_descale = fp8_descales(c)
    descale = k_descale if which == "k" else v_descale
    dim = c.head_dim_qk if which == "k" else c.head_dim_vo
    rows = [real_values(kv_token(inputs, which, r, j), descale) for j in range(c.kv_lens[r])]
    if not rows:
        return torch.zeros((0, c.num_kv_heads, dim), dtype=torch.float64)
    return torch.stack(rows)


def visible_keys(inputs: Inputs, r: int, i: int) -> list[bool]:
    """Which keys query row i of request r may attend, one bool per key."""
    c = inputs.case
    qo, kv = c.qo_lens[r], c.kv_lens[r]
    custom = inputs.request_mask(r)
    diag = i + (kv - qo)
    out = []
    for j in range(kv):
        ok = True
        if c.causal and not j <= diag:
            ok = False
        if c.window_left >= 0 and not j >= diag - c.window_left:
            ok = False
        if custom is not None and not bool(custom[i, j]):
            ok = False
        out.append(ok)
    return out


def textbook_attention(inputs: Inputs) -> Textbook:
    """Attention for `inputs` in float64 by the book (see the module docstring)."""
    c = inputs.case
    hq, dvo = c.num_qo_heads, c.head_dim_vo
    group = c.num_qo_heads // c.num_kv_heads
    q_descale, _, _ = fp8_descales(c)
    out = torch.zeros((c.total_qo, hq, dvo), dtype=torch.float64)
    lse = torch.full((c.total_qo, hq), -math.inf, dtype=torch.float64)
    score_abs = torch.zeros((c.total_qo, hq), dtype=torch.float64)
    v_lo = torch.full((c.total_qo, hq, dvo), math.inf, dtype=torch.float64)
    v_hi = torch.full((c.total_qo, hq, dvo), -math.inf, dtype=torch.float64)
    n_visible = torch.zeros((c.total_qo, hq), dtype=torch.float64)
    visible_all = []
    q_all = real_values(inputs.q.cpu(), q_descale)
    for r in range(c.batch_size):
        qo = c.qo_lens[r]
        first_row = int(inputs.qo_indptr[r])
        k = request_kv(inputs, "k", r)
        v = request_kv(inputs, "v", r)
        vis_r = torch.zeros((qo, hq, c.kv_lens[r]), dtype=torch.bool)
        for h in range(hq):
            kvh = h // group
            for i in range(qo):
                row = first_row + i
                q = q_all[row, h]
                visible = visible_keys(inputs, r, i)
                vis_r[i, h] = torch.tensor(visible, dtype=torch.bool)
                scores, values, magnitudes = [], [], []
                for j, ok in enumerate(visible):
                    if not ok:
                        continue
                    s = c.scale * float(torch.dot(q, k[j, kvh]))
                    if c.logits_soft_cap > 0:
                        s = c.logits_soft_cap * math.tanh(s / c.logits_soft_cap)
                    scores.append(s)
                    values.append(v[j, kvh])
                    magnitudes.append(c.scale * float((q * k[j, kvh]).abs().sum()))
                n_visible[row, h] = len(scores)
                if not scores:
                    continue  # nothing to attend: out 0, lse -inf
                m = max(scores)
                w = [math.exp(s - m) for s in scores]
                total = sum(w)
                lse[row, h] = m + math.log(total)
                vs = torch.stack(values)
                out[row, h] = sum(wj * vj for wj, vj in zip(w, vs)) / total
                score_abs[row, h] = max(magnitudes)
                v_lo[row, h] = vs.amin(dim=0)
                v_hi[row, h] = vs.amax(dim=0)
        visible_all.append(vis_r)
    return Textbook(
        out=out,
        lse=lse,
        score_abs=score_abs,
        v_lo=v_lo,
        v_hi=v_hi,
        n_visible=n_visible,
        visible=visible_all,
        head_dim_qk=c.head_dim_qk,
    )
