"""conformance/collector.py: what a pytest process freezes after collection, and which entry points skip the
interpreter's last collection at exit."""

from __future__ import annotations

import gc
import os
from types import SimpleNamespace
from typing import Any, Callable

import pytest

import conformance.collector as collector
from conformance import cli, isolate, plugin, route_records
from conformance.explore import loop


class _Opened(Exception):
    """isolate.main got as far as taking its protocol stream: past where it registers the freeze."""


def _exits(call: Callable[[], Any], *expected: type[BaseException]) -> Callable[[], None]:
    def run() -> None:
        with pytest.raises(expected):
            call()

    return run


def _isolate_child(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    def dup(fd: int) -> int:
        raise _Opened()

    monkeypatch.setattr(os, "dup", dup)  # the child's streams stay this worker's
    return _exits(lambda: isolate.main(["{}"]), _Opened)


ENTRY_POINTS: dict[str, Callable[[pytest.MonkeyPatch], Callable[[], None]]] = {
    "attncheck": lambda mp: _exits(lambda: cli.main(["--help"]), SystemExit),
    "explore-loop": lambda mp: _exits(lambda: loop.main(["--help"]), SystemExit),
    "route-records": lambda mp: _exits(lambda: route_records.main(["--help"]), SystemExit),
    "isolate-child": _isolate_child,
    "pytest": lambda mp: lambda: plugin.pytest_configure(None),  # type: ignore[arg-type]
}


def test_a_pytest_process_freezes_what_collection_loaded_and_collects_it_less_often(
    pytestconfig: pytest.Config,
) -> None:
    # This module's objects were made while collecting: frozen, they are out of every generation's list.
    assert id(ENTRY_POINTS) not in {id(o) for o in gc.get_objects()}
    if pytestconfig.getoption("--device") == "cpu":  # a GPU session keeps Python's rate (the test below)
        assert gc.get_threshold()[2] == collector.FULL_COLLECTION_EVERY


@pytest.mark.parametrize("device,thresholds", [("cpu", [(700, 10, 100)]), ("cuda:0", [])], ids=["cpu", "cuda"])
def test_only_a_cpu_run_collects_the_oldest_generation_less_often(
    device: str, thresholds: list[tuple[int, int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a GPU, device memory that cyclic garbage holds is freed by a collection only: Python's rate is kept."""
    calls: list[str] = []
    fake = SimpleNamespace(
        collect=lambda: calls.append("collect"),
        freeze=lambda: calls.append("freeze"),
        get_threshold=lambda: (700, 10, 10),
        set_threshold=lambda *t: calls.append(f"threshold {t}"),
    )
    monkeypatch.setattr(collector, "gc", fake)
    collector.freeze_what_is_loaded(device)
    assert calls == ["collect", "freeze"] + [f"threshold {t}" for t in thresholds]


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_each_entry_point_freezes_the_heap_at_exit_once(
    entry: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    registered: list[object] = []
    monkeypatch.setattr(collector, "atexit", SimpleNamespace(register=registered.append))
    monkeypatch.setattr(collector, "_registered", False)
    call = ENTRY_POINTS[entry](monkeypatch)
    call()
    call()
    assert registered == [gc.freeze], registered
    capsys.readouterr()  # the help texts
