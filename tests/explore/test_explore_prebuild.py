"""`explore --prebuild`: every JIT module the subjects can load, named before the first subject runs.

On the H200 a sitting's explorations built their modules inside the examples that first needed them and
spent every step's time limit so (docs/evidence/2026-12-02-h200-explore-2/).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.explore.loop import main
from conformance.explore.prebuild import SOFT_CAP, WINDOW, axis_cases, module_requests
from conformance.explore.subjects import lifecycle_clean_subjects
from kernels.standins.upstream import installed
from scenarios.strategies import Profile


def test_one_case_per_module_axis_combination() -> None:
    prof = Profile(("paged", "decode"), ("bf16", "fp16"), head_dim_pairs=((128, 128), (192, 128)))
    cases = axis_cases(prof)
    seen = {(c.layout, c.q_dtype, c.head_dim_qk, c.window_left, c.logits_soft_cap) for c in cases if c.mask == "none"}
    assert len(seen) == 2 * 2 * 2 * 2 * 2, "layouts x dtypes x head dims x window x soft cap"
    assert {(c.window_left, c.logits_soft_cap) for c in cases} == {
        (-1, 0.0),
        (-1, SOFT_CAP),
        (WINDOW, 0.0),
        (WINDOW, SOFT_CAP),
    }
    assert {c.layout for c in cases if c.mask == "custom"} == {"paged"}, "one masked case per layout that takes masks"
    narrow = Profile(("ragged",), ("bf16",), window=False, soft_cap=False, mask=False, head_dim_pairs=((64, 64),))
    assert len(axis_cases(narrow)) == 1


def test_the_lifecycle_subjects_name_every_window_module_they_can_load() -> None:
    with installed(sm90=True):
        reqs = module_requests(list(lifecycle_clean_subjects("cpu")), "cpu")
    labels = [r.label for r in reqs]
    assert len(labels) == len(set(labels)), "each module once"
    gens = {r.generator for r in reqs}
    assert {"batch_prefill_fa2", "quantization"} <= gens, labels
    prefill = [r for r in reqs if r.generator == "batch_prefill_fa2"]
    assert {r.args[-2] for r in prefill} == {False, True}, labels  # (their profile draws no soft cap)
    assert {r.generator for r in reqs if r.args and r.args[-2]} == {"batch_prefill_fa2", "batch_decode"}, labels


def test_prebuild_on_a_cpu_says_there_is_nothing_to_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--target", "torch", "--subject", "torch-auto-cpu", "--prebuild", "--examples", "1", "--steps", "2"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    assert "prebuild: nothing to build on cpu" in capsys.readouterr().out
