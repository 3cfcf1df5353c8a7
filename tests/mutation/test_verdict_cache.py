"""The verdict cache cannot hand back a stale verdict: what goes into a key, what invalidates one, and the
runs that trust none (--fresh) or all (every key matching and the cached kills proving every test).

All in process and on small trees: the whole catalogue's run against the committed file is
test_mutation_matrix.py's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import pytest

from conformance import cli
from conformance.mutations import deps
from conformance.mutations.child import Contexts, Reads
from conformance.mutations.engine import Mutation, Settings
from conformance.mutations.killmatrix import MutantResult
from conformance.mutations.kinds import Mutant
from conformance.mutations.runner import make_copy, repo_root
from conformance.mutations.targets import catalogue
from conformance.mutations.verdicts import FILE_NAME, Keyer, Verdicts, stale_message

FILES = {
    "conftest.py": "pytest_plugins = []\n",
    "pyproject.toml": "[tool.pytest.ini_options]\n",
    "oracle/__init__.py": "",
    "oracle/compare.py": "def f():\n    import oracle.extra\n    return oracle.extra.X\n\n\n"
    "def g():\n    import routing.spec\n",
    "oracle/extra.py": "X = 1\n",
    "routing/__init__.py": "",
    "routing/spec.py": "import json\nTABLE = json.load(open('data/table.json'))\n",
    "data/table.json": "[1, 2]\n",
    "tests/oracle/oracle_helper.py": "H = 2\n",
    "tests/oracle/test_a.py": "from oracle_helper import H\nimport oracle.compare\n\n\ndef test_a():\n"
    "    assert oracle.compare.f() + H == 3\n",
    "tests/routing/test_b.py": "import routing.spec\n\n\ndef test_b():\n    assert routing.spec.TABLE\n",
}
A, B = "tests/oracle/test_a.py::test_a", "tests/routing/test_b.py::test_b"


def _tree(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _observed(root: Path, spawns: tuple[str, ...] = ()) -> deps.Observed:
    """What a control run of A and B would have seen: compare.py run by A, spec.py imported collecting B's
    file and reading the table, pytest listing tests/oracle (and processes started in `spawns`)."""
    collect_a = "collect:tests/oracle/test_a.py"
    ran = {
        "oracle/compare.py": {1: {collect_a}, 2: {"test:" + A}, 3: {"test:" + A}, 6: {collect_a}},
        "routing/spec.py": {1: {"collect:tests/routing/test_b.py"}, 2: {"collect:tests/routing/test_b.py"}},
    }
    return deps.Observed(root, ran, {"routing/spec.py": {"data/table.json"}, "": {"dir:tests/oracle"}}, spawns, [A, B])


def test_static_imports_follow_lazy_imports_and_the_test_helpers_beside_a_test(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    parsed = deps.parse_imports(root, "oracle/compare.py")
    assert parsed.top == set() and parsed.lazy == (
        (2, {"oracle/__init__.py", "oracle/extra.py"}),
        (7, {"routing/__init__.py", "routing/spec.py"}),
    )
    assert deps.imports(root, "tests/oracle/test_a.py") == {
        "tests/oracle/oracle_helper.py",
        "oracle/__init__.py",
        "oracle/compare.py",
    }


def test_a_test_files_dependencies_are_what_it_runs_imports_and_reads(tmp_path: Path) -> None:
    """A's file brings its own text, its helper, what it executed and what that imported lazily where A ran the
    import (not g's, which nothing ran); B's what its collection imported and what that read; pytest's own
    listing brings the folder's conftest.py and __init__.py, not its other files; B started a process, so it
    depends on the whole tree."""
    obs = _observed(_tree(tmp_path), spawns=("test:" + B,))
    assert obs.group("tests/oracle/test_a.py") == {
        "tests/oracle/test_a.py",
        "tests/oracle/oracle_helper.py",
        "oracle/__init__.py",
        "oracle/compare.py",
        "oracle/extra.py",
    }
    assert obs.group("tests/routing/test_b.py") == {
        "tests/routing/test_b.py",
        "routing/__init__.py",
        "routing/spec.py",
        "data/table.json",
    }
    assert {"conftest.py", "pyproject.toml", "tests/oracle/conftest.py", "tests/oracle/__init__.py"} <= obs.startup
    assert not any(d.startswith(deps.DIR) for d in obs.startup)
    assert obs.opaque == {B} and deps.TREE in obs.of_tests([B]) and deps.TREE not in obs.of_tests([A])


def _mutants() -> tuple[Mutant, Mutant]:
    return (
        Mutant("m-compare", "oracle/compare.py", "    return oracle.extra.X\n", "    return 0\n", "x", (A,)),
        Mutant("m-spec", "routing/spec.py", "TABLE = ", "TABLE = [] or ", "y", (B,)),
    )


def _verdicts(root: Path) -> tuple[Verdicts, Keyer]:
    obs = _observed(root)
    keyer = Keyer(root, {"budget": "quick"}, env={"python": "3.x"})
    v = Verdicts(keyer.settings, keyer.env, keyer.machinery)
    for m, test in zip(_mutants(), (A, B)):
        entry = {"status": "killed", "killed_by": [test], "deps": [v.group(obs.of_tests([test]) | {m.path})]}
        v.mutants[m.name] = {**entry, "key": keyer.mutant_key(m, v.deps_of(entry))}
        row = {"outcome": "passed", "deps": [v.group(obs.of_tests([test]))]}
        v.rows[test] = {**row, "key": keyer.row_key(test, v.deps_of(row))}
    return v, keyer


def _still(v: Verdicts, root: Path, mutants: tuple[Mutant, ...] = ()) -> tuple[set[str], set[str]]:
    """Which mutants and rows keep their verdict against the tree as it is now (a fresh keyer: fresh hashes)."""
    keyer = Keyer(root, {"budget": "quick"}, env={"python": "3.x"})
    return set(v.valid_mutants(keyer, mutants or _mutants())), set(v.valid_rows(keyer, [A, B]))


def test_an_edit_invalidates_exactly_the_verdicts_whose_dependencies_it_touched(tmp_path: Path) -> None:
    """Unchanged: every verdict holds. A lazily imported module edited: only A's mutant and row go; the test file
    of A edited: the same; a data file B's collection read: B's; a mutant's own entry edited: that mutant."""
    root = _tree(tmp_path)
    v, _ = _verdicts(root)
    assert _still(v, root) == ({"m-compare", "m-spec"}, {A, B})
    (root / "oracle/extra.py").write_text("X = 2\n")
    assert _still(v, root) == ({"m-spec"}, {B})
    v, _ = _verdicts(root)
    (root / "tests/oracle/test_a.py").write_text(FILES["tests/oracle/test_a.py"] + "\n\ndef test_new():\n    pass\n")
    assert _still(v, root) == ({"m-spec"}, {B})
    v, _ = _verdicts(root)
    (root / "data/table.json").write_text("[3]\n")
    assert _still(v, root) == ({"m-compare"}, {A})
    v, _ = _verdicts(root)
    edited = (
        Mutant("m-compare", "oracle/compare.py", "    return oracle.extra.X\n", "    return 1\n", "x", (A,)),
        _mutants()[1],
    )
    assert _still(v, root, edited)[0] == {"m-spec"}


def test_the_verdict_files_are_never_a_dependency(tmp_path: Path) -> None:
    """A refresh rewrites the verdict file: were it a dependency (read by a test that copies the tree, or in the
    tree's hash), the keys holding it would move with every refresh and the file would never be current."""
    root = _tree(tmp_path)
    held = root / "conformance/mutations/verdicts/all-cpu-quick.json"
    held.parent.mkdir(parents=True)
    held.write_text("{}\n")
    read = {"tests/oracle/test_a.py": {"conformance/mutations/verdicts/all-cpu-quick.json", "data/table.json"}}
    obs = deps.Observed(root, {}, read, ("test:" + A,), [A])
    got = obs.of_tests([A])
    assert {"data/table.json", deps.TREE} <= got and not any("verdicts/" in d for d in got)
    tree = deps.Hasher(root).tree()
    held.write_text('{"format": 1}\n')
    assert deps.Hasher(root).tree() == tree
    make_copy(root, tmp_path / "copy")
    copy = tmp_path / "copy"
    assert (copy / "oracle/compare.py").is_file() and not (copy / "conformance/mutations/verdicts").exists()


def test_a_verdict_rests_on_the_runs_that_killed_it(tmp_path: Path) -> None:
    """A kill's key holds the files of the pass that killed it (every file it collected) and the whole tree only
    when a test that ran started a process (with -x, B after the first failure did not run); a covering run that
    added a kill adds its own."""
    root = _tree(tmp_path)
    obs = _observed(root, spawns=("test:" + B,))
    run = Mutation(_settings(tmp_path), progress=lambda line: None)
    out = Verdicts()

    def deps_of(res: Optional[MutantResult]) -> set[str]:
        return set().union(*(out.groups[g] for g in run._decided(out, obs, "m", res)))

    res = MutantResult("m", "oracle", "killed", [A], killed_by=[A], pass_tests=[A, B], ran=[A])
    got = deps_of(res)
    assert {"tests/oracle/test_a.py", "oracle/extra.py", "tests/routing/test_b.py"} <= got and deps.TREE not in got
    res.ran = [A, B]
    assert deps.TREE in deps_of(res)
    run._covered["m"] = [([B], [B])]
    assert {"tests/routing/test_b.py", deps.TREE} <= deps_of(None) and "tests/oracle/test_a.py" not in deps_of(None)


def test_a_verdict_that_is_not_a_kill_is_never_trusted(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    v, _ = _verdicts(root)
    v.mutants["m-spec"]["status"] = "survived"
    assert _still(v, root)[0] == {"m-compare"}


# ---- the command and the run ---------------------------------------------------------------------

TWO = tuple(m for m in catalogue("all") if m.name in ("bound-exclusive", "torch-reason-none-not-not-reported"))


class Launched(Exception):
    pass


def _settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(
        target="torch",
        device="cpu",
        budget="quick",
        out_dir=tmp_path / "out",
        strategy="first-kill",
        mutants=TWO,
        conformance=False,
        verdicts=tmp_path / "verdicts.json",
        **kw,
    )  # type: ignore[arg-type]


def _write_matching_verdicts(tmp_path: Path, prove_rows: bool = True) -> None:
    """A verdict file whose every key matches this tree: each mutant depends on its file and its test's."""
    root = repo_root()
    keyer = Keyer(root, Mutation(_settings(tmp_path), progress=lambda line: None).key_settings())
    v = Verdicts(keyer.settings, keyer.env, keyer.machinery)
    for m in TWO:
        (test,) = m.kills
        entry = {
            "status": "killed",
            "killed_by": [test] if prove_rows or m is TWO[0] else [],
            "deps": [v.group({m.path, test.split("::")[0]})],
        }
        v.mutants[m.name] = {**entry, "key": keyer.mutant_key(m, v.deps_of(entry))}
        row = {"outcome": "passed", "deps": [v.group({test.split("::")[0]})]}
        v.rows[test] = {**row, "key": keyer.row_key(test, v.deps_of(row))}
    v.write(tmp_path / "verdicts.json", keyer)


def _no_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def launch(*a: object, **k: object) -> None:
        raise Launched()

    monkeypatch.setattr(Mutation, "_launch", launch)


def test_a_run_whose_every_key_matches_runs_nothing_and_fresh_runs_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every key matching and every test proven by a cached kill: no process (not even the control), every
    verdict cached, the refreshed file equal to the committed one. --fresh ignores the file: the control runs."""
    _write_matching_verdicts(tmp_path)
    _no_process(monkeypatch)
    km = Mutation(_settings(tmp_path), progress=lambda line: None).run()
    assert km.ok and all(m.cached for m in km.mutants) and km.control["cached"]
    assert (tmp_path / "out" / FILE_NAME).read_text() == (tmp_path / "verdicts.json").read_text()
    with pytest.raises(Launched):
        Mutation(_settings(tmp_path, fresh=True), progress=lambda line: None).run()


def test_a_stale_entry_or_an_unproven_test_makes_the_run_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key that no longer matches is re-run; so is a cache whose kills leave a test unproven (the control and
    the covering runs must find one), though every key matches."""
    _no_process(monkeypatch)
    _write_matching_verdicts(tmp_path)
    data = json.loads((tmp_path / "verdicts.json").read_text())
    data["mutants"]["bound-exclusive"]["key"] = "0" * 32
    (tmp_path / "verdicts.json").write_text(json.dumps(data))
    with pytest.raises(Launched):
        Mutation(_settings(tmp_path), progress=lambda line: None).run()
    _write_matching_verdicts(tmp_path, prove_rows=False)
    with pytest.raises(Launched):
        Mutation(_settings(tmp_path), progress=lambda line: None).run()


def test_a_stale_committed_file_fails_naming_the_command_that_refreshes_it(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    v, keyer = _verdicts(root)
    path = root / "verdicts.json"
    v.write(path, keyer)
    assert stale_message(root, path, Verdicts.load(path), "all", "cpu", "quick") == ""
    (root / "oracle/extra.py").write_text("X = 2\n")
    now, keyer = _verdicts(root)
    msg = stale_message(root, path, now, "all", "cpu", "quick")
    assert "Fix: run `attncheck mutate --target all --update-verdicts` and commit verdicts.json" in msg
    assert "mutant m-compare: its key changed" in msg and "oracle/extra.py changed" in msg and "m-spec" not in msg
    assert "verdicts.json.gone does not exist" in stale_message(
        root, root / "verdicts.json.gone", now, "all", "cpu", "quick"
    )


def test_the_audit_hook_charges_a_read_to_the_repository_file_that_read_it(tmp_path: Path) -> None:
    """A read is charged to the innermost repository frame; an import's open (importlib's frames) and a write
    are not reads; a file outside the tree is not a dependency; a process is charged to its context."""
    root = _tree(tmp_path)
    reads = Reads(str(root), str(root / "conformance/mutations/child.py"))
    ns: dict = {"hook": reads.hook}
    exec(
        compile(
            "def read(p):\n    hook('open', (p, 'r', 0))\ndef write(p):\n    hook('open', (p, 'w', 0))\n"
            "def ls(p):\n    hook('os.listdir', (p,))\n",
            str(root / "routing/spec.py"),
            "exec",
        ),
        ns,
    )
    exec(
        compile("def load(p):\n    hook('open', (p, 'r', 0))\n", "<frozen importlib._bootstrap_external>", "exec"),
        ns_import := {"hook": reads.hook},
    )
    ns["read"](str(root / "data/table.json"))
    ns["write"](str(root / "data/out.json"))
    ns["ls"](str(root / "data"))
    ns_import["load"](str(root / "oracle/extra.py"))
    reads.hook("open", (str(root / "pyproject.toml"), "r", 0))  # from here: no repository frame under root
    reads.hook("open", (str(tmp_path.parent / "elsewhere.json"), "r", 0))
    reads.context = "test:" + B
    reads.hook("subprocess.Popen", ("python", ["python"], None, None))
    assert reads.to_json() == {
        "data": {"routing/spec.py": ["data/table.json"], "": ["pyproject.toml"]},
        "lists": {"routing/spec.py": ["data"]},
        "spawns": ["test:" + B],
    }


def test_collecting_a_test_file_is_a_context_of_its_own(tmp_path: Path) -> None:
    """What a test module's collection runs (its imports, its parametrization) is charged to that file, not to
    the session: the control's coverage switches to "collect:<file>" and back."""

    class Cov:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def switch_context(self, ctx: str) -> None:
            self.seen.append(ctx)

    (tmp_path / "test_collected_alone.py").write_text("def test_one():\n    pass\n")
    cov = Cov()
    args = ["-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path / "test_collected_alone.py")]
    assert pytest.main(args, plugins=[Contexts(cov, Reads(str(tmp_path), str(tmp_path / "child.py")))]) == 0
    assert cov.seen[:3] == ["collect:test_collected_alone.py", "", "test:test_collected_alone.py::test_one"]


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--update-verdicts", "--selection", "all"], "--selection"),
        (["--update-verdicts", "--complete"], "--update-verdicts"),
        (["--verdicts", "{corrupt}"], "--verdicts"),
        (["--verdicts", "{dir}"], "--verdicts"),
    ],
)
def test_a_verdict_file_that_cannot_serve_the_run_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, argv: list, field: str
) -> None:
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"format": 1,\n<<<<<<< HEAD\n')
    argv = [a.format(corrupt=corrupt, dir=tmp_path) for a in argv]
    out = tmp_path / "out"
    assert cli.main(["mutate", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0] and "Fix:" in err[0], err
    assert not out.exists()
