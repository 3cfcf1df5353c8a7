"""The gate's decisions as values: ledger outcomes, not-launched and crash records, required skips."""

from __future__ import annotations

from kernels import skips
from conformance import gate
from conformance.known_failures import NOT_FILED, KnownFailure
from reports import records
from reports.records import ParityRecord
from scenarios.case import Case

CASE = Case("ragged", (2,), (3,), 2, 1, head_dim_qk=8, head_dim_vo=8)
BASE = dict(run_id="r", target="torch", device="cpu", seed=0)
ENTRY = KnownFailure("e1", "torch", ("2.0",), "a defect", "fail", "docs/evidence/x.py", False, "nowhere")
CRASH = KnownFailure(
    "c1",
    "torch",
    ("2.0",),
    "kills the context",
    "crash",
    "docs/evidence/x.py",
    False,
    "nowhere",
    upstream="https://github.com/org/lib/issues/9",
)


def _rec(status: str) -> ParityRecord:
    return ParityRecord(backend="math", case_id=CASE.id, case=CASE.to_json(), status=status, **BASE)


def test_ledger_outcomes() -> None:
    """Failing + entry: expected; passing + entry: unexpected pass; no entry: plain pass or fail."""
    assert gate.judge_record(_rec("fail"), None).outcome == "fail"
    assert gate.judge_record(_rec("error"), ENTRY).outcome == "expected_failure"
    v = gate.judge_record(_rec("pass"), ENTRY)
    assert v.outcome == "unexpected_pass" and NOT_FILED in v.message and "e1" in v.message
    assert gate.judge_record(_rec("pass"), None).outcome == "pass"
    assert gate.judge_record(_rec("skip"), ENTRY).outcome == "skip"


def test_a_pass_under_an_entry_whose_failure_is_a_race_is_a_pass_not_an_unexpected_one() -> None:
    """Seen on the H200 (docs/evidence/2026-12-03-h200-5/): fa3's LSE store race did not show on two windowed
    cases, on both versions; a pass there says nothing of a fix, so it does not fail the gate, and says why."""
    race = KnownFailure(
        "r1", "torch", ("2.0",), "a race", "fail", "docs/evidence/x.py", False, "nowhere", unrepeatable="a race"
    )
    v = gate.judge_record(_rec("pass"), race)
    assert v.outcome == "pass" and gate.RACE_DID_NOT_SHOW in v.message and "ledger verify r1" in v.message
    assert gate.judge_record(_rec("fail"), race).outcome == "expected_failure"


def test_a_crash_entry_gives_a_skip_naming_it_and_its_issue() -> None:
    assert gate.crash_entry(ENTRY) is None and gate.crash_entry(CRASH) is CRASH
    rec = gate.not_launched(CASE, "math", CRASH, BASE)
    assert rec.status == "skip" and rec.known == "c1"
    assert skips.constant_of(rec.reason) == gate.NOT_LAUNCHED and "issues/9" in rec.reason


def test_a_crash_record_is_an_error_recognised_as_a_crash() -> None:
    """Reason constants hold no ': ', so grouping and is_crash read the constant back."""
    assert ": " not in gate.CRASHED and ": " not in gate.NOT_LAUNCHED
    rec = gate.crashed(CASE, "flash", "killed by signal SIGSEGV (11)", BASE)
    assert rec.status == "error" and records.is_crash(rec) and not records.is_crash(_rec("error"))


def test_required_skip() -> None:
    """A skip of a required-hardware test fails unless it is a decision; other markers do not matter."""
    req = frozenset({"sm90"})
    assert gate.required_skip(frozenset({"sm90", "cuda"}), req, False, "needs sm90") is not None
    assert gate.required_skip(frozenset({"sm90"}), req, True, "declined") is None
    assert gate.required_skip(frozenset({"cuda"}), req, False, "needs cuda") is None
    assert gate.required_skip(frozenset(), frozenset(), False, "x") is None
