"""The upstream FlashInfer model as the adapter's tests want it: installed, unlabelled, and breakable.

The model is kernels/standins/upstream_flashinfer/ (installed by kernels/standins/upstream.py).
What is test-only lives here: the `fake` fixture; install() that also removes the stand-in label,
so the library looks real to the adapter (the tests of labelling use the labelled model); and
knobs that break the model's kernel to prove the adapter notices (rows left unwritten, an LSE in
natural log under the base-2 contract).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
import torch

from kernels.standin_label import MARKER
from kernels.standins import upstream
from kernels.standins._launch import RecordedGraphs as FakeGraphs
from kernels.standins.upstream_flashinfer import _run
from kernels.standins.upstream_flashinfer._state import STATE
from kernels.standins.upstream_flashinfer.decode import BatchDecodeWithPagedKVCacheWrapper
from kernels.standins.upstream_flashinfer.prefill import (
    BatchPrefillWithPagedKVCacheWrapper,
    BatchPrefillWithRaggedKVCacheWrapper,
    single_prefill_with_kv_cache,
)

__all__ = [
    "BatchDecodeWithPagedKVCacheWrapper",
    "BatchPrefillWithPagedKVCacheWrapper",
    "BatchPrefillWithRaggedKVCacheWrapper",
    "FakeGraphs",
    "STATE",
    "fake",
    "install",
    "leave_rows_unwritten",
    "natural_log_lse",
    "single_prefill_with_kv_cache",
]


def install(monkeypatch: Any, *, sm90: bool = True, cudnn: bool = False) -> Any:
    """The upstream model as `flashinfer`, without its stand-in label (undone by monkeypatch); returns the package."""
    pkg = upstream.install(monkeypatch, sm90=sm90, cudnn=cudnn)
    monkeypatch.delattr(pkg, MARKER, raising=False)
    return pkg


def leave_rows_unwritten(monkeypatch: Any, rows: set[int]) -> None:
    """A broken kernel: output and LSE rows `rows` (of the whole batch) are never written."""

    def store(out: torch.Tensor, lse: Any, q0: int, o: torch.Tensor, l2: torch.Tensor) -> None:
        for r in range(o.shape[0]):
            if q0 + r not in rows:
                out[q0 + r] = o[r].to(out.dtype)
                if lse is not None:
                    lse[q0 + r] = l2[r]

    monkeypatch.setattr(_run, "_store", store)


def natural_log_lse(monkeypatch: Any) -> None:
    """A broken kernel: the LSE comes back in natural log where the contract is base 2."""
    real = _run._attend

    def attend(*args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        out, lse2 = real(*args, **kwargs)
        return out, lse2 * _run.K.LN2

    monkeypatch.setattr(_run, "_attend", attend)


@pytest.fixture
def fake(monkeypatch: Any) -> Any:
    """The model installed as `flashinfer` for one test, with the adapter's library caches reset around it.

    Test modules take it with `from fake_flashinfer import fake  # noqa: F401`.
    """
    import kernels.flashinfer.lib as fl
    from kernels.flashinfer.variants import reset_seen

    install(monkeypatch)
    fl.lib_facts.cache_clear()
    reset_seen()
    yield sys.modules[__name__]
    fl.lib_facts.cache_clear()
