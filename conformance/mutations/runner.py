"""Apply one mutant to a private copy of the repository and run the tests that must kill it.

    python -m conformance.mutations.runner [--only NAME ...] [--workers N]

For each mutant: copy the package directories (COPIED) into a fresh temporary directory, make the
one edit, and run pytest on the mutant's `kills` in a new Python process whose working directory
and PYTHONPATH are that copy. The child imports the mutated module first and reports the file it
came from; a run counts only if that file lies inside the copy and holds the mutated text, so an
editable install of attncheck (or any other path entry) can never make a mutant "survive" by
testing the pristine code. A control run, the union of every mutant's kills on an unmutated copy,
must pass first: a kill is only meaningful if the same tests pass without the mutant.

A mutant is *killed* when pytest exits 1 (tests failed) and at least one of its named tests
failed in its call phase. Anything else that is not a clean pass (collection errors, usage
errors, a timeout, the module imported from elsewhere) is *broken*, never a kill.

Runs go two at a time (a thread pool driving subprocesses: the work is in the children, and the
parent may itself be a pytest-xdist worker that should not fork). Each child gets one intra-op
thread so two children share two cores without oversubscription.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, Optional, Sequence

from conformance.mutations.catalogue import ORACLE_MUTANTS, Mutant
from conformance.mutations.kinds import exact_kills
from conformance.mutations.errors import StaleMutant

# What a copy holds: everything the tests import, and the pytest configuration.
COPIED = (
    "oracle",
    "scenarios",
    "kernels",
    "routing",
    "conformance",
    "reports",
    "tests",
    "conftest.py",
    "pyproject.toml",
    "docs",
    "scripts",
)  # docs: the ledger tests read the H200 runs' records in docs/evidence; scripts: the fault scripts' tests
# What no mutant edits and no test writes: copied once per run and linked from each copy (make_copy).
SHARED = ("docs",)
_SHARING = threading.Lock()
# What a copy leaves out (deps.py's listings and tree hash leave out the same).
IGNORED = ("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache", "*.egg-info", "*.png", "*.html")
_IGNORED = shutil.ignore_patterns(*IGNORED)
VERDICT_DIR = "conformance/mutations/verdicts"  # the verdict cache's files (verdicts.py)
DEFAULT_WORKERS = 2
DEFAULT_TIMEOUT_S = 300.0
CONTROL = "control"

Status = Literal["killed", "survived", "broken", "passed", "failed"]

# Runs in the child: import the modules under test first (so we learn where they come from),
# then pytest in the same process, recording every test's outcome through a tiny plugin.
_CHILD = r"""
import importlib, json, sys
report_path, modules, *pytest_args = sys.argv[1:]
files = {m: importlib.import_module(m).__file__ for m in modules.split(",") if m}
import pytest

class Recorder:
    def __init__(self):
        self.outcomes = {}
    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.outcomes[report.nodeid] = "failed" if report.when == "call" else "error"
        elif report.skipped:
            self.outcomes[report.nodeid] = "skipped"
        elif report.when == "call":
            self.outcomes.setdefault(report.nodeid, "passed")
    def pytest_collectreport(self, report):
        if report.failed:
            self.outcomes[report.nodeid or "<collection>"] = "collection-error"

recorder = Recorder()
rc = int(pytest.main(pytest_args, plugins=[recorder]))
with open(report_path, "w") as f:
    json.dump({"files": files, "outcomes": recorder.outcomes, "rc": rc}, f)
sys.exit(rc)
"""


@dataclass(frozen=True)
class RunResult:
    """One run: a mutant (or the control) against its tests in its own copy."""

    name: str
    status: Status
    failed_tests: tuple[str, ...]
    outcomes: dict[str, str]
    module_files: dict[str, str]
    returncode: Optional[int]
    duration_s: float
    detail: str = ""

    @property
    def killed(self) -> bool:
        return self.status == "killed"

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class CatalogueResult:
    control: RunResult
    mutants: tuple[RunResult, ...]
    duration_s: float

    @property
    def ok(self) -> bool:
        """The control passed and every mutant was killed."""
        return self.control.status == "passed" and all(r.killed for r in self.mutants)

    def survivors(self) -> tuple[RunResult, ...]:
        return tuple(r for r in self.mutants if not r.killed)


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def make_copy(root: Path, dest: Path, shared: Optional[Path] = None) -> None:
    """Copy the repository's package directories and configuration into `dest` (less the verdict files: no
    run reads them, and a verdict must never depend on the file that holds it).

    With `shared` (a folder of the run's own), the folders no mutant edits (SHARED) are copied there once and
    each copy links to them: docs/ is three quarters of the repository's files, most of what copying it for
    each of hundreds of mutants cost (docs/mutation.md)."""
    verdicts = root / VERDICT_DIR

    def ignore(folder: str, names: list[str]) -> set[str]:
        left = set(_IGNORED(folder, names))
        return left | {n for n in names if Path(folder, n) == verdicts}

    dest.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        src = root / name
        if src.is_dir() and shared is not None and name in SHARED:
            with _SHARING:  # the engine's workers make copies at once
                if not (shared / name).is_dir():
                    shutil.copytree(src, shared / name, ignore=ignore)
            os.symlink(shared / name, dest / name, target_is_directory=True)
        elif src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        elif src.is_file():
            shutil.copy2(src, dest / name)


def apply_mutant(copy_root: Path, mutant: Mutant) -> None:
    """Replace the mutant's `old` by `new` in its file; StaleMutant unless `old` occurs exactly once."""
    target = copy_root / mutant.path
    if (copy_root / Path(mutant.path).parts[0]).is_symlink():
        raise ValueError(f"mutant {mutant.name} edits {mutant.path}, in a folder every copy shares ({SHARED})")
    text = target.read_text() if target.is_file() else ""
    n = text.count(mutant.old)
    if n != 1:
        raise StaleMutant(mutant.name, mutant.path, n)
    target.write_text(text.replace(mutant.old, mutant.new))


def _child_env(copy_root: Path) -> dict[str, str]:
    # Drop the parent's pytest/xdist variables: the child is a fresh session, not a worker.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    inherited = os.environ.get("PYTHONPATH")
    env["PYTHONPATH"] = str(copy_root) + (os.pathsep + inherited if inherited else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    return env


def imported_outside_copy(files: dict[str, str], modules: dict[str, str], copy_root: Path) -> Optional[str]:
    """Why the run does not count (a module under test came from elsewhere), or None when all came from the copy."""
    for module, rel in modules.items():
        got = files.get(module)
        if got is None or Path(got).resolve() != (copy_root / rel).resolve():
            return f"{module} was imported from {got}, not from the copy's {rel}"
    return None


def _run_tests(
    name: str, copy_root: Path, tests: Sequence[str], modules: dict[str, str], timeout_s: float
) -> RunResult:
    """Run pytest on `tests` inside `copy_root` and classify the outcome (control or mutant).

    `modules` maps each dotted module that must come from the copy to its path in the copy.
    """
    start = time.monotonic()
    report = copy_root / ".mutation-report.json"
    is_control = name == CONTROL
    args = [
        sys.executable,
        "-c",
        _CHILD,
        str(report),
        ",".join(modules),
        "-q",
        "-p",
        "no:cacheprovider",
        *([] if is_control else ["-x"]),
        *tests,
    ]
    try:
        proc = subprocess.run(
            args, cwd=copy_root, env=_child_env(copy_root), capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return RunResult(
            name, "broken", (), {}, {}, None, time.monotonic() - start, f"timed out after {timeout_s:.0f} s"
        )
    duration = time.monotonic() - start
    tail = (proc.stdout + proc.stderr)[-4000:]
    if not report.is_file():
        return RunResult(name, "broken", (), {}, {}, proc.returncode, duration, "no report from the child:\n" + tail)
    data = json.loads(report.read_text())
    outcomes: dict[str, str] = data["outcomes"]
    files: dict[str, str] = data["files"]
    failed = tuple(t for t, o in outcomes.items() if o == "failed")

    def result(status: Status, detail: str = "") -> RunResult:
        return RunResult(name, status, failed, outcomes, files, proc.returncode, duration, detail)

    foreign = imported_outside_copy(files, modules, copy_root)
    if foreign:
        return result("broken", foreign)
    if any(o in ("error", "collection-error") for o in outcomes.values()):
        return result("failed" if is_control else "broken", "errors outside a test call:\n" + tail)
    if is_control:
        missing = [t for t in tests if outcomes.get(t) != "passed"]
        if proc.returncode == 0 and not missing:
            return result("passed")
        return result("failed", f"not passed on the clean copy: {missing}\n" + tail)
    if proc.returncode == 0:
        return result("survived", "every named test passed under the mutant")
    if proc.returncode == 1 and any(t in tests for t in failed):
        return result("killed")
    return result("broken", f"pytest exit status {proc.returncode}:\n" + tail)


def run_mutant(mutant: Mutant, *, root: Optional[Path] = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> RunResult:
    """Apply `mutant` to a fresh copy and run its kills there (stopping at the first failure)."""
    with tempfile.TemporaryDirectory(prefix=f"attncheck-mut-{mutant.name}-") as tmp:
        copy_root = Path(tmp)
        make_copy(root or repo_root(), copy_root)
        try:
            apply_mutant(copy_root, mutant)
        except StaleMutant as e:
            return RunResult(mutant.name, "broken", (), {}, {}, None, 0.0, str(e))
        return _run_tests(mutant.name, copy_root, exact_kills(mutant.kills), {mutant.module: mutant.path}, timeout_s)


def run_control(
    mutants: Sequence[Mutant], *, root: Optional[Path] = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> RunResult:
    """Every mutant's kills on an unmutated copy: all must pass, with the modules from the copy."""
    tests = list(dict.fromkeys(t for m in mutants for t in exact_kills(m.kills)))
    modules = {m.module: m.path for m in mutants}
    with tempfile.TemporaryDirectory(prefix="attncheck-mut-control-") as tmp:
        copy_root = Path(tmp)
        make_copy(root or repo_root(), copy_root)
        return _run_tests(CONTROL, copy_root, tests, modules, timeout_s)


def run_catalogue(
    mutants: Sequence[Mutant] = ORACLE_MUTANTS,
    *,
    workers: int = DEFAULT_WORKERS,
    root: Optional[Path] = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> CatalogueResult:
    """The control and every mutant, `workers` runs at a time."""
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        control = pool.submit(run_control, mutants, root=root, timeout_s=timeout_s)
        runs = [pool.submit(run_mutant, m, root=root, timeout_s=timeout_s) for m in mutants]
        results = tuple(f.result() for f in runs)
        return CatalogueResult(control.result(), results, time.monotonic() - start)


def format_table(result: CatalogueResult) -> str:
    """One line per run: name, status, seconds, and the killing test (or the first line of why not)."""
    rows = [f"{'mutant':32} {'status':9} {'secs':>6}  killed by / detail"]
    for r in (result.control, *result.mutants):
        if r.killed:
            why = ", ".join(t.split("::", 1)[1] for t in r.failed_tests)
        else:
            why = (r.detail.splitlines() or [""])[0]
        rows.append(f"{r.name:32} {r.status:9} {r.duration_s:6.1f}  {why}")
    verdict = "all killed, control passed" if result.ok else f"{len(result.survivors())} not killed"
    rows.append(f"{len(result.mutants)} mutants in {result.duration_s:.1f} s: {verdict}")
    return "\n".join(rows)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.mutations.runner",
        description="Run the oracle mutant catalogue; exit 1 on a survivor.",
    )
    parser.add_argument(
        "--only", nargs="*", action="extend", default=None, help="mutant names to run (default: all; repeatable)"
    )
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    chosen = ORACLE_MUTANTS
    if args.only:
        unknown = sorted(set(args.only) - {m.name for m in ORACLE_MUTANTS})
        if unknown:
            parser.error(f"unknown mutant names {unknown}; known: {[m.name for m in ORACLE_MUTANTS]}")
        chosen = tuple(m for m in ORACLE_MUTANTS if m.name in args.only)
    result = run_catalogue(chosen, workers=args.workers)
    print(format_table(result))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "control": result.control.to_json(),
                    "mutants": [r.to_json() for r in result.mutants],
                    "duration_s": result.duration_s,
                },
                indent=2,
            )
        )
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
