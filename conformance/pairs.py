"""The one loop step of a run: a (case, backend) pair to a frozen record and the gate's verdict.

`attncheck run` (conformance/parity_run.py) and the pytest grid (conformance/grid_run.py) both
evaluate through `Pairs.evaluate`: a pair a crash entry holds back is not launched (a skip naming
the entry); otherwise it runs in this process (the caller's `in_process`, i.e.
conformance.evaluate.evaluate_with_control) until the CUDA context is lost, and in child processes
(conformance/isolate.py) from then on, or from the start under `--isolate`; every record then
gets the ledger's verdict (conformance.gate.Ledger), and `exit_status` is the gate's.
"""

from __future__ import annotations

from typing import Callable, Optional

from conformance.evaluate import CONTEXT_LOST
from conformance.gate import GATE_FAILING, Ledger, LedgerVerdict, not_launched, wrapper_of
from conformance.isolate import IsolatedEvaluator
from conformance.known_failures import KnownFailure
from reports.records import ParityRecord, is_crash
from scenarios.case import Case

Outcome = tuple[ParityRecord, Optional[KnownFailure], LedgerVerdict]


class Pairs:
    def __init__(
        self, ledger: Ledger, base: dict, isolated: Callable[[], IsolatedEvaluator], isolate: bool = False
    ) -> None:
        """`base`: the record fields fixed for the run; `isolated()` starts a child-process evaluator."""
        self.ledger, self.base = ledger, base
        self._isolated = isolated
        self.evaluator: Optional[IsolatedEvaluator] = isolated() if isolate else None
        self.verdicts: list[LedgerVerdict] = []  # the gate's, one per record
        # What each library wrapper of the long-lived adapters has planned, oldest first (gate.wrapper_of):
        # a lifecycle entry of the ledger explains a failure by it. A process that died took its wrappers along.
        self.planned: dict[tuple, list[Case]] = {}

    def evaluate(self, case: Case, backend: str, in_process: Callable[[], tuple[ParityRecord, bool]]) -> Outcome:
        """The record of one pair, the ledger entry that predicts it fails (if any), and the gate's verdict.

        `in_process()` evaluates the pair in this process and says whether the CUDA context still serves.
        """
        crash = self.ledger.held_back(case, backend)
        if crash is not None:
            return self.judge(case, backend, not_launched(case, backend, crash, self.base))
        restarted = False
        if self.evaluator is not None:
            rec = self.evaluator.evaluate(case, backend, self.base)
            restarted = is_crash(rec) or CONTEXT_LOST in rec.reason  # the child is gone: the next is fresh
        else:
            rec, alive = in_process()
            if not alive:  # nothing more can run in this process: the rest go to child processes
                self.evaluator, restarted = self._isolated(), True
        out = self.judge(case, backend, rec)
        if restarted:
            self.planned.clear()
        else:
            self.planned.setdefault(wrapper_of(case, backend, self.ledger.options), []).append(case)
        return out

    def judge(self, case: Case, backend: str, rec: ParityRecord) -> Outcome:
        """The gate's verdict on a record, made here or not run at all (a spent time budget)."""
        earlier = self.planned.get(wrapper_of(case, backend, self.ledger.options), [])
        rec, entry, verdict = self.ledger.verdict(case, backend, rec, earlier)
        self.verdicts.append(verdict)
        return rec, entry, verdict

    @property
    def exit_status(self) -> int:
        """The gate's: 1 when a record failed unexplained or passed where an entry predicts a failure."""
        return 1 if any(v.outcome in GATE_FAILING for v in self.verdicts) else 0

    def close(self) -> None:
        if self.evaluator is not None:
            self.evaluator.close()
