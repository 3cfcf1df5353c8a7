"""The spec format and its engine: precedence, gates, MISSING vs None, lifecycle, self-checks."""

from __future__ import annotations

import pytest

from kernels import _env
from routing import reasons as R
from routing.spec import (
    MISSING,
    LengthGate,
    Lifecycle,
    RouteRule,
    RoutingEnv,
    RoutingQuery,
    RoutingSpec,
    SpecError,
    SpecGap,
    ThresholdTable,
    current_arch,
    expected_route,
    expected_sequence,
    query_from_case,
    validate,
)
from scenarios.case import Case

GATE = ThresholdTable("gate", {"a1": 4, "a2": None})
DEFAULT_LIFECYCLE = Lifecycle()  # frozen: one shared default, as a default argument would be


def toy_spec(table: ThresholdTable = GATE, lifecycle: Lifecycle = DEFAULT_LIFECYCLE) -> RoutingSpec:
    """Mask beats the gate beats the default: three rows in precedence order."""
    return RoutingSpec(
        library="toy",
        archs=("a1", "a2"),
        lifecycle=lifecycle,
        thresholds={"gate": table},
        rules=(
            RouteRule("mask", lambda q, c: q.custom_mask, "fa2", R.CUSTOM_MASK),
            RouteRule(
                "short", lambda q, c: True, "fa2", R.RAGGED_SHORT_QUERY, gate=LengthGate("gate", lambda q: q.max_q_len)
            ),
            RouteRule("default", lambda q, c: True, "aiter", None),
        ),
    )


def q(**kw):
    return RoutingQuery(**{"api": "ragged", "arch": "a1", **kw})


def test_first_matching_row_decides():
    """The order of the rows is the precedence: an earlier matching row wins."""
    assert expected_route(toy_spec(), q(custom_mask=True, max_q_len=1)).rule == "mask"
    assert expected_route(toy_spec(), q(max_q_len=1)).rule == "short"


@pytest.mark.parametrize("n,rule", [(4, "short"), (5, "default"), (1, "short"), (0, "default"), (-3, "default")])
def test_length_gate_is_inclusive_and_never_fires_on_an_empty_batch(n, rule):
    """Gate fires for 1 <= n <= T; n <= 0 (empty batch) is never short."""
    r = expected_route(toy_spec(), q(max_q_len=n))
    assert r.rule == rule and r.gap is None
    if rule == "short":
        assert r.threshold == 4


def test_nonpositive_length_flag_is_obeyed():
    """With the lifecycle flag off, an empty batch would read as short: the flag is what stops it."""
    spec = toy_spec(lifecycle=Lifecycle(nonpositive_length_never_short=False))
    assert expected_route(spec, q(max_q_len=0)).rule == "short"


def test_explicit_none_disarms_the_gate():
    """An explicit None row is a measured 'never gate': the default row decides."""
    r = expected_route(toy_spec(), q(arch="a2", max_q_len=1))
    assert r.rule == "default" and r.gap is None


def test_missing_arch_row_is_a_gap_not_none():
    """A deleted row reads MISSING, and expected_route reports a gap instead of disarming."""
    table = GATE.without("a2")
    assert table.lookup("a2") is MISSING and GATE.lookup("a2") is None
    r = expected_route(toy_spec(table), q(arch="a2", max_q_len=1))
    assert r.gap == SpecGap("gate", "a2") and r.backend is None and r.rule is None


def test_missing_has_no_truth_value():
    """MISSING cannot be used as a falsy 'no gate' by accident."""
    with pytest.raises(TypeError):
        bool(MISSING)


def test_explicit_backend_is_never_gated():
    """A gate row never fires for an explicit backend."""
    r = expected_route(toy_spec(), q(requested="aiter", max_q_len=1))
    assert r.rule == "default"


def test_validate_rejects_a_missing_arch_row():
    """Self-check: every table must name every architecture, None included."""
    with pytest.raises(SpecError) as e:
        validate(toy_spec(GATE.without("a2")))
    assert e.value.what == "thresholds['gate'] architectures" and e.value.value == ["a1"]
    validate(toy_spec())


def test_validate_rejects_duplicate_names_and_unknown_reasons():
    """Self-check: row names are unique and every expect_reason is a reasons constant."""
    base = toy_spec()
    dup = RoutingSpec("toy", base.archs, base.rules + (base.rules[0],), base.thresholds)
    with pytest.raises(SpecError, match="unique names"):
        validate(dup)
    bogus = R.ReasonCode("BOGUS", "bogus")
    bad = RoutingSpec("toy", base.archs, (RouteRule("x", lambda q, c: True, "fa2", bogus),), base.thresholds)
    with pytest.raises(SpecError, match="routing.reasons.ALL"):
        validate(bad)


def test_eager_plans_re_resolve_and_graph_mode_keeps_the_first():
    """Eager: each plan decides; graph mode: the first plan's route holds for later plans."""
    long_, short = q(max_q_len=64), q(max_q_len=2)
    eager = expected_sequence(toy_spec(), [long_, short, long_])
    assert [e.rule for e in eager] == ["default", "short", "default"]
    graph = expected_sequence(toy_spec(), [x.replace(graph_mode=True) for x in (short, long_, short)])
    assert [e.rule for e in graph] == ["short", "short", "short"]
    graph = expected_sequence(toy_spec(), [x.replace(graph_mode=True) for x in (long_, short)])
    assert [e.rule for e in graph] == ["default", "default"]


def test_a_wrapper_held_on_a_backend_refuses_what_an_explicit_request_for_it_refuses():
    """Graph mode: the first plan fixes fa2; a later plan that explicit fa2 refuses raises, not 'still fa2'."""
    spec = RoutingSpec(
        library="toy",
        archs=("a1",),
        lifecycle=Lifecycle(graph_mode_first_plan_decides=True),
        thresholds={},
        rules=(
            RouteRule(
                "fp8_on_fa2",
                lambda q, c: q.q_dtype == "e4m3fn" and q.requested == "fa2",
                None,
                None,
                expect_raises="NotImplementedError",
            ),
            RouteRule("explicit_fa2", lambda q, c: q.requested == "fa2", "fa2", None),
            RouteRule("masked", lambda q, c: q.custom_mask, "fa2", R.CUSTOM_MASK),
            RouteRule("default", lambda q, c: True, "aiter", None),
        ),
    )
    first, fp8 = q(custom_mask=True, graph_mode=True), q(q_dtype="e4m3fn", graph_mode=True)
    got = expected_sequence(spec, [first, fp8, first])
    assert [(e.rule, e.raises) for e in got] == [
        ("masked", None),
        ("fp8_on_fa2", "NotImplementedError"),
        ("masked", None),
    ]
    assert expected_sequence(spec, [fp8])[0].rule == "default"  # a fresh auto wrapper takes aiter for it


def test_query_from_case_reads_the_case_and_the_environment():
    """Lengths are the batch maxima (0 for an empty batch); env facts are copied."""
    case = Case(
        layout="paged",
        qo_lens=(3, 17),
        kv_lens=(100, 40),
        num_qo_heads=4,
        num_kv_heads=1,
        page_size=16,
        mask="custom",
        causal=True,
        logits_soft_cap=30.0,
    )
    env = RoutingEnv("gfx950", aiter_install="not_installed", graph_mode=True)
    got = query_from_case(case, env, requested="aiter")
    assert (got.api, got.arch, got.max_q_len, got.max_kv_len, got.page_size) == ("paged", "gfx950", 17, 100, 16)
    assert got.custom_mask and got.causal and got.graph_mode and not got.aiter_importable
    assert got.requested == "aiter" and got.logits_soft_cap == 30.0
    empty = Case(layout="ragged", qo_lens=(), kv_lens=(), num_qo_heads=1, num_kv_heads=1)
    assert query_from_case(empty, env).max_q_len == 0


@pytest.mark.parametrize(
    "cap,hip,arch",
    [((9, 4), "6.2", "gfx942"), ((9, 5), "6.2", "gfx950"), (None, None, "unknown"), ((9, 0), None, "unknown")],
)
def test_current_arch_comes_from_the_patchable_capability(monkeypatch, cap, hip, arch):
    """Architecture facts come from kernels._env, patched here (STYLE item 3)."""
    monkeypatch.setattr(_env, "device_capability", lambda device: cap)
    monkeypatch.setattr(_env, "is_rocm", lambda: hip is not None)
    assert current_arch("cuda") == arch
