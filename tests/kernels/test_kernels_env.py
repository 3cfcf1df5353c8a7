"""kernels._env answers machine facts through patchable functions, without heavy imports."""
from __future__ import annotations

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
