"""Start every mutation run in a process of its own: a fresh interpreter, or a fork of a pristine server.

Each run gets a new process, so a crash (a segfault, an abort in a library) ends that run only,
and nothing a run imports or patches can leak into the next. Two ways to get one:

* "exec": a new interpreter per run (`python child.py job.json`). Pays the imports of torch,
  pytest and hypothesis every time: about 3 s of CPU per run on a CI core.
* "forkserver" (default): one server interpreter imports those third-party modules once and
  then only forks; each run is a fork of that server, never of the parent. The server imports
  no repository module (it checks) and never initialises CUDA (it checks before every fork),
  so a run may create its own CUDA context as a fresh interpreter would: what does not survive
  a fork is a context created before it, and the server never has one.

Both take the same job: argv for child.py, a working directory (the run's copy), sys.path entries
to put first, the environment, a log file for stdout and stderr, and a timeout, after which the
run's whole process group is killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

ISOLATIONS = ("forkserver", "exec")
# Imported once by the server; every one is third-party (a repository module here would be a bug).
PRELOAD = (
    "torch",
    "torch.nn.attention.flex_attention",
    "torch._dynamo",
    "pytest",
    "_pytest.python",
    "hypothesis",
    "coverage",
    "tabulate",
)
REPO_PACKAGES = ("oracle", "scenarios", "kernels", "routing", "conformance", "reports", "tests")

_SERVER = r"""
import json, os, select, sys, traceback
preload, forbidden = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
for m in preload:
    try:
        __import__(m)
    except ImportError:
        pass
leaked = sorted(m for m in sys.modules if m.split(".")[0] in forbidden)
import gc, torch
gc.freeze()  # the preloaded heap: shared by every fork, never walked by their collections

def reply(obj):
    os.write(1, (json.dumps(obj) + "\n").encode())

if leaked:
    reply({"fatal": "the fork server imported repository modules: %s" % leaked})
    sys.exit(1)

def child(req):
    code = 1
    try:
        os.setpgid(0, 0)
        fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0); os.dup2(fd, 1); os.dup2(fd, 2)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        os.chdir(req["cwd"])
        os.environ.clear(); os.environ.update(req["env"])
        # What a fresh interpreter puts first: the copy, then every PYTHONPATH entry (a library the
        # runner installed with --target lives there, and the server was started without them).
        env_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[0:0] = list(dict.fromkeys(list(req["path"]) + env_path))
        sys.argv = list(req["argv"])
        sys.dont_write_bytecode = True
        import runpy
        try:
            runpy.run_path(req["argv"][0], run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush(); sys.stderr.flush()
        finally:
            os._exit(code)

jobs, buf, open_ = {}, b"", True
reply({"ready": os.getpid()})
while open_ or jobs:
    if open_:
        r, _, _ = select.select([0], [], [], 0.05)
        if r:
            chunk = os.read(0, 1 << 16)
            if not chunk:  # the parent is gone (close() kills its runs first): nobody waits for these
                open_ = False
                for pid in jobs:
                    try:
                        os.killpg(pid, 9)
                    except OSError:
                        pass
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                if torch.cuda.is_initialized():
                    reply({"id": req["id"], "status": None, "error": "CUDA was initialised in the fork server"})
                    continue
                pid = os.fork()
                if pid == 0:
                    child(req)
                try:  # the child's group, set here too: a kill may come before the child has run at all
                    os.setpgid(pid, pid)
                except OSError:
                    pass
                jobs[pid] = req["id"]
                reply({"id": req["id"], "pid": pid})
    else:
        select.select([], [], [], 0.05)
    while jobs:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        reply({"id": jobs.pop(pid), "status": os.waitstatus_to_exitcode(status),
               "cpu_s": usage.ru_utime + usage.ru_stime})
"""


@dataclass(frozen=True)
class Job:
    argv: tuple[str, ...]  # argv[0] is the script (child.py in the run's copy)
    cwd: Path
    path: tuple[str, ...]  # sys.path entries to put first (the copy)
    env: dict[str, str]
    log: Path
    timeout_s: float


@dataclass(frozen=True)
class Exit:
    returncode: Optional[int]  # negative: killed by that signal; None: never started
    timed_out: bool
    error: str = ""
    cpu_s: Optional[float] = None  # user + system CPU of the run's process (and its reaped children)


def child_env(extra_path: Sequence[str] = ()) -> dict[str, str]:
    """The environment of a run: the parent's, less pytest/xdist state, one intra-op thread."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE_"))}
    inherited = os.environ.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join([*extra_path, *([inherited] if inherited else [])])
    env.update(PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class ExecLauncher:
    """A new interpreter per run."""

    isolation = "exec"

    def __init__(self) -> None:
        self._live: set[int] = set()
        self._lock = threading.Lock()

    def run(self, job: Job) -> Exit:
        with open(job.log, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, *job.argv],
                cwd=job.cwd,
                env=job.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            with self._lock:
                self._live.add(proc.pid)
            try:
                proc.wait(timeout=job.timeout_s)
                return Exit(proc.returncode, False)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid)
                proc.wait()
                return Exit(proc.returncode, True)
            finally:
                with self._lock:
                    self._live.discard(proc.pid)

    def kill_all(self) -> None:
        with self._lock:
            pids = list(self._live)
        for pid in pids:
            _kill_group(pid)

    def close(self) -> None:
        self.kill_all()


class _Pending:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.done = threading.Event()
        self.pid: Optional[int] = None
        self.status: Optional[int] = None
        self.error = ""
        self.cpu_s: Optional[float] = None


class ForkServerLauncher:
    """Runs are forks of one server that has imported PRELOAD and nothing of the repository."""

    isolation = "forkserver"

    def __init__(self, env: dict[str, str]) -> None:
        server_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}  # the server sees no repository
        self._dir = tempfile.TemporaryDirectory(prefix="attncheck-forkserver-")
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, json.dumps(PRELOAD), json.dumps(REPO_PACKAGES)],
            cwd=self._dir.name,
            env=server_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._next = 0
        self._ready = threading.Event()
        self._fatal = ""
        threading.Thread(target=self._read, name="attncheck-forkserver", daemon=True).start()

    def _wait_ready(self) -> None:
        """The server imports while the caller prepares its first job; the first run() waits for it."""
        self._ready.wait(300)
        if self._fatal or not self._ready.is_set():
            raise RuntimeError(self._fatal or "the fork server did not start within 300 s")

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            msg = json.loads(raw)
            if "ready" in msg or "fatal" in msg:
                self._fatal = msg.get("fatal", "")
                self._ready.set()
                continue
            with self._lock:
                p = self._pending.get(msg["id"])
            if p is None:
                continue
            if "pid" in msg:
                p.pid = msg["pid"]
                p.started.set()
            else:
                p.status, p.error, p.cpu_s = msg["status"], msg.get("error", ""), msg.get("cpu_s")
                p.started.set()
                p.done.set()
        self._ready.set()
        with self._lock:  # the server is gone: nothing pending will ever finish
            for p in self._pending.values():
                p.error = p.error or "the fork server exited"
                p.started.set()
                p.done.set()

    def run(self, job: Job) -> Exit:
        self._wait_ready()
        p = _Pending()
        with self._lock:
            self._next += 1
            jid = self._next
            self._pending[jid] = p
        req = dict(id=jid, argv=list(job.argv), cwd=str(job.cwd), path=list(job.path), env=job.env, log=str(job.log))
        try:
            assert self._proc.stdin is not None
            with self._lock:
                self._proc.stdin.write((json.dumps(req) + "\n").encode())
                self._proc.stdin.flush()
            p.started.wait()
            timed_out = not p.done.wait(job.timeout_s)
            if timed_out and p.pid is not None:
                _kill_group(p.pid)
                p.done.wait()
            return Exit(p.status, timed_out, p.error, p.cpu_s)
        finally:
            with self._lock:
                self._pending.pop(jid, None)

    def kill_all(self) -> None:
        with self._lock:
            pids = [p.pid for p in self._pending.values() if p.pid is not None]
        for pid in pids:
            _kill_group(pid)

    def close(self) -> None:
        self.kill_all()
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._dir.cleanup()


def make_launcher(isolation: str, env: dict[str, str]) -> "ForkServerLauncher | ExecLauncher":
    return ForkServerLauncher(env) if isolation == "forkserver" else ExecLauncher()
