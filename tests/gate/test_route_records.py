"""conformance/route_records.py: a parity run's auto records checked against a routing spec.

Synthetic records pin what counts as an observation (skip, error, "unobserved"), that the
expectation follows the wrapper that served a record (sticky paged, the stale ragged mask, graph
wrappers replaced when a case outgrows them), the adapter options read from the run's argv, and
the command line (tables, files, exit statuses 0/1/2). One test writes records the way a run
does (conformance.evaluate.evaluate) from long-lived auto adapters on the CPU fake, so the
replay of wrapper history is checked against the adapter's real behaviour.
"""

from __future__ import annotations

import json
from pathlib import Path
import os
import sys
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, Optional

import pytest

import kernels._env as env
import kernels.flashinfer.adapter as fi
import kernels.flashinfer.lib as fl
from conformance import evaluate
from kernels.flashinfer.variants import reset_seen
from kernels.protocol import NOT_REPORTED_JSON
from reports.records import ParityRecord, RunHeader, to_line
from conformance import route_records as fr
from routing.spec import expected_route
from routing.specs.flashinfer_cuda import SPEC_072 as SPEC
from scenarios.case import Case
from scenarios.matrix import build
from scenarios.tensors import materialize

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kernels"))
import fake_flashinfer as ff  # noqa: E402
from kernels.standins import rocm_fork  # noqa: E402
from kernels.standins.rocm_flashinfer.rocm import prefill as fork_prefill  # noqa: E402

_H = dict(num_qo_heads=4, num_kv_heads=2, head_dim_qk=64, head_dim_vo=64)
PAGED = Case("paged", (3, 6), (11, 6), page_size=5, **_H)
PAGED_MASK = PAGED.replace(mask="custom")
RAGGED = Case("ragged", (5, 9), (12, 9), **_H)
RAGGED_MASK = RAGGED.replace(mask="custom")
D96 = dict(head_dim_qk=96, head_dim_vo=96)
DECODE_FP8 = Case("decode", (1, 1), (5, 9), page_size=4, q_dtype="e4m3fn", kv_dtype="e4m3fn", o_dtype="bf16", **_H)


def header(*options: str, version: Optional[str] = "0.7.2.post1") -> RunHeader:
    """A flashinfer run's header; `version`: the flashinfer it names (its spec judges the records)."""
    argv = ["attncheck", "run", "--target", "flashinfer"]
    for o in options:
        argv += ["--adapter-option", o]
    return RunHeader(
        run_id="r1",
        target="flashinfer",
        device="cuda",
        budget="quick",
        seed=0,
        versions={} if version is None else {"flashinfer": version},
        argv=argv,
        started="",
        harness_version="0.1.0",
        arch="sm90",
    )


def rec(
    case: Case,
    resolved: Optional[str],
    *,
    backend: str = "auto",
    status: str = "pass",
    reason: str = "",
    target: str = "flashinfer",
) -> ParityRecord:
    return ParityRecord(
        run_id="r1",
        target=target,
        backend=backend,
        device="cuda:0",
        case_id=case.id,
        case=case.to_json(),
        seed=0,
        status=status,
        reason=reason,
        resolved_backend=resolved,
        fallback_reason=NOT_REPORTED_JSON if resolved is not None else None,
    )


def outcomes(report: fr.RecordsReport) -> list[tuple[Optional[str], Optional[str]]]:
    """(expected rule, verdict status or the note) per planned record."""
    return [(v.expected.rule, v.verdict.status if v.verdict else v.note) for v in report.verdicts]


# ---- what counts -------------------------------------------------------------------------------


def test_fresh_decisions_pass_explicit_requests_are_checked_and_skips_are_left_out():
    records = [
        header(),
        rec(PAGED, "fa3"),
        rec(PAGED, "fa3", backend="fa3"),
        rec(RAGGED, None, status="skip"),
        rec(RAGGED_MASK, "fa2"),
        rec(PAGED_MASK, "fa2", backend="fa2+graph"),
    ]
    r = fr.check_records(records, SPEC, "sm90")
    assert outcomes(r) == [
        ("fa3", "pass"),
        ("explicit_fa3", "pass"),
        ("fa3_custom_mask", "pass"),
        ("explicit_fa2", "pass"),
    ]
    assert r.counts["auto records"] == 3 and r.counts["explicit records"] == 2 and r.counts["planned"] == 4 and r.ok


def test_an_explicit_request_that_ran_another_backend_fails():
    """Upstream never redirects an explicit backend: a record of backend fa3 that ran fa2 is a wrong route."""
    r = fr.check_records([header(), rec(PAGED, "fa2", backend="fa3")], SPEC, "sm90")
    assert outcomes(r) == [("explicit_fa3", "wrong_backend")] and not r.ok


def test_a_wrong_backend_fails_and_a_gap_is_unexplained():
    r = fr.check_records([header(), rec(PAGED, "fa2")], SPEC, "sm90")
    assert outcomes(r) == [("fa3", "wrong_backend")] and not r.ok
    g = fr.check_records([header(), rec(PAGED, "fa2")], SPEC, "sm89")
    assert [v.verdict.status for v in g.verdicts] == ["spec_gap"] and len(g.coverage.unexplained) == 1 and not g.ok


def test_paged_is_sticky_across_the_records_of_one_wrapper():
    """The masked plan reuses the NHD wrapper the first plan resolved to fa3; HND is another wrapper."""
    hnd = PAGED_MASK.replace(kv_layout="HND")
    ok = fr.check_records([header(), rec(PAGED, "fa3"), rec(PAGED_MASK, "fa3"), rec(hnd, "fa2")], SPEC, "sm90")
    assert outcomes(ok) == [("fa3", "pass"), ("fa3", "pass"), ("fa3_custom_mask", "pass")]
    fresh = fr.check_records([header(), rec(PAGED, "fa3"), rec(PAGED_MASK, "fa2")], SPEC, "sm90")
    assert outcomes(fresh)[1] == ("fa3", "wrong_backend")


def test_ragged_keeps_a_stale_mask_and_a_skip_does_not_plan():
    records = [
        header(),
        rec(RAGGED_MASK.replace(q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"), None, status="skip"),
        rec(RAGGED, "fa3"),
        rec(RAGGED_MASK, "fa2"),
        rec(RAGGED, "fa2"),
    ]
    assert outcomes(fr.check_records(records, SPEC, "sm90")) == [
        ("fa3", "pass"),
        ("fa3_custom_mask", "pass"),
        ("fa3_custom_mask", "pass"),
    ]


def test_errors_observe_only_a_raise_the_spec_expects_and_unobserved_single_is_no_observation():
    empty = Case("paged", (), (), page_size=5, **_H)
    single = Case("single", (6,), (9,), **_H)
    records = [
        header(),
        rec(empty, None, status="error", reason="RuntimeError: max(): Expected reduction dim"),
        rec(PAGED_MASK, None, status="error", reason="RuntimeError: CUDA error"),
        rec(PAGED, "fa2"),
        rec(single, "unobserved"),
    ]
    r = fr.check_records(records, SPEC, "sm90")
    # The raising plan fixed nothing; the errored plan after it did resolve the wrapper (to fa2), unseen.
    assert outcomes(r) == [
        ("empty_batch", "pass"),
        ("fa3_custom_mask", "error before a backend was reported"),
        ("fa3_custom_mask", "pass"),
        ("fa3", "the library's backend choice was not seen (single prefill's module lookup)"),
    ]
    wrong = fr.check_records([header(), rec(empty, None, status="error", reason="ValueError: x")], SPEC, "sm90")
    assert outcomes(wrong) == [("empty_batch", "expected_raise")]


def test_graph_wrappers_are_per_batch_and_mask_and_replaced_when_outgrown():
    """auto+graph: a paged slot per (layout, batch, masked); more query rows than the first plan -> a new one."""
    small, d96 = PAGED, PAGED.replace(qo_lens=(2, 6), **D96)
    bigger = PAGED.replace(qo_lens=(9, 6), **D96)
    records = [
        header(),
        rec(small, "fa3", backend="auto+graph"),
        rec(d96, "fa3", backend="auto+graph"),
        rec(bigger, "fa2", backend="auto+graph"),
        rec(PAGED_MASK, "fa2", backend="auto+graph"),
        rec(d96, "fa2", backend="auto"),
    ]
    assert outcomes(fr.check_records(records, SPEC, "sm90")) == [
        ("fa3", "pass"),
        ("fa3", "pass"),
        ("fa3_head_dims", "pass"),
        ("fa3_custom_mask", "pass"),
        ("fa3_head_dims", "pass"),
    ]


def test_a_shared_graph_wrapper_routes_every_plan_as_masked():
    """graph_wrappers=shared: paged/ragged graph wrappers hold custom_mask_buf, which FlashInfer's selector reads
    as a mask on every plan (prefill.py:3674, :5532): an unmasked auto+graph plan is expected on fa2 for the
    custom mask; eager plans, decode and the default keying are untouched."""
    shared = [header("graph_wrappers=shared"), rec(PAGED, "fa2", backend="auto+graph"), rec(PAGED, "fa3")]
    assert outcomes(fr.check_records(shared, SPEC, "sm90")) == [("fa3_custom_mask", "pass"), ("fa3", "pass")]
    per_mask = [header(), rec(PAGED, "fa2", backend="auto+graph")]
    assert outcomes(fr.check_records(per_mask, SPEC, "sm90")) == [("fa3", "wrong_backend")]


def test_adapter_options_come_from_the_runs_argv():
    assert not fr.adapter_options_of(header()).decode_tensor_cores
    opts = fr.adapter_options_of(header("decode_tensor_cores=true", "graph_max_pages=8", "mask_form=packed"))
    assert (opts.decode_tensor_cores, opts.graph_max_pages, opts.mask_form) == (True, 8, "packed")
    tc = fr.check_records([header("decode_tensor_cores=true"), rec(DECODE_FP8, "fa3")], SPEC, "sm90")
    cc = fr.check_records([header(), rec(DECODE_FP8, "fa2")], SPEC, "sm90")
    assert outcomes(tc) == [("fa3", "pass")] and outcomes(cc) == [("decode_cuda_cores", "pass")]


# ---- the command line ---------------------------------------------------------------------------


def write(tmp_path: Any, records: list) -> str:
    path = tmp_path / "results.jsonl"
    path.write_text("".join(to_line(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_cli_prints_the_table_writes_both_files_and_exits_0(tmp_path, capsys):
    path = write(tmp_path, [header(), rec(PAGED, "fa3"), rec(RAGGED_MASK, "fa2")])
    out = tmp_path / "out"
    assert fr.main([path, "--spec", "flashinfer_cuda", "--arch", "sm90", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "fa3_custom_mask" in text and "unreached rows:" in text and "failing observations: 0" in text
    doc = json.loads((out / fr.JSON_FILE).read_text())
    assert doc["ok"] and doc["counts"]["observed"] == 2 and "not_sm90a" in doc["unreached"]
    assert {row["rule"]: row["passed"] for row in doc["rows"]}["fa3"] == 1
    assert "## Unreached rows" in (out / fr.MD_FILE).read_text()


def test_cli_exits_1_on_a_failing_or_unexplained_observation(tmp_path, capsys):
    path = write(tmp_path, [header(), rec(PAGED, "cudnn"), rec(RAGGED, "trtllm-gen")])
    assert fr.main([path, "--spec", "flashinfer-cuda", "--arch", "sm90"]) == 1
    out = capsys.readouterr().out
    assert "failing observations: 2 (1 unexplained by any row)" in out  # a cudnn row exists (SM100 ragged)
    assert "wrong_backend (unexplained)" in out and "trtllm-gen" in out


@pytest.mark.parametrize(
    "args,field",
    [
        (["--spec", "flashinfer_cud", "--arch", "sm90"], "--spec"),
        (["--spec", "flashinfer_cuda"], "--arch"),
        (["--spec", "torch_sdpa"], "--spec"),  # flashinfer records, torch spec
    ],
)
def test_cli_exits_2_naming_the_bad_value_and_the_fix(tmp_path, capsys, args, field):
    path = write(tmp_path, [header(), rec(PAGED, "fa3")])
    assert fr.main([path, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{field}=" in err and "Fix:" in err


@pytest.mark.parametrize(
    "content",
    [None, "not json\n{}\n", json.dumps({"schema": 99, "kind": "run"}) + "\n", to_line(header()) + "\n"],
    ids=["missing", "garbage", "other-schema", "no-parity-records"],
)
def test_cli_exits_2_on_a_file_it_cannot_check(tmp_path, capsys, content):
    path = tmp_path / "results.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert fr.main([str(path), "--spec", "flashinfer_cuda", "--arch", "sm90"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "RESULTS=" in err and "Fix:" in err


# ---- the version picks the rows ------------------------------------------------------------------

_PAGED_64 = Case("paged", (64,), (70,), page_size=16, **_H)  # 0.7.4 demotes fa3 to fa2 at <= 64 query rows


def test_the_run_headers_version_picks_the_rows_and_the_command_line_may_name_another(tmp_path, capsys):
    """What the H200 measured: 0.7.4's paged auto runs fa2 at 64 query rows where 0.7.2.post1 ran fa3."""
    recs = [rec(_PAGED_64, "fa2"), rec(PAGED_MASK, "fa2")]
    new = write(tmp_path, [header(version="0.7.4"), *recs])
    assert fr.main([new, "--spec", "flashinfer_cuda", "--arch", "sm90"]) == 0
    assert "routing spec flashinfer-cuda 0.7.4 at arch sm90" in capsys.readouterr().out
    old = str(tmp_path / "old.jsonl")
    os.replace(write(tmp_path, [header(), *recs]), old)
    assert fr.main([old, "--spec", "flashinfer_cuda", "--arch", "sm90"]) == 1  # 0.7.2.post1 expects fa3
    assert "wrong_backend" in capsys.readouterr().out
    assert fr.main([old, "--spec", "flashinfer_cuda", "--arch", "sm90", "--library-version", "0.7.4"]) == 0


def test_a_version_without_rows_is_said_to_be_unchecked_not_failed(tmp_path, capsys):
    path = write(tmp_path, [header(version="0.7.5"), rec(_PAGED_64, "fa2"), rec(RAGGED, "trtllm-gen")])
    out = tmp_path / "out"
    assert fr.main([path, "--spec", "flashinfer_cuda", "--out", str(out)]) == 0  # no --arch needed: nothing checked
    text = capsys.readouterr().out
    assert "routing not checked: flashinfer-cuda 0.7.5 has no routing spec rows" in text
    doc = json.loads((out / fr.JSON_FILE).read_text())
    assert doc["version"] == "0.7.5" and doc["ok"] is None and "0.7.2.post1, 0.7.4" in doc["unmodelled"]
    assert "(not checked)" in (out / fr.MD_FILE).read_text()


def test_the_merged_reports_routing_follows_each_runs_version(tmp_path):
    """`attncheck report` checks each run by the rows of the version its header names; a version without
    rows is a 'not checked' section naming it, never a failure."""
    from reports import combined
    from reports.html import render_html
    from reports.merge import load_runs

    recs = [rec(_PAGED_64, "fa2")]
    runs = []
    for v in ("0.7.4", "0.7.5"):
        path = tmp_path / f"{v}.jsonl"
        lines = [replace(r, run_id=v) for r in (header(version=v), *recs)]
        path.write_text("".join(to_line(r) + "\n" for r in lines), encoding="utf-8")
        runs += load_runs([str(path)])
    checked, unmodelled = fr.check_runs(runs)
    assert checked["spec"] == "flashinfer-cuda 0.7.4" and checked["ok"] and "unmodelled" not in checked
    assert unmodelled["spec"] == "flashinfer-cuda" and unmodelled["ok"] is None
    assert "0.7.5 has no routing spec rows" in unmodelled["unmodelled"]
    model = combined.build(runs, routing=[checked, unmodelled])
    md = combined.render_markdown(model)
    assert "## Routing: flashinfer-cuda 0.7.4 at sm90 (holds)" in md
    assert "## Routing: flashinfer-cuda at sm90 (**not checked**)" in md and "0.7.5 has no routing spec rows" in md
    assert "0.7.5 has no routing spec rows" in render_html(model)


def test_cli_exits_2_when_no_version_names_the_rows(tmp_path, capsys):
    path = write(tmp_path, [header(version=None), rec(PAGED, "fa3")])
    assert fr.main([path, "--spec", "flashinfer_cuda", "--arch", "sm90"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--library-version=None" in err and "Fix:" in err


# ---- records written the way a run writes them, from the fake ----------------------------------


def _fake_sm90_judged_passing(monkeypatch) -> None:
    """The fake installed as upstream on an sm90a device, every judged record a pass (the oracle stubbed)."""
    passed = SimpleNamespace(passed=True, to_json=lambda: {})
    monkeypatch.setattr(evaluate, "judge", lambda *a, **k: (passed, None))
    monkeypatch.setattr(env, "device_capability", lambda device: (9, 0))
    ff.install(monkeypatch, sm90=True)
    fl.lib_facts.cache_clear()
    reset_seen()


def test_records_of_long_lived_auto_adapters_on_the_fake_pass_and_exercise_the_lifecycle(monkeypatch):
    """evaluate() over short quick-matrix cases on one `auto` and one `auto+graph` adapter (sm90).

    The oracle is stubbed out (the fake's numerics are not the point here, and truth() per case
    would dominate the test): what is kept is how evaluate() turns a plan/run into a record.
    """
    _fake_sm90_judged_passing(monkeypatch)
    opts = fi.AdapterOptions(workspace_bytes=1024)
    adapters = [
        fi.FlashInferKernel("auto", "cpu", graph=g, options=opts, graphs=ff.FakeGraphs()) for g in (False, True)
    ]
    cases = [
        c.replace(qo_lens=[min(n, 2) for n in c.qo_lens], kv_lens=[min(n, 3) for n in c.kv_lens])
        for c in build("quick")
    ]
    cases += [PAGED, PAGED_MASK, PAGED.replace(**D96), RAGGED, RAGGED_MASK, RAGGED]  # lifecycle edges, in order
    records: list[Any] = [header()]
    base = dict(run_id="r1", target="flashinfer", device="cpu", seed=0)
    for case in cases:
        inputs = materialize(case, 0, "cpu")
        for a in adapters:
            records.append(evaluate.evaluate(a, case, inputs, lambda: None, base))
    fl.lib_facts.cache_clear()
    report = fr.check_records(records, SPEC, "sm90")
    bad = [
        (v.record.backend, v.record.case_id, v.verdict.status, v.verdict.detail)
        for v in report.verdicts
        if v.verdict is not None and not v.verdict.passed
    ]
    assert not bad and report.ok, bad
    assert report.counts["observed"] >= 100
    sticky = [
        v for v in report.verdicts if v.expected.rule != expected_route(SPEC, replace(v.query, graph_mode=False)).rule
    ]
    assert sticky, "no record's expectation differed from its fresh route: the lifecycle was not exercised"


def _fake_auto(monkeypatch, **install: Any) -> fi.FlashInferKernel:
    """A fresh `auto` adapter on the fake (installed with `install`), its facts and variants reset."""
    ff.install(monkeypatch, **install)
    fl.lib_facts.cache_clear()
    reset_seen()
    return fi.FlashInferKernel("auto", "cpu", options=fi.AdapterOptions(workspace_bytes=1024), graphs=ff.FakeGraphs())


def test_a_run_that_raises_after_plan_keeps_the_backend_plan_chose_and_is_observed(monkeypatch):
    """On the H200, 19 records that raised in run() (a sticky fa3 meeting a mask, a module that failed to
    build) said nothing of the backend; plan() had chosen it, and the record now keeps that choice."""
    a = _fake_auto(monkeypatch)
    base = dict(run_id="r1", target="flashinfer", device="cpu", seed=0)

    def boom(self, *args, **kwargs):
        raise RuntimeError("BatchPrefillWithPagedKVCacheSM90Run failed with error: operation not supported")

    monkeypatch.setattr(ff.BatchPrefillWithPagedKVCacheWrapper, "run", boom)
    failed = evaluate.evaluate(a, PAGED, materialize(PAGED, 0, "cpu"), lambda: None, base)
    assert failed.status == "error" and failed.resolved_backend == "fa3"
    assert failed.fallback_reason == NOT_REPORTED_JSON
    empty = Case("paged", (), (), page_size=5, **_H)  # plan() itself raises: nothing was chosen
    before_plan = evaluate.evaluate(a, empty, materialize(empty, 0, "cpu"), lambda: None, base)
    fl.lib_facts.cache_clear()
    assert before_plan.status == "error" and before_plan.resolved_backend is None
    report = fr.check_records([header(), failed, before_plan], SPEC, "sm90")
    assert report.counts["observed"] == 2 and report.ok  # the fa3 route, and empty_batch's expected raise


def test_on_the_fork_a_failed_run_claims_no_backend(monkeypatch):
    """The fork re-checks its choice in run(): what plan() chose is not what the failed run would have used."""
    rocm_fork.install(monkeypatch, arch="gfx942")
    reset_seen()
    a = fi.FlashInferKernel("auto", "cpu", options=fi.AdapterOptions(workspace_bytes=1024), graphs=ff.FakeGraphs())

    def boom(self, *args, **kwargs):
        raise RuntimeError("run failed")

    monkeypatch.setattr(fork_prefill.BatchPrefillWithPagedKVCacheWrapper, "run", boom)
    rec = evaluate.evaluate(
        a,
        PAGED,
        materialize(PAGED, 0, "cpu"),
        lambda: None,
        dict(run_id="r1", target="flashinfer", device="cpu", seed=0),
    )
    fl.lib_facts.cache_clear()
    assert rec.status == "error" and rec.resolved_backend is None


def test_records_name_the_wrapper_each_plan_used_and_the_check_groups_by_it(monkeypatch):
    """The adapter names the wrapper of every plan (eager per API and KV layout; in graph mode a new name
    when a case outgrows the wrapper's fixed buffers, and a plan that raised keeps its wrapper's name); the
    routing check reads those names, and on records that carry them it agrees with the keying it rebuilds
    for older files."""
    _fake_sm90_judged_passing(monkeypatch)
    opts = fi.AdapterOptions(workspace_bytes=1024, graph_max_pages=4)
    eager = fi.FlashInferKernel("auto", "cpu", options=opts, graphs=ff.FakeGraphs())
    graph = fi.FlashInferKernel("auto", "cpu", graph=True, options=opts, graphs=ff.FakeGraphs())
    wide = PAGED.replace(kv_lens=(40, 6))  # 9 pages: more than the 4 the first graph plan fixed
    base = dict(run_id="r1", target="flashinfer", device="cpu", seed=0)
    records = [
        evaluate.evaluate(a, c, materialize(c, 0, "cpu"), lambda: None, base)
        for c in (PAGED, wide, PAGED, RAGGED)
        for a in (eager, graph)
    ]

    def boom(self, *args, **kwargs):
        raise RuntimeError("plan failed")

    monkeypatch.setattr(ff.BatchPrefillWithRaggedKVCacheWrapper, "plan", boom)
    records += [evaluate.evaluate(graph, RAGGED, materialize(RAGGED, 0, "cpu"), lambda: None, base)]
    fl.lib_facts.cache_clear()
    assert [r.wrapper for r in records] == [
        "paged/NHD",
        "graph:paged/NHD/b2/unmasked#1",
        "paged/NHD",
        "graph:paged/NHD/b2/unmasked#2",
        "paged/NHD",
        "graph:paged/NHD/b2/unmasked#2",
        "ragged/NHD",
        "graph:ragged/NHD/b2/unmasked#3",
        "graph:ragged/NHD/b2/unmasked#3",
    ]
    assert records[-1].status == "error"
    seqs = fr.sequences_of(records, opts, "flashinfer")
    assert seqs == [0, 1, 0, 2, 0, 2, 3, 4, 4]
    assert seqs == fr.legacy_plan_sequences([(r.run_id, r.backend, Case.from_json(r.case)) for r in records], opts)


def test_the_wrappers_the_h200_run_named_are_the_ones_the_legacy_keying_rebuilds():
    """On the real library (docs/evidence/2026-12-01-h200-6: flashinfer 0.7.2.post1, graph_max_pages=8),
    the wrapper names the adapter recorded group the plans as the keying rebuilt for older files does,
    the second paged case outgrowing its graph wrapper; and every record is explained by the spec."""
    recs = fr.load_records(str(Path(__file__).resolve().parents[2] / "docs/evidence/2026-12-01-h200-6/results.jsonl"))
    header = next(r for r in recs if isinstance(r, RunHeader))
    parity = [r for r in recs if isinstance(r, ParityRecord) and r.status in fr.PLANNED]
    options = fr.adapter_options_of(header)
    assert options.graph_max_pages == 8 and all(r.wrapper for r in parity)
    assert "graph:paged/NHD/b2/unmasked#2" in {r.wrapper for r in parity}
    assert fr.sequences_of(parity, options, "flashinfer") == fr.legacy_plan_sequences(
        [(r.run_id, r.backend, Case.from_json(r.case)) for r in parity], options
    )
    assert fr.check_records(recs, SPEC, "sm90").ok
