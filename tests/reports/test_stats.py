"""Bootstrap intervals for timing ratios: exact on exact data, honest on small or noisy data, reproducible."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reports.stats import MIN_SAMPLES, paired_ratio, ratio_of_medians


def test_an_exact_ratio_has_a_point_interval() -> None:
    ci = paired_ratio([2.0, 4.0, 6.0, 8.0], [1.0, 2.0, 3.0, 4.0])
    assert (ci.ratio, ci.lo, ci.hi, ci.n) == (2.0, 2.0, 2.0, 4) and ci.significant and ci.above(1.9)


def test_pairs_cancel_drift_that_hits_both_members() -> None:
    """A machine slowing down 10x over the run changes nothing in the paired ratio."""
    drift = np.linspace(1.0, 10.0, 20)
    ci = paired_ratio(list(1.5 * drift), list(drift))
    assert ci.lo == pytest.approx(1.5) and ci.hi == pytest.approx(1.5)


def test_too_few_samples_conclude_nothing() -> None:
    ci = paired_ratio([3.0] * (MIN_SAMPLES - 1), [1.0] * (MIN_SAMPLES - 1))
    assert ci.ratio == 3.0 and (ci.lo, ci.hi) == (0.0, math.inf) and not ci.significant


def test_noisy_samples_give_a_wide_interval_that_holds_the_truth() -> None:
    rng = np.random.default_rng(1)
    b = rng.lognormal(0.0, 0.3, 40)
    a = 1.3 * b * rng.lognormal(0.0, 0.3, 40)
    ci = paired_ratio(list(a), list(b))
    assert ci.lo < 1.3 < ci.hi and ci.hi - ci.lo > 0.1
    assert paired_ratio(list(a), list(b)) == ci  # seeded: the same records give the same report


def test_ratio_of_medians_for_two_runs() -> None:
    ci = ratio_of_medians([1.3, 1.31, 1.29, 1.3, 1.32], [1.0, 1.01, 0.99, 1.0, 1.02])
    assert 1.25 < ci.lo <= ci.ratio <= ci.hi < 1.35
    wide = ratio_of_medians([0.9, 1.0, 1.2, 1.5, 1.6], [1.0] * 5)
    assert wide.ratio == pytest.approx(1.2) and not wide.above(1.1)


@pytest.mark.parametrize("bad", [[1.0, 0.0, 1.0], [1.0, float("nan"), 1.0], [1.0, -1.0, 1.0]])
def test_impossible_timings_are_refused(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        paired_ratio(bad, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError):
        paired_ratio([1.0, 1.0], [1.0, 1.0, 1.0])
