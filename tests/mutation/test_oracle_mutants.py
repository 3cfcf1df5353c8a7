"""The oracle mutant catalogue: every mutant is killed by the tests it names, on a copy that passes them clean.

The catalogue run (through conformance/mutations/engine.py, as `attncheck mutate --only` runs it)
is the proof that the oracle's tests can fail; the small tests around it pin
the runner's refusals (stale or malformed mutants, modules imported from outside the copy), so
that a broken runner cannot pass for a strong suite.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Optional

import pytest

from conformance.mutations.catalogue import ORACLE_MUTANTS, Mutant
from conformance.mutations.errors import InvalidMutant, StaleMutant
from conformance.mutations.engine import Mutation, Settings
from conformance.mutations.kinds import exact_kills, named
from conformance.mutations.runner import apply_mutant, imported_outside_copy, make_copy, repo_root
from conformance.mutations.verdicts import Keyer, Verdicts, default_path


def _current_cached_kills() -> Optional[dict[str, list[str]]]:
    """The oracle mutants' kills in CI's committed verdicts, when every one of them and every named test is
    current there (its key matches this tree); else None. Such a kill is this test's fact, measured the
    same way: the first pass over a mutant's named tests alone, on a copy where those tests passed clean."""
    path = default_path(repo_root(), "all", "cpu", "quick")
    if not path.is_file():
        return None
    run = Mutation(
        Settings(target="all", device="cpu", budget="quick", out_dir=path.parent, strategy="first-kill"),
        progress=lambda line: None,
    )
    shutil.rmtree(run._tmp, ignore_errors=True)
    keyer, verdicts = Keyer(repo_root(), run.key_settings()), Verdicts.load(path)
    named = sorted({t for m in ORACLE_MUTANTS for t in exact_kills(m.kills)})
    mutants, rows = verdicts.valid_mutants(keyer, ORACLE_MUTANTS), verdicts.valid_rows(keyer, named)
    if len(mutants) < len(ORACLE_MUTANTS) or len(rows) < len(named):
        return None
    return {name: list(e["killed_by"]) for name, e in mutants.items()}


@pytest.mark.slow
def test_every_oracle_mutant_is_killed_by_its_named_tests(tmp_path: Path) -> None:
    """The clean copy passes every named test, and each oracle mutant makes one of its own named tests fail.

    Taken from CI's committed verdicts when they are current for every oracle mutant and named test
    (docs/mutation.md, Verdict cache); otherwise the oracle catalogue runs here."""
    cached = _current_cached_kills()
    if cached is not None:
        assert all(any(named(t, m.kills) for t in cached[m.name]) for m in ORACLE_MUTANTS)
        proven = {t for kills in cached.values() for t in kills}
        assert not [t for m in ORACLE_MUTANTS for t in exact_kills(m.kills) if t not in proven]
        return
    km = Mutation(
        Settings(
            target="torch",
            device="cpu",
            budget="quick",
            out_dir=tmp_path,
            strategy="first-kill",
            mutants=ORACLE_MUTANTS,
            conformance=False,
        ),
        progress=lambda line: None,
    ).run()
    assert km.control["passed"], km.control
    assert [m.name for m in km.mutants] == [m.name for m in ORACLE_MUTANTS]
    survivors = "\n\n".join(f"{r.name} ({r.status}): {r.detail}" for r in km.not_killed())
    assert not survivors, survivors
    assert not km.rows_killing_nothing(), km.rows_killing_nothing()


@pytest.mark.parametrize("mutant", ORACLE_MUTANTS, ids=[m.name for m in ORACLE_MUTANTS])
def test_mutant_applies_to_the_current_source(mutant: Mutant) -> None:
    """Each mutant's `old` text occurs exactly once in its file today (none is stale)."""
    assert (repo_root() / mutant.path).read_text().count(mutant.old) == 1


def test_docs_table_lists_every_mutant_with_its_killing_tests() -> None:
    """docs/oracle-mutants.md has one row per catalogue mutant, naming the tests that kill it."""
    rows = {
        line.split("|")[1].strip(" `"): line
        for line in (repo_root() / "docs" / "oracle-mutants.md").read_text().splitlines()
        if line.startswith("| `")
    }
    assert set(rows) == {m.name for m in ORACLE_MUTANTS}
    for m in ORACLE_MUTANTS:
        for kill in m.kills:
            assert kill.split("::", 1)[1] in rows[m.name], f"{m.name}: {kill} missing from its row"


def test_stale_or_ambiguous_mutant_is_refused(tmp_path: Path) -> None:
    """A mutant whose `old` occurs zero or two times is refused with the count, not applied."""
    (tmp_path / "oracle").mkdir()
    (tmp_path / "oracle" / "m.py").write_text("x = 1\ny = 1\n")
    for old, count in (("z = 1\n", 0), (" = 1\n", 2)):
        mutant = Mutant("probe", "oracle/m.py", old, "x = 2\n", "probe", ("tests/t.py::test",))
        with pytest.raises(StaleMutant) as info:
            apply_mutant(tmp_path, mutant)
        assert (info.value.mutant, info.value.path, info.value.occurrences) == ("probe", "oracle/m.py", count)
    assert (tmp_path / "oracle" / "m.py").read_text() == "x = 1\ny = 1\n"


@pytest.mark.parametrize(
    "field, value",
    [
        ("name", "has space"),
        ("path", "/abs/oracle/m.py"),
        ("new", "x = 1\n"),
        ("kills", ()),
        ("kills", ("oracle/test_x.py",)),
    ],
)
def test_malformed_mutant_is_refused(field: str, value: object) -> None:
    """A catalogue entry with a bad name, path, no-op edit or non-node-id kill cannot be built."""
    fields: dict[str, object] = dict(
        name="probe", path="oracle/m.py", old="x = 1\n", new="x = 2\n", description="probe", kills=("tests/t.py::test",)
    )
    fields[field] = value
    with pytest.raises(InvalidMutant) as info:
        Mutant(**fields)  # type: ignore[arg-type]
    assert info.value.field == field


def test_copy_takes_packages_and_config_but_no_caches(tmp_path: Path) -> None:
    """make_copy brings the package directories and pyproject.toml, and leaves bytecode caches behind."""
    root, dest = tmp_path / "root", tmp_path / "dest"
    (root / "oracle" / "__pycache__").mkdir(parents=True)
    (root / "oracle" / "a.py").write_text("A = 1\n")
    (root / "oracle" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"stale")
    (root / "tests" / "oracle").mkdir(parents=True)
    (root / "tests" / "oracle" / "test_a.py").write_text("")
    (root / "pyproject.toml").write_text("")
    (root / "benchmarks").mkdir()
    dest.mkdir()
    make_copy(root, dest)
    assert (dest / "oracle" / "a.py").read_text() == "A = 1\n"
    assert (dest / "tests" / "oracle" / "test_a.py").is_file() and (dest / "pyproject.toml").is_file()
    assert not (dest / "oracle" / "__pycache__").exists() and not (dest / "benchmarks").exists()


def test_copies_link_one_shared_copy_of_docs_and_a_mutant_may_not_edit_it(tmp_path: Path) -> None:
    """With a shared folder, docs/ is copied once and each copy links to it; the code stays each copy's own, and
    a mutant of a file under docs/ is refused rather than edited into every copy."""
    root, shared = tmp_path / "root", tmp_path / "shared"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "probe.py").write_text("N = 1\n")
    (root / "oracle").mkdir()
    (root / "oracle" / "a.py").write_text("A = 1\n")
    first, second = tmp_path / "first", tmp_path / "second"
    make_copy(root, first, shared)
    make_copy(root, second, shared)
    assert (first / "docs").resolve() == (second / "docs").resolve() == (shared / "docs").resolve()
    assert (second / "docs" / "probe.py").read_text() == "N = 1\n"
    apply_mutant(first, Mutant("m", "oracle/a.py", "A = 1", "A = 2", "d", ("tests/oracle/test_a.py::test_a",)))
    assert (second / "oracle" / "a.py").read_text() == "A = 1\n"
    docs_mutant = Mutant("d", "docs/probe.py", "N = 1", "N = 2", "d", ("tests/oracle/test_a.py::test_a",))
    with pytest.raises(ValueError, match="docs/probe.py"):
        apply_mutant(first, docs_mutant)
    assert (shared / "docs" / "probe.py").read_text() == "N = 1\n"


def test_module_from_outside_the_copy_voids_the_run(tmp_path: Path) -> None:
    """A module under test imported from anywhere but the copy (an editable install, say) voids the run."""
    inside = {"oracle.reference": str(tmp_path / "oracle" / "reference.py")}
    outside = {"oracle.reference": str(repo_root() / "oracle" / "reference.py")}
    modules = {"oracle.reference": "oracle/reference.py"}
    assert imported_outside_copy(inside, modules, tmp_path) is None
    why = imported_outside_copy(outside, modules, tmp_path)
    assert why is not None and str(repo_root()) in why
    assert imported_outside_copy({}, modules, tmp_path) is not None
