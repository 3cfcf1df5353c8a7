"""A run's failing record that a fresh adapter passes is asked of the ledger's lifecycle entries too.

Seen on the H200 (docs/evidence/2026-12-02-h200-lifecycle/README.md): `attncheck record` reported an
unmasked ragged fa2 case after a masked one as unexplained on both versions, though the ledger describes
the stale ragged mask by its plan history and the machines recognise it. The run's long-lived adapter
plans its cases one after the other; `Pairs` keeps what each library wrapper planned, and the gate names
the entry whose history rule matches, only where the fresh control passed, or where the record lost the CUDA
context (no control could run) and the entry's history is known to lose it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from conformance import known_failures
from conformance.evaluate import CONTEXT_LOST_IN_PROCESS
from conformance.gate import Ledger
from conformance.pairs import Pairs
from reports.records import CRASHED, ParityRecord
from scenarios.case import Case

MASKED = Case("ragged", (3, 5), (9, 17), 4, 2, mask="custom")
UNMASKED = Case("ragged", (4, 6), (10, 12), 4, 2)
PAGED_MASKED = Case("paged", (3, 5), (9, 17), 4, 2, mask="custom")
STALE = "flashinfer-ragged-stale-mask"


def _rec(case: Case, backend: str, status: str, fresh: Any = None, reason: str = "") -> ParityRecord:
    return ParityRecord(
        run_id="r",
        target="flashinfer",
        backend=backend,
        device="cuda",
        case_id=case.id,
        case=case.to_json(),
        seed=0,
        status=status,
        reason=reason,
        fresh=fresh,
    )


def _run(pairs: Pairs, steps: list[tuple[Case, str, ParityRecord]]) -> list[ParityRecord]:
    return [pairs.evaluate(c, b, lambda r=r: (r, True))[0] for c, b, r in steps]


def _pairs() -> Pairs:
    ledger = Ledger("flashinfer", "0.7.2.post1", "sm90")
    return Pairs(ledger, {}, isolated=lambda: None)  # type: ignore[arg-type,return-value]


def test_an_unmasked_ragged_failure_after_a_masked_plan_is_the_stale_mask_entry() -> None:
    failing = _rec(UNMASKED, "fa2", "fail", fresh="pass")
    *_, last = _run(_pairs(), [(MASKED, "fa2", _rec(MASKED, "fa2", "pass")), (UNMASKED, "fa2", failing)])
    assert last.known == STALE


def test_without_the_history_or_the_fresh_pass_no_lifecycle_entry_is_named() -> None:
    failing = _rec(UNMASKED, "fa2", "fail", fresh="pass")
    assert _run(_pairs(), [(UNMASKED, "fa2", failing)])[0].known is None  # no earlier plan
    # the masked plan went to another wrapper (paged), or to another backend's adapter
    for before, backend in ((PAGED_MASKED, "fa2"), (MASKED, "fa3")):
        recs = _run(_pairs(), [(before, backend, _rec(before, backend, "pass")), (UNMASKED, "fa2", failing)])
        assert recs[-1].known is None, (before.layout, backend)
    # a fresh adapter failed too: the case alone fails, its history explains nothing
    alike = replace(failing, fresh="fail")
    recs = _run(_pairs(), [(MASKED, "fa2", _rec(MASKED, "fa2", "pass")), (UNMASKED, "fa2", alike)])
    assert recs[-1].known is None


LOST = f"AcceleratorError: CUDA error: an illegal memory access was encountered; {CONTEXT_LOST_IN_PROCESS}: ..."


def test_an_illegal_address_that_lost_the_context_after_a_masked_plan_is_the_stale_mask_entry() -> None:
    """Seen on the H200 (docs/evidence/2026-12-03-h200-4/README.md): an unmasked ragged fa2 case after a masked one
    died with an illegal address, the context lost, so no fresh control ran; the stale mask entry's history is
    known to end that way (loses_context), so it names the record. Not without that history, nor for an error
    that left the context alive (its fresh control decides)."""
    crashed = _rec(UNMASKED, "fa2", "error", reason=LOST)
    *_, last = _run(_pairs(), [(MASKED, "fa2", _rec(MASKED, "fa2", "pass")), (UNMASKED, "fa2", crashed)])
    assert last.known == STALE
    assert _run(_pairs(), [(UNMASKED, "fa2", crashed)])[0].known is None
    alive = _rec(UNMASKED, "fa2", "error", reason="RuntimeError: a plain error")
    *_, last = _run(_pairs(), [(MASKED, "fa2", _rec(MASKED, "fa2", "pass")), (UNMASKED, "fa2", alive)])
    assert last.known is None


def test_a_lost_context_is_named_only_by_a_history_known_to_lose_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same record under a ledger whose stale mask entry does not say it loses the context: unexplained."""
    ledger = tuple(replace(e, loses_context="") if e.id == STALE else e for e in known_failures.LEDGER)
    monkeypatch.setattr(known_failures, "LEDGER", ledger)
    crashed = _rec(UNMASKED, "fa2", "error", reason=LOST)
    *_, last = _run(_pairs(), [(MASKED, "fa2", _rec(MASKED, "fa2", "pass")), (UNMASKED, "fa2", crashed)])
    assert last.known is None


def test_a_process_that_died_takes_its_wrappers_history_along() -> None:
    pairs = _pairs()
    _run(pairs, [(MASKED, "fa2", _rec(MASKED, "fa2", "pass"))])  # the ragged wrapper planned a mask
    crash = _rec(PAGED_MASKED, "fa2", "error", reason=f"{CRASHED}: killed by signal SIGSEGV (11)")
    pairs.evaluator = _Evaluator([crash, _rec(UNMASKED, "fa2", "fail", fresh="pass")])  # type: ignore[assignment]
    recs = [pairs.evaluate(c, "fa2", lambda: (None, True))[0] for c in (PAGED_MASKED, UNMASKED)]  # type: ignore[arg-type,return-value]
    assert recs[-1].known is None  # the process that planned the mask is gone: the fresh child's wrapper never did


class _Evaluator:
    def __init__(self, records: list[ParityRecord]) -> None:
        self.records = records

    def evaluate(self, case: Case, backend: str, base: dict[str, Any]) -> ParityRecord:
        return self.records.pop(0)

    def close(self) -> None:
        pass
