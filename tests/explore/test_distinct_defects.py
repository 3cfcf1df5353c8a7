"""Exploration past the first defect: every distinct one found, each with a script that reproduces.

A stand-in with two seed defects switched on (kernels/standins/faults.py) must yield both, each
shrunk to a few calls under its own signature, each script handed to the check in a fresh process
right after it is written; signatures tell defects apart by API, mode, backend, invariant, how it
failed, and whether a fresh wrapper agrees (conformance/explore/defects.py). The scripts are run
here in this process (as tests/explore/test_scenario_machines.py runs its scripts), and the first
also through that check, in a fresh process: one interpreter started, not one per defect.
"""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path
from typing import Any

import pytest

from conformance.explore import loop
from conformance.explore.defects import DefectBook, Found, signature_of
from conformance.explore.loop import MachineBudget, explore_subject
from conformance.explore.machines import ScenarioMachine, Violation
from conformance.explore.repro import verify_script
from conformance.explore.subjects import _standin_subject, standin_subjects
from kernels.standins._install import uninstall
from scenarios.case import Case

TWO = "mask_not_cleared+empty_is_short"


def test_the_exploration_goes_past_its_first_defect_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The exploration alone: the directed sequences would fail on these faults too, and each of their scripts
    # would be checked in a fresh process, which nothing here looks at.
    monkeypatch.setattr(loop, "directed_for", lambda profile, explicit: [])
    asked: list[Path] = []  # the scripts the exploration hands to the fresh-process check, in order
    monkeypatch.setattr(loop, "verify_script", lambda script, device: asked.append(script) or ("reproduces", ""))
    subject = _standin_subject(f"fault-{TWO}", "gfx942", False, TWO)
    # Unshrunk: what is asked is the rounds, each defect recorded once with a script that reproduces; the shrunk
    # form is asserted by tests/explore/test_lifecycle_faults.py.
    budget = MachineBudget("two", examples=60, steps=4, hunt=60, hunt_steps=4, shrink=False)
    r = explore_subject(subject, budget, tmp_path, verify=True)
    invariants = {d.failure["invariant"] for d in r.defects}
    assert "agrees_with_routing_spec" in invariants, [d.signature for d in r.defects]
    assert invariants & {"history_independent", "output_matches_oracle"}, [d.signature for d in r.defects]
    assert r.rounds >= 2 and r.failure == r.defects[0].failure
    keys = [d.signature.key for d in r.defects]
    assert len(keys) == len(set(keys)), "one record per signature"
    scripts = [Path(d.failure["repro"]) for d in r.defects]
    assert set(asked) == set(scripts) and len(asked) == len(scripts), "each defect's script checked once"
    for d, script in zip(r.defects, scripts):
        assert d.failure["reproduces"] == "reproduces", (d.failure["repro"], d.failure["replay"])
        code, out = _run_script(script)
        assert code == 1 and "REPRODUCED" in out, (script, out[-2000:])
    assert verify_script(scripts[0], subject.device)[0] == "reproduces", "the check itself, in a fresh process"


def _run_script(path: Path) -> tuple[int, str]:
    """`python path` in this process: (exit status, what it printed). A stand-in script installs its library
    for good, as a process would: undone here."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as e:
            runpy.run_path(str(path), run_name="__main__")
    finally:
        uninstall()
    return int(e.value.code or 0), out.getvalue()


def _case(**kw: object) -> Case:
    return Case("ragged", (3,), (5,), 2, 1, **kw)  # type: ignore[arg-type]


def test_a_signature_is_the_same_for_the_same_defect_and_apart_for_another() -> None:
    masked, plain = _case(mask="custom"), _case()
    a = signature_of(plain, "auto", False, [masked, plain], "output_matches_oracle", "out: max_abs=1.9 bound=0.004")
    b = signature_of(
        plain.replace(qo_lens=(7,), kv_lens=(9,)),
        "auto",
        False,
        [masked, plain],
        "output_matches_oracle",
        "out: max_abs=0.7 bound=0.002 worst at (1, 0, 3)",
    )
    assert a.key == b.key and "before: mask custom" in a.features and "re-plan" in a.features
    assert a.key != signature_of(plain, "fa2", False, [plain], "output_matches_oracle", "out: x=1").key
    assert a.key != signature_of(plain, "auto", False, [plain], "output_matches_oracle", "lse: x=1").key
    assert a.key != signature_of(plain, "auto", True, [plain], "output_matches_oracle", "out: x=1").key
    history = signature_of(plain, "auto", False, [plain], "output_matches_oracle", "out: x=1", ["history_independent"])
    assert history.scope == "history" and a.scope == "case"
    raised = signature_of(plain, "auto", False, [masked, plain], "no_unexpected_error", "run raised E: at 0x7f1 row 9")
    assert raised.scope == "history" and raised.kind == "run raised E: at # row #"
    # a stale flag: the long-lived wrapper says 'custom mask' whatever the case, a fresh one each case's reason
    stale = [
        "reason 'custom mask (not supported by AITER)', a fresh adapter's 'head_dim_qk=192 != head_dim_vo=128'",
        "reason 'custom mask (not supported by AITER)', a fresh adapter's \"query length <= 16 on ragged KV\"",
        "backend 'fa2', a fresh adapter's 'aiter'; reason 'custom mask (not supported by AITER)', "
        "a fresh adapter's None",
    ]
    keys = [signature_of(plain, "auto", False, [masked, plain], "history_independent", d).key for d in stale]
    assert keys[0] == keys[1] != keys[2]
    # the same from the control in a pristine process (conformance/explore/pristine.py): one defect too
    pristine = [d.replace("a fresh adapter's", "a fresh adapter's in a pristine process") for d in stale[:2]]
    pkeys = [signature_of(plain, "auto", False, [masked, plain], "history_independent", d).key for d in pristine]
    assert pkeys[0] == pkeys[1] != keys[0]
    book = DefectBook()
    assert book.add(Found(a, {}, 1, 0.0)) and not book.add(Found(b, {}, 2, 1.0))
    assert book.match(b) is book.found[0] and book.found[0].hits == 1


def test_a_flaky_outcome_is_replayed_in_a_fresh_process_and_reported_with_its_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure that does not repeat in the same process (state outliving an example: here a check that
    fails once per process) made the old machines end "Flaky" with nothing to replay. Now the first failure
    raised is written as a script and run in a fresh process at once: the record says flaky and not shrunk,
    and whether the script reproduced there (here it cannot), so a script that does not reproduce is never
    presented as the finding's reproduction."""
    real, rounds = ScenarioMachine._check, loop.explore_rounds
    state = {"armed": False}

    def fails_once(self: ScenarioMachine, *a: Any, **kw: Any) -> list[Violation]:
        got = real(self, *a, **kw)
        if state["armed"]:  # the exploration's first run, once
            state["armed"] = False
            return got + [Violation("output_matches_oracle", "out: max_abs=1 bound=0.01 (once per process)")]
        return got

    def armed(*a: Any, **kw: Any) -> None:
        state["armed"] = True
        rounds(*a, **kw)

    monkeypatch.setattr(ScenarioMachine, "_check", fails_once)
    monkeypatch.setattr(loop, "explore_rounds", armed)
    subject = standin_subjects()[0]
    r = explore_subject(subject, MachineBudget("flaky", examples=20, steps=4, hunt=20, hunt_steps=4), tmp_path)
    (d,) = r.defects
    f = d.failure
    assert "flaky" in f and f["shrunk"] is False and f["sequence"] and Path(f["repro"]).exists(), f
    assert f["reproduces"] == "does not reproduce", f.get("replay")
    assert r.failure == f
