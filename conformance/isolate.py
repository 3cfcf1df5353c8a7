"""Evaluate (case, backend) pairs in a child process, so a case that kills it is one record.

A case can abort the process (a segfault or an abort inside a library) or leave the CUDA context
dead (after an illegal memory access every later CUDA call in that process fails). In-process,
either takes the rest of the run with it. Here a child process evaluates cases one at a time
(conformance.evaluate.evaluate_with_control, the same function as in-process) and sends each record back
as one JSON line; when the child dies in the middle of a case, the parent records that case as an
error naming the crash (reports.records.CRASHED, then the signal or exit status) and starts a fresh child for the
next case. After an error on a GPU the child probes its CUDA context; if it is dead, the child
says so with the record and exits, so the next case starts in a clean process.

The child is `python -m conformance.isolate CONFIG_JSON`; its stdout is the protocol channel (the
library's own prints are moved to stderr), one request per line on stdin. It says READY once its imports
are done, so a case's timeout starts with the case, not with a fresh interpreter's start.

FAULT_ENV is fault injection for the harness's own tests: `backend:case_id` (either may be `*`)
makes the child abort when it is asked for that pair, as a crashing kernel would; HANG_ENV, the same
form, makes it stop answering for HANG_FAULT_S, as a hung kernel does (what `--case-timeout` is for; bounded,
so that a run without the timeout ends and its test fails rather than hangs), and HANG_ENV=start makes it
hang so before it says READY. INJECTED_ENV carries
a fault of attncheck's catalogues (scripts/run_with_*_fault.py) into the child.
"""

from __future__ import annotations

from dataclasses import replace
import contextlib
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from typing import IO, Any, ContextManager, Optional

from conformance.collector import skip_final_collection
from conformance.evaluate import CONTEXT_LOST, evaluate_with_control, make_adapter
from conformance.gate import crashed
from reports.records import ParityRecord
from scenarios.case import Case

FAULT_ENV = "ATTNCHECK_FAULT_ABORT"
HANG_ENV = "ATTNCHECK_FAULT_HANG"
HANG_FAULT_S = 20.0
# With a case timeout, the longest a child may take to import and say READY (or the timeout, if longer): a fresh
# interpreter importing torch takes seconds on a loaded machine, which a short per-case timeout must not count.
CHILD_START_S = 60.0
READY = {"ready": True}  # the child's first line
# "module:NAME": a fault of one of attncheck's catalogues the parent runs under (scripts/fault_command.py sets it);
# the child injects it again with module.injected(NAME), or its records would be the library without it.
INJECTED_ENV = "ATTNCHECK_INJECTED"
# The child imports attncheck from the same tree as the parent, whatever its working directory.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def describe_exit(returncode: Optional[int]) -> str:
    if returncode is None:
        return "the child process stopped answering"
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name} ({-returncode})"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode} before answering"


class IsolatedEvaluator:
    """A child process that evaluates cases for one (target, device, seed, adapter options).

    `timeout_s` bounds one case (a hung kernel counts as a crash: the child is killed).
    """

    def __init__(
        self,
        target: str,
        device: str,
        seed: int,
        adapter_options: Optional[dict] = None,
        timeout_s: Optional[float] = None,
    ) -> None:
        self.config = {"target": target, "device": device, "seed": seed, "options": adapter_options or {}}
        self.timeout_s = timeout_s
        self._proc: Optional[subprocess.Popen[str]] = None
        self.starts = 0  # children started so far (tests and the summary read it)

    def _child(self) -> tuple[subprocess.Popen[str], str]:
        """The live child, else a fresh one; and why a fresh one does not serve ("" when it said READY)."""
        if self._proc is not None and self._proc.poll() is None:
            return self._proc, ""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")])))
        proc = self._proc = subprocess.Popen(
            [sys.executable, "-m", "conformance.isolate", json.dumps(self.config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=env,
        )
        self.starts += 1
        limit = None if self.timeout_s is None else max(self.timeout_s, CHILD_START_S)
        if self._read_line(proc, limit) is None:  # READY; "" when it died starting: the case's read sees it
            self._stop(proc)
            return proc, f"the child was not ready within {limit:g} s (--case-timeout); it was killed"
        return proc, ""

    def _stop(self, proc: subprocess.Popen[str]) -> None:
        proc.kill()
        proc.wait()
        self._proc = None

    def _read_line(self, proc: subprocess.Popen[str], limit: Optional[float] = None) -> Optional[str]:
        """The child's next line; "" when it ended without one, None when `limit` (default: timeout_s) passed."""
        assert proc.stdout is not None
        limit = self.timeout_s if limit is None else limit
        if limit is not None:
            ready, _, _ = select.select([proc.stdout], [], [], limit)
            if not ready:
                return None
        return proc.stdout.readline()

    def evaluate(self, case: Case, backend: str, base: dict[str, Any]) -> ParityRecord:
        proc, not_ready = self._child()
        if not_ready:
            return crashed(case, backend, f"{not_ready}, running {backend} on {case.id}", base)
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps({"case": case.to_json(), "backend": backend, "base": base}) + "\n")
            proc.stdin.flush()
            line = self._read_line(proc)
        except (BrokenPipeError, OSError):
            line = ""
        if line is None:  # a hung kernel does not return: stop the child now, not after _reap's grace
            self._stop(proc)
            how = f"no answer within {self.timeout_s:g} s (--case-timeout); the child was killed"
        elif not line:
            how = self._reap(proc)
        if not line:
            return crashed(case, backend, f"{how}, running {backend} on {case.id}", base)
        msg = json.loads(line)
        rec = ParityRecord(**msg["record"])
        if msg.get("context_lost"):
            rec = replace(rec, reason=f"{rec.reason}; {CONTEXT_LOST}" if rec.reason else CONTEXT_LOST)
            self._reap(proc)
        return rec

    def _reap(self, proc: subprocess.Popen[str]) -> str:
        """Wait for (or kill) a child that stopped answering; how it ended, in words."""
        try:
            code = proc.wait(timeout=10)
            how = describe_exit(code)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            how = "its output closed but it did not exit within 10 s; the child was killed"
        self._proc = None
        return how

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            assert proc.stdin is not None
            try:
                proc.stdin.close()
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()

    def __enter__(self) -> "IsolatedEvaluator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fault_wanted(backend: str, case_id: str, env: str = FAULT_ENV) -> bool:
    spec = os.environ.get(env, "")
    if not spec:
        return False
    want_b, _, want_c = spec.partition(":")
    return want_b in ("*", backend) and want_c in ("*", case_id)


def _serve(config: dict[str, Any], requests: IO[str], answers: IO[str]) -> None:
    from kernels import get_target
    from oracle.judge import Truth, truth
    from scenarios.tensors import materialize, validate_inputs

    target, device, seed = get_target(config["target"]), config["device"], config["seed"]
    adapters: dict[str, Any] = {}
    current: dict[str, Any] = {}  # one case's inputs and truth at a time, as the in-process run keeps them
    if os.environ.get(HANG_ENV) == "start":
        time.sleep(HANG_FAULT_S)
    answers.write(json.dumps(READY) + "\n")
    answers.flush()
    for line in requests:
        req = json.loads(line)
        case, backend = Case.from_json(req["case"]), req["backend"]
        if _fault_wanted(backend, case.id):
            os.abort()
        if _fault_wanted(backend, case.id, HANG_ENV):
            time.sleep(HANG_FAULT_S)
        if backend not in adapters:
            adapters[backend] = make_adapter(target, backend, device, config["options"])
        if current.get("id") != case.id:
            current.clear()
            current.update(id=case.id, inputs=materialize(case, seed, device))
            validate_inputs(current["inputs"])

        def get_truth() -> Truth:
            if "truth" not in current:
                current["truth"] = truth(current["inputs"])
            return current["truth"]  # type: ignore[no-any-return]

        rec, alive = evaluate_with_control(
            adapters[backend], case, current["inputs"], get_truth, req["base"], device, None
        )  # the parent names a loss
        lost = not alive
        answers.write(json.dumps({"record": asdict(rec), "context_lost": lost}, allow_nan=True) + "\n")
        answers.flush()
        if lost:
            return


def injected_from_environment() -> ContextManager[Any]:
    """The fault INJECTED_ENV names, injected for the block (its catalogue's `injected`); nothing without one."""
    spec = os.environ.get(INJECTED_ENV, "")
    if not spec:
        return contextlib.nullcontext()
    module, _, name = spec.partition(":")
    return importlib.import_module(module).injected(name)


def main(argv: list[str]) -> int:
    skip_final_collection()
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the library prints goes to stderr, never into the protocol
    with injected_from_environment():
        _serve(json.loads(argv[0]), sys.stdin, answers)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
