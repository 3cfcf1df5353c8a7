"""Fault-injected model adapters: one switch per class of defect the seed pull requests record.

Each fault replaces one class of the correct model (conformance/explore/model_router.py) with a subclass
that re-creates the defect as the seed describes it, so the stateful machines can be shown to
catch it on the CPU. `FAULTS` is the catalogue (data): name, the seed's account, the graph mode
the defect needs, and the Build that carries it; `make_faulty(name, backend)` builds an adapter.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from routing import reasons as R
from conformance.explore import model_tables as T
from conformance.explore.model_router import (CORRECT, Build, ModelKernel, PagedWrapper, RaggedWrapper, Selector,
                                              reason_text)
from scenarios.tensors import Inputs


class GateOnFirstPlanOnly(RaggedWrapper):
    """The ragged gate armed only while the wrapper is still unresolved (`if self._backend == "auto"`).

    A wrapper that resolved to the fast backend on a long prefill never re-arms it: every later
    short plan goes to the fast backend ungated (long-then-short; short-then-long works).
    """

    def _gate_lengths(self) -> dict[str, Optional[int]]:
        return {"ragged_q_len": self._max_q_len if self._backend == T.AUTO else None}


def _keep_mask(self: RaggedWrapper, inputs: Inputs) -> None:
    """A masked plan sets the buffers; an unmasked one leaves the previous plan's mask in place."""
    if inputs.custom_mask is not None:
        self._custom_mask_buf = inputs.custom_mask
        self._mask_indptr_buf = inputs.mask_indptr


class StaleMaskRagged(RaggedWrapper):
    _set_mask = _keep_mask


class StaleMaskPaged(PagedWrapper):
    _set_mask = _keep_mask


class EmptyIsShort(Selector):
    """A length of 0 (empty batch, or only empty requests) reads as a short query and is demoted."""

    def short(self, n: Optional[int], t: Optional[int]) -> bool:
        return n is not None and t is not None and n <= t


def _repromote(self: RaggedWrapper) -> bool:
    """`auto` re-resolves every plan, graph mode included: a captured wrapper can switch module."""
    return self.requested == T.AUTO


class RepromoteRagged(RaggedWrapper):
    _re_resolves = _repromote


class RepromotePaged(PagedWrapper):
    _re_resolves = _repromote


class CollidingReasons(Selector):
    """The ragged gate reports the paged flat-gather text: the two gates' reasons collide."""

    def ragged_reason(self, t: int) -> str:
        return reason_text(R.PAGED_SHORT_QUERY, t=t)


@dataclass(frozen=True)
class Fault:
    name: str
    seed: str  # the seed's account of the defect, in one line
    graph: bool  # the adapter mode in which the defect shows
    build: Build


FAULTS: dict[str, Fault] = {f.name: f for f in (
    Fault("gate_first_plan_only",
          "PR #373: the ragged gate sat inside `if self._backend == 'auto'`, so it fired at most once per "
          "wrapper; long-then-short went to AITER ungated",
          graph=False, build=replace(CORRECT, name="gate_first_plan_only", ragged=GateOnFirstPlanOnly)),
    Fault("mask_not_cleared",
          "PR #373: a maskless plan after a masked one must drop the mask (the buffer decides MaskMode.CUSTOM "
          "and the selector's custom-mask check)",
          graph=False, build=replace(CORRECT, name="mask_not_cleared", ragged=StaleMaskRagged, paged=StaleMaskPaged)),
    Fault("empty_is_short",
          "PR #373: max_q_len <= 0 is an empty batch, not a short query; it read as short and demoted on a "
          "reason describing no query at all",
          graph=False, build=replace(CORRECT, name="empty_is_short", selector=EmptyIsShort)),
    Fault("graph_repromote",
          "PRs #367/#373: re-promoting under CUDA graphs swaps _cached_module/_plan_info that a captured graph "
          "still points at; under capture the first plan decides",
          graph=True, build=replace(CORRECT, name="graph_repromote", ragged=RepromoteRagged, paged=RepromotePaged)),
    Fault("reason_collision",
          "PR #373: reusing the flat-gather reason for the ragged gate misreports the cause and collides with "
          "the paged demotion site, which matches its own string by equality",
          graph=False, build=replace(CORRECT, name="reason_collision", selector=CollidingReasons)),
)}


def make_faulty(name: str, backend: str = T.AUTO, device: str = "cpu", *, arch: str = "gfx942",
                graph: Optional[bool] = None) -> ModelKernel:
    """The model with fault `name` switched on; graph defaults to the mode the fault needs."""
    if name not in FAULTS:
        raise KeyError(f"unknown fault {name!r}: expected one of {', '.join(FAULTS)}")
    f = FAULTS[name]
    return ModelKernel(backend, device, arch=arch, graph=f.graph if graph is None else graph, build=f.build)

