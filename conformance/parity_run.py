"""`attncheck run`: the budgeted matrix through every backend of a target, against the oracle.

Each (case, backend) becomes one ParityRecord, written to results.jsonl the moment it exists.
The oracle's truth is computed once per case and shared by all backends. A library that raises
is an error, never a skip; a forced backend the library declines with its documented refusal is
counted as refused, with the library's message.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
import uuid
import threading
from dataclasses import dataclass, field
from typing import Callable, Optional

from conformance.gate import Ledger, LedgerVerdict
from conformance.evaluate import CONTEXT_LOST_IN_PROCESS, CaseTruth, TruthCache, evaluate_with_control, make_adapter
from conformance.isolate import IsolatedEvaluator
from conformance.pairs import Pairs
from conformance.markers import arch_here
from kernels import get_target, skips
from kernels._env import warm_mkl_vml
from kernels.errors import KernelUnavailable
from kernels.protocol import AttentionKernel, Stage
from kernels.standin_label import standin_from_versions
from reports.parity import render_markdown
from reports.records import ParityRecord, RunFooter, RunHeader, StageRecord, count_key, read_jsonl
from reports.sink import JsonlSink
from scenarios import matrix
from scenarios.case import Case
from scenarios.errors import InvalidValue
from scenarios.tensors import Inputs, to_device, validate_inputs

HARNESS_VERSION = "0.1.0"
RESULTS_FILE = "results.jsonl"
REPORT_FILE = "report.md"


@dataclass
class RunOutcome:
    run_id: str
    out_dir: str
    records: list[ParityRecord] = field(default_factory=list)
    verdicts: list[LedgerVerdict] = field(default_factory=list)  # the gate's, one per record
    exit_status: int = 0

    @property
    def results_path(self) -> str:
        return os.path.join(self.out_dir, RESULTS_FILE)


def matrix_of(target_name: str, budget: str, seed: int, device: str = "cpu") -> list[Case]:
    """The target's own matrix (`target.matrix`) where it has one, else scenarios.matrix; `device` decides
    the long cases (the CUDA-only long contexts: scenarios/matrix.py)."""
    own = getattr(get_target(target_name), "matrix", None)
    return own(budget, seed, device=device) if callable(own) else matrix.build(budget, seed, device)


def run_parity(
    target_name: str,
    device: str,
    budget: str,
    out_dir: str,
    seed: int = 0,
    backends: Optional[list[str]] = None,
    argv: Optional[list[str]] = None,
    cases: Optional[list[Case]] = None,
    inputs: Optional[Inputs] = None,
    time_budget_s: Optional[float] = None,
    adapter_options: Optional[dict] = None,
    progress: Callable[[ParityRecord, int, int], None] = lambda r, i, n: None,
    on_stage: Callable[[StageRecord], None] = lambda s: None,
    isolate: bool = False,
    case_timeout_s: Optional[float] = None,
    on_pair: Callable[[Case, str], None] = lambda c, b: None,
    on_ready: Callable[[], None] = lambda: None,
    on_wait: Callable[[str], None] = lambda what: None,
) -> RunOutcome:
    """Run the matrix (or the given cases, or one captured batch); usage errors raise before writing.

    `inputs`, when given, is a captured batch replayed as is: its page table is validated first.
    The matrix is the target's own (`target.matrix`) where it has one, else scenarios.matrix.
    Backends run in the target's stages (`target.stages`, e.g. FlashInfer's JIT prebuild per
    backend family), the next stage's preparation overlapping the current stage's cases. Once
    `time_budget_s` has passed, every (case, backend) not yet run is recorded as a skip saying so.
    `adapter_options` go to every `target.make` (FlashInfer: AdapterOptions fields, e.g. mask_form).
    A case a `crash` ledger entry predicts is not launched (a skip naming the entry). `isolate`
    evaluates every case in a child process (conformance/isolate.py): one that kills it is an
    error naming the crash, and the run goes on in a fresh child; with `case_timeout_s`, a child that has not
    answered one case by then (a hung kernel) is killed and the case is such an error. `on_pair(case, backend)`
    is called as each (case, backend) starts, `progress(record, done, total)` as it ends; `on_ready()` once every
    usage check has passed, before anything is written; `on_wait(what)` as the run starts waiting on a stage's
    preparation.
    """
    warm_mkl_vml()  # oneMKL picks its VML kernels in this one thread before any attention is computed
    if time_budget_s is not None and not time_budget_s > 0:
        raise InvalidValue(
            "--time-budget",
            time_budget_s,
            "a positive number of seconds",
            "pass --time-budget 540, or leave it out for no limit",
        )
    if inputs is not None:
        if isolate:
            raise InvalidValue(
                "--isolate",
                True,
                "matrix or --case runs (the child makes its own inputs)",
                "drop --isolate to replay a captured batch, or pass its case with --case",
            )
        validate_inputs(inputs)
        cases = [inputs.case]
    target = get_target(target_name)
    if cases is None:
        cases = matrix_of(target_name, budget, seed, device)
    avail = target.available(device)
    if not avail.ok:
        raise KernelUnavailable(target_name, avail.reason)
    offered = target.backends(device)
    chosen = list(backends) if backends else list(offered)
    # usage errors: before any file
    adapters = {b: make_adapter(target, b, device, adapter_options or {}) for b in chosen}
    staged = getattr(target, "stages", None)
    stages = staged(cases, chosen, device, adapter_options or {}) if callable(staged) else [Stage("all", tuple(chosen))]
    on_ready()
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, RESULTS_FILE)
    if os.path.exists(path):
        os.replace(path, path + ".previous")
    outcome = RunOutcome(run_id=run_id, out_dir=out_dir)
    started = time.perf_counter()
    versions = target.versions()
    arch = arch_here(device)
    ledger = Ledger(target_name, versions.get(target_name), arch, adapter_options)
    truths = TruthCache()
    # A stand-in's records are labelled, counted apart and never read as conformance (kernels/standins/).
    base = dict(run_id=run_id, target=target_name, device=device, seed=seed, standin=standin_from_versions(versions))
    total = len(cases) * len(adapters)
    pairs = Pairs(
        ledger, base, lambda: IsolatedEvaluator(target_name, device, seed, adapter_options, case_timeout_s), isolate
    )
    outcome.verdicts = pairs.verdicts
    prepared: dict[int, _Background] = {}

    def start_prepare(i: int) -> None:
        if i < len(stages) and stages[i].prepare is not None and i not in prepared:
            prepared[i] = _Background(stages[i].prepare)  # type: ignore[arg-type]

    def remaining() -> Optional[float]:
        return None if time_budget_s is None else max(0.0, time_budget_s - (time.perf_counter() - started))

    def out_of_time() -> bool:
        return time_budget_s is not None and time.perf_counter() - started > time_budget_s

    def emit(rec: ParityRecord) -> None:
        sink.write(rec)
        outcome.records.append(rec)
        progress(rec, len(outcome.records), total)

    with JsonlSink(path) as sink:
        sink.write(
            RunHeader(
                run_id=run_id,
                target=target_name,
                device=device,
                budget=budget,
                seed=seed,
                versions=versions,
                argv=list(argv or []),
                standin=base["standin"],
                started=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                harness_version=HARNESS_VERSION,
                arch=arch,
            )
        )
        try:
            start_prepare(0)
            for si, stage in enumerate(stages):
                t_wait = time.perf_counter()
                if si in prepared:
                    on_wait(f"stage {stage.name}'s preparation")  # a JIT build can take minutes before any case
                summary = prepared[si].result(remaining()) if si in prepared else None
                if len(stages) > 1 or summary is not None:
                    st = StageRecord(
                        run_id=run_id,
                        stage=stage.name,
                        backends=list(stage.backends),
                        prepare=summary,
                        waited_s=time.perf_counter() - t_wait,
                    )
                    sink.write(st)
                    on_stage(st)
                start_prepare(si + 1)  # compiles while this stage runs
                for case in cases:
                    if out_of_time():
                        for b in stage.backends:
                            emit(pairs.judge(case, b, _not_run(case, b, time_budget_s, base))[0])
                        continue
                    here = _InProcess(case, truths, seed, device, inputs, adapters, base)
                    for b in stage.backends:
                        on_pair(case, b)
                        emit(pairs.evaluate(case, b, lambda b=b, here=here: here.evaluate(b))[0])
        finally:
            pairs.close()
            counts: dict[str, int] = {}
            for r in outcome.records:
                counts[count_key(r)] = counts.get(count_key(r), 0) + 1
            outcome.exit_status = pairs.exit_status
            finished = len(outcome.records) == total
            if finished:
                sink.write(
                    RunFooter(
                        run_id=run_id,
                        counts=counts,
                        elapsed_s=time.perf_counter() - started,
                        exit_status=outcome.exit_status,
                    )
                )
            sink.close()
            with open(os.path.join(out_dir, REPORT_FILE), "w", encoding="utf-8") as f:
                f.write(render_markdown(read_jsonl(path)))
    return outcome


class _InProcess:
    """A case evaluated in this process: its inputs and truth made once, on the first backend that runs here."""

    def __init__(
        self,
        case: Case,
        truths: TruthCache,
        seed: int,
        device: str,
        inputs: Optional[Inputs],
        adapters: dict[str, AttentionKernel],
        base: dict,
    ) -> None:
        self.case, self.truths, self.seed, self.device, self.inputs = case, truths, seed, device, inputs
        self.adapters, self.base = adapters, base
        self._known: Optional[CaseTruth] = None

    def evaluate(self, backend: str) -> tuple[ParityRecord, bool]:
        if self._known is None:
            given = to_device(self.inputs, self.device) if self.inputs is not None else None
            self._known = self.truths.of(self.case, self.seed, self.device, given)
            validate_inputs(self._known.inputs)
        return evaluate_with_control(
            self.adapters[backend],
            self.case,
            self._known.inputs,
            self._known.truth,
            self.base,
            self.device,
            CONTEXT_LOST_IN_PROCESS,
        )


class _Background:
    """A stage's prepare() on a daemon thread: an interrupted run exits without waiting for a build."""

    def __init__(self, fn: Callable[[], dict]) -> None:
        self._done = threading.Event()
        self._value: Optional[dict] = None
        self._started = time.perf_counter()

        def work() -> None:
            try:
                self._value = fn()
            except Exception as e:  # prepare() reports its own failures; this is the backstop
                self._value = {"requested": [], "seconds": 0.0, "error": f"{type(e).__name__}: {e}"}
            self._done.set()

        threading.Thread(target=work, name="attncheck-prepare", daemon=True).start()

    def result(self, timeout: Optional[float]) -> dict:
        """prepare()'s summary, or one saying it was still running when `timeout` (the budget) ran out."""
        if self._done.wait(timeout):
            return self._value or {}
        return {
            "requested": [],
            "seconds": time.perf_counter() - self._started,
            "error": "still preparing when the run's time budget was spent",
        }


def _not_run(case: Case, backend: str, budget_s: Optional[float], base: dict) -> ParityRecord:
    return ParityRecord(
        backend=backend,
        case_id=case.id,
        case=case.to_json(),
        status="skip",
        reason=skips.detail(
            skips.TIME_BUDGET,
            f"--time-budget {budget_s:g} s spent before this case; rerun with a larger budget or fewer backends",
        ),
        features=list(case.features),
        **base,
    )
