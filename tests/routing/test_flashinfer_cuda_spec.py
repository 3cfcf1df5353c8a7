"""The upstream FlashInfer CUDA routing spec (routing/specs/flashinfer_cuda.py), checked three ways.

(a) Against the CPU fake of the library (tests/kernels/fake_flashinfer.py), which copies
    upstream's auto resolution: the architecture probe is patched to sm90 and to sm80, the real
    adapter (kernels.flashinfer.adapter, backend "auto") runs the quick matrix plus CRAFTED, and every
    observed decision must pass and be explained while every row is reached or named in
    CPU_UNREACHABLE. The lifecycle (sticky paged, the stale ragged mask, a raising first plan)
    is checked on long-lived adapters the same way.
(b) Against the library itself where flashinfer-python 0.7.2.post1 imports (not in CI): its own
    determine_attention_backend, Blackwell ragged upgrade and decode cuDNN rule, with the
    compute-capability probe patched, over grids of queries.
(c) Spec mutants (a deleted per-arch row, flipped fa3 conditions, lifecycle flags) are caught by
    the checker on the fake's observations.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import sys
from types import SimpleNamespace
from typing import Any, Callable, Iterator

import pytest
import torch

import kernels._env as env
import kernels.flashinfer.adapter as fi
import kernels.flashinfer.lib as fl
from kernels.flashinfer.variants import reset_seen
from kernels.protocol import NOT_REPORTED
from routing.check import ObservedRoute, check, coverage
from routing.spec import (
    RoutingEnv,
    RoutingQuery,
    RoutingSpec,
    SpecGap,
    expected_route,
    expected_sequence,
    query_from_case,
)
from routing.specs import BY_MODULE, SPECS
from routing.specs.flashinfer_cuda import ARCHS, FA3_CAPABLE, FP8, NOT_DRIVEN_BY_ADAPTER, SPEC
from scenarios.case import Case
from scenarios.matrix import build
from scenarios.tensors import materialize

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kernels"))
import fake_flashinfer as ff  # noqa: E402

CAPABILITY = {"sm80": (8, 0), "sm90": (9, 0), "sm100": (10, 0), "sm120": (12, 0)}
FAKE_ARCHS = ("sm90", "sm80")

# Rows no run on the fake can reach, each with why; coverage must leave exactly these unreached.
CPU_UNREACHABLE = {
    "ragged_fmha_v2": "the adapter never passes use_fp16_qk_reduction",
    "ragged_blackwell_cudnn": "the fake has no SM100 ragged upgrade (determine_attention_backend only)",
    "ragged_blackwell_cutlass": "the fake has no SM100 ragged upgrade (determine_attention_backend only)",
    "fa3_pos_encoding": "the adapter never passes pos_encoding_mode",
    "fa3_fp16_qk_reduction": "the adapter never passes use_fp16_qk_reduction",
}

_H = dict(num_qo_heads=4, num_kv_heads=2)
CRAFTED: dict[str, Case] = {
    "head dims fa3 lacks": Case("ragged", (5, 3), (9, 3), head_dim_qk=96, head_dim_vo=96, **_H),
    "head-dim pair fa3 lacks": Case("paged", (4,), (11,), head_dim_qk=128, head_dim_vo=64, page_size=4, **_H),
    "single prefill, custom mask": Case("single", (6,), (9,), head_dim_qk=64, head_dim_vo=64, mask="custom", **_H),
    "decode, fp8 q and kv": Case(
        "decode",
        (1, 1),
        (5, 9),
        head_dim_qk=128,
        head_dim_vo=128,
        page_size=4,
        q_dtype="e4m3fn",
        kv_dtype="e4m3fn",
        o_dtype="bf16",
        **_H,
    ),
    "decode, fp8 kv under a bf16 q": Case(
        "decode", (1, 1), (5, 9), head_dim_qk=128, head_dim_vo=128, page_size=4, kv_dtype="e4m3fn", **_H
    ),
    "decode, 16-bit": Case("decode", (1,), (7,), head_dim_qk=64, head_dim_vo=64, page_size=4, **_H),
}


@pytest.fixture(scope="module", autouse=True)
def _no_fake_left_behind() -> Iterator[None]:
    yield
    fl.lib_facts.cache_clear()


def _install_fake(mp: pytest.MonkeyPatch, arch: str, cudnn: bool = False) -> None:
    """The fake on `arch`: is_sm90a_supported says what upstream's says of that (patched) compute capability."""
    cap = CAPABILITY[arch]
    mp.setattr(env, "device_capability", lambda device: cap)
    ff.install(mp, sm90=cap[0] == 9, cudnn=cudnn)
    fl.lib_facts.cache_clear()
    reset_seen()


def _adapter(*, tensor_cores: bool = False, graph: bool = False, backend: str = "auto") -> fi.FlashInferKernel:
    # A small workspace: the fake never reads it, and 128 MiB zeroed per adapter would dominate the test.
    return fi.FlashInferKernel(
        backend,
        "cpu",
        graph=graph,
        graphs=ff.FakeGraphs(),
        options=fi.AdapterOptions(decode_tensor_cores=tensor_cores, workspace_bytes=1024),
    )


def _observe(a: fi.FlashInferKernel, case: Case) -> ObservedRoute:
    inputs = materialize(case, 0, "cpu")
    try:
        out = a.run(inputs)
    except Exception as e:  # the library's own exception is the observation (checked against the spec),
        planned = a.route_after_failed_run(inputs)  # unless plan() returned and chose: a run() defect, as
        if planned is not None:  # a parity record keeps it (decode's empty batch)
            return ObservedRoute(*planned)
        return ObservedRoute(None, raised=type(e).__name__)
    return ObservedRoute(out.resolved_backend, out.fallback_reason)


def _short(case: Case) -> Case:
    """The case with lengths capped at 2 (query) and 3 (keys): on sm80/sm90 no row reads a length beyond
    the batch being empty or not, and short requests keep the fake's reference kernel cheap."""
    return case.replace(qo_lens=[min(n, 2) for n in case.qo_lens], kv_lens=[min(n, 3) for n in case.kv_lens])


def _cases() -> list[tuple[str, Case]]:
    return [(c.label or c.id, _short(c)) for c in build("quick")] + list(CRAFTED.items())


@pytest.fixture(scope="module")
def observed() -> list[tuple[str, RoutingQuery, ObservedRoute]]:
    """(label, query, observation) for every supported case on a FRESH auto adapter, per arch and decode mode."""
    out = []
    for arch in FAKE_ARCHS:
        with pytest.MonkeyPatch.context() as mp:
            _install_fake(mp, arch)
            for tensor_cores in (False, True):
                for label, case in _cases():
                    if tensor_cores and case.layout != "decode":
                        continue  # the option reaches the decode wrapper only
                    a = _adapter(tensor_cores=tensor_cores)
                    if not a.supports(case).ok:
                        continue
                    q = query_from_case(case, RoutingEnv(arch=arch), use_tensor_cores=tensor_cores)
                    out.append((f"{arch}{' TC' if tensor_cores else ''} {label}", q, _observe(a, case)))
            # Explicit backends, one case per layout: the backend asked for is the one that runs.
            for backend in ("fa2", "fa3") if arch == "sm90" else ("fa2",):
                for _label, case in _cases():
                    a = _adapter(backend=backend)
                    if (
                        case.layout in {lbl.split()[-1] for lbl, *_ in out if f"explicit {backend}" in lbl}
                        or not a.supports(case).ok
                    ):
                        continue
                    q = query_from_case(
                        case, RoutingEnv(arch=arch), requested=backend, use_tensor_cores=backend == "fa3"
                    )
                    out.append((f"{arch} explicit {backend} {case.layout}", q, _observe(a, case)))
        fl.lib_facts.cache_clear()
        with pytest.MonkeyPatch.context() as mp:  # the cuDNN backend where its frontend imports
            _install_fake(mp, arch, cudnn=True)
            seen: set[str] = set()
            for _label, case in _cases():
                a = _adapter(backend="cudnn")
                if case.layout in seen or not a.supports(case).ok:
                    continue
                seen.add(case.layout)
                q = query_from_case(case, RoutingEnv(arch=arch), requested="cudnn")
                out.append((f"{arch} explicit cudnn {case.layout}", q, _observe(a, case)))
        fl.lib_facts.cache_clear()
    return out


def _verdicts(spec: RoutingSpec, observed: list) -> list:
    return [(label, check(expected_route(spec, q), o)) for label, q, o in observed]


# ---- the spec's own shape -----------------------------------------------------------------------


def test_spec_is_registered_cites_the_source_and_never_expects_none():
    """Upstream gives no reason: every row says NOT_REPORTED, never None; every row cites file:line."""
    assert SPECS["flashinfer-cuda"] is SPEC and BY_MODULE["flashinfer_cuda"] is SPEC
    assert all(r.expect_reason is NOT_REPORTED for r in SPEC.rules)
    bad = [r.name for r in SPEC.rules if not re.search(r"\b(prefill|decode|utils)\.py:\d+", r.source)]
    assert not bad, f"rows without a file:line source: {bad}"
    assert set(NOT_DRIVEN_BY_ADAPTER) <= set(CPU_UNREACHABLE) <= {r.name for r in SPEC.rules}


def test_an_arch_outside_the_tables_is_a_gap_not_a_guess():
    q = RoutingQuery(api="paged", arch="sm89")
    assert expected_route(SPEC, q).gap == SpecGap("fa3_capable", "sm89")
    assert expected_route(SPEC, q.replace(api="ragged")).gap is not None
    # Rows that read no table hold on any arch: decode without tensor cores is the CUDA-core kernel.
    assert expected_route(SPEC, q.replace(api="decode")).backend == "fa2"
    v = check(expected_route(SPEC, q), ObservedRoute("fa2", NOT_REPORTED))
    assert v.status == "spec_gap" and coverage(SPEC, [v]).unexplained == (v,)


# ---- (a) against the fake -----------------------------------------------------------------------


def test_every_observed_decision_passes_and_is_explained(observed):
    assert len(observed) >= 120, "the quick matrix should give the auto adapter most of its cases"
    vs = _verdicts(SPEC, observed)
    bad = [f"{label}: {v.status} ({v.detail}); rule {v.expected.rule}" for label, v in vs if not v.passed]
    assert not bad, "\n".join(bad)
    cov = coverage(SPEC, [v for _, v in vs])
    assert cov.unexplained == () and cov.failed == ()


@pytest.mark.parametrize("row", [r.name for r in SPEC.rules])
def test_every_row_is_reached_or_named_cpu_unreachable(observed, row):
    cov = coverage(SPEC, [v for _, v in _verdicts(SPEC, observed)])
    if row in CPU_UNREACHABLE:
        assert row in cov.unreached, f"{row} was reached on the fake: drop it from CPU_UNREACHABLE"
    else:
        assert row not in cov.unreached, f"no passing observation on the fake reached row {row!r}"


def test_both_architectures_were_driven(observed):
    """sm90 resolves some plan to fa3; sm80 none (is_sm90a_supported is the first test, utils.py:616)."""
    by_arch = {a: {o.backend for label, _, o in observed if label.startswith(a)} for a in FAKE_ARCHS}
    assert "fa3" in by_arch["sm90"] and "fa3" not in by_arch["sm80"]


def _sequence(arch: str, cases: list[Case], **adapter: Any) -> tuple[list[Any], list[Any]]:
    """(expected, observed) for successive plans of ONE long-lived auto adapter on the fake."""
    with pytest.MonkeyPatch.context() as mp:
        _install_fake(mp, arch)
        a = _adapter(**adapter)
        tc, graph = adapter.get("tensor_cores", False), adapter.get("graph", False)
        obs = [_observe(a, c) for c in cases]
        exp = expected_sequence(
            SPEC, [query_from_case(c, RoutingEnv(arch=arch, graph_mode=graph), use_tensor_cores=tc) for c in cases]
        )
    fl.lib_facts.cache_clear()
    return exp, obs


_P = Case("paged", (3, 6), (11, 6), head_dim_qk=64, head_dim_vo=64, page_size=5, causal=True, **_H)
_R = Case("ragged", (5, 9), (12, 9), head_dim_qk=64, head_dim_vo=64, **_H)
LIFECYCLES: dict[str, tuple[str, list[Case], dict, list[str]]] = {
    # paged: the first plan decides, a mask or an fa3-less head dim later changes nothing (prefill.py:3669).
    "paged sticky": (
        "sm90",
        [_P, _P.replace(mask="custom"), _P.replace(head_dim_qk=96, head_dim_vo=96)],
        {},
        ["fa3", "fa3", "fa3"],
    ),
    # a plan that raises (empty batch, prefill.py:3449) fixes nothing: the next plan decides.
    "paged raise then plan": (
        "sm90",
        [Case("paged", (), (), page_size=5, **_H), _P.replace(mask="custom"), _P],
        {},
        ["RuntimeError", "fa2", "fa2"],
    ),
    # ragged: every plan re-resolves, but a mask once given stays (prefill.py:5295-5300).
    "ragged stale mask": (
        "sm90",
        [_R, _R.replace(mask="custom"), _R, _R.replace(head_dim_qk=96, head_dim_vo=96)],
        {},
        ["fa3", "fa2", "fa2", "fa2"],
    ),
    # ragged under graphs still re-resolves; the graph wrapper's mask is fixed at construction.
    "ragged graph re-resolves": (
        "sm90",
        [_R, _R.replace(head_dim_qk=96, head_dim_vo=96), _R],
        {"graph": True},
        ["fa3", "fa2", "fa3"],
    ),
    # decode with tensor cores: the first plan decides (decode.py:2375).
    "decode tensor cores sticky": (
        "sm90",
        [CRAFTED["decode, fp8 q and kv"], CRAFTED["decode, 16-bit"]],
        {"tensor_cores": True},
        ["fa3", "fa3"],
    ),
    # single prefill: per call.
    "single per call": (
        "sm90",
        [
            Case("single", (6,), (9,), head_dim_qk=64, head_dim_vo=64, **_H),
            CRAFTED["single prefill, custom mask"],
            Case("single", (6,), (9,), head_dim_qk=64, head_dim_vo=64, **_H),
        ],
        {},
        ["fa3", "fa2", "fa3"],
    ),
}


def _outcome(x: Any) -> str:
    return x.raises if getattr(x, "raises", None) else x.raised if getattr(x, "raised", None) else x.backend


@pytest.fixture(scope="module")
def lifecycles() -> dict[str, tuple[list[Any], list[Any]]]:
    return {name: _sequence(arch, cases, **adapter) for name, (arch, cases, adapter, _) in LIFECYCLES.items()}


@pytest.mark.parametrize("name", list(LIFECYCLES))
def test_lifecycle_matches_the_library_on_a_long_lived_wrapper(lifecycles, name):
    want = LIFECYCLES[name][3]
    exp, obs = lifecycles[name]
    assert [_outcome(o) for o in obs] == want, "the fake no longer behaves as this test was written for"
    verdicts = [check(e, o) for e, o in zip(exp, obs)]
    assert all(v.passed for v in verdicts), [(v.status, v.detail) for v in verdicts]


# ---- (c) spec mutants ---------------------------------------------------------------------------


def _with_rule(name: str, when: Callable[[RoutingQuery, Any], bool]) -> RoutingSpec:
    rules = tuple(dataclasses.replace(r, when=when) if r.name == name else r for r in SPEC.rules)
    return dataclasses.replace(SPEC, rules=rules)


def _auto(p: Callable[[RoutingQuery], bool]) -> Callable[[RoutingQuery, Any], bool]:
    return lambda q, c: q.requested == "auto" and p(q)


MUTANTS: dict[str, RoutingSpec] = {
    "sm90 row deleted from fa3_capable": SPEC.with_table(FA3_CAPABLE.without("sm90")),
    "fa3 on sm80": SPEC.with_table(FA3_CAPABLE.with_row("sm80", True)),
    "custom-mask condition flipped": _with_rule("fa3_custom_mask", _auto(lambda q: not q.custom_mask)),
    "fp8-KV condition flipped (fp8 q under 16-bit kv)": _with_rule(
        "fa3_fp8_kv_needs_fp8_q", _auto(lambda q: q.q_dtype in FP8 and q.kv_dtype not in FP8)
    ),
    "head-dim check dropped": _with_rule("fa3_head_dims", lambda q, c: False),
    "decode without tensor cores resolves like prefill": SPEC.without_rule("decode_cuda_cores"),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_spec_mutant_is_caught_by_the_checker(observed, name):
    vs = [v for _, v in _verdicts(MUTANTS[name], observed)]
    cov = coverage(MUTANTS[name], vs)
    assert cov.failed, f"mutant '{name}' survives: every fake observation still passes"


LIFECYCLE_MUTANTS: dict[str, Any] = {
    "paged re-resolves": dict(
        sticky_apis=frozenset({"decode"}), re_resolve_every_eager_plan=frozenset({"paged", "ragged", "single"})
    ),
    "ragged mask cleared": dict(stale_mask_apis=frozenset()),
    "ragged fixed under graphs": dict(graph_mode_first_plan_decides=True),
    "a raising plan fixes the wrapper": dict(raised_plan_fixes_nothing=False),
}


@pytest.mark.parametrize("name", list(LIFECYCLE_MUTANTS))
def test_a_lifecycle_mutant_is_caught(lifecycles, name):
    spec = dataclasses.replace(SPEC, lifecycle=dataclasses.replace(SPEC.lifecycle, **LIFECYCLE_MUTANTS[name]))
    failed = []
    for key, (arch, cases, adapter, _) in LIFECYCLES.items():
        obs = lifecycles[key][1]
        queries = [
            query_from_case(
                c,
                RoutingEnv(arch=arch, graph_mode=adapter.get("graph", False)),
                use_tensor_cores=adapter.get("tensor_cores", False),
            )
            for c in cases
        ]
        failed += [v for v in (check(e, o) for e, o in zip(expected_sequence(spec, queries), obs)) if not v.passed]
    assert failed, f"lifecycle mutant '{name}' survives"


# ---- (b) against the library itself -------------------------------------------------------------

POS = ("NONE", "ROPE_LLAMA", "ALIBI")
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
HEAD_DIMS = ((64, 64), (128, 128), (256, 256), (192, 128), (96, 96), (128, 64), (192, 192))


@pytest.fixture(scope="module")
def real() -> SimpleNamespace:
    """flashinfer's utils/prefill/decode, or a skip saying why.

    An import that succeeds stays (re-importing the library would register its custom ops twice);
    the pieces of one that failed are dropped, so no half-imported package is left behind.
    """
    before = set(sys.modules)
    try:
        import flashinfer
        import flashinfer.decode as dec
        import flashinfer.prefill as pre
        import flashinfer.utils as utils
    except Exception as e:  # not installed (CI), or it fails to import on this machine
        for name in set(sys.modules) - before:
            if name == "flashinfer" or name.startswith("flashinfer."):
                del sys.modules[name]
        pytest.skip(
            f"flashinfer does not import here ({type(e).__name__}: {e}); the spec is compared with the "
            "library's own selector where flashinfer-python 0.7.2.post1 is installed"
        )
    if getattr(utils, "__file__", None) is None:
        pytest.skip("sys.modules['flashinfer'] is the CPU fake, not the library")
    if not str(flashinfer.__version__).startswith("0.7.2"):
        pytest.skip(f"the spec reads flashinfer-python 0.7.2.post1; this is {flashinfer.__version__}")
    return SimpleNamespace(utils=utils, prefill=pre, decode=dec, pos=utils.PosEncodingMode)


@pytest.fixture
def at_arch(real: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Any]:
    """Patch the library's compute-capability probe (and a CUDA new enough for every is_smXXa_supported)."""
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.delenv("FLASHINFER_RAGGED_AUTO_BACKEND_ORDER", raising=False)

    def set_arch(arch: str) -> Any:
        monkeypatch.setattr(real.utils, "get_compute_capability", lambda device: CAPABILITY[arch])
        return torch.device("cuda")

    return set_arch


def _lib_determine(real: SimpleNamespace, dev: Any, q: RoutingQuery, *, mask: bool, red: bool) -> str:
    return real.utils.determine_attention_backend(
        dev,
        real.pos[q.pos_encoding].value,
        red,
        mask,
        DTYPES[q.q_dtype],
        DTYPES[q.kv_dtype],
        head_dim_qk=q.head_dim_qk,
        head_dim_vo=q.head_dim_vo,
    )


@pytest.mark.parametrize("arch", ARCHS)
def test_prefill_and_single_agree_with_determine_attention_backend(real, at_arch, arch):
    """paged and single: the library's selector over pos x fp16 reduction x mask x dtypes x head dims."""
    dev = at_arch(arch)
    for pos, red, mask, (dq, dkv), (dqk, dvo) in itertools.product(
        POS, (False, True), (False, True), itertools.product(DTYPES, DTYPES), HEAD_DIMS
    ):
        q = RoutingQuery(
            api="paged",
            arch=arch,
            pos_encoding=pos,
            use_fp16_qk_reduction=red,
            custom_mask=mask,
            q_dtype=dq,
            kv_dtype=dkv,
            head_dim_qk=dqk,
            head_dim_vo=dvo,
        )
        lib = _lib_determine(real, dev, q, mask=mask, red=red)
        for api in ("paged", "single"):
            want = expected_route(SPEC, q.replace(api=api))
            assert want.backend == lib, (arch, api, pos, red, mask, dq, dkv, dqk, dvo, want.rule)


@pytest.mark.parametrize("arch", ARCHS)
def test_tensor_core_decode_agrees_with_the_library(real, at_arch, arch):
    """decode.py:2375-2391: fp8 anywhere -> the selector with no mask, no fp16 reduction, (d, d); else fa2."""
    dev = at_arch(arch)
    for pos, mask, (dq, dkv), d in itertools.product(
        POS, (False, True), itertools.product(DTYPES, DTYPES), (64, 128, 256, 96)
    ):
        q = RoutingQuery(
            api="decode",
            arch=arch,
            use_tensor_cores=True,
            pos_encoding=pos,
            custom_mask=mask,
            use_fp16_qk_reduction=True,
            q_dtype=dq,
            kv_dtype=dkv,
            head_dim_qk=d,
            head_dim_vo=d,
        )
        fp8 = dq in FP8 or dkv in FP8
        lib = _lib_determine(real, dev, q, mask=False, red=False) if fp8 else "fa2"
        assert expected_route(SPEC, q).backend == lib, (arch, pos, mask, dq, dkv, d)
        assert expected_route(SPEC, q.replace(use_tensor_cores=False)).backend == "fa2"


def _lib_ragged(real: SimpleNamespace, dev: Any, q: RoutingQuery) -> str:
    """prefill.py:5527-5631: the selector, then fmha_v2 (inline conditions :5553-5566), else the upgrade."""
    b = _lib_determine(real, dev, q, mask=q.custom_mask, red=q.use_fp16_qk_reduction)
    if b != "fa2":
        return b
    pos = real.pos[q.pos_encoding].value
    shape = (
        q.kv_layout == "NHD"
        and q.num_qo_heads == q.num_kv_heads
        and q.qo_lens == q.kv_lens
        and q.head_dim_qk == q.head_dim_vo
        and q.head_dim_qk in (64, 128, 256)
        and q.q_dtype == q.kv_dtype
        and q.use_fp16_qk_reduction
        and max(q.kv_lens) >= 256
        and q.window_left < 0
        and q.logits_soft_cap == 0
    )
    if shape and real.utils._should_use_fmha_v2_sm120(dev, pos, q.custom_mask, DTYPES[q.q_dtype], DTYPES[q.kv_dtype]):
        return "fmha_v2"
    qo_indptr = torch.tensor([0, *itertools.accumulate(q.qo_lens)], dtype=torch.int32)
    up = real.prefill._blackwell_ragged_auto_upgrade(
        dev,
        q.kv_layout,
        q.head_dim_qk,
        q.head_dim_vo,
        DTYPES[q.q_dtype],
        DTYPES[q.kv_dtype],
        DTYPES[q.o_dtype],
        pos,
        has_custom_mask=q.custom_mask,
        window_left=q.window_left,
        logits_soft_cap=q.logits_soft_cap,
        has_multi_item_scoring=False,
        has_sinks=False,
        cudnn_indptr_is_int32=True,
        cutlass_work_items=real.prefill._cutlass_plan_work_items(qo_indptr, q.num_qo_heads),
        cuda_graph_enabled=q.graph_mode,
        cutlass_indptr_is_int32=True,
        single_token_gqa=max(q.qo_lens) == 1 and q.num_qo_heads != q.num_kv_heads,
    )
    return up or b


RAGGED_SHAPES = (  # (qo_lens == kv_lens, heads): MHA, single-token GQA, long GQA, over CUTLASS's work capacity
    ((1, 1), (4, 4)),
    ((1, 1), (8, 2)),
    ((300, 7), (8, 2)),
    ((300, 7), (4, 4)),
    ((256 * 2048 + 1,), (64, 64)),
)
FEATURES = ("none", "mask", "window", "cap", "rope")


@pytest.mark.parametrize("arch", ARCHS)
def test_ragged_agrees_with_the_library_upgrades(real, at_arch, arch, monkeypatch):
    """Ragged on every arch: the selector, fmha_v2 on SM120 and the SM100 cudnn/cutlass walk."""
    dev = at_arch(arch)
    for direct in (False, True):
        monkeypatch.setattr(real.prefill, "_cudnn_supports_direct_seqlens", lambda dtype, mixed=False, d=direct: d)
        for layout, (dq, dkv, do), feature, (lens, (hq, hk)), (dqk, dvo), graph, red in itertools.product(
            ("NHD", "HND"),
            (
                ("bf16", "bf16", "bf16"),
                ("fp16", "fp16", "fp16"),
                ("bf16", "bf16", "fp16"),
                ("fp16", "e4m3fn", "fp16"),
                ("e4m3fn", "e4m3fn", "bf16"),
            ),
            FEATURES,
            RAGGED_SHAPES,
            HEAD_DIMS[:5],
            (False, True),
            (False, True),
        ):
            q = RoutingQuery(
                api="ragged",
                arch=arch,
                kv_layout=layout,
                q_dtype=dq,
                kv_dtype=dkv,
                o_dtype=do,
                custom_mask=feature == "mask",
                window_left=7 if feature == "window" else -1,
                logits_soft_cap=30.0 if feature == "cap" else 0.0,
                pos_encoding="ROPE_LLAMA" if feature == "rope" else "NONE",
                qo_lens=lens,
                kv_lens=lens,
                max_q_len=max(lens),
                max_kv_len=max(lens),
                num_qo_heads=hq,
                num_kv_heads=hk,
                head_dim_qk=dqk,
                head_dim_vo=dvo,
                graph_mode=graph,
                use_fp16_qk_reduction=red,
                cudnn_direct_seqlens=direct,
            )
            want = expected_route(SPEC, q)
            assert want.backend == _lib_ragged(real, dev, q), (
                arch,
                layout,
                dq,
                dkv,
                do,
                feature,
                lens,
                hq,
                hk,
                dqk,
                dvo,
                graph,
                red,
                direct,
                want.rule,
            )


def test_decode_cudnn_auto_never_takes_a_single_token_plan(real):
    """Why decode has no cudnn row: _auto_decode_prefers_cudnn (decode.py:665-815) at q_len_per_req == 1."""
    for cc, override, dt, d, (hq, hk), batch, page in itertools.product(
        ((10, 0), (10, 3)),
        ("", "1"),
        (torch.bfloat16, torch.float16),
        (128, 256),
        ((32, 8), (64, 4), (64, 1)),
        (64, 256),
        (16, 128),
    ):
        assert not real.decode._auto_decode_prefers_cudnn(
            compute_capability=cc,
            frontend_serves_frost_decode=True,
            cudnn_available=True,
            q_data_type=dt,
            kv_data_type=dt,
            o_data_type=dt,
            head_dim=d,
            num_qo_heads=hq,
            num_kv_heads=hk,
            batch_size=batch,
            page_size=page,
            pos_encoding_mode="NONE",
            window_left=-1,
            logits_soft_cap=0.0,
            q_len_per_req=1,
            fa2_available=True,
            frontend_leads_short_caches=True,
            frost_runtime_available=True,
            override=override,
        )
