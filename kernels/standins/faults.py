"""Fault variants of the ROCm fork stand-in: one per class of defect the seed pull requests record.

Each fault re-creates one defect as the seed describes it, by patching one seam of the stand-in
(kernels/standins/rocm_flashinfer/) while it is installed: `rocm_fork.install(..., fault=NAME)`.
The adapter, the oracle and the machines then run unchanged against a library with that defect,
which is how the stateful machines are shown to catch it on the CPU. `FAULTS` is the catalogue
(data): name, the seed's account, the graph mode the defect needs, and its patch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from kernels.standins.rocm_flashinfer.rocm import arch_caps, prefill
from kernels.standins.rocm_flashinfer.rocm import reason_text as text

Patch = Callable[[Any], None]  # given a monkeypatch-like object (setattr), switches the defect on


def _gate_first_plan_only(mp: Any) -> None:
    """The ragged gate armed only while the wrapper is still unresolved (`if self._backend == "auto"`)."""

    def gate_len(self: Any) -> Optional[int]:
        return self._max_q_len if self._backend == "auto" else None

    mp.setattr(prefill.BatchPrefillWithRaggedKVCacheWrapper, "_ragged_gate_len", gate_len)


def _mask_not_cleared(mp: Any) -> None:
    """A masked plan sets the mask buffers; an unmasked one leaves the previous plan's mask in place."""
    original = prefill._Wrapper._set_mask

    def keep(self: Any, packed: Optional[torch.Tensor], m_indptr: Optional[torch.Tensor]) -> None:
        if packed is not None or self._use_cuda_graph:
            original(self, packed, m_indptr)

    mp.setattr(prefill._Wrapper, "_set_mask", keep)


def _empty_is_short(mp: Any) -> None:
    """A longest query of 0 (an empty batch, or only empty requests) reads as short and is demoted: both
    gates are asked about a length of 1 instead."""
    for name in ("_aiter_flat_gather_short_query", "_aiter_ragged_short_query"):
        real = getattr(prefill, name)

        def gate(arch: str, q_len: Optional[int], real: Callable[..., Optional[str]] = real) -> Optional[str]:
            return real(arch, 1 if q_len is not None and q_len <= 0 else q_len)

        mp.setattr(prefill, name, gate)


def _graph_repromote(mp: Any) -> None:
    """`auto` re-selects on every plan, graph mode included: a captured wrapper can switch backend."""
    mp.setattr(prefill._Wrapper, "_reresolves", lambda self, from_auto: from_auto)


def _reason_collision(mp: Any) -> None:
    """The ragged gate reports the paged flat-gather text: the two gates' reasons collide."""
    real = prefill._aiter_ragged_short_query

    def gate(arch: str, q_len: Optional[int]) -> Optional[str]:
        if real(arch, q_len) is None:
            return None
        return text.PAGED_SHORT_QUERY.format(T=arch_caps.aiter_ragged_gated_q_len(arch))

    mp.setattr(prefill, "_aiter_ragged_short_query", gate)


@dataclass(frozen=True)
class Fault:
    name: str
    seed: str  # the seed's account of the defect, in one line
    graph: bool  # the adapter mode in which the defect shows
    patch: Patch


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "gate_first_plan_only",
            "PR #373: the ragged gate sat inside `if self._backend == 'auto'`, so it fired at most once per "
            "wrapper; long-then-short went to AITER ungated",
            graph=False,
            patch=_gate_first_plan_only,
        ),
        Fault(
            "mask_not_cleared",
            "PR #373: a maskless plan after a masked one must drop the mask (the buffer decides MaskMode.CUSTOM "
            "and the selector's custom-mask check)",
            graph=False,
            patch=_mask_not_cleared,
        ),
        Fault(
            "empty_is_short",
            "PR #373: max_q_len <= 0 is an empty batch, not a short query; it read as short and demoted on a "
            "reason describing no query at all",
            graph=False,
            patch=_empty_is_short,
        ),
        Fault(
            "graph_repromote",
            "PRs #367/#373: re-promoting under CUDA graphs swaps the module a captured graph still points at; "
            "under capture the first plan decides",
            graph=True,
            patch=_graph_repromote,
        ),
        Fault(
            "reason_collision",
            "PR #373: reusing the flat-gather reason for the ragged gate misreports the cause and collides with "
            "the paged demotion site, which matches its own string by equality",
            graph=False,
            patch=_reason_collision,
        ),
    )
}


def fault(name: str) -> Fault:
    """The catalogue's fault `name`; a ValueError naming the choices otherwise."""
    if name not in FAULTS:
        raise ValueError(f"fault={name!r}: expected one of {', '.join(FAULTS)}")
    return FAULTS[name]
