"""The ledger asked about the kernel an `auto` record ran: the parity run's annotation and the gate's verdict."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import conformance.known_failures as kf
import conformance.parity_run as pr
from conformance.grid_run import GridRun
from reports.records import ParityRecord
from scenarios.case import Case

CASE = Case(
    "ragged", (3, 2), (7, 4), 4, 2, head_dim_qk=16, head_dim_vo=16, q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"
)
TORCH_VERSION = __import__("torch").__version__
# A defect of fa3 that a fresh auto wrapper would run into here (as the FlashInfer entries model it).
FA3_ONLY = kf.KnownFailure(
    "fake-fa3-defect",
    "torch",
    (TORCH_VERSION,),
    "fa3 only",
    "fail",
    "docs/evidence/none.py",
    confirmed=False,
    seen="test",
    applies=lambda c, b: b in ("fa3", "auto"),
)


def _record(status: str, resolved: str) -> ParityRecord:
    return ParityRecord(
        run_id="r",
        target="torch",
        backend="auto",
        device="cpu",
        case_id=CASE.id,
        case=CASE.to_json(),
        seed=0,
        status=status,
        resolved_backend=resolved,
    )


def test_an_auto_record_that_ran_another_kernel_is_not_claimed() -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kf, "LEDGER", (FA3_ONLY,))
        assert kf.known_for("torch", CASE.to_json(), "auto", TORCH_VERSION) == "fake-fa3-defect"  # the fresh pick
        assert kf.known_for("torch", CASE.to_json(), "auto", TORCH_VERSION, resolved="fa3") == "fake-fa3-defect"
        assert kf.known_for("torch", CASE.to_json(), "auto+graph", TORCH_VERSION, resolved="fa2") is None
        assert kf.known_for("torch", CASE.to_json(), "auto", TORCH_VERSION, resolved="unobserved") == "fake-fa3-defect"


def test_the_gate_does_not_call_a_pass_on_the_held_kernel_unexpected(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-lived auto wrapper held fa2 (sticky, or graph mode's first plan) and passed: no entry, so the gate
    sees a plain pass; on fa3 the same pass is the entry's unexpected pass."""
    monkeypatch.setattr(kf, "LEDGER", (FA3_ONLY,))
    run = GridRun("torch", "cpu", "quick", 0, "w0")
    rec, entry, verdict = run.evaluate(CASE, "auto", lambda: (_record("pass", "fa2"), True))
    assert entry is None and rec.known is None and verdict.outcome == "pass"
    rec, entry, verdict = run.evaluate(CASE, "auto", lambda: (_record("pass", "fa3"), True))
    assert entry is not None and entry.id == "fake-fa3-defect" and verdict.outcome == "unexpected_pass"
    rec, entry, verdict = run.evaluate(CASE, "auto", lambda: (_record("fail", "fa3"), True))
    assert rec.known == "fake-fa3-defect" and verdict.outcome == "expected_failure"


def test_the_parity_run_annotates_a_failing_record_by_the_kernel_it_ran(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setattr(kf, "LEDGER", (FA3_ONLY,))
    ran = iter(["fa2", "fa3"])

    def failing(adapter: Any, case: Case, *a: Any, **k: Any) -> tuple[ParityRecord, bool]:
        return replace(_record("fail", next(ran)), backend=adapter.backend), True

    monkeypatch.setattr(pr, "evaluate_with_control", failing)
    out = pr.run_parity(
        "torch", "cpu", "quick", str(tmp_path / "a"), cases=[CASE, CASE.replace(causal=True)], backends=["auto"]
    )
    assert [r.known for r in out.records] == [None, "fake-fa3-defect"]


def _run_ran(monkeypatch: pytest.MonkeyPatch, tmp_path: Any, *ran: tuple[str, str]) -> pr.RunOutcome:
    """A parity run of CASE variants on `auto` whose records say (status, kernel that ran), in order."""
    it = iter(ran)

    def recorded(adapter: Any, case: Case, *a: Any, **k: Any) -> tuple[ParityRecord, bool]:
        status, kernel = next(it)
        return replace(_record(status, kernel), backend=adapter.backend, case_id=case.id, case=case.to_json()), True

    monkeypatch.setattr(pr, "evaluate_with_control", recorded)
    cases = [CASE, CASE.replace(causal=True)][: len(ran)]
    return pr.run_parity("torch", "cpu", "quick", str(tmp_path), cases=cases, backends=["auto"])


def test_the_cli_exit_status_is_the_gates_verdict(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """`attncheck run` and the pytest gate agree: failures the ledger explains exit 0, an unexplained failure
    or a pass an entry claims (the library may be fixed) exits 1."""
    monkeypatch.setattr(kf, "LEDGER", (FA3_ONLY,))
    known = _run_ran(monkeypatch, tmp_path / "known", ("fail", "fa3"), ("error", "fa3"))
    assert [v.outcome for v in known.verdicts] == ["expected_failure", "expected_failure"]
    assert known.exit_status == 0
    unexplained = _run_ran(monkeypatch, tmp_path / "unexplained", ("fail", "fa3"), ("fail", "fa2"))
    assert [v.outcome for v in unexplained.verdicts] == ["expected_failure", "fail"] and unexplained.exit_status == 1
    fixed = _run_ran(monkeypatch, tmp_path / "fixed", ("pass", "fa3"))
    assert [v.outcome for v in fixed.verdicts] == ["unexpected_pass"] and fixed.exit_status == 1
