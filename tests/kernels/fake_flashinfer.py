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
    "paged_auto_as_in_0_7_4",
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


# flashinfer-python 0.7.4's paged `auto`, where it differs from the model's 0.7.2.post1 (prefill.py of 0.7.4):
# resolved on every plan (:3812-3832, `_determine_auto_backend` :3232-3282), fa3 demoted to fa2 for a
# non-empty 16-bit batch of at most 64 query rows (:3275-3281), and a CUDA-graph wrapper held on its first
# fa2/fa3 plan (:4540-4547), refusing with ValueError a plan the held backend cannot serve (:3255-3269; the
# e4m3 exemption on compute capability (12, 0) is left out: the fake runs as sm80 or sm90).
PAGED_FA2_MAX_Q_ROWS_0_7_4 = 64


def paged_auto_as_in_0_7_4(monkeypatch: Any) -> None:
    """The paged wrapper's `auto` as 0.7.4 resolves it; the rest of the model is 0.7.2.post1's, which on sm80
    and sm90 (the fake's architectures) routes as 0.7.4 does (its other changes are SM100's)."""
    from kernels.standins.upstream_flashinfer import prefill

    def resolve(
        self: Any, q_data_type: torch.dtype, kv_data_type: torch.dtype, head_dim_qk: int, head_dim_vo: int
    ) -> None:
        requested = self.__dict__.setdefault("_requested_backend", self._backend)
        if requested != "auto":
            return
        raw = prefill.determine_attention_backend(
            self.device,
            0,
            False,
            self._custom_mask_buf is not None,
            q_data_type,
            kv_data_type,
            head_dim_qk=head_dim_qk,
            head_dim_vo=head_dim_vo,
        )
        fp8_query = q_data_type in (torch.float8_e4m3fn, torch.float8_e5m2)
        held = getattr(self, "_cuda_graph_backend", None)
        if held is not None:
            if (held == "fa3" and raw != "fa3") or (held == "fa2" and fp8_query):
                raise ValueError(f"CUDA graph backend {held!r} cannot serve these inputs")
            backend = held
        elif raw == "fa3" and not fp8_query and self._batch_size > 0 and self._max_q_len <= PAGED_FA2_MAX_Q_ROWS_0_7_4:
            backend = "fa2"
        else:
            backend = raw
        self._backend = backend
        if self.is_cuda_graph_enabled and backend in ("fa2", "fa3"):
            self._cuda_graph_backend = backend

    monkeypatch.setattr(prefill.BatchPrefillWithPagedKVCacheWrapper, "_resolve", resolve)


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
