"""The one protocol every adapter implements, following a library's own lifecycle.

An adapter is one long-lived object bound to (target, backend, device): for FlashInfer it owns
one wrapper that is planned and run again and again, because lifecycle defects show only under
reuse. `plan(inputs)` prepares (it takes Inputs, not a bare Case, because a real plan() needs the
index tensors: indptrs, page table, mask); `run(inputs)` computes into a poisoned output and
returns a KernelOutput that also carries what the library chose (resolved backend, fallback
reason). `fresh()` makes a control adapter with the same configuration and no history.

`supports(case)` answers with a Support value carrying a reason constant and never raises.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Union, runtime_checkable

import torch

from scenarios.case import Case
from scenarios.tensors import Inputs


class _NotReported:
    """The library has no way to say why it chose a backend (upstream FlashInfer, torch).

    Distinct from None, which a library that does report uses to say "no fallback happened".
    """

    _instance: Optional["_NotReported"] = None

    def __new__(cls) -> "_NotReported":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_REPORTED"

    def __reduce__(self) -> str:
        return "NOT_REPORTED"


NOT_REPORTED = _NotReported()
NOT_REPORTED_JSON = "<not reported by library>"
Reason = Union[str, None, _NotReported]


def reason_to_json(r: Reason) -> Optional[str]:
    return NOT_REPORTED_JSON if r is NOT_REPORTED else r  # type: ignore[return-value]


def reason_from_json(s: Optional[str]) -> Reason:
    return NOT_REPORTED if s == NOT_REPORTED_JSON else s


@dataclass(frozen=True)
class Support:
    ok: bool
    reason: str = ""

    @classmethod
    def yes(cls) -> "Support":
        return cls(True, "")

    @classmethod
    def no(cls, reason: str) -> "Support":
        return cls(False, reason)


@dataclass
class KernelOutput:
    """What one run produced and what the library chose.

    out: [total_qo, num_qo_heads, head_dim_vo] in the case's o_dtype; lse: [total_qo,
    num_qo_heads] in base `lse_base` (math.e or 2.0), None when the backend gives none.
    """

    out: torch.Tensor
    lse: Optional[torch.Tensor]
    lse_base: float
    resolved_backend: str
    fallback_reason: Reason = NOT_REPORTED


LSE_NATURAL = math.e
LSE_BASE2 = 2.0


@runtime_checkable
class AttentionKernel(Protocol):
    target: str  # the library: "torch", "flashinfer"
    backend: str  # what was requested: "math", "fa2", "auto" ...
    device: str

    def supports(self, case: Case) -> Support: ...

    def plan(self, inputs: Inputs) -> None: ...

    def run(self, inputs: Inputs) -> KernelOutput: ...

    def fresh(self) -> "AttentionKernel": ...


def wrapper_of_last_plan(adapter: AttentionKernel) -> Optional[str]:
    """The name of the library wrapper the adapter's last plan() used (set before the library's plan() is
    called, so a plan that raised has it too), from an adapter that keeps wrappers (`last_wrapper`,
    FlashInfer); None from any other."""
    name = getattr(adapter, "last_wrapper", None)
    return name if isinstance(name, str) else None


def release(adapter: AttentionKernel) -> None:
    """Drop what the adapter holds on its device now, where it can (`close`: FlashInfer's wrappers, workspaces
    and captured graphs). A failure's traceback keeps the adapter object alive while Hypothesis shrinks, and
    with it every buffer it holds, example after example, unless they are dropped when the example ends."""
    close = getattr(adapter, "close", None)
    if callable(close):
        close()


def route_of_failed_run(adapter: AttentionKernel, inputs: Inputs) -> Optional[tuple[str, Reason]]:
    """What plan() chose for `inputs` when run() then raised, from an adapter that can say
    (`route_after_failed_run`, FlashInfer upstream); None from any other, or when it cannot."""
    route = getattr(adapter, "route_after_failed_run", None)
    return route(inputs) if route is not None else None


@dataclass(frozen=True)
class Stage:
    """A slice of a run: backends evaluated together over every case, after `prepare` has run.

    A target whose kernels are compiled on first use (FlashInfer) orders its backends into stages
    and gives each a `prepare` (a parallel prebuild of the modules the stage needs, returning a
    JSON-able summary); the runner starts the next stage's `prepare` while the current stage runs.
    A Target without `stages()` is one stage of every backend with nothing to prepare.
    """

    name: str
    backends: tuple[str, ...]
    prepare: Optional[Callable[[], dict]] = None


class Target(Protocol):
    """A library: which backends it offers on a device, and adapters for them.

    Optional hooks the runner uses where present: `matrix(budget, seed, device=...) -> list[Case]` (a
    matrix designed for this target, e.g. around its compile costs) and `stages(cases, backends, device,
    adapter_options) -> list[Stage]`.
    """

    name: str

    def backends(self, device: str) -> tuple[str, ...]: ...

    def available(self, device: str) -> Support: ...

    def make(self, backend: str, device: str) -> AttentionKernel: ...

    def versions(self) -> dict[str, str]: ...
