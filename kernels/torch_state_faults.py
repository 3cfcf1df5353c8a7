"""Defects kept in library state, of our own design, injected into torch's SDPA.

Each fault wraps torch.nn.functional.scaled_dot_product_attention with a memory that outlives the call: what
one call leaves there changes a later call's answer, whichever adapter makes it. A fresh adapter in the same
process reads the same memory, so only a control from untouched library state (conformance/explore/pristine.py)
tells such a defect from the case's own, and only a script replaying the calls that filled the memory
reproduces it in a fresh process (docs/scenario-machines.md, "A control from untouched library state").

    with injected("mask_kept"):     # every SDPA call in the block reads and fills the memory
        ...

It patches through kernels/fault_patch.py, as the precision and batch faults do: torch.nn.functional carries
the fault's name ("+fault:NAME" in the versions) while it is on; one fault of any catalogue at a time; every
injection starts with an empty memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Optional

import torch

from kernels import fault_patch

SDPA = "scaled_dot_product_attention"


@dataclass(frozen=True)
class StateFault:
    """One mistake of a memory kept across calls."""

    name: str
    description: str


FAULTS: dict[str, StateFault] = {
    f.name: f
    for f in (
        StateFault(
            "mask_kept",
            "the last explicit mask of a (query rows, keys) shape is applied to a later call of that shape given none",
        ),
        StateFault(
            "output_kept",
            "a call with the shapes, dtype and mask form of an earlier one returns that call's output",
        ),
    )
}


def fault(name: str) -> StateFault:
    """The catalogue's fault `name`; a ValueError naming the choices otherwise."""
    return fault_patch.lookup(FAULTS, name, "state")


def _sdpa(f: StateFault, original: Callable[..., Any]) -> Callable[..., Any]:
    kept: dict[tuple, Any] = {}  # the memory: one per injection

    def scaled_dot_product_attention(
        query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: Any = None, *args: Any, **kw: Any
    ) -> Any:
        if f.name == "mask_kept":
            shape = (query.shape[-2], key.shape[-2])
            if attn_mask is not None:
                kept[shape] = attn_mask
            elif not kw.get("is_causal") and shape in kept:
                attn_mask = kept[shape]
            return original(query, key, value, attn_mask, *args, **kw)
        form = "none" if attn_mask is None else type(attn_mask).__name__
        shape = (tuple(query.shape), tuple(key.shape), tuple(value.shape), query.dtype, form, bool(kw.get("is_causal")))
        if shape not in kept:
            kept[shape] = original(query, key, value, attn_mask, *args, **kw)
        return kept[shape].clone()

    return scaled_dot_product_attention


def install(name: str) -> Callable[[], None]:
    """Switch fault `name` on in torch (torch.nn.functional carries its name); returns what switches it off."""
    f = fault(name)
    return fault_patch.patch(
        torch.nn.functional, torch.nn.functional, SDPA, lambda original: _sdpa(f, original), f.name, "state"
    )


def injected(name: Optional[str]) -> ContextManager[Optional[StateFault]]:
    """Fault `name` switched on for the block (None: nothing, torch as it is)."""
    return fault_patch.injected(install, FAULTS, name)
