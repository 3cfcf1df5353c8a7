"""The model router is a correct control: gates, reasons, lifecycle and numerics, and the ROCm spec agrees.

If the model were wrong, the fault-injected adapters built on it would prove nothing; each fault is
also checked here to differ from the model exactly on its seed's sequence.
"""
from __future__ import annotations

import pytest
import torch

from oracle.judge import judge, truth
from routing import reasons as R
from routing.check import ObservedRoute, check
from routing.spec import RoutingEnv, expected_route, expected_sequence, query_from_case
from routing.specs import FLASHINFER_ROCM
from conformance.explore import model_tables as T
from scenarios.case import Case
from conformance.explore.faults import FAULTS, make_faulty
from conformance.explore.model_router import ModelKernel, make_model
from scenarios.tensors import materialize

H = dict(num_qo_heads=4, num_kv_heads=2, head_dim_qk=64, head_dim_vo=64)


def ragged(qo: tuple, kv: tuple = (), **kw: object) -> Case:
    return Case("ragged", qo, kv or tuple(40 for _ in qo), **{**H, **kw})  # type: ignore[arg-type]


def paged(qo: tuple, kv: tuple = (), **kw: object) -> Case:
    return Case("paged", qo, kv or tuple(40 for _ in qo), page_size=5, **{**H, **kw})  # type: ignore[arg-type]


def route(adapter: ModelKernel, case: Case, seed: int = 0) -> tuple[str, object]:
    out = adapter.run(materialize(case, seed))
    return out.resolved_backend, out.fallback_reason


@pytest.mark.parametrize("arch", T.ARCHS)
def test_length_gates_fire_from_1_to_t_and_never_on_an_empty_batch(arch: str) -> None:
    t_flat, t_rag = T.FLAT_GATHER_GATED_Q_LEN[arch], T.RAGGED_GATED_Q_LEN[arch]
    m = make_model(arch=arch)
    assert route(m, paged((3, t_flat)))[0] == "fa2"
    assert route(m, paged((3, t_flat + 1))) == ("aiter", None)
    assert R.parse_reason(route(m, paged((1,)))[1]) is R.PAGED_SHORT_QUERY
    if t_rag is None:
        assert route(m, ragged((1,))) == ("aiter", None), "gfx950's None is a verdict: never gate"
    else:
        b, why = route(m, ragged((t_rag, 2)))
        assert b == "fa2" and R.parse_reason(why) is R.RAGGED_SHORT_QUERY
        assert R.embedded_threshold(R.RAGGED_SHORT_QUERY, why) == t_rag
        assert route(m, ragged((t_rag + 1,))) == ("aiter", None)
    for empty in (ragged(()), ragged((0, 0)), paged(()), paged((0,), (9,))):
        assert route(m, empty) == ("aiter", None)


def test_precedence_and_explicit_backends() -> None:
    m = make_model(arch="gfx950")
    assert R.parse_reason(route(m, ragged((1,), kv_layout="HND", mask="custom"))[1]) is R.LAYOUT
    assert R.parse_reason(route(m, ragged((1,), mask="custom"))[1]) is R.CUSTOM_MASK
    assert R.parse_reason(route(m, ragged((40,), q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"))[1]) is R.DTYPE
    assert R.parse_reason(route(m, paged((40,), q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"))[1]) \
        is R.DTYPE_FP8_ALLOWED
    assert R.parse_reason(route(m, ragged((40,), head_dim_qk=192, head_dim_vo=128))[1]) is R.HEAD_DIMS
    cap = dict(head_dim_qk=128, head_dim_vo=128, causal=True, logits_soft_cap=30.0)
    assert R.parse_reason(route(m, ragged((40,), **cap))[1]) is R.SOFTCAP_DEFECT
    assert route(make_model(arch="gfx942"), ragged((40,), **cap)) == ("aiter", None)
    assert route(make_model("aiter"), ragged((1,))) == ("aiter", None), "an explicit backend is never gated"
    assert route(make_model("fa2"), ragged((40,))) == ("fa2", None)
    for refused in (ragged((40,), kv_layout="HND"), ragged((40,), **cap)):
        with pytest.raises(ValueError):
            make_model("aiter", arch="gfx950").plan(materialize(refused, 0))


def test_eager_re_resolves_every_plan_and_clears_the_mask() -> None:
    m = make_model()
    assert [route(m, c)[0] for c in (ragged((40,)), ragged((3,)), ragged((40,)))] == ["aiter", "fa2", "aiter"]
    assert route(m, ragged((40,), mask="custom"))[0] == "fa2"
    assert route(m, ragged((40,))) == ("aiter", None)
    w = m._wrapper(ragged((40,)))
    assert w._custom_mask_buf is None and w._mask_indptr_buf is None


def test_graph_mode_first_plan_decides_and_replays_stay_valid() -> None:
    m = make_model(graph=True)
    short, long_ = ragged((8, 8)), ragged((15, 1), (40, 40))
    assert route(m, short)[0] == "fa2"
    w = m._wrapper(short)
    captured = w._graph
    assert captured is not None and captured.plan_info is w._plan_info
    out = m.run(materialize(long_, 1))
    assert (out.resolved_backend, w._graph) == ("fa2", captured), "no re-promotion under capture"
    oc, lc = judge(truth(materialize(long_, 1)), out.out, out.lse)
    assert oc.passed and lc is not None and lc.passed, "the capture reads the re-planned info in place"


@pytest.mark.parametrize("case", [
    ragged((5, 0, 17), (9, 4, 0), causal=True),
    ragged((9,), (4,), causal=True, kv_layout="HND"),
    paged((3, 6), (11, 0), mask="custom", window_left=2, logits_soft_cap=30.0, kv_layout="HND"),
    paged((7, 1, 2), (40, 1, 13), num_qo_heads=8, num_kv_heads=1, q_dtype="fp16", kv_dtype="fp16", o_dtype="fp16"),
    ragged((6,), (6,), q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32", head_dim_qk=192, head_dim_vo=128,
           input_scale=16.0),
], ids=lambda c: c.id)
def test_numerics_match_the_oracle(case: Case) -> None:
    for backend in T.BACKENDS:
        if backend == T.FAST and case.kv_layout != "NHD":
            continue  # refused (ValueError), as test_precedence_and_explicit_backends checks
        inputs = materialize(case, 7)
        out = make_model(backend).run(inputs)
        oc, lc = judge(truth(inputs), out.out, out.lse, lse_base=out.lse_base)
        assert oc.passed and lc is not None and lc.passed, (backend, oc.summary(), lc.summary() if lc else "")


CRAFTED = [ragged((40,)), ragged((1,)), ragged(()), ragged((16, 3)), ragged((17,)), paged((8,)), paged((9,)),
           paged((40,)), paged(()), ragged((40,), kv_layout="HND"), paged((1,), mask="custom"),
           ragged((3,), q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"),
           paged((3,), q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"),
           ragged((40,), head_dim_qk=192, head_dim_vo=128),
           ragged((40,), head_dim_qk=128, head_dim_vo=128, causal=True, logits_soft_cap=30.0)]


@pytest.mark.parametrize("arch", T.ARCHS)
@pytest.mark.parametrize("requested", T.BACKENDS)
def test_the_rocm_spec_describes_the_model(arch: str, requested: str) -> None:
    """One plan each, then the whole list through one wrapper pair: every observation passes."""
    env = RoutingEnv(arch=arch, device="cpu")
    for case in CRAFTED:
        q = query_from_case(case, env, requested=requested)
        e = expected_route(FLASHINFER_ROCM, q)
        try:
            b, why = route(make_model(requested, arch=arch), case)
        except ValueError:
            assert e.raises == "ValueError", (case.id, e)
            continue
        v = check(e, ObservedRoute(b, why))  # type: ignore[arg-type]
        assert v.passed, (case.id, v.status, v.detail)


@pytest.mark.parametrize("graph", [False, True])
def test_the_spec_lifecycle_describes_the_model(graph: bool) -> None:
    env = RoutingEnv(arch="gfx942", device="cpu", graph_mode=graph)
    m = make_model(graph=graph)
    seq = [ragged((8, 8)), ragged((15, 1), (40, 40)), ragged((0, 0)), ragged((3, 12))]
    expected = expected_sequence(FLASHINFER_ROCM, [query_from_case(c, env) for c in seq])
    for case, e in zip(seq, expected):
        v = check(e, ObservedRoute(*route(m, case)))  # type: ignore[misc]
        assert v.passed, (graph, case.id, v.detail)


SEED_SEQUENCES = {
    "gate_first_plan_only": [ragged((40,)), ragged((3,))],
    "mask_not_cleared": [ragged((40,), mask="custom"), ragged((40,))],
    "empty_is_short": [ragged(())],
    "graph_repromote": [ragged((8, 8)), ragged((33, 1))],
    "reason_collision": [ragged((3,))],
}


@pytest.mark.parametrize("name", list(FAULTS))
def test_each_fault_differs_from_the_model_on_its_seed_sequence(name: str) -> None:
    graph = FAULTS[name].graph
    good, bad = make_model(graph=graph), make_faulty(name)
    assert bad.graph == graph
    seq = SEED_SEQUENCES[name]
    outs = [(good.run(materialize(c, 0)), bad.run(materialize(c, 0))) for c in seq]
    g, b = outs[-1]
    differs = (g.resolved_backend, g.fallback_reason) != (b.resolved_backend, b.fallback_reason) \
        or not torch.equal(g.out.nan_to_num(), b.out.nan_to_num())
    assert differs, f"fault {name} behaves like the model on its seed sequence"
    for (g1, b1), c in zip(outs[:-1], seq[:-1]):
        assert (g1.resolved_backend, g1.fallback_reason) == (b1.resolved_backend, b1.fallback_reason) or \
            name == "empty_is_short", f"fault {name} shows before the last plan of its sequence ({c.id})"
