"""Stateful scenario machines: sequences of plans and runs through one long-lived adapter.

Why: lifecycle defects (a gate evaluated once, a mask left behind, an empty batch read as short, a
captured wrapper re-promoted, two reasons colliding) show only when one wrapper is planned again
and again. A machine drives long-lived adapters of a Subject with Hypothesis rules and, after every
run, checks the invariants below against the oracle, a fresh control adapter and the routing spec.

Rules: plan (long, short, empty, masked, unmasked, windowed, capped, other dtype), run, re-plan,
re-plan and run (the current case, non-empty, with new values: a re-plan checked at once), toggle
the mask, capture and replay (graph mode only; a re-plan with new lengths then replays the
same capture), toggle the window or causal (graph mode only: the same graph wrapper re-planned),
request an explicit backend (a second long-lived adapter). Graph rules are gated by a precondition
on the adapter's `graph` attribute, read by feature detection.

Invariants after every run, in the order a failure names them (INVARIANTS):
  no_unexpected_error         plan/run raised where the routing spec expects a backend
  every_element_written       no poisoned output element left
  no_nan_where_oracle_finite  no computed NaN where the reference is finite
  output_matches_oracle       output and LSE within the tolerance of oracle/judge.py
  history_independent         backend, reason and output equal a fresh adapter's for the same plan;
                              under graph mode only the output (DESIGN.md: the first plan may fix
                              the backend)
  agrees_with_routing_spec    routing.check of the spec's expectation for this wrapper's plan
                              sequence (routing.per_request.routes_for: the spec's lifecycle, or
                              per batch for torch's per-request SDPA), or, without a spec, the
                              backend the adapter was asked for

A failure raises ScenarioFailure carrying the whole sequence of calls (Steps); after Hypothesis
shrinks, that is the shrunk sequence, which conformance/explore/repro.py turns into a script.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar, ContextManager, Mapping, Optional, Sequence

import torch
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from conformance.evaluate import TruthCache
from conformance.explore.defects import DefectBook, Signature, failure_class, signature_of
from conformance.explore.pristine import PristineControl
from conformance.known_failures import repeats
from kernels._env import context_after_error, device_type, memory_report, out_of_memory, reclaim_memory
from kernels.errors import LibraryRefused
from kernels.protocol import AttentionKernel, KernelOutput, Reason, release, route_of_failed_run
from scenarios.poison import unwritten_mask
from oracle.judge import Truth, judge
from routing.check import ObservedRoute, check
from routing.per_request import routes_for
from routing.spec import ExpectedRoute, RoutingEnv, RoutingQuery, RoutingSpec, query_from_case
from scenarios import axes, strategies as S
from scenarios.case import Case
from scenarios.tensors import Inputs, materialize

# Where the sequence of calls so far, with the call about to be made, is rewritten before every call
# (conformance/explore/loop.py sets it in a child process): a call that kills the process leaves it behind.
FLIGHT_RECORDER: Optional[Path] = None
# Fault injection for the harness's own tests: with a flight recorder set, abort before call number N.
FAULT_ABORT_STEP = "ATTNCHECK_FAULT_ABORT_STEP"

# Tensor values of a plan rule's case; `replan` draws others. A plan's tensors differ with its case
# anyway, and one argument fewer per plan keeps shrinking short and the shrunk sequence plain.
PLAN_SEED = 0

INVARIANTS: tuple[str, ...] = (
    "no_unexpected_error",
    "every_element_written",
    "no_nan_where_oracle_finite",
    "output_matches_oracle",
    "history_independent",
    "agrees_with_routing_spec",
)


# ---- what a machine drives -------------------------------------------------------------------------
@dataclass(frozen=True)
class Recipe:
    """How a reproduction script rebuilds an adapter: plain torch, or a library import and a call.

    `make` is a Python expression of the variable `backend`, e.g. "get_target('flashinfer').make(backend, 'cpu')".
    """

    kind: str  # "torch" | "library"
    imports: str = ""
    make: str = ""


@dataclass(frozen=True)
class Subject:
    """A library configuration to explore: the backend under test, explicit ones, specs, mode."""

    name: str
    target: str
    backend: str
    make: Callable[[str], AttentionKernel]  # a new long-lived adapter for a backend, in this mode
    explicit: tuple[str, ...] = ()
    # The explicit backend the directed sequences ask for (default: the last of `explicit`).
    directed_backend: Optional[str] = None
    specs: Mapping[str, RoutingSpec] = field(default_factory=dict)  # absent: the asked-for backend
    env: RoutingEnv = RoutingEnv(arch="unknown", device="cpu")
    device: str = "cpu"
    recipe: Recipe = Recipe("library")
    # Compare outputs with a fresh adapter bit for bit (CPU) or within the oracle's bound (GPU).
    exact_history: bool = True
    # Layouts to leave out of the profile, each with why (an API whose choice the adapter cannot observe).
    exclude_layouts: Mapping[str, str] = field(default_factory=dict)
    # What every call must run inside (a stand-in installed as the library), entered by the runner.
    context: Optional[Callable[[], ContextManager[Any]]] = None
    # Profile fields fixed over what the adapter claims (a JIT library: the dtypes and head dims whose
    # modules a run builds), e.g. {"dtypes": ("bf16",), "head_dim_pairs": ((128, 128),)}.
    profile_limits: Mapping[str, Any] = field(default_factory=dict)
    # The known-failure ledger's (id, status) for a case it already explains (case-level entries of
    # conformance/known_failures.py), or None: a raise it explains is logged as "known", not a new
    # finding; a "crash" entry's case is not launched at all (it would kill the process).
    # After a run that raised, asked about the kernel plan() chose (an auto wrapper's held one) where known.
    known: Optional[Callable[[Case, str], Optional[tuple[str, str]]]] = None
    # The ledger's sequence-level entries: given a wrapper's plans (the failing one last) and the backend
    # ("<backend>+graph" in graph mode), the id of the lifecycle defect that history shows, or None.
    known_history: Optional[Callable[[Sequence[Case], str], Optional[str]]] = None
    # Why the backend under test has no spec (the installed version has no rows): its route is observed,
    # not checked; "" where it is checked.
    unmodelled: str = ""


@dataclass
class Step:
    """One call on an adapter, as a failure report and a reproduction script replay it."""

    n: int
    rule: str
    call: str  # "plan" | "run"
    backend: str
    case: Case
    seed: int
    observed: Optional[tuple[str, Reason]] = None
    expected: Optional[ExpectedRoute] = None
    # "ok" | "decline" (supports said no) | "refuse" (library refused) | "raise" | "known" (a raise or a
    # violation the ledger or an earlier finding explains; note names it) | "not-launched" (a case the
    # ledger says kills the process). A "reset" call (after a known violation) replaces the adapter.
    outcome: str = "ok"
    note: str = ""
    # The library calls this step made, where the adapter logs them (`call_log`: kernels/flashinfer/adapter.py);
    # a plain-library reproduction script is written from them.
    library_calls: list = field(default_factory=list)

    def line(self) -> str:
        text = f"{self.n:>2}. {self.call:<4} {self.backend:<6}"
        if self.call == "reset":
            return text + f" a new adapter  [{self.outcome}: {' '.join(self.note.split())}]"
        if self.call == "plan":
            text += f" {case_expr(self.case)}, seed={self.seed}"
        if self.observed is not None:
            text += f" -> {self.observed[0]}, reason {self.observed[1]!r}"
        if self.outcome != "ok":  # one line: a note may be a many-line CUDA error, the line a script's comment
            text += f"  [{self.outcome}: {' '.join(self.note.split())}]"
        return text


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str


class ScenarioFailure(AssertionError):
    """An invariant failed; carries the sequence of calls that led there and the defect's signature."""

    def __init__(
        self,
        subject: str,
        steps: Sequence[Step],
        violations: Sequence[Violation],
        signature: Optional[Signature] = None,
    ) -> None:
        self.subject = subject
        self.steps = list(steps)
        self.violations = sorted(violations, key=lambda v: INVARIANTS.index(v.invariant))
        self.signature = signature
        super().__init__(self.report())

    @property
    def invariant(self) -> str:
        return self.violations[0].invariant

    def report(self) -> str:
        first = self.violations[0]
        also = [v.invariant for v in self.violations[1:]]
        lines = [
            f"{self.subject}: invariant {first.invariant} violated at step {self.steps[-1].n}"
            + (f" (also: {', '.join(also)})" if also else "")
        ]
        lines += [f"  {v.invariant}: {v.detail}" for v in self.violations]
        lines.append("sequence of calls:")
        lines += ["  " + s.line() for s in self.steps]
        return "\n".join(lines)


class ContextLost(BaseException):
    """The device context died during a call: nothing more runs in this process.

    A BaseException, so Hypothesis neither catches nor shrinks it (every replay would fail at its
    first call, and the "shrunk" sequence would be noise): the calls so far are the finding, as
    they are, and explore_subject reports them.
    """

    def __init__(self, subject: str, steps: Sequence[Step], detail: str) -> None:
        super().__init__(detail)
        self.failure = ScenarioFailure(
            subject,
            steps,
            [
                Violation(
                    "no_unexpected_error",
                    f"{detail} (the CUDA context was lost; the sequence is not shrunk: shrinking needs a live context)",
                )
            ],
        )


class EnvironmentFailure(BaseException):
    """The machine ran out of memory during a call: the subject ends, and nothing is recorded as a defect.

    What ran out is the environment (a neighbour process holding the device, a leak in the harness), not
    the kernel: a script of the calls would not reproduce it on an idle device. A BaseException, so
    Hypothesis neither catches nor shrinks it; explore_subject reports the subject as ended by its
    environment, with the calls so far and the memory figures, and the run as incomplete.
    """

    def __init__(self, subject: str, steps: Sequence[Step], detail: str) -> None:
        super().__init__(detail)
        self.subject, self.steps, self.detail = subject, list(steps), detail

    @classmethod
    def out_of_memory(cls, subject: str, steps: Sequence[Step], during: str, e: BaseException, device: str) -> Any:
        """The failure for `e`, an out-of-memory error met during `during`: the error, then the memory figures."""
        return cls(subject, steps, f"out of memory during {during}: {error_text(e)} ({memory_report(device)})")

    def to_json(self) -> dict[str, Any]:
        return {"error": self.detail, "sequence": [s.line() for s in self.steps]}


def error_text(e: BaseException) -> str:
    """An exception as one line: its type and the first 300 characters of its message."""
    return f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"


def case_expr(case: Case) -> str:
    """A Case as the shortest Python expression that rebuilds it (non-default fields only)."""
    d = case.to_json()
    d.pop("label")
    head = [
        repr(d.pop("layout")),
        repr(tuple(d.pop("qo_lens"))),
        repr(tuple(d.pop("kv_lens"))),
        repr(d.pop("num_qo_heads")),
        repr(d.pop("num_kv_heads")),
    ]
    defaults = Case("ragged", (), (), 1, 1).to_json()
    rest = [f"{k}={v!r}" for k, v in d.items() if v != defaults[k]]
    return f"Case({', '.join(head + rest)})"


# What a checked run is counted under in Stats.checked (docs/scenario-machines.md, "What the machines draw").
REPLAN_THEN_RUN = "replan_then_run"  # a run right after a re-plan of its wrapper (rule replan or replan_and_run)
LONG_KV = "long_kv"  # a request of at least axes.SCENARIO_LONG_KV[0] keys
SM_SCALE = "sm_scale"  # an explicit sm_scale
SOFT_CAP = "soft_cap"
REPLAN_RULES = ("replan", "replan_and_run")


def checked_kinds(case: Case, plan_rule: str) -> list[str]:
    """What a checked run of `case` (planned by `plan_rule`) counts under; only a non-empty case counts."""
    if case.total_qo == 0 or case.total_kv == 0:
        return []
    kinds = [REPLAN_THEN_RUN] if plan_rule in REPLAN_RULES else []
    if max(case.kv_lens) >= axes.SCENARIO_LONG_KV[0]:
        kinds.append(LONG_KV)
    if case.sm_scale is not None:
        kinds.append(SM_SCALE)
    if case.logits_soft_cap > 0:
        kinds.append(SOFT_CAP)
    return kinds


@dataclass
class Stats:
    examples: int = 0
    steps: int = 0
    runs: int = 0
    generated: int = 0  # examples Hypothesis generated (not replays, not shrinking): what a budget counts
    known: int = 0  # violations an earlier finding or the ledger (lifecycle or case-level entries) explained
    # Runs whose invariants were checked, by what they exercised (checked_kinds), on non-empty cases.
    checked: dict[str, int] = field(default_factory=dict)
    # A digest of every example's calls (rule, call, backend, case, seed) in order: the same arguments
    # give the same digest, whichever entry point ran them (conformance/explore/constants.py).
    digest: str = ""

    def add_example(self, steps: Sequence["Step"]) -> None:
        calls = "\n".join(f"{s.rule} {s.call} {s.backend} {case_expr(s.case)} {s.seed}" for s in steps)
        self.digest = hashlib.sha256(f"{self.digest}\n\n{calls}".encode()).hexdigest()[:16]


@dataclass
class _Planned:
    inputs: Inputs
    history: tuple  # key into ScenarioMachine.histories
    index: int  # this plan's position in that history, from 1
    tried: int  # how many plans that wrapper was given up to this one (failed ones too: ScenarioMachine.plans)
    rule: str = "plan"  # the rule that planned it


_TRUTHS = TruthCache(size=512)


def cached_truth(case: Case, seed: int) -> Truth:
    """The oracle for (case, seed) on the CPU, computed once: shrinking replays the same plans many times."""
    return _TRUTHS.of(case, seed, "cpu").truth()


def default_wrapper_key(case: Case) -> tuple:
    """Which library wrapper serves a case when the adapter does not say (`wrapper_key`): one per API and KV
    layout. An adapter with CUDA-graph wrappers says how it keys them (FlashInferKernel.wrapper_key, from
    kernels/flashinfer/adapter.py `graph_wrapper_key`: per batch size, and per mask kind unless shared)."""
    return (case.layout, case.kv_layout)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape:
        return False
    both_nan = torch.isnan(a) & torch.isnan(b)
    return bool(((a == b) | both_nan).all())


def _call_log(adapter: AttentionKernel) -> list:
    """The adapter's log of library calls (`call_log`), or a throwaway list where it keeps none."""
    log = getattr(adapter, "call_log", None)
    return log if isinstance(log, list) else []


# ---- preconditions, shared by the rules and the directed runner ----------------------------------------
def _has_case(m: "ScenarioMachine") -> bool:
    return m.current is not None


def _has_nonempty_case(m: "ScenarioMachine") -> bool:
    return m.current is not None and m.current.total_qo > 0 and m.current.total_kv > 0


def _has_plan(m: "ScenarioMachine") -> bool:
    return m.subject.backend in m.planned


def _graph_with_plan(m: "ScenarioMachine") -> bool:
    return m.graph and _has_plan(m)


def _graph_with_case(m: "ScenarioMachine") -> bool:
    return m.graph and _has_case(m)


def _mask_togglable(m: "ScenarioMachine") -> bool:
    return _has_case(m) and m.profile.mask


PRECONDITIONS: dict[str, Callable[["ScenarioMachine"], bool]] = {
    "run": _has_plan,
    "replan": _has_case,
    "replan_and_run": _has_nonempty_case,
    "toggle_mask": _mask_togglable,
    "plan_other_dtype": _has_case,
    "capture_and_replay": _graph_with_plan,
    "replan_captured": _graph_with_case,
    "toggle_window": _graph_with_case,
    "toggle_causal": _graph_with_case,
    "request_backend": _has_case,
}


# ---- the machine -------------------------------------------------------------------------------------
class ScenarioMachine(RuleBasedStateMachine):
    """Rules and invariants for any adapter; `machine_for(subject)` binds a Subject and its Profile."""

    subject: ClassVar[Subject]
    profile: ClassVar[S.Profile]
    graph: ClassVar[bool]
    stats: ClassVar[Stats]
    book: ClassVar[DefectBook]  # the subject's distinct defects so far: met again, they are known
    # The first failure raised since the runner last cleared it, and the calls of the latest example:
    # what a Flaky outcome is replayed from in a fresh process (conformance/explore/loop.py).
    first_raised: ClassVar[Optional[ScenarioFailure]]
    last_steps: ClassVar[list[Step]]
    # The control from untouched library state (conformance/explore/pristine.py), asked where a run failed and
    # the in-process fresh adapter agreed with it; None where the runner started none.
    pristine: ClassVar[Optional[PristineControl]]

    def __init__(self) -> None:
        super().__init__()
        self.adapters: dict[str, AttentionKernel] = {}
        self.retired: list[AttentionKernel] = []  # adapters replaced after a known violation, released at teardown
        self.histories: dict[tuple, list[RoutingQuery]] = {}
        self.plans: dict[tuple, list[Case]] = {}  # each wrapper's plans, beside its routing queries
        self.planned: dict[str, _Planned] = {}
        self.current: Optional[Case] = None
        self.model: Optional[Case] = None  # graph machines: the first plan, whose model config later ones keep
        self.steps: list[Step] = []
        type(self).stats.examples += 1
        type(self).last_steps = self.steps

    def teardown(self) -> None:
        """Release this example's adapters (protocol.release: a failure's traceback keeps them alive while
        Hypothesis shrinks, and with them their workspaces and captured graphs) and drop them; a GPU process
        holding more than it should collects what reference cycles still keep (_env.reclaim_memory)."""
        type(self).stats.add_example(self.steps)
        for adapter in [*self.adapters.values(), *self.retired]:
            release(adapter)
        self.adapters.clear()
        self.retired.clear()
        self.planned.clear()
        reclaim_memory(self.subject.device)

    # -- rules without profile-dependent arguments -----------------------------------------------------
    @precondition(_has_plan)
    @rule()
    def run(self) -> None:
        self._run(self.subject.backend, "run")

    @precondition(_has_case)
    @rule(seed=S.seeds)
    def replan(self, seed: int) -> None:
        assert self.current is not None
        self._plan(self.subject.backend, self.current, seed, "replan")

    @precondition(_has_nonempty_case)
    @rule(seed=S.seeds)
    def replan_and_run(self, seed: int) -> None:
        """Re-plan the current case (query rows and keys) with new values and run it: what a server does
        each step, and where a re-plan's stale state shows."""
        assert self.current is not None
        self._plan(self.subject.backend, self.current, seed, "replan_and_run")
        if _has_plan(self):
            self._run(self.subject.backend, "replan_and_run")

    @precondition(_mask_togglable)
    @rule()
    def toggle_mask(self) -> None:
        assert self.current is not None
        self._plan(self.subject.backend, S.toggled_mask(self.current), PLAN_SEED, "toggle_mask")

    @precondition(_graph_with_plan)
    @rule()
    def capture_and_replay(self) -> None:
        """The first run of a graph-mode plan captures, the next replays the capture."""
        self._run(self.subject.backend, "capture_and_replay")
        if _has_plan(self):
            self._run(self.subject.backend, "capture_and_replay")

    @precondition(_graph_with_case)
    @rule(lengths=S.relengths, fill=st.booleans())
    def replan_captured(self, lengths: list[tuple[int, int]], fill: bool = False) -> None:
        """Re-plan the captured shape (same batch size, mask, dtype, no more rows; with `fill` exactly as many,
        the last request taking what is left, as an engine pads a replay) with new lengths, then replay."""
        assert self.current is not None
        case = S.within_rows(S.with_lengths(self.current, lengths), self.current.total_qo, fill)
        self._plan(self.subject.backend, case, PLAN_SEED, "replan_captured")
        if _has_plan(self):
            self._run(self.subject.backend, "replan_captured")

    # -- helpers the generated rules call --------------------------------------------------------------
    def plan_case(self, rule_name: str, case: Case, seed: int) -> None:
        """Plan a drawn case. A graph machine is one serving engine: its first plan fixes the model (S.in_model:
        dtypes, descales, head dims, heads, page size) every later drawn plan is served in; only plan_other_dtype
        leaves it."""
        if self.graph:
            self.model = self.model or case
            case = S.in_model(case, self.model)
        self._plan(self.subject.backend, case, seed, rule_name)

    def other_dtype(self, dtype: str) -> None:
        assert self.current is not None
        d = S.other_dtype(self.profile, self.current.q_dtype, dtype)
        self._plan(self.subject.backend, S.with_dtype(self.current, d), PLAN_SEED, "plan_other_dtype")

    def explicit(self, backend: str) -> None:
        """Plan and run the current case on a long-lived adapter asked for `backend` explicitly."""
        assert self.current is not None
        self._plan(backend, self.current, PLAN_SEED, "request_backend")
        if backend in self.planned:
            self._run(backend, "request_backend")

    # -- calls on adapters -----------------------------------------------------------------------------
    def _adapter(self, backend: str) -> AttentionKernel:
        if backend not in self.adapters:
            self.adapters[backend] = self.subject.make(backend)
        return self.adapters[backend]

    def _about_to(self, step: Step) -> None:
        """Write the calls so far and `step` (not yet made) to FLIGHT_RECORDER, where one is set."""
        if FLIGHT_RECORDER is not None:
            lines = [s.line() for s in self.steps] + [step.line() + "   <- in progress"]
            FLIGHT_RECORDER.write_text(f"{self.subject.name}\n" + "\n".join(lines) + "\n")
            if os.environ.get(FAULT_ABORT_STEP) == str(step.n):  # the harness's own tests: a call that kills
                os.abort()

    def _log(self, step: Step) -> Step:
        self.steps.append(step)
        type(self).stats.steps += 1
        return step

    def _wrapper_key(self, adapter: AttentionKernel, case: Case) -> tuple:
        key_fn = getattr(adapter, "wrapper_key", None)
        if callable(key_fn):
            return key_fn(case)
        assert not self.graph, f"{adapter!r} runs in CUDA-graph mode without saying how its wrappers are keyed"
        return default_wrapper_key(case)

    def _query(self, backend: str, case: Case) -> RoutingQuery:
        env = replace(self.subject.env, graph_mode=self.graph)
        q = query_from_case(case, env, requested=backend)
        # A graph wrapper built with mask buffers shows the library's selector a mask on every plan
        # (the adapter's `mask_buffer_held`; a shared flashinfer graph wrapper): expect that route.
        held = getattr(self.adapters.get(backend), "mask_buffer_held", None)
        return q.replace(custom_mask=True) if callable(held) and held(case) else q

    def _plan(self, backend: str, case: Case, seed: int, rule_name: str) -> None:
        adapter = self._adapter(backend)
        step = Step(len(self.steps) + 1, rule_name, "plan", backend, case, seed)
        sup = adapter.supports(case)
        if not sup.ok:
            step.outcome, step.note = "decline", sup.reason
            self._log(step)
            return
        entry = self._ledger(case, backend)
        if entry is not None and entry[1] == "crash":
            step.outcome, step.note = "not-launched", f"{entry[0]}: the ledger says this case kills the process"
            self._log(step)
            self.planned.pop(backend, None)
            return
        try:
            inputs = materialize(case, seed, self.subject.device)
        except Exception as e:  # noqa: BLE001 - only running out of memory is caught here
            self._environment(e, "materializing the inputs")
            raise
        key = (backend,) + self._wrapper_key(adapter, case)
        events = getattr(adapter, "graph_events", None)
        seen = len(events) if isinstance(events, list) else 0
        log = _call_log(adapter)
        mark = len(log)
        self._about_to(step)
        try:
            adapter.plan(inputs)
        except Exception as e:  # noqa: BLE001 - any exception is an observation to judge
            self._environment(e, "plan", step)
            step.library_calls = log[mark:]
            self.planned.pop(backend, None)
            # The wrapper was called: what a failed plan left behind is part of its history (the ledger's
            # lifecycle rules read it), though no route was taken.
            self.plans.setdefault(key, []).append(case)
            if self._known(step, case, backend, e):
                self._context(step)
                return
            step.outcome, step.note = "raise", f"{type(e).__name__}: {e}"
            self._log(step)
            self._context(step)
            expected = self._expected(backend, key, case)
            step.expected = expected
            if expected is None or expected.raises != type(e).__name__:
                want = (
                    "no exception"
                    if expected is None
                    else (f"{expected.raises}" if expected.raises else f"backend {expected.backend!r}")
                )
                self._fail(
                    [Violation("no_unexpected_error", f"plan raised {type(e).__name__}: {e}; the spec expects {want}")],
                    backend,
                    case,
                    self.plans[key],
                )
            return
        step.library_calls = log[mark:]
        if isinstance(events, list) and any(e.startswith("new graph wrapper") for e in events[seen:]):
            self.histories[key] = []  # the adapter made a new library wrapper: a new first plan
            self.plans[key] = []
        history = self.histories.setdefault(key, [])
        history.append(self._query(backend, case))
        self.plans.setdefault(key, []).append(case)
        self.planned[backend] = _Planned(inputs, key, len(history), len(self.plans[key]), rule_name)
        if backend == self.subject.backend:
            self.current = case
        self._log(step)

    def _expected(self, backend: str, key: tuple, case: Case) -> Optional[ExpectedRoute]:
        """The spec's expectation for one more plan of `case` on the wrapper `key`; None: no spec."""
        spec = self.subject.specs.get(backend)
        if spec is None:
            return None
        return routes_for(spec, self.histories.get(key, []) + [self._query(backend, case)])[-1]

    def _run(self, backend: str, rule_name: str) -> None:
        p = self.planned[backend]
        adapter = self.adapters[backend]
        case = p.inputs.case
        step = Step(len(self.steps) + 1, rule_name, "run", backend, case, p.inputs.seed)
        log = _call_log(adapter)
        mark = len(log)
        self._about_to(step)
        try:
            out = adapter.run(p.inputs)
        except LibraryRefused as e:
            step.outcome, step.note = "refuse", e.message
            self._log(step)
            return
        except Exception as e:  # noqa: BLE001
            self._environment(e, "run", step)
            step.library_calls = log[mark:]
            held = route_of_failed_run(adapter, p.inputs)  # what plan() chose, where the run meant it
            if self._known(step, case, backend, e, held[0] if held is not None else None):
                self.planned.pop(backend, None)
                self._context(step)
                return
            step.outcome, step.note = "raise", f"{type(e).__name__}: {e}"
            self._log(step)
            self._context(step)
            self._fail(
                [Violation("no_unexpected_error", f"run raised {type(e).__name__}: {e}")],
                backend,
                case,
                self.plans.get(p.history, [])[: p.tried],
            )
            return
        step.library_calls = log[mark:]
        step.observed = (out.resolved_backend, out.fallback_reason)
        spec = self.subject.specs.get(backend)
        if spec is not None:
            step.expected = routes_for(spec, self.histories[p.history][: p.index])[-1]
        self._log(step)
        type(self).stats.runs += 1
        violations = self._check(backend, adapter, p, out, step)
        checked = type(self).stats.checked
        for kind in checked_kinds(case, p.rule):
            checked[kind] = checked.get(kind, 0) + 1
        if violations:
            self._fail(violations, backend, case, self.plans.get(p.history, [])[: p.tried], out.resolved_backend)

    def _environment(self, e: Exception, during: str, step: Optional[Step] = None) -> None:
        """End the subject on running out of memory (EnvironmentFailure), with what memory looked like and
        the calls so far (`step`, the call that ran out, last)."""
        if not out_of_memory(e):
            return
        if step is not None:
            step.outcome, step.note = "raise", error_text(e)
        steps = self.steps + ([step] if step is not None else [])
        raise EnvironmentFailure.out_of_memory(self.subject.name, steps, during, e, self.subject.device) from None

    def _context(self, step: Step) -> None:
        """After a raise on a GPU: clear a pending CUDA error (noted on the step), or stop on a lost context."""
        if device_type(self.subject.device) != "cuda":
            return
        alive, met = context_after_error(self.subject.device)
        if met:
            step.note += f" [{'a pending CUDA error, cleared' if alive else 'CUDA context lost'}: {met}]"
        if not alive:
            raise ContextLost(self.subject.name, self.steps, step.note)

    def _ledger(self, case: Case, backend: str) -> Optional[tuple[str, str]]:
        """The subject's ledger answer for `case` on `backend` in this machine's mode: a graph subject asks about
        "<backend>+graph" (on the H200 a graph-only entry went unmatched and its raise was reported as new)."""
        if self.subject.known is None:
            return None
        return self.subject.known(case, f"{backend}+graph" if self.graph and "+" not in backend else backend)

    def _case_ledger(self, case: Case, backend: str, resolved: Optional[str]) -> Optional[tuple[str, str]]:
        """The ledger's answer for `case` on the backend asked for, else on the kernel the run reported."""
        entry = self._ledger(case, backend)
        if entry is None and resolved and resolved != backend:
            entry = self._ledger(case, resolved)
        return entry

    def _known(self, step: Step, case: Case, backend: str, e: Exception, resolved: Optional[str] = None) -> bool:
        """Log a raise the ledger already explains as "known" (True); False for anything else. `resolved`: the
        kernel a failed run meant (an auto wrapper's held choice), which the ledger is then asked about."""
        entry = self._ledger(case, resolved or backend)
        if entry is None:
            return False
        step.outcome, step.note = "known", f"{entry[0]}: {type(e).__name__}: {e}"[:300]
        self._log(step)
        return True

    def _fail(
        self,
        violations: Sequence[Violation],
        backend: str,
        case: Case,
        plans: Sequence[Case],
        resolved: Optional[str] = None,
    ) -> None:
        """Raise the violations as a failure, unless the ledger's lifecycle entries, its case-level entries (where no
        control answered otherwise for a case whose wrong output is its own) or an earlier finding explain them:
        then the step is marked known, the adapter is replaced, and the example goes on.
        `resolved`: the kernel the failed run reported, which the ledger is asked about too (an auto
        wrapper's case-level defect is the kernel's that ran: torch's cuDNN empty rows)."""
        first = sorted(violations, key=lambda v: INVARIANTS.index(v.invariant))[0]
        graph_backend = f"{backend}+graph" if self.graph and "+" not in backend else backend
        entry = self.subject.known_history(plans, graph_backend) if self.subject.known_history else None
        if entry is None:  # a case-level entry explains a wrong output of this case alone, whatever came before,
            # unless a control answered otherwise where the entry's output is the case's alone: that is history
            case_entry = self._case_ledger(case, backend, resolved)
            if case_entry is not None and case_entry[1] == "fail":
                history = any(v.invariant == "history_independent" for v in violations)
                entry = None if history and repeats(case_entry[0]) else case_entry[0]
        sig = signature_of(
            case, backend, self.graph, plans, first.invariant, first.detail, [v.invariant for v in violations]
        )
        book = type(self).book
        if entry is not None:
            book.ledger_hits[entry] = book.ledger_hits.get(entry, 0) + 1
            self._known_violation(backend, f"{entry}: {first.invariant}: {first.detail}")
            return
        met = book.match(sig)
        if met is not None:
            met.hits += 1
            self._known_violation(backend, f"{met.signature.id}: {first.invariant}: {first.detail}")
            return
        failure = failure_class(ScenarioFailure, sig.key)(self.subject.name, self.steps, violations, sig)
        if type(self).first_raised is None:
            type(self).first_raised = failure
        raise failure

    def _known_violation(self, backend: str, note: str) -> None:
        """Mark the last step known, then replace `backend`'s adapter: its wrappers' history is what broke."""
        type(self).stats.known += 1
        last = self.steps[-1]
        last.outcome, last.note = "known", note[:300]
        reset = Step(len(self.steps) + 1, "known", "reset", backend, last.case, last.seed, outcome="known")
        reset.note = note.split(":", 1)[0] + ": the wrapper's history is the known defect's; a new adapter"
        self._log(reset)
        replaced = self.adapters.pop(backend, None)
        if replaced is not None:
            self.retired.append(replaced)
        self.planned.pop(backend, None)
        for key in [k for k in self.histories if k[0] == backend]:
            del self.histories[key]
            self.plans.pop(key, None)

    # -- the invariants --------------------------------------------------------------------------------
    def _check(
        self, backend: str, adapter: AttentionKernel, p: _Planned, out: KernelOutput, step: Step
    ) -> list[Violation]:
        inputs = p.inputs
        t = cached_truth(inputs.case, inputs.seed)
        v: list[Violation] = []
        unwritten = unwritten_mask(out.out)
        if bool(unwritten.any()):
            first = tuple(int(i) for i in unwritten.nonzero()[0].tolist())
            v.append(
                Violation(
                    "every_element_written",
                    f"{int(unwritten.sum())} of {out.out.numel()} output elements never written (first at {first})",
                )
            )
        ref_finite = torch.isfinite(t.ref.out.to(out.out.device))
        nan = torch.isnan(out.out) & ~unwritten & ref_finite
        if bool(nan.any()):
            v.append(
                Violation(
                    "no_nan_where_oracle_finite", f"{int(nan.sum())} NaN output elements where the oracle is finite"
                )
            )
        oc, lc = judge(t, out.out, out.lse, lse_base=out.lse_base, adapter=self.subject.target, backend=backend)
        if not oc.passed or (lc is not None and not lc.passed):
            v.append(
                Violation(
                    "output_matches_oracle", "; ".join(c.summary() for c in (oc, lc) if c is not None and not c.passed)
                )
            )
        history = self._history(adapter, inputs, out, oc.bound, backend, step)
        if v and not history:
            history = self._pristine(inputs, out, oc.bound, backend, step)
        v += history
        v += self._routing(backend, out, step)
        return v

    def _history(
        self, adapter: AttentionKernel, inputs: Inputs, out: KernelOutput, bound: float, backend: str, step: Step
    ) -> list[Violation]:
        """The run against a fresh adapter's plan and run of the same inputs. A control that raises where the
        ledger expects that case to raise is no evidence about this wrapper's history: noted, not judged."""
        control = adapter.fresh()
        try:
            control.plan(inputs)
            ref = control.run(inputs)
        except Exception as e:  # noqa: BLE001
            self._environment(e, "the fresh adapter's control")
            if device_type(self.subject.device) == "cuda" and not context_after_error(self.subject.device)[0]:
                raise ContextLost(
                    self.subject.name, self.steps, f"a fresh adapter raised {type(e).__name__}: {e} on the same plan"
                ) from None
            entry = self._ledger(inputs.case, backend)
            if entry is not None and entry[1] == "error":
                step.note += f" [fresh control: known {entry[0]}: {type(e).__name__}]"
                return []
            return [
                Violation("history_independent", f"a fresh adapter raised {type(e).__name__}: {e} on the same plan")
            ]
        finally:
            release(control)  # its output is all the comparison needs
        diffs = self._differences(out, ref, bound, "a fresh adapter's")
        return [Violation("history_independent", "; ".join(diffs))] if diffs else []

    def _pristine(self, inputs: Inputs, out: KernelOutput, bound: float, backend: str, step: Step) -> list[Violation]:
        """A failed run that the in-process control repeated, asked of a control from untouched library state:
        where that one answers otherwise, state the library kept outside its wrappers is what failed (history).
        A case whose ledger entry's output is not the case's alone (a race, unwritten rows) is not asked: any
        control may answer otherwise; a control that could not run is noted on the step, no evidence either way."""
        pristine = type(self).pristine
        if pristine is None:
            return []
        entry = self._case_ledger(inputs.case, backend, out.resolved_backend)
        if entry is not None and not repeats(entry[0]):
            return []
        answer = pristine.ask(self.subject.name, backend, inputs.case, inputs.seed)
        if answer.raised:
            return [Violation("history_independent", f"a fresh adapter in a pristine process raised {answer.error}")]
        if answer.output is None:
            step.note += f" [{answer.error[:300]}]"
            return []
        diffs = self._differences(out, answer.output, bound, "a fresh adapter's in a pristine process")
        return [Violation("history_independent", "; ".join(diffs))] if diffs else []

    def _differences(self, out: KernelOutput, ref: KernelOutput, bound: float, whose: str) -> list[str]:
        """How `out` differs from the control's `ref`: the output bit for bit (exact_history) or within `bound`,
        and, outside graph mode, the backend and reason."""
        diffs = []

        def max_diff() -> float:
            return float((out.out.double() - ref.out.double()).abs().nan_to_num(nan=float("inf")).max())

        if self.subject.exact_history:
            if not _same(out.out, ref.out):
                diffs.append(f"output differs from {whose} (max |diff| {max_diff():.3g})")
        elif out.out.shape != ref.out.shape:
            diffs.append(f"output of shape {tuple(out.out.shape)}, {whose} {tuple(ref.out.shape)}")
        elif out.out.numel() and (d := max_diff()) > bound:
            diffs.append(f"output differs from {whose} by {d:.3g}, more than the bound {bound:.3g}")
        if not self.graph:
            if out.resolved_backend != ref.resolved_backend:
                diffs.append(f"backend {out.resolved_backend!r}, {whose} {ref.resolved_backend!r}")
            if out.fallback_reason != ref.fallback_reason:
                diffs.append(f"reason {out.fallback_reason!r}, {whose} {ref.fallback_reason!r}")
        return diffs

    def _routing(self, backend: str, out: KernelOutput, step: Step) -> list[Violation]:
        if step.expected is None:
            if backend == self.subject.backend and self.subject.unmodelled:
                return []  # no rows for this version: `auto` may resolve to anything, and that is not checked
            if out.resolved_backend != backend:
                return [Violation("agrees_with_routing_spec", f"asked for {backend!r}, ran {out.resolved_backend!r}")]
            return []
        verdict = check(step.expected, ObservedRoute(out.resolved_backend, out.fallback_reason))
        if verdict.passed:
            return []
        return [
            Violation("agrees_with_routing_spec", f"{verdict.status}: {verdict.detail} (spec row {step.expected.rule})")
        ]


# ---- binding a machine to a subject ------------------------------------------------------------------
def _plan_rule(kind: str, cases: st.SearchStrategy[Case]) -> Any:
    """`plan` for kind "any", else `plan_<kind>`. Hypothesis orders rules of equal arity by name and
    shrinks toward the first, so the plain `plan` is what a shrunk sequence uses where it can."""
    name = "plan" if kind == "any" else f"plan_{kind}"

    def plan(self: ScenarioMachine, case: Case) -> None:
        self.plan_case(name, case, PLAN_SEED)

    plan.__name__ = plan.__qualname__ = name
    return rule(case=cases)(plan)


def machine_for(subject: Subject, profile: Optional[S.Profile] = None) -> type[ScenarioMachine]:
    """A RuleBasedStateMachine class for `subject`, drawing inside its adapter's profile."""
    probe = subject.make(subject.backend)
    prof = replace(profile or S.probe_profile(probe), **subject.profile_limits)
    if subject.exclude_layouts:
        prof = replace(prof, layouts=tuple(x for x in prof.layouts if x not in subject.exclude_layouts))
    ns: dict[str, Any] = {
        "subject": subject,
        "profile": prof,
        "graph": bool(getattr(probe, "graph", False)),
        "stats": Stats(),
        "book": DefectBook(),
        "first_raised": None,
        "last_steps": [],
        "pristine": None,
    }
    for kind, cases in S.plans(prof).items():
        r = _plan_rule(kind, cases)
        ns[r.__name__] = r

    def plan_other_dtype(self: ScenarioMachine, dtype: str) -> None:
        self.other_dtype(dtype)

    def request_backend(self: ScenarioMachine, backend: str) -> None:
        self.explicit(backend)

    def toggle_window(self: ScenarioMachine, window: int) -> None:
        assert self.current is not None
        self.plan_case("toggle_window", S.toggled_window(self.current, window), PLAN_SEED)

    def toggle_causal(self: ScenarioMachine) -> None:
        assert self.current is not None
        self.plan_case("toggle_causal", S.toggled_causal(self.current), PLAN_SEED)

    if ns["graph"]:  # the same graph wrapper re-planned with the window or causal flipped (its key keeps both)
        if prof.window:
            ns["toggle_window"] = precondition(_graph_with_case)(rule(window=S.windows_on)(toggle_window))
        ns["toggle_causal"] = precondition(_graph_with_case)(rule()(toggle_causal))
    if len(prof.dtypes) > 1:
        ns["plan_other_dtype"] = precondition(_has_case)(rule(dtype=st.sampled_from(prof.dtypes))(plan_other_dtype))
    if subject.explicit:
        ns["request_backend"] = precondition(_has_case)(
            rule(backend=st.sampled_from(subject.explicit))(request_backend)
        )
    name = "Machine_" + "".join(ch if ch.isalnum() else "_" for ch in subject.name)
    return type(name, (ScenarioMachine,), ns)
