"""Every number of the tolerance model, in one table.

    bound = FACTORS[dtype] * baseline_err           where baseline_err > 0
    bound = floor(dtype, quantity, ref_scale)       where baseline_err == 0 exactly

baseline_err is the largest error, over the compared tensor and against the reference (the fp32
oracle; fp64 for all-fp32 cases, oracle.judge), of an honest low-precision kernel on the same
inputs: oracle.reference precision="honest", whose rounding points oracle/honest.py lists (P
rounded before P.V, the output rounded once, the LSE's honest errors at their magnitude). A
kernel may be at most FACTORS[dtype] times as wrong as that kernel, dtype being the case's
governing (coarsest) dtype. The floor serves only where the honest kernel is exact (one key per
row, fully masked rows, an empty batch), where a factor of 0 would leave no room at all:
    floor = atol + rtol * ref_scale,  ref_scale = max |reference| over the compared tensor.
The factors are measured, not guessed: docs/evidence/2026-12-02-honest-baseline.md holds the
err/bound distributions of every honest backend and of the precision defects
(kernels/torch_precision_faults.py) they were chosen from. fp32 cases are judged against fp64
with the fp32 oracle's own error as the baseline; kernels that sum in another order reach a few
times that, hence their larger factor.

An override is a row naming (adapter, dtype, quantity), the factor it replaces, a reason and a
tracker reference; a literal atol in a test is a bug.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

Quantity = Literal["out", "lse"]

# governing dtype -> how many times the honest kernel's error a kernel may reach.
FACTORS: dict[str, float] = {
    "fp32": 16.0,
    "fp16": 3.0,
    "bf16": 3.0,
    "e4m3fn": 3.0,
    "e4m3fnuz": 3.0,
    "e5m2": 3.0,
}

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
    return FACTORS[dtype]


def bound(baseline_err: float, dtype: str, quantity: str, ref_scale: float, factor: Optional[float] = None) -> float:
    """factor (FACTORS[dtype] unless given) x the honest kernel's error; the floor only where that error is 0."""
    if baseline_err > 0:
        return (FACTORS[dtype] if factor is None else factor) * baseline_err
    return floor(dtype, quantity, ref_scale)


# Coarsest first: the dtype whose floor governs a case is the coarsest of q, kv and o.
_COARSENESS = ("e5m2", "e4m3fn", "e4m3fnuz", "bf16", "fp16", "fp32")


def governing_dtype(q_dtype: str, kv_dtype: str, o_dtype: str) -> str:
    """The least precise of a case's dtypes, which sets its floor."""
    return min((q_dtype, kv_dtype, o_dtype), key=_COARSENESS.index)
