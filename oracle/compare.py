"""Comparison of a kernel's result with the reference: a pure function returning a record.

No pytest here: tests assert on the Comparison, reports render the same object.

Outputs are poisoned before a kernel runs (scenarios/poison.py): every element is set to a NaN with a
distinctive bit pattern, so an element the kernel never wrote is counted as *unwritten*, apart
from NaNs the kernel computed. Neither ever passes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Optional

import torch

from scenarios.poison import unwritten_mask


@dataclass(frozen=True)
class Comparison:
    quantity: str
    max_abs: float
    max_rel: float
    bound: float
    baseline_err: float
    worst_index: Optional[tuple[int, ...]]
    nan_count: int
    unwritten_count: int
    inf_mismatch_count: int
    numel: int
    passed: bool

    @property
    def ratio(self) -> float:
        """Error over bound: < 1 passes. inf when something is unwritten, NaN or mismatched."""
        if self.nan_count or self.unwritten_count or self.inf_mismatch_count:
            return math.inf
        return self.max_abs / self.bound if self.bound > 0 else (0.0 if self.max_abs == 0 else math.inf)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["worst_index"] = list(self.worst_index) if self.worst_index is not None else None
        for k in ("max_abs", "max_rel", "bound", "baseline_err"):
            if not math.isfinite(d[k]):
                d[k] = str(d[k])
        return d

    def summary(self) -> str:
        bits = [f"{self.quantity}: max_abs={self.max_abs:.3g} bound={self.bound:.3g}"]
        if self.worst_index is not None:
            bits.append(f"worst at {self.worst_index}")
        for name in ("nan_count", "unwritten_count", "inf_mismatch_count"):
            if getattr(self, name):
                bits.append(f"{name}={getattr(self, name)}")
        return " ".join(bits)


def max_abs_err(a: torch.Tensor, ref: torch.Tensor) -> float:
    """Largest |a - ref| over elements where ref is finite (0 for none)."""
    fin = torch.isfinite(ref)
    if not bool(fin.any()):
        return 0.0
    d = (a.double() - ref.double()).abs()[fin]
    d = torch.nan_to_num(d, nan=math.inf)
    return float(d.max())


def compare(
    actual: torch.Tensor, ref: torch.Tensor, *, quantity: str, bound: float, baseline_err: float = 0.0
) -> Comparison:
    """Compare `actual` with `ref` (same shape) under `bound` (absolute).

    Where `ref` is infinite (LSE of an empty row), `actual` must be the same infinity.
    """
    if actual.shape != ref.shape:
        raise ValueError(f"{quantity}: actual shape {tuple(actual.shape)} != reference shape {tuple(ref.shape)}")
    unwritten = unwritten_mask(actual)
    a = actual.double()
    r = ref.to(a.device).double()
    nan = torch.isnan(a) & ~unwritten
    fin = torch.isfinite(r)
    inf_mismatch = (~fin) & ~(a == r) & ~unwritten & ~nan
    diff = (a - r).abs()
    diff = torch.where(fin & ~unwritten & ~nan, diff, torch.zeros_like(diff))
    diff = torch.nan_to_num(diff, nan=0.0, posinf=math.inf)
    n_bad = int(unwritten.sum()) + int(nan.sum()) + int(inf_mismatch.sum())
    if diff.numel():
        flat = int(torch.argmax(diff))
        max_abs = float(diff.reshape(-1)[flat])
        worst = tuple(int(x) for x in torch.unravel_index(torch.tensor(flat), diff.shape))
        denom = r.abs().clamp_min(1e-6)
        rel = torch.where(fin, diff / denom, torch.zeros_like(diff))
        max_rel = float(rel.max())
    else:
        max_abs, worst, max_rel = 0.0, None, 0.0
    if n_bad:
        bad = (unwritten | nan | inf_mismatch).reshape(-1).nonzero()
        worst = tuple(int(x) for x in torch.unravel_index(bad[0, 0].cpu(), diff.shape))
    passed = n_bad == 0 and max_abs <= bound
    return Comparison(
        quantity=quantity,
        max_abs=max_abs,
        max_rel=max_rel,
        bound=bound,
        baseline_err=baseline_err,
        worst_index=worst,
        nan_count=int(nan.sum()),
        unwritten_count=int(unwritten.sum()),
        inf_mismatch_count=int(inf_mismatch.sum()),
        numel=int(a.numel()),
        passed=passed,
    )
