"""A log of the library calls an eager flashinfer adapter makes, for plain-library reproductions.

Why: a scenario-machine failure must be reproducible with FlashInfer alone, without attncheck's
adapter in between. When `FlashInferKernel.call_log` is a list, the adapter appends one
`LibraryCall` per call it makes on the library (a wrapper's construction, plan(), run(),
single_prefill_with_kv_cache) with the arguments exactly as passed; conformance/explore/repro_flashinfer.py
writes them out as straight-line code. Tensors are kept as CPU copies taken at call time, except
the workspace (zeros of a size) and the poisoned out=/lse= buffers (NaN of a shape), which the
script makes itself. Graph-mode adapters log nothing: a capture cannot copy tensors to the host,
and their reproductions go through the adapter (conformance/explore/repro.py "library").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch


@dataclass(frozen=True)
class Zeros:
    """A zero-filled tensor the script allocates (a wrapper's float workspace)."""

    shape: tuple[int, ...]
    dtype: torch.dtype


@dataclass(frozen=True)
class Poisoned:
    """A NaN-filled output buffer the script allocates (out=, lse=): unwritten elements stay NaN."""

    shape: tuple[int, ...]
    dtype: torch.dtype


@dataclass(frozen=True)
class LibraryCall:
    """`result = on.method(*args, **kwargs)`; `on` is "flashinfer" or a wrapper label ("w1", ...)."""

    on: str
    method: str
    args: tuple
    kwargs: dict
    result: Optional[str] = None  # the label a constructor's result gets


def host_copy(value: Any) -> Any:
    """`value` with every tensor replaced by a detached CPU copy (tuples and lists kept)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, tuple):
        return tuple(host_copy(v) for v in value)
    if isinstance(value, list):
        return [host_copy(v) for v in value]
    return value


def as_poisoned(t: Optional[torch.Tensor]) -> Optional[Poisoned]:
    return None if t is None else Poisoned(tuple(t.shape), t.dtype)


def as_zeros(t: torch.Tensor) -> Zeros:
    return Zeros(tuple(t.shape), t.dtype)
