"""The upstream FlashInfer model (kernels/standins/upstream_flashinfer/) is labelled, installs and undoes cleanly.

The adapter's upstream code paths are tested against this model in test_flashinfer_adapter.py
(through tests/kernels/fake_flashinfer.py, which removes the label so the library looks real);
here, the model as a user's script or an exploration meets it: labelled everywhere.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import pytest
import torch

import kernels.flashinfer.adapter as fi
import kernels.flashinfer.lib as fl
import kernels.standins.upstream_flashinfer as model
from kernels.standin_label import standin_from_versions, standin_of
from kernels.standins import rocm_flashinfer, upstream
from kernels.standins.upstream_flashinfer import utils
from kernels.standins.upstream_flashinfer._state import STATE
from scenarios.case import Case
from scenarios.tensors import materialize


def test_every_module_of_the_model_is_marked_and_says_it_is_a_standin() -> None:
    modules = [model] + [
        importlib.import_module(i.name) for i in pkgutil.walk_packages(model.__path__, model.__name__ + ".")
    ]
    assert len(modules) >= 8
    for m in modules:
        assert standin_of(m) == upstream.NAME == "flashinfer-upstream", m.__name__
        assert "stand-in" in (m.__doc__ or "").lower(), m.__name__


def test_installed_points_flashinfer_at_the_model_labels_it_and_undoes_it() -> None:
    before = sys.modules.get("flashinfer")
    with upstream.installed(sm90=False, cudnn=True) as lib:
        assert sys.modules["flashinfer"] is lib and sys.modules["flashinfer.prefill"] is model.prefill
        facts = fl.lib_facts("cpu")
        assert (facts.standin, facts.fork, facts.fa3, facts.cudnn) == (upstream.NAME, False, False, True)
        assert standin_from_versions(fi.TARGET.versions()) == upstream.NAME
    assert sys.modules.get("flashinfer") is before and utils.is_sm90a_supported(None) is True
    upstream.install(sm90=True)  # a script's install, undone by uninstall()
    try:
        assert fl.lib_facts("cpu").fa3
    finally:
        upstream.uninstall()
    assert sys.modules.get("flashinfer") is before


def test_the_model_logs_every_call_and_installing_clears_the_log(monkeypatch: pytest.MonkeyPatch) -> None:
    upstream.install(monkeypatch)
    case = Case("ragged", (3, 5), (7, 9), 4, 2)
    a = fi.FlashInferKernel(
        "fa2", "cpu", options=fi.AdapterOptions(workspace_bytes=1024), graphs=upstream.RecordedGraphs()
    )
    inputs = materialize(case, 0, "cpu")
    a.plan(inputs)
    a.run(inputs)
    assert [(c["api"], c["method"]) for c in STATE.calls] == [
        ("ragged", "__init__"),
        ("ragged", "plan"),
        ("ragged", "run"),
    ]
    upstream.install(monkeypatch)
    assert STATE.calls == [] and STATE.wrappers == []


def test_the_fork_is_layered_on_the_model() -> None:
    """One batch kernel and one packbits for both stand-ins: the fork's are the model's."""
    from kernels.standins.rocm_flashinfer.rocm import decode, prefill
    from kernels.standins.upstream_flashinfer import _run, quantization

    assert prefill.batch_attention is decode.batch_attention is _run.batch_attention
    assert rocm_flashinfer.packbits is quantization.packbits
    assert rocm_flashinfer.segment_packbits is quantization.segment_packbits


def test_segment_packbits_raises_where_upstreams_packed_total_is_negative() -> None:
    """Upstream allocates the packed output as torch.empty(total bytes): a segment with a negative length (a
    paged request with queries and no pages, flashinfer-paged-mask-zero-pages) that takes the total below zero
    raises there, as the ledger's entry saw on the H200; a total of zero or more packs."""
    from kernels.standins.upstream_flashinfer import quantization

    x = torch.ones(8, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        quantization.segment_packbits(x, torch.tensor([0, 0, -20, -16]), "little")
    packed, indptr = quantization.segment_packbits(x, torch.tensor([0, 4, 8]), "little")
    assert packed.tolist() == [15, 15] and indptr.tolist() == [0, 1, 2]
