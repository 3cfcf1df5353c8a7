"""The per-process state of a pytest parity grid: run id, records file, ledger, isolation.

One GridRun lives for a pytest process (each xdist worker has its own): it decides how a
(case, backend) is evaluated (not launched when a crash entry holds it back; in a child process
under `--isolate`, or from the first dead CUDA context on; else in-process, by the test) and writes
each record, so a gate run leaves the same results files as `attncheck run` (`--results DIR`:
results-<worker>.jsonl, one run per process, merged by `attncheck report`).
"""

from __future__ import annotations

import datetime as _dt
import os
import uuid
from typing import Any, Callable, Optional

from conformance.gate import Ledger, LedgerVerdict
from conformance.isolate import IsolatedEvaluator
from conformance.known_failures import KnownFailure
from conformance.pairs import Pairs
from conformance.markers import arch_here
from conformance.parity_run import HARNESS_VERSION
from kernels import get_target
from kernels.standin_label import standin_from_versions
from reports.records import ParityRecord, RunFooter, RunHeader, count_key
from reports.sink import JsonlSink
from scenarios.case import Case


class GridRun:
    def __init__(
        self,
        target: str,
        device: str,
        budget: str,
        seed: int,
        worker: str,
        isolate: bool = False,
        case_timeout_s: Optional[float] = None,
        results_dir: Optional[str] = None,
        argv: Optional[list[str]] = None,
    ) -> None:
        self.target, self.device, self.budget, self.seed, self.worker = target, device, budget, seed, worker
        self.case_timeout_s = case_timeout_s
        self.versions = get_target(target).versions()
        self.version = self.versions.get(target)
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ-")
        self.run_id = f"{stamp}{uuid.uuid4().hex[:6]}-{worker}"
        self.base: dict[str, Any] = dict(
            run_id=self.run_id, target=target, device=device, seed=seed, standin=standin_from_versions(self.versions)
        )
        self.ledger = Ledger(target, self.version, arch_here(device))
        self.pairs = Pairs(self.ledger, self.base, self._isolated, isolate)
        self.records: list[ParityRecord] = []
        self._argv = list(argv or [])
        self._path = os.path.join(results_dir, f"results-{worker}.jsonl") if results_dir else None
        self._sink: Optional[JsonlSink] = None

    def _isolated(self) -> IsolatedEvaluator:
        return IsolatedEvaluator(self.target, self.device, self.seed, timeout_s=self.case_timeout_s)

    def evaluate(
        self, case: Case, backend: str, in_process: Callable[[], tuple[ParityRecord, bool]]
    ) -> tuple[ParityRecord, Optional[KnownFailure], LedgerVerdict]:
        """The record of one (case, backend), written; the ledger entry that predicts it fails (if any), and
        the gate's verdict (conformance.gate.Ledger, as `attncheck run` judges it).

        `in_process` evaluates it in this process, as the parity run does (conformance.evaluate.
        evaluate_with_control: the fresh control of a failing record, the CUDA context probed after an
        error), returning the record and whether the context still serves.
        """
        rec, entry, verdict = self.pairs.evaluate(case, backend, in_process)
        self._write(rec)
        return rec, entry, verdict

    def _write(self, rec: ParityRecord) -> None:
        self.records.append(rec)
        if self._path is None:
            return
        if self._sink is None:
            self._sink = JsonlSink(self._path)
            self._sink.write(
                RunHeader(
                    run_id=self.run_id,
                    target=self.target,
                    device=self.device,
                    budget=self.budget,
                    seed=self.seed,
                    versions=self.versions,
                    argv=self._argv,
                    started=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                    harness_version=HARNESS_VERSION,
                    standin=self.base["standin"],
                    arch=arch_here(self.device),
                )
            )
        self._sink.write(rec)

    @property
    def verdicts(self) -> list[LedgerVerdict]:
        return self.pairs.verdicts

    def close(self, elapsed_s: float) -> None:
        self.pairs.close()
        if self._sink is not None:
            counts: dict[str, int] = {}
            for r in self.records:
                counts[count_key(r)] = counts.get(count_key(r), 0) + 1
            self._sink.write(
                RunFooter(run_id=self.run_id, counts=counts, elapsed_s=elapsed_s, exit_status=self.pairs.exit_status)
            )
            self._sink.close()
