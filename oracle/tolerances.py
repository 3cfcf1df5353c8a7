"""Every number of the tolerance model, in one table.

    bound = max(BASELINE_FACTOR * baseline_err, floor(dtype, quantity, ref_scale))

baseline_err is the largest error, against the fp32 oracle, of the same math done in the input
dtype (oracle.reference precision="input"): the flash-attention rule that a kernel may be at most
k times as wrong as an honest low-precision implementation. The floor keeps the bound from
collapsing where that baseline happens to be exact (fp32 inputs, tiny cases):
    floor = atol + rtol * ref_scale,  ref_scale = max |reference| over the compared tensor.

An override is a row naming (adapter, dtype, quantity), the factor it replaces, a reason and a
tracker reference; a literal atol in a test is a bug.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Quantity = Literal["out", "lse"]

BASELINE_FACTOR = 2.0

# (dtype of the compared result's inputs, quantity) -> (atol, rtol). fp8 keys are the q dtype.
FLOORS: dict[tuple[str, str], tuple[float, float]] = {
    ("fp32", "out"): (1e-5, 1e-5),
    ("fp32", "lse"): (1e-5, 1e-5),
    ("fp16", "out"): (1e-3, 1e-3),
    ("fp16", "lse"): (1e-3, 1e-3),
    ("bf16", "out"): (8e-3, 8e-3),
    ("bf16", "lse"): (8e-3, 8e-3),
    ("e4m3fn", "out"): (2e-2, 2e-2),
    ("e4m3fn", "lse"): (2e-2, 2e-2),
    ("e4m3fnuz", "out"): (2e-2, 2e-2),
    ("e4m3fnuz", "lse"): (2e-2, 2e-2),
    ("e5m2", "out"): (4e-2, 4e-2),
    ("e5m2", "lse"): (4e-2, 4e-2),
}


@dataclass(frozen=True)
class Override:
    """A sanctioned exception to the table, scoped to one adapter/backend, dtype and quantity."""

    adapter: str
    backend: str
    dtype: str
    quantity: str
    factor: float
    reason: str
    issue: str

    def __post_init__(self) -> None:
        if not self.issue.startswith(("http://", "https://", "#")):
            raise ValueError(f"Override.issue={self.issue!r} must cite a tracker (URL or #NNNN)")


OVERRIDES: tuple[Override, ...] = ()


def floor(dtype: str, quantity: str, ref_scale: float) -> float:
    atol, rtol = FLOORS[(dtype, quantity)]
    return atol + rtol * ref_scale


def factor_for(adapter: str, backend: str, dtype: str, quantity: str) -> float:
    for o in OVERRIDES:
        if (o.adapter, o.backend, o.dtype, o.quantity) == (adapter, backend, dtype, quantity):
            return o.factor
    return BASELINE_FACTOR


def bound(baseline_err: float, dtype: str, quantity: str, ref_scale: float, factor: float = BASELINE_FACTOR) -> float:
    return max(factor * baseline_err, floor(dtype, quantity, ref_scale))


# Coarsest first: the dtype whose floor governs a case is the coarsest of q, kv and o.
_COARSENESS = ("e5m2", "e4m3fn", "e4m3fnuz", "bf16", "fp16", "fp32")


def governing_dtype(q_dtype: str, kv_dtype: str, o_dtype: str) -> str:
    """The least precise of a case's dtypes, which sets its floor."""
    return min((q_dtype, kv_dtype, o_dtype), key=_COARSENESS.index)
