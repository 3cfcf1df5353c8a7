"""kernels._env answers machine facts through patchable functions, without heavy imports."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
from typing import Any

import pytest
import torch

from kernels import _env


def test_cpu_has_no_compute_capability() -> None:
    """device_capability is None for the CPU (and for CUDA when no device is present)."""
    assert _env.device_capability("cpu") is None
    if not _env.cuda_available():
        assert _env.device_capability("cuda") is None


def test_device_type_reads_strings_and_devices() -> None:
    """'cuda:1' and torch.device('cuda', 1) are both CUDA devices; 'cpu' is the CPU."""
    assert _env.device_type("cuda:1") == "cuda" == _env.device_type(torch.device("cuda", 1))
    assert _env.device_type("cpu") == "cpu"


def test_library_versions_name_torch_and_its_toolkits() -> None:
    """Versions carry torch's own version and a value for cuda, hip and cudnn even when absent."""
    v = _env.library_versions()
    assert v["torch"] == str(torch.__version__)
    for key in ("cuda", "hip", "cudnn"):
        assert isinstance(v[key], str) and v[key]
    assert ("flashinfer" in v) == (importlib.util.find_spec("flashinfer") is not None)


def test_flashinfer_version_is_read_from_metadata_without_importing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed flashinfer is reported by its distribution version and is not imported."""
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return object() if name == "flashinfer" else real_find_spec(name, *args)

    def version(dist: str) -> str:
        if dist == "flashinfer-python":
            return "0.7.2.post1"
        raise importlib.metadata.PackageNotFoundError(dist)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(importlib.metadata, "version", version)
    imported_before = "flashinfer" in sys.modules
    assert _env.library_versions()["flashinfer"] == "0.7.2.post1"
    assert ("flashinfer" in sys.modules) == imported_before


def test_device_capability_is_patchable_for_other_architectures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Routing tests patch device_capability; callers that go through the module see the patch."""
    monkeypatch.setattr(_env, "device_capability", lambda device: (9, 0))
    assert _env.device_capability("cuda") == (9, 0)


# The modules whose own attention computes on the CPU with VML-backed torch functions.
VML_USERS = ("oracle.reference", "kernels.standins._kernels")


def test_the_architecture_is_asked_without_making_a_cuda_context_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a CUDA context yet, device 0's capability is asked in a forked child and the device counted through
    NVML: this process neither makes a context nor initialises the driver, so the pristine control's server
    (forked after the subjects are chosen, which needs the architecture) can still use the GPU. With a context,
    torch is asked directly."""
    asked_here: list[int] = []

    def properties(index: int) -> Any:
        asked_here.append(index)  # in the child this appends to the child's copy
        return type("P", (), {"major": 9, "minor": 0, "gcnArchName": ""})()

    def runtime_count() -> bool:
        raise AssertionError("cudaGetDeviceCount initialises the driver: no forked child could use the GPU")

    monkeypatch.setattr(torch.cuda, "is_available", runtime_count)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)  # NVML's count, while torch has no context
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "get_device_properties", properties)
    _env._properties_from_a_fork.cache_clear()
    try:
        assert _env.device_capability("cuda:0") == (9, 0)
        assert asked_here == []
        monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)  # "cuda" is the current device, as in torch
        assert _env.device_capability("cuda") == (9, 0) and asked_here == [1]
    finally:
        _env._properties_from_a_fork.cache_clear()


def test_warming_calls_every_vml_function_once_per_float_dtype_on_one_element(monkeypatch: pytest.MonkeyPatch) -> None:
    """warm_mkl_vml calls each VML-backed function on one float32 and one float64 element.

    One element never reaches a second intra-op thread, so oneMKL picks the kernel in one thread; a
    first call shared by two threads can run one thread's chunk on a low-accuracy kernel
    (pytorch/pytorch#188792), once per process: a wrong oracle, or a run that differs from a fresh
    adapter's bit for bit. The harness's own attention computes with exp, log, log2 and tanh.
    """
    seen: list[tuple[str, torch.dtype, int]] = []
    for name in _env.VML_FUNCTIONS:
        real = getattr(torch, name)
        monkeypatch.setattr(torch, name, lambda x, _n=name, _f=real: seen.append((_n, x.dtype, x.numel())) or _f(x))
    _env.warm_mkl_vml.__wrapped__()  # uncached: importing the oracle already ran it here
    want = [(n, d, 1) for d in (torch.float32, torch.float64) for n in _env.VML_FUNCTIONS]
    assert seen == want
    assert {"exp", "log", "log2", "tanh"} <= set(_env.VML_FUNCTIONS)


def test_no_module_warms_vml_when_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle and the stand-in do no work at import: warming is the entry points' job."""
    paths = {m: importlib.import_module(m).__file__ for m in VML_USERS}
    calls: list[str] = []
    for module, path in paths.items():
        monkeypatch.setattr(_env, "warm_mkl_vml", lambda m=module: calls.append(m))
        spec = importlib.util.spec_from_file_location(f"_fresh_{module.replace('.', '_')}", path)
        assert spec is not None and spec.loader is not None
        fresh = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, fresh)  # dataclasses look their module up
        spec.loader.exec_module(fresh)
        assert not hasattr(fresh, "warm_mkl_vml"), module
    assert calls == []


def _warm_recorder(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr(module, "warm_mkl_vml", lambda: calls.append(module.__name__))
    return calls


def test_every_entry_point_warms_vml_before_it_can_compute(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """The CLI, a parity run, an exploration and every pytest process warm oneMKL before their first check.

    A first exp split across two threads may run one chunk on a low-accuracy kernel (see
    test_warming_calls_every_vml_function_once_per_float_dtype_on_one_element): each way into
    attncheck warms first, even where it then stops at a usage error.
    """
    from conformance import cli, parity_run, plugin
    from conformance.explore import loop
    from scenarios.errors import InvalidValue

    calls = _warm_recorder(monkeypatch, cli)
    assert cli.main(["run", "--budget", "no-such-budget"]) == 2 and calls == ["conformance.cli"]
    calls = _warm_recorder(monkeypatch, parity_run)
    with pytest.raises(InvalidValue):
        parity_run.run_parity("torch", "cpu", "quick", str(tmp_path), time_budget_s=-1.0)
    assert calls == ["conformance.parity_run"]
    calls = _warm_recorder(monkeypatch, loop)
    with pytest.raises(ValueError):
        loop.explore("torch", budget="ci", out=tmp_path, subjects=["no-such-subject"])
    assert calls == ["conformance.explore.loop"]
    calls = _warm_recorder(monkeypatch, plugin)
    plugin.pytest_configure(None)  # type: ignore[arg-type]
    assert calls == ["conformance.plugin"]


def test_a_library_script_warms_vml_before_it_builds_an_adapter() -> None:
    """A written library script (the stand-in, with or without a fault) warms oneMKL before its first call."""
    from conformance.explore.repro import _LIBRARY_BODY

    warm, data = _LIBRARY_BODY.index("\nwarm_mkl_vml()"), _LIBRARY_BODY.index("\nDATA = ")
    assert _LIBRARY_BODY.index("from kernels._env import warm_mkl_vml") < warm < data
