"""The regression matrix is deterministic, budgeted, and always holds the directed cases."""

from __future__ import annotations

import pytest

from scenarios import matrix
from scenarios.errors import InvalidValue


def test_same_budget_and_seed_give_the_same_cases():
    """Two builds of one (budget, seed) are equal case by case."""
    assert [c.id for c in matrix.build("quick", 0)] == [c.id for c in matrix.build("quick", 0)]


def test_another_seed_gives_another_sample():
    """The seed changes the sampled part."""
    assert [c.id for c in matrix.build("quick", 0)] != [c.id for c in matrix.build("quick", 1)]


def test_directed_cases_are_always_included():
    """Every directed case is in every budget."""
    directed = {c.id for c in matrix.directed_cases()}
    for name in matrix.BUDGETS:
        assert directed <= {c.id for c in matrix.build(name, 3)}


@pytest.mark.parametrize("name", list(matrix.BUDGETS))
def test_sampled_cases_respect_the_budget(name):
    """Lengths, batch and heads never exceed the budget's caps."""
    b = matrix.BUDGETS[name]
    for c in matrix.build(name, 0)[len(matrix.directed_cases()) :]:
        assert c.batch_size <= b.max_batch
        assert max(c.qo_lens, default=0) <= b.max_qo
        assert max(c.kv_lens, default=0) <= b.max_kv


def test_quick_covers_every_layout_and_fp8():
    """The quick matrix reaches every layout, causal, custom masks, windows, soft cap and fp8."""
    cases = matrix.build("quick", 0)
    assert {c.layout for c in cases} == {"ragged", "paged", "decode", "single"}
    feats = {f for c in cases for f in c.features}
    assert {"causal", "custom_mask", "window", "soft_cap", "fp8", "gqa", "mqa", "zero_len", "empty_batch"} <= feats


@pytest.mark.parametrize("bad", ["fast", "", "QUICK", "quick:10"])
def test_malformed_budget_is_refused_with_the_value(bad):
    """parse_budget names the value and the valid budgets."""
    with pytest.raises(InvalidValue) as e:
        matrix.parse_budget(bad)
    assert e.value.value == bad and "quick" in e.value.expected
