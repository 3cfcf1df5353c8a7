"""The torch subjects read the known-failure ledger, and a failed run is asked about the kernel it reported.

On the H200 the torch subject's directed masked sequences ended on cuDNN's fully masked rows, the ledger's
`torch-sdpa-empty-rows`, reported as new findings: the subjects had no `known`, and an auto run is the kernel it
ran (the ledger's rules are written per kernel). docs/evidence/2026-12-03-h200-2/README.md.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance.explore.loop import MachineBudget, explore_subject
from conformance.explore.subjects import subjects_for
from kernels.torch_state_faults import injected
from scenarios.case import Case

BUDGET = MachineBudget("directed", examples=0, steps=1, hunt=0, hunt_steps=1)


def test_a_torch_subject_knows_the_ledger_at_the_installed_torch() -> None:
    """The CPU's one torch entry, jagged math's bf16 scores, on a case its rule names; not on another backend."""
    subject = subjects_for("torch", "cpu")[0]
    assert subject.known is not None
    case = Case("ragged", (3, 1), (4099, 7), 4, 4, head_dim_qk=64, head_dim_vo=64, input_scale=4.0)
    assert subject.known(case, "nested-math") == ("torch-nested-math-scores-in-half", "fail")
    assert subject.known(case, "math") is None


def test_a_failed_auto_run_is_explained_by_the_entry_of_the_kernel_it_ran(tmp_path: Path) -> None:
    """An entry for the kernel auto reported (CPU flash here) explains the kept mask's failure: the step is
    known, and no directed sequence fails; asked about `auto` alone, masked-then-unmasked was a finding. The
    entry is one whose output is not the case's alone (a race): one that is would have the pristine control
    asked, which calls the kept mask history (tests/explore/test_pristine_control.py)."""
    subject = next(s for s in subjects_for("torch", "cpu") if s.name == "torch-auto-cpu")
    subject = replace(subject, exclude_layouts={"paged": "one layout is enough here"})
    asked: list[str] = []

    def known(case: Any, backend: str) -> Any:
        asked.append(backend)
        return ("flashinfer-fa3-lse-after-empty-tile", "fail") if backend == "flash" else None

    with injected("mask_kept"):
        r = explore_subject(replace(subject, known=known), BUDGET, tmp_path)
    assert "flash" in asked
    assert [d["name"] for d in r.directed if d["status"] == "failed"] == [], r.directed
