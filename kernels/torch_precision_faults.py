"""Precision defects of our own design, injected into torch's attention functions.

Each fault replaces torch.nn.functional.scaled_dot_product_attention by a flash loop over key
blocks, written here in torch, that makes one mistake a low-precision kernel plausibly makes
(or wraps FlexAttention to spoil its LSE); the same loop without a mistake is the control
("honest"), so a failure is the mistake's, not the loop's:

    with injected("acc_in_half"):       # every SDPA call in the block runs the faulty loop
        ...
    undo = install("no_rescale")        # a script: undone by undo()

The loop keeps a running max, row sum and output per query row, as flash kernels do: scores
and statistics in fp32, P = exp(s - running max) rounded to the input dtype before P.V, the
output divided by the row sum once and rounded once. A fault changes one of those points (the
`Fault` fields); an accumulator a fault holds in 16 bits rounds after every FRAGMENT keys, as a
tensor-core step with a 16-bit accumulator does. Empty inputs go to torch's own function
untouched, so what torch refuses or answers without a backend stays torch's. While a fault is
injected, torch.nn.functional carries its name (kernels/standin_label.py FAULT_MARKER) and
kernels._env.library_versions() says "+fault:NAME". `FAULTS` is the catalogue;
docs/evidence/2026-12-02-honest-baseline.md holds the runs that catch each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Optional

import torch

from kernels import fault_patch

BLOCK = 64  # keys per step of the loop (FlashInfer's and FA2's tiles hold 64 or 128 keys)
FRAGMENT = 16  # keys per tensor-core step (mma k16): where an accumulator held in 16 bits rounds
SDPA = "scaled_dot_product_attention"
FLEX = "flex_attention"
# One step coarser than a 16-bit kernel's P.V operand: fp16 -> bf16 (3 bits fewer), bf16 -> e4m3fn.
_COARSER = {torch.float16: torch.bfloat16, torch.bfloat16: torch.float8_e4m3fn, torch.float32: torch.bfloat16}


@dataclass(frozen=True)
class Fault:
    """One precision mistake: the rounding point it changes, and what it replaces."""

    name: str
    description: str
    target: str = SDPA  # the torch function replaced: SDPA, or FlexAttention (its LSE)
    acc_in_input_dtype: bool = False  # the running output is held in the input dtype (rounded every FRAGMENT keys)
    row_sum_in_input_dtype: bool = False  # the running row sum is held in the input dtype (likewise)
    rescale_output: bool = True  # the running output is multiplied by exp(old max - new max)
    p_coarser: bool = False  # P rounded one step coarser than the input dtype (_COARSER)
    scores_in_input_dtype: bool = False  # q.k rounded to the input dtype before the scale
    lse_in_input_dtype: bool = False  # FlexAttention's LSE rounded to the query dtype


HONEST = "honest"
FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(HONEST, "the control: the flash loop with no mistake (fp32 statistics and accumulators)"),
        Fault(
            "acc_in_half",
            "running output and row sum held in the input dtype (rounded every 16 keys)",
            acc_in_input_dtype=True,
            row_sum_in_input_dtype=True,
        ),
        Fault(
            "no_rescale",
            "the running output is not rescaled when a later key block raises the row max",
            rescale_output=False,
        ),
        Fault(
            "row_sum_in_half",
            "the running row sum is held in the input dtype (rounded every 16 keys)",
            row_sum_in_input_dtype=True,
        ),
        Fault(
            "p_coarser",
            "P is rounded one step coarser than the input dtype before P.V (fp16 -> bf16, bf16 -> e4m3fn)",
            p_coarser=True,
        ),
        Fault(
            "scores_in_half",
            "q.k is rounded to the input dtype before the scale (scores not held in fp32)",
            scores_in_input_dtype=True,
        ),
        Fault(
            "lse_in_half",
            "FlexAttention's LSE computed in the query dtype (rounded to it)",
            target=FLEX,
            lse_in_input_dtype=True,
        ),
    )
}


def fault(name: str) -> Fault:
    """The catalogue's fault `name`; a ValueError naming the choices otherwise."""
    return fault_patch.lookup(FAULTS, name, "precision")


# ---- the flash loop --------------------------------------------------------------------------------------
def _dense_mask(attn_mask: Any, device: torch.device) -> Optional[torch.Tensor]:
    """A boolean mask (True = attend) from what SDPA takes: None, a boolean tensor or a CausalBias."""
    if attn_mask is None:
        return None
    from torch.nn.attention.bias import CausalBias

    if isinstance(attn_mask, CausalBias):
        return attn_mask._materialize(device)
    if attn_mask.dtype != torch.bool:
        raise ValueError("the precision faults' loop takes boolean masks only (the torch adapters build no other)")
    return attn_mask


def flash_loop(
    f: Fault, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor], scale: float
) -> torch.Tensor:
    """Attention of q [..., Hq, L, D] over k, v [..., Hkv, S, D] one key block at a time, with `f`'s mistake."""
    dt, f32 = q.dtype, torch.float32
    if k.shape[-3] != q.shape[-3]:  # GQA: query head h reads KV head h // group
        group = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(group, dim=-3), v.repeat_interleave(group, dim=-3)
    p_dtype = _COARSER[dt] if f.p_coarser else dt
    acc_dtype = dt if f.acc_in_input_dtype else f32
    sum_dtype = dt if f.row_sum_in_input_dtype else f32
    rows = q.shape[:-1] + (1,)
    m = torch.full(rows, -math.inf, dtype=f32, device=q.device)
    row_sum = torch.zeros(rows, dtype=sum_dtype, device=q.device)
    o = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=acc_dtype, device=q.device)
    for k0 in range(0, k.shape[-2], BLOCK):
        kb, vb = k[..., k0 : k0 + BLOCK, :], v[..., k0 : k0 + BLOCK, :]
        if f.scores_in_input_dtype:
            s = (q @ kb.transpose(-1, -2)).to(f32) * scale
        else:
            s = (q.to(f32) @ kb.to(f32).transpose(-1, -2)) * scale
        if mask is not None:
            s = s.masked_fill(~mask[..., k0 : k0 + BLOCK], -math.inf)
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        shift = torch.where(torch.isneginf(m_new), 0.0, m_new)
        alpha = torch.exp(m - shift)  # 0 while the row has seen no key (m = -inf): nothing to rescale
        p = torch.exp(s - shift)
        pr, v32 = p.to(p_dtype).to(f32), vb.to(f32)
        row_sum = _accumulate(row_sum.to(f32) * alpha, lambda a, b, p=p: p[..., a:b].sum(-1, keepdim=True), sum_dtype)
        o = o.to(f32) * alpha if f.rescale_output else o.to(f32)
        o = _accumulate(o, lambda a, b, pr=pr, v32=v32: pr[..., a:b] @ v32[..., a:b, :], acc_dtype)
        m = m_new
    l32 = row_sum.to(f32)
    out = torch.where(l32 > 0, o.to(f32) / torch.where(l32 > 0, l32, 1.0), 0.0)
    return out.to(dt)


def _accumulate(acc: torch.Tensor, terms: Callable[[int, int], torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
    """acc plus terms(a, b) over the block's keys [a, b), held in `dtype`: an fp32 accumulator adds
    the block at once, a 16-bit one rounds after every FRAGMENT keys (and once on entry)."""
    n = BLOCK if dtype == torch.float32 else FRAGMENT
    acc = acc.to(dtype)
    for a in range(0, BLOCK, n):
        acc = (acc.to(torch.float32) + terms(a, a + n)).to(dtype)
    return acc


# ---- the replacements ------------------------------------------------------------------------------------
def _sdpa(f: Fault, original: Callable[..., Any]) -> Callable[..., Any]:
    def scaled_dot_product_attention(
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attn_mask: Any = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: Optional[float] = None,
        enable_gqa: bool = False,
    ) -> torch.Tensor:
        if query.numel() == 0 or key.shape[-2] == 0 or dropout_p or is_causal:  # torch's to answer
            return original(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
        sc = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
        return flash_loop(f, query, key, value, _dense_mask(attn_mask, query.device), sc)

    return scaled_dot_product_attention


def _flex(f: Fault, original: Callable[..., Any]) -> Callable[..., Any]:
    def flex_attention(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        q = args[0] if args else kwargs["query"]
        lse = None
        if kwargs.get("return_aux") is not None:
            lse = getattr(result[1], "lse", None)
        elif kwargs.get("return_lse"):
            lse = result[1]
        if lse is not None and f.lse_in_input_dtype:
            _round_in_place(lse, q.dtype)
        return result

    return flex_attention


@torch.compiler.disable
def _round_in_place(x: torch.Tensor, dtype: torch.dtype) -> None:
    """x rounded to `dtype` in place, outside any compiled graph: compiled, inductor keeps the upcast's
    fp32 value (torch._inductor.config.emulate_precision_casts is off) and the rounding vanishes: the LSE
    fault wrapped in CUDA's compiled flex_attention would be no fault at all."""
    x.copy_(x.to(dtype))


def _owner(f: Fault) -> Any:
    if f.target == SDPA:
        return torch.nn.functional
    import torch.nn.attention.flex_attention as flex_module

    return flex_module


def install(name: str) -> Callable[[], None]:
    """Switch fault `name` on in torch (torch.nn.functional carries its name); returns what switches it off.
    One fault at a time."""
    f = fault(name)
    wrap = _sdpa if f.target == SDPA else _flex
    return fault_patch.patch(
        torch.nn.functional, _owner(f), f.target, lambda original: wrap(f, original), f.name, "precision"
    )


def injected(name: Optional[str]) -> ContextManager[Optional[Fault]]:
    """Fault `name` switched on for the block (None: nothing, torch as it is)."""
    return fault_patch.injected(install, FAULTS, name)
