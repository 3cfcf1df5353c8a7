"""The fault variants of the ROCm fork stand-in: each differs from the correct stand-in on its seed's sequence.

kernels/standins/faults.py switches one seed defect on in the installed stand-in. If a fault did
not change what the library does on the sequence its seed describes, the machines' tests that
catch it (tests/explore/test_scenario_machines.py) would prove nothing; if it changed the stand-in
before that sequence's last plan, it would be a different defect. Driven through the flashinfer
adapter, as the machines drive it.
"""

from __future__ import annotations

from typing import Any

import pytest

import kernels.flashinfer.adapter as fi
import kernels.flashinfer.lib as fl
from kernels.flashinfer.variants import reset_seen
from kernels.standin_label import standin_of
from kernels.standins.faults import FAULTS, fault
from kernels.standins.rocm_fork import NAME, RecordedGraphs, install, installed
from routing.check import ObservedRoute, check
from routing.spec import RoutingEnv, expected_sequence, query_from_case
from routing.specs import FLASHINFER_ROCM
from scenarios.case import Case
from scenarios.tensors import materialize

H = dict(num_qo_heads=4, num_kv_heads=2, head_dim_qk=64, head_dim_vo=64)


def ragged(qo: tuple, kv: tuple = (), **kw: Any) -> Case:
    return Case("ragged", qo, kv or tuple(40 for _ in qo), **{**H, **kw})


# The sequence each seed describes, on one long-lived wrapper; the defect shows at its last plan.
SEED_SEQUENCES = {
    "gate_first_plan_only": [ragged((40,)), ragged((3,))],
    "mask_not_cleared": [ragged((40,), mask="custom"), ragged((40,))],
    "empty_is_short": [ragged(())],
    "graph_repromote": [ragged((8, 8, 8)), ragged((20, 2, 2))],  # short then long, within the captured rows
    "reason_collision": [ragged((3,))],
}


@pytest.fixture(autouse=True)
def _fresh_facts() -> Any:
    reset_seen()
    fl.lib_facts.cache_clear()
    yield
    fl.lib_facts.cache_clear()


def _outputs(graph: bool, seq: list[Case], **config: Any) -> list[Any]:
    with installed(arch="gfx942", **config):
        a = fi.FlashInferKernel(
            "auto", "cpu", graph=graph, options=fi.AdapterOptions(workspace_bytes=1024), graphs=RecordedGraphs()
        )
        outs = []
        for case in seq:
            inputs = materialize(case, 0, "cpu")
            a.plan(inputs)
            outs.append(a.run(inputs))
        return outs


def _seen(out: Any) -> tuple:
    return out.resolved_backend, out.fallback_reason, out.out.nan_to_num().tolist()


def test_the_catalogue_names_every_sequence() -> None:
    assert set(SEED_SEQUENCES) == set(FAULTS)


@pytest.mark.parametrize("name", list(FAULTS))
def test_each_fault_differs_from_the_standin_at_the_end_of_its_seed_sequence(name: str) -> None:
    graph, seq = FAULTS[name].graph, SEED_SEQUENCES[name]
    good, bad = _outputs(graph, seq), _outputs(graph, seq, fault=name)
    assert _seen(good[-1]) != _seen(bad[-1]), f"fault {name} behaves like the stand-in on its seed sequence"
    for g, b, c in zip(good[:-1], bad[:-1], seq[:-1]):
        assert _seen(g) == _seen(b), f"fault {name} shows before the last plan of its sequence ({c.id})"


@pytest.mark.parametrize("graph", [False, True])
def test_the_correct_standin_follows_the_spec_lifecycle_on_the_seed_sequences(graph: bool) -> None:
    """The control: every seed sequence, on the correct stand-in, is what the ROCm spec predicts."""
    env = RoutingEnv(arch="gfx942", device="cpu", graph_mode=graph)
    for name, seq in SEED_SEQUENCES.items():
        if graph and len({c.mask for c in seq}) > 1:
            continue  # the graph adapter gives masked plans a wrapper of their own: not one wrapper's lifecycle
        expected = expected_sequence(FLASHINFER_ROCM, [query_from_case(c, env) for c in seq])
        for case, e, out in zip(seq, expected, _outputs(graph, seq)):
            v = check(e, ObservedRoute(out.resolved_backend, out.fallback_reason))
            assert v.passed, (name, graph, case.id, v.detail)


def test_a_fault_is_named_by_the_label_and_undone_with_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import kernels.standins.rocm_flashinfer.rocm.prefill as prefill

    seams = (prefill._Wrapper._set_mask, prefill._Wrapper._reresolves, prefill._aiter_ragged_short_query)
    with installed(arch="gfx942", fault="mask_not_cleared") as lib:
        assert standin_of(lib) == f"{NAME}+fault:mask_not_cleared" and fl.loaded_standin() == standin_of(lib)
        assert prefill._Wrapper._set_mask is not seams[0]
    assert (prefill._Wrapper._set_mask, prefill._Wrapper._reresolves, prefill._aiter_ragged_short_query) == seams
    assert standin_of(install(monkeypatch, arch="gfx942")) == NAME


def test_a_scripts_install_replaces_the_last_one() -> None:
    """A script's second install (no monkeypatch) undoes the first, fault included, rather than stacking."""
    import kernels.standins.rocm_flashinfer.rocm.prefill as prefill
    from kernels.standins._install import uninstall

    correct = prefill._Wrapper._set_mask
    try:
        install(arch="gfx942", fault="mask_not_cleared")
        assert prefill._Wrapper._set_mask is not correct
        lib = install(arch="gfx950")
        assert prefill._Wrapper._set_mask is correct and standin_of(lib) == NAME
    finally:
        uninstall()
    assert prefill._Wrapper._set_mask is correct


def test_an_unknown_fault_is_refused_naming_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="fault='stale'.*mask_not_cleared"):
        fault("stale")
    with pytest.raises(ValueError, match="fault='stale'"):
        install(monkeypatch, fault="stale")
