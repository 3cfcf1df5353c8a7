"""The batched torch backends' routing rows (routing/specs/torch_sdpa.py, BATCHED_RULES) against what they report.

On the CPU, both ways, on the real adapters: every CPU batched backend over the quick matrix's cases it
supports plus CRAFTED (FlexAttention on a padded batch over CRAFTED only: its name never varies, and its
eager calls are slow), each observation explained by a passing row gated on that backend, and every
batched row a CPU can reach reached. On CUDA the padded rows are the per-request CUDA rows read for the
padded call (derived; two of them met by the H200 records below); jagged SDPA's CUDA rows are read from torch's
own selector and held against the H200's records.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from conformance import route_records as from_records

from kernels import get_target
from kernels.torch_target import batched_backends
from routing.check import ObservedRoute, check, coverage
from routing.per_request import WHOLE_BATCH
from routing.spec import RoutingEnv, expected_route, query_from_case
from routing.specs.torch_sdpa import BATCHED_GAP_ROWS, BATCHED_RULES, FORCED_BATCHED, NESTED_AUTO, PADDED_AUTO, SPEC
from scenarios.case import Case
from scenarios.matrix import build
from scenarios.tensors import materialize

CPU = RoutingEnv(arch="unknown", device="cpu")
SM90 = RoutingEnv(arch="sm90", device="cuda")
_H = dict(num_qo_heads=4, num_kv_heads=4, head_dim_qk=64, head_dim_vo=64)
SLOW = {"flex-padded"}
# Rows the quick matrix may not draw: no query in the batch, head dims differing, an empty batch.
CRAFTED: dict[str, Case] = {
    "no query row in the batch": Case("ragged", (0, 0), (5, 3), **_H),
    "no key in the batch": Case("ragged", (2, 3), (0, 0), **_H),
    "head dims differ": Case("ragged", (3, 2), (5, 7), 4, 4, 64, 32),
    "empty batch": Case("ragged", (), (), **_H),
    "plain batch": Case("ragged", (3, 2), (5, 7), **_H),
}


@pytest.fixture(scope="module")
def verdicts():
    """(label, backend, verdict) for every batched CPU backend on every case it supports."""
    quick = [(c.label or c.id, c) for c in build("quick")]
    out = []
    for backend in batched_backends("cpu"):
        adapter = get_target("torch").make(backend, "cpu")
        for label, case in list(CRAFTED.items()) if backend in SLOW else quick + list(CRAFTED.items()):
            if not adapter.supports(case).ok:
                continue
            res = adapter.fresh().run(materialize(case, device="cpu"))
            expected = expected_route(SPEC, query_from_case(case, CPU, requested=backend))
            out.append((label, backend, check(expected, ObservedRoute(res.resolved_backend, res.fallback_reason))))
    return out


def test_every_batched_observation_passes_and_is_explained_by_a_row_of_its_backend(verdicts) -> None:
    assert len(verdicts) >= 150
    bad = [f"{b} {label}: {v.status} ({v.detail}); rule {v.expected.rule}" for label, b, v in verdicts if not v.passed]
    assert not bad, "\n".join(bad)
    names = {r.name for r in BATCHED_RULES}
    assert all(v.expected.rule in names for _, _, v in verdicts), "a batched call explained by a per-request row"


def test_the_batched_rows_a_cpu_leaves_unreached_are_exactly_the_cuda_ones(verdicts) -> None:
    unreached = set(coverage(SPEC, [v for _, _, v in verdicts]).unreached)
    assert unreached & {r.name for r in BATCHED_RULES} == set(BATCHED_GAP_ROWS)


def test_every_forced_batched_backend_has_its_row() -> None:
    assert set(FORCED_BATCHED) == set(batched_backends("cuda")) - {PADDED_AUTO, NESTED_AUTO}


def _padded_cuda(qo: tuple[int, ...], kv: tuple[int, ...], **kw) -> str | None:
    case = Case("ragged", qo, kv, q_dtype="bf16", kv_dtype="bf16", o_dtype="bf16", **kw)
    return expected_route(SPEC, query_from_case(case, SM90, requested=PADDED_AUTO)).backend


def test_cuda_padded_auto_reads_the_padded_call_through_the_cuda_rows() -> None:
    """Head dim 60: cuDNN and efficient refuse it, flash takes it unmasked; padding is a mask."""
    d60 = dict(num_qo_heads=4, num_kv_heads=4, head_dim_qk=60, head_dim_vo=60)
    assert _padded_cuda((4, 4), (9, 9), **d60) == "flash"  # no padding, no mask
    assert _padded_cuda((3, 5), (7, 9), **d60) == "math"  # padding: an attn_mask, which flash refuses
    assert _padded_cuda((4, 4), (4, 4), causal=True, **_H) == "cudnn"  # 16-bit, dims % 8: cuDNN first


def _nested_cuda(qo: tuple[int, ...], kv: tuple[int, ...], dtype: str = "bf16", env=SM90, **kw) -> tuple:
    case = Case("ragged", qo, kv, q_dtype=dtype, kv_dtype=dtype, o_dtype=dtype, **{**_H, **kw})
    e = expected_route(SPEC, query_from_case(case, env, requested=NESTED_AUTO))
    return e.backend, e.gap.table if e.gap else None


def test_cuda_nested_auto_reads_jagged_sdpas_own_order() -> None:
    """Jagged SDPA on sm90: flash, then efficient, then math, cuDNN last (math refuses is_causal), each behind the
    jagged checks; an arch the rows are not written for is the named gap."""
    assert _nested_cuda((3, 2), (5, 7)) == ("flash", None)
    assert _nested_cuda((3, 2), (5, 7), head_dim_qk=192, head_dim_vo=128) == ("efficient", None)  # flash: equal dims
    assert _nested_cuda((3, 2), (5, 7), dtype="fp32") == ("efficient", None)  # flash: 16-bit only
    assert _nested_cuda((3, 2), (5, 0)) == ("math", None)  # a key length 0: no fused kernel
    assert _nested_cuda((3, 0), (5, 7)) == ("math", None)  # a query length 0 alike
    assert _nested_cuda((0,), (7,), causal=True) == ("cudnn", None)  # math refuses is_causal: cuDNN last
    assert _nested_cuda((3, 2), (5, 7), env=RoutingEnv(arch="sm100", device="cuda")) == (None, "nested_cuda_rows")


H200_RECORDS = Path(__file__).parent / "data" / "torch_batched_cuda_h200_records.jsonl"


def test_the_recorded_h200_batched_calls_pass_their_rows_through_attncheck_routes() -> None:
    """Records of the batched backends from an H200 run (torch 2.11.0+cu130, cuDNN 91900; run
    20261203T051959Z-5a9566, docs/evidence/2026-12-03-h200-2/), one per (backend, row, backend run), checked as
    `attncheck routes --spec torch --arch sm90` checks them: every batched record is checked, each batch as the
    one call it is (split per request, padded-auto's zero-length batch would expect math where cuDNN ran), every
    observation passes its row (jagged SDPA's too, a gap until its rows were written)."""
    records = from_records.load_records(str(H200_RECORDS))
    assert records[0].versions["torch"] == "2.11.0+cu130"
    report = from_records.check_records(records, SPEC, "sm90")
    by = {(rv.record.backend, rv.record.case_id): rv.verdict for rv in report.verdicts}
    assert len(by) == 12 and all(v is not None for v in by.values())
    bad = [f"{k}: {v.status} ({v.detail}); rule {v.expected.rule}" for k, v in by.items() if v is None or not v.passed]
    assert not bad, "\n".join(bad)
    rules = {v.expected.rule for v in by.values() if v is not None}
    assert {"padded_cuda_cudnn", "padded_cuda_math", "forced_flex_padded", "nested_no_requests"} <= rules
    assert by[("nested-auto", "single-b1-h8x8-d192v128-bf16-31e3488666")].expected.rule == "nested_cuda_efficient"


NESTED_RECORDS = Path(__file__).parent / "data" / "torch_nested_cuda_h200_records.jsonl"


def test_the_recorded_h200_jagged_calls_pass_the_nested_cuda_rows() -> None:
    """Every nested-auto record that ran in 60 s of the standard matrix on the H200 (torch 2.11.0+cu130, run
    20261203T115603Z-580882, docs/evidence/2026-12-03-h200-4/call3/torch/): each passes its row, and the
    three CUDA rows are each met (the data the rows were checked against)."""
    records = from_records.load_records(str(NESTED_RECORDS))
    report = from_records.check_records(records, SPEC, "sm90")
    verdicts = [rv.verdict for rv in report.verdicts]
    assert len(verdicts) == 15 and all(v is not None for v in verdicts)
    bad = [
        f"{rv.record.case_id}: {rv.verdict.status} ({rv.verdict.detail})"
        for rv in report.verdicts
        if not rv.verdict.passed
    ]
    assert not bad, "\n".join(bad)
    met = Counter(v.expected.rule for v in verdicts)
    assert met == {"nested_no_requests": 3, "nested_cuda_flash": 6, "nested_cuda_efficient": 3, "nested_cuda_math": 3}


PADDED_ROWS_RECORDS = Path(__file__).parent / "data" / "torch_padded_rows_h200_records.jsonl"


def test_the_recorded_h200_padded_calls_meet_the_padded_rows_no_standard_run_reached() -> None:
    """padded-auto on the H200 (torch 2.11.0+cu130, run 20261203T180051Z-79c0a3, docs/evidence/2026-12-03-h200-7/
    call1/torch/), one case made for each row the standard runs never reached (scripts/h200_steps/
    padded_rows_cases.json): the padded call with no query rows, with one key and no mask (cuDNN declines), lower-right
    causal in fp32 (flash declines) and in fp16. Each record passes exactly the row it was made for."""
    records = from_records.load_records(str(PADDED_ROWS_RECORDS))
    report = from_records.check_records(records, SPEC, "sm90")
    met = {
        rv.record.case["label"]: (rv.verdict.expected.rule, rv.verdict.passed) for rv in report.verdicts if rv.verdict
    }
    assert met == {
        "padded call Lq 0: zero_length": ("padded_cuda_zero_length", True),
        "padded call Lk 1, no mask: cuDNN declines, flash": ("padded_cuda_flash", True),
        "lower-right causal fp32: efficient": ("padded_cuda_lower_right_efficient", True),
        "lower-right causal fp16: flash": ("padded_cuda_lower_right_flash", True),
    }


def test_the_whole_batch_backends_are_the_batched_backends() -> None:
    """Every backend the torch target batches (one call per batch) routes as one call, and no other."""
    assert WHOLE_BATCH["torch"] == set(batched_backends("cuda"))
