"""Staged runs: a target's own matrix and stages, stage records, the overlap of preparation, --time-budget."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import conformance.evaluate as ev
import conformance.parity_run as pr
from kernels import skips
from kernels.protocol import Stage
from kernels.torch_target import TARGET as TORCH
from reports.parity import render_markdown
from reports.records import ParityRecord, RunFooter, StageRecord, read_jsonl
from scenarios.case import Case
from scenarios.errors import InvalidValue

H = dict(num_qo_heads=4, num_kv_heads=2, head_dim_qk=64, head_dim_vo=64)
CASES = [Case("ragged", (3, 5), (9, 5), causal=True, **H), Case("paged", (4,), (20,), page_size=5, **H)]


class StagedTorch:
    """The torch target with a matrix and two stages whose preparation is observable."""

    name = "torch"

    def __init__(self, prepare_s: float = 0.0) -> None:
        self.events: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.prepare_s = prepare_s

    def __getattr__(self, name: str) -> Any:
        return getattr(TORCH, name)

    def matrix(self, budget: str, seed: int = 0, device: str = "cpu") -> list[Case]:
        return list(CASES)

    def _prepare(self, name: str) -> dict:
        with self.lock:
            self.events.append(("prepare-start", name))
        time.sleep(self.prepare_s)
        with self.lock:
            self.events.append(("prepare-end", name))
        return {"requested": [f"{name}-module"], "seconds": self.prepare_s, "error": None}

    def stages(self, cases: list[Case], backends: list[str], device: str, options: dict) -> list[Stage]:
        return [
            Stage("first", ("math",), prepare=lambda: self._prepare("first")),
            Stage("second", ("flash",), prepare=lambda: self._prepare("second")),
        ]


@pytest.fixture
def staged(monkeypatch: pytest.MonkeyPatch) -> StagedTorch:
    t = StagedTorch(prepare_s=0.2)
    monkeypatch.setattr(pr, "get_target", lambda name: t)
    return t


def test_the_targets_matrix_and_stages_are_used(staged: StagedTorch, tmp_path: Any) -> None:
    out = pr.run_parity("torch", "cpu", "quick", str(tmp_path), backends=["math", "flash"])
    recs = read_jsonl(out.results_path)
    kinds = [type(r).__name__ for r in recs]
    assert kinds == [
        "RunHeader",
        "StageRecord",
        "ParityRecord",
        "ParityRecord",
        "StageRecord",
        "ParityRecord",
        "ParityRecord",
        "RunFooter",
    ]
    stages = [r for r in recs if isinstance(r, StageRecord)]
    assert [(s.stage, s.backends, s.prepare["requested"]) for s in stages] == [
        ("first", ["math"], ["first-module"]),
        ("second", ["flash"], ["second-module"]),
    ]
    parity = [r for r in recs if isinstance(r, ParityRecord)]
    assert [r.backend for r in parity] == ["math", "math", "flash", "flash"]
    assert {r.case_id for r in parity} == {c.id for c in CASES}
    assert all(r.status == "pass" for r in parity)
    md = render_markdown(recs)
    assert "## Stages and JIT prebuild" in md and "second-module" not in md and "| second" in md
    assert "## Outcomes by backend and feature" in md and "## Compile and run time by backend" in md


def test_the_next_stage_prepares_while_this_one_runs(
    staged: StagedTorch, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = ev.evaluate

    def slow(adapter: Any, *a: Any, **k: Any) -> ParityRecord:
        with staged.lock:
            staged.events.append(("case", adapter.backend))
        time.sleep(0.15)
        return real(adapter, *a, **k)

    monkeypatch.setattr(ev, "evaluate", slow)
    pr.run_parity("torch", "cpu", "quick", str(tmp_path), backends=["math", "flash"])
    events = staged.events
    # stage two's preparation starts before stage one's cases are done
    assert events.index(("prepare-start", "second")) < max(i for i, e in enumerate(events) if e == ("case", "math"))
    assert events.index(("prepare-end", "first")) < events.index(("case", "math"))


def test_time_budget_records_what_was_not_run(staged: StagedTorch, tmp_path: Any) -> None:
    staged.prepare_s = 0.3
    out = pr.run_parity("torch", "cpu", "quick", str(tmp_path), backends=["math", "flash"], time_budget_s=0.2)
    recs = read_jsonl(out.results_path)
    skipped = [r for r in recs if isinstance(r, ParityRecord) and r.status == "skip"]
    assert skipped and all(skips.constant_of(r.reason) == skips.TIME_BUDGET for r in skipped)
    assert "--time-budget 0.2 s" in skipped[0].reason
    assert isinstance(recs[-1], RunFooter) and out.exit_status == 0  # every pair has a record


def test_a_nonpositive_time_budget_is_a_usage_error(staged: StagedTorch, tmp_path: Any) -> None:
    with pytest.raises(InvalidValue, match="time-budget"):
        pr.run_parity("torch", "cpu", "quick", str(tmp_path / "x"), time_budget_s=0)
    assert not (tmp_path / "x").exists()


def test_a_target_without_stages_writes_no_stage_record(tmp_path: Any) -> None:
    out = pr.run_parity("torch", "cpu", "quick", str(tmp_path), backends=["math"], cases=CASES[:1])
    assert not any(isinstance(r, StageRecord) for r in read_jsonl(out.results_path))
