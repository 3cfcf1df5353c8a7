"""The `torch` routing spec (routing/specs/torch_sdpa.py) against what torch does: 2.13 on the CPU, live;
2.11.0+cu130 on an H200 (sm90, cuDNN 9.19), through records of a run there.

CPU, both ways, on the real adapter (`kernels.get_target("torch").make("auto", "cpu")`) over the
quick matrix's supported cases plus CRAFTED: every observed decision is explained by a passing row,
and every CPU row is reached (the rows left unreached are exactly the CUDA rows). The rule itself
is also pinned on raw tensors through `torch._fused_sdp_choice`, so a torch upgrade that moves it
fails here with the fact that moved.

CUDA: the rows describe one request (the adapter makes one SDPA call per request and joins the
names); tests/routing/data/torch_cuda_h200_records.jsonl holds auto records of `attncheck run
--target torch --device cuda --budget quick` on an NVIDIA H200 (torch 2.11.0+cu130, cuDNN 91900,
run 20261201T145700Z-0eb944, 2026-12-01), one per CUDA row at least, replayed through
routing.per_request (`batch_route`); the precedence edges are pinned on plain queries.
"""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import pytest
import torch

from kernels import get_target
from kernels.protocol import NOT_REPORTED
from kernels.torch_sdpa import _choice_name, empty_input_shortcut
from conformance import route_records as from_records
from routing import per_request
from routing.check import ObservedRoute, check, coverage
from routing.spec import RoutingEnv, RoutingQuery, SpecGap, expected_route, query_from_case
from routing.specs import SPECS
from routing.specs.torch_sdpa import BATCHED_RULES, CPU_FLASH_DTYPES, GAP_ROWS, SPEC
from scenarios.case import Case
from scenarios.matrix import build
from scenarios.tensors import materialize

CPU = RoutingEnv(arch="unknown", device="cpu")
# Rows gated on a batched backend (tests/routing/test_torch_batched_spec.py); the auto adapter never reaches them.
BATCHED_ROWS = tuple(r.name for r in BATCHED_RULES)
_BASE = dict(num_qo_heads=4, num_kv_heads=2)

# One case per row at least, whatever the matrix's seed draws; and the precedence edges.
CRAFTED: dict[str, Case] = {
    "head dims differ": Case("ragged", (5, 3), (9, 3), head_dim_qk=64, head_dim_vo=32, **_BASE),
    "head dims differ, causal qo != kv, fp32": Case(
        "paged",
        (6, 2),
        (4, 11),
        head_dim_qk=32,
        head_dim_vo=64,
        page_size=4,
        causal=True,
        q_dtype="fp32",
        kv_dtype="fp32",
        o_dtype="fp32",
        **_BASE,
    ),
    "all requests empty, no empty maximum": Case("ragged", (0, 5), (7, 0), head_dim_qk=64, head_dim_vo=64, **_BASE),
    "empty batch with head dims differing": Case("ragged", (), (), head_dim_qk=64, head_dim_vo=32, **_BASE),
    "one empty request beside a real one": Case("ragged", (0, 4), (3, 6), head_dim_qk=64, head_dim_vo=64, **_BASE),
    "custom mask, window, GQA": Case(
        "ragged", (4, 7), (9, 7), head_dim_qk=64, head_dim_vo=64, mask="custom", window_left=2, causal=True, **_BASE
    ),
}


def _observe(case: Case) -> ObservedRoute:
    out = get_target("torch").make("auto", "cpu").run(materialize(case, device="cpu"))
    return ObservedRoute(out.resolved_backend, out.fallback_reason)


@pytest.fixture(scope="module")
def verdicts():
    """(case label, verdict) for every case the auto adapter supports: quick matrix + CRAFTED."""
    probe = get_target("torch").make("auto", "cpu")
    cases = [(c.label or c.id, c) for c in build("quick")] + list(CRAFTED.items())
    out = []
    for label, case in cases:
        if not probe.supports(case).ok:
            continue
        out.append((label, check(expected_route(SPEC, query_from_case(case, CPU)), _observe(case))))
    return out


def test_premise_torch_2_13_cpu_with_the_empty_shortcut():
    """The spec is torch 2.13's: zero-length requests never reach a backend (`empty` row)."""
    assert torch.__version__.startswith("2.13"), f"spec written for torch 2.13, got {torch.__version__}"
    assert empty_input_shortcut("cpu") is True


def test_spec_is_registered_and_every_row_expects_not_reported():
    """torch gives no reason: every row says NOT_REPORTED explicitly, never None ('no fallback')."""
    assert SPECS["torch"] is SPEC
    assert all(r.expect_reason is NOT_REPORTED for r in SPEC.rules)
    assert _observe(CRAFTED["head dims differ"]).reason is NOT_REPORTED
    e = expected_route(SPEC, RoutingQuery(api="ragged", arch="unknown", device="cpu"))
    assert check(e, ObservedRoute("flash", NOT_REPORTED)).passed
    assert check(e, ObservedRoute("flash", None)).status == "wrong_reason"


def test_every_observed_decision_passes_and_is_explained(verdicts):
    assert len(verdicts) >= 60, "the quick matrix should give the auto adapter most of its cases"
    bad = [f"{label}: {v.status} ({v.detail}); rule {v.expected.rule}" for label, v in verdicts if not v.passed]
    assert not bad, "\n".join(bad)
    cov = coverage(SPEC, [v for _, v in verdicts])
    assert cov.unexplained == () and cov.failed == ()


@pytest.mark.parametrize("row", [r.name for r in SPEC.rules if r.name not in GAP_ROWS + BATCHED_ROWS])
def test_every_cpu_row_is_reached(verdicts, row):
    """Coverage the other way: a CPU row no passing observation confirmed is a gap in the test."""
    cov = coverage(SPEC, [v for _, v in verdicts])
    assert row not in cov.unreached, f"no passing CPU observation reached row {row!r}"


def test_only_the_cuda_rows_are_unreached_on_cpu(verdicts):
    assert GAP_ROWS and all(name.startswith("cuda_") for name in GAP_ROWS)
    unreached = coverage(SPEC, [v for _, v in verdicts]).unreached
    assert tuple(r for r in unreached if r not in BATCHED_ROWS) == GAP_ROWS  # the batched rows: their own test


def test_empty_outranks_head_dims_and_partial_empty_routes_by_the_rest(verdicts):
    by_label = dict(verdicts)
    assert by_label["empty batch with head dims differing"].observed.backend == "empty"
    assert by_label["all requests empty, no empty maximum"].observed.backend == "empty"
    assert by_label["one empty request beside a real one"].observed.backend == "flash"
    assert by_label["head dims differ, causal qo != kv, fp32"].observed.backend == "math"


# --- CUDA: torch 2.11.0+cu130 on an H200 (sm90, cuDNN 9.19) ----------------------------------------
H200_RECORDS = Path(__file__).parent / "data" / "torch_cuda_h200_records.jsonl"


def test_the_cuda_rows_explain_every_recorded_sm90_auto_record_and_are_all_reached():
    """Records of the H200 run of 2026-12-01 (see the module docstring): each passes a row, none unexplained,
    and together they reach every CUDA row (cudnn for a masked paged bf16 d64 batch, cudnn+math for
    fp16 d192/128 causal + custom mask, cudnn+flash for MQA decode, ...)."""
    records = from_records.load_records(str(H200_RECORDS))
    assert records[0].versions["torch"] == "2.11.0+cu130" and records[0].versions["cudnn"] == "91900"
    report = from_records.check_records(records, SPEC, "sm90")
    seen = {rv.record.case_id: rv.verdict for rv in report.verdicts}
    assert len(seen) == 7 and all(v is not None for v in seen.values())
    bad = [f"{cid}: {v.status} ({v.detail}); rule {v.expected.rule}" for cid, v in seen.items() if not v.passed]
    assert not bad, "\n".join(bad)
    assert report.ok and report.coverage.unexplained == () and report.coverage.failed == ()
    assert set(report.coverage.unreached) == {r.name for r in SPEC.rules} - set(GAP_ROWS)
    assert seen["paged-b2-h4x2-d64-bf16-p5HND-custom_mask-6124261a15"].observed.backend == "cudnn"
    assert (
        seen["paged-b3-h4x1-d192v128-fp16-p16HND-causal+custom_mask+zero_len-a7a6bccd3d"].expected.rule
        == "cuda_zero_length+cuda_cudnn+cuda_math"
    )


def _cuda(
    qo: int, kv: int, dtype: str = "bf16", dims: tuple[int, int] = (64, 64), heads: tuple[int, int] = (4, 4), **kw
) -> RoutingQuery:
    """One request as the adapter makes it on the H200."""
    return RoutingQuery(
        api="ragged",
        arch="sm90",
        device="cuda",
        q_dtype=dtype,
        kv_dtype=dtype,
        o_dtype=dtype,
        head_dim_qk=dims[0],
        head_dim_vo=dims[1],
        num_qo_heads=heads[0],
        num_kv_heads=heads[1],
        qo_lens=(qo,),
        kv_lens=(kv,),
        max_q_len=qo,
        max_kv_len=kv,
        all_requests_empty=qo == 0 or kv == 0,
        **kw,
    )


def _route(q: RoutingQuery) -> tuple[str, str]:
    e = expected_route(SPEC, q)
    assert e.gap is None and e.reason is NOT_REPORTED, e
    return e.backend, e.rule


def test_cuda_a_masked_16bit_request_goes_to_cudnn_not_efficient():
    """cuDNN is first (cuDNN > 9.15 on sm90) and takes masks; efficient would take them too, after it."""
    for heads in ((4, 4), (4, 2)):
        assert _route(_cuda(6, 40, heads=heads, custom_mask=True)) == ("cudnn", "cuda_cudnn")
        assert _route(_cuda(5, 20, heads=heads, causal=True, window_left=0)) == ("cudnn", "cuda_cudnn")
    assert _route(_cuda(6, 40, dtype="fp32", custom_mask=True)) == ("efficient", "cuda_efficient")
    assert _route(_cuda(6, 1, custom_mask=True)) == ("efficient", "cuda_efficient")  # cudnn: no kv_len 1
    assert _route(_cuda(6, 1, heads=(4, 2), custom_mask=True)) == ("math", "cuda_math")  # efficient: no GQA


def test_cuda_an_unmasked_16bit_request_goes_to_flash_only_where_cudnn_refuses():
    """Without a mask cuDNN still comes first; flash takes kv_len 1 (cuDNN refuses it) and the lower-right
    causal dispatch (qo != kv), which asks flash before SDPA chooses."""
    for heads in ((4, 4), (8, 1)):
        assert _route(_cuda(5, 33, heads=heads)) == ("cudnn", "cuda_cudnn")
        assert _route(_cuda(12, 12, heads=heads, causal=True)) == ("cudnn", "cuda_cudnn")
        assert _route(_cuda(1, 1, heads=heads)) == ("flash", "cuda_flash")
        assert _route(_cuda(1, 1, heads=heads, causal=True)) == ("flash", "cuda_flash")
    assert _route(_cuda(1, 130, dims=(256, 256))) == ("cudnn", "cuda_cudnn")  # cuDNN's sm90 limit is 256
    assert _route(_cuda(1, 1, dtype="fp16", dims=(256, 256))) == ("flash", "cuda_flash")


def test_a_batch_is_the_sorted_join_of_its_requests_rows():
    """MQA decode over kv_lens (1, 33, 130): flash for the kv_len-1 request, cudnn for the others."""
    batch = _cuda(1, 1, dims=(128, 128), heads=(8, 1)).replace(qo_lens=(1, 1, 1), kv_lens=(1, 33, 130), max_kv_len=130)
    e = per_request.batch_route(SPEC, batch)
    assert (e.backend, e.rule, e.reason) == ("cudnn+flash", "cuda_cudnn+cuda_flash", NOT_REPORTED)


def test_cuda_head_dims_differ_go_to_math_only_where_cudnn_and_efficient_refuse():
    """(192, 128): flash never (equal head dims only); cuDNN takes it (<= 256 on sm90), efficient without GQA."""
    d = (192, 128)
    assert _route(_cuda(12, 12, dims=d, causal=True)) == ("cudnn", "cuda_cudnn")
    assert _route(_cuda(12, 12, dims=d, heads=(4, 1), custom_mask=True)) == ("cudnn", "cuda_cudnn")
    assert _route(_cuda(12, 12, dtype="fp32", dims=d)) == ("efficient", "cuda_efficient")
    assert _route(_cuda(12, 12, dtype="fp32", dims=d, heads=(4, 2))) == ("math", "cuda_math")
    assert _route(_cuda(1, 1, dtype="fp16", dims=d, heads=(4, 1), custom_mask=True)) == ("math", "cuda_math")
    assert _route(_cuda(1, 1, dims=d)) == ("efficient", "cuda_efficient")


def test_cuda_causal_with_qo_neq_kv_follows_the_lower_right_dispatch():
    """causal_lower_right asks flash, then efficient, with no mask; otherwise SDPA gets the materialised mask."""
    assert _route(_cuda(9, 4, causal=True)) == ("flash", "cuda_lower_right_flash")
    assert _route(_cuda(7, 30, dims=(192, 128), causal=True)) == ("efficient", "cuda_lower_right_efficient")
    assert _route(_cuda(17, 7, dtype="fp32", causal=True)) == ("efficient", "cuda_lower_right_efficient")
    assert _route(_cuda(7, 30, dims=(192, 128), heads=(4, 2), causal=True)) == ("cudnn", "cuda_cudnn")
    assert _route(_cuda(17, 7, dtype="fp32", heads=(4, 2), causal=True)) == ("math", "cuda_math")


def test_cuda_zero_length_requests_go_to_math_and_a_batch_of_none_is_empty():
    """torch 2.11 has no empty-input shortcut: a zero-length request is routed, and every fused backend refuses it."""
    for qo, kv in ((0, 5), (5, 0), (0, 0)):
        assert _route(_cuda(qo, kv)) == ("math", "cuda_zero_length")
        assert _route(_cuda(qo, kv, causal=True)) == ("math", "cuda_zero_length")
    none = _cuda(1, 1).replace(qo_lens=(), kv_lens=(), max_q_len=0, max_kv_len=0, all_requests_empty=True)
    assert _route(none) == ("empty", "cuda_no_requests")
    assert per_request.batch_route(SPEC, none).backend == "empty"


def test_cuda_arch_without_rows_is_a_named_gap_and_its_decisions_are_unexplained():
    observed = [ObservedRoute(b, NOT_REPORTED) for b in ("flash", "efficient", "math", "cudnn")]
    for arch in ("unknown", "sm100"):
        e = expected_route(SPEC, _cuda(8, 8).replace(arch=arch))
        assert e.gap == SpecGap("cuda_rows", arch)
        vs = [check(e, o) for o in observed]
        assert all(v.status == "spec_gap" for v in vs)
        cov = coverage(SPEC, vs)
        assert len(cov.unexplained) == len(vs), "a CUDA decision must never pass as explained by a CPU row"


def test_a_cuda_query_of_several_requests_is_refused_not_answered_by_its_maxima():
    batch = _cuda(1, 1).replace(qo_lens=(1, 5), kv_lens=(1, 5), max_q_len=5, max_kv_len=5)
    with pytest.raises(ValueError, match="one request"):
        expected_route(SPEC, batch)
    assert per_request.batch_route(SPEC, batch).backend == "cudnn+flash"


# --- the rule on raw tensors -------------------------------------------------------------------
_DT = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64}


def _choice(q, k, v, mask=None, dropout=0.0, causal=False, scale=None, gqa=False) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _choice_name(int(torch._fused_sdp_choice(q, k, v, mask, dropout, causal, scale=scale, enable_gqa=gqa)))


@pytest.mark.parametrize("dtype", sorted(CPU_FLASH_DTYPES))
def test_cpu_rule_agrees_with_fused_sdp_choice(dtype):
    """Spec rows vs torch._fused_sdp_choice over head dims x lengths x causal x mask x GQA x scale."""
    dt = _DT[dtype]
    for (dqk, dvo), (qo, kv), causal, masked, gqa, scale in itertools.product(
        [(8, 8), (64, 64), (7, 7), (256, 256), (8, 16), (64, 32)],
        [(1, 1), (5, 7), (9, 4)],
        [False, True],
        [False, True],
        [False, True],
        [None, 0.3],
    ):
        hq = 4 if gqa else 2
        q = torch.zeros(1, hq, qo, dqk, dtype=dt)
        k = torch.zeros(1, 2, kv, dqk, dtype=dt)
        v = torch.zeros(1, 2, kv, dvo, dtype=dt)
        mask = torch.ones(qo, kv, dtype=torch.bool) if masked else None
        got = _choice(q, k, v, mask, causal=causal and not masked, scale=scale, gqa=gqa)
        query = RoutingQuery(
            api="ragged",
            arch="unknown",
            device="cpu",
            q_dtype=dtype,
            kv_dtype=dtype,
            o_dtype=dtype,
            head_dim_qk=dqk,
            head_dim_vo=dvo,
            causal=causal,
            custom_mask=masked,
            max_q_len=qo,
            max_kv_len=kv,
        )
        want = expected_route(SPEC, query)
        assert got == want.backend, (dtype, dqk, dvo, qo, kv, causal, masked, gqa, scale, want.rule)


def test_cpu_rule_facts_on_raw_tensors():
    """What the rows leave out, pinned: the adapter cannot reach these (see the spec's docstring)."""
    x = torch.zeros(1, 2, 5, 8)
    assert _choice(x, x, x) == "flash"
    assert _choice(torch.zeros(1, 2, 0, 8), x, x) == "math"  # zero-length q: the adapter says "empty"
    assert _choice(x, torch.zeros(1, 2, 0, 8), torch.zeros(1, 2, 0, 8)) == "math"
    assert _choice(x, x, x, dropout=0.1) == "math"
    assert _choice(x[0], x[0], x[0]) == "math"  # 3-D
    assert _choice(x, x.double(), x) == "math"  # mixed dtypes (the adapter declines them)
    assert _choice(x, x, x, mask=torch.zeros(5, 5)) == "flash"  # float mask
    t = torch.zeros(1, 5, 2, 8).transpose(1, 2)  # non-contiguous, last-dim stride 1
    assert _choice(t, t, t) == "flash"


def test_successive_plans_of_a_per_request_library_are_each_their_batchs_route():
    """The scenario machines ask `routes_for` about a wrapper's plans (conformance/explore/machines.py): for torch each
    CUDA batch is its requests' join (a batch of several requests was a ValueError for the spec alone), for a
    batched library the spec's lifecycle."""
    from routing.specs.flashinfer_cuda import SPEC_072 as FLASHINFER_CUDA
    from routing.spec import expected_sequence

    two = _cuda(5, 9, dims=(64, 64)).replace(
        qo_lens=(5, 0), kv_lens=(9, 3), max_q_len=5, max_kv_len=9, all_requests_empty=False
    )
    routes = per_request.routes_for(SPEC, [two, _cuda(3, 3)])
    assert [r.backend for r in routes] == [per_request.batch_route(SPEC, two).backend, _route(_cuda(3, 3))[0]]
    assert "+" in routes[0].backend  # the zero-length request runs math beside the other's kernel
    fi = [q.replace(api="paged", arch="sm90", device="cuda") for q in (_cuda(5, 9), _cuda(3, 3))]
    assert per_request.routes_for(FLASHINFER_CUDA, fi) == expected_sequence(FLASHINFER_CUDA, fi)
