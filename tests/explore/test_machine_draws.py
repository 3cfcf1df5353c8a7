"""What the machines draw (issue 17, "Draws"): explicit scales, soft caps wherever a backend takes them, a long
context now and then, re-plans checked by a run; and the same sequences from either entry point.

docs/scenario-machines.md, "What the machines draw", has the counts of a CI-budget run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import find, settings

from conformance.explore.machines import machine_for
from conformance.explore.subjects import torch_subjects
from scenarios import axes, strategies as S

PROFILE = S.Profile(layouts=("ragged", "paged", "decode", "single"), dtypes=("bf16", "fp16"))
REPO = Path(__file__).resolve().parents[2]


def test_a_plan_may_carry_an_explicit_scale_and_a_long_context_and_shrinks_without_them() -> None:
    scaled = find(S.batches(PROFILE), lambda c: c.sm_scale is not None)
    assert scaled.sm_scale in axes.SCENARIO_SM_SCALES
    long = find(S.batches(PROFILE), lambda c: max(c.kv_lens, default=0) >= axes.SCENARIO_LONG_KV[0])
    assert max(long.kv_lens) == axes.SCENARIO_LONG_KV[0], "shrinks to the shortest long context"
    plain = find(S.batches(PROFILE), lambda c: True)
    assert plain.sm_scale is None and max(plain.kv_lens, default=0) <= axes.SCENARIO_KV[1]


def test_a_profile_without_them_never_draws_them() -> None:
    off = S.Profile(layouts=PROFILE.layouts, dtypes=PROFILE.dtypes, long_kv=False, sm_scale=False)

    def drawn(c: object) -> bool:
        return c.sm_scale is not None or max(c.kv_lens, default=0) > axes.SCENARIO_KV[1]  # type: ignore[attr-defined]

    try:  # 200 plans: a profile that ignored either flag draws an explicit scale in one plan of four
        find(S.batches(off), drawn, settings=settings(max_examples=200, database=None))
    except Exception as e:  # noqa: BLE001 - hypothesis.errors.NoSuchExample
        assert type(e).__name__ == "NoSuchExample"
    else:
        raise AssertionError("a profile with long_kv and sm_scale off drew one")


def test_flexattention_is_explored_on_its_own_profile_with_soft_caps() -> None:
    """SDPA declines a soft cap, so the `auto` subject never draws one; the flex subject draws from flex's own
    profile, which takes it (a score_mod)."""
    by_backend = {s.backend: s for s in torch_subjects("cpu")}
    assert not machine_for(by_backend["auto"]).profile.soft_cap
    assert machine_for(by_backend["flex"]).profile.soft_cap


def _args(out: Path) -> list[str]:
    # One subject: the constants are pinned (or not) for the whole process, so a second one shows nothing more.
    args = ["--target", "torch", "--subject", "torch-auto-cpu", "--budget", "ci", "--examples", "6", "--no-verify"]
    return args + ["--out", str(out)]


def _digests(out: Path) -> dict[str, str]:
    summary = json.loads((out / "scenario-summary.json").read_text())
    return {s["subject"]: s["digest"] for s in summary["subjects"]}


def test_both_entry_points_draw_the_same_sequences_for_the_same_arguments(tmp_path: Path) -> None:
    """`attncheck explore` (the command line, here in this test process, which has every test module loaded) and
    `python -m conformance.explore.loop` (a GPU run's subject process: a fresh interpreter that loaded only what
    it needs) draw the same calls, though Hypothesis's local constants come from the modules each has loaded."""
    from conformance.cli import main

    assert main(["explore", *_args(tmp_path / "cli")]) == 0
    loop = [sys.executable, "-m", "conformance.explore.loop", *_args(tmp_path / "loop")]
    subprocess.run(loop, cwd=REPO, check=True, capture_output=True)
    cli = _digests(tmp_path / "cli")
    assert cli == _digests(tmp_path / "loop") and list(cli) == ["torch-auto-cpu"] and all(cli.values())


def test_a_subject_draws_from_the_pinned_constants_and_gives_them_back(tmp_path: Path, monkeypatch: Any) -> None:
    """While a subject runs, Hypothesis's local constants are the pinned pool, whatever the process has loaded
    (the two entry points load the same modules today, so their equal draws alone would not show a subject run
    without the pin); afterwards the library's own lookup is back."""
    from hypothesis.internal.conjecture import providers

    from conformance.explore import loop
    from conformance.explore.constants import pinned_pool

    own = providers._get_local_constants
    seen: list[bool] = []
    warm_up = loop.warm_up

    def watched(machine: Any) -> None:
        seen.append(providers._get_local_constants() is pinned_pool())
        warm_up(machine)

    monkeypatch.setattr(loop, "warm_up", watched)
    loop.explore("torch", subjects=["torch-auto-cpu"], budget="ci", examples=1, verify=False, out=tmp_path)
    assert seen == [True]
    assert providers._get_local_constants is own
