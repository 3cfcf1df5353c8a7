"""Each pytest-xdist worker takes its share of the cores for torch's intra-op threads (conformance/plugin.py)."""

from __future__ import annotations

import os

import pytest
import torch

from conformance import plugin


@pytest.mark.parametrize("cores,workers,threads", [(8, 2, 4), (2, 2, 1), (2, 3, 1)])
def test_an_xdist_worker_takes_its_share_of_the_cores(
    monkeypatch: pytest.MonkeyPatch, cores: int, workers: int, threads: int
) -> None:
    before = torch.get_num_threads()
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(workers))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    try:
        torch.set_num_threads(cores)
        plugin.pytest_configure(None)  # type: ignore[arg-type]
        assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(before)
