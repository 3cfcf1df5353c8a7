"""The flashinfer adapter against a CPU fake of the library (tests/kernels/fake_flashinfer.py).

What these tests pin: the arguments each of the four APIs receives (index tensors, page table,
both mask forms, causal/window/soft cap/scale, dtypes, fp8 descales), one long-lived wrapper
reused across plans and a new one from fresh(), the resolved backend read from the library after
plan, NOT_REPORTED (upstream) versus None or a reason (a fork-like fake), the declared LSE base,
poisoned outputs catching unwritten rows, supports() declines by reason, CUDA-graph capture and
replay after a re-plan, variant grouping and compile-vs-run timing -- and that `import kernels`
never imports flashinfer. The numerics come from the fake's fp32 reference, so a pass here says
the adapter hands the library the right problem; it says nothing about FlashInfer's kernels.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import replace
import math
import os
import subprocess
import sys
from typing import Any, Optional

import pytest
import torch

import kernels
import kernels._env as env
import kernels.flashinfer.adapter as fi
import kernels.flashinfer.lib as fl
from kernels import skips
from kernels.errors import UnknownBackend, UnsupportedCase
from kernels.flashinfer.support import decide
from kernels.flashinfer.variants import RunTiming, order_by_variant, group_by_variant, reset_seen, variant_key
from kernels.protocol import LSE_BASE2, LSE_NATURAL, NOT_REPORTED, AttentionKernel
from scenarios.poison import unwritten_mask
from oracle.judge import judge, truth
from oracle.masks import allowed, pack_bits, segment_pack_bits
from scenarios.case import Case
from scenarios.dtypes import to_torch
from scenarios.tensors import Inputs, materialize

sys.path.insert(0, os.path.dirname(__file__))
import fake_flashinfer as ff  # noqa: E402
from kernels.standins import rocm_fork  # noqa: E402
from kernels.standins.rocm_flashinfer.rocm import prefill as fork_prefill  # noqa: E402
from fake_flashinfer import fake  # noqa: E402,F401  (the fixture)

CPU = "cpu"
H = dict(num_qo_heads=4, num_kv_heads=2, head_dim_qk=64, head_dim_vo=64)
CONFIG = ("bf16", "bf16", 64, 64)  # H's model config as a graph wrapper's key holds it: dtypes, head dims
PAGED = Case("paged", (3, 6), (11, 6), page_size=5, causal=True, **H)
PAGED_MASK = Case(
    "paged",
    (5, 4),
    (13, 10),
    page_size=5,
    mask="custom",
    causal=True,
    window_left=3,
    logits_soft_cap=30.0,
    sm_scale=0.2,
    **H,
)
PAGED_HND = Case("paged", (4, 2), (9, 17), page_size=4, kv_layout="HND", **H)
RAGGED = Case("ragged", (5, 9), (12, 9), logits_soft_cap=30.0, **H)
RAGGED_MASK = Case("ragged", (6, 8), (15, 8), kv_layout="HND", causal=True, window_left=4, mask="custom", **H)
DECODE = Case("decode", (1, 1, 1), (1, 17, 40), 8, 1, 64, 64, page_size=5, kv_layout="HND", window_left=5)
SINGLE = Case("single", (10,), (25,), window_left=4, causal=True, q_dtype="fp16", kv_dtype="fp16", o_dtype="fp16", **H)
SINGLE_MASK = Case("single", (8,), (33,), mask="custom", **H)
ALL = {
    "paged": PAGED,
    "paged-mask": PAGED_MASK,
    "paged-HND": PAGED_HND,
    "ragged": RAGGED,
    "ragged-mask": RAGGED_MASK,
    "decode": DECODE,
    "single": SINGLE,
    "single-mask": SINGLE_MASK,
}


@pytest.fixture
def fork(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The ROCm fork's stand-in (gfx950: AITER and native e4m3fn) as `flashinfer`; yields its paged run() kwargs."""
    rocm_fork.install(monkeypatch, arch="gfx950")
    fl.lib_facts.cache_clear()
    reset_seen()
    runs: list[dict] = []
    real = fork_prefill.BatchPrefillWithPagedKVCacheWrapper.run

    @functools.wraps(real)  # the adapter reads run()'s signature
    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        runs.append(kwargs)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(fork_prefill.BatchPrefillWithPagedKVCacheWrapper, "run", spy)
    yield runs
    fl.lib_facts.cache_clear()


def adapter(backend: str = "fa2", **kw: Any) -> fi.FlashInferKernel:
    graph = kw.pop("graph", False)
    return fi.FlashInferKernel(backend, CPU, graph=graph, options=fi.AdapterOptions(**kw), graphs=ff.FakeGraphs())


def calls(api: str, method: str) -> list[dict]:
    return [c for c in ff.STATE.calls if c["api"] == api and c["method"] == method]


def run_case(a: fi.FlashInferKernel, case: Case, seed: int = 0) -> tuple[Inputs, Any]:
    inp = materialize(case, seed, CPU)
    a.plan(inp)
    return inp, a.run(inp)


def passes(inp: Inputs, res: Any) -> tuple[bool, Any, Any]:
    out_cmp, lse_cmp = judge(truth(inp), res.out, res.lse, lse_base=res.lse_base, adapter="flashinfer")
    return out_cmp.passed and (lse_cmp is None or lse_cmp.passed), out_cmp, lse_cmp


# ---- import hygiene -----------------------------------------------------------------------------


def test_importing_kernels_and_the_adapter_never_imports_flashinfer() -> None:
    """`import kernels` (and the flashinfer adapter modules) must not import the library: CPU runs never pay for it."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'flashinfer' or name.startswith('flashinfer.'):\n"
        "            raise ImportError('flashinfer imported at import time: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import kernels, kernels.flashinfer.adapter, kernels.flashinfer.lib, kernels.flashinfer.support\n"
        "import kernels.flashinfer.variants\n"
        "from kernels.flashinfer.adapter import TARGET\n"
        "assert TARGET.backends('cpu') == ()\n"
        "assert not TARGET.available('cpu').ok\n"
        "assert not any(m == 'flashinfer' or m.startswith('flashinfer.') for m in sys.modules)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_the_registry_slot_is_left_to_the_lead_and_the_target_resolves_by_module() -> None:
    """TARGET is a Target named 'flashinfer' with the protocol's methods (ready for REGISTRY)."""
    assert "flashinfer" not in kernels.REGISTRY or kernels.REGISTRY["flashinfer"] == "kernels.flashinfer.adapter:TARGET"
    t = fi.TARGET
    assert t.name == "flashinfer"
    assert all(callable(getattr(t, m)) for m in ("backends", "available", "make", "versions"))


# ---- the target ---------------------------------------------------------------------------------


def test_cpu_is_declined_and_offers_nothing() -> None:
    """FlashInfer needs a CUDA/ROCm device: available('cpu') says why, backends('cpu') is empty, make refuses."""
    sup = fi.TARGET.available(CPU)
    assert not sup.ok and skips.constant_of(sup.reason) == skips.DEVICE_BACKEND
    assert fi.TARGET.backends(CPU) == ()
    with pytest.raises(UnknownBackend):
        fi.TARGET.make("fa2", CPU)


def _pretend_cuda(monkeypatch: pytest.MonkeyPatch, capability: tuple[int, int]) -> None:
    monkeypatch.setattr(env, "cuda_available", lambda: True)
    monkeypatch.setattr(env, "device_capability", lambda device: capability)


@pytest.mark.parametrize(
    "sm90,cudnn,cap,expected",
    [
        (True, False, (9, 0), ("fa2", "fa3", "auto", "fa2+graph", "fa3+graph", "auto+graph")),
        (True, True, (9, 0), ("fa2", "fa3", "cudnn", "auto", "fa2+graph", "fa3+graph", "auto+graph")),
        (False, False, (8, 0), ("fa2", "auto", "fa2+graph", "auto+graph")),
        (False, True, (10, 0), ("fa2", "cudnn", "trtllm-gen", "auto", "fa2+graph", "auto+graph")),
    ],
    ids=["h200", "h200-cudnn", "a100", "b200"],
)
def test_backends_come_from_the_librarys_own_checks(
    monkeypatch: pytest.MonkeyPatch, sm90: bool, cudnn: bool, cap: tuple[int, int], expected: tuple[str, ...]
) -> None:
    """fa3 from is_sm90a_supported, cudnn from CUDNN_AVAILABLE, trtllm-gen from SM10x; graph variants listed."""
    ff.install(monkeypatch, sm90=sm90, cudnn=cudnn)
    fl.lib_facts.cache_clear()
    _pretend_cuda(monkeypatch, cap)
    assert fi.TARGET.backends("cuda") == expected
    fl.lib_facts.cache_clear()


@pytest.mark.parametrize(
    "aiter_ok,expected",
    [
        (True, ("fa2", "aiter", "auto", "fa2+graph", "aiter+graph", "auto+graph")),
        (False, ("fa2", "auto", "fa2+graph", "auto+graph")),
    ],
    ids=["gfx942", "no-aiter"],
)
def test_the_rocm_fork_is_detected_by_feature_and_offers_aiter_where_its_check_passes(
    monkeypatch: pytest.MonkeyPatch, aiter_ok: bool, expected: tuple[str, ...]
) -> None:
    """A wrapper with backend_fallback_reason is the fork; aiter is offered iff arch_caps and AITER say so."""
    rocm_fork.install(monkeypatch, arch="gfx942" if aiter_ok else "unknown")
    fl.lib_facts.cache_clear()
    _pretend_cuda(monkeypatch, (9, 4))
    facts = fl.lib_facts("cuda")
    assert facts.fork and facts.fork_scale_kw and not facts.lse_base_kw["paged"]
    assert fi.TARGET.backends("cuda") == expected
    fl.lib_facts.cache_clear()


def test_make_takes_graph_by_suffix_or_flag_and_refuses_unknown_backends(
    monkeypatch: pytest.MonkeyPatch, fake: Any
) -> None:
    """'fa2+graph' and graph=True are the same adapter; an unknown name raises UnknownBackend."""
    _pretend_cuda(monkeypatch, (9, 0))
    a = fi.TARGET.make("fa2+graph", "cuda")
    b = fi.TARGET.make("fa2", "cuda", graph=True, mask_form="packed")
    assert isinstance(a, AttentionKernel)
    assert (a.backend, a.graph, a.library_backend) == ("fa2+graph", True, "fa2") == (b.backend, b.graph, "fa2")
    assert b.options.mask_form == "packed"
    with pytest.raises(UnknownBackend):
        fi.TARGET.make("trtllm-gen", "cuda")
    with pytest.raises(ValueError):
        fi.AdapterOptions(mask_form="bits")


# ---- arguments per layout -----------------------------------------------------------------------


def _folded(case: Case, inp: Inputs) -> torch.Tensor:
    """The custom mask ANDed with causal/window, built from oracle/masks.py (independent of the adapter)."""
    parts = []
    for i, (qo, kv) in enumerate(zip(case.qo_lens, case.kv_lens)):
        keep = allowed(
            torch.arange(qo), qo, kv, causal=case.causal, window_left=case.window_left, custom=inp.request_mask(i)
        )
        parts.append((keep if keep is not None else torch.ones(qo, kv, dtype=torch.bool)).reshape(-1))
    return torch.cat(parts)


def test_paged_plan_and_run_get_the_page_table_flags_dtypes_and_the_folded_mask(fake: Any) -> None:
    """plan(): int32 indptr/indices/last_page_len, heads, dims, page size, causal/window/cap/scale/dtypes, mask."""
    a = adapter("fa2")
    inp, res = run_case(a, PAGED_MASK)
    (p,) = calls("paged", "plan")
    qo, kvp, idx, last, hq, hk, dqk, ps = p["args"]
    for got, want in (
        (qo, inp.qo_indptr),
        (kvp, inp.kv_page_indptr),
        (idx, inp.kv_page_indices),
        (last, inp.kv_last_page_len),
    ):
        assert got.dtype == torch.int32 and torch.equal(got, want)
    assert (hq, hk, dqk, ps) == (4, 2, 64, 5)
    kw = p["kwargs"]
    assert kw["head_dim_vo"] == 64 and kw["causal"] is True and kw["window_left"] == 3
    assert kw["logits_soft_cap"] == 30.0 and kw["sm_scale"] == pytest.approx(0.2)
    assert (kw["q_data_type"], kw["kv_data_type"], kw["o_data_type"]) == (torch.bfloat16,) * 3
    assert kw["packed_custom_mask"] is None and torch.equal(kw["custom_mask"], _folded(PAGED_MASK, inp))
    (r,) = calls("paged", "run")
    q, (k, v) = r["args"][:2]
    assert q is inp.q and k is inp.k and v is inp.v
    assert r["kwargs"]["return_lse"] is True and r["kwargs"]["lse_base"] == "log2"
    assert r["kwargs"]["out"].shape == (9, 4, 64) and r["kwargs"]["lse"].shape == (9, 4)
    assert passes(inp, res)[0]


def test_soft_cap_zero_is_passed_as_none_and_a_default_scale_explicitly(fake: Any) -> None:
    """logits_soft_cap None when the Case has none; sm_scale is always Case.scale (1/sqrt(d) here)."""
    run_case(adapter("fa2"), PAGED)
    kw = calls("paged", "plan")[0]["kwargs"]
    assert kw["logits_soft_cap"] is None and kw["sm_scale"] == pytest.approx(1 / math.sqrt(64))
    assert kw["window_left"] == -1 and kw["custom_mask"] is None


def test_ragged_plan_and_run_get_indptrs_and_positional_kv(fake: Any) -> None:
    """plan(qo_indptr, kv_indptr, ...); run(q, k, v) with k/v in the case's layout (HND here)."""
    a = adapter("fa2")
    inp, res = run_case(a, RAGGED_MASK)
    (p,) = calls("ragged", "plan")
    assert torch.equal(p["args"][0], inp.qo_indptr) and torch.equal(p["args"][1], inp.kv_indptr)
    assert p["args"][0].dtype == torch.int32 and p["args"][2:] == (4, 2, 64)
    assert torch.equal(p["kwargs"]["custom_mask"], _folded(RAGGED_MASK, inp))
    (init,) = calls("ragged", "__init__")
    assert init["args"][1] == "HND" and init["kwargs"]["backend"] == "fa2"
    (r,) = calls("ragged", "run")
    assert all(x is y for x, y in zip(r["args"][:3], (inp.q, inp.k, inp.v)))
    assert passes(inp, res)[0]


def test_decode_plan_takes_one_head_dim_no_causal_no_mask(fake: Any) -> None:
    """BatchDecode.plan(indptr, indices, last_page_len, Hq, Hkv, head_dim, page_size, **kw)."""
    inp, res = run_case(adapter("fa2"), DECODE)
    (p,) = calls("decode", "plan")
    assert p["args"][3:] == (8, 1, 64, 5) and torch.equal(p["args"][1], inp.kv_page_indices)
    assert set(p["kwargs"]) == {
        "window_left",
        "logits_soft_cap",
        "sm_scale",
        "q_data_type",
        "kv_data_type",
        "o_data_type",
    }
    assert p["kwargs"]["window_left"] == 5
    (init,) = calls("decode", "__init__")
    assert init["kwargs"]["use_tensor_cores"] is False
    assert passes(inp, res)[0]


def test_single_gets_flags_layout_dtype_and_backend(fake: Any) -> None:
    """single_prefill_with_kv_cache(q, k, v, causal, kv_layout, sm_scale, window_left, backend, o_dtype, ...)."""
    inp, res = run_case(adapter("fa2"), SINGLE)
    (c,) = calls("single", "call")
    kw = c["kwargs"]
    assert (kw["causal"], kw["kv_layout"], kw["window_left"], kw["backend"], kw["return_lse"]) == (
        True,
        "NHD",
        4,
        "fa2",
        True,
    )
    assert kw["o_dtype"] == torch.float16 and kw["logits_soft_cap"] is None
    assert passes(inp, res)[0]


@pytest.mark.parametrize("name", ["paged-mask", "ragged-mask", "single-mask"])
def test_both_mask_forms_carry_the_same_bits(fake: Any, name: str) -> None:
    """bool -> custom_mask; packed -> the library's segment_packbits (little); packed_flat -> its packbits."""
    case = ALL[name]
    api = "single" if case.layout == "single" else case.layout
    method = "call" if api == "single" else "plan"
    folded = None
    for form in ("bool", "packed", "packed_flat"):
        ff.STATE.calls.clear()
        inp, _ = run_case(adapter("fa2", mask_form=form), case)
        folded = _folded(case, inp)
        kw = calls(api, method)[0]["kwargs"]
        if form == "bool":
            assert kw["packed_custom_mask"] is None and torch.equal(kw["custom_mask"], folded)
            continue
        assert kw["custom_mask"] is None
        packer = [c for c in ff.STATE.calls if c["api"] == "quantization"][0]
        assert packer["kwargs"]["bitorder"] == "little"
        if form == "packed" and api != "single":
            want, _ = segment_pack_bits(folded, inp.mask_indptr)
            assert packer["method"] == "segment_packbits"
        else:
            want = pack_bits(folded)
        assert torch.equal(kw["packed_custom_mask"], want)


def test_the_bool_mask_form_matches_the_oracle_through_causal_and_window(fake: Any) -> None:
    """Folding causal and window into the mask keeps the Case's semantics (FlashInfer ignores causal then)."""
    for case in (PAGED_MASK, RAGGED_MASK, SINGLE_MASK):
        inp, res = run_case(adapter("fa2"), case)
        assert passes(inp, res)[0], case.id


# ---- fp8 descales -------------------------------------------------------------------------------

FP8_PAGED = Case(
    "paged",
    (4, 2),
    (9, 7),
    page_size=4,
    q_dtype="e4m3fn",
    kv_dtype="e4m3fn",
    q_scale=0.5,
    k_scale=2.0,
    v_scale=0.25,
    **H,
)
FP8_RAGGED = Case(
    "ragged", (4, 2), (9, 7), q_dtype="e4m3fn", kv_dtype="e4m3fn", q_scale=0.5, k_scale=2.0, v_scale=0.25, **H
)
KV8_RAGGED = Case("ragged", (4, 2), (9, 7), q_dtype="bf16", kv_dtype="e5m2", k_scale=2.0, v_scale=0.25, **H)
FP8_SINGLE = Case(
    "single", (6,), (11,), q_dtype="e4m3fn", kv_dtype="e4m3fn", q_scale=0.5, k_scale=2.0, v_scale=0.25, causal=True, **H
)
FP8_DECODE = Case(
    "decode", (1, 1), (9, 20), page_size=4, q_dtype="bf16", kv_dtype="e4m3fn", k_scale=2.0, v_scale=0.5, **H
)


def test_paged_and_decode_fp8_descales_go_as_float_keywords(fake: Any) -> None:
    """paged/decode run(q_scale=, k_scale=, v_scale=): the library folds q*k into sm_scale, v onto the output."""
    inp, res = run_case(adapter("fa3"), FP8_PAGED)
    kw = calls("paged", "run")[0]["kwargs"]
    assert (kw["q_scale"], kw["k_scale"], kw["v_scale"]) == (0.5, 2.0, 0.25)
    assert passes(inp, res)[0]
    inp, res = run_case(adapter("fa2"), FP8_DECODE)
    kw = calls("decode", "run")[0]["kwargs"]
    assert (kw["q_scale"], kw["k_scale"], kw["v_scale"]) == (None, 2.0, 0.5)
    assert passes(inp, res)[0]


def test_ragged_fp8_query_descales_go_positionally_kv_only_as_keywords(fake: Any) -> None:
    """ragged: an fp8 query's descales are run(q, k, v, q_scale, k_scale, v_scale); KV-only fp8 uses keywords."""
    inp, res = run_case(adapter("fa3"), FP8_RAGGED)
    r = calls("ragged", "run")[0]
    assert r["args"][3:] == (0.5, 2.0, 0.25) and r["kwargs"]["q_scale"] is None
    assert passes(inp, res)[0]
    ff.STATE.calls.clear()
    inp, res = run_case(adapter("fa2"), KV8_RAGGED)
    r = calls("ragged", "run")[0]
    assert r["args"][3:] == () and (r["kwargs"]["k_scale"], r["kwargs"]["v_scale"]) == (2.0, 0.25)
    assert passes(inp, res)[0]


def test_single_fp8_query_descales_are_per_head_tensors(fake: Any) -> None:
    """single: scale_q [Hq], scale_k/scale_v [Hkv] float32 (its docstring); no float k_scale/v_scale."""
    inp, res = run_case(adapter("fa3"), FP8_SINGLE)
    kw = calls("single", "call")[0]["kwargs"]
    assert kw["scale_q"].shape == (4,) and kw["scale_k"].shape == (2,) and kw["scale_v"].shape == (2,)
    assert kw["scale_q"].dtype == torch.float32 and float(kw["scale_k"][0]) == 2.0
    assert kw["k_scale"] is None and kw["v_scale"] is None
    assert passes(inp, res)[0]


def test_fork_fp8_uses_scale_tensors_not_floats_and_skips_lse(fork: Any) -> None:
    """Fork paged run(scale_q=[1] f32 ...), never q_scale with an fp8 query; its fp8 cannot return LSE."""
    case = FP8_PAGED.replace(o_dtype="bf16", page_size=16)  # fp8 goes only where AITER pages natively
    a = adapter("aiter")
    inp, res = run_case(a, case)
    kw = fork[0]
    assert kw.get("q_scale") is None and kw["scale_q"].shape == (1,) and kw["scale_q"].dtype == torch.float32
    assert float(kw["scale_k"][0]) == 2.0 and not kw.get("return_lse") and res.lse is None
    assert passes(inp, res)[0]


# ---- lifecycle: one wrapper, reused; fresh() ----------------------------------------------------


def test_one_wrapper_per_api_is_reused_across_plans_and_fresh_makes_a_new_one(fake: Any) -> None:
    """Two paged cases plan the same wrapper; fresh() builds a brand-new one; HND needs its own (init-fixed)."""
    a = adapter("fa2")
    run_case(a, PAGED)
    run_case(a, PAGED_MASK, seed=1)
    plans = calls("paged", "plan")
    assert len(calls("paged", "__init__")) == 1 and plans[0]["wrapper"] == plans[1]["wrapper"]
    b = a.fresh()
    assert (b.backend, b.graph, b.options) == (a.backend, a.graph, a.options)
    run_case(b, PAGED)
    assert len(calls("paged", "__init__")) == 2 and calls("paged", "plan")[2]["wrapper"] != plans[0]["wrapper"]
    run_case(a, PAGED_HND)
    inits = calls("paged", "__init__")
    assert len(inits) == 3 and inits[2]["args"][1] == "HND"


def test_run_without_a_matching_plan_plans_first(fake: Any) -> None:
    """run(inputs) after a plan for other inputs re-plans rather than running a stale plan."""
    a = adapter("fa2")
    a.plan(materialize(PAGED, 0, CPU))
    inp = materialize(PAGED_MASK, 0, CPU)
    res = a.run(inp)
    assert len(calls("paged", "plan")) == 2 and passes(inp, res)[0]


def test_a_declined_case_is_refused_by_plan(fake: Any) -> None:
    """plan() raises UnsupportedCase with supports()' reason rather than calling the library."""
    a = adapter("fa3")
    with pytest.raises(UnsupportedCase) as err:
        a.plan(materialize(PAGED_MASK, 0, CPU))
    assert skips.constant_of(err.value.reason) == skips.MASK and not calls("paged", "plan")


# ---- resolved backend and fallback reason -------------------------------------------------------


def test_paged_auto_is_read_from_the_wrapper_and_stays_sticky_as_the_library_makes_it(fake: Any) -> None:
    """paged `_backend` after plan: fa3 for an unmasked case; the same wrapper keeps fa3 for a masked one
    (the library never re-resolves) and its run fails as on the H200 ("operation not supported"), while a
    fresh wrapper resolves fa2. The adapter reports both as they are, the failed run's by what plan() chose."""
    a = adapter("auto")
    _, r1 = run_case(a, PAGED)
    masked = materialize(PAGED_MASK, 0, "cpu")
    a.plan(masked)
    with pytest.raises(RuntimeError, match="operation not supported"):
        a.run(masked)
    assert a.route_after_failed_run(masked) == ("fa3", NOT_REPORTED)
    _, r3 = run_case(a.fresh(), PAGED_MASK)
    assert (r1.resolved_backend, r3.resolved_backend) == ("fa3", "fa2")
    assert a.last_run["resolved_after_plan"] == "fa3"


def test_ragged_auto_re_resolves_every_plan_from_the_wrappers_state(fake: Any) -> None:
    """ragged re-resolves each plan, from `_custom_mask_buf` -- which an unmasked plan does not clear."""
    a = adapter("auto")
    unmasked = RAGGED_MASK.replace(mask="none")
    _, r1 = run_case(a, unmasked)
    _, r2 = run_case(a, RAGGED_MASK)
    _, r3 = run_case(a, unmasked)
    _, r4 = run_case(a.fresh(), unmasked)
    assert [r.resolved_backend for r in (r1, r2, r3, r4)] == ["fa3", "fa2", "fa2", "fa3"]


def test_decode_reads_resolved_backend_and_single_observes_its_module_lookup(fake: Any) -> None:
    """decode: the public resolved_backend property; single: the backend passed to get_single_prefill_module."""
    _, rd = run_case(adapter("auto"), DECODE)
    assert rd.resolved_backend == "fa2"
    _, rs = run_case(adapter("auto"), SINGLE)
    _, rm = run_case(adapter("auto"), SINGLE_MASK)
    assert (rs.resolved_backend, rm.resolved_backend) == ("fa3", "fa2") and ff.STATE.single_modules == ["fa3", "fa2"]
    hook = sys.modules["flashinfer.prefill"].get_single_prefill_module
    assert hook.__name__ == "get_single_prefill_module"  # the adapter's hook was restored


def test_upstream_reports_no_reason_which_is_not_none(fake: Any) -> None:
    """Upstream wrappers have no backend_fallback_reason: NOT_REPORTED, never None, for every API."""
    for case in (PAGED, RAGGED, DECODE, SINGLE):
        _, res = run_case(adapter("auto"), case)
        assert res.fallback_reason is NOT_REPORTED and res.fallback_reason is not None


def test_a_fork_like_wrapper_reports_none_or_its_reason(fork: Any) -> None:
    """With backend_fallback_reason present: None when auto took AITER, the reason string when it did not."""
    a = adapter("auto")
    _, r1 = run_case(a, PAGED.replace(qo_lens=(3, 20), kv_lens=(11, 40)))  # long: no length gate
    _, r2 = run_case(a, PAGED_MASK)
    _, r3 = run_case(a, PAGED_HND)
    assert (r1.resolved_backend, r1.fallback_reason) == ("aiter", None)
    assert (r2.resolved_backend, r2.fallback_reason) == ("fa2", "custom mask (not supported by AITER)")
    assert r3.fallback_reason == "kv_layout='HND' (AITER requires NHD)"
    _, rd = run_case(adapter("auto"), replace(DECODE, kv_layout="NHD", window_left=-1))
    assert (rd.resolved_backend, rd.fallback_reason) == ("aiter", None)
    _, rs = run_case(adapter("auto"), SINGLE)
    assert rs.fallback_reason is NOT_REPORTED  # the fork's single prefill exposes no reason either


def test_explicit_fa2_on_the_fork_reports_none(fork: Any) -> None:
    """An explicit backend on the fork: backend_fallback_reason is None (not NOT_REPORTED)."""
    _, res = run_case(adapter("fa2"), RAGGED)
    assert res.resolved_backend == "fa2" and res.fallback_reason is None


# ---- LSE base -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL))
def test_lse_is_declared_in_the_base_the_library_returns(fake: Any, name: str) -> None:
    """Default: lse_base='log2' where run() takes it, base 2 elsewhere; the oracle agrees after conversion."""
    inp, res = run_case(adapter("fa2"), ALL[name])
    assert res.lse_base == LSE_BASE2
    ok, _, lse_cmp = passes(inp, res)
    assert ok and lse_cmp is not None


def test_lse_base_ln_is_passed_where_run_takes_it_and_declared_natural(fake: Any) -> None:
    """AdapterOptions(lse_base='ln'): paged/ragged get lse_base='ln' and declare e; decode/single stay base 2."""
    for case, base in ((PAGED, LSE_NATURAL), (RAGGED, LSE_NATURAL), (DECODE, LSE_BASE2), (SINGLE, LSE_BASE2)):
        inp, res = run_case(adapter("fa2", lse_base="ln"), case)
        assert res.lse_base == base and passes(inp, res)[0], case.layout
    assert calls("paged", "run")[0]["kwargs"]["lse_base"] == "ln"


def test_a_kernel_returning_natural_lse_fails_the_declared_base(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the library broke its base-2 contract, the declared base would expose it: the LSE check fails."""
    ff.natural_log_lse(monkeypatch)
    inp, res = run_case(adapter("fa2"), PAGED)
    ok, out_cmp, lse_cmp = passes(inp, res)
    assert out_cmp.passed and lse_cmp is not None and not lse_cmp.passed


def test_the_fork_gets_no_lse_base_and_declares_base_2(fork: Any) -> None:
    """The fork's run() has no lse_base: it is not passed, and base 2 is declared."""
    inp, res = run_case(adapter("fa2"), PAGED)
    assert "lse_base" not in fork[0]
    assert res.lse_base == LSE_BASE2 and passes(inp, res)[0]


# ---- poisoned outputs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,graph",
    [("paged", False), ("ragged", False), ("decode", False), ("paged", True), ("ragged-mask", True), ("decode", True)],
)
def test_rows_the_library_leaves_unwritten_are_caught(
    fake: Any, monkeypatch: pytest.MonkeyPatch, name: str, graph: bool
) -> None:
    """The output (and LSE) are poisoned before the run (or the replay): an unwritten row fails as unwritten."""
    ff.leave_rows_unwritten(monkeypatch, {1})
    inp, res = run_case(adapter("fa2", graph=graph), ALL[name])
    ok, out_cmp, lse_cmp = passes(inp, res)
    assert not ok and out_cmp.unwritten_count == ALL[name].num_qo_heads * ALL[name].head_dim_vo
    # judge() converts a base-2 LSE to natural log, which keeps it NaN but not the poison pattern:
    # the raw LSE still carries the poison on exactly the skipped row.
    assert lse_cmp is not None and not lse_cmp.passed and lse_cmp.nan_count + lse_cmp.unwritten_count > 0
    assert int(unwritten_mask(res.lse).sum()) == ALL[name].num_qo_heads
    assert res.out.dtype == to_torch(ALL[name].o_dtype)


def test_single_poisoning_is_best_effort_and_says_so(fake: Any) -> None:
    """single takes no out=: on a CPU the allocator-reuse poisoning cannot work, and last_run says so."""
    a = adapter("fa2")
    run_case(a, SINGLE)
    assert a.last_run["poison_effective"] is False
    run_case(a, PAGED)
    assert a.last_run["poison_effective"] is True  # the wrappers write into the adapter's poisoned out=/lse=


def test_zero_length_requests_pass_through_and_an_empty_batch_reaches_the_library(fake: Any) -> None:
    """Zero-length requests go to the library as they are; an empty batch is the library's to answer."""
    case = Case("ragged", (0, 5, 0, 3), (7, 0, 0, 6), causal=True, **H)
    inp, res = run_case(adapter("fa2"), case)
    assert passes(inp, res)[0]
    empty = Case("paged", (), (), page_size=5, **H)
    a = adapter("fa2")
    with pytest.raises(RuntimeError):  # the (fake, like the real) plan() takes max() of an empty tensor
        run_case(a, empty)
    assert len(calls("paged", "plan")) == 1


# ---- CUDA-graph mode ----------------------------------------------------------------------------


def test_graph_mode_captures_once_and_replays_after_a_re_plan(fake: Any) -> None:
    """Same signature, new lengths/page table/values: the wrapper is re-planned and the SAME graph replayed."""
    graphs = ff.FakeGraphs()
    a = fi.FlashInferKernel("fa2", CPU, graph=True, graphs=graphs)
    other = PAGED.replace(qo_lens=(2, 5), kv_lens=(14, 3))
    inp1, r1 = run_case(a, PAGED)
    inp2, r2 = run_case(a, other, seed=3)
    assert graphs.captures == 1 and graphs.replays == 2 and graphs.warmups == 1
    assert passes(inp1, r1)[0] and passes(inp2, r2)[0]
    (init,) = calls("paged", "__init__")
    kw = init["kwargs"]
    assert kw["use_cuda_graph"] is True and kw["qo_indptr_buf"].shape == (3,)
    assert kw["paged_kv_indices_buf"].shape == (fi.AdapterOptions().graph_max_pages,) and kw["custom_mask_buf"] is None
    t1, t2 = a.timings
    assert (t1.captured, t1.replayed, t2.captured, t2.replayed) == (True, True, False, True)


def test_graph_mode_keeps_a_wrapper_per_batch_size_and_mask_and_records_regrowth(fake: Any) -> None:
    """Batch size and masking are fixed at construction; outgrowing the buffers or rows builds a new wrapper."""
    a = fi.FlashInferKernel(
        "fa2", CPU, graph=True, graphs=ff.FakeGraphs(), options=fi.AdapterOptions(graph_max_pages=8)
    )
    run_case(a, PAGED)  # 5 pages: fits
    run_case(a, PAGED_MASK)  # masked: its own wrapper with custom_mask_buf
    run_case(a, PAGED.replace(qo_lens=(3, 6, 1), kv_lens=(11, 6, 2)))  # batch 3: its own wrapper
    run_case(a, PAGED.replace(kv_lens=(45, 6)))  # 11 pages > 8: new wrapper, doubled buffer
    run_case(a, PAGED.replace(qo_lens=(9, 6), kv_lens=(45, 6)))  # 15 rows > the 9 its first plan fixed
    inits = calls("paged", "__init__")
    assert len(inits) == 5
    assert inits[0]["kwargs"]["paged_kv_indices_buf"].shape == (8,)
    assert inits[1]["kwargs"]["custom_mask_buf"] is not None and inits[1]["kwargs"]["mask_indptr_buf"] is not None
    assert inits[3]["kwargs"]["paged_kv_indices_buf"].shape == (16,)
    news = [e for e in a.graph_events if e.startswith("new graph wrapper")]
    assert len(news) == 2 and "page indices" in news[0] and "query rows" in news[1]


def test_a_cudnn_graph_wrapper_is_replaced_when_a_request_outgrows_its_block_table(
    fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cuDNN paged prefill fixes its [batch, widest request's pages] block table at the first graph-mode plan and
    raises 'captured cuDNN block table cannot grow' after (prefill.py:3872-3890): on the H200 a long-lived
    cudnn+graph adapter hit it where a fresh one passed. A request wider than the table gets a new wrapper."""
    monkeypatch.setattr(sys.modules["flashinfer.cudnn.prefill"], "CUDNN_AVAILABLE", True)
    fl.lib_facts.cache_clear()
    a = fi.FlashInferKernel("cudnn", CPU, graph=True, graphs=ff.FakeGraphs())
    first = PAGED.replace(page_size=4)  # widest request: 3 pages
    for c in (first, first.replace(kv_lens=(40, 6)), first):  # 10 pages, then 3 again
        inp, res = run_case(a, c)
        assert passes(inp, res)[0], c.id
    news = [e for e in a.graph_events if e.startswith("new graph wrapper")]
    assert len(news) == 1 and "a request of 10 pages > the cuDNN block table's 3" in news[0], a.graph_events
    fl.lib_facts.cache_clear()


def test_graph_decode_and_ragged_replay_correctly(fake: Any) -> None:
    """Decode and ragged graph wrappers (fixed buffers) replay the oracle's answer across re-plans."""
    for case, other in (
        (DECODE, DECODE.replace(kv_lens=(5, 3, 33))),
        (RAGGED_MASK, RAGGED_MASK.replace(qo_lens=(3, 8), kv_lens=(9, 8))),
    ):
        a = fi.FlashInferKernel("fa2", CPU, graph=True, graphs=ff.FakeGraphs())
        for c, seed in ((case, 0), (other, 1), (case, 2)):
            inp, res = run_case(a, c, seed)
            assert passes(inp, res)[0], c.id
        assert a.timings[0].captured and not a.timings[1].captured and not a.timings[2].captured


def test_graph_signature_change_recaptures_on_the_same_wrapper(fake: Any) -> None:
    """A different scale (baked into the captured launch) gets a new capture; the wrapper is kept."""
    graphs = ff.FakeGraphs()
    a = fi.FlashInferKernel("fa2", CPU, graph=True, graphs=graphs)
    run_case(a, PAGED)
    inp, res = run_case(a, PAGED.replace(sm_scale=0.05))
    assert graphs.captures == 2 and len(calls("paged", "__init__")) == 1 and passes(inp, res)[0]


def test_graph_auto_keeps_its_first_resolution_for_the_wrapper(fake: Any) -> None:
    """Under graph mode the first plan may fix the backend: both cases report the wrapper's one choice."""
    a = adapter("auto", graph=True)
    _, r1 = run_case(a, RAGGED)
    _, r2 = run_case(a, RAGGED.replace(logits_soft_cap=0.0))
    assert r1.resolved_backend == r2.resolved_backend == "fa3"


def test_shared_graph_wrappers_are_one_per_batch_size_with_mask_buffers_up_front(fake: Any) -> None:
    """graph_wrappers="shared": one paged/ragged graph wrapper per (API, KV layout, batch size), built with
    custom_mask_buf and mask_indptr_buf and re-planned masked and unmasked; the buffer is sized for the mask an
    unmasked batch would span too (run() reads it for every plan). Decode takes none. The default keys graph
    wrappers per mask kind as well, mask buffers on the masked ones only (SGLang's keying)."""
    masked = PAGED_MASK.replace(qo_lens=PAGED.qo_lens, kv_lens=PAGED.kv_lens)  # same batch size and rows
    shared = adapter("fa2", graph=True, graph_wrappers="shared", graph_max_mask_bytes=8)
    for c in (PAGED, masked, PAGED, DECODE):  # PAGED's mask would span 5 + 5 bytes: the buffer doubles to 16
        run_case(shared, c)
    (init,) = calls("paged", "__init__")
    assert init["kwargs"]["custom_mask_buf"].shape == (16,) and init["kwargs"]["mask_indptr_buf"].shape == (3,)
    assert len(calls("paged", "plan")) == 3 and shared.graph_events[0].endswith("16 mask bytes")
    assert "custom_mask_buf" not in calls("decode", "__init__")[0]["kwargs"]
    assert shared.wrapper_key(PAGED) == shared.wrapper_key(masked) == ("paged", "NHD", *CONFIG, 2)
    assert shared.mask_buffer_held(PAGED) and not shared.mask_buffer_held(DECODE)
    per_mask = adapter("fa2", graph=True)
    assert per_mask.wrapper_key(PAGED) == ("paged", "NHD", *CONFIG, 2, "none") != per_mask.wrapper_key(masked)
    assert not per_mask.mask_buffer_held(PAGED) and per_mask.mask_buffer_held(masked)
    # One capture per model config: another dtype or head dim is another graph wrapper, never a re-plan.
    for other in (PAGED.replace(q_dtype="fp16", kv_dtype="fp16", o_dtype="fp16"), PAGED.replace(head_dim_vo=128)):
        assert shared.wrapper_key(other) != shared.wrapper_key(PAGED)
    assert adapter("fa2").wrapper_key(masked) == ("paged", "NHD") and not adapter("fa2").mask_buffer_held(masked)


@pytest.mark.parametrize("api", ["paged", "ragged"])
def test_an_unmasked_plan_on_a_shared_graph_wrapper_reads_its_mask_buffer(fake: Any, api: str) -> None:
    """FlashInfer 0.7.2.post1 and 0.7.4 as the model copies them: a graph-mode plan without a mask leaves the
    __init__ mask buffers alone (0.7.2 prefill.py:3509 paged, :5267 ragged) and run() takes MaskMode.CUSTOM
    whenever a buffer is held (:4382, :6405): an unmasked plan reads a zeroed mask (every key masked out) or the
    last masked plan's bits, and `auto` resolves as for a mask (:3674, :5532). The default keying serves the
    same sequence right."""
    unmasked = PAGED if api == "paged" else RAGGED_MASK.replace(mask="none")
    sequence = ((unmasked, 0), (unmasked.replace(mask="custom"), 1), (unmasked, 2))
    shared = adapter("auto", graph=True, graph_wrappers="shared")
    assert [passes(*run_case(shared, c, seed))[0] for c, seed in sequence] == [False, True, False]
    assert shared.last_run["resolved"] == "fa2"
    per_mask = adapter("auto", graph=True)
    assert all(passes(*run_case(per_mask, c, seed))[0] for c, seed in sequence)


# ---- supports() ---------------------------------------------------------------------------------

UP = fl.LibFacts(
    version="test", fork=False, lse_base_kw={"paged": True, "ragged": True}, fa3=True, cudnn=True, trtllm_gen=True
)
FORK = fl.LibFacts(
    version="test", fork=True, fork_scale_kw=True, aiter=True, softcap_defect=True, native_fp8="e4m3fnuz"
)


def _pick(case: Case) -> str:
    return "fa2" if case.mask == "custom" else "fa3"


DECLINES = [
    # (id, case, backend, facts, graph, expected constant)
    ("fp32-q", PAGED.replace(q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"), "fa2", UP, False, skips.DTYPE),
    ("fp32-out", PAGED.replace(o_dtype="fp32"), "fa2", UP, False, skips.OUTPUT_DTYPE),
    ("e4m3fnuz-cuda", FP8_PAGED.replace(q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz"), "fa3", UP, False, skips.DTYPE),
    ("fp16-bf16-mix", PAGED.replace(q_dtype="fp16", o_dtype="fp16"), "fa2", UP, False, skips.MIXED_QKV_DTYPE),
    ("fp8q-fa2", FP8_PAGED, "fa2", UP, False, skips.NO_FP8),
    ("kv8-fa3", KV8_RAGGED, "fa3", UP, False, skips.MIXED_QKV_DTYPE),
    ("mask-fa3", PAGED_MASK, "fa3", UP, False, skips.MASK),
    ("headdim-fa3", RAGGED.replace(head_dim_qk=96, head_dim_vo=96), "fa3", UP, False, skips.HEAD_DIM),
    ("fp8-cap-fa3", FP8_RAGGED.replace(logits_soft_cap=30.0), "fa3", UP, False, skips.NO_SOFT_CAP),
    ("window-cudnn", PAGED.replace(window_left=3), "cudnn", UP, False, skips.MASK),
    ("cap-cudnn", RAGGED, "cudnn", UP, False, skips.NO_SOFT_CAP),
    ("hnd-cudnn-ragged", RAGGED.replace(logits_soft_cap=0.0, kv_layout="HND"), "cudnn", UP, False, skips.LAYOUT),
    ("lse-cudnn-1tok-gqa", PAGED.replace(qo_lens=(1, 1), page_size=4), "cudnn", UP, False, skips.LSE),
    ("page-5-cudnn", PAGED, "cudnn", UP, False, skips.PAGE_SIZE),
    ("single-cudnn", SINGLE, "cudnn", UP, False, skips.LAYOUT),
    ("decode-cudnn-fp8", FP8_DECODE, "cudnn", UP, False, skips.NO_FP8),
    ("ragged-trtllm", RAGGED, "trtllm-gen", UP, False, skips.LAYOUT),
    ("cap-trtllm", DECODE.replace(logits_soft_cap=30.0), "trtllm-gen", UP, False, skips.NO_SOFT_CAP),
    ("noncausal-window-trtllm", PAGED.replace(causal=False, window_left=4), "trtllm-gen", UP, False, skips.MASK),
    ("mask-trtllm", PAGED_MASK.replace(logits_soft_cap=0.0), "trtllm-gen", UP, False, skips.MASK),
    ("decode-hdim", DECODE.replace(head_dim_qk=128), "fa2", UP, False, skips.HEAD_DIM),
    ("single-graph", SINGLE, "fa2", UP, True, skips.GRAPH_MODE),
    ("fp8-single-window", FP8_SINGLE.replace(window_left=2), "fa3", UP, False, skips.MASK),
    (
        "fork-fp8-ragged",
        FP8_RAGGED.replace(q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz"),
        "aiter",
        FORK,
        False,
        skips.NO_FP8,
    ),
    (
        "fork-fp8-out",
        FP8_PAGED.replace(q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz", o_dtype="fp16"),
        "aiter",
        FORK,
        False,
        skips.OUTPUT_DTYPE,
    ),
    ("fork-fp8-encoding", FP8_PAGED.replace(o_dtype="bf16"), "aiter", FORK, False, skips.DTYPE),
    (
        "fork-fp8-fa2",
        FP8_PAGED.replace(q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz", o_dtype="bf16"),
        "fa2",
        FORK,
        False,
        skips.NO_FP8,
    ),
    ("fork-aiter-hnd", PAGED_HND, "aiter", FORK, False, skips.LAYOUT),
    ("fork-aiter-mask", PAGED_MASK, "aiter", FORK, False, skips.MASK),
    (
        "fork-aiter-softcap-defect",
        RAGGED.replace(head_dim_qk=128, head_dim_vo=128, causal=True),
        "aiter",
        FORK,
        False,
        skips.NO_SOFT_CAP,
    ),
    (
        "fork-e5m2",
        FP8_PAGED.replace(q_dtype="e5m2", kv_dtype="e5m2", o_dtype="bf16"),
        "aiter",
        FORK,
        False,
        skips.DTYPE,
    ),
    ("fork-out-dtype", PAGED.replace(o_dtype="fp16"), "fa2", FORK, False, skips.OUTPUT_DTYPE),
]


@pytest.mark.parametrize("case,backend,facts,graph,constant", [d[1:] for d in DECLINES], ids=[d[0] for d in DECLINES])
def test_supports_declines_with_the_reason_from_the_source(
    case: Case, backend: str, facts: fl.LibFacts, graph: bool, constant: str
) -> None:
    """Each decline carries its skips constant and a cited detail."""
    sup = decide(case, backend, graph=graph, facts=facts, auto_pick=_pick)
    assert not sup.ok and skips.constant_of(sup.reason) == constant, sup.reason
    assert ": " in sup.reason


def test_auto_is_judged_as_the_backend_the_library_would_pick_for_a_fresh_wrapper() -> None:
    """auto: fp8 is fine where the selector picks fa3, declined (naming the pick) where it picks fa2."""
    assert decide(FP8_PAGED, "auto", graph=False, facts=UP, auto_pick=_pick).ok
    sup = decide(FP8_PAGED, "auto", graph=False, facts=UP, auto_pick=lambda c: "fa2")
    assert not sup.ok and skips.constant_of(sup.reason) == skips.NO_FP8 and "auto resolves to fa2" in sup.reason
    assert decide(PAGED_MASK, "auto", graph=False, facts=UP, auto_pick=_pick).ok  # a mask sends auto to fa2


@pytest.mark.parametrize(
    "case,backend,facts",
    [
        (PAGED, "fa2", UP),
        (PAGED_MASK, "fa2", UP),
        (RAGGED_MASK, "fa2", UP),
        (DECODE, "fa2", UP),
        (SINGLE, "fa3", UP),
        (FP8_PAGED, "fa3", UP),
        (KV8_RAGGED, "fa2", UP),
        (FP8_DECODE, "fa2", UP),
        (PAGED.replace(page_size=4), "cudnn", UP),
        (PAGED, "trtllm-gen", UP),
        (DECODE.replace(page_size=16), "cudnn", UP),
        (PAGED, "aiter", FORK),
        (PAGED_MASK, "fa2", FORK),
        (FP8_PAGED.replace(q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz", o_dtype="bf16"), "aiter", FORK),
        (Case("paged", (), (), page_size=5, **H), "fa2", UP),
        (Case("ragged", (0, 3), (4, 0), **H), "fa3", UP),
    ],
    ids=lambda x: x.id if isinstance(x, Case) else (x if isinstance(x, str) else ("fork" if x.fork else "upstream")),
)
def test_supports_accepts_what_the_backend_takes(case: Case, backend: str, facts: fl.LibFacts) -> None:
    """No decline for cases the backend serves, zero lengths and empty batches included (the library decides)."""
    sup = decide(case, backend, graph=False, facts=facts, auto_pick=_pick)
    assert sup.ok, sup.reason


def test_cudnn_declines_fp8_on_sm90_and_page_sizes_not_a_power_of_two() -> None:
    """On the H200 (sm90) cuDNN raised cudnnGraphNotSupportedError for fp8 SDPA ('only supported on Blackwell')
    and for decode pages of 5 ('block size needs to be non-zero and a power of 2'): declined with the reason
    where the GPU is known; an unknown GPU (None) is not judged by an architecture's limit."""
    fp8 = FP8_PAGED.replace(o_dtype="bf16")
    sup = decide(fp8, "cudnn", graph=False, facts=UP, auto_pick=_pick, capability=(9, 0))
    assert not sup.ok and skips.constant_of(sup.reason) == skips.NO_FP8 and "sm90" in sup.reason, sup.reason
    for cap in ((10, 0), None):
        assert decide(fp8, "cudnn", graph=False, facts=UP, auto_pick=_pick, capability=cap).ok
    sup = decide(DECODE, "cudnn", graph=False, facts=UP, auto_pick=_pick, capability=(9, 0))
    assert not sup.ok and skips.constant_of(sup.reason) == skips.PAGE_SIZE and "page size 5" in sup.reason
    for page in (1, 4, 16):
        assert decide(
            DECODE.replace(page_size=page), "cudnn", graph=False, facts=UP, auto_pick=_pick, capability=(9, 0)
        ).ok, page
    sup = decide(PAGED.replace(window_left=-1), "cudnn", graph=False, facts=UP, auto_pick=_pick)  # page 5
    assert not sup.ok and skips.constant_of(sup.reason) == skips.PAGE_SIZE
    assert decide(PAGED.replace(page_size=8), "cudnn", graph=False, facts=UP, auto_pick=_pick).ok
    assert decide(fp8, "fa3", graph=False, facts=UP, auto_pick=_pick, capability=(9, 0)).ok  # cuDNN's limit only


def test_supports_never_raises_and_declines_a_missing_library(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without flashinfer importable, supports() answers DEVICE_BACKEND instead of raising."""
    monkeypatch.setitem(sys.modules, "flashinfer", None)  # makes `import flashinfer` raise ImportError
    fl.lib_facts.cache_clear()
    sup = fi.FlashInferKernel("fa2", CPU).supports(PAGED)
    assert not sup.ok and skips.constant_of(sup.reason) == skips.DEVICE_BACKEND and "import flashinfer" in sup.reason
    fl.lib_facts.cache_clear()


def test_a_backend_this_device_lacks_is_declined(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """fa3 on a non-Hopper device (the library's is_sm90a_supported says no) is a DEVICE_BACKEND decline."""
    ff.install(monkeypatch, sm90=False)
    fl.lib_facts.cache_clear()
    sup = adapter("fa3").supports(PAGED)
    assert not sup.ok and skips.constant_of(sup.reason) == skips.DEVICE_BACKEND


# ---- JIT variants and timing --------------------------------------------------------------------


def test_variant_key_holds_what_selects_a_compiled_kernel() -> None:
    """Dtypes, head dims, backend, cap on/off, window on/off pick the module; mask/layout/API do not."""
    k = variant_key(PAGED_MASK, "fa2")
    assert (k.backend, k.module, k.q_dtype, k.head_dim_qk, k.soft_cap, k.window, k.mask, k.api) == (
        "fa2",
        "batch_prefill",
        "bf16",
        64,
        True,
        True,
        "custom",
        "paged",
    )
    assert (
        variant_key(PAGED, "fa2").module_key
        == variant_key(Case("ragged", (3, 6), (11, 6), causal=True, **H), "fa2").module_key
    )  # paged and ragged share a module
    assert variant_key(PAGED, "fa2").module_key == variant_key(PAGED_HND, "fa2").module_key
    assert variant_key(PAGED, "fa2").module_key != variant_key(PAGED.replace(window_left=3), "fa2").module_key
    assert variant_key(PAGED, "fa2").module_key != variant_key(PAGED, "fa3").module_key
    assert variant_key(DECODE, "fa2").module == "batch_decode"
    assert variant_key(DECODE, "fa2", decode_tensor_cores=True).module == "batch_prefill"
    assert variant_key(DECODE, "fa3").module == "batch_prefill"
    assert variant_key(SINGLE, "fa2").module == "single_prefill"
    g = variant_key(PAGED, "fa2+graph")
    assert g.graph and g.backend == "fa2" and g.module_key == variant_key(PAGED, "fa2").module_key
    hash(g)


def test_order_by_variant_groups_modules_and_keeps_first_seen_order() -> None:
    """Cases of one compiled module become adjacent; groups appear in the order their first case did."""
    cases = [
        PAGED,
        DECODE,
        PAGED.replace(window_left=3),
        RAGGED.replace(logits_soft_cap=0.0),
        SINGLE,
        DECODE.replace(kv_lens=(2, 3, 4)),
        PAGED_HND,
    ]
    ordered = order_by_variant(cases, "fa2")
    assert sorted(c.id for c in ordered) == sorted(c.id for c in cases)
    modules = [variant_key(c, "fa2").module_key for c in ordered]
    runs = [m for i, m in enumerate(modules) if i == 0 or modules[i - 1] != m]
    assert len(runs) == len(set(modules))  # each module appears as one contiguous run
    assert [c.id for c in ordered] == [
        c.id for c in (cases[0], cases[3], cases[6], cases[1], cases[5], cases[2], cases[4])
    ]
    groups = group_by_variant(cases, "fa2")
    assert sum(len(v) for v in groups.values()) == len(cases)


def test_timing_separates_the_first_use_of_a_module_from_later_runs(fake: Any) -> None:
    """The first plan+run of a module is first_use (compile_s = plan+run); later runs of it are not."""
    a = adapter("fa2")
    run_case(a, PAGED)
    run_case(a, RAGGED.replace(logits_soft_cap=0.0, kv_layout="NHD"))  # same batch-prefill module as PAGED
    run_case(a, RAGGED)  # soft cap on: a new module
    run_case(a.fresh(), PAGED)  # another adapter, same process: not a first use
    t = a.timings
    assert [x.first_use for x in t] == [True, False, True]
    assert t[0].compile_s == pytest.approx(t[0].plan_s + t[0].run_s) and t[1].compile_s == 0.0
    assert isinstance(t[0], RunTiming) and a.last_timing is t[-1] and set(t[0].to_json()) >= {"compile_s", "run_s"}
    inp = materialize(PAGED, 0, CPU)
    a.plan(inp)
    a.run(inp)
    a.run(inp)  # the same plan run twice: the second run is not a first use and carries no plan time
    assert a.timings[-1].plan_s == 0.0 and not a.timings[-1].first_use


# ---- helpers ------------------------------------------------------------------------------------


def test_kwargs_for_drops_unknown_defaults_and_refuses_unknown_values() -> None:
    """An argument a library version lacks is dropped when it would mean 'default', refused otherwise."""

    def f(a: int, b: int = 0) -> None: ...

    assert fl.kwargs_for(f, b=1, lse_base=None) == {"b": 1}
    with pytest.raises(TypeError, match="lse_base"):
        fl.kwargs_for(f, lse_base="ln")


def test_the_fakes_signatures_match_the_real_library() -> None:
    """Where flashinfer is importable (GPU runners), the fake's parameter names equal the real ones."""
    try:
        import flashinfer  # noqa: F401
    except Exception:
        pytest.skip("flashinfer is not importable here (CPU CI): the fake's signatures are checked on GPU runners")
    import flashinfer as real

    pairs = [
        (real.BatchPrefillWithPagedKVCacheWrapper.__init__, ff.BatchPrefillWithPagedKVCacheWrapper.__init__),
        (real.BatchPrefillWithPagedKVCacheWrapper.plan, ff.BatchPrefillWithPagedKVCacheWrapper.plan),
        (real.BatchPrefillWithPagedKVCacheWrapper.run, ff.BatchPrefillWithPagedKVCacheWrapper.run),
        (real.BatchPrefillWithRaggedKVCacheWrapper.__init__, ff.BatchPrefillWithRaggedKVCacheWrapper.__init__),
        (real.BatchPrefillWithRaggedKVCacheWrapper.plan, ff.BatchPrefillWithRaggedKVCacheWrapper.plan),
        (real.BatchPrefillWithRaggedKVCacheWrapper.run, ff.BatchPrefillWithRaggedKVCacheWrapper.run),
        (real.BatchDecodeWithPagedKVCacheWrapper.__init__, ff.BatchDecodeWithPagedKVCacheWrapper.__init__),
        (real.BatchDecodeWithPagedKVCacheWrapper.plan, ff.BatchDecodeWithPagedKVCacheWrapper.plan),
        (real.BatchDecodeWithPagedKVCacheWrapper.run, ff.BatchDecodeWithPagedKVCacheWrapper.run),
        (real.single_prefill_with_kv_cache, ff.single_prefill_with_kv_cache),
    ]
    for r, f in pairs:
        assert list(inspect.signature(r).parameters) == list(inspect.signature(f).parameters), r.__qualname__


def test_the_flashinfer_smoke_script_runs_every_group_end_to_end_against_the_fake(
    fake: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """scripts/h200_flashinfer_smoke.py on the fake (device 'cpu'): every group runs, JSON is written."""
    import importlib.util
    import json

    from kernels.protocol import Support

    monkeypatch.setattr(fi.FlashInferTarget, "available", lambda self, device: Support.yes())
    init = fi.FlashInferKernel.__init__

    def with_fake_graphs(self: Any, *a: Any, **k: Any) -> None:
        k["graphs"] = ff.FakeGraphs()
        init(self, *a, **k)

    monkeypatch.setattr(fi.FlashInferKernel, "__init__", with_fake_graphs)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "scripts", "h200_flashinfer_smoke.py")
    spec = importlib.util.spec_from_file_location("h200_smoke", path)
    assert spec is not None and spec.loader is not None
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    monkeypatch.setattr(smoke, "COMPILE_S", {k: 0.0 for k in smoke.COMPILE_S})
    small = dict(num_qo_heads=4, num_kv_heads=1, head_dim_qk=64, head_dim_vo=64, causal=True)
    monkeypatch.setattr(
        smoke,
        "CASES",
        {
            api: [
                c.replace(
                    **small, qo_lens=tuple(min(q, 9) for q in c.qo_lens), kv_lens=tuple(min(k, 40) for k in c.kv_lens)
                )
                for c in cases
            ]
            for api, cases in smoke.CASES.items()
        },
    )
    assert smoke.main(["--out", str(tmp_path), "--device", "cpu"]) == 0
    doc = json.loads((tmp_path / "flashinfer_smoke.json").read_text())
    assert doc["counts"] == {"pass": 45}
    assert {(r["backend"], r["api"]) for r in doc["results"]} >= {("fa2+graph", "decode"), ("auto", "single")}


def test_fork_aiter_graph_decode_declines_lse_which_capture_refuses(fork: Any) -> None:
    """rocm_fork.md rule 32: AITER decode run(return_lse=True) raises under CUDA-graph capture."""
    sup = adapter("aiter", graph=True).supports(DECODE)
    assert not sup.ok and skips.constant_of(sup.reason) == skips.LSE and "rule 32" in sup.reason
    nhd = replace(DECODE, kv_layout="NHD", window_left=-1)
    assert not adapter("aiter", graph=True).supports(nhd).ok
    assert adapter("aiter", graph=True).supports(replace(nhd, return_lse=False)).ok
    assert adapter("aiter").supports(nhd).ok  # eager: an fa2 shadow plan gives LSE


# ---- timing and the call log ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["paged", "ragged", "decode"])
def test_bench_call_is_the_librarys_run_alone_on_one_plan(fake: Any, name: str) -> None:
    """What a sweep times: run() of the library on a wrapper planned once, out= reused, nothing else."""
    a = adapter("fa2")
    case = ALL[name]
    inp = materialize(case, 0, CPU)
    call = a.bench_call(inp)
    runs = len(calls(case.layout, "run"))
    first = call().clone()
    second = call()
    assert len(calls(case.layout, "plan")) == 1 and len(calls(case.layout, "run")) == runs + 2
    assert calls(case.layout, "run")[-1]["kwargs"].get("out") is second  # the buffer allocated once
    out_cmp, _ = judge(truth(inp), first, None, adapter="flashinfer")
    assert out_cmp.passed and torch.equal(first, second)


def test_the_call_log_holds_each_library_call_as_made(fake: Any) -> None:
    """call_log (kernels/flashinfer/calls.py): construction, plan and run with host copies of the tensors
    they got; the workspace and the poisoned buffers as shapes; graph mode logs nothing."""
    from kernels.flashinfer.calls import Poisoned, Zeros

    a = adapter("auto", workspace_bytes=4096)
    a.call_log = []
    inp, _ = run_case(a, RAGGED_MASK)
    ctor, plan, run = a.call_log
    assert (ctor.on, ctor.method, ctor.result) == ("flashinfer", "BatchPrefillWithRaggedKVCacheWrapper", "w1")
    assert ctor.args[0] == Zeros((4096,), torch.uint8) and ctor.args[1] == "HND" and ctor.kwargs == {"backend": "auto"}
    assert (plan.on, plan.method, run.on, run.method) == ("w1", "plan", "w1", "run")
    (p,) = calls("ragged", "plan")
    assert torch.equal(plan.args[0], p["args"][0].cpu()) and plan.args[0].device.type == "cpu"
    assert torch.equal(plan.kwargs["custom_mask"], p["kwargs"]["custom_mask"])
    assert run.kwargs["out"] == Poisoned((sum(RAGGED_MASK.qo_lens), 4, 64), torch.bfloat16)
    assert torch.equal(run.args[0], inp.q.cpu())
    g = adapter("fa2", graph=True)
    g.call_log = []
    run_case(g, RAGGED)
    assert g.call_log == []


def test_fa2_single_prefill_declines_causal_with_more_queries_than_keys(fake: Any) -> None:
    """Seen on the H200: SinglePrefillWithKVCacheDispatched refuses it (prefill.cuh:2735); the batch APIs take it,
    and a custom mask (into which the adapter folds causal) is another mask mode."""
    long_q = Case("single", (127,), (1,), 4, 2, head_dim_qk=64, head_dim_vo=64, causal=True)
    sup = adapter("fa2").supports(long_q)
    assert not sup.ok and skips.constant_of(sup.reason) == skips.LIBRARY_REFUSED and "prefill.cuh:2735" in sup.reason
    assert adapter("fa2").supports(long_q.replace(mask="custom")).ok
    assert adapter("fa2").supports(long_q.replace(qo_lens=(1,), kv_lens=(127,))).ok
    assert adapter("fa2").supports(long_q.replace(layout="ragged")).ok


# A missing validation upstream is a decline, not a ledger entry (docs/ledger.md, "Misuse or defect").
# (case, backend, auto's pick, declined, what the reason names)
MISUSE_DECLINES = [
    pytest.param(RAGGED.replace(head_dim_qk=96, head_dim_vo=96), "fa2", None, True, "#4299", id="ragged-96-fa2"),
    pytest.param(RAGGED.replace(head_dim_qk=96, head_dim_vo=96), "auto", "fa2", True, "#4299", id="ragged-96-auto"),
    pytest.param(PAGED.replace(head_dim_qk=96, head_dim_vo=96), "fa2", None, True, "#4299", id="paged-96-fa2"),
    pytest.param(SINGLE.replace(head_dim_qk=128, head_dim_vo=96), "fa2", None, True, "#4299", id="single-vo-96-fa2"),
    pytest.param(RAGGED.replace(head_dim_qk=128, head_dim_vo=128), "fa2", None, False, "", id="ragged-128-fa2"),
    pytest.param(PAGED.replace(head_dim_qk=192, head_dim_vo=128), "fa2", None, False, "", id="paged-192-fa2"),
    pytest.param(PAGED.replace(head_dim_qk=192, head_dim_vo=128), "fa3", None, True, "deliberate", id="paged-192-fa3"),
    pytest.param(PAGED.replace(head_dim_qk=192, head_dim_vo=128), "auto", "fa3", False, "", id="paged-192-auto"),
    pytest.param(RAGGED.replace(head_dim_qk=192, head_dim_vo=128), "fa3", None, False, "", id="ragged-192-fa3"),
]


@pytest.mark.parametrize("case,backend,pick,declined,names", MISUSE_DECLINES)
def test_a_missing_validation_upstream_is_declined_and_a_defect_is_not(
    case: Case, backend: str, pick: Optional[str], declined: bool, names: str
) -> None:
    """fa2 prefill at a head dim that is not a multiple of 64 (0.7.2.post1 and 0.7.4 check none: an illegal memory
    access at 96 on the H200, flashinfer-ai/flashinfer#4299) is declined, asked for or through auto; fa3 asked for
    paged (192, 128) is refused by the library on purpose and declined, while auto routing there is the ledger's
    defect and is not declined (its failure must show)."""
    sup = decide(case, backend, graph=False, facts=UP, auto_pick=lambda c: pick)
    assert sup.ok is not declined, sup.reason
    if declined:
        assert skips.constant_of(sup.reason) == skips.HEAD_DIM and names in sup.reason, sup.reason


def test_a_cpu_workspace_is_zeroed_and_its_writes_stay_in_its_process() -> None:
    """The stand-ins' workspace on the CPU: every byte 0 before first use (BatchDecode's float workspace must
    be), writable, and private: a forked child's writes (a fork server's run) never reach the parent's."""
    ws = fi.zeroed_workspace(1 << 20, "cpu")
    assert ws.shape == (1 << 20,) and ws.dtype == torch.uint8 and int(ws.count_nonzero()) == 0
    ws[-1] = 3
    assert int(ws.sum()) == 3
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (single-byte writes: no intra-op thread pool after a fork)
        ws[0], ws[-1] = 7, 9
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0
    assert int(ws.sum()) == 3
    assert fi.zeroed_workspace(0, "cpu").shape == (0,)
