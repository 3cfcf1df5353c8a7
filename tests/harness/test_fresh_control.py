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


class _ProbeRaises:
    """An adapter whose supports() calls the library and meets its defect (jagged SDPA under cuDNN,
    H200: a TypeError from inside torch on a request with no keys)."""

    target, backend = "torch", "nested-cudnn"

    def supports(self, case: Case) -> Any:
        raise TypeError("_nested_view_from_jagged(): argument 'input' (position 1) must be Tensor, not NoneType")


def test_a_supports_probe_that_raises_is_an_error_record_not_the_runs_end() -> None:
    case = Case("single", (3,), (0,), 4, 4, head_dim_qk=64, head_dim_vo=64)
    rec = evaluate(_ProbeRaises(), case, materialize(case, 0, "cpu"), lambda: truth(materialize(case, 0)), BASE)
    assert rec.status == "error", rec
    assert rec.reason.startswith("supports() raised TypeError: _nested_view_from_jagged()"), rec.reason
