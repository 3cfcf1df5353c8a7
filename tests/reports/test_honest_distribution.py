"""scripts/honest_distribution.py: recorded runs summarised as precision_baseline summarises its own."""

from __future__ import annotations

import importlib.util
import json
import os
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "docs", "evidence", "2026-12-04-h200", "call3", "others.jsonl.xz")


def _script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "honest_distribution", os.path.join(ROOT, "scripts", "honest_distribution.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_pair_counts_once_and_the_ledgers_failures_stay_out_of_the_honest_groups(tmp_path: Any) -> None:
    """The H200's last call of the torch standard matrix, given twice: each (case, backend) is one pair; the
    failures the ledger explains (cuDNN's rows without keys) are points marked known, kept out of the groups;
    every failure is explained, the last by jagged cuDNN's keyless-request entry."""
    assert _script().main([RUN, RUN, "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["pairs"] == 1485  # 99 cases x 15 backends
    assert (tmp_path / "distributions.svg").read_text().startswith("<svg")
    known = {p["known"] for p in summary["points"] if p["known"]}
    assert {"torch-sdpa-empty-rows", "torch-nested-cudnn-keyless-request-rows"} <= known
    assert max(g["max"] for k, g in summary["groups"].items() if k.startswith("torch/cudnn ")) < 1
    assert summary["honest_failing"] == []
