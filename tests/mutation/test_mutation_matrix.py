"""The CPU mutant catalogue proves every test can fail; the machinery around it cannot fake that proof.

One run of `attncheck mutate --target all --device cpu --budget quick` (the CPU catalogue: oracle,
routing-spec, adapter and library mutants, with the conformance slice), incremental against the
committed verdict file: no mutant survives, no test kills nothing, and the file is not stale. The
small tests pin what such a run rests on: coverage-based selection and its widening rules, the
verdicts (a named test must be the killer; an import-time failure counts only for an at-import
mutant), the fork server (a crash ends one run only), and the command line (bad usage writes
nothing). test_verdict_cache.py pins the verdict cache.
"""

from __future__ import annotations

import json
import warnings
import os
import textwrap
from pathlib import Path

import pytest

from conformance import cli
from conformance.mutations import selection as sel
from conformance.mutations.engine import Mutation, Settings, _shards
from conformance.mutations.killmatrix import JSON, JSONL, MARKDOWN, classify
from conformance.mutations.kinds import Mutant, PackageMutant, TorchPatch, named
from conformance.mutations.launcher import ForkServerLauncher, Job, child_env
from conformance.mutations.runner import repo_root
from conformance.mutations.targets import CATALOGUES, catalogue
from conformance.mutations.verdicts import FILE_NAME, Verdicts, default_path, stale_message

ALL = catalogue("all")


@pytest.mark.slow
def test_cpu_catalogue_kills_every_mutant_and_every_test_kills_one(tmp_path: Path) -> None:
    """CI's proof: every CPU mutant killed by a test it names, every test of the run killing one. Verdicts
    whose key matches the committed verdict file are taken from it (a run with nothing changed runs
    nothing); the others are run here, and then the committed file is stale: the test fails naming the
    command that refreshes it (docs/mutation.md, Verdict cache). A file written on another environment
    (package versions) is not stale code: every mutant runs and proves the catalogue, with a warning."""
    committed = default_path(repo_root(), "all", "cpu", "quick")
    km = Mutation(
        Settings(
            target="all", device="cpu", budget="quick", out_dir=tmp_path, strategy="first-kill", verdicts=committed
        ),
        progress=lambda line: None,
    ).run()
    report = (tmp_path / MARKDOWN).read_text()
    assert km.control["passed"], km.control
    assert not km.not_killed(), "\n".join(f"{m.name} ({m.status}): {m.detail}" for m in km.not_killed())
    assert not km.rows_killing_nothing(), report
    kinds = {m.kind for m in km.runnable()}
    assert kinds == {"oracle", "routing-spec", "adapter", "library", "harness"}
    assert any(r.startswith("conformance/test_parity_grid.py::") for r in km.rows)
    skipped = {m.name for m in km.mutants if m.status == "skipped"}
    assert skipped == {m.name for m in ALL if m.needs == "cuda"}  # listed, with the reason
    records = [json.loads(line) for line in (tmp_path / JSONL).read_text().splitlines()]
    assert sum(r["record"] == "mutant" for r in records) == len(ALL)
    assert json.loads((tmp_path / JSON).read_text())["ok"] is True
    refreshed = Verdicts.load(tmp_path / FILE_NAME)
    if committed.is_file() and Verdicts.load(committed).env != refreshed.env:
        # Another environment (a CI image resolving newer packages) moves every key: the whole catalogue was
        # proven here; the file is not stale for a change in this tree, so the run says so and passes.
        warnings.warn(
            f"{committed.name} was written with {Verdicts.load(committed).env}, this run has "
            f"{refreshed.env}: every mutant ran; refresh the file on this environment to cache again",
            stacklevel=1,
        )
        return
    stale = stale_message(repo_root(), committed, refreshed, "all", "cpu", "quick")
    assert not stale, stale


# ---- the catalogue itself -------------------------------------------------------------------------


@pytest.mark.parametrize("mutant", [m for m in ALL if isinstance(m, Mutant)], ids=lambda m: m.name)
def test_every_text_mutant_applies_and_compiles(mutant: Mutant) -> None:
    """Each repository mutant's `old` occurs exactly once today, and the edited file still compiles."""
    text = (repo_root() / mutant.path).read_text()
    assert text.count(mutant.old) == 1
    compile(text.replace(mutant.old, mutant.new), mutant.path, "exec")


@pytest.mark.parametrize("patch", [m for m in ALL if isinstance(m, TorchPatch)], ids=lambda m: m.name)
def test_every_torch_patch_names_a_function_and_its_calling_lines(patch: TorchPatch) -> None:
    """The patched torch attribute and the fault factory exist; every call site text is in its file."""
    import importlib

    mod, attr = patch.target.split(":")
    assert callable(getattr(importlib.import_module(mod), attr))
    fmod, fname = patch.fault.split(":")
    assert callable(getattr(importlib.import_module(fmod), fname))
    for path, text in patch.sites:
        assert text in (repo_root() / path).read_text(), (path, text)


def test_flashinfer_package_mutants_match_the_pinned_wheel() -> None:
    """Each FlashInfer mutant's `old` occurs once in flashinfer-python 0.7.2.post1 (where the wheel is at hand)."""
    import zipfile

    wheels = sorted((repo_root() / ".whl").glob("flashinfer_python-0.7.2*.whl"))
    if not wheels:
        pytest.skip("no flashinfer wheel in .whl/ (docs/h200-runner.md says how to fetch it)")
    with zipfile.ZipFile(wheels[0]) as z:
        for m in (m for m in ALL if isinstance(m, PackageMutant)):
            assert z.read(f"{m.package}/{m.path}").decode().count(m.old) == 1, m.name


def test_catalogues_cover_every_class_and_the_seeds_ab_list() -> None:
    assert {m.kind for m in CATALOGUES["torch"]} == {"oracle", "routing-spec", "adapter", "library", "harness"}
    assert {m.kind for m in CATALOGUES["flashinfer"]} == {"oracle", "routing-spec", "adapter", "library", "harness"}
    names = {m.name for m in ALL}
    assert {
        "rocm-fork-ragged-table-disarmed",
        "rocm-fork-ragged-q-len-dropped",
        "rocm-fork-late-recheck-removed",
    } <= names
    assert {
        "flashinfer-mask-ignored-by-auto",
        "flashinfer-paged-mask-buffer-kept",
        "flashinfer-ragged-auto-resolved-once",
    } <= names
    assert {"rocm-ragged-row-disarmed", "rocm-flat-gather-threshold-shifted", "rocm-explicit-none-deleted"} <= names


def test_docs_list_every_mutant() -> None:
    """docs/mutation.md names every mutant of the non-oracle catalogues (docs/oracle-mutants.md the oracle's)."""
    doc = (repo_root() / "docs" / "mutation.md").read_text()
    missing = [m.name for m in ALL if m.kind != "oracle" and f"`{m.name}`" not in doc]
    assert not missing


# ---- selection ------------------------------------------------------------------------------------

SOURCE = textwrap.dedent("""\
    import functools
    TABLE = {"a": 1,
             "b": 2}


    def f(x):
        if x:
            return 1
        return 2


    @functools.lru_cache(maxsize=None)
    def g():
        return TABLE["a"]
""")


@pytest.mark.parametrize(
    "first, last, lines, once",
    [
        (8, 8, {8}, False),  # a statement in a function: that line, measured per test
        (7, 7, {7}, False),  # an `if` header only, not its body
        (3, 3, {2, 3}, True),  # a continuation line of a module-level statement: the whole statement, once
        (14, 14, {14}, True),  # inside an lru_cache'd function: runs once per process
    ],
)
def test_statement_lines_and_what_runs_once(first: int, last: int, lines: set, once: bool) -> None:
    assert sel.statement_lines(SOURCE, first, last) == (lines, once)


def test_selection_widens_by_fixture_scope_and_parity_case() -> None:
    """A module fixture's lines reach every test of its module; a parity test brings its case's other backends."""
    grid = "conformance/test_parity_grid.py::test_backend_matches_the_oracle"
    rows = [
        "tests/a/test_x.py::t1",
        "tests/a/test_x.py::t2",
        "tests/a/test_y.py::t3",
        f"{grid}[math-ragged-b1-abc]",
        f"{grid}[flex-ragged-b1-abc]",
        f"{grid}[math-paged-b2-def]",
    ]
    got = sel.tests_for({"test:tests/a/test_x.py::t1", "fixture:tests/a/test_y.py"}, rows)
    assert got == {"tests/a/test_x.py::t1", "tests/a/test_y.py::t3"}
    got = sel.tests_for({f"test:{grid}[math-ragged-b1-abc]"}, rows)
    assert got == {f"{grid}[math-ragged-b1-abc]", f"{grid}[flex-ragged-b1-abc]"}


def test_a_line_run_once_selects_every_test_of_its_file() -> None:
    cov = sel.CoverageMap({"m.py": {2: {""}, 8: {"test:t::a"}, 9: {"test:t::b"}}})
    assert cov.contexts(sel.Site("m.py", frozenset({8}), False)) == {"test:t::a"}
    assert cov.contexts(sel.Site("m.py", frozenset({2}), True)) == {"", "test:t::a", "test:t::b"}


def test_shards_keep_files_whole() -> None:
    rows = ["a.py::1", "a.py::2", "b.py::1", "c.py::1", "a.py::3"]
    shards = _shards(rows, 2)
    assert sorted(map(len, shards)) == [2, 3] and ["a.py::1", "a.py::2", "a.py::3"] in shards


# ---- verdicts -------------------------------------------------------------------------------------


def test_a_kill_counts_only_through_a_named_test() -> None:
    kills = ["t::named", "g::grid[*]"]
    assert classify(kills, ["t::named", "t::other"], {"t::named": "failed", "t::other": "passed"})[0] == "killed"
    assert classify(kills, ["t::named", "t::other"], {"t::named": "passed", "t::other": "failed"})[0] == "misnamed"
    assert classify(kills, ["g::grid[x]"], {"g::grid[x]": "error"})[0] == "killed"
    assert classify(kills, ["t::named"], {"t::named": "skipped"})[0] == "survived"
    assert classify(kills, ["t::named"], {})[0] == "broken"
    assert named("g::grid[anything]", ("g::grid[*]",)) and not named("g::other[x]", ("g::grid[*]",))


# ---- the fork server ------------------------------------------------------------------------------


def test_a_crash_or_a_timeout_ends_one_run_and_the_server_forks_the_next(tmp_path: Path) -> None:
    """A run killed by a signal or by its timeout reports so; the next run on the same server still
    works; the server's imports include torch and nothing of the repository."""
    crash = tmp_path / "crash.py"
    crash.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    sleeper = tmp_path / "sleep.py"
    sleeper.write_text("import time\ntime.sleep(60)\n")
    ok = tmp_path / "ok.py"
    ok.write_text("import sys\nprint('oracle' in sys.modules, 'torch' in sys.modules)\n")
    env = child_env()
    server = ForkServerLauncher(env)
    try:
        crashed = server.run(Job((str(crash),), tmp_path, (), env, tmp_path / "crash.log", 60))
        slept = server.run(Job((str(sleeper),), tmp_path, (), env, tmp_path / "sleep.log", 1.0))
        fine = server.run(Job((str(ok),), tmp_path, (), env, tmp_path / "ok.log", 60))
    finally:
        server.close()
    assert crashed.returncode is not None and crashed.returncode < 0 and not crashed.timed_out
    assert slept.timed_out
    assert fine.returncode == 0 and (tmp_path / "ok.log").read_text().split() == ["False", "True"]


def test_a_forked_run_sees_the_libraries_on_pythonpath_as_a_fresh_interpreter_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GPU runner installs FlashInfer with `pip --target DIR` and puts DIR on PYTHONPATH; the server
    starts without PYTHONPATH (it must not see the repository), so each run puts it back, after the copy."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "runner_only_lib.py").write_text("WHERE = 'site'\n")
    copy = tmp_path / "copy"
    copy.mkdir()
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys, runner_only_lib\n"
        "print(runner_only_lib.WHERE, sys.path.index(%r) < sys.path.index(%r))\n" % (str(copy), str(site))
    )
    monkeypatch.setenv("PYTHONPATH", str(site))
    env = child_env((str(copy),))
    server = ForkServerLauncher(env)
    try:
        done = server.run(Job((str(probe),), tmp_path, (str(copy),), env, tmp_path / "probe.log", 60))
    finally:
        server.close()
    assert done.returncode == 0, (tmp_path / "probe.log").read_text()
    assert (tmp_path / "probe.log").read_text().split() == ["site", "True"]


@pytest.mark.parametrize("run", ["started", "not-yet-scheduled"])
def test_a_fork_server_whose_parent_is_gone_kills_the_runs_it_started(
    run: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mutate run killed outright (SIGTERM, SIGKILL) never calls close(): its server sees stdin close and
    must kill the runs still going, each in a process group of its own, not let them run on orphaned (a
    mutant's test that started a mutate of its own once kept two cores busy for a quarter of an hour).
    A forked run the scheduler has not yet run when the pipe closes is killed too (held back a second here;
    on a loaded CI machine the run had not yet made its group, the server's kill missed it, and it ran on)."""
    import threading
    import time

    import conformance.mutations.launcher as launcher

    if run == "not-yet-scheduled":
        forked = "                if pid == 0:\n                    child(req)\n"
        held = "                if pid == 0:\n                    import time; time.sleep(1); child(req)\n"
        assert launcher._SERVER.count(forked) == 1
        monkeypatch.setattr(launcher, "_SERVER", launcher._SERVER.replace(forked, held))
    script = tmp_path / "long.py"
    script.write_text("import time\ntime.sleep(120)\n")
    env = child_env(())
    server = ForkServerLauncher(env)
    job = Job((str(script),), tmp_path, (), env, tmp_path / "long.log", 300)
    threading.Thread(target=server.run, args=(job,), daemon=True).start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not [p for p in server._pending.values() if p.pid is not None]:
        time.sleep(0.1)
    (pid,) = [p.pid for p in server._pending.values() if p.pid is not None]
    assert server._proc.stdin is not None
    server._proc.stdin.close()  # what the parent's death does: the pipe closes, nothing is killed first
    server._proc.wait(timeout=30)  # the server reaps its killed run, then exits
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    server._dir.cleanup()


# ---- the command line -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--target", "nonesuch"], "--target"),
        (["--budget", "huge"], "--budget"),
        (["--only", "no-such-mutant"], "--only"),
        (["--workers", "0"], "--workers"),
        (["--isolation", "threads"], "--isolation"),
    ],
)
def test_bad_usage_exits_2_naming_the_value_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture, argv: list, field: str
) -> None:
    out = tmp_path / "out"
    assert cli.main(["mutate", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0] and "Fix:" in err[0]
    assert not out.exists()


def test_a_repeated_only_adds_its_names() -> None:
    """`--only a --only b c` runs a, b and c (argparse's default would keep b and c, and drop a unsaid)."""
    assert cli.build_parser().parse_args(["mutate", "--only", "a", "--only", "b", "c"]).only == ["a", "b", "c"]


def test_an_unwritable_out_dir_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    if os.geteuid() == 0:
        blocker = tmp_path / "file"
        blocker.write_text("")
        out = blocker / "sub"  # under a regular file: never creatable, even for root
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        out = locked / "sub"
    assert cli.main(["mutate", "--out", str(out)]) == 2
    assert "--out" in capsys.readouterr().err and not out.exists()


def test_mutate_writes_jsonl_json_and_markdown_for_a_small_run(tmp_path: Path) -> None:
    """A two-mutant catalogue: the control then one JSONL record per mutant, the matrix as JSON and markdown."""
    two = tuple(m for m in ALL if m.name in ("bound-exclusive", "torch-reason-none-not-not-reported"))
    km = Mutation(
        Settings(
            target="torch",
            device="cpu",
            budget="quick",
            out_dir=tmp_path,
            strategy="first-kill",
            mutants=two,
            conformance=False,
        ),
        progress=lambda line: None,
    ).run()
    assert km.ok
    records = [json.loads(line) for line in (tmp_path / JSONL).read_text().splitlines()]
    assert [r["record"] for r in records] == ["control", "mutant", "mutant"]
    matrix = json.loads((tmp_path / JSON).read_text())
    assert matrix["ok"] and sorted(matrix["rows"]) == sorted(k for m in two for k in m.kills)
    assert all(matrix["matrix"][r] for r in matrix["rows"])
    assert "bound-exclusive" in (tmp_path / MARKDOWN).read_text()


def test_the_cli_runs_mutate_and_exits_1_on_a_survivor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """`attncheck mutate` through cli.main: a mutant none of its tests can see survives, and the exit is 1."""
    import conformance.mutations.engine as engine

    blind = Mutant(
        "blind",
        "oracle/compare.py",
        "    passed = n_bad == 0 and max_abs <= bound\n",
        "    passed = n_bad == 0 and max_abs <= bound  # a comment changes nothing\n",
        "an equivalent edit",
        ("tests/oracle/test_oracle_compare.py::test_error_equal_to_the_bound_passes_and_the_next_float_fails",),
    )
    monkeypatch.setattr(engine, "catalogue", lambda target: (blind,))
    monkeypatch.setattr(engine, "conformance_rows", lambda *a: [])
    assert cli.main(["mutate", "--target", "torch", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "survived: blind" in out
    assert "  survived  blind (1 tests, " in out and "[1/1, " in out and " elapsed]" in out, out  # place and time
    assert json.loads((tmp_path / JSON).read_text())["not_killed"] == ["blind"]


def test_a_failing_control_says_why_each_test_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the H200 the control failed for 20 tests and the run said only their names: the child records
    each failure's last "E" lines and the control carries them (`why`), printed by the command line."""
    import types

    from conformance.mutations.child import Recorder

    (tmp_path / "test_sample.py").write_text(
        "def test_bad():\n    assert 1 + 1 == 3, 'sums differ'\n\ndef test_good():\n    pass\n"
    )
    rec = Recorder()
    pytest.main(["-q", "-p", "no:cacheprovider", str(tmp_path / "test_sample.py")], plugins=[rec])
    (bad,) = [t for t, o in rec.outcomes.items() if o == "failed"]
    assert bad.endswith("test_bad") and "sums differ" in rec.messages[bad] and len(rec.messages) == 1

    m = Mutation(
        Settings(
            target="torch",
            device="cpu",
            budget="quick",
            out_dir=tmp_path / "o",
            strategy="first-kill",
            mutants=(),
            conformance=False,
        ),
        progress=lambda line: None,
    )
    answer = (
        types.SimpleNamespace(cpu_s=0.0, timed_out=False),
        {"outcomes": {"t.py::a": "failed", "t.py::b": "passed"}, "messages": {"t.py::a": "AssertionError: x"}},
        "",
    )
    monkeypatch.setattr(m, "_launch", lambda *a, **k: answer)
    monkeypatch.setattr("conformance.mutations.engine.make_copy", lambda *args: None)
    control, _ = m.control(["t.py::a", "t.py::b"], with_coverage=False)
    assert not control["passed"] and control["why"] == {"t.py::a": "AssertionError: x"}


def test_failures_after_a_lost_cuda_context_name_the_test_that_lost_it() -> None:
    """One test's illegal memory access fails every later CUDA test of its process: the control's `why`
    says which test lost the context and marks the failures that followed it."""
    import types

    from conformance.mutations.child import Recorder

    def report(nodeid: str, text: str) -> types.SimpleNamespace:
        return types.SimpleNamespace(nodeid=nodeid, when="call", failed=True, skipped=False, longreprtext=text)

    rec = Recorder()
    rec.pytest_runtest_logreport(report("t.py::plain", "E   AssertionError: 1 != 2"))
    rec.pytest_runtest_logreport(
        report("t.py::d96", "E   torch.AcceleratorError: CUDA error: an illegal memory access was encountered")
    )
    rec.pytest_runtest_logreport(
        report("t.py::grid", "E   torch.AcceleratorError: CUDA error: an illegal memory access was encountered")
    )
    assert rec.messages["t.py::plain"] == "AssertionError: 1 != 2"
    assert rec.messages["t.py::d96"].startswith("lost the CUDA context: torch.AcceleratorError")
    assert rec.messages["t.py::grid"].startswith("after the CUDA context was lost in t.py::d96: ")
