"""Running out of memory ends a subject as an environment failure, never as a defect with a script.

On the H200 one subject process holding most of the device made its neighbours' kernels fail with
OutOfMemoryError; those were recorded as defects whose scripts did not reproduce. Here an adapter
that runs out of memory at its Nth run stands in for the crowded device. Beside it, what an exploration
leaves behind: no adapter holding its buffers after an example, nothing in the working directory, and a
crash mid-run told apart from bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from conformance.explore.loop import SUMMARY_NAME, Summary, _budget, _merge, explore_subject
from conformance.explore.subjects import torch_subjects
from kernels._env import out_of_memory
from scenarios.case import Case


class _RunsOutOfMemory:
    """An adapter that behaves like `inner` until its `after`th run, which raises as a full device does."""

    runs = 0

    def __init__(self, inner: Any, after: int) -> None:
        self.inner, self.after = inner, after

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, inputs: Any) -> Any:
        type(self).runs += 1
        if type(self).runs >= self.after:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 128.00 MiB")
        return self.inner.run(inputs)


@pytest.mark.parametrize(
    ("error", "environment"),
    [
        (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
        (RuntimeError("CUDA error: out of memory"), True),
        (RuntimeError("Failed to allocate memory: cudaErrorMemoryAllocation"), True),
        (MemoryError(), True),
        (RuntimeError("CUDA error: an illegal memory access was encountered"), False),
        (ValueError("the plan is out of memory order"), False),
    ],
    ids=["torch-oom", "cuda-oom-text", "allocator-text", "host", "illegal-access", "other-type"],
)
def test_what_counts_as_running_out_of_memory(error: BaseException, environment: bool) -> None:
    assert out_of_memory(error) is environment


@pytest.mark.parametrize("after", [1, 6], ids=["in-the-warm-up", "while-exploring"])
def test_out_of_memory_ends_the_subject_as_its_environment_not_a_defect(after: int, tmp_path: Path) -> None:
    base = torch_subjects("cpu")[0]
    _RunsOutOfMemory.runs = 0
    subject = replace(base, make=lambda b: _RunsOutOfMemory(base.make(b), after))
    r = explore_subject(subject, _budget("ci", 4, 4), tmp_path)
    assert r.environment is not None, "an OutOfMemoryError must end the subject as its environment"
    assert r.environment["phase"] == ("warm-up" if after == 1 else "directed")
    assert f"out of memory during {'the warm-up' if after == 1 else 'run'}" in r.environment["error"]
    assert "host memory" in r.environment["error"]
    if after > 1:
        assert "OutOfMemoryError" in r.environment["sequence"][-1]
    assert r.failure is None and r.defects == [], "running out of memory is not a finding"
    assert not (tmp_path / "failures").exists(), "no script for what an idle device would not reproduce"

    summary = Summary("torch", "ci", 0, "cpu", [r])
    assert summary.failed() == [] and summary.incomplete() == [base.name]
    assert summary.exit_status == 1, "a run its environment cut short has not held"
    assert summary.to_json()["incomplete"] == [base.name]

    # A GPU run's parent merges each child's summary the same way.
    a = argparse.Namespace(out=str(tmp_path), target="torch", budget="ci", seed=0, device="cuda")
    assert _merge(a, [r.to_json()]) == 1
    merged = json.loads((tmp_path / SUMMARY_NAME).read_text())
    assert merged["failed"] == [] and merged["incomplete"] == [base.name]


def _record(name: str, caught: bool) -> dict[str, Any]:
    failure = {"invariant": "output_matches_oracle"} if caught else None
    return {"subject": name, "examples": 1, "steps": 1, "runs": 1, "failure": failure, "directed": []}


@pytest.mark.parametrize(
    ("target", "caught", "key", "listed", "status"),
    [
        ("lifecycle", (True, True), "escaped", [], 0),
        ("lifecycle", (True, False), "escaped", ["b"], 1),
        ("lifecycle-clean", (False, False), "failed", [], 0),
        ("lifecycle-clean", (False, True), "failed", ["b"], 1),
        ("flashinfer", (True, False), "failed", ["a"], 1),
    ],
    ids=["faults-all-caught", "fault-escaped", "clean-held", "clean-failed", "library-failed"],
)
def test_a_merged_gpu_run_judges_fault_targets_by_what_escaped(
    target: str, caught: tuple[bool, bool], key: str, listed: list[str], status: int, tmp_path: Path
) -> None:
    """A GPU run merges its children's summaries: a fault target passes when every fault was caught, its
    clean comparison (and every other target) when every subject held, as an in-process run judges them."""
    a = argparse.Namespace(out=str(tmp_path), target=target, budget="ci", seed=0, device="cuda")
    assert _merge(a, [_record("a", caught[0]), _record("b", caught[1])]) == status
    merged = json.loads((tmp_path / SUMMARY_NAME).read_text())
    assert merged[key] == listed and ({"escaped", "failed"} - {key}).isdisjoint(merged)


class _ControlRaises(_RunsOutOfMemory):
    """An adapter whose fresh controls raise on every run, as a library does on a case it cannot run."""

    def fresh(self) -> Any:
        return _ControlRaises(self.inner.fresh(), 0)

    def run(self, inputs: Any) -> Any:
        if self.after == 0:
            raise RuntimeError("BatchPrefillWithPagedKVCache failed with error invalid argument")
        return self.inner.run(inputs)


@pytest.mark.parametrize("ledger", ["error", None], ids=["known-to-raise", "not-in-the-ledger"])
def test_a_fresh_control_that_raises_where_the_ledger_says_so_is_not_judged(ledger: Any, tmp_path: Path) -> None:
    """On the H200 the fresh control of a graph run over zero query rows raised (a ledger entry), and the run
    it controlled was reported as depending on its history."""
    base = torch_subjects("cpu")[0]
    known = (lambda case, backend: ("flashinfer-graph-no-query-rows", "error")) if ledger else None
    subject = replace(base, make=lambda b: _ControlRaises(base.make(b), 1), known=known)
    # whether a failure is found, not its shrunk form: unshrunk (shrinking it took most of the test's 30 s)
    r = explore_subject(subject, replace(_budget("ci", 2, 3), shrink=False), tmp_path)
    if ledger:
        assert r.failure is None, r.failure
    else:
        assert r.failure is not None and "a fresh adapter raised RuntimeError" in str(r.failure["details"])


# ---- device memory: what an example leaves behind ---------------------------------------------------------
def _decode_graph_subject() -> Any:
    from conformance.explore.subjects import lifecycle_clean_subjects

    return next(x for x in lifecycle_clean_subjects("cpu") if x.name == "lifecycle-clean-decode-graph")


DECODE = Case("decode", (1, 1), (12, 7), 4, 1, page_size=5)


def test_an_example_leaves_no_adapter_holding_its_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure's traceback keeps the example's adapters alive while Hypothesis shrinks (on the H200 a decode
    graph subject's process grew to 38 GiB so): teardown releases each one, the adapter the example used,
    the fresh controls its runs were checked against, and one replaced after a known violation."""
    from conformance.explore.machines import machine_for
    from kernels.flashinfer.adapter import FlashInferKernel

    controls: list[FlashInferKernel] = []
    fresh = FlashInferKernel.fresh
    monkeypatch.setattr(FlashInferKernel, "fresh", lambda self: controls.append(fresh(self)) or controls[-1])
    subject = _decode_graph_subject()
    with subject.context():  # upstream's CPU model installed as flashinfer
        m = machine_for(subject)()
        m.plan_case("plan", DECODE, 0)
        m.run()
        replaced = m.adapters["fa2"]  # as a known violation replaces it
        m._known_violation("fa2", "some-entry: output_matches_oracle: a note")
        m.plan_case("plan", DECODE, 0)
        m.run()
        kept = m.adapters["fa2"]  # as a failure's traceback keeps it
        assert kept._workspaces and replaced._workspaces
        m.teardown()
    assert controls and all(not c._workspaces and not c._slots for c in controls), "a fresh control kept its buffers"
    for a in (kept, replaced):
        assert not a._workspaces and not a._slots and not a._wrappers, "teardown left an adapter holding buffers"


@pytest.mark.parametrize(
    ("device", "held_gib", "reclaimed"), [("cuda", 5, True), ("cuda", 3, False), ("cpu", 5, False)]
)
def test_a_gpu_process_collects_only_when_it_holds_too_much(
    device: str, held_gib: int, reclaimed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full collection after every example cost more than the example's calls; above RECLAIM_ABOVE_BYTES
    (4 GiB) the process collects and hands its cached blocks back, so subjects beside it can allocate."""
    import gc

    from kernels import _env

    done: list[str] = []
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda d=None: held_gib << 30)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: done.append("empty_cache"))
    monkeypatch.setattr(gc, "collect", lambda *a: done.append("collect") or 0)
    assert _env.reclaim_memory(device) is reclaimed
    assert done == (["collect", "empty_cache"] if reclaimed else [])


def test_an_exploration_leaves_nothing_in_the_working_directory(tmp_path: Path) -> None:
    """Hypothesis caches the constants it reads from source under its home directory, `.hypothesis/` of the
    working directory unless told otherwise: a new user's checkout (or CI's) gained one per run."""
    cwd, out = tmp_path / "cwd", tmp_path / "out"
    cwd.mkdir()
    root = str(Path(__file__).resolve().parents[2])
    cmd = [sys.executable, "-m", "conformance", "explore", "--target", "torch", "--subject", "torch-auto-cpu"]
    cmd += ["--examples", "1", "--steps", "2", "--no-verify", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(cwd.iterdir()) == [], "the exploration wrote into the working directory"
    assert (out / ".hypothesis").is_dir() and (out / "scenario-summary.json").is_file()


def test_only_bad_arguments_exit_2_a_value_error_mid_run_is_no_usage_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """explore's command line read any ValueError as bad input ("error: ...", exit 2), one a library raised in
    the middle of the run too: CI then blamed the arguments for a crash."""
    from conformance.explore import loop

    def crash(*a: Any, **k: Any) -> Any:
        raise ValueError("a library's own ValueError")

    monkeypatch.setattr(loop, "explore", crash)
    args = ["--target", "torch", "--out", str(tmp_path / "o"), "--subject"]
    with pytest.raises(ValueError, match="library's own"):
        loop.main([*args, "torch-auto-cpu"])
    assert loop.main([*args, "no-such-subject"]) == 2
    assert not (tmp_path / "o").exists(), "a usage error wrote something"
