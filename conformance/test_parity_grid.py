"""Every backend of the chosen target against the oracle over the budgeted matrix."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.parity_run import evaluate
from oracle.judge import Truth, truth
from reports.parity import failure_line
from scenarios.case import Case
from scenarios.tensors import Inputs, materialize

# One long-lived adapter per backend, and one truth per case, per test process: adapters are
# reused across cases as a serving engine reuses a wrapper, and the oracle runs once per case.
_ADAPTERS: dict[tuple[str, str, str], Any] = {}
_TRUTH: dict[str, tuple[Inputs, Truth]] = {}


def _inputs_and_truth(case: Case, seed: int, device: str) -> tuple[Inputs, Truth]:
    if case.id not in _TRUTH:
        _TRUTH.clear()  # cases arrive grouped; keep one alive so memory stays flat
        inputs = materialize(case, seed, device)
        _TRUTH[case.id] = (inputs, truth(inputs))
    return _TRUTH[case.id]


def test_backend_matches_the_oracle(parity_case: Case, backend: str, pytestconfig: pytest.Config) -> None:
    """The backend's output and LSE are within the tolerance bound of the oracle, or it declines with a reason."""
    from kernels import get_target
    target_name, device, seed = (pytestconfig.getoption("--target"), pytestconfig.getoption("--device"),
                                 pytestconfig.getoption("--seed"))
    key = (target_name, backend, device)
    if key not in _ADAPTERS:
        _ADAPTERS[key] = get_target(target_name).make(backend, device)
    inputs, t = _inputs_and_truth(parity_case, seed, device)
    rec = evaluate(_ADAPTERS[key], parity_case, inputs, lambda: t,
                   dict(run_id="pytest", target=target_name, device=device, seed=seed))
    if rec.status in ("skip", "refused"):
        pytest.skip(f"{rec.status}: {rec.reason}")
    assert rec.status == "pass", failure_line(rec)
