"""The pytest face of attncheck: `pytest conformance --target T --device D --budget B`.

Options choose the target and matrix the conformance suites run; `parity_cases` parametrizes
the parity grid with the same (case, backend) pairs `attncheck run` would run, so the CLI and
pytest judge the same things through the same function (conformance.evaluate.evaluate).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from conformance.collector import freeze_what_is_loaded, skip_final_collection
from conformance.markers import needs_of
from kernels._env import warm_mkl_vml
from scenarios.matrix import BUDGETS


def pytest_configure(config: pytest.Config) -> None:
    """Every pytest process (xdist workers and mutation children too) warms oneMKL before a test computes and
    exits without walking its heap once more (conformance/collector.py); `-n N` steals work between workers
    unless --dist says otherwise; an xdist worker takes its share of the cores for torch's intra-op threads."""
    skip_final_collection()
    warm_mkl_vml()  # oneMKL picks its VML kernels in this one thread before any attention is computed
    if config is not None:
        _steal_work(config)
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        share_cores(int(workers))


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded stays loaded: frozen out of the collector's full collections."""
    freeze_what_is_loaded(session.config.getoption("--device"))


def _steal_work(config: pytest.Config) -> None:
    given = any(str(a).startswith(("--dist", "-d")) for a in config.invocation_params.args)
    if getattr(config.option, "dist", "no") == "load" and not given:
        # `-n N` alone: xdist's "load" hands out the tests in fixed batches, and a worker left with a few long
        # ones runs on alone at the end; "worksteal" hands the rest of its batch to whoever is idle.
        config.option.dist = "worksteal"


def share_cores(workers: int) -> None:
    """torch's intra-op threads for one of `workers` processes computing at once: the cores this process may
    run on, divided among them (at least one). Each worker would otherwise start a thread per core, and
    `pytest -n 2` on two cores ran four threads on two: twice the CPU, mostly spent waiting on each other."""
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    torch.set_num_threads(max(1, cores // max(1, workers)))


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("attncheck")
    g.addoption("--target", default="torch", help="library under test (default: torch)")
    g.addoption("--device", default="cpu", help="cpu or cuda (default: cpu)")
    g.addoption("--budget", default="quick", choices=list(BUDGETS), help="matrix size (default: quick)")
    g.addoption("--seed", type=int, default=0, help="seed of the matrix and the inputs")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "parity_case" not in metafunc.fixturenames:
        return
    from conformance.parity_run import matrix_of
    from kernels import get_target

    opt = metafunc.config.getoption
    target = get_target(opt("--target"))
    # The hardware and library the grid needs, so `--require` (conformance/gate_plugin.py) sees its skips.
    needs = [getattr(pytest.mark, m) for m in needs_of(opt("--target"), opt("--device"))]
    avail = target.available(opt("--device"))
    if not avail.ok:
        # One visible skip with the reason, rather than an empty parametrization.
        metafunc.parametrize(
            "parity_case,backend",
            [
                pytest.param(
                    None,
                    None,
                    marks=[
                        pytest.mark.skip(
                            reason=f"target {opt('--target')} unavailable on {opt('--device')}: {avail.reason}"
                        ),
                        *needs,
                    ],
                )
            ],
        )
        return
    params: list[Any] = []
    for case in matrix_of(opt("--target"), opt("--budget"), opt("--seed"), opt("--device")):
        for backend in target.backends(opt("--device")):
            params.append(pytest.param(case, backend, id=f"{backend}-{case.id}", marks=needs))
    metafunc.parametrize("parity_case,backend", params)
