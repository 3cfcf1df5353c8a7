"""The machines in CI on the CPU: the torch target and the correct stand-in hold; every seed defect is caught.

Each fault-injected adapter must be caught twice: by the directed sequence its seed describes, and
by the exploration on its own, which shrinks the sequence, keeps it in the run's database (a rerun
replays it first) and writes a reproduction script that exits 1, while the same calls written
against the correct stand-in exit 0. The faults are the ROCm fork stand-in's (kernels/standins/faults.py),
driven through the flashinfer adapter. Scripts run here in-process (runpy, as `python script.py`
would); tests/explore/test_scenario_repro.py runs both script kinds in a fresh interpreter.
The shrunk sequences are printed (`pytest -rP` shows them); docs/scenario-machines.md records them.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from conformance.explore.directed import GRAPH_ONLY
from conformance.explore.loop import BUDGETS, SUMMARY_NAME, explore_subject, main
from conformance.explore.machines import ScenarioFailure, Subject
from conformance.explore.repro import write_repro
from conformance.explore.subjects import fault_subjects, standin_subjects
from kernels.standins._install import uninstall
from kernels.standins.faults import FAULTS

CI = BUDGETS["ci"]
# Invariants that may legitimately name each defect class first (which one does depends on the
# shrunk sequence), and the directed sequence that must catch it.
CATCHERS = {
    "gate_first_plan_only": {"history_independent", "agrees_with_routing_spec"},
    # no_unexpected_error: the kept mask sends a later fp8 plan to fa2, which has no fp8 kernel on ROCm
    "mask_not_cleared": {
        "no_unexpected_error",
        "output_matches_oracle",
        "history_independent",
        "agrees_with_routing_spec",
    },
    "empty_is_short": {"agrees_with_routing_spec"},
    "graph_repromote": {"every_element_written", "output_matches_oracle", "agrees_with_routing_spec"},
    "reason_collision": {"agrees_with_routing_spec"},
}
DIRECTED = {
    "gate_first_plan_only": "ragged: long then short",
    "mask_not_cleared": "ragged: masked then unmasked",
    "empty_is_short": "ragged: empty batch then short",
    "graph_repromote": "ragged: capture then re-plan",
    "reason_collision": "ragged: short then long",
}


def test_catalogues_agree() -> None:
    assert set(CATCHERS) == set(DIRECTED) == set(FAULTS)


def test_torch_target_holds_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--target", "torch", "--budget", "ci", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / SUMMARY_NAME).read_text())
    assert [s["subject"] for s in summary["subjects"]] == ["torch-auto-cpu", "torch-flex-cpu"]
    assert summary["failed"] == []
    printed = capsys.readouterr().out
    for s in summary["subjects"]:
        assert s["failure"] is None
        assert s["examples"] >= CI.examples and s["runs"] > 0
        assert {d["status"] for d in s["directed"]} <= {
            "passed",
            "skipped: capture_and_replay does not apply here",
            GRAPH_ONLY,
        }
        assert (tmp_path / "hypothesis-db" / s["subject"]).is_dir()
        assert f"{s['subject']}:" in printed
        # Re-plans checked by a run, on cases with query rows and keys, several times each (issue 17, "Draws").
        assert s["checked"].get("replan_then_run", 0) >= 3, s["checked"]
    flex = summary["subjects"][1]["checked"]
    assert flex.get("soft_cap", 0) >= 1 and flex.get("sm_scale", 0) >= 1, flex


def test_bad_usage_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--target", "nope", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert main(["--target", "torch", "--device", "meta", "--out", str(tmp_path)]) == 2
    assert "--device='meta'" in capsys.readouterr().err


@pytest.mark.parametrize("subject", standin_subjects(), ids=lambda s: s.name)
def test_the_correct_standin_holds(subject: Subject, tmp_path: Path) -> None:
    r = explore_subject(subject, CI, tmp_path)
    assert r.failure is None, "\n".join(r.failure["sequence"]) if r.failure else ""
    assert not r.directed_failures
    graph = subject.name.endswith("-graph")
    ran = {d["name"].split(": ")[1] for d in r.directed if d["status"] == "passed"}
    assert ("capture then re-plan" in ran) == graph


@pytest.mark.parametrize("subject", fault_subjects(), ids=lambda s: s.name)
def test_each_fault_is_caught_shrunk_and_reproduced(subject: Subject, tmp_path: Path) -> None:
    fault = subject.name.removeprefix("fault-")
    r = explore_subject(subject, CI, tmp_path, hunt=True)
    failed = {d["name"] for d in r.directed_failures}
    assert DIRECTED[fault] in failed, f"the directed sequence {DIRECTED[fault]!r} let {fault} through"
    assert r.failure is not None, f"the exploration let {fault} through"
    f = r.failure
    assert f["invariant"] in CATCHERS[fault], f
    assert len(f["sequence"]) <= 4, "shrunk to a handful of calls"
    print(f"\n{fault}: caught by {f['invariant']} (also {f['also']})\n  " + "\n  ".join(f["sequence"]))

    assert run_script(Path(f["repro"])) == 1

    # The same calls against the correct stand-in: the script must not claim a defect.
    failure = _rerun(subject, f, len(r.defects))
    correct = next(
        s for s in standin_subjects() if s.name == ("standin-gfx942-graph" if FAULTS[fault].graph else "standin-gfx942")
    )
    assert run_script(write_repro(failure, correct, tmp_path / "control")) == 0


def run_script(path: Path) -> int:
    """A reproduction script's exit status, run as `python path` would run it (in this process).

    A stand-in script installs its library for good, as a process would; undone here for the next test.
    """
    try:
        with pytest.raises(SystemExit) as e:
            runpy.run_path(str(path), run_name="__main__")
    finally:
        uninstall()
    return int(e.value.code)


def _rerun(subject: Subject, record: dict, defects: int) -> ScenarioFailure:
    """The exploration's failure again, replayed from the database the run kept."""
    r = explore_subject(subject, CI, Path(record["repro"]).parents[1], hunt=True)
    assert r.exception is not None and r.failure is not None and r.failure["sequence"] == record["sequence"]
    # The saved failures first (a fault can show under several keys, and the shrinker saves each it meets); a
    # hunt reports one failure, so the replay stops at the first that fails again, never a new hunt.
    assert r.stats.examples <= 2 * defects + 2, "the kept database replays the shrunk failures first"
    return r.exception
