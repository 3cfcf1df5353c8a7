"""`attncheck ledger verify`: run each ledger entry's evidence script against the installed library.

Every script (docs/evidence/, plain library calls) exits 1 when its defect shows and 0 when it does not.
Each runs in a process of its own, under a wall-clock limit (its children killed with it, as a process
group), in a temporary working directory, its stdout and stderr kept in DIR/<id>.txt. A bootstrap runs
it (`BOOTSTRAP`): an exception it lets escape, or an exit with a message, would read as exit 1 under
plain `python`, so the bootstrap turns them into UNCAUGHT_EXIT and names them.

An entry is `reproduces` (exit 1), `does-not-reproduce` (exit 0) or `could-not-run` (anything else, or
not run: the library not installed, an architecture the entry excludes, no GPU, no script). Whether that
counts against the ledger (the exit status) is `judge`'s rule, documented in docs/ledger.md.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from typing import IO, Callable, Optional, Sequence

from conformance import ledger_verify_files as files
from conformance.known_failures import KnownFailure, entries_by_id
from conformance.ledger_env import ROOT, Environment
from conformance.ledger_verify_files import COULD_NOT_RUN, DOES_NOT_REPRODUCE, REPRODUCES, Outcome, VerifyReport
from kernels._env import NOT_INSTALLED
from kernels.standin_label import VERSION_PREFIX
from scenarios.errors import InvalidValue

TARGETS = ("flashinfer", "torch")
DEFAULT_TIMEOUT_S = 300.0
UNCAUGHT_EXIT = 3
UNCAUGHT_MARK = "attncheck ledger verify: "
# Runs the script as `python SCRIPT ARGS` would (argv, sys.path[0], __main__), except that an escaping
# exception or a non-integer exit ends in UNCAUGHT_EXIT and one line naming it, never in exit 1.
BOOTSTRAP = f"""\
import os, runpy, sys, traceback
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(sys.argv[0])
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
    if e.code is None or isinstance(e.code, int):
        raise
    print(e.code, file=sys.stderr)
    print({UNCAUGHT_MARK!r} + "the script exited with a message, not a status", file=sys.stderr)
    sys.exit({UNCAUGHT_EXIT})
except BaseException as e:
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != sys.argv[0]:
        tb = tb.tb_next  # from the script's own frame on: the bootstrap's and runpy's are noise
    traceback.print_exception(type(e), e, tb or e.__traceback__)
    first = str(e).splitlines()[0] if str(e) else ""
    print({UNCAUGHT_MARK!r} + "the script raised " + type(e).__name__ + ": " + first[:300], file=sys.stderr)
    sys.exit({UNCAUGHT_EXIT})
"""

# Reasons (data): why an entry could not run, and what a status means for it.
NOT_INSTALLED_HERE = "{target} is not installed for {python}"
OTHER_ARCH = "the entry is for {archs}; this machine is {arch}"
NO_GPU = "no GPU on this machine ({arch}): the evidence scripts drive one"
NO_SCRIPT = "the script {script} does not exist"
TIMED_OUT = "timed out after {timeout:g} s (killed with its children)"
KILLED = "killed by signal {name} ({number})"
OWN_EXIT_2 = "exit 2: the script could not judge (a control failed, or it was called wrongly): its output says why"
OTHER_EXIT = "exit {code}: neither 1 (reproduces) nor 0 (does not)"
INTERRUPTED = "interrupted while it ran"
NOTE_NOT_HERE = "not judged here"
NOTE_BROKEN = "not judged: mend the script or the environment and run it again"
NOTE_HOLDS = "listed for {version}, and it shows"
NOTE_ADD = "shows on {version}, which the entry does not list: add it to `versions`"
NOTE_DROP = "listed for {version}, and it does not show: drop {version} from `versions` (or mend the script)"
NOTE_ABSENT = "not listed for {version}, and it does not show"


@dataclass(frozen=True)
class ScriptRun:
    exit_code: Optional[int]  # None: timed out
    seconds: float


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def select(ledger: Sequence[KnownFailure], ids: Sequence[str], target: Optional[str]) -> list[KnownFailure]:
    """The entries asked for, in ledger order: `ids` (all when none), of `target` (any when None)."""
    by_id = entries_by_id(ledger)
    for i in ids:
        if i not in by_id:
            near = difflib.get_close_matches(i, list(by_id), n=1)
            hint = f"did you mean {near[0]}?" if near else "the ids are in conformance/known_failures.py"
            raise InvalidValue("ID", i, "a ledger entry id", hint)
        if target is not None and by_id[i].target != target:
            raise InvalidValue(
                "ID", i, f"an entry of --target {target}", f"it is a {by_id[i].target} entry: drop --target or the id"
            )
    chosen = [e for e in ledger if (not ids or e.id in ids) and (target is None or e.target == target)]
    if not chosen:
        raise InvalidValue("--target", target, "a target with ledger entries", "drop --target")
    return chosen


def interpreter(python: Optional[str]) -> str:
    """The interpreter the scripts run under: --python resolved on PATH, or this one."""
    if python is None:
        return sys.executable
    found = shutil.which(python)
    if found is None:
        raise InvalidValue("--python", python, "an executable python", "pass a path to the interpreter under test")
    return found


def not_here(entry: KnownFailure, env: Environment) -> Optional[str]:
    """Why this machine cannot judge the entry at all (nothing against the ledger), or None."""
    version = env.versions.get(entry.target)
    if version in (None, NOT_INSTALLED) or str(version).startswith(VERSION_PREFIX):
        return NOT_INSTALLED_HERE.format(target=entry.target, python=env.python)
    if entry.archs and env.arch not in entry.archs:
        return OTHER_ARCH.format(archs=", ".join(entry.archs), arch=env.arch)
    if env.device is None:
        return NO_GPU.format(arch=env.arch)
    return None


def classify(run: ScriptRun, timeout_s: float, output: str) -> tuple[str, str]:
    """(status, reason) of a script that ran, from its exit status (and the bootstrap's line)."""
    code = run.exit_code
    if code is None:
        return COULD_NOT_RUN, TIMED_OUT.format(timeout=timeout_s)
    if code == 1:
        return REPRODUCES, "exit 1: the defect shows"
    if code == 0:
        return DOES_NOT_REPRODUCE, "exit 0: the defect does not show"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "?"
        return COULD_NOT_RUN, KILLED.format(name=name, number=-code)
    marks = [ln for ln in output.splitlines() if ln.startswith(UNCAUGHT_MARK)]
    if code == UNCAUGHT_EXIT and marks:
        return COULD_NOT_RUN, marks[-1][len(UNCAUGHT_MARK) :] + " (not a verdict)"
    if code == 2:
        return COULD_NOT_RUN, OWN_EXIT_2
    return COULD_NOT_RUN, OTHER_EXIT.format(code=code)


def judge(entry: KnownFailure, installed: Optional[str], status: str, here: bool) -> tuple[bool, str]:
    """(fails, note): whether an outcome counts against the exit status, and what it means for the entry.

    Fails: a script that could not run on a machine that could judge it (`here`), and an entry listed
    for the installed version whose defect does not show. Neither a defect showing on a version the entry
    does not list (a note: add it) nor an entry for other versions that does not show fails."""
    if status == COULD_NOT_RUN:
        return (True, NOTE_BROKEN) if here else (False, NOTE_NOT_HERE)
    listed = installed in entry.versions
    if status == REPRODUCES:
        return False, (NOTE_HOLDS if listed else NOTE_ADD).format(version=installed)
    return (True, NOTE_DROP.format(version=installed)) if listed else (False, NOTE_ABSENT.format(version=installed))


def _kill_group(proc: subprocess.Popen) -> None:  # type: ignore[type-arg]
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group run_script started: the script and its children
    except ProcessLookupError:
        pass
    proc.wait()


def run_script(python: str, script: str, args: Sequence[str], timeout_s: float, out: IO[bytes]) -> ScriptRun:
    """Run `script ARGS` under `python` through the bootstrap, its output into `out`, in a temporary cwd."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="attncheck-verify-") as cwd:
        proc = subprocess.Popen(
            [python, "-c", BOOTSTRAP, script, *args],
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        try:
            code: Optional[int] = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _kill_group(proc)  # a timeout or an interrupt, and children the script left behind
    return ScriptRun(code, time.monotonic() - started)


def _tail(path: str, skip: int) -> tuple[str, ...]:
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [ln.rstrip("\n") for ln in f][skip:]
    return tuple(ln[:300] for ln in lines if ln.strip())[-files.TAIL_LINES :]


def verify_one(entry: KnownFailure, env: Environment, out_dir: str, timeout_s: float, root: str) -> Outcome:
    script = os.path.join(root, entry.evidence)
    installed = env.versions.get(entry.target)
    base = Outcome(
        entry.id,
        entry.target,
        entry.versions,
        COULD_NOT_RUN,
        "",
        False,
        "",
        entry.evidence,
        entry.evidence_args,
        files.sha256_of(script),
        None if installed in (None, NOT_INSTALLED) else installed,
    )
    why = not_here(entry, env)
    if why is not None:
        return _with(base, entry, COULD_NOT_RUN, why, here=False)
    if base.sha256 is None:
        return _with(base, entry, COULD_NOT_RUN, NO_SCRIPT.format(script=entry.evidence), here=True)
    name = f"{entry.id}.txt"
    path = os.path.join(out_dir, name)
    date = now()
    with open(path, "wb") as out:
        out.write(files.output_header(base, env, date).encode())
        out.write(f"# command: {env.python} {entry.evidence} {' '.join(entry.evidence_args)}".rstrip().encode())
        out.write(f" (cwd: a temporary directory; at most {timeout_s:g} s)\n".encode())
        out.flush()
        run = run_script(env.python, script, entry.evidence_args, timeout_s, out)
    with open(path, encoding="utf-8", errors="replace") as f:
        status, reason = classify(run, timeout_s, f.read())
    tail = _tail(path, 2)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"# {status}: {reason} ({run.seconds:.1f} s)\n")
    done = _with(base, entry, status, reason, here=True)
    return replace(done, exit_code=run.exit_code, seconds=run.seconds, output=name, tail=tail)


def _with(base: Outcome, entry: KnownFailure, status: str, reason: str, here: bool) -> Outcome:
    fails, note = judge(entry, base.installed, status, here)
    return replace(base, status=status, reason=reason, fails=fails, note=note)


def _interrupted(entry: KnownFailure) -> Outcome:
    """The entry an interrupt stopped: not judged, and counted against the run."""
    e = entry
    return Outcome(
        e.id, e.target, e.versions, COULD_NOT_RUN, INTERRUPTED, True, NOTE_BROKEN, e.evidence, e.evidence_args
    )


def verify(
    entries: Sequence[KnownFailure],
    env: Environment,
    out_dir: str,
    timeout_s: float,
    command: list[str],
    root: str = ROOT,
    on_outcome: Optional[Callable[[Outcome], None]] = None,
) -> VerifyReport:
    """Judge every entry in turn, writing the JSON and markdown after each (an interrupt keeps what ran:
    the entry it stopped in is recorded as could-not-run, and the report as unfinished). The entries of an
    earlier run into `out_dir` on the same libraries and machine that this one does not ask for are kept."""
    report = VerifyReport(env, command, now(), timeout_s)
    before = files.earlier(out_dir, env)
    if before is not None:
        asked = {e.id for e in entries}
        report.outcomes = [o for o in before.outcomes if o.id not in asked]
        report.kept_from = (before.kept_from or before.started) if report.outcomes else None
    files.write(out_dir, report)
    for entry in entries:
        try:
            outcome = verify_one(entry, env, out_dir, timeout_s, root)
        except KeyboardInterrupt:
            report.outcomes.append(_interrupted(entry))
            files.write(out_dir, report)
            raise
        report.outcomes.append(outcome)
        files.write(out_dir, report)
        if on_outcome is not None:
            on_outcome(outcome)
    report.finished = now()
    files.write(out_dir, report)
    return report
