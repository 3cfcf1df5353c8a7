"""Batch-axis defects of our own design, injected into torch's attention functions.

Each fault wraps torch.nn.functional.scaled_dot_product_attention or FlexAttention and makes one
mistake a batched kernel plausibly makes, and ONLY on a call with batch > 1: the per-request
adapters (batch 1) never see it, the batched ones (kernels/torch_padded.py, torch_nested.py,
torch_flex_padded.py) must. The mistakes read the batch the way a kernel would, from what it is
handed (the boolean mask, the block mask, the jagged offsets), never from attncheck's case:

    with injected("mask_of_request_0"):     # every SDPA call in the block with B > 1 is faulty
        ...
    undo = install("outputs_rolled")        # a script: undone by undo()

It patches through kernels/fault_patch.py, as the precision faults (kernels/torch_precision_faults.py)
do: while a fault is injected, torch.nn.functional carries its name and kernels._env.library_versions()
says "+fault:NAME"; one fault of either catalogue at a time. `FAULTS` is the
catalogue; docs/evidence/2026-12-02-batch-axis-faults.md holds the runs that catch each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Optional

import torch

from kernels import fault_patch

SDPA = "scaled_dot_product_attention"
FLEX = "flex_attention"


@dataclass(frozen=True)
class BatchFault:
    """One batch-axis mistake: the torch function it wraps and what it gets wrong."""

    name: str
    description: str
    target: str  # SDPA or FLEX
    backends: tuple[str, ...]  # the batched backends whose calls it reaches (the others' calls it leaves alone)


FAULTS: dict[str, BatchFault] = {
    f.name: f
    for f in (
        BatchFault(
            "padding_keys_leak",
            "a request's padded keys (columns its mask hides from every row) enter its real rows' softmax",
            SDPA,
            ("padded-math", "padded-flash", "padded-auto"),
        ),
        BatchFault(
            "mask_of_request_0",
            "the boolean mask of request 0 broadcast over the batch",
            SDPA,
            ("padded-math", "padded-flash", "padded-auto"),
        ),
        BatchFault(
            "kv_len_short_after_first",
            "requests after the first lose their last key (lengths off by one past request 0)",
            SDPA,
            ("padded-math", "padded-flash", "padded-auto"),
        ),
        BatchFault(
            "outputs_rolled",
            "the padded output shifted by one request along the batch (request b gets b - 1's rows)",
            SDPA,
            ("padded-math", "padded-flash", "padded-auto"),
        ),
        BatchFault(
            "jagged_rows_shifted",
            "the jagged output's rows read one row early (offsets off by one past request 0)",
            SDPA,
            ("nested-math", "nested-auto"),
        ),
        BatchFault(
            "block_mask_of_request_0",
            "FlexAttention's mask_mod evaluated for request 0 on every request's blocks",
            FLEX,
            ("flex-padded",),
        ),
        BatchFault(
            "lse_of_request_0",
            "FlexAttention's LSE of request 0 returned for every request",
            FLEX,
            ("flex-padded",),
        ),
    )
}


def fault(name: str) -> BatchFault:
    """The catalogue's fault `name`; a ValueError naming the choices otherwise."""
    return fault_patch.lookup(FAULTS, name, "batch")


# ---- what each mistake does to the call ------------------------------------------------------------------
def _hidden_columns(mask: torch.Tensor) -> torch.Tensor:
    """Per request, the key columns no row may attend: [B, 1, 1, Lk]."""
    return ~mask.any(dim=-2, keepdim=True).any(dim=-3, keepdim=True)


def _padding_keys_leak(mask: torch.Tensor) -> torch.Tensor:
    rows = mask.any(dim=-1, keepdim=True)  # rows that attend something: the real rows
    return mask | (_hidden_columns(mask) & rows)


def _mask_of_request_0(mask: torch.Tensor) -> torch.Tensor:
    return mask[:1].expand_as(mask).clone()


def _kv_len_short_after_first(mask: torch.Tensor) -> torch.Tensor:
    seen = ~_hidden_columns(mask)  # [B, 1, 1, Lk]
    cols = torch.arange(mask.shape[-1], device=mask.device)
    last = torch.where(seen, cols, -1).amax(dim=-1, keepdim=True)  # each request's last key
    drop = (cols == last) & (torch.arange(mask.shape[0], device=mask.device) > 0).view(-1, 1, 1, 1)
    return mask & ~drop


_MASK_FAULTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "padding_keys_leak": _padding_keys_leak,
    "mask_of_request_0": _mask_of_request_0,
    "kv_len_short_after_first": _kv_len_short_after_first,
}


def _jagged_rows_shifted(o: torch.Tensor) -> torch.Tensor:
    rows = o.transpose(1, 2)  # [B, j, H, D]
    shifted = rows.values().roll(1, dims=0)
    return torch.nested.nested_tensor_from_jagged(shifted, rows.offsets()).transpose(1, 2)


def _batched(t: torch.Tensor) -> bool:
    return t.dim() == 4 and t.shape[0] > 1


def _untouched(original: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """SDPA as torch runs it: a CausalBias mask dispatches itself (its __torch_function__ only recognises
    torch's own function object, which the fault has replaced)."""
    from torch.nn.attention.bias import CausalBias

    mask = kw.get("attn_mask", args[3] if len(args) > 3 else None)
    if isinstance(mask, CausalBias):
        return CausalBias._dispatch(*args, **kw)
    return original(*args, **kw)


def _sdpa(f: BatchFault, original: Callable[..., Any]) -> Callable[..., Any]:
    def scaled_dot_product_attention(
        query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *args: Any, **kw: Any
    ) -> Any:
        if not _batched(query):
            return _untouched(original, query, key, value, *args, **kw)
        if query.is_nested:
            out = original(query, key, value, *args, **kw)
            return _jagged_rows_shifted(out) if f.name == "jagged_rows_shifted" else out
        mask = kw.get("attn_mask")
        if f.name in _MASK_FAULTS and isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and _batched(mask):
            kw = {**kw, "attn_mask": _MASK_FAULTS[f.name](mask)}
        out = _untouched(original, query, key, value, *args, **kw)
        return out.roll(1, dims=0) if f.name == "outputs_rolled" else out

    return scaled_dot_product_attention


def _flex(f: BatchFault, original: Callable[..., Any]) -> Callable[..., Any]:
    def flex_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *args: Any, **kw: Any) -> Any:
        if not _batched(query):
            return original(query, key, value, *args, **kw)
        block_mask = kw.get("block_mask")
        if f.name == "block_mask_of_request_0" and block_mask is not None:
            from torch.nn.attention.flex_attention import create_block_mask

            mod = block_mask.mask_mod
            q_len, kv_len = block_mask.seq_lengths
            kw = {
                **kw,
                "block_mask": create_block_mask(
                    lambda b, h, q, k: mod(torch.zeros_like(b), h, q, k),
                    query.shape[0],
                    None,
                    q_len,
                    kv_len,
                    device=query.device,
                ),
            }
        result = original(query, key, value, *args, **kw)
        if f.name == "lse_of_request_0":
            lse = getattr(result[1], "lse", None) if kw.get("return_aux") is not None else result[1]
            if lse is not None:
                lse.copy_(lse[:1].expand_as(lse).clone())
        return result

    return flex_attention


def _owner(f: BatchFault) -> Any:
    if f.target == SDPA:
        return torch.nn.functional
    import torch.nn.attention.flex_attention as flex_module

    return flex_module


def install(name: str) -> Callable[[], None]:
    """Switch fault `name` on in torch (torch.nn.functional carries its name); returns what switches it off.
    One fault at a time, of this catalogue or another."""
    f = fault(name)
    wrap = _sdpa if f.target == SDPA else _flex
    return fault_patch.patch(
        torch.nn.functional, _owner(f), f.target, lambda original: wrap(f, original), f.name, "batch"
    )


def injected(name: Optional[str]) -> ContextManager[Optional[BatchFault]]:
    """Fault `name` switched on for the block (None: nothing, torch as it is)."""
    return fault_patch.injected(install, FAULTS, name)
