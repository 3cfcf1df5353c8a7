"""Run the scenario machines for a target and keep what a failure needs to replay.

    explore(target, budget="ci", out=DIR, device="cpu", seed=0) -> Summary   (summary.exit_status)
    attncheck explore --target torch|standin|faults|flashinfer|lifecycle|lifecycle-clean --out DIR
                      [--budget ci|runner]
                      [--device cuda] [--seed N] [--examples N] [--steps N] [--subject NAME ...]
                      [--no-verify]
    (or python -m conformance.explore.loop ..., as the subjects' child processes are started)

Per subject (one library configuration): a warm-up call outside Hypothesis (first-use costs, a JIT,
never land inside an example), the directed seed sequences (conformance/explore/directed.py), then the
exploration in rounds (`explore_rounds`): each round's distinct failures (one per signature,
conformance/explore/defects.py) are shrunk, written with their scripts and known from then on, until
the budget's examples are spent; a hunt (the fault targets) ends at its first new defect.
Writes:
  DIR/hypothesis-db/<subject>/round-N/  Hypothesis's example database; a rerun with the same DIR
                                replays each saved (shrunk) failure before exploring
  DIR/failures/repro-*.py, .pt  one standalone reproduction per failure (conformance/explore/repro.py),
                                each run in a fresh process once written (unless --no-verify)
  DIR/scenario-summary.json     per subject: examples, steps, runs; directed results; every distinct
                                defect with its invariant, shrunk sequence, script and verdict
Targets (conformance/explore/subjects.py): torch, faults (each fault must be caught, by a directed
sequence and, on its own, by the exploration), standin, flashinfer (the installed library on a GPU),
lifecycle (faults injected into upstream FlashInfer's wrappers: the CPU model, or the library on a GPU)
and lifecycle-clean (the same subjects without a fault).
Exit status: 0 when everything held (a fault target: when every fault was caught), 1 otherwise
(a subject that ran out of memory is listed "incomplete": not a defect, but not held either),
2 on bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

import torch
from hypothesis import HealthCheck, Phase, Verbosity, seed as hypothesis_seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.stateful import get_state_machine_test
from hypothesis.statistics import collector

from kernels._env import device_type, out_of_memory, warm_mkl_vml
from conformance.collector import skip_final_collection
from conformance.explore import machines
from conformance.explore.constants import pinned_constants
from conformance.explore.defects import Found, signature_of
from conformance.explore.directed import directed_for, run_directed
from conformance.explore.pristine import PristineControl
from conformance.explore.machines import (
    ContextLost,
    EnvironmentFailure,
    ScenarioFailure,
    ScenarioMachine,
    Stats,
    Subject,
    Violation,
    machine_for,
)
from conformance.explore.repro import slug, verify_script, write_repro
from conformance.explore.subjects import FAULT_TARGETS, HUNT_TARGETS, TARGETS, subjects_for
from conformance.progress import HEARTBEAT_S, Heartbeat, Tally
from conformance.usage import Parser, checked_device, heartbeat_seconds, usable_out_dir
from scenarios.errors import InvalidValue
from scenarios.tensors import materialize

if sys.version_info >= (3, 11):
    from builtins import BaseExceptionGroup
else:  # hypothesis depends on the backport there
    from exceptiongroup import BaseExceptionGroup

SUMMARY_NAME = "scenario-summary.json"


@dataclass(frozen=True)
class MachineBudget:
    """How hard to explore: examples and steps per example for a subject that must hold, and for
    hunting a subject expected to fail (the fault-injected models). `shrink`: whether a failure is
    shrunk before it is reported (a test asking only whether a failure is found, and whether its
    calls reproduce, leaves it out: shrinking is most of a hunt's time)."""

    name: str
    examples: int
    steps: int
    hunt: int
    hunt_steps: int
    shrink: bool = True


BUDGETS: dict[str, MachineBudget] = {
    # CPU CI: the scenario test set stays well under 40 s on two cores. Hunting uses short examples
    # (600: a graph-mode defect needs two plans on one wrapper, which 300 missed on some seeds):
    # each seed defect shows within three calls, and a short failing example shrinks in a fraction
    # of the calls a long one needs (shrinking, not finding, is what a hunt spends its time on).
    "ci": MachineBudget("ci", examples=12, steps=10, hunt=600, hunt_steps=4),
    # A hardware runner (or a nightly CPU job): longer sequences, many more of them.
    "runner": MachineBudget("runner", examples=300, steps=40, hunt=3000, hunt_steps=12),
}


# Rounds of one subject's exploration at most: each round ends at the failures it found (every distinct
# one shrunk), which are known from then on; the next round spends what is left of the budget.
MAX_ROUNDS = 12
# How often a GPU run's parent looks for a subject process that ended (explore_in_children).
CHILD_POLL_S = 0.2


def settings_for(
    budget: MachineBudget,
    database: Optional[DirectoryBasedExampleDatabase],
    *,
    hunt: bool = False,
    examples: Optional[int] = None,
) -> settings:
    """No deadline (first calls and a JIT are slow, and a deadline would make that a failure);
    every distinct failure (one per signature key: conformance/explore/defects.py) shrunk (unless
    the budget says not) and reported, except in a hunt, which ends at its first defect anyway: one
    failure, and no generating on past it to look for others; quiet (a failure carries the shrunk
    sequence itself). `examples`: what is left of the budget's count."""
    return settings(
        max_examples=examples if examples is not None else (budget.hunt if hunt else budget.examples),
        stateful_step_count=budget.hunt_steps if hunt else budget.steps,
        deadline=None,
        database=database,
        derandomize=False,
        report_multiple_bugs=not hunt,
        print_blob=False,
        verbosity=Verbosity.quiet,
        phases=(Phase.explicit, Phase.reuse, Phase.generate) + ((Phase.shrink,) if budget.shrink else ()),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )


# ---- running one subject -------------------------------------------------------------------------------
@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """One intra-op thread: the machines' tensors are tiny, and under pytest-xdist a second thread per
    worker only oversubscribes the cores (a 100x slowdown of small matmuls was seen on two cores)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def warm_up(machine: type[ScenarioMachine]) -> None:
    """One plain plan and run per layout, outside Hypothesis: first-use costs never meet an example."""
    s, prof = machine.subject, machine.profile
    adapter = s.make(s.backend)
    for layout in prof.layouts:
        case = prof.probe(layout)
        if adapter.supports(case).ok:
            inputs = materialize(case, 0, s.device)
            adapter.plan(inputs)
            adapter.run(inputs)


@dataclass
class SubjectResult:
    subject: Subject
    directed: list[dict[str, Any]] = field(default_factory=list)
    failure: Optional[dict[str, Any]] = None  # the exploration's first shrunk failure, as recorded
    exception: Optional[ScenarioFailure] = None  # the same, as raised (steps and violations)
    defects: list[Found] = field(default_factory=list)  # every distinct defect found, in order
    ledger_hits: dict[str, int] = field(default_factory=dict)  # lifecycle ledger entries met, by id
    rounds: int = 0
    stats: Stats = field(default_factory=Stats)
    seconds: float = 0.0
    # The subject ended because the machine ran out of memory (machines.EnvironmentFailure): the phase,
    # the error with the memory figures, and the calls so far. Not a defect; the run is incomplete.
    environment: Optional[dict[str, Any]] = None
    # The control from untouched library state over this subject (pristine.PristineControl.account): asked,
    # answered, the first errors, and why there was none ("unavailable").
    pristine: dict[str, Any] = field(default_factory=dict)

    @property
    def directed_failures(self) -> list[dict[str, Any]]:
        return [d for d in self.directed if d["status"] == "failed"]

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject.name,
            "examples": self.stats.examples,
            "steps": self.stats.steps,
            "runs": self.stats.runs,
            "checked": dict(sorted(self.stats.checked.items())),
            "digest": self.stats.digest,
            "seconds": round(self.seconds, 2),
            "rounds": self.rounds,
            "routing": self.subject.unmodelled or "checked",
            "known_met": self.stats.known,
            "ledger_hits": self.ledger_hits,
            "directed": self.directed,
            "failure": self.failure,
            "defects": [d.to_json() for d in self.defects],
            "environment": self.environment,
            "pristine_control": self.pristine,
        }


def totals_of(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Examples, steps, runs and the checked runs by kind (machines.checked_kinds) over subject records."""
    totals: dict[str, Any] = {k: sum(m[k] or 0 for m in records) for k in ("examples", "steps", "runs")}
    checked: dict[str, int] = {}
    for m in records:
        for kind, n in (m.get("checked") or {}).items():
            checked[kind] = checked.get(kind, 0) + n
    totals["checked"] = dict(sorted(checked.items()))
    return totals


def fault_escaped(target: str, failure: Optional[dict[str, Any]], directed: list[dict[str, Any]]) -> bool:
    """A fault subject the exploration let through: no failure found, or for the seed faults also no directed
    sequence that failed (in-process results and a child's merged JSON alike)."""
    return failure is None or (target == "faults" and not any(d["status"] == "failed" for d in directed))


def subject_failed(failure: Optional[dict[str, Any]], directed: list[dict[str, Any]]) -> bool:
    """A subject failed: its exploration found something, or a directed sequence failed (in-process
    results and a child's merged JSON alike)."""
    return failure is not None or any(d["status"] == "failed" for d in directed)


def _record(failure: ScenarioFailure, subject: Subject, out: Path, phase: str, verify: bool = False) -> dict[str, Any]:
    """The failure as the summary keeps it, with its script; `verify`: the script run in a fresh process
    right away, and whether it reproduced kept beside it (a script that does not is never called one)."""
    script = write_repro(failure, subject, out / "failures", phase)
    record = {
        "phase": phase,
        "invariant": failure.invariant,
        "also": [v.invariant for v in failure.violations[1:]],
        "details": {v.invariant: v.detail for v in failure.violations},
        "sequence": [s.line() for s in failure.steps],
        "repro": str(script),
    }
    if verify:
        record["reproduces"], record["replay"] = verify_script(script, subject.device)
    return record


def explore_subject(
    subject: Subject,
    budget: MachineBudget,
    out: Path,
    seed: int = 0,
    *,
    hunt: bool = False,
    on_directed: Callable[[SubjectResult], None] = lambda r: None,
    verify: bool = False,
    pristine: Optional[PristineControl] = None,
) -> SubjectResult:
    """Directed sequences, then the exploration; `hunt` gives a subject expected to fail the larger budget
    and ends it at its first new defect, where a subject that must hold explores past every defect it
    finds until its budget is spent (`explore_rounds`). `on_directed` sees the result once the directed
    sequences are done (a child saves them there, so a process killed in the exploration still reports
    them). `verify`: every script written is run in a fresh process at once (`_record`). `pristine`: the
    control from untouched library state (explore() starts one before its first subject); without one, a
    server is forked here, inside the subject's context, before its first call.

    A lost device context (machines.ContextLost) ends the subject where it happened: its calls so far
    are the failure, unshrunk, with their script (verified in a fresh process, whose context is its own);
    nothing more can run in this process. Running out of
    memory (machines.EnvironmentFailure) ends it too, as `result.environment`: no defect, no script.
    """
    t0 = time.perf_counter()
    result = SubjectResult(subject)
    machine, phase = None, "warm-up"
    with contextlib.ExitStack() as stack:
        stack.enter_context(single_thread())
        stack.enter_context(pinned_constants())
        if subject.context:
            stack.enter_context(subject.context())
        if pristine is None:
            pristine = stack.enter_context(
                PristineControl(lambda name: contextlib.nullcontext((subject.make, subject.device)), subject.device)
            )
        before = pristine.account()
        try:
            machine = machine_for(subject)
            machine.pristine = pristine
            try:
                warm_up(machine)
            except Exception as e:  # noqa: BLE001 - the library failed on its plainest case: that is the finding
                if out_of_memory(e):
                    raise EnvironmentFailure.out_of_memory(subject.name, [], "the warm-up", e, subject.device) from None
                result.failure = {
                    "phase": "warm-up",
                    "invariant": "no_unexpected_error",
                    "also": [],
                    "details": {"no_unexpected_error": f"{type(e).__name__}: {e}"[:2000]},
                    "sequence": [
                        f"warm-up: plan and run of {machine.profile.probe(x)!r}" for x in machine.profile.layouts
                    ],
                    "repro": None,
                }
                result.seconds = time.perf_counter() - t0
                return result
            phase = "directed"
            explicit = subject.directed_backend or (subject.explicit[-1] if subject.explicit else None)
            for d in directed_for(machine.profile, explicit):
                status, failure = run_directed(machine, d)
                entry: dict[str, Any] = {"name": d.name, "status": status}
                if failure is not None:
                    entry["failure"] = _record(failure, subject, out, f"directed-{d.name}", verify)
                result.directed.append(entry)
            on_directed(result)
            machine.stats = Stats()
            machine.book.ledger_hits.clear()
            phase = "explore"
            explore_rounds(machine, result, budget, out, seed, hunt=hunt, verify=verify)
        except ContextLost as lost:
            result.failure = _record(lost.failure, subject, out, f"{phase}-context-lost", verify)
            result.failure["context_lost"] = True
            result.exception = lost.failure
        except EnvironmentFailure as env:
            result.environment = {"phase": phase, **env.to_json()}
        after = pristine.account()
        result.pristine = {
            "asked": after["asked"] - before["asked"],
            "answered": after["answered"] - before["answered"],
            "errors": after["errors"][len(before["errors"]) :],
            "unavailable": after["unavailable"],
        }
    if machine is not None:
        result.stats = machine.stats
        result.ledger_hits = dict(machine.book.ledger_hits)
    result.seconds = time.perf_counter() - t0
    return result


def _failures_in(e: BaseException) -> list[ScenarioFailure]:
    """The ScenarioFailures Hypothesis raised: one, or a group of them (one per signature key)."""
    if isinstance(e, ScenarioFailure):
        return [e]
    if isinstance(e, BaseExceptionGroup):
        return [f for x in e.exceptions for f in _failures_in(x)]
    return []


def explore_rounds(
    machine: type[ScenarioMachine],
    result: SubjectResult,
    budget: MachineBudget,
    out: Path,
    seed: int,
    *,
    hunt: bool = False,
    verify: bool = False,
) -> None:
    """Explore in rounds until the budget's examples are spent. A round ends at the failures it found,
    each shrunk; each new one (by signature: conformance/explore/defects.py) is recorded with its script
    and known from then on, so the next round looks for others. A hunt ends at its first new defect.
    A Flaky outcome (the failure did not happen again in this process) is replayed in a fresh process."""
    subject, book = machine.subject, machine.book
    total = budget.hunt if hunt else budget.examples
    t0 = time.perf_counter()
    for rnd in range(1, MAX_ROUNDS + 1):
        left = total - machine.stats.generated
        if left < 1:
            break
        result.rounds = rnd
        machine.first_raised = None
        db_dir = out / "hypothesis-db" / subject.name / f"round-{rnd}"
        db_dir.mkdir(parents=True, exist_ok=True)
        db = DirectoryBasedExampleDatabase(str(db_dir))
        round_seed = seed + 1000 * (rnd - 1)
        test = get_state_machine_test(
            hypothesis_seed(round_seed)(machine),
            settings=settings_for(budget, db, hunt=hunt, examples=left),
        )
        phases: list[Any] = []
        try:
            with collector.with_value(phases.append):  # Hypothesis's statistics: what the round generated
                test()
            return  # the round spent what was left and met nothing new
        except Flaky as e:  # did not happen again on the same calls in this process
            failures, flaky = _failures_in(e), e
        except (ScenarioFailure, BaseExceptionGroup) as e:
            failures, flaky = _failures_in(e), None
            if not failures:
                raise
        finally:
            machine.stats.generated += sum(_generated(x) for x in phases)
        if hunt and flaky is None:
            failures = _first_saved_failure(machine, budget, db, round_seed) or failures
        if flaky is not None:
            found = _replay_flaky(machine, flaky, out, rnd, time.perf_counter() - t0, verify=True)
            if found is None:
                return  # nothing to go on from: the state between examples is not trustworthy
            failures = []
            if book.add(found):
                _note(result, found)
        for f in sorted(failures, key=lambda f: len(f.steps)):
            assert f.signature is not None
            rec = _record(f, subject, out, f"explore-{f.signature.id}", verify)
            found = Found(f.signature, rec, rnd, time.perf_counter() - t0)
            if book.add(found):
                _note(result, found, f)
        if hunt and book.found:
            return


def _first_saved_failure(
    machine: type[ScenarioMachine], budget: MachineBudget, db: DirectoryBasedExampleDatabase, seed: int
) -> list[ScenarioFailure]:
    """The failure a replay of the round's database gives first (what a rerun with the same out directory
    reports). A hunt reports one bug, so Hypothesis stops generating at it; but its shrinker can save
    failures of other keys on the way, and a replay tries the saved ones in its own order, not the order
    the hunt chose its report by. Reporting the first replayed one keeps the run and its rerun alike."""
    test = get_state_machine_test(
        hypothesis_seed(seed)(machine),
        settings=settings(settings_for(budget, db, hunt=True), phases=(Phase.reuse,)),
    )
    try:
        test()
    except (ScenarioFailure, BaseExceptionGroup) as e:
        return _failures_in(e)
    except Flaky:
        pass  # the replay did not fail again here: the hunt's own report stands
    return []


def _generated(statistics: Any) -> int:
    """The examples Hypothesis's generate phase ran to the end or to a failure (what max_examples counts)."""
    cases = statistics.get("generate-phase", {}).get("test-cases", [])
    return sum(1 for c in cases if c.get("status") in ("valid", "interesting"))


def _note(result: SubjectResult, found: Found, raised: Optional[ScenarioFailure] = None) -> None:
    result.defects.append(found)
    if result.failure is None:
        result.failure, result.exception = found.failure, raised


def _replay_flaky(
    machine: type[ScenarioMachine], e: BaseException, out: Path, rnd: int, seconds: float, *, verify: bool
) -> Optional[Found]:
    """A Flaky outcome as a finding: the first failure raised this round (else the latest example's calls)
    written as a script and run in a fresh process; whether it reproduced there is the verdict."""
    raised = machine.first_raised
    if raised is None:
        steps = machine.last_steps
        if not steps:
            return None
        raised = ScenarioFailure(
            machine.subject.name,
            steps,
            [Violation("no_unexpected_error", f"Hypothesis: {type(e).__name__}: {' '.join(str(e).split())[:300]}")],
        )
        raised.signature = None
    rec = _record(raised, machine.subject, out, "explore-flaky", verify)
    rec["flaky"] = f"{type(e).__name__}: {' '.join(str(e).split())[:500]}"
    rec["shrunk"] = False
    sig = raised.signature or signature_of(
        raised.steps[-1].case, raised.steps[-1].backend, machine.graph, [], "flaky", rec["flaky"]
    )
    return Found(sig, rec, rnd, seconds)


# ---- a whole target ------------------------------------------------------------------------------------
@dataclass
class Summary:
    target: str
    budget: str
    seed: int
    device: str
    results: list[SubjectResult]

    @property
    def expects_failures(self) -> bool:
        return self.target in FAULT_TARGETS

    def escaped(self) -> list[str]:
        """Fault subjects the exploration let through (the seed faults: or every directed sequence)."""
        return [r.subject.name for r in self.results if fault_escaped(self.target, r.failure, r.directed)]

    def failed(self) -> list[str]:
        return [r.subject.name for r in self.results if subject_failed(r.failure, r.directed)]

    def incomplete(self) -> list[str]:
        """Subjects their environment ended (out of memory) before their budget was spent."""
        return [r.subject.name for r in self.results if r.environment is not None]

    @property
    def exit_status(self) -> int:
        return int(bool(self.escaped() if self.expects_failures else self.failed()) or bool(self.incomplete()))

    def to_json(self) -> dict[str, Any]:
        totals = totals_of([r.to_json() for r in self.results])
        key = "escaped" if self.expects_failures else "failed"
        return {
            "target": self.target,
            "budget": self.budget,
            "seed": self.seed,
            "device": self.device,
            "totals": totals,
            key: self.escaped() if self.expects_failures else self.failed(),
            "incomplete": self.incomplete(),
            "subjects": [r.to_json() for r in self.results],
        }


@contextlib.contextmanager
def hypothesis_home(out: Path) -> Iterator[None]:
    """Hypothesis keeps its files (a cache of the constants it reads from loaded source) under its home
    directory, `.hypothesis/` of the working directory by default: an exploration keeps them in its --out."""
    from hypothesis import configuration

    before = getattr(configuration, "__hypothesis_home_directory", None)  # None: the default again
    configuration.set_hypothesis_home_dir(out / ".hypothesis")
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(before)


def explore(
    target: str,
    *,
    budget: str = "ci",
    out: str | Path,
    device: str = "cpu",
    seed: int = 0,
    subjects: Optional[Sequence[str]] = None,
    examples: Optional[int] = None,
    steps: Optional[int] = None,
    on_result: Callable[[SubjectResult], None] = lambda r: None,
    summary_name: str = SUMMARY_NAME,
    partial_name: Optional[str] = None,
    verify: bool = True,
    on_start: Callable[[Subject, int], None] = lambda s, n: None,
) -> Summary:
    """Run every subject of `target` (or those named in `subjects`) and write DIR's files.

    `examples` and `steps` override the budget's (a hardware runner sizes them to its time); the
    summary is rewritten after every subject, so an interrupted run keeps the subjects it finished;
    with `partial_name`, each subject's directed results are written there as soon as they are known.
    `on_start(subject, number of subjects)` is called as each subject starts, `on_result` as it ends.
    """
    if budget not in BUDGETS:
        raise ValueError(f"budget={budget!r}: expected one of {', '.join(BUDGETS)}")
    warm_mkl_vml()  # oneMKL picks its VML kernels in this one thread before any attention is computed
    b = _budget(budget, examples, steps)
    # Forked before any subject is made (on CUDA: before the context): its controls start from untouched state.
    with PristineControl(_subject_opener(target, device), device) as pristine:
        out = Path(out)
        chosen = _chosen(target, device, subjects)
        out.mkdir(parents=True, exist_ok=True)
        summary = Summary(target, budget, seed, device, [])

        def save_partial(r: SubjectResult) -> None:
            if partial_name:
                (out / partial_name).write_text(json.dumps(r.to_json(), indent=2) + "\n")

        for s in chosen:
            on_start(s, len(chosen))
            with hypothesis_home(out):
                summary.results.append(
                    explore_subject(
                        s,
                        b,
                        out,
                        seed,
                        hunt=target in HUNT_TARGETS,
                        on_directed=save_partial,
                        verify=verify,
                        pristine=pristine,
                    )
                )
            on_result(summary.results[-1])
            (out / summary_name).write_text(json.dumps(summary.to_json(), indent=2) + "\n")
        if not chosen:
            (out / summary_name).write_text(json.dumps(summary.to_json(), indent=2) + "\n")
        return summary


@contextlib.contextmanager
def _opened(subject: Subject) -> Iterator[tuple[Callable[[str], Any], str]]:
    with single_thread(), subject.context() if subject.context else contextlib.nullcontext():
        yield subject.make, subject.device


def _subject_opener(target: str, device: str) -> Callable[[str], Any]:
    """For the pristine control's children: subject `name` of `target`, made there, its context entered."""
    return lambda name: _opened(next(s for s in subjects_for(target, device) if s.name == name))


def _budget(budget: str, examples: Optional[int], steps: Optional[int]) -> MachineBudget:
    """The budget's settings with --examples / --steps put in; ValueError on a count below 1."""
    b = BUDGETS[budget]
    for name, v in (("--examples", examples), ("--steps", steps)):
        if v is not None and v < 1:
            raise InvalidValue(
                name,
                v,
                "a positive count",
                f"pass at least 1, or leave it out for the budget's ({b.examples} examples x {b.steps} steps)",
            )
    if examples is None and steps is None:
        return b
    return MachineBudget(b.name, examples or b.examples, steps or b.steps, examples or b.hunt, steps or b.hunt_steps)


def _chosen(target: str, device: str, subjects: Optional[Sequence[str]]) -> list[Subject]:
    """The subjects of `target` named in `subjects` (all when none); ValueError on an unknown name."""
    every = subjects_for(target, device)
    unknown = sorted(set(subjects or ()) - {s.name for s in every})
    if unknown:
        raise InvalidValue(
            "--subject",
            unknown[0],
            f"a subject of {target} here: {', '.join(s.name for s in every)}",
            "pass a listed subject, or leave --subject out for them all",
        )
    return [s for s in every if not subjects or s.name in subjects]


def print_result(r: SubjectResult) -> None:
    held = "held" if r.failure is None else f"FAILED: {len(r.defects) or 1} distinct defect(s)"
    if r.environment is not None:
        held += f"; ENDED BY ITS ENVIRONMENT in the {r.environment['phase']}, not a finding"
    print(
        f"{r.subject.name}: {r.stats.examples} examples in {r.rounds} round(s), {r.stats.steps} steps, "
        f"{r.stats.runs} runs, {r.stats.known} known met; {held}; directed: {len(r.directed_failures)} of "
        f"{len(r.directed)} failed ({r.seconds:.1f} s)",
        flush=True,
    )
    if r.stats.checked:
        print("  checked runs: " + ", ".join(f"{k} {n}" for k, n in sorted(r.stats.checked.items())), flush=True)
    for entry, n in sorted(r.ledger_hits.items()):
        print(f"  known (ledger): {entry}, met {n} time(s)")
    p = r.pristine
    if p.get("asked"):
        why = f"; not answered: {p['errors'][0]}" if p["errors"] else ""
        print(f"  pristine control: asked {p['asked']}, answered {p['answered']}{why}", flush=True)
    if r.environment is not None:
        print(f"  environment: {r.environment['error']}")
        print("    " + "\n    ".join(r.environment["sequence"] or ["(before any call)"]), flush=True)
    found = r.defects or ([] if r.failure is None else [None])
    for d in found:
        rec = r.failure if d is None else d.failure
        assert rec is not None
        if d is not None:
            print(
                f"  defect {d.signature.id}: {rec['invariant']}, first after {d.seconds:.1f} s (round {d.round}), "
                f"met again {d.hits} time(s)"
            )
        print("    " + "\n    ".join(rec["sequence"]))
        if rec["repro"]:
            verdict = f"  [{rec['reproduces']}]" if "reproduces" in rec else ""
            print(f"    reproduce: python {rec['repro']}{verdict}", flush=True)


def _print(summary: Summary) -> None:
    if summary.expects_failures:
        esc = summary.escaped()
        print(
            f"faults caught: {len(summary.results) - len(esc)} of {len(summary.results)}"
            + (f"; escaped: {', '.join(esc)}" if esc else "")
        )


def explore_in_children(a: argparse.Namespace, names: Sequence[str], tally: Optional[Tally] = None) -> int:
    """One child process per subject (a GPU run): a subject that kills its process or its CUDA
    context costs that subject only. Up to `a.jobs` children run at once (the subjects are host-
    bound: Python, Hypothesis and the oracle), each writing its output to DIR/log-SUBJECT.txt,
    printed when it ends. Each child writes its own summary; a child that dies leaves the
    sequence it was running in its flight record, which becomes that subject's failure. The
    merged summary is DIR/scenario-summary.json, in the subjects' order, as an in-process run
    writes it."""
    import subprocess

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    running: list[tuple[str, subprocess.Popen[bytes], Any]] = []

    def files(name: str) -> tuple[Path, Path, Path]:  # a child's summary, flight record, early directed results
        return tuple(
            out / f"{kind}-{slug(name)}.{ext}"  # type: ignore[return-value]
            for kind, ext in (("summary", "json"), ("flight", "txt"), ("partial", "json"))
        )

    def finish(name: str, code: int, log: Path) -> None:
        summary, flight, partial = files(name)
        print(log.read_text(errors="replace"), end="", flush=True)
        if tally is not None:
            tally.end(f"subject {name}")
        if summary.exists():
            (results[name],) = json.loads(summary.read_text())["subjects"]
            return
        how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
        lines = flight.read_text().splitlines()[1:] if flight.exists() else []
        directed = json.loads(partial.read_text())["directed"] if partial.exists() else []
        results[name] = {
            "subject": name,
            "examples": None,
            "steps": None,
            "runs": None,
            "seconds": None,
            "directed": directed,
            "failure": {
                "phase": "explore",
                "invariant": "process_crashed",
                "also": [],
                "details": {"process_crashed": f"the process running the subject {how}"},
                "sequence": lines,
                "repro": None,
            },
        }
        print(
            f"{name}: the process {how}; the calls it was making:\n  " + "\n  ".join(lines or ["(none recorded)"]),
            flush=True,
        )

    def reap_one() -> None:  # wait for any child to end, then take in its result
        while True:
            for i, (name, proc, log) in enumerate(running):
                if proc.poll() is not None:
                    running.pop(i)
                    log.close()
                    finish(name, proc.returncode, Path(log.name))
                    return
            time.sleep(CHILD_POLL_S)

    try:
        for name in names:
            summary, flight, partial = files(name)
            for f in (summary, flight, partial):
                f.unlink(missing_ok=True)
            argv = [
                sys.executable,
                "-m",
                "conformance.explore.loop",
                "--target",
                a.target,
                "--budget",
                a.budget,
                "--out",
                a.out,
                "--device",
                a.device,
                "--seed",
                str(a.seed),
                "--subject",
                name,
                "--in-process",
                "--heartbeat",
                "0",  # the parent says which subjects run: a child's log is printed once it ends
                "--summary",
                summary.name,
                "--flight",
                str(flight),
                "--partial",
                partial.name,
            ]
            argv += [
                x for k in ("examples", "steps") if getattr(a, k) is not None for x in (f"--{k}", str(getattr(a, k)))
            ]
            argv += ["--no-verify"] if getattr(a, "no_verify", False) else []
            while len(running) >= a.jobs:
                reap_one()
            log = open(out / f"log-{slug(name)}.txt", "wb")
            running.append((name, subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT), log))
            if tally is not None:
                tally.start(f"subject {name}")
        while running:
            reap_one()
    except KeyboardInterrupt:  # the children got the signal too: what ended, and where the rest stood, is kept
        for name, proc, log in running:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
            finish(name, proc.returncode, Path(log.name))
        print(f"interrupted: {len(results)} of {len(names)} subjects in the summary", flush=True)
        _merge(a, [results[n] for n in names if n in results])
        return 130
    return _merge(a, [results[n] for n in names])


def _merge(a: argparse.Namespace, merged: list[dict[str, Any]]) -> int:
    """Write the subjects' results as one DIR/scenario-summary.json, as an in-process run writes it; 1 when
    any subject failed (a fault target: when any fault escaped) or its environment ended it (out of memory)."""
    out = Path(a.out)
    failed = [m["subject"] for m in merged if subject_failed(m["failure"], m["directed"])]
    incomplete = [m["subject"] for m in merged if m.get("environment")]
    faults = a.target in FAULT_TARGETS
    escaped = [m["subject"] for m in merged if fault_escaped(a.target, m["failure"], m["directed"])]
    verdict = {"escaped": escaped} if faults else {"failed": failed}
    totals = totals_of(merged)
    (out / SUMMARY_NAME).write_text(
        json.dumps(
            {
                "target": a.target,
                "budget": a.budget,
                "seed": a.seed,
                "device": a.device,
                "totals": totals,
                **verdict,
                "incomplete": incomplete,
                "subjects": merged,
            },
            indent=2,
        )
        + "\n"
    )
    if faults:
        print(f"faults caught: {len(merged) - len(verdict['escaped'])} of {len(merged)}", flush=True)
    return int(bool(next(iter(verdict.values()))) or bool(incomplete))


def _prebuild(subjects: Sequence[Subject], device: str) -> None:
    """--prebuild: the subjects' JIT modules, built before the first subject runs (a GPU only)."""
    if device_type(device) != "cuda":
        print(f"prebuild: nothing to build on {device} (FlashInfer builds its modules on a GPU)", flush=True)
        return
    from conformance.explore.prebuild import prebuild_subjects

    n, res = prebuild_subjects(subjects, device)
    print(
        f"prebuild: {n} modules built or found cached in {res.seconds:.1f} s"
        + (f"; failed: {res.error[:300]} (the subjects build what they need as they go)" if res.error else ""),
        flush=True,
    )


def main(argv: Optional[Sequence[str]] = None, prog: str = "python -m conformance.explore.loop") -> int:
    skip_final_collection()
    p = Parser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--target", choices=TARGETS, default="torch")
    p.add_argument("--budget", choices=tuple(BUDGETS), default="ci")
    p.add_argument("--out", required=True, help="directory for hypothesis-db/, failures/ and the summary")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--examples", type=int, help="examples per subject, instead of the budget's")
    p.add_argument("--steps", type=int, help="steps per example, instead of the budget's")
    p.add_argument("--subject", action="append", help="run only this subject (repeatable)")
    p.add_argument(
        "--no-verify",
        action="store_true",
        help="do not run each written script in a fresh process to check that it reproduces",
    )
    p.add_argument(
        "--jobs", type=int, default=1, help="on a GPU: subjects run at once, each in its own process (default 1)"
    )
    p.add_argument(
        "--prebuild",
        action="store_true",
        help="on a GPU: first build every FlashInfer JIT module the subjects can load, all cores on it",
    )
    p.add_argument(
        "--in-process",
        action="store_true",
        help="run every subject in this process (the default on a CPU; a GPU run uses a process per subject)",
    )
    p.add_argument(
        "--heartbeat",
        type=float,
        default=HEARTBEAT_S,
        metavar="SECONDS",
        help=f"while one subject runs longer, say so every SECONDS (default {HEARTBEAT_S:g}, 0: none)",
    )
    p.add_argument("--summary", default=SUMMARY_NAME, help=argparse.SUPPRESS)  # a child's own summary file
    p.add_argument("--flight", default=None, help=argparse.SUPPRESS)  # a child's flight record
    p.add_argument("--partial", default=None, help=argparse.SUPPRESS)  # a child's directed results, early
    a = p.parse_args(argv)
    try:  # usage errors only, each before anything is written: a ValueError raised later is no usage error
        if a.jobs < 1:
            raise InvalidValue("--jobs", a.jobs, "a positive number of subject processes at once", "pass e.g. --jobs 4")
        checked_device(a.device)
        usable_out_dir("--out", a.out)  # a file, or a path under one: refused before anything is written
        beat = Heartbeat(heartbeat_seconds(a.heartbeat))
        _budget(a.budget, a.examples, a.steps)
        chosen = _chosen(a.target, a.device, a.subject)  # an unknown subject; a device the target cannot use
    except ValueError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    if a.prebuild:
        _prebuild(chosen, a.device)
    if not a.in_process and device_type(a.device) == "cuda":
        names = [s.name for s in chosen]
        with beat:
            return explore_in_children(a, names, Tally(len(names), "subjects done", beat))
    if a.flight:
        machines.FLIGHT_RECORDER = Path(a.flight)
    tally = Tally(0, "subjects done", beat)

    def started(s: Subject, n: int) -> None:
        tally.total = n
        tally.start(f"subject {s.name}")

    def ended(r: SubjectResult) -> None:
        print_result(r)
        tally.end(f"subject {r.subject.name}")

    with beat:
        summary = explore(
            a.target,
            budget=a.budget,
            out=a.out,
            device=a.device,
            seed=a.seed,
            subjects=a.subject,
            examples=a.examples,
            steps=a.steps,
            on_result=ended,
            summary_name=a.summary,
            partial_name=a.partial,
            verify=not a.no_verify,
            on_start=started,
        )
    _print(summary)
    return summary.exit_status


if __name__ == "__main__":
    sys.exit(main())
