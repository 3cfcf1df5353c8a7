"""The control from untouched library state (conformance/explore/pristine.py): what it answers, and what it changes.

A defect kept in library state outside the wrappers (kernels/torch_state_faults.py: SDPA remembering the last
mask it was given and applying it to a later unmasked call of the same shape) reaches the in-process fresh
adapter too; the pristine control, forked before the first call, does not see it, so the failure is judged the
history's.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
import os
import signal
from typing import Any, Iterator

import pytest
import torch

from conformance.explore import pristine as P
from conformance.explore.loop import MachineBudget, explore_subject
from conformance.explore.subjects import subjects_for
from conformance.isolate import INJECTED_ENV
from kernels.torch_state_faults import injected
from kernels.protocol import NOT_REPORTED, KernelOutput
from scenarios.case import Case
from scenarios.tensors import Inputs

CASE = Case("ragged", (2,), (3,), 2, 1, head_dim_qk=8, head_dim_vo=8, q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32")
STATE = {"value": 1.0}  # library state kept outside any adapter


class _Kernel:
    """A fake library call whose answer is module state at the time of the call."""

    def __init__(self, backend: str) -> None:
        self.backend = backend

    def plan(self, inputs: Inputs) -> None:
        if STATE["value"] == "raise":
            raise RuntimeError("the library refused")
        if STATE["value"] == "die":
            os.kill(os.getpid(), signal.SIGKILL)

    def run(self, inputs: Inputs) -> KernelOutput:
        c = inputs.case
        out = torch.full((c.total_qo, c.num_qo_heads, c.head_dim_vo), float(STATE["value"]))
        return KernelOutput(out, None, 2.0, self.backend, NOT_REPORTED)


def _opener(name: str) -> Any:
    assert name == "fake"
    return contextlib.nullcontext((_Kernel, "cpu"))


@pytest.fixture
def state() -> Iterator[dict[str, Any]]:
    before = dict(STATE)
    yield STATE
    STATE.clear()
    STATE.update(before)


def test_the_control_answers_from_the_state_the_server_was_forked_in(state: dict[str, Any]) -> None:
    with P.PristineControl(_opener, "cpu") as control:
        state["value"] = 7.0  # a call after the fork changed library state: the control does not see it
        a = control.ask("fake", "math", CASE, 0)
        assert a.output is not None and not a.error
        assert torch.equal(a.output.out, torch.ones(2, 2, 8))
        assert (a.output.resolved_backend, a.output.fallback_reason) == ("math", NOT_REPORTED)
        assert control.ask("fake", "math", CASE, 0).output is not None  # the server answers again
    assert control.pid == 0


def test_a_raise_is_an_observation_and_a_death_is_no_answer(state: dict[str, Any]) -> None:
    state["value"] = "raise"
    with P.PristineControl(_opener, "cpu") as control:
        a = control.ask("fake", "math", CASE, 0)
    assert a.raised and a.output is None and a.error == "RuntimeError: the library refused"
    state["value"] = "die"
    with P.PristineControl(_opener, "cpu") as control:
        a = control.ask("fake", "math", CASE, 0)
        assert not a.raised and a.output is None and "signal 9" in a.error
        assert control.ask("fake", "math", CASE, 0).error == a.error  # the server lives on
    assert control.account() == {"asked": 2, "answered": 0, "errors": [a.error, a.error], "unavailable": ""}


def test_no_server_where_cuda_was_initialised_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    control = P.PristineControl(_opener, "cuda:0")
    assert control.pid == 0 and "CUDA was initialised" in control.unavailable
    a = control.ask("fake", "math", CASE, 0)
    assert a.output is None and a.error.startswith("no pristine control: CUDA")


def test_a_defect_kept_in_library_state_is_the_historys_not_the_cases(tmp_path: Any) -> None:
    """The issue's stale mask in torch itself: the directed masked-then-unmasked sequence fails the oracle, the
    in-process fresh adapter repeats the failure (it reads the same kept mask), the pristine one does not."""
    subject = next(s for s in subjects_for("torch", "cpu") if s.name == "torch-auto-cpu")
    with injected("mask_kept"):
        r = explore_subject(subject, MachineBudget("directed", examples=0, steps=1, hunt=0, hunt_steps=1), tmp_path)
    failed = {d["name"]: d for d in r.directed if d["status"] == "failed"}
    assert "ragged: masked then unmasked" in failed, r.directed
    p = r.to_json()["pristine_control"]
    assert p["asked"] == p["answered"] >= len(failed) and p["errors"] == [] and p["unavailable"] == "", p
    for d in failed.values():
        details = d["failure"]["details"]
        assert "output_matches_oracle" in details
        assert "a fresh adapter's in a pristine process" in details["history_independent"], details


def test_the_pristine_control_is_asked_after_a_failure_unless_its_entrys_output_is_not_the_cases(
    tmp_path: Any,
) -> None:
    """Asked where the in-process control agreed with a failed run, also where a ledger entry explains the case
    with an output that is the case's alone (on the H200, 2026-12-03, torch-sdpa-empty-rows had spared the control
    under the kept mask: nothing told the fault's failure from the case's): the control's other answer is history,
    a finding. Not asked where the entry's output is not the
    case's (a race, unwritten rows: any control may differ), the failure then known; nor after runs that passed."""
    subject = next(s for s in subjects_for("torch", "cpu") if s.name == "torch-auto-cpu")
    budget = MachineBudget("directed", examples=0, steps=1, hunt=0, hunt_steps=1)
    with P.PristineControl(lambda name: contextlib.nullcontext((subject.make, "cpu")), "cpu") as control:
        explore_subject(subject, budget, tmp_path / "clean", pristine=control)
        assert control.asked == 0  # nothing failed
        with injected("mask_kept"):
            explore_subject(subject, budget, tmp_path / "kept", pristine=control)
        asked = control.asked
        assert asked > 0
        repeatable = replace(subject, known=lambda case, backend: ("torch-sdpa-empty-rows", "fail"))
        with injected("mask_kept"):
            r = explore_subject(repeatable, budget, tmp_path / "repeatable", pristine=control)
        assert control.asked == 2 * asked
        failed = [d for d in r.directed if d["status"] == "failed"]
        assert failed and all("history_independent" in d["failure"]["details"] for d in failed), r.directed
        racy = replace(subject, known=lambda case, backend: ("flashinfer-fa3-lse-after-empty-tile", "fail"))
        with injected("mask_kept"):
            r = explore_subject(racy, budget, tmp_path / "racy", pristine=control)
        assert control.asked == 2 * asked
        assert not [d for d in r.directed if d["status"] == "failed"], r.directed


def test_a_script_is_verified_under_the_fault_the_exploration_ran_under(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run under one of attncheck's faults (scripts/run_with_state_fault.py sets INJECTED_ENV) verifies its
    scripts in fresh processes that inject the same fault: the masked-then-unmasked script reproduces there."""
    subject = next(s for s in subjects_for("torch", "cpu") if s.name == "torch-auto-cpu")
    subject = replace(subject, exclude_layouts={"paged": "one layout is enough here"})
    monkeypatch.setenv(INJECTED_ENV, "kernels.torch_state_faults:mask_kept")
    with injected("mask_kept"):
        r = explore_subject(subject, MachineBudget("directed", 0, 1, 0, 1), tmp_path, verify=True)
    failed = {d["name"]: d["failure"] for d in r.directed if d["status"] == "failed"}
    assert list(failed) == ["ragged: masked then unmasked"], r.directed
    assert failed["ragged: masked then unmasked"]["reproduces"] == "reproduces", failed
