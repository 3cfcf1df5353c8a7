"""Which tests can kill a mutant: the tests that executed the lines it edits, read from coverage.

One clean run of every candidate test under coverage, with a dynamic context per test, maps each
line to the tests that ran it. A mutant is then run against the tests that executed its edited
lines (plus the tests its catalogue entry names). A test that never executes an edited line
behaves exactly as it does on the clean copy, so it cannot kill that mutant; three places where
"executed by" is not "depended on" are widened on purpose, so selection never drops a test that
could fail:

* code that runs once and is shared: a module-level statement (data tables, lambdas built at
  import, class bodies) and the body of an lru_cache'd function run in whichever test came first.
  A mutant there selects every test that executed any line of its file.
* module- and session-scoped fixtures: set up inside the first test that needs them, they are
  measured in a context of their own ("fixture:<scope node id>") and charged to every test
  under that scope.
* the parity grid and the torch adapter's parity test cache the oracle's truth per case across
  backends (module-level `_TRUTH`): a line of the cached work (the oracle, input
  materialisation: CACHED_WORK) executed by one backend's test of a case is charged to every
  backend's test of that case (GROUPED).
* a mutant refused at import (`at_import`) reaches every test whose module imports its module;
  it takes every test (engine.py).

Other process-wide caches (an adapter object reused across cases) are not widened; the A/B run
(`attncheck mutate --compare-whole-suite`) measures what selection would miss against running
the whole suite for every mutant.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

TEST_CTX = "test:"
FIXTURE_CTX = "fixture:"
# Where the cached per-case work lives: only an edit there is charged across a case's backends.
CACHED_WORK = ("oracle/", "scenarios/")
# Tests parametrized `[backend-case]` that share cached state per case; the key drops the backend.
GROUPED = (
    "conformance/test_parity_grid.py::test_backend_matches_the_oracle",
    "tests/kernels/test_torch_target.py::test_backend_matches_oracle_or_declines_as_expected",
)
_CACHE_DECORATORS = ("lru_cache", "cache", "cached_property")


def group_key(nodeid: str) -> Optional[str]:
    """The case a grouped test belongs to: `file::test[backend-case]` -> `file::test[case]`."""
    for prefix in GROUPED:
        if nodeid.startswith(prefix + "["):
            return f"{prefix}[{nodeid[len(prefix) + 1 :].partition('-')[2]}"
    return None


def statement_lines(source: str, first: int, last: int) -> tuple[set[int], bool]:
    """Lines of the statements overlapping [first, last], and whether any of them runs only once.

    A compound statement contributes its header only when the header itself is edited. "Once":
    outside every function body (import time), or inside an lru_cache'd function.
    """
    lines: set[int] = set()
    once = False

    def take(lo: int, hi: int, in_function: bool, cached: bool) -> None:
        nonlocal once
        if hi >= first and lo <= last:
            lines.update(range(lo, hi + 1))
            once = once or not in_function or cached

    def visit(node: ast.AST, in_function: bool, cached: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                continue
            start = min([d.lineno for d in getattr(child, "decorator_list", [])] + [_line(child)])
            end = getattr(child, "end_lineno", None) or _line(child)
            if end < first or start > last:
                continue
            body = [
                n for n in ast.iter_child_nodes(child) if isinstance(n, (ast.stmt, ast.excepthandler, ast.match_case))
            ]
            if not body:
                take(start, end, in_function, cached)
                continue
            take(start, _line(body[0]) - 1, in_function, cached)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorated = any(_decorator_name(d) in _CACHE_DECORATORS for d in child.decorator_list)
                visit(child, True, cached or decorated)
            else:
                visit(child, in_function, cached)

    visit(ast.parse(source), False, False)
    return lines, once


def _line(node: ast.AST) -> int:
    if isinstance(node, ast.match_case):
        return node.pattern.lineno
    return node.lineno  # type: ignore[attr-defined, no-any-return]


def _decorator_name(d: ast.expr) -> str:
    if isinstance(d, ast.Call):
        d = d.func
    if isinstance(d, ast.Attribute):
        return d.attr
    return d.id if isinstance(d, ast.Name) else ""


def text_lines(text: str, old: str, *, all_occurrences: bool = False) -> list[tuple[int, int]]:
    """(first, last) line numbers of `old` in `text` (every occurrence, or the first)."""
    out = []
    start = 0
    while True:
        i = text.find(old, start)
        if i < 0:
            break
        first = text.count("\n", 0, i) + 1
        body = old[:-1] if old.endswith("\n") else old
        out.append((first, first + body.count("\n")))
        if not all_occurrences:
            break
        start = i + 1
    return out


@dataclass(frozen=True)
class Site:
    """Edited (or, for a patched library function, calling) lines of one file.

    `file` is repository-relative for repository files, absolute for an installed package's.
    """

    file: str
    lines: frozenset[int]
    once: bool


def site_of(file: str, source: str, spans: Iterable[tuple[int, int]]) -> Site:
    lines: set[int] = set()
    once = False
    for first, last in spans:
        got, o = statement_lines(source, first, last)
        lines |= got or set(range(first, last + 1))
        once = once or o
    return Site(file, frozenset(lines), once)


@dataclass
class CoverageMap:
    """line -> contexts, per file (repository-relative, or absolute outside the copy)."""

    lines: dict[str, dict[int, set[str]]] = field(default_factory=dict)

    @classmethod
    def read(cls, data_files: Sequence[Path], copy_root: Path) -> "CoverageMap":
        from coverage import CoverageData

        out = cls()
        root = str(copy_root.resolve()) + "/"
        for df in data_files:
            if not df.exists():
                continue
            data = CoverageData(basename=str(df))
            data.read()
            for f in data.measured_files():
                key = f[len(root) :] if f.startswith(root) else f
                per = out.lines.setdefault(key, {})
                for line, ctxs in data.contexts_by_lineno(f).items():
                    per.setdefault(line, set()).update(ctxs)
        return out

    def contexts(self, site: Site) -> set[str]:
        per = self.lines.get(site.file, {})
        if site.once:  # shared code: whoever ran any line of the file
            return set().union(*per.values()) if per else set()
        return set().union(*(per.get(n, set()) for n in site.lines)) if site.lines else set()


def tests_for(contexts: set[str], candidates: Sequence[str], by_case: bool = True) -> set[str]:
    """Candidate tests named by the contexts, widened by fixture scope and (by_case) by parity case."""
    chosen = {c[len(TEST_CTX) :] for c in contexts if c.startswith(TEST_CTX)}
    scopes = [c[len(FIXTURE_CTX) :] for c in contexts if c.startswith(FIXTURE_CTX)]
    for t in candidates:
        if any(t == s or t.startswith(s + "::") or t.startswith(s + "/") or s == "" for s in scopes):
            chosen.add(t)
    groups = {g for g in (group_key(t) for t in chosen) if g is not None} if by_case else set()
    if groups:
        chosen |= {t for t in candidates if group_key(t) in groups}
    return chosen & set(candidates)


@functools.lru_cache(maxsize=None)
def read_source(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")
