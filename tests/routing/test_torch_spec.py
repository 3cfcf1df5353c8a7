"""The `torch` routing spec (routing/specs/torch_sdpa.py) against what torch 2.13 does on the CPU.

Both ways, on the real adapter (`kernels.get_target("torch").make("auto", "cpu")`) over the quick
matrix's supported cases plus CRAFTED: every observed decision is explained by a passing row, and
every CPU row is reached (the one row left unreached is the named CUDA gap). The rule itself is
also pinned on raw tensors through `torch._fused_sdp_choice`, so a torch upgrade that moves it
fails here with the fact that moved.
"""
from __future__ import annotations

import itertools
import warnings

import pytest
import torch

from kernels import get_target
from kernels.protocol import NOT_REPORTED
from kernels.torch_sdpa import _choice_name, empty_input_shortcut
from routing.check import ObservedRoute, check, coverage
from routing.spec import RoutingEnv, RoutingQuery, SpecGap, expected_route, query_from_case
from routing.specs import SPECS
from routing.specs.torch_sdpa import CPU_FLASH_DTYPES, GAP_ROWS, SPEC
from scenarios.case import Case
from scenarios.matrix import build
from scenarios.tensors import materialize

CPU = RoutingEnv(arch="unknown", device="cpu")
_BASE = dict(num_qo_heads=4, num_kv_heads=2)

# One case per row at least, whatever the matrix's seed draws; and the precedence edges.
CRAFTED: dict[str, Case] = {
    "head dims differ": Case("ragged", (5, 3), (9, 3), head_dim_qk=64, head_dim_vo=32, **_BASE),
    "head dims differ, causal qo != kv, fp32": Case(
        "paged", (6, 2), (4, 11), head_dim_qk=32, head_dim_vo=64, page_size=4, causal=True,
        q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32", **_BASE),
    "all requests empty, no empty maximum": Case("ragged", (0, 5), (7, 0), head_dim_qk=64, head_dim_vo=64, **_BASE),
    "empty batch with head dims differing": Case("ragged", (), (), head_dim_qk=64, head_dim_vo=32, **_BASE),
    "one empty request beside a real one": Case("ragged", (0, 4), (3, 6), head_dim_qk=64, head_dim_vo=64, **_BASE),
    "custom mask, window, GQA": Case("ragged", (4, 7), (9, 7), head_dim_qk=64, head_dim_vo=64, mask="custom",
                                     window_left=2, causal=True, **_BASE),
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


@pytest.mark.parametrize("row", [r.name for r in SPEC.rules if r.name not in GAP_ROWS])
def test_every_cpu_row_is_reached(verdicts, row):
    """Coverage the other way: a CPU row no passing observation confirmed is a gap in the test."""
    cov = coverage(SPEC, [v for _, v in verdicts])
    assert row not in cov.unreached, f"no passing CPU observation reached row {row!r}"


def test_only_the_named_cuda_gap_is_unreached_on_cpu(verdicts):
    assert coverage(SPEC, [v for _, v in verdicts]).unreached == GAP_ROWS


def test_empty_outranks_head_dims_and_partial_empty_routes_by_the_rest(verdicts):
    by_label = dict(verdicts)
    assert by_label["empty batch with head dims differing"].observed.backend == "empty"
    assert by_label["all requests empty, no empty maximum"].observed.backend == "empty"
    assert by_label["one empty request beside a real one"].observed.backend == "flash"
    assert by_label["head dims differ, causal qo != kv, fp32"].observed.backend == "math"


def test_cuda_is_a_named_gap_and_its_decisions_are_unexplained():
    q = RoutingQuery(api="ragged", arch="unknown", device="cuda", max_q_len=8, max_kv_len=8)
    e = expected_route(SPEC, q)
    assert e.gap == SpecGap("cuda_rows", "unknown")
    observed = [ObservedRoute(b, NOT_REPORTED) for b in ("flash", "efficient", "math", "cudnn")]
    vs = [check(e, o) for o in observed]
    assert all(v.status == "spec_gap" for v in vs)
    cov = coverage(SPEC, vs)
    assert len(cov.unexplained) == len(vs), "a CUDA decision must never pass as explained by a CPU row"


# --- the rule on raw tensors -------------------------------------------------------------------
_DT = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64}


def _choice(q, k, v, mask=None, dropout=0.0, causal=False, scale=None, gqa=False) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _choice_name(int(torch._fused_sdp_choice(q, k, v, mask, dropout, causal, scale=scale,
                                                        enable_gqa=gqa)))


@pytest.mark.parametrize("dtype", sorted(CPU_FLASH_DTYPES))
def test_cpu_rule_agrees_with_fused_sdp_choice(dtype):
    """Spec rows vs torch._fused_sdp_choice over head dims x lengths x causal x mask x GQA x scale."""
    dt = _DT[dtype]
    for (dqk, dvo), (qo, kv), causal, masked, gqa, scale in itertools.product(
            [(8, 8), (64, 64), (7, 7), (256, 256), (8, 16), (64, 32)], [(1, 1), (5, 7), (9, 4)],
            [False, True], [False, True], [False, True], [None, 0.3]):
        hq = 4 if gqa else 2
        q = torch.zeros(1, hq, qo, dqk, dtype=dt)
        k = torch.zeros(1, 2, kv, dqk, dtype=dt)
        v = torch.zeros(1, 2, kv, dvo, dtype=dt)
        mask = torch.ones(qo, kv, dtype=torch.bool) if masked else None
        got = _choice(q, k, v, mask, causal=causal and not masked, scale=scale, gqa=gqa)
        query = RoutingQuery(api="ragged", arch="unknown", device="cpu", q_dtype=dtype, kv_dtype=dtype,
                             o_dtype=dtype, head_dim_qk=dqk, head_dim_vo=dvo, causal=causal,
                             custom_mask=masked, max_q_len=qo, max_kv_len=kv)
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
