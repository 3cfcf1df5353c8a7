"""`attncheck sweep`: interleaved A/B order, configurations a few at a time, records as produced, the CLI on CPU."""

from __future__ import annotations

import os
import types
from typing import Any

import pytest

import conformance.sweep as sweep
from conformance import cli
from kernels.protocol import Support
from reports.records import RunFooter, RunHeader, TimingRecord, read_jsonl

GRID = sweep.Grid(rows=((1, 32), (2, 32)), q_lens=(2, 4, 8), num_qo_heads=2, num_kv_heads=1, head_dim=8, dtype="fp32")


class FakeAdapter:
    def __init__(self, backend: str, log: list[str]) -> None:
        self.backend, self.log = backend, log

    def supports(self, case: Any) -> Support:
        return (
            Support.no("backend does not serve this layout: test")
            if case.qo_lens[0] == 8 and self.backend == "b"
            else Support.yes()
        )

    def plan(self, inputs: Any) -> None:
        self.log.append(f"plan {self.backend}")

    def run(self, inputs: Any) -> None:
        self.log.append(f"run {self.backend} q{inputs.case.qo_lens[0]}")


class FakeTimer:
    """Times nothing: every call takes 1 ms, so samples are known in advance."""

    name, cold_l2 = "wall", False

    def __call__(self, fn: Any) -> float:
        fn()
        return 1e-3


class FakeTarget:
    name = "fake"

    def __init__(self) -> None:
        self.log: list[str] = []

    def available(self, device: str) -> Support:
        return Support.yes()

    def backends(self, device: str) -> tuple[str, ...]:
        return ("a", "b")

    def make(self, backend: str, device: str) -> FakeAdapter:
        return FakeAdapter(backend, self.log)

    def versions(self) -> dict[str, str]:
        return {"fake": "1"}


def test_order_alternates_and_configs_are_allocated_a_chunk_at_a_time(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repetitions run A B, B A, ...; at most `chunk` inputs exist before they are timed; records land as produced."""
    target = FakeTarget()
    monkeypatch.setattr(sweep, "get_target", lambda name: target)
    real = sweep.materialize
    monkeypatch.setattr(
        sweep, "materialize", lambda case, seed, device: (target.log.append("alloc"), real(case, seed, device))[1]
    )
    seen: list[int] = []

    def progress(rec: TimingRecord, i: int, n: int) -> None:  # the file already holds the record
        seen.append(sum(isinstance(r, TimingRecord) for r in read_jsonl(os.path.join(tmp_path, "timing.jsonl"))))

    out = sweep.run_sweep(
        "fake", "cpu", ["a", "b"], GRID, str(tmp_path), reps=4, warmup=1, chunk=4, progress=progress, timer=FakeTimer()
    )
    assert seen == [1, 2, 3, 4, 5, 6]
    log = target.log
    assert log[:4] == ["alloc"] * 4 and log[4:6] == ["plan a", "plan b"]
    first = [e for e in log[6:] if e.startswith("run") and e.endswith("q2")][:10]
    assert first == [
        "run a q2",
        "run b q2",
        "run a q2",
        "run b q2",
        "run b q2",
        "run a q2",
        "run a q2",
        "run b q2",
        "run b q2",
        "run a q2",
    ]  # 1 warm-up pair, then A B / B A / ...
    assert log.index("alloc", 4) > max(i for i, e in enumerate(log) if e == "run a q2")
    recs = read_jsonl(out.path)
    assert isinstance(recs[0], RunHeader) and isinstance(recs[-1], RunFooter)
    timing = [r for r in recs if isinstance(r, TimingRecord)]
    assert [r.config_id for r in timing][:3] == ["paged/bs1/kv32/q2", "paged/bs1/kv32/q4", "paged/bs1/kv32/q8"]
    assert timing[0].samples == {"a": [1e-3] * 4, "b": [1e-3] * 4} and timing[0].timer == "wall"
    assert timing[2].status == "skip" and timing[2].samples == {} and "b: backend does not serve" in timing[2].reason


def test_sweep_on_the_cpu_writes_tables_and_a_recommendation(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """attncheck sweep --target torch --a math --b flash --device cpu: progress, timing.jsonl, a seeds-layout table,
    and report.html with its ratio plot."""
    out = str(tmp_path / "s")
    code = cli.main(
        [
            "sweep",
            "--target",
            "torch",
            "--a",
            "math",
            "--b",
            "flash",
            "--device",
            "cpu",
            "--rows",
            "1x32,2x16",
            "--q",
            "2,4",
            "--heads",
            "2/1",
            "--head-dim",
            "8",
            "--dtype",
            "fp32",
            "--reps",
            "3",
            "--warmup",
            "1",
            "--chunk",
            "3",
            "--out",
            out,
        ]
    )
    text = capsys.readouterr().out
    assert code == 0, text
    assert "[1/4] paged/bs1/kv32/q2: math " in text and "[4/4] paged/bs2/kv16/q4" in text
    md = open(os.path.join(out, "timing.md"), encoding="utf-8").read()
    assert "time(math) / time(flash)" in md and "| bs1/kv32 |" in md and "| bs2/kv16 |" in md
    assert "threshold" in md.lower()
    assert len([r for r in read_jsonl(os.path.join(out, "timing.jsonl")) if isinstance(r, TimingRecord)]) == 4
    page = open(os.path.join(out, "report.html"), encoding="utf-8").read()  # the same table, drawn
    assert "time(math) / time(flash)" in page and '<figure class="plot" id="plot-timing-0">' in page
    assert "report.html" in text


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--a", "math", "--b", "math"], "distinct backends"),
        (["--a", "math", "--b", "warp"], "'warp'"),
        (["--a", "math", "--b", "flash", "--reps", "2"], "--reps=2"),
        (["--a", "math", "--b", "flash", "--rows", "1by32"], "--rows='1by32'"),
        (["--a", "math", "--b", "flash", "--q", "8,4"], "--q='8,4'"),
        (["--a", "math", "--b", "flash", "--layout", "decode", "--q", "2"], "qo_lens"),
    ],
)
def test_bad_sweep_usage_exits_2_and_writes_nothing(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    code = cli.main(["sweep", "--device", "cpu", "--out", str(tmp_path / "s"), *args])
    assert code == 2
    assert needle in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_the_cuda_event_interval_starts_on_an_idle_gpu_after_the_flush() -> None:
    """The order of a timed CUDA call: flush, synchronize, start event, the call, end event (a fake torch records
    it). Without the synchronize, host launch work shorter than the flush is hidden from the interval."""
    from conformance.sweep import CudaEventTimer

    log: list[str] = []

    class Event:
        def __init__(self, enable_timing: bool) -> None:
            self.name = "start" if not any(x.startswith("event") for x in log) else "end"
            log.append(f"event {self.name}")

        def record(self) -> None:
            log.append(f"record {self.name}")

        def synchronize(self) -> None:
            log.append(f"wait {self.name}")

        def elapsed_time(self, other: "Event") -> float:
            return 2.0

    class Flush:
        def zero_(self) -> None:
            log.append("flush")

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event, synchronize=lambda *a: log.append("sync")))
    timer = CudaEventTimer.__new__(CudaEventTimer)
    timer._torch, timer._flush = fake, Flush()
    assert timer(lambda: log.append("call")) == 2.0e-3
    assert (
        log.index("flush")
        < log.index("sync")
        < log.index("record start")
        < log.index("call")
        < log.index("record end")
        < log.index("wait end")
    )
