"""Every backend of the chosen target against the oracle over the budgeted matrix, under the gate."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.gate_plugin import as_decision, note
from conformance.grid_run import GridRun
from conformance.evaluate import CONTEXT_LOST, TruthCache, evaluate_with_control
from reports.parity import failure_line
from reports.records import ParityRecord
from scenarios.case import Case

# One long-lived adapter per backend, and one truth per case, per test process: adapters are
# reused across cases as a serving engine reuses a wrapper, and the oracle runs once per case.
_ADAPTERS: dict[tuple[str, str, str], Any] = {}
_TRUTHS = TruthCache()


def test_backend_matches_the_oracle(
    parity_case: Case, backend: str, attncheck_grid: GridRun, request: pytest.FixtureRequest
) -> None:
    """The backend's output and LSE are within the tolerance bound of the oracle, or it declines with a reason."""
    from kernels import get_target

    grid = attncheck_grid

    def in_process() -> tuple[ParityRecord, bool]:
        key = (grid.target, backend, grid.device)
        if key not in _ADAPTERS:
            _ADAPTERS[key] = get_target(grid.target).make(backend, grid.device)
        known = _TRUTHS.of(parity_case, grid.seed, grid.device)
        return evaluate_with_control(
            _ADAPTERS[key], parity_case, known.inputs, known.truth, grid.base, grid.device, CONTEXT_LOST
        )

    rec, _, verdict = grid.evaluate(parity_case, backend, in_process)
    note(request.node, rec, verdict)
    if rec.status in ("skip", "refused"):
        as_decision(request.node)
        pytest.skip(f"{rec.status}: {rec.reason}")
    if verdict.outcome == "expected_failure":
        pytest.xfail(f"{verdict.message} | {failure_line(rec)}")
    if verdict.outcome == "unexpected_pass":
        pytest.fail(verdict.message, pytrace=False)
    assert rec.status == "pass", failure_line(rec)
