"""The script each mutation run executes in its own process: patch, import, test, report.

    python child.py JOB.json        (or run_path'd by a fork of launcher.py's server)

Standalone on purpose: it imports nothing from the repository before the job's copy is first on
sys.path, so every repository module a test imports comes from that copy. The job (JSON) says:

  report         where to write {"files", "import_errors", "outcomes", "messages", "collected", "missing", "rc",
                 "patch"}
  modules        {dotted module: path in the copy} whose origin the parent checks
  pytest_args    the pytest options
  tests          the node ids to run, in this order; their files are collected and every other
                 test deselected, so a node id the mutant made disappear is "missing", not an
                 error that stops the session
  coverage       null, or {"data_file", "include", "omit"}: measure lines per test (dynamic
                 contexts "test:<node id>", "fixture:<scope node id>" for module- and
                 session-scoped fixtures, "" for what runs at import)
  package_patch  null, or {"package", "path", "module", "old", "new"}: serve `module` from the
                 installed package with `old` replaced by `new` (nothing on disk changes)
  torch_patch    null, or {"target": "module:attr", "fault": "module:factory"}: replace a torch
                 function by factory(original) before any test runs
  reads          null, or {"root": the copy}: with coverage, also record (an audit hook) the files
                 under root opened for reading other than by an import, and the directories listed,
                 each by the innermost repository file asking; the contexts in which a process was
                 started; and a context "collect:<file>" while a test file is collected
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import json
import os
import sys
from typing import Optional

import pytest  # third-party: repository modules are imported only once the copy leads sys.path


class _PatchedSource(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves one module of an installed package from patched text, keeping its real file name."""

    def __init__(self, module: str, origin: str, source: str) -> None:
        self.module, self.origin, self.source = module, origin, source

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname != self.module:
            return None
        return importlib.util.spec_from_file_location(fullname, self.origin, loader=self)

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        return None

    def exec_module(self, module):  # type: ignore[no-untyped-def]
        module.__attncheck_mutant__ = True
        exec(compile(self.source, self.origin, "exec"), module.__dict__)


def _package_file(package: str, rel: str) -> str:
    """The installed file `rel` of `package`, located without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"package {package!r} is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], rel)


def apply_package_patch(p: dict) -> dict:
    origin = _package_file(p["package"], p["path"])
    with open(origin, encoding="utf-8") as f:
        text = f.read()
    n = text.count(p["old"])
    if n != 1:
        return {"error": f"its `old` text occurs {n} times in {origin}, expected exactly once", "file": origin}
    sys.meta_path.insert(0, _PatchedSource(p["module"], origin, text.replace(p["old"], p["new"])))
    return {"file": origin}


def _resolve(spec: str) -> tuple[object, str]:
    mod, attr = spec.split(":")
    parts = attr.split(".")
    obj: object = importlib.import_module(mod)
    for a in parts[:-1]:
        obj = getattr(obj, a)
    return obj, parts[-1]


def apply_torch_patch(p: dict) -> dict:
    owner, name = _resolve(p["target"])
    fmod, fname = p["fault"].split(":")
    factory = getattr(importlib.import_module(fmod), fname)
    setattr(owner, name, factory(getattr(owner, name)))
    return {"target": p["target"], "fault": p["fault"]}


def _origin(module: str) -> tuple[str | None, str | None]:
    """(file, None) when the module imports; (the file it would come from, the error) when importing raises."""
    try:
        return importlib.import_module(module).__file__, None
    except Exception as e:  # an at-import mutant: the module's own checks refuse it
        parts = module.split(".")
        spec = importlib.util.find_spec(parts[0])
        where = None
        if spec is not None and spec.submodule_search_locations:
            where = os.path.join(list(spec.submodule_search_locations)[0], *parts[1:]) + ".py"
        return where, f"{type(e).__name__}: {e}"[:2000]


class Select:
    """Keeps the job's tests, in the job's order, and notes the ones collection did not produce."""

    def __init__(self, tests: list[str]) -> None:
        self.order = {t: i for i, t in enumerate(tests)}
        self.missing: list[str] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):  # type: ignore[no-untyped-def]
        kept = sorted((i for i in items if i.nodeid in self.order), key=lambda i: self.order[i.nodeid])
        found = {i.nodeid for i in kept}
        self.missing = [t for t in self.order if t not in found]
        dropped = [i for i in items if i.nodeid not in self.order]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept


# CUDA errors after which the context is dead: every later CUDA call in the process fails with them, so
# the tests that run after one fail for it, not for what they test (seen on the H200: one illegal
# access, 19 innocent failures after it in the same control shard).
STICKY_CUDA_ERRORS = (
    "an illegal memory access was encountered",
    "misaligned address",
    "unspecified launch failure",
    "an illegal instruction was encountered",
    "device-side assert triggered",
)


def failure_message(text: str, lines: int = 3) -> str:
    """The last `lines` "E   " lines of a pytest failure (the exception and its message), else its last line."""
    errs = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
    picked = errs[-lines:] if errs else text.strip().splitlines()[-1:]
    return " | ".join(picked)[:600]


class Recorder:
    """Each test's outcome by node id; a module that fails to collect is recorded under its path."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}
        self.collected: list[str] = []
        self.messages: dict[str, str] = {}  # a failed test's last "E" lines: why, for a failing control
        self.context_lost_at: Optional[str] = None  # the first test that failed with a sticky CUDA error

    def pytest_collection_modifyitems(self, items):  # type: ignore[no-untyped-def]
        self.collected = [i.nodeid for i in items]

    def pytest_runtest_logreport(self, report):  # type: ignore[no-untyped-def]
        if report.failed:
            self.outcomes[report.nodeid] = "failed" if report.when == "call" else "error"
            msg = failure_message(report.longreprtext)
            if self.context_lost_at is not None:
                msg = f"after the CUDA context was lost in {self.context_lost_at}: {msg}"
            elif any(e in report.longreprtext for e in STICKY_CUDA_ERRORS):
                self.context_lost_at, msg = report.nodeid, f"lost the CUDA context: {msg}"
            self.messages.setdefault(report.nodeid, msg)
        elif report.skipped:
            self.outcomes.setdefault(report.nodeid, "skipped")
        elif report.when == "call":
            self.outcomes.setdefault(report.nodeid, "passed")

    def pytest_collectreport(self, report):  # type: ignore[no-untyped-def]
        if report.failed:
            self.outcomes[report.nodeid or "<collection>"] = "collection-error"


# Frames that open files for an import, a traceback or their own bookkeeping, not for the code under test:
# Hypothesis reads every loaded module's source for its pool of constants (the import graph carries those
# modules) and its own cache under .hypothesis/.
_NOT_A_READ = (
    "<frozen importlib",
    "/linecache.py",
    "/tokenize.py",
    "/_pytest/assertion/rewrite.py",
    "/coverage/",
    "/hypothesis/",
    "/_hypothesis_pytestplugin.py",
)
_SPAWNS = frozenset({"subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.spawn", "os.fork", "os.forkpty"})
_WATCHED = frozenset({"open", "os.listdir", "os.scandir"}) | _SPAWNS


class Reads:
    """An audit hook: what the run reads besides its imports (by reader), and where it starts processes."""

    def __init__(self, root: str, script: str) -> None:
        self.root = os.path.abspath(root) + os.sep
        self.script = os.path.abspath(script)
        self.context = ""
        self.data: dict[str, set[str]] = {}
        self.lists: dict[str, set[str]] = {}
        self.spawns: set[str] = set()

    def hook(self, event: str, args: tuple) -> None:
        if event not in _WATCHED:
            return
        if event in _SPAWNS:
            self.spawns.add(self.context)
            return
        path = args[0] if args else None
        if event != "open" and path is None:
            path = "."  # os.listdir() and os.scandir() list the working directory
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        elif hasattr(path, "__fspath__"):
            path = os.fspath(path)
        if not isinstance(path, str):
            return
        if event == "open" and not _reading(args):
            return
        full = os.path.normpath(os.path.join(os.getcwd(), path))
        if not full.startswith(self.root) and full + os.sep != self.root:
            return
        reader = self._reader()
        if reader is None:
            return
        rel = os.path.relpath(full, self.root[:-1]).replace(os.sep, "/")
        (self.data if event == "open" else self.lists).setdefault(reader, set()).add("" if rel == "." else rel)

    def _reader(self) -> Optional[str]:
        """The innermost repository file on the stack (None for an import's or a traceback's open; "" for none)."""
        f = sys._getframe(2)
        while f is not None:
            fn = f.f_code.co_filename
            if any(s in fn for s in _NOT_A_READ):
                return None
            if fn.startswith(self.root) and fn != self.script:
                return os.path.relpath(fn, self.root[:-1]).replace(os.sep, "/")
            f = f.f_back  # type: ignore[assignment]
        return ""

    def to_json(self) -> dict:
        return {
            "data": {k: sorted(v) for k, v in self.data.items()},
            "lists": {k: sorted(v) for k, v in self.lists.items()},
            "spawns": sorted(self.spawns),
        }


def _reading(args: tuple) -> bool:
    """An "open" event of open() (a mode: os.open's is None) that reads: a mode without w, a or x. os.open is
    left out: its path may be relative to a dir_fd the event does not carry (shutil.rmtree's walk)."""
    mode = args[1] if len(args) > 1 else None
    return isinstance(mode, str) and not any(c in mode for c in "wax")


class Contexts:
    """Switches coverage's dynamic context per test, and per module/session fixture set-up."""

    def __init__(self, cov, reads: "Optional[Reads]" = None) -> None:  # type: ignore[no-untyped-def]
        self.cov = cov
        self.current = ""
        self.reads = reads

    def _switch(self, ctx: str) -> None:
        self.current = ctx
        if self.reads is not None:
            self.reads.context = ctx
        self.cov.switch_context(ctx)

    # With `reads`: a test module's collection (its imports, its parametrization) in a context of its own.
    def pytest_collectstart(self, collector):  # type: ignore[no-untyped-def]
        if self.reads is not None and isinstance(collector, pytest.Module):
            self._switch("collect:" + collector.nodeid)

    def pytest_collectreport(self, report):  # type: ignore[no-untyped-def]
        if self.reads is not None and self.current == "collect:" + report.nodeid:
            self._switch("")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):  # type: ignore[no-untyped-def]
        self._switch("test:" + item.nodeid)

    def pytest_runtest_logfinish(self, nodeid, location):  # type: ignore[no-untyped-def]
        self._switch("")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):  # type: ignore[no-untyped-def]
        # A module- or session-scoped fixture runs once, inside whichever test needs it first;
        # its lines get a context of their own, charged to every test under its scope node.
        if fixturedef.scope == "function":
            yield
            return
        before = self.current
        node = getattr(request, "node", None)
        self._switch("fixture:" + ("" if fixturedef.scope == "session" else getattr(node, "nodeid", "")))
        try:
            yield
        finally:
            self._switch(before)


def main(job_path: str) -> int:
    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    report: dict = {
        "files": {},
        "import_errors": {},
        "outcomes": {},
        "collected": [],
        "missing": [],
        "rc": None,
        "patch": None,
    }

    def write() -> None:
        with open(job["report"], "w", encoding="utf-8") as f:
            json.dump(report, f)

    import gc

    import torch

    torch.set_num_threads(1)
    gc.freeze()  # torch's import-time heap would otherwise be walked by every collection pytest forces
    if job.get("package_patch"):
        report["patch"] = apply_package_patch(job["package_patch"])
        if "error" in report["patch"]:
            write()
            return 3
    if job.get("torch_patch"):
        report["patch"] = apply_torch_patch(job["torch_patch"])
    cov = None
    reads: Optional[Reads] = None
    if job.get("coverage"):
        import coverage

        c = job["coverage"]
        cov = coverage.Coverage(data_file=c["data_file"], include=c["include"], omit=c.get("omit"), config_file=False)
        if job.get("reads"):
            reads = Reads(job["reads"]["root"], __file__)
            sys.addaudithook(reads.hook)
        cov.start()
    for module in job.get("modules", {}):
        where, error = _origin(module)
        report["files"][module] = where
        if error:
            report["import_errors"][module] = error
    recorder = Recorder()
    select = Select(job["tests"])
    plugins: list = [select, recorder]
    if cov is not None:
        plugins.append(Contexts(cov, reads))
    try:
        files = list(dict.fromkeys(t.split("::", 1)[0] for t in job["tests"]))
        report["rc"] = int(pytest.main([*job["pytest_args"], *files], plugins=plugins))
    finally:
        if cov is not None:
            cov.stop()
            cov.save()
        report["outcomes"], report["collected"] = recorder.outcomes, recorder.collected
        report["messages"] = recorder.messages
        report["missing"] = select.missing
        if reads is not None:
            report["reads"] = reads.to_json()
        write()
    return report["rc"]


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # not the script's own folder
    sys.exit(main(sys.argv[1]))
