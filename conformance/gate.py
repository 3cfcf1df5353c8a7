"""What the gate decides, as values: ledger outcomes, crash records, skips a runner may not have.

Kept free of pytest so `attncheck run` and the pytest plugin (conformance/gate_plugin.py) decide
the same way, and so each decision is tested without a session:

* a record a ledger entry predicts to fail, that fails: an expected failure (it does not fail
  the gate); that passes: an unexpected pass (it fails the gate, so the entry gets narrowed or
  removed when the library is fixed);
* a case a `crash` entry predicts is never launched: it is recorded as skipped with the entry id;
* a case whose process died is an error whose reason starts with CRASHED (conformance/isolate.py);
* on a runner that declares hardware (`--require`), a skip of a test needing it is a failure,
  unless the skip is a decision about the case (an adapter declining it, the ledger holding it back).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, Optional, Sequence

from conformance.evaluate import CONTEXT_LOST, CONTEXT_LOST_IN_PROCESS
from conformance.known_failures import KnownFailure, entry_for, history_entry_for, upstream_of
from kernels import skips
from kernels.flashinfer.adapter import AdapterOptions, graph_wrapper_key
from reports.records import CRASHED, FAILING, ParityRecord
from scenarios.case import Case

# Skip / error reason constants (the part before ": " is what summaries group by).
NOT_LAUNCHED = "not launched, a known crash in the ledger"
RACE_DID_NOT_SHOW = "passed, the known defect did not show"

# What an error record's reason says when the CUDA context was lost after it (conformance/evaluate.py).
LOST_TEXTS: tuple[str, ...] = (CONTEXT_LOST, CONTEXT_LOST_IN_PROCESS)

Outcome = Literal["pass", "fail", "skip", "expected_failure", "unexpected_pass"]


@dataclass(frozen=True)
class LedgerVerdict:
    outcome: Outcome
    message: str = ""


def judge_record(rec: ParityRecord, entry: Optional[KnownFailure]) -> LedgerVerdict:
    """The gate's outcome for one record, given the ledger entry that predicts it fails (if any). A pass where an
    entry whose failure is not the case's alone (a race, unwritten rows: `unrepeatable`) predicts one is a pass:
    such a defect can stay hidden on a run, so the pass says nothing of a fix (its script decides that)."""
    if rec.status in FAILING:
        if entry is None:
            return LedgerVerdict("fail")
        return LedgerVerdict("expected_failure", f"known failure {entry.id} ({upstream_of(entry)}): {entry.summary}")
    if rec.status == "pass" and entry is not None and entry.unrepeatable:
        return LedgerVerdict(
            "pass",
            f"{RACE_DID_NOT_SHOW}: ledger entry {entry.id} can show here, but its wrong output is not the case's "
            f"alone ({entry.unrepeatable}); `attncheck ledger verify {entry.id}` decides whether it is fixed",
        )
    if rec.status == "pass" and entry is not None:
        return LedgerVerdict(
            "unexpected_pass",
            f"unexpected pass: ledger entry {entry.id} predicts a {entry.status} here "
            f"({upstream_of(entry)}). Fix: narrow the entry's applies() or versions, or "
            f"remove it if the library fixed the defect",
        )
    return LedgerVerdict("pass" if rec.status == "pass" else "skip")


GATE_FAILING: frozenset[str] = frozenset({"fail", "unexpected_pass"})


@dataclass(frozen=True)
class Ledger:
    """The ledger as one run asks it: the target, its version, the architecture and the adapter options.

    `attncheck run` and the pytest grid both ask it before a case (is it held back?) and after its
    record (which entry explains it, and the gate's verdict), so they agree on every verdict and on
    the exit status: a run fails when a verdict is in GATE_FAILING.
    """

    target: str
    version: Optional[str]
    arch: Optional[str]
    options: Optional[dict[str, Any]] = None

    def held_back(self, case: Case, backend: str) -> Optional[KnownFailure]:
        """The crash entry that keeps (case, backend) from being launched, if any."""
        return crash_entry(entry_for(self.target, case.to_json(), backend, self.version, self.arch, self.options))

    def verdict(
        self, case: Case, backend: str, rec: ParityRecord, earlier: Sequence[Case] = ()
    ) -> tuple[ParityRecord, Optional[KnownFailure], LedgerVerdict]:
        """The entry that predicts `rec` fails, asked about the kernel the record ran where it says (an auto
        record's long-lived wrapper may hold another kernel than a fresh pick); for a failing record a fresh
        adapter passed, the lifecycle entry whose rule matches `earlier` (the plans the same library wrapper
        served before, oldest first) then `case`; for an error that lost the CUDA context (no control could
        run), that lifecycle entry only if its history is known to lose it (`KnownFailure.loses_context`).
        Returns the record (a failing one naming the entry in `known`), the entry and the gate's verdict."""
        entry = entry_for(
            self.target, case.to_json(), backend, self.version, self.arch, self.options, resolved=rec.resolved_backend
        )
        lost = context_lost(rec)
        if entry is None and rec.status in FAILING and (rec.fresh == "pass" or lost) and earlier:
            plans = [c.to_json() for c in (*earlier, case)]
            found = history_entry_for(self.target, plans, backend, self.version, self.arch, self.options)
            if found is not None and (rec.fresh == "pass" or found.loses_context):
                entry = found
        if rec.status in FAILING and entry is not None:
            rec = replace(rec, known=entry.id)
        return rec, entry, judge_record(rec, entry)


def context_lost(rec: ParityRecord) -> bool:
    """An error record after which the CUDA context was lost, so no fresh control of it could run."""
    return rec.status == "error" and rec.fresh is None and any(t in rec.reason for t in LOST_TEXTS)


def wrapper_of(case: Case, backend: str, options: Optional[dict[str, Any]] = None) -> tuple:
    """Which library wrapper of a long-lived adapter plans `case`: the backend, then the FlashInfer adapter's
    own keying (kernels/flashinfer/adapter.py graph_wrapper_key: per API and KV layout; under CUDA graphs also
    per model config and batch size and, unless the adapter shares one wrapper across mask kinds, per mask kind)."""
    keying = AdapterOptions(graph_wrappers=(options or {}).get("graph_wrappers", "per_mask"))
    return (backend,) + graph_wrapper_key(case, backend.endswith("+graph"), keying)


def not_launched(case: Case, backend: str, entry: KnownFailure, base: dict[str, Any]) -> ParityRecord:
    """The record of a case a crash entry holds back: skipped, naming the entry and its issue."""
    return ParityRecord(
        backend=backend,
        case_id=case.id,
        case=case.to_json(),
        status="skip",
        reason=skips.detail(NOT_LAUNCHED, f"{entry.id} ({upstream_of(entry)}): {entry.summary}"),
        features=list(case.features),
        known=entry.id,
        **base,
    )


def crash_entry(entry: Optional[KnownFailure]) -> Optional[KnownFailure]:
    return entry if entry is not None and entry.status == "crash" else None


def crashed(case: Case, backend: str, how: str, base: dict[str, Any]) -> ParityRecord:
    """The record of a case whose process died while evaluating it; `how` says how it died."""
    return ParityRecord(
        backend=backend,
        case_id=case.id,
        case=case.to_json(),
        status="error",
        reason=skips.detail(CRASHED, how),
        features=list(case.features),
        **base,
    )


def required_skip(markers: frozenset[str], required: frozenset[str], decision: bool, reason: str) -> Optional[str]:
    """The failure message for a skip the runner's declared hardware forbids; None if it may skip.

    `decision`: the skip is a decision about the case (an adapter declined it, the ledger held it
    back), which any runner may take; every other skip of a required-hardware test fails.
    """
    hit = sorted(markers & required)
    if not hit or decision:
        return None
    return (
        f"--require {','.join(hit)}: this runner declares that hardware, and this test for it skipped "
        f"({reason}). Fix: repair the runner (driver, visible devices, libraries), or drop --require"
    )
