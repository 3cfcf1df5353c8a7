"""Lifecycle faults of our own design, injected into upstream FlashInfer's wrappers, caught on its CPU model.

The catalogue (kernels/flashinfer/lifecycle_faults.py) patches the wrapper classes' plan() so that a wrapper
planned twice keeps state a fresh one would not. Each fault subject (the `lifecycle` explore target: the
flashinfer adapter on fa2 in the fault's API and mode) is explored with the `ci` budget's hunt counts and must
report a failure of a few calls, whose script exits 1; the same calls written against the library without the
fault (the `lifecycle-clean` subject of that API and mode) must exit 0, so what was caught is the fault, not a
defect the model copies from upstream. Those hunts report the failing example as found, unshrunk: shrinking was
nine tenths of their time and nothing there asserts on the shrunk form; that a lifecycle failure shrinks to at
most 4 calls is shown once, on a graph fault whose unshrunk example is longer. The clean subjects hold on their
own. The model's numerics are its own: nothing here is a verdict on FlashInfer, whose run is the GPU command of
docs/scenario-machines.md.
"""

from __future__ import annotations

import os
import runpy
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from conformance.explore.loop import BUDGETS, explore_subject
from conformance.explore.repro import write_repro
from conformance.explore.subjects import lifecycle_clean_name, lifecycle_clean_subjects, lifecycle_subjects
from kernels.flashinfer import lib as fl
from kernels.flashinfer import lifecycle_faults as lf
from kernels.standins import upstream
from kernels.standins._install import uninstall

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kernels"))
import fake_flashinfer as ff  # noqa: E402

CI = BUDGETS["ci"]
# The ci budget's hunt, its failure reported as found: at most `hunt_steps` rules, each a plan, a run or both.
HUNT = replace(CI, shrink=False)
# A graph fault whose first failing example (the ci budget's seed) is 5 calls long: shrunk, it must be 4 or fewer.
SHRUNK = "lifecycle-ragged_kv_indptr_same_batch-graph"
CLEAN = {s.name: s for s in lifecycle_clean_subjects("cpu")}


def run_script(path: Path) -> int:
    """A reproduction script's exit status, run in this process as `python path` would run it.

    The script installs the model and injects its fault for good, as a process would: undone here."""
    try:
        with pytest.raises(SystemExit) as e:
            runpy.run_path(str(path), run_name="__main__")
    finally:
        if fl.loaded_standin() is not None:
            lf.uninstall()
        uninstall()
    return int(e.value.code)


@pytest.mark.slow
@pytest.mark.parametrize("subject", lifecycle_subjects("cpu"), ids=lambda s: s.name)
def test_each_fault_is_caught_in_a_few_calls_and_the_same_calls_hold_without_it(subject, tmp_path: Path) -> None:
    r = explore_subject(subject, HUNT, tmp_path, hunt=True)
    assert r.failure is not None and r.exception is not None, f"the exploration let {subject.name} through"
    steps = r.exception.steps
    print(f"\n{subject.name}: {r.failure['invariant']} in {len(steps)} calls\n  " + "\n  ".join(r.failure["sequence"]))
    assert len(steps) <= 2 * HUNT.hunt_steps, "a handful of calls"
    assert run_script(Path(r.failure["repro"])) == 1
    clean = CLEAN[lifecycle_clean_name(subject.name)]
    assert run_script(write_repro(r.exception, clean, tmp_path / "clean")) == 0, "the calls fail without the fault"


def test_a_caught_fault_is_shrunk_to_a_few_calls(tmp_path: Path) -> None:
    """The ci budget's hunt as `attncheck explore --target lifecycle` runs it: the failure shrunk, its script
    still exits 1."""
    (subject,) = [s for s in lifecycle_subjects("cpu") if s.name == SHRUNK]
    r = explore_subject(subject, CI, tmp_path, hunt=True)
    assert r.failure is not None and r.exception is not None, f"the exploration let {subject.name} through"
    assert len(r.exception.steps) <= 4, r.failure["sequence"]
    # A hunt's examples are short already: what shrinking adds is the fewest keys that still show the fault.
    assert sum(sum(st.case.kv_lens) for st in r.exception.steps) <= 8, r.failure["sequence"]
    assert run_script(Path(r.failure["repro"])) == 1


@pytest.mark.parametrize("subject", CLEAN.values(), ids=lambda s: s.name)
def test_the_library_without_a_fault_holds(subject, tmp_path: Path) -> None:
    r = explore_subject(subject, CI, tmp_path)
    assert r.failure is None and not r.directed_failures, (r.failure, r.directed_failures)
    assert r.stats.runs > 0


def test_on_the_cpu_the_ledger_is_read_at_the_version_the_model_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever flashinfer this machine has installed (here: a 0.8.0 the ledger lists nothing for), the model is
    0.7.2.post1's: its empty decode batch raising in run() is that version's known defect."""
    from kernels import _env
    from scenarios.case import Case

    monkeypatch.setattr(_env, "library_versions", lambda: {"flashinfer": "0.8.0"})
    empty = Case("decode", (), (), 1, 1)
    for s in lifecycle_subjects("cpu") + list(lifecycle_clean_subjects("cpu")):
        assert s.known is not None and s.known(empty, "fa2") == ("flashinfer-decode-empty-batch-run", "error"), s.name


def _paged_plan(lib: object, w: object, causal: bool) -> None:
    i32 = lambda *v: torch.tensor(v, dtype=torch.int32)  # noqa: E731
    w.plan(i32(0, 2), i32(0, 1), i32(0), i32(2), 1, 1, 128, 2, causal=causal)  # type: ignore[attr-defined]


def test_a_fault_lives_on_the_wrapper_it_planned_is_labelled_and_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    with upstream.installed(sm90=True) as lib:
        cls = lib.BatchPrefillWithPagedKVCacheWrapper
        plan = cls.plan
        with lf.injected("paged_causal_first_plan"):
            assert fl.versions()["flashinfer"] == f"stand-in: {upstream.NAME}+fault:paged_causal_first_plan"
            kept, fresh = cls(torch.zeros(8, dtype=torch.uint8)), cls(torch.zeros(8, dtype=torch.uint8))
            _paged_plan(lib, kept, causal=True)
            _paged_plan(lib, kept, causal=False)
            _paged_plan(lib, fresh, causal=False)
            assert kept._causal is True and fresh._causal is False, "the first plan's causal, on its wrapper only"
            with lf.injected("paged_causal_first_plan"):  # injected again (a script inside the subject): one patch
                assert cls.plan.__wrapped__ is plan
            with pytest.raises(ValueError, match="'paged_causal_first_plan' is injected already"):
                lf.install("decode_window_first_plan")
        assert cls.plan is plan and "+fault" not in fl.versions()["flashinfer"]
        assert not [k for k in vars(cls) if k.startswith(lf.STATE)], "no fault state on the class"
    # A library that is no stand-in (the model without its label, as the real wheel reads) says it in its version.
    ff.install(monkeypatch)
    with lf.injected("decode_window_first_plan"):
        assert fl.versions()["flashinfer"].endswith("+fault:decode_window_first_plan")
    assert "+fault" not in fl.versions().get("flashinfer", "")


def test_the_catalogue_covers_every_api_in_both_modes_and_refuses_an_unknown_name() -> None:
    assert len(lf.FAULTS) >= 12
    covered = {(f.api, m) for f in lf.FAULTS.values() for m in f.modes}
    assert covered == {(api, m) for api in lf.API_CLASSES for m in ("eager", "graph")}
    assert all(f.mode in lf.MODES and "\n" not in f.models for f in lf.FAULTS.values())
    with pytest.raises(ValueError, match="lifecycle fault 'stale'.*paged_causal_first_plan"):
        lf.fault("stale")


def test_the_subjects_draw_no_mask_where_upstream_has_a_mask_defect_of_its_own() -> None:
    """Ragged eager and paged graph draw no custom mask (LIFECYCLE_LIMITS): the stale ragged mask and the
    zero-pages graph mask would spend a hunt's examples on defects the ledger already knows."""
    from conformance.explore.machines import machine_for

    masked = {}
    for name, s in CLEAN.items():
        assert s.context is not None
        with s.context():  # the model installed as flashinfer, as the runner does
            masked[name] = machine_for(s).profile.mask
    assert masked["lifecycle-clean-ragged"] is False and masked["lifecycle-clean-paged-graph"] is False, masked
    assert masked["lifecycle-clean-paged"] is True, masked
