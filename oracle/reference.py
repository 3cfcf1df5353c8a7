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
  "fp32"   (default) the oracle: all math in float32 on dequantised inputs (no TF32, whatever
           the caller's torch settings).
  "fp64"   the same in float64.
  "honest" the baseline of the tolerance model: the fp32 oracle rounding where an honest
           low-precision kernel must and nowhere else (oracle/honest.py lists the points: the
           soft cap's tanh, the normalised P before P.V, the output once; the LSE with P's
           rounding and the scores' fp32 order at their magnitude).

Memory: work is split into (query-head block x query-row block) chunks whose full score rows
fit in `budget_bytes` (default_budget: 256 MiB on the CPU; on a GPU 1/32 of its memory, at most
4 GiB, since few large chunks keep its GEMMs at speed), with K and V gathered and dequantised
one key block at a time; a [heads, q, kv] tensor for a whole long request is never built
("honest" rounds P in place, in the same budget). Softmax stays exact (two passes over whole
rows), not an online rescaling; on the GPU it is taken fused (`_softmax_fused`: the row max,
then torch.softmax, the LSE read from P at the max), three passes over the scores instead of
six, and a large chunk's is the literal softmax compiled (`_softmax_exact` through torch.compile:
Inductor fuses it into two passes); the tests hold the paths to each other and to the textbook.
Each chunk is two batched GEMMs over its KV heads (GQA by view, not by copying K/V per query
head) and a few whole-tensor passes between them.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import torch

from oracle.honest import EXACT, Rounding, honest
from oracle.masks import allowed, masks_any
from scenarios.tensors import Inputs, fp8_descales

Precision = Literal["fp32", "fp64", "honest"]
PRECISIONS: tuple[str, ...] = ("fp32", "fp64", "honest")
DEFAULT_BUDGET_BYTES = 256 * 2**20  # the CPU's budget, and the floor of any device's
# A GPU's default budget: this share of its memory, at most the cap. Few large chunks are what keep its GEMMs at
# speed; the share leaves the kernel under test the rest of a GPU of any size.
GPU_BUDGET_SHARE = 32
GPU_BUDGET_CAP_BYTES = 4 * 2**30
LOG2E = 1.0 / math.log(2.0)
# Bytes of live temporaries per score element at a chunk's peak, in units of the score dtype:
# the scores themselves (_softmax works in place), the rounded copies of a quarter of the rows
# while "honest" rounds P in place (under half) and the boolean mask [rows, kv] that the chunk's
# heads share (a quarter at most, a half while negated): under two in all.
_SCORE_COPIES = 2
# The fused softmax (_softmax_fused) holds the scores and torch.softmax's P at once, and the mask beside them.
_FUSED_SCORE_COPIES = 3
# Where attention() takes the fused softmax unless told: the GPU, whose time is the score passes' (the literal
# softmax, which the CPU keeps, makes six; the fused one three). tests/oracle/ hold the two paths to each other.
FUSED_DEVICES: tuple[str, ...] = ("cuda",)
# Where a fused chunk of at least COMPILED_MIN_SCORES scores takes _softmax_exact compiled (Inductor: two reads of
# the scores and one write): the GPU, where Triton builds it in seconds. Below that size a compiled call's fixed
# cost is more than the passes it saves; on the CPU Inductor's C++ build costs more than any run saves.
COMPILED_DEVICES: tuple[str, ...] = ("cuda",)
COMPILED_MIN_SCORES = 2**24
# dynamo's limit on the graphs of one function, for _softmax_exact: one graph per cap or none, mask or none and
# size dynamo specialises (a chunk of one head), and any other compile of the function counts against it too.
COMPILED_RECOMPILE_LIMIT = 64


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


def _dequant(x: torch.Tensor, descale: float, dtype: torch.dtype) -> torch.Tensor:
    """Stored values to real values in `dtype`: fp8 times its per-tensor descale."""
    if x.dtype in (torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2):
        return (x.to(torch.float32) * descale).to(dtype)
    return x.to(dtype)


def _kv_rows(inputs: Inputs, which: str, span: tuple[int, int], kv0: int, kv1: int, k0: int, k1: int) -> torch.Tensor:
    """Keys [k0, k1) of one request's K or V for KV heads [kv0, kv1), [k1 - k0, kv1 - kv0, D], as stored.

    `span` is the request's [indptr[i], indptr[i + 1]): its tokens in packed K/V, or its entries
    of the page table (paged KV is read only through kv_page_indices).
    """
    c = inputs.case
    src = inputs.k if which == "k" else inputs.v
    hnd = c.kv_layout == "HND"
    if c.is_paged:
        assert inputs.kv_page_indices is not None
        ps = c.page_size
        lo, hi = span
        pages = inputs.kv_page_indices[lo:hi].long()
        pages = pages[k0 // ps : (k1 - 1) // ps + 1]
        # One gather of the pages, copying only the wanted heads: [n, page, h, D].
        if hnd:  # pool [P, H, page, D]
            blk = src[pages, kv0:kv1].transpose(1, 2)
        else:  # pool [P, page, H, D]
            blk = src[pages, :, kv0:kv1]
        first = k0 % ps
        return blk.reshape(-1, kv1 - kv0, blk.shape[-1])[first : first + (k1 - k0)]
    lo = span[0]
    if hnd:
        return src[kv0:kv1, lo + k0 : lo + k1].transpose(0, 1)
    return src[lo + k0 : lo + k1, kv0:kv1]


def _plan_chunks(
    heads: int, group: int, rows: int, kv: int, dkv: int, elem: int, stored_elem: int, budget: int, copies: int
) -> tuple[int, int, int]:
    """(query-head block, row block, key block) so one chunk's temporaries fit `budget`.

    Three quarters go to the chunk's full score rows [heads, rows, kv] (softmax is exact, over whole
    rows), `copies` score elements per score (_SCORE_COPIES, or _FUSED_SCORE_COPIES for the fused
    softmax); one quarter to one key block of K or V (computed copy plus stored gather).
    Head blocks start at one KV head's group, so each gather serves as many rows as fit: K and V
    are re-read once per row block, and few row blocks keep the oracle fast on long contexts.
    A head block is whole groups or a divisor of one, so it never splits a group unevenly.
    """
    score_budget = budget * 3 // 4
    per_row = copies * kv * elem
    all_rows = max(1, score_budget // (rows * per_row))
    # The head block must also leave one key of K/V per head room in the K/V quarter.
    kv_heads_fit = (budget - score_budget) // (dkv * (elem + stored_elem))
    hb = max(1, min(heads, max(min(group, score_budget // per_row), all_rows), kv_heads_fit))
    hb = hb // group * group if hb >= group else max(d for d in range(1, hb + 1) if group % d == 0)
    rb = max(1, min(rows, score_budget // (hb * per_row)))
    kb = max(1, min(kv, (budget - score_budget) // (hb * dkv * (elem + stored_elem))))
    return hb, rb, kb


def gpu_budget(total_memory: int) -> int:
    """The default budget of a GPU with `total_memory` bytes: 1/GPU_BUDGET_SHARE of it, within
    [DEFAULT_BUDGET_BYTES, GPU_BUDGET_CAP_BYTES]."""
    return max(DEFAULT_BUDGET_BYTES, min(GPU_BUDGET_CAP_BYTES, total_memory // GPU_BUDGET_SHARE))


def default_budget(device: torch.device) -> int:
    """The memory budget attention() takes on `device` unless told: DEFAULT_BUDGET_BYTES on the CPU, gpu_budget
    of the GPU's memory on CUDA."""
    if device.type != "cuda":
        return DEFAULT_BUDGET_BYTES
    return gpu_budget(torch.cuda.get_device_properties(device).total_memory)


@contextmanager
def _true_fp32() -> Iterator[None]:
    """fp32 matmuls in full fp32 for the duration (no TF32 on CUDA), whatever the caller set."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def attention(
    inputs: Inputs,
    precision: Precision = "fp32",
    budget_bytes: int | None = None,
    fused: bool | None = None,
    compiled: bool | None = None,
) -> Reference:
    """Reference output and natural-log LSE for `inputs` (see the module docstring). `budget_bytes`: the bound
    on the temporaries; None: default_budget(inputs.device). `fused`: the softmax in three passes over the
    scores (_softmax_fused) instead of the literal six; None: on FUSED_DEVICES. `compiled`: a fused fp32 chunk
    of COMPILED_MIN_SCORES scores or more takes _softmax_compiled; None: on COMPILED_DEVICES. "honest" rounds P
    between the literal passes and takes the literal softmax whatever `fused` and `compiled` say."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r} is not one of {PRECISIONS}")
    c = inputs.case
    rounding: Rounding = honest(c) if precision == "honest" else EXACT
    if budget_bytes is None:
        budget_bytes = default_budget(inputs.device)
    if fused is None:
        fused = inputs.device.type in FUSED_DEVICES
    fused = fused and rounding.p is None
    if compiled is None:
        compiled = inputs.device.type in COMPILED_DEVICES
    compiled = compiled and fused and precision == "fp32"
    softmax = _softmax_fused if fused else _softmax
    acc = torch.float64 if precision == "fp64" else torch.float32
    dev = inputs.device
    out = torch.zeros((c.total_qo, c.num_qo_heads, c.head_dim_vo), dtype=acc, device=dev)
    lse = torch.full((c.total_qo, c.num_qo_heads), -math.inf, dtype=acc, device=dev)
    qs, ks, vs = fp8_descales(c)
    group = c.group_size
    elem = torch.tensor([], dtype=acc).element_size()
    # Offsets read to the host once: a device read per request would stall the GPU each time.
    kv_indptr = inputs.kv_page_indptr if c.is_paged else inputs.kv_indptr
    assert kv_indptr is not None
    q_starts, kv_starts = inputs.qo_indptr.tolist(), kv_indptr.tolist()
    with _true_fp32():
        for i, (qo, kv) in enumerate(zip(c.qo_lens, c.kv_lens)):
            if qo == 0 or kv == 0:
                continue  # nothing to attend: out 0, lse -inf
            q0, span = q_starts[i], (kv_starts[i], kv_starts[i + 1])
            custom = inputs.request_mask(i)
            hb, rb, kb = _plan_chunks(
                c.num_qo_heads,
                group,
                qo,
                kv,
                max(c.head_dim_qk, c.head_dim_vo),
                elem,
                inputs.k.element_size(),
                budget_bytes,
                _FUSED_SCORE_COPIES if fused else _SCORE_COPIES,
            )
            for h0 in range(0, c.num_qo_heads, hb):
                h1 = min(h0 + hb, c.num_qo_heads)
                kv0, kv1 = h0 // group, (h1 - 1) // group + 1  # the KV heads that query heads [h0, h1) read
                n = kv1 - kv0
                for r0 in range(0, qo, rb):
                    r1 = min(r0 + rb, qo)
                    keep = None  # no mask: no row indices made (a kernel launch per chunk on the GPU)
                    if masks_any(c.causal, c.window_left, custom):
                        rows = torch.arange(r0, r1, device=dev)
                        keep = allowed(rows, qo, kv, causal=c.causal, window_left=c.window_left, custom=custom)
                    # GQA without a copy of K/V per query head: heads [h0, h1) are the groups of KV heads
                    # [kv0, kv1), so q [rows, heads, D] is viewed [KV heads, group heads x rows, D], s and o alike.
                    q = _dequant(inputs.q[q0 + r0 : q0 + r1, h0:h1], qs, acc)
                    q = q.transpose(0, 1).reshape(n, -1, c.head_dim_qk)
                    s = torch.empty((h1 - h0, r1 - r0, kv), dtype=acc, device=dev)
                    # Only the honest LSE reads the scores' error scale (size): |q| |k|max |sm_scale| bounds
                    # sum_d |q_d k_d| sm_scale, what an fp32 score's rounding scales with.
                    k_norm = torch.zeros((n, 1, 1), dtype=acc, device=dev) if rounding.p is not None else None
                    for k0 in range(0, kv, kb):
                        k1 = min(k0 + kb, kv)
                        k = _dequant(_kv_rows(inputs, "k", span, kv0, kv1, k0, k1), ks, acc)
                        _scaled_scores(s.view(n, -1, kv)[:, :, k0:k1], q, k.permute(1, 2, 0), c.scale)
                        if k_norm is not None:  # the largest |k| of each KV head
                            k_norm = torch.maximum(k_norm, k.norm(dim=-1).amax(dim=0).view(n, 1, 1))
                    size = None
                    if k_norm is not None:
                        size = (q.norm(dim=-1, keepdim=True) * k_norm * abs(c.scale)).view(h1 - h0, r1 - r0, 1)
                    chunk_softmax = _softmax_compiled if compiled and s.numel() >= COMPILED_MIN_SCORES else softmax
                    e, denom, l_blk = chunk_softmax(s, keep, c.logits_soft_cap, rounding, size)
                    # P = e / denom. In fp32 and fp64 the division waits for the [rows, D] output (the
                    # same math on D/kv as many numbers); "honest" rounds P itself, so it divides first.
                    e = e.view(n, -1, kv)
                    o = torch.empty((n, e.shape[1], c.head_dim_vo), dtype=acc, device=dev)
                    for k0 in range(0, kv, kb):
                        k1 = min(k0 + kb, kv)
                        v = _dequant(_kv_rows(inputs, "v", span, kv0, kv1, k0, k1), vs, acc)
                        _add_weighted_values(o, e[:, :, k0:k1], v.transpose(0, 1), first=k0 == 0)
                    o = o.view(h1 - h0, r1 - r0, -1).div_(denom)
                    out[q0 + r0 : q0 + r1, h0:h1] = o.transpose(0, 1)
                    lse[q0 + r0 : q0 + r1, h0:h1] = l_blk
    if rounding.out is not None:
        out = out.to(rounding.out).to(acc)
    return Reference(out=out, lse=lse, precision=precision)


def _scaled_scores(s: torch.Tensor, q: torch.Tensor, kt: torch.Tensor, scale: float) -> None:
    """s = scale * (q @ kt), batched over KV heads, written into s (the accumulation dtype)."""
    s.baddbmm_(q, kt, beta=0.0, alpha=scale)  # one GEMM, the scale applied in its epilogue


def _add_weighted_values(o: torch.Tensor, p: torch.Tensor, v: torch.Tensor, first: bool) -> None:
    """o += p @ v (o = p @ v for the first key block), batched over KV heads, in o's dtype."""
    o.baddbmm_(p, v, beta=0.0 if first else 1.0)  # one GEMM; beta 0 ignores o's old contents


def _softmax(
    s: torch.Tensor, keep: torch.Tensor | None, cap: float, rounding: Rounding, size: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Scaled scores [h, r, kv] -> (e, denom, lse), the softmax being P = e / denom.

    e = exp(s - row max), in place in s; denom its row sums [h, r, 1], 1 for a row with nothing
    to attend (whose e is all 0); lse the natural-log LSE [r, h]. Where `rounding` rounds P (the
    honest kernel, oracle/honest.py), e is P itself, normalised and rounded, and denom is 1;
    `size` [h, r, 1] bounds each row's sum of |q_d k_d| sm_scale (its scores' fp32 error scale); only
    the honest P reads it (None otherwise).
    """
    _cap_and_mask(s, keep, cap, rounding)
    m = s.amax(dim=-1, keepdim=True)
    empty = torch.isneginf(m)
    e = s.sub_(torch.where(empty, 0.0, m)).exp_()
    denom = e.sum(dim=-1, keepdim=True)
    if rounding.p is not None:
        return _honest_probabilities(e, denom, m, empty, rounding, size)
    lse = (m + torch.log(denom)).squeeze(-1)
    return e, torch.where(empty, 1.0, denom), lse.transpose(0, 1)


def _cap_and_mask(s: torch.Tensor, keep: torch.Tensor | None, cap: float, rounding: Rounding) -> None:
    """The soft cap, then the mask, on the scaled scores [h, r, kv] in place (masked scores -inf)."""
    if cap > 0:
        s.div_(cap).tanh_()
        if rounding.tanh_bits:
            _keep_bits(s, rounding.tanh_bits)
        s.mul_(cap)
    if keep is not None:
        s.masked_fill_(~keep.unsqueeze(0), -math.inf)


def _softmax_fused(
    s: torch.Tensor, keep: torch.Tensor | None, cap: float, rounding: Rounding, size: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """_softmax's (P, denom, lse) in three passes over the scores: the row max with its key, torch.softmax (one
    read and one write), nothing more. P at the max key is exp(0) / denom, so lse = m + log(denom) is
    m - log(P[max key]). A row with nothing to attend (possible only under a mask) would come out of
    torch.softmax NaN: its first score is set to 0 first (one element a row, not a pass), and its denom is inf,
    so its output divides to 0; its lse is m - log(1) = -inf (torch.max gives the first of equal maxima, key
    0, where P is 1). denom is 1 elsewhere. `rounding` is EXACT here (attention() sends "honest" to _softmax)."""
    _cap_and_mask(s, keep, cap, rounding)
    m, at = s.max(dim=-1, keepdim=True)
    empty = torch.isneginf(m)
    if keep is not None:
        s[..., :1].masked_fill_(empty, 0.0)
    p = torch.softmax(s, dim=-1)
    lse = (m - torch.log(p.gather(-1, at))).squeeze(-1)
    return p, torch.where(empty, math.inf, 1.0), lse.transpose(0, 1)


def _softmax_exact(
    s: torch.Tensor, keep: torch.Tensor | None, cap: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """_softmax's (e, denom, lse) with EXACT rounding, written without in-place steps so that torch.compile can
    fuse it: the same operations in the same order (the soft cap, a 0-d tensor or None, then the mask). It
    leaves `s` as it was and makes e beside it."""
    if cap is not None:
        s = torch.tanh(s / cap) * cap
    if keep is not None:
        s = s.masked_fill(~keep.unsqueeze(0), -math.inf)
    row_max = s.amax(dim=-1, keepdim=True)
    empty = torch.isneginf(row_max)
    e = torch.exp(s - torch.where(empty, 0.0, row_max))
    sums = e.sum(dim=-1, keepdim=True)
    lse = (row_max + torch.log(sums)).squeeze(-1)
    return e, torch.where(empty, 1.0, sums), lse.transpose(0, 1)


@dataclass
class _Compiled:
    """_softmax_exact through torch.compile (made on first use), or why a call of it failed (then never again)."""

    fn: Callable[..., Any] | None = None
    failed: str | None = None


_COMPILED = _Compiled()


def _compile_settings() -> ExitStack:
    """While the compiled softmax runs: dynamo's recompile limit at COMPILED_RECOMPILE_LIMIT (at its default of 8
    the graphs of a long run run out, and fullgraph makes that an error), and Inductor compiling in this process
    (no pool of worker processes beside a harness that forks, and none taking the CPU from the timed calls)."""
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    stack = ExitStack()
    stack.enter_context(dynamo_config.patch(recompile_limit=COMPILED_RECOMPILE_LIMIT))
    stack.enter_context(inductor_config.patch(compile_threads=1))
    return stack


def _softmax_compiled(
    s: torch.Tensor, keep: torch.Tensor | None, cap: float, rounding: Rounding, size: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """_softmax_exact compiled (shapes dynamic, one graph each for a cap or none, a mask or none): Inductor fuses
    the cap, the mask, the max, exp, the sum and the LSE into two reads of the scores and one write of e. Where a
    call fails (no Triton or C compiler to build it, a lowering error) the reason is printed once, and that chunk
    and every later one take _softmax_fused (`s` is left as it was). `rounding` is EXACT here."""
    if _COMPILED.failed is None:
        if _COMPILED.fn is None:
            _COMPILED.fn = torch.compile(_softmax_exact, dynamic=True, fullgraph=True)
        cap_t = torch.tensor(cap, dtype=s.dtype, device=s.device) if cap > 0 else None
        try:
            with _compile_settings():
                e, denom, lse = _COMPILED.fn(s, keep, cap_t)
            return e, denom, lse
        except Exception as exc:  # noqa: BLE001 - whatever failed, the eager path is exact
            _COMPILED.failed = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            print(
                f"attncheck oracle: the compiled softmax failed ({_COMPILED.failed}); the eager fused softmax is "
                "used from here on",
                file=sys.stderr,
            )
    return _softmax_fused(s, keep, cap, rounding, size)


def _honest_probabilities(
    e: torch.Tensor,
    denom: torch.Tensor,
    m: torch.Tensor,
    empty: torch.Tensor,
    rounding: Rounding,
    size: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The honest kernel's P and LSE from e = exp(s - m) and its row sums (oracle/honest.py, 4 and 7).

    e becomes round(e / denom) in place, a quarter of the rows at a time so that the rounded
    copies stay within the score budget; lse = m + log(denom + drift) + score_error * size, where
    drift = sum |round(e) - e| per row is P's rounding at its magnitude. denom comes back 1.
    """
    assert rounding.p is not None and size is not None
    safe = torch.where(empty, 1.0, denom)
    flat, per_row = e.view(-1, e.shape[-1]), safe.view(-1, 1)
    drift = torch.empty_like(per_row)
    step = max(1, -(-flat.shape[0] // 4))
    for a in range(0, flat.shape[0], step):
        blk = flat[a : a + step]
        drift[a : a + step] = blk.to(rounding.p).to(blk.dtype).sub_(blk).abs_().sum(dim=-1, keepdim=True)
        blk.div_(per_row[a : a + step]).copy_(blk.to(rounding.p))
    slack = rounding.score_error * torch.where(empty, 0.0, size)
    lse = (m + torch.log(denom + drift.view_as(denom)) + slack).squeeze(-1)
    return e, torch.ones_like(safe), lse.transpose(0, 1)


def _keep_bits(x: torch.Tensor, bits: int) -> None:
    """Round fp32 `x` in place to `bits` significant bits (to nearest, ties away from zero)."""
    assert x.dtype == torch.float32 and 1 <= bits < 24
    drop = 24 - bits
    x.view(torch.int32).add_(1 << (drop - 1)).bitwise_and_(~((1 << drop) - 1))
