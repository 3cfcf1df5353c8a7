"""A fresh control from library state no call has touched: a fork taken before the first call, forked again per control.

The fresh adapter `history_independent` compares with lives in the process of the wrapper under test, so state a
library keeps outside its wrappers (a module-level cache, a patched function's memory of its last call) reaches it
too: a defect kept there shows in both, and was judged the case's own, its script (the case alone, in a fresh
process) then not reproducing. The server is a fork of the exploring process taken before its first library call;
for each control it forks a child that makes the subject's adapter anew, materializes the same case and seed,
plans, runs and sends back what it got, then exits: every control starts from the state the fork was taken in, and
none leaves anything behind for the next.

CUDA: a forked child can create a CUDA context only where its parent never had one. The server is not started in
a process that has one already (`PristineControl.unavailable` says so) and never creates one itself; each child
creates its own. Failures of the server (a child killed by a signal, no answer in time) come back as `Answer.error`,
never raised into the machine.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import select
import signal
import struct
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Optional

import torch

from kernels.protocol import KernelOutput, reason_from_json, reason_to_json
from scenarios.case import Case
from scenarios.tensors import materialize

# Seconds a control may take before the server is given up (eager FlexAttention traces anew in every child:
# about a second on a CPU; a JIT module loads from its cache).
TIMEOUT_S = 300.0
_HEADER = struct.Struct("<Q")
ERRORS_KEPT = 5

# name of a subject -> a context manager yielding (what makes its adapter for a backend, its device)
SubjectOpener = Callable[[str], ContextManager[tuple[Callable[[str], Any], str]]]


@dataclass
class Answer:
    """What the pristine control's child got: its output, or the error it raised or died of."""

    output: Optional[KernelOutput] = None
    error: str = ""  # "TypeName: message" for a raise; "the control's process ..." for a death or a timeout
    raised: bool = False  # the library raised (an observation), as opposed to the control failing to run


def _send(fd: int, obj: Any) -> None:
    data = pickle.dumps(obj)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _recv(fd: int, deadline: Optional[float] = None) -> Any:
    """One message from `fd`; EOFError when the writer closed it first, TimeoutError past `deadline`."""

    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise TimeoutError
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    (n,) = _HEADER.unpack(exactly(_HEADER.size))
    return pickle.loads(exactly(n))


def _tensor_bytes(t: Optional[torch.Tensor]) -> Optional[bytes]:
    if t is None:
        return None
    buf = io.BytesIO()
    torch.save(t.detach().cpu(), buf)
    return buf.getvalue()


def _tensor(b: Optional[bytes], device: str) -> Optional[torch.Tensor]:
    return None if b is None else torch.load(io.BytesIO(b), weights_only=True).to(device)


def _control(opener: SubjectOpener, request: tuple[str, str, dict[str, Any], int]) -> dict[str, Any]:
    """In the server's child: the subject's adapter for the backend made anew, the case's plan and run."""
    name, backend, case_json, seed = request
    torch.set_num_threads(1)  # as the machines run; and a fork must not start an OpenMP pool its parent used
    with opener(name) as (make, device):
        inputs = materialize(Case.from_json(case_json), seed, device)
        adapter = make(backend)
        try:
            adapter.plan(inputs)
            out = adapter.run(inputs)
        except Exception as e:  # noqa: BLE001 - a raise is what the control observed
            return {"raised": f"{type(e).__name__}: {e}"[:2000]}
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return {
            "out": _tensor_bytes(out.out),
            "lse": _tensor_bytes(out.lse),
            "lse_base": out.lse_base,
            "backend": out.resolved_backend,
            "reason": reason_to_json(out.fallback_reason),
        }


def _serve(requests: int, answers: int, opener: SubjectOpener) -> None:
    """The server: for each request, a child computes the control; its answer (or how it died) is passed on."""
    os.setpgid(0, 0)  # its own group, its children in it: close() can end both, a terminal's Ctrl-C neither
    while True:
        try:
            request = _recv(requests)
        except EOFError:
            return
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, answer, leave without running anything of the parent's at exit
            code = 0
            try:
                os.close(r)
                try:
                    reply: dict[str, Any] = _control(opener, request)
                except BaseException as e:  # noqa: BLE001 - the control could not run: said so, not raised
                    reply = {"failed": "".join(traceback.format_exception_only(type(e), e)).strip()[-2000:]}
                _send(w, reply)
            except BaseException:  # noqa: BLE001
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        try:
            reply = _recv(r)
        except EOFError:
            reply = None
        finally:
            os.close(r)
        _, status = os.waitpid(pid, 0)
        if reply is None:
            how = (
                f"signal {os.WTERMSIG(status)}"
                if os.WIFSIGNALED(status)
                else f"exit {os.waitstatus_to_exitcode(status)}"
            )
            reply = {"failed": f"the control's process ended ({how}) before answering"}
        _send(answers, reply)


class PristineControl:
    """The server, forked now: `ask(subject, backend, case, seed)` answers from state no call has touched since."""

    def __init__(self, opener: SubjectOpener, device: str, timeout_s: float = TIMEOUT_S) -> None:
        self.device = device
        self.timeout_s = timeout_s
        self.unavailable = ""
        self.pid = 0
        self.asked = 0  # controls asked for
        self.answered = 0  # of those, answered by a child that ran (its output, or the library's raise)
        self.errors: list[str] = []  # why the others had none, the first ERRORS_KEPT
        if device.startswith("cuda") and torch.cuda.is_initialized():
            self.unavailable = "CUDA was initialised in this process before the server could fork"
            return
        req_r, self._req_w = os.pipe()
        self._ans_r, ans_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(self._req_w)
                os.close(self._ans_r)
                _serve(req_r, ans_w, opener)
            except BaseException:  # noqa: BLE001
                code = 1
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(ans_w)
        self.pid = pid

    def ask(self, subject: str, backend: str, case: Case, seed: int) -> Answer:
        """The control's answer for one plan and run; an Answer with `error` where none could be had."""
        self.asked += 1
        answer = self._ask(subject, backend, case, seed)
        if answer.output is not None or answer.raised:
            self.answered += 1
        elif len(self.errors) < ERRORS_KEPT:
            self.errors.append(answer.error[:500])
        return answer

    def account(self) -> dict[str, Any]:
        """What the summary keeps of it: controls asked and answered, the first errors, why none could run."""
        return {
            "asked": self.asked,
            "answered": self.answered,
            "errors": list(self.errors),
            "unavailable": self.unavailable,
        }

    def _ask(self, subject: str, backend: str, case: Case, seed: int) -> Answer:
        if self.unavailable:
            return Answer(error=f"no pristine control: {self.unavailable}")
        try:
            _send(self._req_w, (subject, backend, case.to_json(), seed))
            reply = _recv(self._ans_r, time.monotonic() + self.timeout_s)
        except (OSError, EOFError, TimeoutError) as e:
            why = f"no answer in {self.timeout_s:g} s" if isinstance(e, TimeoutError) else f"{type(e).__name__}: {e}"
            self.close()
            self.unavailable = f"the server failed ({why}) and was stopped"
            return Answer(error=f"no pristine control: {self.unavailable}")
        if "failed" in reply:
            return Answer(error=f"the pristine control could not run: {reply['failed']}")
        if "raised" in reply:
            return Answer(error=reply["raised"], raised=True)
        out = _tensor(reply["out"], self.device)
        assert out is not None
        return Answer(
            KernelOutput(
                out,
                _tensor(reply["lse"], self.device),
                reply["lse_base"],
                reply["backend"],
                reason_from_json(reply["reason"]),
            )
        )

    def close(self) -> None:
        """Stop the server (it ends when its request pipe closes; killed if it does not)."""
        if not self.pid:
            return
        pid, self.pid = self.pid, 0
        for fd in (self._req_w, self._ans_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        for _ in range(50):
            done, _status = os.waitpid(pid, os.WNOHANG)
            if done:
                return
            time.sleep(0.02)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # the server and a control still running
        os.waitpid(pid, 0)

    def __enter__(self) -> "PristineControl":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
