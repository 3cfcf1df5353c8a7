"""Reproduction scripts run standalone: a fresh interpreter, outside the checkout, exit 1 on the defect.

Both kinds of scripts/repro.py are run here as `python script.py`:
* a library script, for a fault-injected model caught by a directed sequence;
* a torch-only script, for a torch adapter wrapped with a defect of its own. Plain torch does not
  show that defect, so the script exits 0; under a torch whose SDPA loses a row it exits 1.
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernels import get_target
from kernels.protocol import KernelOutput, Support
from scenarios.poison import poison
from routing.spec import RoutingEnv
from routing.specs import TORCH_SDPA
from scenarios.case import Case
from conformance.explore.directed import directed_for, run_directed
from conformance.explore.subjects import fault_subjects
from conformance.explore.machines import Recipe, ScenarioFailure, Subject, Violation, machine_for
from conformance.explore.repro import write_repro
from kernels.standins._install import uninstall
from scenarios.tensors import Inputs

# Loaded at interpreter start through PYTHONPATH: SDPA's last query row comes back NaN.
BROKEN_SDPA = """
import torch.nn.functional as F
_sdpa = F.scaled_dot_product_attention
def _broken(*args, **kwargs):
    out = _sdpa(*args, **kwargs).clone()
    if out.shape[-2]:
        out[..., -1, :] = float("nan")
    return out
F.scaled_dot_product_attention = _broken
"""


class DropsARowAfterItsFirstRun:
    """The torch `auto` adapter, except that every run after the first leaves its last row unwritten."""

    target = "torch"

    def __init__(self, backend: str = "auto", device: str = "cpu") -> None:
        self.inner = get_target("torch").make(backend, device)
        self.backend, self.device, self.runs = backend, device, 0

    def supports(self, case: Case) -> Support:
        return self.inner.supports(case)

    def plan(self, inputs: Inputs) -> None:
        self.inner.plan(inputs)

    def run(self, inputs: Inputs) -> KernelOutput:
        out = self.inner.run(inputs)
        self.runs += 1
        if self.runs > 1 and out.out.shape[0]:
            poison(out.out[-1:])
        return out

    def fresh(self) -> "DropsARowAfterItsFirstRun":
        return DropsARowAfterItsFirstRun(self.backend, self.device)


def directed_failure(subject: Subject, name: str) -> ScenarioFailure:
    with subject.context() if subject.context else contextlib.nullcontext():
        machine = machine_for(subject)
        (seq,) = [d for d in directed_for(machine.profile, None) if d.name == name]
        status, failure = run_directed(machine, seq)
    assert status == "failed" and failure is not None, status
    return failure


def standalone(script: Path, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """`python script` in a fresh interpreter, from a directory outside the checkout."""
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, str(script)], cwd=cwd, env={**clean, **env}, capture_output=True, text=True, timeout=300
    )


def test_a_library_script_reproduces_standalone(tmp_path: Path) -> None:
    subject = next(s for s in fault_subjects() if s.name == "fault-mask_not_cleared")
    failure = directed_failure(subject, "paged: masked then unmasked")
    script = write_repro(failure, subject, tmp_path / "failures", "directed")
    assert script.with_suffix(".pt").is_file()
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env python") and failure.invariant in text
    assert "install(arch='gfx942', fault='mask_not_cleared')" in text and "from oracle" not in text
    done = standalone(script, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REPRODUCED at step 4" in done.stdout and "custom mask" in done.stdout


ROOT = str(Path(__file__).resolve().parents[2])
PACKAGES = ("scenarios", "oracle", "kernels", "routing", "conformance", "reports")
# Runs a script as if attncheck were not installed: its packages are found only on a sys.path entry inside
# the folder given, whatever site-packages holds (an editable install included).
NOT_INSTALLED = """
import importlib.machinery as m, runpy, sys
script, inside = sys.argv[1], sys.argv[2]
class NotInstalled:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] not in %r:
            return None
        if path is not None:
            return m.PathFinder.find_spec(name, path)
        spec = m.PathFinder.find_spec(name, [p for p in sys.path if p.startswith(inside)])
        if spec is None:
            raise ModuleNotFoundError(name)
        return spec
sys.meta_path.insert(0, NotInstalled)
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
""" % (PACKAGES,)


def test_a_library_script_holds_no_path_of_the_checkout_and_runs_from_anywhere(tmp_path: Path) -> None:
    """Copied out of the checkout with its data and run from another folder, a script finds attncheck installed
    (here: PYTHONPATH); not installed, it finds the checkout it lies in. Either way it reproduces."""
    subject = next(s for s in fault_subjects() if s.name == "fault-mask_not_cleared")
    failure = directed_failure(subject, "paged: masked then unmasked")
    checkout = tmp_path / "checkout"
    script = write_repro(failure, subject, checkout / "attncheck-out", "directed")
    assert ROOT not in script.read_text()
    away, cwd = tmp_path / "copied", tmp_path / "cwd"
    for d in (away, cwd):
        d.mkdir()
    for f in (script, script.with_suffix(".pt")):
        shutil.copy(f, away / f.name)
    for pkg in PACKAGES:
        (checkout / pkg).symlink_to(Path(ROOT) / pkg)
    installed = standalone(away / script.name, cwd, PYTHONPATH=ROOT)
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    inside = subprocess.run(
        [sys.executable, "-c", NOT_INSTALLED, str(script), str(checkout)],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=300,
    )
    for done in (installed, inside):
        assert done.returncode == 1 and "REPRODUCED at step 4" in done.stdout, done.stdout + done.stderr


def test_a_library_scripts_run_is_synchronised_inside_its_try(tmp_path: Path) -> None:
    """On a GPU a kernel's fault surfaces at the next sync: the run is synchronised inside its try, so the fault
    is that run's reproduction, not a traceback later or nothing at all
    (docs/evidence/2026-12-01-flashinfer-h200-session-5.md: a plain flashinfer script said "every call held" for
    a run that had read a mask at address 0)."""
    subject = next(s for s in fault_subjects() if s.name == "fault-mask_not_cleared")
    script = write_repro(directed_failure(subject, "paged: masked then unmasked"), subject, tmp_path, "directed")
    text = script.read_text()
    body = text[text.index("got = adapter.run(inputs)") :]
    assert "torch.cuda.synchronize()" in body[: body.index("except Exception")], body[:300]


def test_a_library_scripts_control_that_raises_is_its_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh adapter that raises on the same plan is what the machine reports (history_independent); the
    script says so and exits 1, where it used to end in a traceback ("could not run: exit status 1")."""
    from kernels.flashinfer.adapter import FlashInferKernel

    subject = next(s for s in fault_subjects() if s.name == "fault-mask_not_cleared")
    script = write_repro(directed_failure(subject, "paged: masked then unmasked"), subject, tmp_path, "directed")
    made: list[Any] = []
    init, plan, run = FlashInferKernel.__init__, FlashInferKernel.plan, FlashInferKernel.run

    def counted(self: Any, *a: Any, **kw: Any) -> None:
        made.append(self)
        self._ran_once = False
        init(self, *a, **kw)

    def ran(self: Any, inputs: Any) -> Any:
        self._ran_once = True
        return run(self, inputs)

    def control_raises(self: Any, inputs: Any) -> None:  # an adapter made after another one ran
        if any(a._ran_once for a in made[: made.index(self)]):
            raise RuntimeError("BatchPrefillWithPagedKVCache failed with error invalid argument")
        plan(self, inputs)

    monkeypatch.setattr(FlashInferKernel, "__init__", counted)
    monkeypatch.setattr(FlashInferKernel, "run", ran)
    monkeypatch.setattr(FlashInferKernel, "plan", control_raises)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), pytest.raises(SystemExit) as done:
            runpy.run_path(str(script), run_name="__main__")
    finally:
        uninstall()  # the script installed the stand-in for good, as a process would
    assert done.value.code == 1 and "a fresh adapter raised RuntimeError" in buf.getvalue(), buf.getvalue()


def test_a_torch_script_uses_only_torch_and_blames_torch_only_when_torch_is_wrong(tmp_path: Path) -> None:
    subject = Subject(
        name="torch-drops-a-row",
        target="torch",
        backend="auto",
        make=lambda b: DropsARowAfterItsFirstRun(b),
        specs={"auto": TORCH_SDPA},
        env=RoutingEnv(arch="unknown", device="cpu"),
        recipe=Recipe("torch"),
    )
    failure = directed_failure(subject, "ragged: long then short")
    assert failure.invariant == "every_element_written"
    script = write_repro(failure, subject, tmp_path / "failures", "directed")
    imports = {line.split()[1] for line in script.read_text().splitlines() if line.startswith(("import ", "from "))}
    assert {m.split(".")[0] for m in imports} <= {"math", "sys", "pathlib", "warnings", "torch"}, imports

    with pytest.raises(SystemExit) as e:  # torch is right: the defect was the adapter's
        runpy.run_path(str(script), run_name="__main__")
    assert e.value.code == 0

    patch = tmp_path / "broken-torch"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(BROKEN_SDPA)
    done = standalone(script, tmp_path, PYTHONPATH=str(patch))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REPRODUCED at step 2" in done.stdout and "NaN or never written" in done.stdout


CASES = [
    Case("ragged", (5, 0, 17), (9, 4, 0), 4, 2, head_dim_qk=64, head_dim_vo=64, causal=True),
    Case(
        "paged",
        (6, 4),
        (40, 13),
        4,
        1,
        head_dim_qk=64,
        head_dim_vo=64,
        page_size=5,
        mask="custom",
        kv_layout="HND",
        window_left=7,
    ),
    Case(
        "decode",
        (1, 1, 1),
        (3, 0, 30),
        8,
        2,
        head_dim_qk=64,
        head_dim_vo=64,
        page_size=16,
        q_dtype="fp32",
        kv_dtype="fp32",
        o_dtype="fp32",
    ),
    Case(
        "single",
        (9,),
        (4,),
        2,
        2,
        head_dim_qk=192,
        head_dim_vo=128,
        causal=True,
        q_dtype="fp16",
        kv_dtype="fp16",
        o_dtype="fp16",
    ),
    Case("ragged", (), (), 4, 1, head_dim_qk=64, head_dim_vo=64),
]


def test_a_torch_script_replays_what_the_adapters_ran(tmp_path: Path) -> None:
    """Every layout, mask, window, GQA, empty request and backend: real torch gives what the adapters gave."""
    subject = Subject(
        name="torch-every-call",
        target="torch",
        backend="auto",
        make=lambda b: get_target("torch").make(b, "cpu"),
        explicit=("math", "flash", "flex"),
        specs={"auto": TORCH_SDPA},
        env=RoutingEnv(arch="unknown", device="cpu"),
        recipe=Recipe("torch"),
    )
    m = machine_for(subject)()
    for i, case in enumerate(CASES):
        m.plan_case("plan", case, 0)
        m.run()
        for backend in subject.explicit[:2] if i else subject.explicit:  # flex once: each shape compiles
            m.explicit(backend)
    runs = [s for s in m.steps if s.call == "run" and s.outcome == "ok"]
    assert {s.backend for s in runs} == {"auto", "math", "flash", "flex"} and len(runs) >= 12
    failure = ScenarioFailure(subject.name, m.steps, [Violation("output_matches_oracle", "(synthetic)")])
    script = write_repro(failure, subject, tmp_path, "synthetic")
    with pytest.raises(SystemExit) as e:
        runpy.run_path(str(script), run_name="__main__")
    assert e.value.code == 0


def test_a_script_leaves_auto_unchecked_where_no_spec_has_rows() -> None:
    """A FlashInfer version without routing rows gives `auto` no expectation: its scripts must not report
    a route problem for every run (with no spec, an explicit backend is still held to the one asked for)."""
    from conformance.explore.machines import Step
    from conformance.explore.script_parts import SCRIPT_CHECKS, expected_route

    case = Case("ragged", (3,), (5,), 1, 1)
    ns: dict = {"DATA": {"expect": {1: expected_route(Step(1, "run", "run", "auto", case, 0))}}}
    ns["DATA"]["expect"][2] = expected_route(Step(2, "run", "run", "fa2", case, 0))
    exec(SCRIPT_CHECKS, ns)
    assert ns["against_spec"](1, "fa3", "NOT_REPORTED", True) == []
    assert ns["against_spec"](2, "fa3", "NOT_REPORTED", True) == ["ran 'fa3', the routing spec expects 'fa2'"]
