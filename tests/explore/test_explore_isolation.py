"""A GPU exploration survives what kills a process or its CUDA context (shown on the CPU).

Seen on the H200 runner: a FlashInfer call left the CUDA context dead, Hypothesis then "shrank" in the
dead context (Flaky), and the next subject died in its warm-up. Now a lost context ends only its
subject, unshrunk, with the calls that led there and a script; on a GPU every subject runs in a
process of its own, and one that dies leaves the calls it was making in its flight record.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

import conformance.explore.machines as machines
import conformance.explore.loop as loop
from kernels import get_target
from kernels.protocol import AttentionKernel
from routing.spec import RoutingEnv
from conformance.explore.loop import BUDGETS, SUMMARY_NAME, explore_in_children, explore_subject
from conformance.explore.machines import Recipe, Subject


class _DiesOnThirdPlan:
    """The torch math adapter, whose third plan raises as a kernel that kills the CUDA context would."""

    def __init__(self, inner: AttentionKernel, counter: list[int]) -> None:
        self._inner, self._counter = inner, counter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def plan(self, inputs: Any) -> None:
        self._counter[0] += 1
        if self._counter[0] == 3:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        self._inner.plan(inputs)

    def fresh(self) -> AttentionKernel:
        return self._inner.fresh()


def test_a_lost_context_ends_the_subject_unshrunk_with_its_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = [0]
    target = get_target("torch")
    # Decode only: no directed sequences (those are ragged and paged), so after the warm-up's one plan the
    # third plan is Hypothesis's, where shrinking would replay in the dead context.
    subject = Subject(
        name="dies",
        target="torch",
        backend="math",
        make=lambda b: _DiesOnThirdPlan(target.make(b, "cpu"), counter),
        specs={},
        env=RoutingEnv(arch="unknown", device="cpu"),
        recipe=Recipe("torch"),
        exclude_layouts={x: "decode only" for x in ("ragged", "paged", "single")},
    )
    monkeypatch.setattr(machines, "device_type", lambda device: "cuda")  # the checks a GPU subject makes
    monkeypatch.setattr(
        machines,
        "context_after_error",
        lambda device: (False, "AcceleratorError: an illegal memory access was encountered"),
    )
    r = explore_subject(subject, BUDGETS["ci"], tmp_path)
    assert r.failure is not None and r.failure["context_lost"] and r.failure["invariant"] == "no_unexpected_error"
    assert "not shrunk" in r.failure["details"]["no_unexpected_error"]
    assert r.failure["phase"] == "explore-context-lost" and not r.directed
    assert counter[0] == 3  # nothing ran after the loss: no shrinking, no further example
    assert r.failure["sequence"][-1].split()[1] == "plan" and "CUDA context lost" in r.failure["sequence"][-1]
    assert Path(r.failure["repro"]).exists()


def test_a_lost_contexts_script_is_run_in_a_fresh_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process whose context died can run nothing more, but a fresh one can: on the H200 three caught
    lifecycle faults ended this way, and their scripts were written and never checked."""

    counter = [0]
    target = get_target("torch")
    subject = Subject(
        name="dies",
        target="torch",
        backend="math",
        make=lambda b: _DiesOnThirdPlan(target.make(b, "cpu"), counter),
        specs={},
        env=RoutingEnv(arch="unknown", device="cpu"),
        recipe=Recipe("torch"),
        exclude_layouts={x: "decode only" for x in ("ragged", "paged", "single")},
    )
    monkeypatch.setattr(machines, "device_type", lambda device: "cuda")
    monkeypatch.setattr(machines, "context_after_error", lambda device: (False, "AcceleratorError: illegal address"))
    verified: list[Path] = []
    monkeypatch.setattr(
        loop, "verify_script", lambda script, device: (verified.append(script), ("reproduces", "REPRODUCED"))[1]
    )
    r = explore_subject(subject, BUDGETS["ci"], tmp_path, verify=True)
    assert r.failure is not None and r.failure["context_lost"]
    assert verified == [Path(r.failure["repro"])]
    assert r.failure["reproduces"] == "reproduces"


def test_a_warm_up_that_raises_is_the_subjects_failure(tmp_path: Path) -> None:
    counter = [2]  # the very first plan is the third
    target = get_target("torch")
    subject = Subject(
        name="warm",
        target="torch",
        backend="math",
        make=lambda b: _DiesOnThirdPlan(target.make(b, "cpu"), counter),
        specs={},
        env=RoutingEnv(arch="unknown", device="cpu"),
        recipe=Recipe("torch"),
    )
    r = explore_subject(subject, BUDGETS["ci"], tmp_path)
    assert r.failure["phase"] == "warm-up" and "illegal memory access" in r.failure["details"]["no_unexpected_error"]


def _args(out: Path, **kw: Any) -> argparse.Namespace:
    return argparse.Namespace(
        **{
            "target": "torch",
            "budget": "ci",
            "out": str(out),
            "device": "cpu",
            "seed": 0,
            "examples": 2,
            "steps": 3,
            "jobs": 1,
            **kw,
        }
    )


def test_each_subject_in_its_own_process_merges_into_one_summary(tmp_path: Path) -> None:
    assert explore_in_children(_args(tmp_path), ["torch-auto-cpu"]) == 0
    summary = json.loads((tmp_path / SUMMARY_NAME).read_text())
    (s,) = summary["subjects"]
    assert s["subject"] == "torch-auto-cpu" and s["failure"] is None and summary["failed"] == []
    assert summary["totals"]["runs"] > 0


def test_a_subject_whose_process_dies_reports_the_calls_it_was_making(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(machines.FAULT_ABORT_STEP, "2")
    assert explore_in_children(_args(tmp_path), ["torch-auto-cpu"]) == 1
    (s,) = json.loads((tmp_path / SUMMARY_NAME).read_text())["subjects"]
    f = s["failure"]
    assert f["invariant"] == "process_crashed" and "signal 6" in f["details"]["process_crashed"]
    assert len(f["sequence"]) == 2 and f["sequence"][-1].endswith("<- in progress")


class _FakeChild:
    """A subject's process that ends after `polls` polls, writing its summary; counts how many live at once."""

    live = peak = 0
    polls: dict[str, int] = {}
    dies: tuple[str, ...] = ()  # these write their directed results early, then die in the exploration

    def __init__(self, argv: list[str], stdout: Any, stderr: Any) -> None:
        self.subject = argv[argv.index("--subject") + 1]
        self.summary = Path(argv[argv.index("--out") + 1]) / argv[argv.index("--summary") + 1]
        self.partial = Path(argv[argv.index("--out") + 1]) / argv[argv.index("--partial") + 1]
        self.left, self.returncode = self.polls[self.subject], None
        stdout.write(f"{self.subject}: ran\n".encode())
        _FakeChild.live += 1
        _FakeChild.peak = max(_FakeChild.peak, _FakeChild.live)

    def poll(self) -> Any:
        self.left -= 1
        if self.left <= 0 and self.returncode is None and self.subject in self.dies:
            self.partial.write_text(
                json.dumps(
                    {"subject": self.subject, "directed": [{"name": "masked_then_unmasked", "status": "failed"}]}
                )
            )
            self.returncode, _FakeChild.live = -6, _FakeChild.live - 1
        if self.left <= 0 and self.returncode is None:
            self.summary.write_text(
                json.dumps(
                    {
                        "subjects": [
                            {
                                "subject": self.subject,
                                "examples": 1,
                                "steps": 1,
                                "runs": 1,
                                "failure": None,
                                "directed": [],
                            }
                        ]
                    }
                )
            )
            self.returncode, _FakeChild.live = 0, _FakeChild.live - 1
        return self.returncode


def test_jobs_children_run_at_once_and_merge_in_the_subjects_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    monkeypatch.setattr(subprocess, "Popen", _FakeChild)
    monkeypatch.setattr(_FakeChild, "live", 0)
    monkeypatch.setattr(_FakeChild, "peak", 0)
    monkeypatch.setattr(loop, "CHILD_POLL_S", 0.001)  # a fake child ends on a poll count, not on time
    monkeypatch.setattr(_FakeChild, "polls", {"s1": 40, "s2": 1, "s3": 1})  # s1 ends last
    assert explore_in_children(_args(tmp_path, jobs=2), ["s1", "s2", "s3"]) == 0
    assert _FakeChild.peak == 2  # never more than --jobs, and not one at a time
    summary = json.loads((tmp_path / SUMMARY_NAME).read_text())
    assert [s["subject"] for s in summary["subjects"]] == ["s1", "s2", "s3"] and summary["totals"]["runs"] == 3
    assert capsys.readouterr().out.count(": ran") == 3  # each child's log is printed when it ends


def test_a_subject_killed_in_its_exploration_keeps_its_directed_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen on the H200: six subjects interrupted in their exploration lost the directed results they had
    (their scripts stayed on disk, the summary said nothing of them). A child writes them as soon as
    they are known; the parent puts them in a dead child's record."""
    import subprocess

    monkeypatch.setattr(subprocess, "Popen", _FakeChild)
    monkeypatch.setattr(_FakeChild, "live", 0)
    monkeypatch.setattr(_FakeChild, "polls", {"s1": 1, "s2": 1})
    monkeypatch.setattr(loop, "CHILD_POLL_S", 0.001)  # a fake child ends on a poll count, not on time
    monkeypatch.setattr(_FakeChild, "dies", ("s1",))
    assert explore_in_children(_args(tmp_path, jobs=2), ["s1", "s2"]) == 1
    s1, s2 = json.loads((tmp_path / SUMMARY_NAME).read_text())["subjects"]
    assert s1["failure"]["invariant"] == "process_crashed" and s1["directed"] == [
        {"name": "masked_then_unmasked", "status": "failed"}
    ]
    assert s2["failure"] is None


def test_an_in_process_run_writes_each_subjects_directed_results_before_its_exploration(tmp_path: Path) -> None:
    from conformance.explore.loop import explore

    explore("torch", out=tmp_path, examples=1, steps=2, partial_name="partial.json", subjects=["torch-auto-cpu"])
    partial = json.loads((tmp_path / "partial.json").read_text())
    assert partial["subject"] == "torch-auto-cpu" and partial["directed"]
    assert all(d["status"].split(":")[0] in ("passed", "failed", "known", "skipped") for d in partial["directed"])
    assert any(d["status"] == "passed" for d in partial["directed"])


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--examples", "0"], "--examples=0"),
        (["--steps", "-1"], "--steps=-1"),
        (["--subject", "nope"], "--subject='nope'"),
        (["--jobs", "0"], "--jobs=0"),
    ],
)
def test_bad_counts_and_unknown_subjects_exit_2_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    from conformance.explore.loop import main

    assert main(["--target", "torch", "--out", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and "expected" in err
    assert not (tmp_path / "o").exists()  # nothing written
