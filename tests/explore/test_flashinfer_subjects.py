"""The flashinfer explore target on the CPU fake of upstream 0.7.2 (tests/kernels/fake_flashinfer.py).

What the H200 run relies on, shown here without a GPU: one subject per wrapper API and mode, drawing
only the modules the FlashInfer matrix builds; the exploration finds the two lifecycle defects the
fake copies from upstream (paged `auto` resolved once per wrapper; ragged plan() keeping a stale
mask) on its own; each is written as a script of plain flashinfer calls that reproduces it; and a
raise the known-failure ledger explains is logged as known, not reported again. The numerics are
the fake's, so nothing here is a verdict on FlashInfer.
"""

from __future__ import annotations

import os
import runpy
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import kernels.flashinfer.adapter as fi
from scenarios import strategies as S
from scenarios.case import Case
from conformance.explore.directed import GRAPH_ONLY, directed_for, run_directed
from conformance.explore.loop import BUDGETS, explore_subject
from conformance.explore.machines import machine_for
from conformance.explore.repro import write_repro
from conformance.explore.subjects import FLASHINFER_LIMITS, flashinfer_subjects

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kernels"))
import fake_flashinfer as ff  # noqa: E402
from fake_flashinfer import fake  # noqa: E402,F401  (the fixture)


# The ci budget's hunt, its failure reported as found: what these tests assert (the invariant, the script) does
# not need it shrunk, and shrinking was most of a hunt's time (tests/explore/test_scenario_machines.py tests it).
HUNT = replace(BUDGETS["ci"], shrink=False)


def _subjects(spec_version: str = "0.7.2.post1") -> dict[str, Any]:
    """The subjects on the fake, judged by the routing spec of `spec_version` (the fake copies 0.7.2.post1;
    the installed flashinfer, where there is one, is another library)."""

    # A small workspace: the fake never reads it, and 128 MiB zeroed per wrapper would dominate.
    def make(b: str, g: bool, **options: Any) -> fi.FlashInferKernel:
        return fi.FlashInferKernel(
            b, "cpu", graph=g, graphs=ff.FakeGraphs(), options=fi.AdapterOptions(workspace_bytes=1024, **options)
        )

    subs = flashinfer_subjects("cpu", make=make, offered=("fa2", "fa3", "auto"), arch="sm90", spec_version=spec_version)
    return {s.name: s for s in subs}


def _run_script(path: str) -> tuple[int, str]:
    """`python path` in this process, with the fake as the installed flashinfer; (exit status, text)."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            runpy.run_path(path, run_name="__main__")
            code = 0
        except SystemExit as e:
            code = int(e.code or 0)
    return code, buf.getvalue()


def test_one_subject_per_api_and_mode_inside_the_built_modules(fake: Any) -> None:
    subs = _subjects()
    assert sorted(subs) == sorted(
        [f"flashinfer-sm90-{api}{g}" for api in ("paged", "ragged", "decode") for g in ("", "-graph")]
        + ["flashinfer-sm90-paged-graph-shared", "flashinfer-sm90-ragged-graph-shared"]
    )
    s = subs["flashinfer-sm90-ragged"]
    assert s.backend == "auto" and s.explicit == ("fa2", "fa3") and s.recipe.kind == "flashinfer"
    assert subs["flashinfer-sm90-ragged-graph"].recipe.kind == "library"  # capture is the adapter's choreography
    prof = machine_for(s).profile
    assert prof.layouts == ("ragged",) and prof.dtypes == FLASHINFER_LIMITS["dtypes"]
    assert prof.head_dims() == [(128, 128)] and not prof.soft_cap and prof.window and prof.mask
    # The directed sequences draw inside the same modules.
    cases = [kw["case"] for d in directed_for(prof, "fa2") for _, kw in d.calls if "case" in kw]
    assert cases and {(c.q_dtype, c.head_dim_qk, c.head_dim_vo) for c in cases} == {("bf16", 128, 128)}


def test_the_routing_spec_is_the_versions_and_an_unmodelled_version_checks_no_auto_route(fake: Any) -> None:
    """Each subject is judged by the rows of its FlashInfer version; a version without rows has no spec, and
    its `auto` runs are observed, not checked (else every run of `auto` would fail for not running "auto"),
    while explicit backends are still held to the backend asked for."""
    from routing.specs.flashinfer_cuda import SPEC_074

    s = _subjects("0.7.4")["flashinfer-sm90-ragged"]
    assert s.specs == {b: SPEC_074 for b in ("auto", "fa2", "fa3")} and s.unmodelled == ""
    s = _subjects("0.7.9")["flashinfer-sm90-ragged"]
    assert s.specs == {} and "0.7.9" in s.unmodelled and "not checked" in s.unmodelled
    m = machine_for(s)
    (seq,) = [d for d in directed_for(m.profile, None) if d.name == "ragged: long then short"]
    assert run_directed(m, seq) == ("passed", None)
    inst = m()
    inst.plan_case("plan", seq.calls[0][1]["case"], 0)
    inst.run()
    inst.explicit("fa2")
    runs = [(st.backend, st.observed[0]) for st in inst.steps if st.call == "run" and st.observed is not None]
    assert runs == [("auto", "fa3"), ("fa2", "fa2")] and all(st.expected is None for st in inst.steps)


@pytest.mark.parametrize(
    "api,catchers",
    [
        ("paged", {"history_independent", "no_unexpected_error"}),  # sticky auto: the first plan's backend
        # the stale custom mask: a wrong output, or a raise where its shape no longer fits the plan
        ("ragged", {"history_independent", "output_matches_oracle", "no_unexpected_error"}),
    ],
)
def test_exploration_finds_the_lifecycle_defect_and_writes_a_plain_script(
    fake: Any, tmp_path: Path, api: str, catchers: set[str]
) -> None:
    s = _subjects()[f"flashinfer-sm90-{api}"]
    # The first defect found ends it. Ragged at seed 1: at seed 0 its first failing example (unshrunk: a masked
    # plan, an unmasked one, fa2 explicit, a re-plan and run) writes a script that does not reproduce.
    r = explore_subject(s, HUNT, tmp_path, hunt=True, seed=1 if api == "ragged" else 0)
    assert r.failure is not None, f"{s.name}: the exploration missed the defect"
    assert r.failure["invariant"] in catchers, r.failure
    print(f"{s.name}:", *r.failure["sequence"], sep="\n  ")
    script = Path(r.failure["repro"])
    text = script.read_text()
    assert "import flashinfer" in text and "from scenarios" not in text and "from kernels" not in text
    assert "w1 = flashinfer." in text and "w1.plan(" in text and "w1.run(" in text
    if r.failure["invariant"] != "no_unexpected_error":  # an output was judged: against a fresh wrapper
        assert "ctl_w = flashinfer." in text, "the control is a fresh wrapper, not the one under test"
    code, out = _run_script(str(script))
    assert code == 1 and "REPRODUCED" in out, out


def test_a_run_that_raised_in_the_machine_is_judged_where_the_script_does_not_raise(
    fake: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the H200 the ragged subject lost its CUDA context on a run reading a stale mask at address 0; the
    plain script of those calls printed "every call held": it neither synchronised after the run (the fault
    surfaced at the next sync, which never came) nor judged it.
    Here the fake faults the same way inside the machine only: the script then judges that run's output,
    exits 1 where the stale mask makes it wrong, and 0, pointing at compute-sanitizer, where it is right."""
    W = ff.BatchPrefillWithRaggedKVCacheWrapper
    plan, run = W.plan, W.run

    def planned(self: Any, *a: Any, **kw: Any) -> Any:
        self._planned_mask = kw.get("custom_mask") is not None or kw.get("packed_custom_mask") is not None
        return plan(self, *a, **kw)

    def faulting(self: Any, *a: Any, **kw: Any) -> Any:
        if self._custom_mask_buf is not None and not self._planned_mask:
            raise RuntimeError("BatchPrefillWithRaggedKVCache failed with error an illegal memory access")
        return run(self, *a, **kw)

    monkeypatch.setattr(W, "plan", planned)
    monkeypatch.setattr(W, "run", faulting)
    s = _subjects()["flashinfer-sm90-ragged"]
    m = machine_for(s)
    (seq,) = [d for d in directed_for(m.profile, None) if d.name == "ragged: masked then unmasked"]
    status, failure = run_directed(m, seq)
    assert status == "failed" and failure is not None and failure.invariant == "no_unexpected_error", failure
    assert failure.steps[-1].outcome == "raise"
    script = write_repro(failure, s, tmp_path, "directed")
    # The run is synchronised inside its try: on the H200 its fault surfaced only at a later sync, or never.
    text = script.read_text()
    step = text[text.index(f"    # step {failure.steps[-1].n}: run") :]
    assert "torch.cuda.synchronize()" in step[step.index("    try:") : step.index("    except Exception")], step
    monkeypatch.setattr(W, "run", run)  # the fresh process: the same calls do not fault
    code, out = _run_script(str(script))
    assert code == 1 and f"REPRODUCED at step {failure.steps[-1].n}" in out and "did not raise here" in out, out
    assert "output off by" in out, out

    def cleared(self: Any, *a: Any, **kw: Any) -> Any:  # and where the stale mask is gone, the run is right
        res = plan(self, *a, **kw)
        if kw.get("custom_mask") is None and kw.get("packed_custom_mask") is None:
            self._custom_mask_buf = None
        return res

    monkeypatch.setattr(W, "plan", cleared)
    code, out = _run_script(str(script))
    assert code == 0 and "did not raise here, and its output held" in out and "compute-sanitizer" in out, out


def test_a_control_that_raises_in_the_script_is_its_verdict_not_a_traceback(
    fake: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the H200 the scripts of history defects whose fresh control raised ended in a traceback and were
    reported "could not run: exit status 1". The machine judges a control that raises; so does the script."""
    W = ff.BatchPrefillWithRaggedKVCacheWrapper
    s = _subjects()["flashinfer-sm90-ragged"]
    m = machine_for(s)
    (seq,) = [d for d in directed_for(m.profile, None) if d.name == "ragged: masked then unmasked"]
    status, failure = run_directed(m, seq)  # the fake keeps the stale mask: an output is judged
    assert status == "failed" and failure is not None and failure.invariant != "no_unexpected_error", failure
    script = write_repro(failure, s, tmp_path, "directed")
    made: list[Any] = []
    init, plan, run = W.__init__, W.plan, W.run

    def counted(self: Any, *a: Any, **kw: Any) -> None:
        made.append(self)
        self._ran = False
        init(self, *a, **kw)

    def ran(self: Any, *a: Any, **kw: Any) -> Any:
        self._ran = True
        return run(self, *a, **kw)

    def control_raises(self: Any, *a: Any, **kw: Any) -> Any:  # a wrapper made after another one ran
        if any(w._ran for w in made[: made.index(self)]):
            raise RuntimeError("BatchPrefillWithRaggedKVCache failed with error invalid argument")
        return plan(self, *a, **kw)

    monkeypatch.setattr(W, "__init__", counted)
    monkeypatch.setattr(W, "run", ran)
    monkeypatch.setattr(W, "plan", control_raises)
    code, out = _run_script(str(script))
    assert code == 1 and "a fresh wrapper raised RuntimeError" in out, out


def _with_ledger_at(subject: Any, version: str) -> Any:
    """The subject with the real ledger read as if `version` were installed (the fake reports its own)."""
    from conformance.known_failures import entry_for

    def known(case: Any, backend: str) -> Any:
        e = entry_for("flashinfer", case.to_json(), backend, version, "sm90")
        return (e.id, e.status) if e is not None else None

    return replace(subject, known=known)


def _with_lifecycle_ledger_at(subject: Any, version: str) -> Any:
    """The subject with the ledger's lifecycle entries read as if `version` were installed."""
    from conformance.known_failures import history_entry_for

    def known_history(plans: Any, backend: str) -> Any:
        e = history_entry_for("flashinfer", [c.to_json() for c in plans], backend, version, "sm90")
        return e.id if e is not None else None

    return replace(subject, known_history=known_history)


def test_a_lifecycle_entry_is_known_where_it_shows_and_the_exploration_goes_on(fake: Any, tmp_path: Path) -> None:
    """The fake keeps a ragged wrapper's old mask, as upstream does: with the ledger's lifecycle entry the
    machine logs it at the run where it shows, replaces the adapter, and the budget is spent looking for
    something else (which the fake does not have); without the entry it is a finding."""
    s = _with_lifecycle_ledger_at(_subjects()["flashinfer-sm90-ragged"], "0.7.2.post1")
    # Seed 7: the draws are the same whatever is loaded (conformance/explore/constants.py); at this seed the ci
    # budget's 12 examples plan masked then unmasked, once after a masked plan that raised (which the wrapper's
    # history must keep: seeds 4, 8 and 11-14 pass without it, 7 and 9 do not; 0-2, 6 and 10 never show the mask).
    r = explore_subject(s, BUDGETS["ci"], tmp_path, seed=7)
    assert r.failure is None and not r.defects, r.failure
    assert r.ledger_hits.get("flashinfer-ragged-stale-mask", 0) >= 1 and r.stats.known >= 1, r.ledger_hits
    assert r.stats.generated >= BUDGETS["ci"].examples, "the whole budget explored past the known defect"
    masked = next(d for d in r.directed if d["name"] == "ragged: masked then unmasked")
    assert masked["status"] == "known: flashinfer-ragged-stale-mask", masked
    # Where no version of the entry is installed, the same calls are a finding again.
    m = machine_for(_with_lifecycle_ledger_at(_subjects()["flashinfer-sm90-ragged"], "0.6.0"))
    (seq,) = [d for d in directed_for(m.profile, None) if d.name == "ragged: masked then unmasked"]
    assert run_directed(m, seq)[0] == "failed"


def test_graph_and_decode_subjects_hold(fake: Any, tmp_path: Path) -> None:
    subs = _subjects()
    for name in ("flashinfer-sm90-ragged-graph", "flashinfer-sm90-paged-graph"):
        r = explore_subject(subs[name], BUDGETS["ci"], tmp_path)
        assert r.failure is None and not r.directed_failures, (name, r.failure, r.directed)
        assert r.stats.runs > 0


GRAPH_REPLANS = ("masked then unmasked", "unmasked then masked", "window on then off", "causal on then off")


@pytest.mark.parametrize("api", ["paged", "ragged"])
def test_one_graph_wrapper_is_re_planned_across_mask_window_and_causal(fake: Any, api: str) -> None:
    """The directed re-plans of one CUDA-graph wrapper per batch size. On the default keying (a wrapper per mask
    kind, as SGLang keeps them) they hold; on a shared wrapper holding mask buffers (graph_wrappers="shared") an
    unmasked plan runs the custom-mask kernel over a zeroed or stale mask, as FlashInfer does: the output is
    wrong, while the route is the one a held buffer makes the selector take (no routing violation). Eager
    machines skip them."""
    subs = _subjects()

    def results(name: str) -> dict[str, tuple[str, Any]]:
        m = machine_for(subs[name])
        return {d.name.split(": ")[1]: run_directed(m, d) for d in directed_for(m.profile, None)}

    graph = results(f"flashinfer-sm90-{api}-graph")
    assert {n: graph[n][0] for n in GRAPH_REPLANS} == dict.fromkeys(GRAPH_REPLANS, "passed"), graph
    shared = results(f"flashinfer-sm90-{api}-graph-shared")
    for n in GRAPH_REPLANS:
        status, failure = shared[n]
        assert status == "failed" and failure is not None, (n, status)
        assert [v.invariant for v in failure.violations][:1] == ["output_matches_oracle"], failure
        assert "agrees_with_routing_spec" not in {v.invariant for v in failure.violations}, failure
    eager = results(f"flashinfer-sm90-{api}")
    assert {n: eager[n][0] for n in GRAPH_REPLANS[1:]} == dict.fromkeys(GRAPH_REPLANS[1:], GRAPH_ONLY)


def test_the_graph_toggles_re_plan_the_same_wrapper(fake: Any) -> None:
    """toggle_window and toggle_causal (graph machines only) re-plan the current case with one feature flipped on
    the wrapper that served it: one plan history, longer by one per toggle."""
    subs = _subjects()
    assert not hasattr(machine_for(subs["flashinfer-sm90-paged"]), "toggle_window")
    m = machine_for(subs["flashinfer-sm90-paged-graph"])()
    case = m.profile.probe("paged").replace(causal=False)
    m.plan_case("plan", case, 0)
    m.toggle_window(7)
    m.toggle_causal()
    m.toggle_window(7)
    cases = [st.case for st in m.steps]
    assert [(c.window_left, c.causal) for c in cases] == [(-1, False), (7, False), (7, True), (-1, True)]
    assert [st.rule for st in m.steps] == ["plan", "toggle_window", "toggle_causal", "toggle_window"]
    assert len(m.histories) == 1 and [len(h) for h in m.histories.values()] == [4]


def test_a_graph_machine_serves_one_model_and_an_eager_one_any(fake: Any) -> None:
    """A graph machine is one serving engine: its first plan fixes the dtypes, head dims, heads and page size
    every later drawn plan keeps (so a capture is never re-planned for another model, which no engine does); only
    plan_other_dtype leaves the model. An eager machine plans what it draws."""
    subs = _subjects()
    first = Case("paged", (3,), (9,), 4, 1, head_dim_qk=64, head_dim_vo=64, page_size=16)
    other = Case("paged", (2,), (5,), 2, 2, q_dtype="fp16", kv_dtype="fp16", o_dtype="fp16", page_size=5)
    graph = machine_for(subs["flashinfer-sm90-paged-graph"])()
    for c in (first, other):
        graph.plan_case("plan", c, 0)
    assert [st.case for st in graph.steps] == [first, first.replace(qo_lens=(2,), kv_lens=(5,))]
    graph.other_dtype("fp16")
    assert graph.steps[-1].case.q_dtype == "fp16"
    eager = machine_for(subs["flashinfer-sm90-paged"])()
    for c in (first, other):
        eager.plan_case("plan", c, 0)
    assert [st.case for st in eager.steps] == [first, other]


def test_a_filled_re_plan_of_a_capture_keeps_its_query_rows_spread_otherwise(fake: Any) -> None:
    """replan_captured draws `fill`: filled, the re-plan holds exactly the captured query rows (the last request
    takes what is left, as an engine pads a replay); not filled, its rows are cut to fit, first request kept."""
    m = machine_for(_subjects()["flashinfer-sm90-ragged-graph"])()
    case = m.profile.probe("ragged").replace(qo_lens=(6, 6), kv_lens=(9, 9), causal=False)
    m.plan_case("plan", case, 0)
    lengths = [(2, 5), (1, 7)] + [(0, 1)] * (S.MAX_BATCH - 2)
    m.replan_captured(lengths, fill=True)
    m.replan_captured(lengths, fill=False)
    replans = [st for st in m.steps if st.rule == "replan_captured" and st.call == "plan"]
    assert [st.case.qo_lens for st in replans] == [(2, 10), (2, 1)] and all(st.outcome == "ok" for st in m.steps)


def test_the_decode_subject_finds_runs_empty_batch_defect_and_holds_once_it_is_known(fake: Any, tmp_path: Path) -> None:
    """The fake copies decode.py:2855 (run() divides by the batch size): exploration finds it as it did on the
    H200 (there shrunk to plan and run of an empty batch); with the ledger's entry for it, the subject holds. The
    subject's own `known` reads the real ledger, which matches where the installed version is a ledger version
    (on the H200 runner this test's first half held and failed): the ledger is taken out explicitly."""
    decode = replace(_subjects()["flashinfer-sm90-decode"], known=lambda case, b: None)
    r = explore_subject(decode, HUNT, tmp_path, hunt=True)
    raised = [d.failure["details"].get("no_unexpected_error", "") for d in r.defects]
    assert any("ZeroDivisionError" in x for x in raised), raised
    known = explore_subject(_with_ledger_at(decode, "0.7.2.post1"), BUDGETS["ci"], tmp_path / "known")
    assert known.failure is None and known.stats.runs > 0, known.failure


def test_a_raise_the_ledger_explains_is_known_not_a_finding(fake: Any) -> None:
    s = _subjects()["flashinfer-sm90-ragged"]
    known = replace(s, known=lambda case, b: ("flashinfer-empty-batch-plan", "error") if not case.qo_lens else None)
    m = machine_for(known)
    (empty,) = [d for d in directed_for(m.profile, None) if d.name == "ragged: empty batch then short"]
    assert run_directed(m, empty)[0] == "known: flashinfer-empty-batch-plan"
    # Without the ledger the same raise is judged by the spec alone (which expects it here). The subject's
    # own `known` reads the real ledger, which matches wherever the installed version is a ledger version
    # (the H200 runner): the ledger is taken out explicitly, not by the version a CPU fake reports.
    unknown = replace(s, known=lambda case, b: None)
    assert run_directed(machine_for(unknown), empty)[0].startswith("skipped")
    inst = m()
    inst.plan_case("plan_empty", empty.calls[0][1]["case"].replace(layout="ragged"), 0)
    (step,) = inst.steps
    assert step.outcome == "known" and step.note.startswith("flashinfer-empty-batch-plan: RuntimeError")
    assert step.library_calls and step.library_calls[-1].method == "plan"


def test_a_graph_subject_asks_the_ledger_about_its_graph_backend(fake: Any) -> None:
    """On the H200 the ragged graph subject reported fa2's known graph-mode raise on a batch with no query rows
    (ledger flashinfer-graph-no-query-rows, graph mode only) as a new finding: it asked about "fa2", eager."""
    from conformance.known_failures import entry_for

    for name, suffix in (("flashinfer-sm90-ragged-graph", "+graph"), ("flashinfer-sm90-ragged", "")):
        asked: list[str] = []
        s = replace(_subjects()[name], known=lambda case, b, asked=asked: asked.append(b))
        inst = machine_for(s)()
        inst.plan_case("plan", inst.profile.probe("ragged").replace(qo_lens=(0,), kv_lens=(0,)), 0)
        assert asked == ["auto" + suffix], name
    no_rows = Case("ragged", (0,), (0,), 4, 1, mask="custom")
    assert (
        entry_for("flashinfer", no_rows.to_json(), "fa2+graph", "0.7.2.post1", "sm90").id
        == "flashinfer-graph-no-query-rows"
    )
    assert entry_for("flashinfer", no_rows.to_json(), "fa2", "0.7.2.post1", "sm90") is None


def test_a_case_the_ledger_says_crashes_is_not_launched(fake: Any) -> None:
    """fa3 ragged over HND kills the process on 0.7.2.post1 (SIGFPE): the machine logs it as known, unplanned."""
    s = _subjects()["flashinfer-sm90-ragged"]
    calls_before = len(ff.STATE.calls)
    crashing = replace(
        s, known=lambda case, b: ("flashinfer-fa3-hnd-kv-heads-sigfpe", "crash") if case.kv_layout == "HND" else None
    )
    inst = machine_for(crashing)()
    case = inst.profile.probe("ragged").replace(kv_layout="HND")
    inst.plan_case("plan", case, 0)
    (step,) = inst.steps
    assert step.outcome == "not-launched" and "kills the process" in step.note and not step.library_calls
    assert len(ff.STATE.calls) == calls_before and "auto" not in inst.planned  # the library was never called


CUDA_ERROR = (
    "AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/ for more information.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"
)


def test_scripts_of_a_many_line_raise_parse_and_replay_on_the_subjects_device(fake: Any, tmp_path: Path) -> None:
    """On the H200 a raise's note was a CUDA error of several lines: the eager script put it in a one-line
    comment (a SyntaxError), and the graph script materialised the cases on the CPU for a CUDA adapter."""
    import ast

    from conformance.explore.machines import ScenarioFailure, Violation
    from conformance.explore.repro import write_repro

    subs = _subjects()
    eager = machine_for(subs["flashinfer-sm90-ragged"])()
    case = eager.profile.probe("ragged")
    eager.plan_case("plan", case, 0)
    (planned,) = eager.steps
    assert planned.library_calls  # the eager script writes its comment from a step with library calls
    raised = replace(planned, outcome="raise", note=CUDA_ERROR)
    assert "\n" not in raised.line() and "Search for" in raised.line()
    for name, step in (
        ("flashinfer-sm90-ragged", raised),
        ("flashinfer-sm90-ragged-graph", replace(raised, library_calls=[])),
    ):
        subject = replace(subs[name], device="cuda:1") if name.endswith("graph") else subs[name]
        failure = ScenarioFailure(name, [step], [Violation("no_unexpected_error", CUDA_ERROR)])
        text = write_repro(failure, subject, tmp_path / name).read_text()
        ast.parse(text)  # the script is Python whatever the note held
        if name.endswith("graph"):
            assert "DEVICE = 'cuda:1'" in text and "materialize(case, seed, DEVICE)" in text


def test_a_held_fa3_meeting_a_mask_is_known_by_the_kernel_the_run_meant(fake: Any) -> None:
    """Sticky paged auto: after an unmasked plan picked fa3, a masked plan's run fails ("operation not
    supported", as on the H200). The ledger is asked about fa3, what plan() held, and knows it; exploration
    then goes on past it instead of stopping at the same known defect in every device session."""
    subject = _with_ledger_at(_subjects()["flashinfer-sm90-paged"], "0.7.2.post1")
    inst = machine_for(subject)()
    case = inst.profile.probe("paged")
    inst.plan_case("plan", case, 0)
    inst._run("auto", "run")
    inst.plan_case("plan", case.replace(mask="custom"), 0)
    inst._run("auto", "run")
    last = inst.steps[-1]
    assert last.outcome == "known" and last.note.startswith("flashinfer-sticky-paged-auto: RuntimeError"), last.line()
    unknown = machine_for(replace(subject, known=lambda case, b: None))()
    unknown.plan_case("plan", case, 0)
    unknown._run("auto", "run")
    unknown.plan_case("plan", case.replace(mask="custom"), 0)
    with pytest.raises(Exception, match="operation not supported"):
        unknown._run("auto", "run")
