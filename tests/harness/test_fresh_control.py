"""A failing record is repeated on a fresh adapter: a pass there marks a lifecycle defect, not a case defect.

Seen on the H200 runner: unmasked ragged HND cases failed by 19-1290 times their bound right after a
masked ragged HND case on the same long-lived wrapper (FlashInfer's stale custom mask), and read like
defects of those cases. Shown here with the CPU fake of upstream, which copies that stale mask.
"""

from __future__ import annotations

import os
import sys
from typing import Any


import kernels.flashinfer.adapter as fi
from conformance.evaluate import evaluate, fresh_control
from oracle.judge import truth
from reports.parity import failure_line
from scenarios.case import Case
from scenarios.tensors import materialize

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kernels"))
import fake_flashinfer as ff  # noqa: E402
from fake_flashinfer import fake  # noqa: E402,F401  (the fixture)

MASKED = Case("ragged", (6, 5), (15, 9), 4, 2, head_dim_qk=64, head_dim_vo=64, mask="custom", kv_layout="HND")
PLAIN = MASKED.replace(mask="none", qo_lens=(7, 3))
BASE = dict(run_id="r", target="flashinfer", device="cpu", seed=0, standin=None)


def _eval(adapter: Any, case: Case) -> Any:
    inputs = materialize(case, 0, "cpu")
    rec = evaluate(adapter, case, inputs, lambda: truth(inputs), BASE)
    return fresh_control(adapter, case, inputs, lambda: truth(inputs), rec)


def test_a_stale_mask_failure_is_marked_history_dependent(fake: Any) -> None:
    a = fi.FlashInferKernel("fa2", "cpu", graphs=ff.FakeGraphs(), options=fi.AdapterOptions(workspace_bytes=1024))
    assert _eval(a, MASKED).status == "pass"
    rec = _eval(a, PLAIN)
    assert rec.status == "fail" and rec.fresh == "pass"
    assert "a fresh adapter passes this case" in failure_line(rec)


def test_a_passing_record_gets_no_control(fake: Any) -> None:
    a = fi.FlashInferKernel("fa2", "cpu", graphs=ff.FakeGraphs(), options=fi.AdapterOptions(workspace_bytes=1024))
    assert _eval(a, PLAIN).fresh is None
