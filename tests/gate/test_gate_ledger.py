"""The parity grid under the gate: ledger outcomes, crash entries not launched, crashes isolated, records written."""

from __future__ import annotations

from dataclasses import replace
import json
from typing import Any

import pytest

# The inner run (in process) makes the torch target's adapters, which import torch._dynamo; pytester
# drops every module a run imported, and a second import of torch._dynamo registers torch's
# `_inductor_test` operator library twice (RuntimeError in any later FlexAttention test).
import torch._dynamo  # noqa: F401

import conformance.evaluate as ev
import conformance.known_failures as kf
import conformance.parity_run as pr
from conformance.isolate import FAULT_ENV
from reports.merge import load_runs
from scenarios.case import Case

pytest_plugins = ["pytester"]

C1 = Case(
    "ragged", (3, 2), (7, 4), 4, 2, head_dim_qk=16, head_dim_vo=16, q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"
)
C2 = C1.replace(causal=True)
SUITE = "from conformance.test_parity_grid import test_backend_matches_the_oracle\n"
TORCH_VERSION = __import__("torch").__version__


def _entry(id_: str, status: str, case: Case, backend: str) -> kf.KnownFailure:
    return kf.KnownFailure(
        id_,
        "torch",
        (TORCH_VERSION,),
        f"{id_} summary",
        status,
        "docs/evidence/none.py",
        confirmed=False,
        seen="test",
        applies=lambda c, b: c == case.to_json() and b == backend,
        upstream="https://example.invalid/issues/1" if status == "fail" else None,
    )


@pytest.fixture
def small_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pr, "matrix_of", lambda target, budget, seed, device="cpu": [C1, C2])


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_grid=SUITE)
    return pytester.runpytest_inprocess(
        "-p",
        "conformance.plugin",
        "-p",
        "conformance.gate_plugin",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:benchmark",
        "-k",
        "(math or flash) and not padded and not nested",  # the per-request backends only
        "-rxs",
        "--junitxml",
        "out/junit.xml",
        "--results",
        "out/results",
        *args,
    )


def _tests(pytester: pytest.Pytester) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sidecar, and its tests keyed by parameter id (backend-case)."""
    side = json.loads((pytester.path / "out" / "junit.json").read_text())
    return side, {t["nodeid"].split("[")[-1].rstrip("]"): t for t in side["tests"]}


def test_ledger_outcomes_under_the_gate(
    pytester: pytest.Pytester, small_grid: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expected failure xfails naming its unfiled issue, an entry's pass fails, a crash entry is not launched;
    the records the grid writes carry the fresh control and the gate's exit status."""
    monkeypatch.setattr(
        kf,
        "LEDGER",
        (
            _entry("fake-error", "error", C1, "flash"),
            _entry("fake-fixed", "fail", C2, "math"),
            _entry("fake-crash", "crash", C2, "flash"),
        ),
    )
    real = ev.evaluate

    def failing_flash(adapter: Any, case: Case, *a: Any) -> Any:
        rec = real(adapter, case, *a)
        if adapter.backend == "flash" and case == C1:
            rec = replace(rec, status="error", reason="RuntimeError: injected")
        return rec

    monkeypatch.setattr(ev, "evaluate", failing_flash)
    res = _run(pytester)
    res.assert_outcomes(passed=1, failed=1, skipped=1, xfailed=1)
    out = res.stdout.str()
    assert "unexpected pass: ledger entry fake-fixed predicts a fail here (https://example.invalid/issues/1)" in out
    assert "known failure fake-error: 1 expected, 0 unexpected pass(es), 0 not launched; not filed upstream yet" in out
    side, tests = _tests(pytester)
    assert tests[f"flash-{C1.id}"]["outcome"] == "xfailed" and tests[f"flash-{C1.id}"]["known"] == "fake-error"
    assert tests[f"math-{C2.id}"]["unexpected_pass"] and tests[f"math-{C2.id}"]["outcome"] == "failed"
    assert tests[f"flash-{C2.id}"]["decision"] and tests[f"flash-{C2.id}"]["known"] == "fake-crash"
    rows = {r["id"]: r for r in side["known_failures"]}
    assert rows["fake-crash"]["not_launched"] == 1 and rows["fake-error"]["upstream"] is None
    [run] = load_runs([str(pytester.path / "out" / "results")])
    assert run.header is not None and run.header.arch and run.footer is not None
    by = {(r.backend, r.case_id): r for r in run.parity}
    assert by[("flash", C2.id)].status == "skip" and "fake-crash" in by[("flash", C2.id)].reason
    assert by[("flash", C1.id)].known == "fake-error"
    # the grid evaluates as `attncheck run` does: a failing record gets the fresh-adapter control
    assert by[("flash", C1.id)].fresh == "error" and by[("math", C1.id)].fresh is None
    assert run.footer.exit_status == 1  # the gate's verdict: fake-fixed's pass is unexpected


def test_a_crashing_case_is_isolated_and_named(
    pytester: pytest.Pytester, small_grid: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under --isolate a case that aborts its process fails alone, named as a crash in the summary and the sidecar.

    (The last case crashes, so one child process serves the test; tests/gate/test_isolated_run.py shows the run
    going on after a crash in a fresh child.)
    """
    monkeypatch.setenv(FAULT_ENV, f"flash:{C2.id}")
    res = _run(pytester, "--isolate")
    res.assert_outcomes(passed=3, failed=1)
    assert f"CRASH test_grid.py::test_backend_matches_the_oracle[flash-{C2.id}]" in res.stdout.str()
    assert "SIGABRT" in res.stdout.str()
    side, tests = _tests(pytester)
    assert side["crashes"] == [t["nodeid"] for t in side["tests"] if t["crash"]] and len(side["crashes"]) == 1
    assert tests[f"flash-{C2.id}"]["crash"] and tests[f"flash-{C2.id}"]["outcome"] == "failed"
    [run] = load_runs([str(pytester.path / "out" / "results")])
    assert [r.backend for r in run.parity if r.status == "error"] == ["flash"]
