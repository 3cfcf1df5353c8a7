"""The pytest gate for hardware runners: markers, --require, the ledger, crashes, JUnit + JSON, GPU pinning.

    pytest conformance tests --target flashinfer --device cuda --require cuda,sm90,flashinfer \\
        --junitxml=out/junit.xml --results out/results -n 2 --gpus auto

* Markers (conformance/markers.py): a test marked with hardware or a library this machine lacks is
  skipped, the reason naming what is missing and what the machine has. The parity grid's tests
  carry the markers of their target and device.
* `--require M[,M...]`: the runner declares M. A test marked M that skips fails, unless the skip
  is a decision about the case (`as_decision()`: an adapter declined it, a crash entry held it back).
  A required marker no collected test carries fails the run too: it would prove nothing.
* The ledger (conformance/known_failures.py, decided in conformance/gate.py): an expected
  failure is xfailed, naming its entry and issue (or that none is filed); an entry's case that
  passes fails as an unexpected pass; a crash entry's case is not launched.
* `--isolate`: each parity case runs in a child process; a crash is that test's failure, named,
  and the run goes on. Without it, a dead CUDA context switches the rest of the run to isolation.
* `--junitxml` (pytest's own) gets a JSON sidecar beside it (or at `--gate-json`): markers met,
  required, pinning, per-test outcome with markers, ledger entry, crash, and skips by reason.
* `--gpus auto|0,1` with `-n N`: worker gwN sees only its GPU (conformance/pinning.py).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generator, Optional

import pytest

from conformance import gate_report, pinning
from conformance.markers import BY_NAME, MARKERS, arch_here, detect_here, gpu_facts, missing_reason
from scenarios.errors import InvalidValue

if TYPE_CHECKING:  # for annotations only
    from conformance.gate import LedgerVerdict
    from reports.records import ParityRecord


@dataclass
class GateState:
    required: list[str]
    met: list[str] = field(default_factory=list)
    arch: str = ""
    pinning: dict[str, str] = field(default_factory=dict)
    rocm: bool = False  # the vendor of the pinned GPUs (the controller's torch says)
    outcomes: dict[str, gate_report.TestOutcome] = field(default_factory=dict)


STATE = pytest.StashKey[GateState]()
RECORD = pytest.StashKey["ParityRecord"]()
VERDICT = pytest.StashKey["LedgerVerdict"]()
DECISION = pytest.StashKey[bool]()


def as_decision(item: pytest.Item) -> None:
    """Mark the skip that follows as a decision about the case, which any runner may take (never a --require
    failure); the test then skips as usual, so the skip's location stays the test's."""
    item.stash[DECISION] = True


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("attncheck-gate", "attncheck gate for hardware runners")
    g.addoption(
        "--require",
        action="append",
        default=[],
        metavar="MARKER[,MARKER]",
        help=f"this runner has this hardware or library ({', '.join(BY_NAME)}): a test needing it that "
        "skips fails (repeatable)",
    )
    g.addoption("--isolate", action="store_true", help="evaluate each parity case in a child process")
    g.addoption(
        "--case-timeout", type=float, default=None, help="seconds per isolated case before it counts as a crash"
    )
    g.addoption(
        "--results", default=None, metavar="DIR", help="write the parity grid's records to DIR/results-<worker>.jsonl"
    )
    g.addoption(
        "--gate-json", default=None, metavar="PATH", help="the JSON sidecar (default: beside --junitxml, .json)"
    )
    g.addoption(
        "--gpus", default=None, metavar="auto|0,1", help="pin pytest-xdist worker gwN to the N-th of these GPUs"
    )


def _worker(config: pytest.Config) -> Optional[str]:
    wi = getattr(config, "workerinput", None)
    return str(wi["workerid"]) if wi else None


def _required(config: pytest.Config) -> list[str]:
    names = [n.strip() for item in config.getoption("--require") for n in item.split(",") if n.strip()]
    for n in names:
        if n not in BY_NAME:
            raise pytest.UsageError(
                f"--require={n!r} is invalid: expected markers among {', '.join(BY_NAME)}. "
                f"Fix: pass e.g. --require cuda,sm90"
            )
    return sorted(set(names))


def pytest_configure(config: pytest.Config) -> None:
    for m in MARKERS:
        config.addinivalue_line("markers", f"{m.name}: needs {m.needs}")
    state = GateState(_required(config))
    config.stash[STATE] = state
    pin = pinning.worker_pin(getattr(config, "workerinput", None))
    if pin is not None:  # a worker, before anything touches the GPU
        pinning.pin(os.environ, *pin)
        return
    gpus = config.getoption("--gpus")
    if gpus is None or _worker(config) is not None:
        return
    workers = config.getoption("numprocesses", None) or 0
    if not workers:
        raise pytest.UsageError(
            f"--gpus={gpus!r} is invalid: expected pytest-xdist workers to pin. Fix: add -n N "
            "(one worker per GPU), or drop --gpus"
        )
    try:
        facts = gpu_facts()
        devices = pinning.device_list(gpus, os.environ, facts.count, facts.rocm)
        state.pinning = pinning.assign(int(workers), devices)
    except InvalidValue as e:
        raise pytest.UsageError(str(e)) from None
    state.rocm = facts.rocm


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: hand each worker its GPU before it starts."""
    state = node.config.stash[STATE]
    wid = node.gateway.id
    if wid in state.pinning:
        node.workerinput[pinning.WORKER_KEY] = {"device": state.pinning[wid], "rocm": state.rocm}


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash[STATE]
    pin = ", ".join(f"{w}->{d}" for w, d in state.pinning.items())
    return [
        f"attncheck gate: {state.arch}; markers met: {', '.join(state.met) or 'none'}; "
        f"required: {', '.join(state.required) or 'none'}" + (f"; pinning {pin}" if pin else "")
    ]


def _detect(state: GateState) -> None:
    met = detect_here()
    state.met, state.arch = sorted(met), arch_here("cuda" if "cuda" in met else "cpu")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[STATE]
    if not any(m.name in BY_NAME for item in items for m in item.iter_markers()):
        return  # nothing to skip: an xdist worker never asks torch about GPUs it does not need
    if not state.arch:
        _detect(state)
    met = frozenset(state.met)
    for item in items:
        missing = sorted({m.name for m in item.iter_markers() if m.name in BY_NAME} - met)
        if missing:
            item.add_marker(pytest.mark.skip(reason=missing_reason(missing[0], met, state.arch)))


def _skip_text(rep: pytest.TestReport) -> str:
    lr = rep.longrepr
    text = lr[2] if isinstance(lr, tuple) and len(lr) == 3 else str(lr)
    return text[len("Skipped: ") :] if text.startswith("Skipped: ") else text


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    rep: pytest.TestReport = outcome.get_result()
    state = item.config.stash[STATE]
    names = sorted({m.name for m in item.iter_markers() if m.name in BY_NAME})
    info: dict[str, Any] = {"markers": names}
    rec, verdict = item.stash.get(RECORD, None), item.stash.get(VERDICT, None)
    if rec is not None:
        from reports.records import is_crash

        info.update(record_status=rec.status, known=rec.known, crash=is_crash(rec))
    if verdict is not None and verdict.outcome == "unexpected_pass":
        info["unexpected_pass"] = True
    if rep.skipped and not hasattr(rep, "wasxfail"):
        reason = _skip_text(rep)
        decision = rep.when == "call" and item.stash.get(DECISION, False)
        info.update(skip_reason=reason, decision=decision)
        message = None
        if state.required:
            from conformance.gate import required_skip

            message = required_skip(frozenset(names), frozenset(state.required), decision, reason)
        if message is not None:
            rep.outcome = "failed"
            rep.longrepr = message
            info["required_failure"] = True
    rep.attncheck = info  # type: ignore[attr-defined]  # travels to the xdist controller with the report


class _Collector:
    """Collects every test's outcome in the process that reports (the xdist controller, or the only one)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.config.stash[STATE]
        text = report.longreprtext if report.longrepr is not None else ""
        if report.skipped and isinstance(report.longrepr, tuple):
            text = _skip_text(report)
        gate_report.absorb(
            state.outcomes,
            report.nodeid,
            report.when,
            report.outcome,
            getattr(report, "wasxfail", None),
            text,
            getattr(report, "attncheck", {}),
            report.duration,
        )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Where reports arrive (the xdist controller, or the only process): detect markers, collect outcomes."""
    if _worker(session.config) is None:
        _detect(session.config.stash[STATE])
        session.config.pluginmanager.register(_Collector(session.config), "attncheck-gate-collector")


def _unused_required(state: GateState) -> list[str]:
    seen = {m for t in state.outcomes.values() for m in t.markers}
    return [m for m in state.required if m not in seen]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _worker(config) is not None:
        return
    state = config.stash[STATE]
    if state.required and state.outcomes and _unused_required(state):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    junit = config.getoption("xmlpath", None)
    path = config.getoption("--gate-json") or (os.path.splitext(junit)[0] + ".json" if junit else None)
    if path:
        from conformance.parity_run import HARNESS_VERSION

        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        data = gate_report.sidecar(
            state.outcomes,
            required=state.required,
            met=state.met,
            arch=state.arch,
            pinning=state.pinning,
            unused_required=_unused_required(state),
            exitstatus=int(session.exitstatus),
            junitxml=junit,
            harness_version=HARNESS_VERSION,
        )
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True, default=str)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash[STATE]
    if not state.outcomes:
        return
    terminalreporter.section("attncheck gate")
    for line in gate_report.summary_lines(
        state.outcomes, state.required, state.met, state.arch, _unused_required(state) if state.required else []
    ):
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def attncheck_grid(pytestconfig: pytest.Config) -> Generator[Any, None, None]:
    """The parity grid's run in this process (conformance/grid_run.py), closed at the session's end."""
    from conformance.grid_run import GridRun

    opt = pytestconfig.getoption
    grid = GridRun(
        opt("--target"),
        opt("--device"),
        opt("--budget"),
        opt("--seed"),
        _worker(pytestconfig) or "main",
        isolate=opt("--isolate"),
        case_timeout_s=opt("--case-timeout"),
        results_dir=opt("--results"),
        argv=["pytest", *pytestconfig.invocation_params.args],
    )
    started = time.perf_counter()
    yield grid
    grid.close(time.perf_counter() - started)


def note(item: pytest.Item, rec: ParityRecord, verdict: LedgerVerdict) -> None:
    """Attach a test's record and ledger verdict to its item, for its report and the sidecar."""
    item.stash[RECORD] = rec
    item.stash[VERDICT] = verdict
