"""Progress of long runs (conformance/progress.py): the time left, estimated from the items done, and a
heartbeat while one item runs long, through `attncheck run`, `sweep` and `explore`."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from conformance import cli, parity_run, sweep
from conformance.explore import loop
from conformance.progress import Heartbeat, duration, pace
from scenarios.case import Case
from cli_case import SMALL

SLOW_S = 0.25  # each item of the CLI runs below is made to take this long; the heartbeat is a fifth of it
LEFT = r"[\d.]+ s elapsed, about [\d.]+ s left"


def test_the_time_left_is_the_time_per_item_so_far_times_the_items_left() -> None:
    assert pace(10, 40, 30.0) == "30 s elapsed, about 1 min 30 s left"
    assert pace(0, 5, 2.0) == "2.0 s elapsed, time left not yet known"
    assert pace(40, 40, 75.0) == "1 min 15 s elapsed"
    assert [duration(s) for s in (4.31, 59.4, 125.0, 3725.0)] == ["4.3 s", "59 s", "2 min 05 s", "1 h 02 min"]


def test_the_heartbeat_beats_while_its_item_runs_and_stops_when_it_ends() -> None:
    said: list[str] = []
    with Heartbeat(0.02, said.append) as beat:
        beat.begin("case X on math")
        deadline = time.monotonic() + 5
        while len(said) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        beat.end()
        n = len(said)
        time.sleep(0.1)
    assert n >= 2 and len(said) == n, said
    assert all(re.fullmatch(r"  still on case X on math, [\d.]+ s", line) for line in said), said


def _slowed(fn: Any) -> Any:
    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(SLOW_S)
        return fn(*args, **kwargs)

    return slow


CASE = Case.from_json(SMALL)
RUNS = {
    "run": (
        ["run", "--device", "cpu", "--backend", "math", "--case", json.dumps([SMALL, {**SMALL, "causal": False}])],
        f"still on case {CASE.id} on math, ",
        rf"\[1/2\] records written, {LEFT}",
    ),
    "sweep": (
        ["sweep", "--device", "cpu", "--a", "math", "--b", "flash", "--rows", "1x32", "--q", "2,4"]
        + ["--heads", "2/1", "--head-dim", "8", "--dtype", "fp32", "--reps", "3", "--warmup", "0"],
        "still on configuration paged/bs1/kv32/q2, ",
        rf"\[1/2\] paged/bs1/kv32/q2: .*; {LEFT}",
    ),
    "explore": (
        ["explore", "--subject", "torch-auto-cpu", "--examples", "1", "--steps", "1", "--no-verify"],
        "still on subject torch-auto-cpu, ",
        r"\[1/1\] subjects done, [\d.]+ s elapsed",
    ),
}


@pytest.mark.parametrize("command", list(RUNS))
def test_a_long_item_says_it_is_still_running_and_progress_gives_the_time_left(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--heartbeat S`: a line every S seconds while one item runs, naming it; progress lines with the time spent
    and the time left (each case, configuration or subject is slowed by SLOW_S)."""
    argv, beat, progress = RUNS[command]
    monkeypatch.setattr(parity_run._InProcess, "evaluate", _slowed(parity_run._InProcess.evaluate))
    monkeypatch.setattr(sweep, "time_interleaved", _slowed(sweep.time_interleaved))
    monkeypatch.setattr(loop, "explore_subject", _slowed(loop.explore_subject))
    monkeypatch.chdir(tmp_path)
    code = cli.main([*argv, "--heartbeat", str(SLOW_S / 5), "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert beat in out, out
    assert re.search(progress, out), out


def test_a_stage_whose_preparation_runs_long_gets_the_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """FlashInfer's first stage builds its JIT modules before any case runs (minutes on a cold cache): the
    heartbeat names the stage's preparation while the run waits on it, as it names a long case."""
    from kernels import get_target
    from kernels.protocol import Stage

    def prepare() -> dict:
        time.sleep(SLOW_S)
        return {"built": 0}

    target = type(get_target("torch"))
    monkeypatch.setattr(target, "stages", lambda self, *a: [Stage("builds", ("math",), prepare)], raising=False)
    argv = ["run", "--device", "cpu", "--backend", "math", "--case", json.dumps(SMALL)]
    assert cli.main([*argv, "--heartbeat", str(SLOW_S / 5), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "still on stage builds's preparation, " in out, out
