"""`attncheck mutate`: run a target's mutant catalogue and build its kill matrix.

1. Rows: the tests the runnable mutants of the catalogue name, plus the budget's conformance
   tests (`--only` picks which mutants run against them).
2. Control and coverage in one pass: every row on a clean copy, sharded over the workers, under
   coverage with a context per test. Every row must pass (or skip: a declined case may become a
   failure under a mutant); otherwise the run stops there.
3. Each mutant in a fresh process (launcher.py) on its own copy, against the rows that executed
   its lines (selection.py) and the tests it names, `workers` at a time. A record per mutant is
   appended to mutants.jsonl the moment it exists, so an interrupted run keeps what it measured.
4. Optionally (compare_whole_suite) every mutant again against every row: the wall time of the
   whole-suite strategy, measured in the same run, and whether selection missed a kill.

With a verdict file (verdicts.py), a mutant whose key matches keeps its cached verdict and does
not run; when every mutant's and every row's key matches and the cached kills prove every row,
nothing runs at all. The refreshed verdicts go to verdicts.json in the output directory.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from conformance.mutations import selection as sel
from conformance.mutations.deps import PKG, TREE, Observed, parse_imports
from conformance.mutations.errors import StaleMutant
from conformance.mutations.killmatrix import JSONL, KILLING_OUTCOMES, KillMatrix, MutantResult, classify, outcome_counts
from conformance.mutations.kinds import AnyMutant, Mutant, PackageMutant, exact_kills, named
from conformance.mutations.launcher import ExecLauncher, Exit, ForkServerLauncher, Job, child_env, make_launcher
from conformance.mutations.runner import apply_mutant, imported_outside_copy, make_copy, repo_root
from conformance.mutations.targets import catalogue, conformance_options, conformance_rows
from conformance.mutations.verdicts import FILE_NAME, Keyer, Verdicts
from conformance.progress import pace

CHILD = "conformance/mutations/child.py"
DEFAULT_TIMEOUT_S = 900.0
# Measured only where mutants edit: a copy's packages, less the harness of mutation itself.
COVERED = ("oracle", "scenarios", "kernels", "routing", "conformance", "reports")


@dataclass(frozen=True)
class Settings:
    target: str
    device: str
    budget: str
    out_dir: Path
    workers: int = 2
    isolation: str = "forkserver"
    selection: str = "coverage"  # or "all": every row for every mutant
    strategy: str = "complete"  # or "first-kill": stop each mutant at its first kill, then cover the rows
    compare_whole_suite: bool = False
    only: Optional[tuple[str, ...]] = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    seed: int = 0
    # A catalogue of one's own instead of the target's, and whether the conformance suite joins
    # the rows (tests of the harness run one class of mutants on its named tests alone).
    mutants: Optional[tuple[AnyMutant, ...]] = None
    conformance: bool = True
    # The verdict cache (verdicts.py): the file read (None: none), whether to ignore it (every mutant
    # runs), and whether to write the refreshed verdicts over it.
    verdicts: Optional[Path] = None
    fresh: bool = False
    update_verdicts: bool = False


def skip_reason(m: AnyMutant, device: str) -> Optional[str]:
    """Why `m` cannot run here, or None."""
    if m.needs == "cuda" and device == "cpu":
        return "needs a CUDA device: run `attncheck mutate --target flashinfer --device cuda` on a GPU runner"
    if isinstance(m, PackageMutant):
        import importlib.util

        if importlib.util.find_spec(m.package) is None:
            return f"{m.package} is not installed here"
    return None


def rows_for(mutants: Sequence[AnyMutant], conformance: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([t for m in mutants for t in exact_kills(m.kills)] + list(conformance)))


def site(m: AnyMutant, root: Path) -> list[sel.Site]:
    """The lines whose tests can kill `m` (see selection.py)."""
    if isinstance(m, Mutant):
        text = (root / m.path).read_text(encoding="utf-8")
        return [sel.site_of(m.path, text, sel.text_lines(text, m.old))]
    if isinstance(m, PackageMutant):
        import importlib.util

        spec = importlib.util.find_spec(m.package)
        assert spec is not None and spec.submodule_search_locations
        path = str(Path(list(spec.submodule_search_locations)[0]) / m.path)
        text = Path(path).read_text(encoding="utf-8")
        return [sel.site_of(path, text, sel.text_lines(text, m.old))]
    out = []
    for path, anchor in m.sites:
        text = (root / path).read_text(encoding="utf-8")
        spans = sel.text_lines(text, anchor, all_occurrences=True)
        if not spans:
            raise StaleMutant(m.name, path, 0)
        out.append(sel.site_of(path, text, spans))
    return out


class _Sink:
    """mutants.jsonl, appended under a lock, one flushed line per record."""

    def __init__(self, path: Path) -> None:
        self._f = open(path, "w", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: dict) -> None:
        with self._lock:
            self._f.write(json.dumps(record) + "\n")
            self._f.flush()

    def close(self) -> None:
        self._f.close()


class Mutation:
    """One `attncheck mutate` run."""

    def __init__(self, s: Settings, progress: Callable[[str], None] = print) -> None:
        self.s = s
        self.progress = progress
        self.root = repo_root()
        self.opts = conformance_options(s.target, s.device, s.seed)
        self._tmp = Path(tempfile.mkdtemp(prefix="attncheck-mutate-"))
        self.env = child_env()
        self._launcher: "Optional[ForkServerLauncher | ExecLauncher]" = None
        self._cover_cpu = 0.0
        self._reads: dict[str, set[str]] = {}
        self._spawns: set[str] = set()
        # Per mutant, the covering runs that added kills: (the tests of the run, those that ran).
        self._covered: dict[str, list[tuple[list[str], list[str]]]] = {}

    @property
    def launcher(self) -> "ForkServerLauncher | ExecLauncher":
        """Started on first use: a run whose every verdict is cached starts no process."""
        if self._launcher is None:
            self._launcher = make_launcher(self.s.isolation, self.env)
        return self._launcher

    # ---- one process ---------------------------------------------------------------------------
    def _launch(
        self,
        name: str,
        copy_root: Path,
        tests: Sequence[str],
        *,
        modules: dict[str, str],
        coverage_file: Optional[Path] = None,
        patch: Optional[dict] = None,
        first_kill: bool = False,
        reads: bool = False,
    ) -> tuple[Exit, dict, str]:
        run_dir = self._tmp / "runs" / name
        run_dir.mkdir(parents=True, exist_ok=True)
        job = {
            "report": str(run_dir / "report.json"),
            "modules": modules,
            "pytest_args": [
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "_hypothesis_pytestplugin",
                "-W",
                "ignore::pytest.PytestAssertRewriteWarning",
                "--continue-on-collection-errors",
                *(["-x"] if first_kill else []),
                *self.opts,
            ],
            "tests": list(tests),
            "coverage": None,
            "package_patch": None,
            "torch_patch": None,
            "reads": {"root": str(copy_root)} if reads and coverage_file is not None else None,
        }
        if coverage_file is not None:
            job["coverage"] = {
                "data_file": str(coverage_file),
                "include": [f"{copy_root}/{p}/*" for p in COVERED],
                "omit": [f"{copy_root}/conformance/mutations/*"],
            }
        if patch:
            job.update(patch)
        (run_dir / "job.json").write_text(json.dumps(job), encoding="utf-8")
        env = dict(self.env, PYTHONPATH=f"{copy_root}:{self.env.get('PYTHONPATH', '')}".rstrip(":"))
        log = run_dir / "log.txt"
        exit_ = self.launcher.run(
            Job(
                argv=(str(copy_root / CHILD), str(run_dir / "job.json")),
                cwd=copy_root,
                path=(str(copy_root),),
                env=env,
                log=log,
                timeout_s=self.s.timeout_s,
            )
        )
        report = {}
        if Path(job["report"]).is_file():
            report = json.loads(Path(job["report"]).read_text(encoding="utf-8"))
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:] if log.is_file() else ""
        return exit_, report, tail

    # ---- control and coverage ------------------------------------------------------------------
    def control(self, rows: list[str], with_coverage: bool) -> tuple[dict, Optional[sel.CoverageMap]]:
        clean = self._tmp / "clean"
        make_copy(self.root, clean, self._tmp / "shared")
        shards = _shards(rows, self.s.workers)
        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(shards) or 1) as pool:
            futs = [
                pool.submit(
                    self._launch,
                    f"control-{i}",
                    clean,
                    shard,
                    modules={},
                    coverage_file=(self._tmp / f"coverage-{i}") if with_coverage else None,
                    reads=with_coverage,
                )
                for i, shard in enumerate(shards)
            ]
            got = [f.result() for f in futs]
        outcomes: dict[str, str] = {}
        messages: dict[str, str] = {}
        tails = []
        cpu = 0.0
        for exit_, report, tail in got:
            cpu += exit_.cpu_s or 0.0
            outcomes.update(report.get("outcomes", {}))
            messages.update(report.get("messages", {}))
            seen = report.get("reads") or {}
            for reader, paths in seen.get("data", {}).items():
                self._reads.setdefault(reader, set()).update(paths)
            for reader, dirs in seen.get("lists", {}).items():
                self._reads.setdefault(reader, set()).update("dir:" + d for d in dirs)
            self._spawns.update(seen.get("spawns", []))
            if exit_.timed_out or not report:
                tails.append(tail)
        bad = {t: outcomes.get(t, "not-run") for t in rows if outcomes.get(t) not in ("passed", "skipped")}
        bad.update({t: o for t, o in outcomes.items() if o == "collection-error"})
        control = {
            "record": "control",
            "passed": not bad,
            "failed": bad,
            "tests": len(rows),
            "why": {t: messages[t] for t in bad if t in messages},
            "skipped": sum(1 for t in rows if outcomes.get(t) == "skipped"),
            "skipped_tests": sorted(t for t in rows if outcomes.get(t) == "skipped"),
            "duration_s": time.monotonic() - start,
            "cpu_s": cpu,
            "detail": "\n".join(tails)[-3000:],
        }
        cov = None
        if with_coverage and not bad:
            cov = sel.CoverageMap.read([self._tmp / f"coverage-{i}" for i in range(len(shards))], clean)
        return control, cov

    # ---- one mutant ----------------------------------------------------------------------------
    def select(self, m: AnyMutant, rows: list[str], cov: Optional[sel.CoverageMap]) -> list[str]:
        if cov is None or (isinstance(m, Mutant) and m.at_import):  # an import refusal reaches every importer
            return list(rows)
        chosen = set(exact_kills(m.kills))
        for st in site(m, self.root):
            chosen |= sel.tests_for(cov.contexts(st), rows, by_case=st.file.startswith(sel.CACHED_WORK))
        return [r for r in rows if r in chosen]

    def run_mutant(self, m: AnyMutant, tests: list[str], tag: str = "", first_kill: bool = False) -> MutantResult:
        """A fresh copy with the mutant applied, and a fresh process per pass over it.

        complete: one pass over `tests`. first_kill: a pass over the named tests only, stopping
        at the first failure (collecting few test modules keeps it cheap); only a mutant that
        survives it gets a second pass over every selected test, named ones first.
        """
        start = time.monotonic()
        if first_kill:
            tests = sorted(tests, key=lambda t: 0 if t in m.kills else 1 if named(t, m.kills) else 2)
        passes = [tests]
        if first_kill:
            passes = [[t for t in tests if t in m.kills], tests] if any(t in m.kills for t in tests) else [tests]
        res = MutantResult(m.name, m.kind, "broken", list(m.kills), selected=list(tests))
        name = f"{m.name}{tag}"
        copy_root = self._tmp / "copies" / name
        try:
            make_copy(self.root, copy_root, self._tmp / "shared")
            modules, patch = {}, None
            if isinstance(m, Mutant):
                apply_mutant(copy_root, m)
                try:
                    compile((copy_root / m.path).read_text(encoding="utf-8"), m.path, "exec")
                except SyntaxError as e:
                    res.detail = f"the mutated {m.path} does not compile: {e}"
                    return res
                modules = {m.module: m.path}
            elif isinstance(m, PackageMutant):
                patch = {
                    "package_patch": {
                        "package": m.package,
                        "path": m.path,
                        "module": m.module,
                        "old": m.old,
                        "new": m.new,
                    }
                }
            else:
                patch = {"torch_patch": {"target": m.target, "fault": m.fault}}
            res.cpu_s = 0.0
            for i, run_tests in enumerate(passes):
                res.selected = list(run_tests)
                exit_, report, tail = self._launch(
                    f"{name}-{i}", copy_root, run_tests, modules=modules, patch=patch, first_kill=first_kill
                )
                res.detail = _verdict(m, res, exit_, report, tail, copy_root)
                res.pass_tests, res.ran = list(run_tests), [t for t in run_tests if t in report.get("outcomes", {})]
                res.cpu_s += exit_.cpu_s or 0.0
                if res.status in ("killed", "broken"):
                    break
            res.selected = list(tests)
        except StaleMutant as e:
            res.detail = str(e)
        finally:
            res.duration_s = time.monotonic() - start
            shutil.rmtree(copy_root, ignore_errors=True)
        return res

    # ---- the whole run -------------------------------------------------------------------------
    def run(self) -> KillMatrix:
        s = self.s
        whole = s.mutants if s.mutants is not None else catalogue(s.target)
        skipped = {m.name: skip_reason(m, s.device) for m in whole}
        every = [m for m in whole if skipped[m.name] is None]
        # The budget's tests come from the whole runnable catalogue; --only picks the mutants run on them.
        rows = rows_for(every, conformance_rows(s.target, s.device, s.budget, s.seed) if s.conformance else [])
        mutants = [m for m in whole if s.only is None or m.name in s.only]
        runnable = [m for m in mutants if skipped[m.name] is None]
        t_keys = time.monotonic()
        keyer, committed = self._verdicts_in()  # before anything is written: a corrupt file raises here
        valid = committed.valid_mutants(keyer, every) if committed is not None and keyer is not None else {}
        valid_rows = committed.valid_rows(keyer, rows) if committed is not None and keyer is not None else {}
        verdicts_s = time.monotonic() - t_keys
        s.out_dir.mkdir(parents=True, exist_ok=True)
        sink = _Sink(s.out_dir / JSONL)
        results: dict[str, MutantResult] = {}
        for m in mutants:
            if skipped[m.name]:
                results[m.name] = MutantResult(m.name, m.kind, "skipped", list(m.kills), detail=str(skipped[m.name]))
                sink.write(results[m.name].to_json())
        timing: dict[str, Optional[float]] = {
            "control_s": None,
            "mutants_s": None,
            "mutants_cpu_s": None,
            "selected_s": None,
            "selected_cpu_s": None,
            "whole_suite_s": None,
            "whole_suite_cpu_s": None,
            "verdicts_s": None,
        }
        control: dict = {"passed": False}
        interrupted = False
        observed: Optional[Observed] = None
        if keyer is not None:
            timing["verdicts_s"] = verdicts_s
        try:
            self.progress(
                f"attncheck mutate --target {s.target} --device {s.device} --budget {s.budget}: "
                f"{len(runnable)} mutants ({len(mutants) - len(runnable)} skipped), {len(rows)} tests, "
                f"{s.workers} workers, {s.isolation}"
            )
            if committed is not None:
                self.progress(
                    f"  verdicts: {len(valid)} of {len(every)} mutants and {len(valid_rows)} of {len(rows)} "
                    f"tests unchanged since {s.verdicts}"
                )
            elif keyer is not None and s.verdicts is not None and not s.fresh:
                self.progress(f"  verdicts: none at {s.verdicts}: every mutant runs")
            t0 = time.monotonic()
            if committed is not None and self._all_cached(runnable, every, rows, valid, valid_rows):
                control = {
                    "record": "control",
                    "passed": True,
                    "cached": True,
                    "failed": {},
                    "tests": len(rows),
                    "why": {},
                    "skipped_tests": sorted(r for r in rows if valid_rows[r]["outcome"] == "skipped"),
                    "duration_s": 0.0,
                    "cpu_s": 0.0,
                    "detail": "",
                }
                control["skipped"] = len(control["skipped_tests"])
                sink.write(control)
                for m in runnable:
                    results[m.name] = _cached(m, valid[m.name])
                    sink.write(results[m.name].to_json())
                self.progress("  every key matches: nothing runs (--fresh runs every mutant)")
            else:
                control, cov = self.control(rows, with_coverage=s.selection == "coverage")
                timing["control_s"] = control["duration_s"]
                sink.write(control)
                self.progress(
                    f"  control{' + coverage' if cov else ''}: {len(rows)} tests in "
                    f"{control['duration_s']:.1f} s, {'passed' if control['passed'] else 'FAILED'}"
                )
                if cov is not None and keyer is not None:
                    observed = Observed(self.root, cov.lines, self._reads, self._spawns, rows)
                if control["passed"]:
                    t1 = time.monotonic()
                    first = s.strategy == "first-kill"
                    for m in runnable:
                        if m.name in valid:
                            results[m.name] = _cached(m, valid[m.name])
                            sink.write(results[m.name].to_json())
                    todo = [m for m in runnable if m.name not in valid]
                    for done, r in enumerate(self._each([(m, self.select(m, rows, cov), "", first) for m in todo]), 1):
                        results[r.name] = r
                        sink.write(r.to_json())
                        self.progress(
                            f"  {r.status:9s} {r.name} ({len(r.selected)} tests, {r.duration_s:.1f} s)"
                            + (f": {r.detail.splitlines()[0][:160]}" if r.status != "killed" else "")
                            + f"  [{done}/{len(todo)}, {pace(done, len(todo), time.monotonic() - t1)}]"
                        )
                    if first:
                        self._cover(runnable, rows, cov, results, sink)
                    timing["mutants_s"] = time.monotonic() - t1
                    timing["mutants_cpu_s"] = sum(r.cpu_s or 0.0 for r in results.values())
                    timing["selected_cpu_s"] = (control.get("cpu_s") or 0.0) + timing["mutants_cpu_s"] + self._cover_cpu
                    timing["selected_s"] = time.monotonic() - t0
                    if s.compare_whole_suite:
                        timing["whole_suite_s"], timing["whole_suite_cpu_s"] = self._whole_suite(
                            runnable, rows, results, sink
                        )
        except KeyboardInterrupt:
            interrupted = True
            self.progress("attncheck mutate: interrupted; the records written so far are kept")
        finally:
            if self._launcher is not None:
                self._launcher.close()
            sink.close()
            shutil.rmtree(self._tmp, ignore_errors=True)
        if keyer is not None:
            refreshed = self._refresh(keyer, committed, valid, valid_rows, every, rows, results, control, observed)
            refreshed.write(s.out_dir / FILE_NAME, keyer)
            if s.update_verdicts and s.verdicts is not None:
                refreshed.write(s.verdicts, keyer)
                self.progress(f"  verdicts written to {s.verdicts}")
        ordered = [results[m.name] for m in mutants if m.name in results]
        km = KillMatrix(
            s.target,
            s.device,
            s.budget,
            s.isolation,
            s.selection,
            rows,
            ordered,
            {k: v for k, v in control.items() if k != "record"},
            timing,
            interrupted,
            subset=s.only is not None,
            strategy=s.strategy,
        )
        km.write(s.out_dir)
        return km

    # ---- the verdict cache ---------------------------------------------------------------------
    def key_settings(self) -> dict:
        """What a run's settings bring to every key: the pytest options, the budget, the strategy, the rows."""
        return {
            "options": self.opts,
            "budget": self.s.budget,
            "strategy": self.s.strategy,
            "conformance": self.s.conformance,
        }

    def _verdicts_in(self) -> tuple[Optional[Keyer], Optional[Verdicts]]:
        """The keyer (None without coverage selection: keys rest on the coverage run) and the verdicts read."""
        s = self.s
        if s.selection != "coverage":
            return None, None
        keyer = Keyer(self.root, self.key_settings())
        if s.verdicts is None or s.fresh or s.compare_whole_suite or not s.verdicts.is_file():
            return keyer, None
        return keyer, Verdicts.load(s.verdicts)

    def _all_cached(
        self,
        runnable: list[AnyMutant],
        every: list[AnyMutant],
        rows: list[str],
        valid: dict[str, dict],
        valid_rows: dict[str, dict],
    ) -> bool:
        """Every mutant to run and every row matches its key, and (the whole catalogue) the cached kills prove
        every row the control did not skip."""
        if any(m.name not in valid for m in runnable) or any(r not in valid_rows for r in rows):
            return False
        if self.s.only is not None:
            return True
        killed = {t for m in every for t in valid[m.name]["killed_by"]}
        return all(r in killed for r in rows if valid_rows[r]["outcome"] != "skipped")

    def _own(self, m: AnyMutant, observed: Observed) -> set[str]:
        """What a mutant brings to its key beyond its tests' files: the file it edits and what its edit newly
        imports (with everything that imports); a torch patch's calling files and fault; a package's file."""
        if isinstance(m, Mutant):
            text = (self.root / m.path).read_text(encoding="utf-8")
            added = (
                parse_imports(self.root, m.path, text.replace(m.old, m.new, 1)).all()
                - parse_imports(self.root, m.path, text).all()
            )
            return {m.path} | observed.graph.closure(added)
        if isinstance(m, PackageMutant):
            return {PKG + site(m, self.root)[0].file}
        return {p for p, _ in m.sites} | {"conformance/mutations/torch_faults.py"}

    def _groups(self, out: Verdicts, observed: Observed, collected: Sequence[str], ran: Sequence[str]) -> list[str]:
        """The dependency groups of a process given `collected` (their files collected) of which `ran` ran."""
        gids = {out.group(observed.startup)}
        gids |= {out.group(observed.group(f)) for f in {t.split("::", 1)[0] for t in collected}}
        if any(t in observed.opaque for t in ran):
            gids.add(out.group([TREE]))
        return sorted(gids)

    def _decided(self, out: Verdicts, observed: Observed, name: str, res: Optional[MutantResult]) -> set[str]:
        """The groups of the runs a verdict rests on: the pass that killed it (with -x, none of its tests after
        the first failure ran) and every covering run that added a kill."""
        runs = ([(res.pass_tests, res.ran)] if res is not None and not res.cached else []) + self._covered.get(name, [])
        return set().union(*(self._groups(out, observed, c, r) for c, r in runs)) if runs else set()

    def _refresh(
        self,
        keyer: Keyer,
        committed: Optional[Verdicts],
        valid: dict[str, dict],
        valid_rows: dict[str, dict],
        every: list[AnyMutant],
        rows: list[str],
        results: dict[str, MutantResult],
        control: dict,
        observed: Optional[Observed],
    ) -> Verdicts:
        """The verdicts as of this run: entries measured now under their new keys, cached ones as they were."""
        out = Verdicts(keyer.settings, keyer.env, keyer.machinery)
        if observed is not None and control.get("passed"):
            skipped = set(control.get("skipped_tests", []))
            for r in rows:
                gids = self._groups(out, observed, [r], [r])
                out.rows[r] = {"key": "", "outcome": "skipped" if r in skipped else "passed", "deps": gids}
                out.rows[r]["key"] = keyer.row_key(r, out.deps_of(out.rows[r]))
        elif committed is not None:
            for r, e in valid_rows.items():
                out.keep("rows", r, e, committed)
        for m in every:
            res = results.get(m.name)
            if res is not None and not res.cached and res.status == "killed" and observed is not None:
                gids = sorted(self._decided(out, observed, m.name, res) | {out.group(self._own(m, observed))})
                entry = {
                    "key": "",
                    "status": "killed",
                    "killed_by": list(res.killed_by),
                    "deps": gids,
                    "tests": len(res.selected),
                    "duration_s": round(res.duration_s, 1),
                }
                entry["key"] = keyer.mutant_key(m, out.deps_of(entry))
                out.mutants[m.name] = entry
            elif m.name in valid and committed is not None:
                out.keep("mutants", m.name, valid[m.name], committed)
                added = self._covered.get(m.name)
                if added and observed is not None and res is not None:
                    entry = out.mutants[m.name]
                    entry["deps"] = sorted(set(entry["deps"]) | self._decided(out, observed, m.name, None))
                    entry["killed_by"] = list(res.killed_by)
                    entry["key"] = keyer.mutant_key(m, out.deps_of(entry))
        return out

    def _each(self, runs: list[tuple[AnyMutant, list[str], str, bool]]) -> Iterator[MutantResult]:
        """run_mutant over `runs`, `workers` at a time, yielding results as they finish.

        On an interrupt the running processes are killed and the queued ones never start.
        """
        pool = ThreadPoolExecutor(max_workers=self.s.workers)
        try:
            futs: list[Future] = [pool.submit(self.run_mutant, *r) for r in runs]
            for f in as_completed(futs):
                yield f.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            kill = getattr(self.launcher, "kill_all", None)
            if kill is not None:
                kill()

    def _cover(
        self,
        runnable: list[AnyMutant],
        rows: list[str],
        cov: Optional[sel.CoverageMap],
        results: dict[str, MutantResult],
        sink: _Sink,
    ) -> None:
        """First-kill runs leave most cells unmeasured: find a killing mutant for every row not yet seen failing.

        Greedy set cover over the coverage selections: each round runs, `workers` at once, the
        mutants that reach the most unproven rows (disjoint within the round), against those rows.
        A row is tried under each mutant at most once, first under the mutants that name it; a
        row no mutant kills is reported.
        """
        remaining = [r for r in rows if not any(r in x.killed_by for x in results.values())]
        reach = {m.name: set(self.select(m, rows, cov)) for m in runnable}
        tried: dict[str, set[str]] = {r: set() for r in remaining}
        rounds = 0
        while remaining:
            picks: list[tuple[AnyMutant, list[str], str, bool]] = []
            claimed: set[str] = set()
            for _ in range(self.s.workers):
                best: Optional[tuple[AnyMutant, list[str]]] = None
                best_key = (-1, -1)
                for m in runnable:
                    rs = [r for r in remaining if r not in claimed and r in reach[m.name] and m.name not in tried[r]]
                    key = (sum(named(r, m.kills) for r in rs), len(rs))  # expected killers first
                    if rs and key > best_key:
                        best, best_key = (m, rs), key
                if best is None:
                    break
                claimed |= set(best[1])
                for r in best[1]:
                    tried[r].add(best[0].name)
                picks.append((best[0], best[1], f"-cover{rounds}", False))
            if not picks:
                break
            rounds += 1
            for r in self._each(picks):
                got = [t for t in r.killed_by if t not in results[r.name].killed_by]
                results[r.name].killed_by += got
                if got:
                    self._covered.setdefault(r.name, []).append((r.pass_tests, r.ran))
                remaining = [t for t in remaining if t not in got]
                self._cover_cpu += r.cpu_s or 0.0
                sink.write(
                    {
                        "record": "cover",
                        "name": r.name,
                        "tests": len(r.selected),
                        "killed_by": got,
                        "duration_s": r.duration_s,
                        "cpu_s": r.cpu_s,
                    }
                )
                self.progress(f"  cover: {r.name} kills {len(got)} of {len(r.selected)} rows not yet proven")

    def _whole_suite(
        self, runnable: list[AnyMutant], rows: list[str], results: dict[str, MutantResult], sink: _Sink
    ) -> tuple[float, float]:
        """Every mutant against every row (no coverage run): the strategy selection replaces. (wall, CPU)"""
        t = time.monotonic()
        cpu = 0.0
        first = self.s.strategy == "first-kill"
        for r in self._each([(m, list(rows), "-whole", first) for m in runnable]):
            sel_r = results[r.name]
            missed = sorted(set(r.killed_by) - set(sel_r.killed_by))
            cpu += r.cpu_s or 0.0
            sink.write(
                {
                    "record": "whole-suite",
                    "name": r.name,
                    "status": r.status,
                    "tests": len(r.selected),
                    "killed_by": len(r.killed_by),
                    "duration_s": r.duration_s,
                    "cpu_s": r.cpu_s,
                    "same_verdict": r.status == sel_r.status,
                    "kills_selection_missed": missed,
                }
            )
            self.progress(
                f"  whole suite: {r.status:9s} {r.name} ({r.duration_s:.1f} s"
                + (f", selection missed {len(missed)} killing tests" if missed else "")
                + ")"
            )
        return time.monotonic() - t, cpu


def _cached(m: AnyMutant, entry: dict) -> MutantResult:
    return MutantResult(
        m.name,
        m.kind,
        "killed",
        list(m.kills),
        killed_by=list(entry["killed_by"]),
        cpu_s=0.0,
        detail="cached: its key matches the verdict file",
        cached=True,
    )


def _shards(rows: list[str], n: int) -> list[list[str]]:
    """Rows split into at most n shards, whole files together (their module fixtures run once)."""
    by_file: dict[str, list[str]] = {}
    for r in rows:
        by_file.setdefault(r.split("::", 1)[0], []).append(r)
    shards: list[list[str]] = [[] for _ in range(max(1, min(n, len(by_file))))]
    for f in sorted(by_file, key=lambda k: -len(by_file[k])):
        min(shards, key=len).extend(by_file[f])
    order = {r: i for i, r in enumerate(rows)}
    return [sorted(s, key=order.__getitem__) for s in shards if s]


def _verdict(m: AnyMutant, res: MutantResult, exit_: Exit, report: dict, tail: str, copy_root: Path) -> str:
    """Fill res from a finished run; returns the detail line."""
    if exit_.timed_out:
        return "timed out; the whole process group was killed"
    if not report:
        return f"no report from the run (exit status {exit_.returncode} {exit_.error}):\n{tail}"
    patch = report.get("patch") or {}
    if "error" in patch:
        return f"stale: {patch['error']}"
    if isinstance(m, Mutant):
        foreign = imported_outside_copy({k: v for k, v in report["files"].items() if v}, {m.module: m.path}, copy_root)
        if foreign:
            return foreign
        if report["import_errors"] and not m.at_import:
            return f"the mutated module does not import: {report['import_errors'][m.module]}"
    outcomes: dict[str, str] = dict(report.get("outcomes", {}))
    broken = [k for k, o in outcomes.items() if o == "collection-error"]
    if broken and not (isinstance(m, Mutant) and m.at_import):
        return f"collection errors in {broken}:\n{tail}"
    for mod in broken:  # an at-import mutant: every selected test of a module that failed to collect
        for t in res.selected:
            if t.split("::", 1)[0] == mod:
                outcomes[t] = "error"
    res.status, res.killed_by, detail = classify(res.kills, res.selected, outcomes)
    res.outcomes = outcome_counts(res.selected, outcomes)
    if res.status == "broken" and exit_.returncode not in (0, 1):
        detail += f" (pytest exit status {exit_.returncode}):\n{tail}"
    return detail


__all__ = ["KILLING_OUTCOMES", "Mutation", "Settings", "skip_reason"]
