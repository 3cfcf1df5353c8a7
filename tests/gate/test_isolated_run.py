"""`attncheck run --isolate` and the ledger's crash entries: a crashing case is one record, and the run goes on."""

from __future__ import annotations

from dataclasses import replace
import json
import os
from typing import Any

import pytest

import conformance.evaluate as ev
import conformance.known_failures as kf
from conformance import cli
from conformance.gate import CRASHED, NOT_LAUNCHED
from reports.records import is_crash
from conformance.isolate import FAULT_ENV, HANG_ENV
from kernels import skips
from reports.records import ParityRecord, RunFooter, read_jsonl
from scenarios.case import Case

C1 = Case(
    "ragged", (3, 2), (7, 4), 4, 2, head_dim_qk=16, head_dim_vo=16, q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"
)
C2 = C1.replace(causal=True)
ARGS = [
    "run",
    "--device",
    "cpu",
    "--backend",
    "math",
    "--backend",
    "flash",
    "--case",
    json.dumps(C1.to_json()),
    "--case",
    json.dumps(C2.to_json()),
]


def test_a_case_that_aborts_or_hangs_is_named_and_the_run_finishes(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One case aborts its child, another hangs in it: a hung kernel never returns, so its child is killed once
    --case-timeout passes (seen on the H200: one hung call held a run for 7 min). Each is a crash record saying
    which, and every other case runs, in a fresh child."""
    monkeypatch.setenv(FAULT_ENV, f"flash:{C1.id}")
    monkeypatch.setenv(HANG_ENV, f"flash:{C2.id}")
    code = cli.main([*ARGS, "--isolate", "--case-timeout", "2", "--out", str(tmp_path)])
    assert code == 1
    recs = read_jsonl(str(tmp_path / "results.jsonl"))
    assert isinstance(recs[-1], RunFooter)
    parity = {(r.backend, r.case_id): r for r in recs if isinstance(r, ParityRecord)}
    aborted, hung = parity[("flash", C1.id)], parity[("flash", C2.id)]
    assert is_crash(aborted) and "SIGABRT" in aborted.reason
    assert is_crash(hung) and "no answer within 2 s (--case-timeout); the child was killed" in hung.reason
    assert [parity[("math", c.id)].status for c in (C1, C2)] == ["pass"] * 2
    report = open(os.path.join(tmp_path, "report.md"), encoding="utf-8").read()
    assert f"flash {C1.id}: error | {CRASHED}: killed by signal SIGABRT" in report


def test_a_child_that_never_becomes_ready_is_stopped_at_the_case_timeout(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--case-timeout bounds a child's start as well as each case (by the longer of it and CHILD_START_S): one
    that hangs before it is ready (a stuck import, a device that does not come up) is killed, and the case it was
    started for is a crash saying so."""
    from conformance import isolate

    monkeypatch.setenv(HANG_ENV, "start")
    monkeypatch.setattr(isolate, "CHILD_START_S", 1.0)  # the start's own limit, when longer than the case's
    code = cli.main(
        [*ARGS[:5], "--case", json.dumps(C1.to_json()), "--isolate", "--case-timeout", "2", "--out", str(tmp_path)]
    )
    assert code == 1
    (rec,) = [r for r in read_jsonl(str(tmp_path / "results.jsonl")) if isinstance(r, ParityRecord)]
    assert is_crash(rec) and "the child was not ready within 2 s (--case-timeout); it was killed" in rec.reason


def test_isolation_cannot_replay_a_captured_batch(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.tensors import materialize, save

    save(materialize(C1, 0), str(tmp_path / "b.pt"))
    code = cli.main(
        ["run", "--device", "cpu", "--inputs", str(tmp_path / "b.pt"), "--isolate", "--out", str(tmp_path / "o")]
    )
    assert code == 2 and "--isolate=True" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_crash_entry_is_not_launched(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ledger's crash entry keeps its case from running at all: a skip naming the entry (no --isolate needed)."""
    import torch

    entry = kf.KnownFailure(
        "torch-fake-crash",
        "torch",
        (torch.__version__,),
        "kills the process",
        "crash",
        "docs/evidence/none.py",
        False,
        "test",
        applies=lambda c, b: c == C1.to_json() and b == "flash",
    )
    monkeypatch.setattr(kf, "LEDGER", (entry,))
    assert cli.main([*ARGS, "--out", str(tmp_path)]) == 0  # launched, the case would run here and pass
    parity = {
        (r.backend, r.case_id): r for r in read_jsonl(str(tmp_path / "results.jsonl")) if isinstance(r, ParityRecord)
    }
    held = parity[("flash", C1.id)]
    assert held.status == "skip" and held.known == "torch-fake-crash"
    assert skips.constant_of(held.reason) == NOT_LAUNCHED and "not filed upstream yet" in held.reason


def test_a_dead_cuda_context_moves_the_rest_of_a_gate_run_to_child_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """After an error, a dead context is said in the record, and later cases go to a (lazily started) child."""
    import conformance.grid_run as gr
    from conformance.evaluate import CONTEXT_LOST, PENDING_CLEARED

    run = gr.GridRun("torch", "cpu", "quick", 0, "main")
    probes = iter([(True, "AcceleratorError: invalid argument"), (False, "AcceleratorError: illegal memory access")])
    monkeypatch.setattr(ev, "context_after_error", lambda device: next(probes))
    base = run.base

    monkeypatch.setattr(
        ev,
        "evaluate",
        lambda *a: ParityRecord(
            backend="math", case_id=C1.id, case=C1.to_json(), status="error", reason="RuntimeError: illegal", **base
        ),
    )

    def error() -> tuple[ParityRecord, bool]:  # as the grid's test evaluates in process
        return ev.evaluate_with_control(object(), C1, None, lambda: None, base, "cpu", CONTEXT_LOST)

    rec, _, _ = run.evaluate(C1, "math", error)  # a pending error, read and cleared: the run stays in process
    assert rec.reason == f"RuntimeError: illegal; {PENDING_CLEARED}: AcceleratorError: invalid argument"
    assert run.pairs.evaluator is None
    rec, entry, _ = run.evaluate(C1, "math", error)
    assert rec.reason == f"RuntimeError: illegal; {CONTEXT_LOST}: AcceleratorError: illegal memory access"
    assert entry is None and run.pairs.evaluator is not None and run.pairs.evaluator.starts == 0
    run.close(0.0)


def test_a_lost_context_in_process_hands_the_rest_of_the_run_to_child_processes(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --isolate: a library error that leaves a pending CUDA error is annotated (and the run goes on in
    process); one that leaves the context dead is named, and every later pair runs in a child process."""
    import conformance.parity_run as pr
    from conformance.evaluate import CONTEXT_LOST_IN_PROCESS, PENDING_CLEARED

    C3 = C1.replace(qo_lens=(2, 1))
    real = ev.evaluate
    probes = iter([(True, "AcceleratorError: invalid argument"), (False, "AcceleratorError: illegal memory access")])

    seen: set = set()

    def flaky(adapter: Any, case: Case, inputs: Any, get_truth: Any, base: dict) -> ParityRecord:
        rec = real(adapter, case, inputs, get_truth, base)
        first = (adapter.backend, case.id) not in seen
        seen.add((adapter.backend, case.id))
        if first and adapter.backend == "math" and case.id in (C1.id, C2.id):  # as if the library raised on a GPU
            rec = replace(rec, status="error", reason="RuntimeError: launch failed")
        return rec

    monkeypatch.setattr(ev, "evaluate", flaky)
    monkeypatch.setattr(ev, "context_after_error", lambda device: next(probes))
    starts: list[int] = []
    made = pr.IsolatedEvaluator

    def counted(*a: Any, **k: Any) -> Any:
        starts.append(1)
        return made(*a, **k)

    monkeypatch.setattr(pr, "IsolatedEvaluator", counted)
    code = cli.main([*ARGS, "--case", json.dumps(C3.to_json()), "--out", str(tmp_path)])
    assert code == 1
    parity = {
        (r.backend, r.case_id): r for r in read_jsonl(str(tmp_path / "results.jsonl")) if isinstance(r, ParityRecord)
    }
    assert PENDING_CLEARED in parity[("math", C1.id)].reason
    assert parity[("math", C1.id)].fresh == "pass"  # the case again on a fresh adapter (here: it passes)
    assert parity[("math", C2.id)].fresh is None  # no control in a lost context
    assert parity[("flash", C1.id)].status == "pass"  # the pending error was cleared: C1 went on in process
    assert CONTEXT_LOST_IN_PROCESS in parity[("math", C2.id)].reason
    assert starts == [1]  # from C2's flash on, a child process (the real evaluate there: all pass)
    assert [parity[(b, c)].status for b, c in (("flash", C2.id), ("math", C3.id), ("flash", C3.id))] == ["pass"] * 3


def test_the_child_clears_the_pending_error_its_fresh_control_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen on the H200: a graph case failed with "invalid argument", the child probed and cleared that
    pending error, then the failing record's fresh control failed the same way and left its own; the
    next case's first CUDA call met it, the child died, and an innocent case was recorded as a crash."""
    import io

    from conformance import isolate

    pending = [False]

    def failing(adapter: Any, case: Case, inputs: Any, get_truth: Any, base: dict) -> ParityRecord:
        pending[0] = True
        return ParityRecord(
            backend="math",
            case_id=case.id,
            case=case.to_json(),
            status="error",
            reason="RuntimeError: invalid argument",
            **base,
        )

    def failing_control(adapter: Any, case: Case, inputs: Any, get_truth: Any, rec: ParityRecord) -> ParityRecord:
        pending[0] = True
        return replace(rec, fresh="error")

    def probe(rec: ParityRecord, device: str, lost_text: Any) -> tuple[ParityRecord, bool]:
        pending[0] = False  # read and cleared
        return rec, True

    def validate(inputs: Any) -> None:
        assert not pending[0], "the next case met the previous case's pending CUDA error"

    monkeypatch.setattr(ev, "evaluate", failing)
    monkeypatch.setattr(ev, "fresh_control", failing_control)
    monkeypatch.setattr(ev, "note_context", probe)
    monkeypatch.setattr("scenarios.tensors.validate_inputs", validate)
    base = {"run_id": "r", "target": "torch", "device": "cpu", "seed": 0, "standin": None}
    requests = io.StringIO(
        "".join(json.dumps({"case": c.to_json(), "backend": "math", "base": base}) + "\n" for c in (C1, C2))
    )
    answers = io.StringIO()
    isolate._serve({"target": "torch", "device": "cpu", "seed": 0, "options": {}}, requests, answers)
    ready, *got = [json.loads(line) for line in answers.getvalue().splitlines()]
    assert ready == isolate.READY
    assert [a["record"]["case_id"] for a in got] == [C1.id, C2.id] and not any(a["context_lost"] for a in got)
    assert not pending[0]
