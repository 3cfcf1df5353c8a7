"""The ROCm fork's routing spec: every row reachable, boundaries, precedence, and a cross-check
against the selector's elif chain written out imperatively from rocm_fork.md section 2."""

from __future__ import annotations

from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing import reasons as R
from routing.check import ObservedRoute, check, coverage
from routing.spec import MISSING, RoutingQuery, expected_route, expected_sequence
from routing.specs import SPECS
from routing.specs.flashinfer_rocm import RAGGED, SPEC

BASE = RoutingQuery(api="paged", arch="gfx942", page_size=5, max_q_len=64, max_kv_len=256)
SOFTCAP = dict(causal=True, logits_soft_cap=30.0, head_dim_qk=128, head_dim_vo=128)


def q(**kw) -> RoutingQuery:
    return BASE.replace(**kw)


# One crafted query per row: the row it must reach.
CRAFTED: dict[str, RoutingQuery] = {
    "unknown_backend_ragged": q(api="ragged", requested="triton"),
    "unknown_backend_paged": q(requested="triton"),
    "both_length_gates_armed": q(both_length_gates=True, max_q_len=4),
    "ragged_fp8": q(api="ragged", q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz"),
    "paged_fp8_off_native_paging": q(q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz", page_size=32),
    "paged_fp8_output_not_bf16": q(q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz", page_size=16, o_dtype="fp16"),
    "paged_fp8_wrong_encoding": q(q_dtype="e4m3fn", kv_dtype="e4m3fn", page_size=16),
    "fp8_on_fa2": q(api="single", page_size=1, q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz"),
    "explicit_fa2": q(requested="fa2"),
    "explicit_aiter_softcap_defect": q(api="ragged", page_size=1, arch="gfx950", requested="aiter", **SOFTCAP),
    "explicit_aiter_unsupported_feature": q(api="ragged", page_size=1, requested="aiter", kv_layout="HND"),
    "explicit_aiter_decode_over_capacity": q(
        api="decode", page_size=16, requested="aiter", max_q_len=1, graph_mode=True, max_seq_len=128, max_kv_len=256
    ),
    "explicit_aiter": q(requested="aiter", max_q_len=1),
    "decode_tensor_cores": q(api="decode", page_size=16, max_q_len=1, use_tensor_cores=True),
    "decode_graph_without_max_seq_len": q(api="decode", page_size=16, max_q_len=1, graph_mode=True),
    "capability_undeclared": q(arch="unknown"),
    "layout": q(kv_layout="HND"),
    "custom_mask": q(custom_mask=True),
    "dtype_paged": q(q_dtype="fp32", kv_dtype="fp32"),
    "dtype": q(api="ragged", page_size=1, q_dtype="fp32", kv_dtype="fp32"),
    "dtype_mismatch": q(q_dtype="fp16", kv_dtype="bf16"),
    "head_dims": q(head_dim_qk=192, head_dim_vo=128),
    "pos_encoding": q(pos_encoding="ROPE_LLAMA"),
    "softcap_defect": q(api="ragged", page_size=1, arch="gfx950", **SOFTCAP),
    "not_installed": q(aiter_install="not_installed"),
    "below_abi_floor": q(aiter_install="below_abi_floor"),
    "paged_short_query": q(max_q_len=16),
    "ragged_short_query": q(api="ragged", page_size=1, max_q_len=16),
    "paged_probe_softcap_defect": q(arch="gfx950", page_size=1024, native_paging_ok=False, **SOFTCAP),
    "paged_probe_short_query": q(page_size=1024, max_q_len=4, native_paging_ok=False),
    "bootstrap_failed": q(api="ragged", page_size=1, bootstrap_ok=False),
    "single_bootstrap_failed": q(api="single", page_size=1, bootstrap_ok=False),
    "decode_over_capacity": q(
        api="decode", page_size=16, max_q_len=1, graph_mode=True, max_seq_len=128, max_kv_len=256
    ),
    "aiter": BASE,
}


def library_text(code: Optional[R.ReasonCode], t: Optional[int] = None) -> Optional[str]:
    """The library's formatted reason text for `code`, as rocm_fork.md section 2/4 gives it."""
    if code is None:
        return None
    return {
        R.CAPABILITY_UNDECLARED: "aiter batch_prefill requires an AMD gfx942/gfx950 device; got 'unknown'. Use backend='fa2' instead",
        R.CAPABILITY_UNSUPPORTED: "aiter batch_prefill is not supported on gfx90a",
        R.CAPABILITY_UNKNOWN_OP: "aiter frobnicate is not a declared capability",
        R.CAPABILITY_KNOWN_BAD: "aiter batch_prefill on gfx950 is known-broken in amd-aiter 0.1.19",
        R.LAYOUT: "kv_layout='HND' (AITER requires NHD)",
        R.CUSTOM_MASK: "custom mask (not supported by AITER)",
        R.DTYPE: "dtype=torch.float32 (AITER requires fp16/bf16)",
        R.DTYPE_FP8_ALLOWED: "dtype=torch.float32 (AITER requires fp16/bf16/fp8)",
        R.DTYPE_MISMATCH: "dtype_q=torch.float16 != dtype_kv=torch.bfloat16 (AITER requires equal dtypes)",
        R.HEAD_DIMS: "head_dim_qk=192 != head_dim_vo=128 (AITER requires equal head dims)",
        R.POS_ENCODING: "pos_encoding_mode='ROPE_LLAMA' (AITER only supports NONE)",
        R.SOFTCAP_DEFECT: "logits_soft_cap=30.0 with causal head_dim=128 (AITER mha_varlen_fwd computes the soft cap incorrectly)",
        R.PAGED_SHORT_QUERY: f"query length <= {t} on a page size AITER cannot page natively "
        "(its flat gather copies the whole KV cache, which a short query cannot amortise)",
        R.RAGGED_SHORT_QUERY: f"query length <= {t} on ragged KV (AITER's mha_varlen_fwd costs more per call "
        "than the in-tree kernel, which a short query cannot amortise)",
        R.ABI_FLOOR: "amd-aiter 0.1.12 is below the 0.1.20 ABI floor (the vendored struct layouts do not match older releases)",
        R.NOT_INSTALLED: "aiter package not installed (see docs/rocm/backends.md for the wheel index and pinned version)",
        R.BOOTSTRAP_FAILED: "aiter batch_prefill kernel bootstrap failed on this install: "
        "ModuleNotFoundError: No module named 'aiter.jit' (set FLASHINFER_AITER_STRICT=1 to raise instead)",
        R.NATIVE_PAGING_UNAVAILABLE: "aiter native paging was unavailable for page_size=1024; falling back to fa2",
        R.DECODE_CAPACITY: "batch has kv_len=256 exceeding the declared max_seq_len=128",
    }[code]


def faithful(query: RoutingQuery) -> ObservedRoute:
    """A synthetic observation of a library that does exactly what the spec says."""
    e = expected_route(SPEC, query)
    if e.raises:
        return ObservedRoute(None, None, raised=e.raises)
    return ObservedRoute(e.backend, library_text(e.reason, e.threshold))


def test_spec_is_registered_and_every_row_has_a_crafted_query():
    """Adding a row without a query that reaches it fails here."""
    assert SPECS["flashinfer-rocm"] is SPEC
    assert set(CRAFTED) == {r.name for r in SPEC.rules}


@pytest.mark.parametrize("name", list(CRAFTED))
def test_each_row_is_reached_by_its_crafted_query(name):
    """The crafted query lands on its row, and a faithful observation passes the checker."""
    e = expected_route(SPEC, CRAFTED[name])
    assert e.rule == name and e.gap is None
    assert check(e, faithful(CRAFTED[name])).passed


def test_library_text_covers_every_reason_and_parses_back():
    """Every constant has a formatted library text that parses back to it."""
    for code in R.ALL:
        assert R.parse_reason(library_text(code, 16)) is code


def test_faithful_library_covers_every_row_and_explains_every_decision():
    """Both directions on a faithful synthetic run: no unreached row, nothing unexplained."""
    verdicts = [check(expected_route(SPEC, x), faithful(x)) for x in CRAFTED.values()]
    cov = coverage(SPEC, verdicts)
    assert cov.complete, cov


# --- thresholds: boundaries and the explicit None ----------------------------------------------
@pytest.mark.parametrize("arch,t", [("gfx942", 16), ("gfx950", 8)])
def test_paged_flat_gather_boundary(arch, t):
    """Rule 5: at a non-routed page, T -> fa2 with T in the reason, T+1 -> aiter."""
    at, above = expected_route(SPEC, q(arch=arch, max_q_len=t)), expected_route(SPEC, q(arch=arch, max_q_len=t + 1))
    assert (at.backend, at.reason, at.threshold) == ("fa2", R.PAGED_SHORT_QUERY, t)
    assert (above.backend, above.reason) == ("aiter", None)


def test_ragged_boundary_on_gfx942():
    """Rule 6: ragged gfx942 16 -> fa2 'ragged KV', 17 -> aiter."""

    def r(n):
        return expected_route(SPEC, q(api="ragged", page_size=1, max_q_len=n))

    assert (r(16).backend, r(16).reason, r(16).threshold) == ("fa2", R.RAGGED_SHORT_QUERY, 16)
    assert (r(17).backend, r(17).reason) == ("aiter", None)


@pytest.mark.parametrize("n", [1, 8, 16])
def test_ragged_gfx950_is_never_gated(n):
    """Rule 6: gfx950's ragged row is None, a measured 'never': aiter at every length."""
    e = expected_route(SPEC, q(api="ragged", page_size=1, arch="gfx950", max_q_len=n))
    assert (e.backend, e.reason, e.gap) == ("aiter", None, None)


def test_gfx950_ragged_row_is_present_not_merely_absent():
    """#373: the None is an explicit row; a deleted row would read MISSING, not None."""
    assert "gfx950" in RAGGED.rows and RAGGED.rows["gfx950"] is None
    assert RAGGED.lookup("gfx950") is None and RAGGED.without("gfx950").lookup("gfx950") is MISSING


def test_deleted_ragged_row_makes_a_gap_and_the_checker_says_so():
    """The checker tells an explicit None (pass) from a deleted row (spec_gap) on the same observation."""
    query = q(api="ragged", page_size=1, arch="gfx950", max_q_len=4)
    obs = ObservedRoute("aiter", None)
    assert check(expected_route(SPEC, query), obs).status == "pass"
    broken = SPEC.with_table(RAGGED.without("gfx950"))
    v = check(expected_route(broken, query), obs)
    assert v.status == "spec_gap" and not v.passed and v.expected.gap.arch == "gfx950"


@pytest.mark.parametrize("n", [0, -1])
def test_empty_batch_is_never_short(n):
    """Rule 7: max_q_len <= 0 is not gated on either gate."""
    assert expected_route(SPEC, q(max_q_len=n)).rule == "aiter"
    assert expected_route(SPEC, q(api="ragged", page_size=1, max_q_len=n)).rule == "aiter"


@pytest.mark.parametrize("page,dtype", [(1024, "bf16"), (1024, "fp16")])
def test_routed_page_disarms_the_gate(page, dtype):
    """Rule 10: a natively routed page passes no length to the selector: aiter even at q=1."""
    e = expected_route(SPEC, q(page_size=page, q_dtype=dtype, kv_dtype=dtype, max_q_len=1))
    assert (e.backend, e.reason) == ("aiter", None)


@pytest.mark.parametrize("page", [1, 16])
def test_half_precision_at_page_1_or_16_is_gated(page):
    """Rule 10/11: fp16/bf16 route natively only at 1024, so pages 1 and 16 flat-gather and gate."""
    assert expected_route(SPEC, q(page_size=page, max_q_len=1)).rule == "paged_short_query"


# --- precedence --------------------------------------------------------------------------------
def test_custom_mask_outranks_a_short_query():
    """Rule 3: the mask reason wins over the perf gate."""
    e = expected_route(SPEC, q(custom_mask=True, max_q_len=1))
    assert (e.backend, e.reason) == ("fa2", R.CUSTOM_MASK)


@pytest.mark.parametrize("install,reason", [("not_installed", R.NOT_INSTALLED), ("below_abi_floor", R.ABI_FLOOR)])
def test_install_reason_outranks_the_perf_gate(install, reason):
    """Rule 4: without importable AITER, a short query hears the install reason, not 'too short'."""
    for query in (
        q(max_q_len=1, aiter_install=install),
        q(api="ragged", page_size=1, max_q_len=1, aiter_install=install),
    ):
        assert expected_route(SPEC, query).reason is reason


def test_full_precedence_chain():
    """Rule 3: capability > layout > mask > dtype > mismatch > head dims > pos_enc > soft-cap > install > gate."""
    steps = [
        ({}, R.CAPABILITY_UNDECLARED),
        ({"arch": "gfx950"}, R.LAYOUT),
        ({"kv_layout": "NHD"}, R.CUSTOM_MASK),
        ({"custom_mask": False}, R.DTYPE_FP8_ALLOWED),
        ({"q_dtype": "fp16"}, R.DTYPE_MISMATCH),
        ({"kv_dtype": "fp16"}, R.HEAD_DIMS),
        ({"head_dim_vo": 128}, R.POS_ENCODING),
        ({"pos_encoding": "NONE"}, R.SOFTCAP_DEFECT),
        ({"logits_soft_cap": 0.0}, R.NOT_INSTALLED),
        ({"aiter_install": "importable"}, R.PAGED_SHORT_QUERY),
        ({"max_q_len": 9}, None),
    ]
    query = q(
        arch="unknown",
        kv_layout="HND",
        custom_mask=True,
        q_dtype="fp32",
        kv_dtype="bf16",
        head_dim_qk=128,
        head_dim_vo=64,
        pos_encoding="ROPE_LLAMA",
        causal=True,
        logits_soft_cap=30.0,
        aiter_install="not_installed",
        max_q_len=8,
    )
    for change, reason in steps:
        query = query.replace(**change)
        assert expected_route(SPEC, query).reason is reason, change


def test_explicit_aiter_survives_the_gates():
    """Rule 15: an explicit aiter is never redirected by a perf gate; reason None."""
    for query in (q(requested="aiter", max_q_len=1), q(api="ragged", page_size=1, requested="aiter", max_q_len=1)):
        e = expected_route(SPEC, query)
        assert (e.backend, e.reason) == ("aiter", None)


def test_both_gates_armed_raises_before_any_other_check():
    """Rule 2: step 0 runs first, even before the capability row."""
    assert expected_route(SPEC, q(arch="unknown", custom_mask=True, both_length_gates=True)).raises == "ValueError"


# --- soft cap, fp8, decode ---------------------------------------------------------------------
def test_softcap_defect_is_gfx950_only_and_routed_pages_keep_aiter():
    """Rule 19: ragged/single soft-cap on gfx950 -> fa2; gfx942 keeps aiter; a routed paged page keeps aiter."""
    for api in ("ragged", "single"):
        assert expected_route(SPEC, q(api=api, page_size=1, arch="gfx950", **SOFTCAP)).reason is R.SOFTCAP_DEFECT
        assert expected_route(SPEC, q(api=api, page_size=1, arch="gfx942", **SOFTCAP)).backend == "aiter"
    assert expected_route(SPEC, q(arch="gfx950", page_size=1024, **SOFTCAP)).backend == "aiter"
    assert expected_route(SPEC, q(arch="gfx950", page_size=5, max_q_len=64, **SOFTCAP)).reason is R.SOFTCAP_DEFECT


@pytest.mark.parametrize(
    "arch,fp8,page", [("gfx942", "e4m3fnuz", 16), ("gfx942", "e4m3fnuz", 1), ("gfx950", "e4m3fn", 1024)]
)
def test_fp8_paged_at_a_routed_page_goes_to_aiter_without_a_gate(arch, fp8, page):
    """Rule 20: fp8 at a routed page with bf16 output -> aiter, even for a 1-token query."""
    e = expected_route(SPEC, q(arch=arch, q_dtype=fp8, kv_dtype=fp8, page_size=page, max_q_len=1))
    assert (e.backend, e.reason) == ("aiter", None)


@pytest.mark.parametrize("requested", ["auto", "aiter", "fa2"])
def test_fp8_off_native_paging_raises_for_every_backend(requested):
    """Rule 21: fp8 at page 32 raises NotImplementedError (auto and aiter; fa2 has no fp8 kernel)."""
    assert (
        expected_route(SPEC, q(q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz", page_size=32, requested=requested)).raises
        == "NotImplementedError"
    )


def test_fp8_declined_by_the_selector_raises_instead_of_running_fa2():
    """Rule 22: a masked fp8 paged plan resolves to fa2, which has no fp8 kernel."""
    e = expected_route(SPEC, q(q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz", page_size=16, custom_mask=True))
    assert (e.rule, e.raises) == ("fp8_on_fa2", "NotImplementedError")


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_decode_has_no_length_gate(arch):
    """Rule 33: decode (one query row) and single prefill (q=1) are aiter on both archs."""
    assert expected_route(SPEC, q(api="decode", arch=arch, page_size=16, max_q_len=1)).backend == "aiter"
    assert expected_route(SPEC, q(api="single", arch=arch, page_size=1, max_q_len=1)).backend == "aiter"


def test_decode_graph_mode_routes_by_max_seq_len():
    """Rule 28: graph mode without max_seq_len -> fa2 silently (reason None); with it -> aiter."""
    d = q(api="decode", page_size=16, max_q_len=1, graph_mode=True)
    assert (expected_route(SPEC, d).backend, expected_route(SPEC, d).reason) == ("fa2", None)
    assert expected_route(SPEC, d.replace(max_seq_len=4096)).backend == "aiter"


# --- lifecycle ---------------------------------------------------------------------------------
def test_eager_ragged_re_resolves_both_ways():
    """Rule 12: long -> aiter, short -> fa2, long again -> aiter with reason None."""
    r = q(api="ragged", page_size=1)
    got = expected_sequence(SPEC, [r.replace(max_q_len=256), r.replace(max_q_len=16), r.replace(max_q_len=256)])
    assert [(e.backend, e.reason) for e in got] == [("aiter", None), ("fa2", R.RAGGED_SHORT_QUERY), ("aiter", None)]


def test_masked_then_maskless_plan_re_promotes():
    """Rule 13: after a masked plan, a maskless one matches a fresh wrapper's route."""
    got = expected_sequence(SPEC, [q(custom_mask=True), q()])
    assert [e.reason for e in got] == [R.CUSTOM_MASK, None] and got[1] == expected_route(SPEC, q())


def test_graph_mode_first_plan_decides():
    """Rule 14: under graph mode a short demotion sticks, and a long aiter stays for short plans."""
    short, long_ = q(graph_mode=True, max_q_len=4), q(graph_mode=True, max_q_len=256)
    assert [e.backend for e in expected_sequence(SPEC, [short, long_])] == ["fa2", "fa2"]
    assert [e.backend for e in expected_sequence(SPEC, [long_, short])] == ["aiter", "aiter"]


def test_decode_capacity_demotes_one_plan_only():
    """Rule 30: over capacity -> fa2 for that plan; the next plan within capacity is aiter again."""
    d = q(api="decode", page_size=16, max_q_len=1, graph_mode=True, max_seq_len=128)
    got = expected_sequence(SPEC, [d.replace(max_kv_len=100), d.replace(max_kv_len=200), d.replace(max_kv_len=100)])
    assert [(e.backend, e.reason) for e in got] == [("aiter", None), ("fa2", R.DECODE_CAPACITY), ("aiter", None)]


def test_before_plan_backend_is_auto_with_no_reason():
    """Rule 34: before plan() the backend reads 'auto' and the reason None."""
    assert SPEC.lifecycle.before_plan == ("auto", None)


# --- cross-check: the spec data against the selector written as code --------------------------
FLAT = {"gfx942": 16, "gfx950": 8}
RAG = {"gfx942": 16, "gfx950": None}
DEFECT = {"gfx942": False, "gfx950": True}


def reference_selector(x: RoutingQuery):
    """rocm_fork.md section 2, steps 1-12, with section 2's 'what each caller passes'."""
    fp8 = x.q_dtype in ("e4m3fnuz", "e4m3fn")
    routed = x.api == "paged" and x.page_size in ({1, 16, 1024} if fp8 else {1024})
    max_q = x.max_q_len if x.api == "paged" and not routed else None
    rag_q = x.max_q_len if x.api == "ragged" else None
    kv = x.max_kv_len if x.api in ("ragged", "single") or (x.api == "paged" and not routed) else None
    mask = x.custom_mask and x.api != "decode"
    allow_fp8 = x.api == "paged"
    if x.arch not in ("gfx942", "gfx950"):
        return "fa2", R.CAPABILITY_UNDECLARED, None
    if x.kv_layout != "NHD":
        return "fa2", R.LAYOUT, None
    if mask:
        return "fa2", R.CUSTOM_MASK, None
    if not (x.q_dtype in ("fp16", "bf16") or (allow_fp8 and fp8)):
        return "fa2", R.DTYPE_FP8_ALLOWED if allow_fp8 else R.DTYPE, None
    if x.q_dtype != x.kv_dtype:
        return "fa2", R.DTYPE_MISMATCH, None
    if x.head_dim_qk != x.head_dim_vo:
        return "fa2", R.HEAD_DIMS, None
    if x.pos_encoding != "NONE":
        return "fa2", R.POS_ENCODING, None
    if x.causal and x.logits_soft_cap > 0 and x.head_dim_qk == 128 and kv is not None and DEFECT[x.arch]:
        return "fa2", R.SOFTCAP_DEFECT, None
    if x.aiter_importable:
        if max_q is not None and 1 <= max_q <= FLAT[x.arch]:
            return "fa2", R.PAGED_SHORT_QUERY, FLAT[x.arch]
        if rag_q is not None and RAG[x.arch] is not None and 1 <= rag_q <= RAG[x.arch]:
            return "fa2", R.RAGGED_SHORT_QUERY, RAG[x.arch]
        return "aiter", None, None
    return "fa2", R.ABI_FLOOR if x.aiter_install == "below_abi_floor" else R.NOT_INSTALLED, None


# Each field: the value that lets AITER run, then the values that decline it.
AXES = {
    "api": ["paged", "ragged", "single"],
    "arch": ["gfx942", "gfx950", "unknown"],
    "q_dtype": ["bf16", "fp16", "fp32", "e5m2"],
    "kv_dtype": ["bf16", "fp16"],
    "kv_layout": ["NHD", "HND"],
    "custom_mask": [False, True],
    "head_dim_qk": [128, 64],
    "head_dim_vo": [128, 64],
    "pos_encoding": ["NONE", "ROPE_LLAMA"],
    "logits_soft_cap": [0.0, 30.0],
    "causal": [False, True],
    "page_size": [1, 5, 16, 1024],
    "aiter_install": ["importable", "not_installed", "below_abi_floor"],
}


@st.composite
def queries(draw):
    """Mostly-clean queries: api, arch and page vary freely, at most two other fields decline."""
    free = {"api", "arch", "page_size", "causal", "logits_soft_cap"}
    perturbed = draw(st.sets(st.sampled_from(sorted(set(AXES) - free)), max_size=2))
    kw = {k: (draw(st.sampled_from(v)) if k in free | perturbed else v[0]) for k, v in AXES.items()}
    return RoutingQuery(**kw, max_q_len=draw(st.integers(-1, 20)), max_kv_len=draw(st.integers(0, 4096)))


@settings(max_examples=400, deadline=None)
@given(queries())
def test_spec_agrees_with_the_selector_written_as_code(x):
    """For non-fp8 auto plans with healthy probes, the data spec and the elif chain agree."""
    if x.api != "paged":
        x = x.replace(page_size=1)
    e = expected_route(SPEC, x)
    assert (e.backend, e.reason) == reference_selector(x)[:2]
    if e.reason in (R.PAGED_SHORT_QUERY, R.RAGGED_SHORT_QUERY):
        assert e.threshold == reference_selector(x)[2]
