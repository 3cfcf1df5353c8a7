"""`--jit-cache` points FlashInfer's JIT cache before anything imports the library.

On the H200, `attncheck record --jit-cache DIR --time fa2` refused its own option: the timing checks
import flashinfer before the parity run set the cache. FlashInfer reads the variable once, at import.
"""

from __future__ import annotations

import argparse
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import conformance.sweep
from conformance.commands import common, record, run, sweep


def test_record_points_the_jit_cache_before_its_timing_checks_import_the_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLASHINFER_WORKSPACE_BASE", raising=False)
    seen: dict[str, Any] = {}

    def check_sweep(*a: Any) -> None:  # on a GPU this imports flashinfer
        seen["cache"] = os.environ.get("FLASHINFER_WORKSPACE_BASE")
        monkeypatch.setitem(sys.modules, "flashinfer", types.ModuleType("flashinfer"))

    def parity_run(args: argparse.Namespace, argv: Any) -> int:  # what run.handle does first with the option
        common.set_jit_cache(args.jit_cache)
        return 0

    monkeypatch.setattr(conformance.sweep, "check_sweep", check_sweep)
    monkeypatch.setattr(run, "handle", parity_run)
    monkeypatch.setattr(sweep, "timed_sweep", lambda *a: None)
    cache = tmp_path / "jit"
    args = argparse.Namespace(
        device="cuda", time_backends=["fa2"], target="flashinfer", jit_cache=str(cache), out=str(tmp_path / "o")
    )
    monkeypatch.setattr(sweep, "grid", lambda a: None)
    for k in ("reps", "warmup", "chunk"):
        setattr(args, k, None)
    assert record.handle(args, []) == 0
    assert seen["cache"] == str(cache.resolve()), "the cache must be set before the library can be imported"
