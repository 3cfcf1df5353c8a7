"""The one truth cache: a case's inputs made once, its oracle run once and only when asked, memory bounded."""

from __future__ import annotations

from typing import Any

import pytest

import conformance.evaluate as ev
from scenarios.case import Case

CASE = Case("ragged", (3,), (5,), 2, 1, head_dim_qk=16, head_dim_vo=16, q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32")


@pytest.fixture
def oracle_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    monkeypatch.setattr(ev, "truth", lambda inputs: calls.append(inputs) or ("truth", inputs.case.id))
    return calls


def test_a_cases_backends_share_one_oracle_run_made_only_when_asked(oracle_calls: list[Any]) -> None:
    """The same (case, seed, device) gives the same inputs; the oracle runs on the first truth() only."""
    cache = ev.TruthCache()
    first = cache.of(CASE, 0, "cpu")
    assert oracle_calls == []  # every backend may decline: no oracle yet
    assert cache.of(CASE, 0, "cpu") is first
    assert first.truth() == first.truth() == ("truth", CASE.id) and oracle_calls == [first.inputs]
    other_seed = cache.of(CASE, 1, "cpu")
    assert other_seed is not first and other_seed.inputs.seed == 1


def test_the_cache_keeps_at_most_its_size_least_recently_used_first(oracle_calls: list[Any]) -> None:
    """Past `size` entries the least recently used goes: a run's memory stays flat however many cases."""
    cache = ev.TruthCache(size=2)
    a, b = cache.of(CASE, 0, "cpu"), cache.of(CASE, 1, "cpu")
    assert cache.of(CASE, 0, "cpu") is a  # a is now the most recent
    cache.of(CASE, 2, "cpu")  # evicts b
    assert len(cache._items) == 2 and cache.of(CASE, 0, "cpu") is a and cache.of(CASE, 1, "cpu") is not b


def test_a_captured_batch_is_used_as_given() -> None:
    """`inputs` (a replayed batch) are the entry's inputs, not a fresh materialisation."""
    from scenarios.tensors import materialize

    given = materialize(CASE, 7, "cpu")
    assert ev.TruthCache().of(CASE, 0, "cpu", given).inputs is given
