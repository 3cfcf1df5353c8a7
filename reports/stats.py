"""Timing ratios with confidence intervals, by the percentile bootstrap (numpy only).

Kernel timings are skewed and carry outliers (a preempted repetition, a clock step), so the
statistics are medians and the intervals come from resampling, not from a normal approximation:

* `paired_ratio(a, b)`: samples of two backends from one interleaved sweep, a[i] and b[i] timed
  back to back. The statistic is the median of the per-repetition ratios a[i] / b[i]; pairs are
  resampled together, so drift that hits both members of a pair cancels.
* `ratio_of_medians(new, base)`: one backend's samples from two runs (a baseline and a new
  version), independent. The statistic is median(new) / median(base); each side is resampled.

A judgement ("slower", "a regression") is made only when the whole interval lies beyond the line,
never from the point estimate. The resampling is seeded, so a report is reproducible from its
records. Fewer than MIN_SAMPLES samples give the interval (0, inf): nothing can be concluded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

LEVEL = 0.95
RESAMPLES = 2000
SEED = 0
MIN_SAMPLES = 3


@dataclass(frozen=True)
class RatioCI:
    ratio: float
    lo: float
    hi: float
    n: int
    level: float = LEVEL

    def above(self, x: float) -> bool:
        """The whole interval lies above x (e.g. A is slower than B when x = 1)."""
        return self.lo > x

    def below(self, x: float) -> bool:
        return self.hi < x

    @property
    def significant(self) -> bool:
        """The interval excludes 1: the two sides differ."""
        return self.above(1.0) or self.below(1.0)

    def to_json(self) -> dict[str, Any]:
        """JSON has no infinity or NaN: an open end (too few samples) is None."""

        def fin(x: float) -> Optional[float]:
            return x if math.isfinite(x) else None

        return {
            "ratio": fin(self.ratio),
            "lo": fin(self.lo),
            "hi": fin(self.hi),
            "n": self.n,
            "level": self.level,
            "significant": self.significant,
        }


def _percentiles(stats: np.ndarray, level: float) -> tuple[float, float]:
    tail = 100.0 * (1.0 - level) / 2.0
    lo, hi = np.percentile(stats, [tail, 100.0 - tail])
    return float(lo), float(hi)


def _clean(xs: Sequence[float], what: str) -> np.ndarray:
    arr = np.asarray(list(xs), dtype=np.float64)
    if arr.size and not (np.all(np.isfinite(arr)) and np.all(arr > 0)):
        raise ValueError(f"{what}: timings must be finite and > 0, got {arr.tolist()[:5]}...")
    return arr


def paired_ratio(
    a: Sequence[float], b: Sequence[float], level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED
) -> RatioCI:
    """Median of a[i] / b[i] over paired repetitions, with its bootstrap interval."""
    xa, xb = _clean(a, "a"), _clean(b, "b")
    if xa.size != xb.size:
        raise ValueError(f"paired samples need equal counts, got {xa.size} and {xb.size}")
    if xa.size == 0:
        return RatioCI(math.nan, 0.0, math.inf, 0, level)
    r = xa / xb
    point = float(np.median(r))
    if r.size < MIN_SAMPLES:
        return RatioCI(point, 0.0, math.inf, int(r.size), level)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, r.size, size=(resamples, r.size))
    lo, hi = _percentiles(np.median(r[idx], axis=1), level)
    return RatioCI(point, lo, hi, int(r.size), level)


def ratio_of_medians(
    new: Sequence[float], base: Sequence[float], level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED
) -> RatioCI:
    """median(new) / median(base) for independent samples, with its bootstrap interval."""
    xn, xb = _clean(new, "new"), _clean(base, "base")
    n = int(min(xn.size, xb.size))
    if n == 0:
        return RatioCI(math.nan, 0.0, math.inf, 0, level)
    point = float(np.median(xn) / np.median(xb))
    if n < MIN_SAMPLES:
        return RatioCI(point, 0.0, math.inf, n, level)
    rng = np.random.default_rng(seed)
    mn = np.median(xn[rng.integers(0, xn.size, size=(resamples, xn.size))], axis=1)
    mb = np.median(xb[rng.integers(0, xb.size, size=(resamples, xb.size))], axis=1)
    lo, hi = _percentiles(mn / mb, level)
    return RatioCI(point, lo, hi, n, level)
