"""FlashInfer itself on an sm90 GPU: the three lifecycle facts its library mutants break.

The kill tests of conformance/mutations/library_mutants.py FLASHINFER_PACKAGE_MUTANTS
(`attncheck mutate --target flashinfer --device cuda`): paged `auto` declines fa3 for a custom
mask, an unmasked paged plan after a masked one runs unmasked, ragged `auto` re-resolves on every
plan. Each drives the real adapter on the real library and judges the output against the oracle.
Skipped unless flashinfer-python 0.7.2 imports and a compute-capability 9.x device is present
(fa3 exists there only), as on the H200 runner.
"""

from __future__ import annotations

from typing import Any

import pytest

from kernels import _env
from oracle.judge import judge, truth
from scenarios.case import Case
from scenarios.tensors import materialize


def _why_not() -> str:
    if not _env.cuda_available():
        return "needs a CUDA device"
    if _env.is_rocm() or (_env.device_capability("cuda") or (0, 0))[0] != 9:
        return "needs an sm90 device (fa3)"
    try:
        import flashinfer
    except Exception as e:  # not installed, or it does not import on this machine
        return f"flashinfer does not import ({type(e).__name__})"
    if not str(getattr(flashinfer, "__version__", "")).startswith("0.7.2"):
        return "written for flashinfer-python 0.7.2.post1"
    return ""


pytestmark = [pytest.mark.cuda, pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "runs")]

H = dict(num_qo_heads=4, num_kv_heads=4, head_dim_qk=128, head_dim_vo=128)


def _adapter(backend: str) -> Any:
    from kernels.flashinfer.adapter import TARGET

    return TARGET.make(backend, "cuda")


def _run(adapter: Any, case: Case) -> tuple[str, bool]:
    """(resolved backend, whether the output passed the oracle)."""
    inputs = materialize(case, 0, "cuda")
    res = adapter.run(inputs)
    out_cmp, _ = judge(truth(inputs), res.out, None, adapter="flashinfer", backend=adapter.backend)
    return res.resolved_backend, out_cmp.passed


def test_paged_auto_takes_fa2_for_a_custom_mask_on_sm90() -> None:
    """determine_attention_backend sees the mask buffer (prefill.py:3674): fa3 takes no custom mask."""
    resolved, passed = _run(_adapter("auto"), Case("paged", (5, 3), (9, 7), page_size=4, mask="custom", **H))
    assert resolved == "fa2" and passed


def test_paged_unmasked_plan_after_a_masked_one_runs_unmasked() -> None:
    """A paged plan without a mask clears the previous plan's mask buffer (prefill.py:3543-3545)."""
    a = _adapter("fa2")
    _run(a, Case("paged", (5, 3), (9, 7), page_size=4, mask="custom", **H))
    _, passed = _run(a, Case("paged", (5, 3), (9, 7), page_size=4, **H))
    assert passed


def test_ragged_auto_re_resolves_on_every_plan() -> None:
    """Ragged auto resolves from _requested_backend on every plan (prefill.py:5527): fa2 for an fp8 KV
    under a 16-bit query (fa3 wants both fp8, utils.py:492-497), then fa3 again for bf16 alone. (The
    first version drove fa2 by head dim 96, and that run made an illegal memory access on the H200: fa2
    prefill validates no head dim, flashinfer-ai/flashinfer#4299; supports() declines it since.)"""
    a = _adapter("auto")
    first, _ = _run(a, Case("ragged", (5, 3), (9, 7), kv_dtype="e4m3fn", k_scale=1.0, v_scale=2.0, **H))
    second, passed = _run(a, Case("ragged", (5, 3), (9, 7), **H))
    assert (first, second) == ("fa2", "fa3") and passed
