"""What a verdict can depend on: the repository files a test run imports, executes or reads, and their hashes.

A dependency is a repository-relative path (a file), `dir:<path>` (the names a directory lists),
`*` (every file a run's copy holds: for tests that start a process, whose reads are not seen) or
`pkg:<absolute path>` (an installed package's file a package mutant edits). verdicts.py keys each
cached verdict on the hashes of its dependencies; docs/mutation.md (Verdict cache) says what is in
and out of a key.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Optional

from conformance.mutations.runner import COPIED, IGNORED, VERDICT_DIR

TREE = "*"
DIR = "dir:"
PKG = "pkg:"
ABSENT = "absent"
# Resolved as repository modules by the static import scan (tests/ holds the helpers imported by basename).
PACKAGES = ("oracle", "scenarios", "kernels", "routing", "conformance", "reports")
# Never a dependency: the verdict files themselves (a refresh would move every key that holds them; a copy
# leaves them out), and what a copy leaves out (runner.IGNORED).
EXCLUDED = "excluded"
# The mutation machinery (conformance/mutations/*.py) is one ingredient of every key, less the catalogue
# modules: a mutant's own definition stands for its entry, so adding a mutant re-runs no other.
CATALOGUE_MODULES = (
    "catalogue.py",
    "harness_mutants.py",
    "adapter_mutants.py",
    "spec_mutants.py",
    "library_mutants.py",
)
# Installed distributions a test run imports (pyproject.toml's dependencies and the dev tools tests call).
DISTRIBUTIONS = (
    "torch",
    "numpy",
    "pytest",
    "hypothesis",
    "coverage",
    "tabulate",
    "import-linter",
    "flashinfer-python",
    "matplotlib",
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


def ignored(name: str) -> bool:
    return any(fnmatch.fnmatch(name, p) for p in IGNORED)


class Hasher:
    """Hashes of dependencies in the repository at `root`, each computed once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._memo: dict[str, str] = {}

    def __call__(self, dep: str) -> str:
        if dep not in self._memo:
            self._memo[dep] = self._hash(dep)
        return self._memo[dep]

    def _hash(self, dep: str) -> str:
        if dep.removeprefix(DIR).startswith(VERDICT_DIR):
            return EXCLUDED
        if dep == TREE:
            return self.tree()
        if dep.startswith(DIR):
            return sha("\n".join(self.listing(dep[len(DIR) :])).encode())
        path = Path(dep[len(PKG) :]) if dep.startswith(PKG) else self.root / dep
        try:
            return sha(path.read_bytes())
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return ABSENT

    def listing(self, rel: str) -> list[str]:
        """What a copy's directory `rel` lists: the repository's, less what a copy leaves out."""
        where = self.root / rel
        if not where.is_dir():
            return []
        names = sorted(n for n in os.listdir(where) if not ignored(n))
        if rel in ("", "."):
            names = [n for n in names if n in COPIED]
        return [n for n in names if not (rel + "/" + n).lstrip("/").startswith(VERDICT_DIR)]

    def tree(self) -> str:
        """Every file a copy holds (runner.COPIED), names and contents, less the verdict files."""
        h = hashlib.sha256()
        for name in COPIED:
            top = self.root / name
            files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else []
            for p in files:
                rel = p.relative_to(self.root).as_posix()
                if rel.startswith(VERDICT_DIR) or any(ignored(part) for part in p.relative_to(self.root).parts):
                    continue
                h.update(rel.encode() + b"\0" + p.read_bytes() + b"\0")
        return h.hexdigest()[:20]


def machinery(root: Path) -> str:
    """One hash of the mutation machinery's code (conformance/mutations/*.py less the catalogues)."""
    h = hashlib.sha256()
    for p in sorted((root / "conformance" / "mutations").glob("*.py")):
        if p.name not in CATALOGUE_MODULES:
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:20]


def environment() -> dict[str, Optional[str]]:
    """The interpreter and the installed versions a verdict was measured with."""
    from importlib import metadata

    env: dict[str, Optional[str]] = {
        "python": "%d.%d" % sys.version_info[:2],
        "platform": sys.platform,
        "machine": platform.machine(),
    }
    for d in DISTRIBUTIONS:
        try:
            env[d] = metadata.version(d)
        except metadata.PackageNotFoundError:
            env[d] = None
    return env


# ---- the static import graph ---------------------------------------------------------------------


def _module_file(root: Path, dotted: str, here: Optional[Path]) -> list[str]:
    """Files `import dotted` executes: each package's __init__.py on the way and the module itself."""
    parts = dotted.split(".")
    base = root if parts[0] in PACKAGES else here  # tests/ helpers are imported by basename, from their folder
    if base is None:
        return []
    out = []
    for i in range(1, len(parts) + 1):
        p = base.joinpath(*parts[:i])
        if (p / "__init__.py").is_file():
            out.append(p / "__init__.py")
        elif p.with_suffix(".py").is_file():
            out.append(p.with_suffix(".py"))
            break
        else:
            break
    return [f.relative_to(root).as_posix() for f in out]


@dataclass(frozen=True)
class Imports:
    """A file's import statements resolved to repository files: those that run when it is imported (its
    module body, class bodies and module-level `if`/`try` included), and the lazy ones by line."""

    top: frozenset[str]
    lazy: tuple[tuple[int, frozenset[str]], ...]

    def all(self) -> set[str]:
        return set(self.top).union(*(t for _, t in self.lazy))


def parse_imports(root: Path, rel: str, text: Optional[str] = None) -> Imports:
    path = root / rel
    try:
        tree = ast.parse(text if text is not None else path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return Imports(frozenset(), ())
    package = Path(rel).parent.parts  # what `from .` means, in a package's __init__.py as in its modules
    here = path.parent if rel.startswith("tests/") else None

    def files(n: ast.AST) -> frozenset[str]:
        names: set[str] = set()
        if isinstance(n, ast.Import):
            names.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                base = ".".join(list(package[: len(package) - (n.level - 1)]) + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in n.names if a.name != "*")
        return frozenset(f for name in names if name for f in _module_file(root, name, here) if f != rel)

    top: set[str] = set()
    lazy: list[tuple[int, frozenset[str]]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if in_function:
                    lazy.append((child.lineno, files(child)))
                else:
                    top.update(files(child))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return Imports(frozenset(top), tuple(lazy))


def imports(root: Path, rel: str, text: Optional[str] = None) -> set[str]:
    """Repository files the file `rel` imports: every import statement, at any depth (a lazy import too)."""
    return parse_imports(root, rel, text).all()


Lines = Mapping[str, Mapping[int, Iterable[str]]]


class Graph:
    """Edges from a repository file to what running it can bring in: the files it imports (the statements
    that run at its import always; a lazy one where the control run executed it in one of the contexts
    asked about, or always in a file coverage does not measure), and the data files and directory
    listings it was seen reading (the control run's audit hook)."""

    def __init__(
        self, root: Path, reads: Optional[Mapping[str, Iterable[str]]] = None, lines: Optional[Lines] = None
    ) -> None:
        self.root = root
        self.reads = {k: set(v) for k, v in (reads or {}).items()}
        self.lines = lines if lines is not None else {}
        self._imports: dict[str, Imports] = {}

    def edges(self, dep: str, contexts: Optional[set[str]] = None) -> set[str]:
        """`contexts`: the coverage contexts whose lazy imports count (None: every lazy import)."""
        out = set(self.reads.get(dep, ()))
        if dep.endswith(".py") and not dep.startswith((DIR, PKG)) and dep != TREE:
            if dep not in self._imports:
                self._imports[dep] = parse_imports(self.root, dep)
            imp = self._imports[dep]
            out |= imp.top
            measured = self.lines.get(dep)
            for line, targets in imp.lazy:
                if contexts is None or measured is None or not contexts.isdisjoint(measured.get(line, ())):
                    out |= targets
        return out

    def closure(self, seeds: Iterable[str], contexts: Optional[set[str]] = None) -> set[str]:
        """Everything reachable from `seeds` (see edges for `contexts`)."""
        todo = list(seeds)
        seen: set[str] = set()
        while todo:
            d = todo.pop()
            if d in seen:
                continue
            seen.add(d)
            todo.extend(self.edges(d, contexts) - seen)
        return seen


# ---- what the control run saw --------------------------------------------------------------------

STARTUP = ("conftest.py", "pyproject.toml")  # every pytest session reads both
SESSION = ("", "fixture:")  # what runs outside every test (start-up, session fixtures): charged to all


class Observed:
    """Per test file, what its tests' processes can depend on, from the control run: the lines they
    executed (coverage contexts charged to the file's tests, fixtures and collection) and what those
    files import and read (Graph). `startup` is what every session loads whatever it runs."""

    def __init__(
        self, root: Path, lines: Lines, reads: Mapping[str, Iterable[str]], spawns: Iterable[str], rows: Iterable[str]
    ) -> None:
        repo = {f: per for f, per in lines.items() if not f.startswith("/")}
        self.root = root
        kept = {k: {d for d in v if not d.removeprefix(DIR).startswith(VERDICT_DIR)} for k, v in reads.items()}
        self.graph = Graph(root, {k: v for k, v in kept.items() if k}, repo)
        self.rows = list(rows)
        self._by_ctx: dict[str, set[str]] = {}
        for f, per in repo.items():
            for c in set().union(*per.values()) if per else ():
                self._by_ctx.setdefault(c, set()).add(f)
        seeds = set(STARTUP) | self._by_ctx.get("", set()) | self._by_ctx.get("fixture:", set())
        # Read with no repository frame on the stack: pytest's configuration, and (left out) a module's source
        # read by a third-party tool, which the import graph already carries.
        seeds |= {d for d in kept.get("", ()) if not d.startswith(DIR) and not d.endswith(".py")}
        # pytest lists the folders on the way to the files it is given: what it can take from them is
        # their conftest.py and __init__.py (absent now: a hash that changes when one appears).
        for d in kept.get("", ()):
            if d.startswith(DIR):
                where = d[len(DIR) :]
                seeds |= {f"{where}/{n}".lstrip("/") for n in ("conftest.py", "__init__.py")}
        self.startup = frozenset(self.graph.closure(seeds, set(SESSION)))
        self._groups: dict[str, frozenset[str]] = {}
        self.opaque = frozenset(self._opaque(set(spawns)))

    def _charged(self, test_file: str) -> set[str]:
        """The contexts of a test file's tests, of the fixtures they use, of its collection, and the session's."""
        out = set(SESSION)
        for c in self._by_ctx:
            if c.startswith("test:"):
                if c[5:].split("::", 1)[0] == test_file:
                    out.add(c)
            elif c == "collect:" + test_file:
                out.add(c)
            elif c.startswith("fixture:") and c != "fixture:" and _under(test_file, c[8:]):
                out.add(c)
        return out

    def group(self, test_file: str) -> frozenset[str]:
        """What the tests of `test_file` can depend on, less `startup`."""
        if test_file not in self._groups:
            charged = self._charged(test_file)
            seeds = {test_file}.union(*(self._by_ctx.get(c, set()) for c in charged))
            self._groups[test_file] = frozenset(self.graph.closure(seeds, charged) - self.startup)
        return self._groups[test_file]

    def _opaque(self, spawns: set[str]) -> set[str]:
        """Rows whose run started a process: in the test, in a fixture charged to it, or collecting its file."""
        if "" in spawns or "fixture:" in spawns:
            return set(self.rows)
        out = set()
        for r in self.rows:
            f = r.split("::", 1)[0]
            if (
                ("test:" + r) in spawns
                or ("collect:" + f) in spawns
                or any(s.startswith("fixture:") and _under(r, s[8:]) for s in spawns)
            ):
                out.add(r)
        return out

    def of_tests(self, tests: Iterable[str]) -> set[str]:
        """Every dependency of a process running `tests` (startup included; the whole tree if one is opaque)."""
        tests = list(tests)
        out = set(self.startup).union(*(self.group(t.split("::", 1)[0]) for t in tests))
        if any(t in self.opaque for t in tests):
            out.add(TREE)
        return out


def _under(test: str, scope: str) -> bool:
    """Whether a node id (or a test file) lies under a fixture's scope node id (a package, a module, a class)."""
    return (
        test == scope or test.startswith(scope + "::") or test.startswith(scope + "/") or scope.startswith(test + "::")
    )
