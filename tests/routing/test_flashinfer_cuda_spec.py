"""The upstream FlashInfer CUDA routing specs (routing/specs/flashinfer_cuda.py), one per version, checked three ways.

(a) Against the CPU fake of the library (tests/kernels/fake_flashinfer.py), which copies
    upstream 0.7.2.post1's auto resolution, and 0.7.4's paged auto where `paged_auto_as_in_0_7_4` is on
    (0.7.4's other changes are SM100's, which the fake does not model): the architecture probe is patched
    to sm90 and to sm80, the real adapter (kernels.flashinfer.adapter, backend "auto") runs the quick
    matrix plus CRAFTED, and every observed decision must pass and be explained while every row is
    reached or named in CPU_UNREACHABLE. The lifecycle (sticky or re-resolved paged, a held graph
    wrapper, the stale ragged mask, a raising first plan) is checked on long-lived adapters the same way.
(b) Against the library itself where an installed flashinfer-python has a spec (not in CI): its own
    selector, the paged wrapper's resolution, the Blackwell ragged and paged upgrades and the decode
    cuDNN rule, with the compute-capability probe patched, over grids of queries.
(c) Spec mutants (a deleted per-arch row, flipped fa3 conditions, lifecycle flags) are caught by
    the checker on the fake's observations.
And the registry: the installed version picks its spec; a version without rows is unmodelled.
"""

from __future__ import annotations

import dataclasses
import inspect
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
from routing.specs import NAMES, TORCH_SDPA, flashinfer_cuda_spec, modelled_versions, spec_for, unmodelled_note
from routing.specs.flashinfer_cuda import (
    ARCHS,
    BY_VERSION,
    FA3_CAPABLE,
    FP8,
    NOT_DRIVEN_BY_ADAPTER,
    SPEC_072,
    SPEC_074,
    V072,
    V074,
)
from scenarios.case import Case
from scenarios.matrix import build
from scenarios.tensors import materialize

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kernels"))
import fake_flashinfer as ff  # noqa: E402

VERSIONS = tuple(BY_VERSION)
CAPABILITY = {"sm80": (8, 0), "sm90": (9, 0), "sm100": (10, 0), "sm120": (12, 0)}
FAKE_ARCHS = ("sm90", "sm80")

# Rows no run on the fake can reach, each with why; coverage must leave exactly these unreached.
CPU_UNREACHABLE_072 = {
    "ragged_fmha_v2": "the adapter never passes use_fp16_qk_reduction",
    "ragged_blackwell_cudnn": "the fake has no SM100 ragged upgrade (determine_attention_backend only)",
    "ragged_blackwell_cutlass": "the fake has no SM100 ragged upgrade (determine_attention_backend only)",
    "fa3_pos_encoding": "the adapter never passes pos_encoding_mode",
    "fa3_fp16_qk_reduction": "the adapter never passes use_fp16_qk_reduction",
}
CPU_UNREACHABLE = {
    V072: CPU_UNREACHABLE_072,
    V074: {
        **CPU_UNREACHABLE_072,
        "paged_blackwell_cudnn": "the fake has no SM100 paged upgrade",
        "decode_blackwell_cudnn": "the fake has no decode cuDNN auto",
        "paged_graph_held_fa3_refused": "a held graph wrapper's plan: LIFECYCLES reach it, a fresh adapter never",
        "paged_graph_held_fa2_fp8_query": "a held graph wrapper's plan: LIFECYCLES reach it, a fresh adapter never",
    },
}

_H = dict(num_qo_heads=4, num_kv_heads=2)
CRAFTED: dict[str, Case] = {
    "head dims fa3 lacks": Case("ragged", (5, 3), (9, 3), head_dim_qk=192, head_dim_vo=192, **_H),
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
    # either side of 0.7.4's paged short-query demotion (prefill.py:3275-3281 of 0.7.4)
    "paged, 64 query rows": Case("paged", (64,), (70,), head_dim_qk=64, head_dim_vo=64, page_size=16, **_H),
    "paged, 65 query rows": Case("paged", (65,), (70,), head_dim_qk=64, head_dim_vo=64, page_size=16, **_H),
    "paged, fp8 q and kv, 64 query rows": Case(
        "paged",
        (64,),
        (70,),
        head_dim_qk=128,
        head_dim_vo=128,
        page_size=16,
        q_dtype="e4m3fn",
        kv_dtype="e4m3fn",
        o_dtype="bf16",
        **_H,
    ),
}


@pytest.fixture(scope="module", autouse=True)
def _no_fake_left_behind() -> Iterator[None]:
    yield
    fl.lib_facts.cache_clear()


def _install_fake(mp: pytest.MonkeyPatch, arch: str, version: str, cudnn: bool = False) -> None:
    """The fake on `arch` as `version` resolves: is_sm90a_supported says what upstream's says of that
    (patched) compute capability."""
    cap = CAPABILITY[arch]
    mp.setattr(env, "device_capability", lambda device: cap)
    ff.install(mp, sm90=cap[0] == 9, cudnn=cudnn)
    if version == V074:
        ff.paged_auto_as_in_0_7_4(mp)
    fl.lib_facts.cache_clear()
    reset_seen()


def _adapter(*, tensor_cores: bool = False, graph: bool = False, backend: str = "auto") -> fi.FlashInferKernel:
    # A small workspace: the fake never reads it, and 128 MiB zeroed per adapter would dominate the test. One
    # graph wrapper across model configs ("any_model"): the library's own lifecycle, which the spec models.
    return fi.FlashInferKernel(
        backend,
        "cpu",
        graph=graph,
        graphs=ff.FakeGraphs(),
        options=fi.AdapterOptions(decode_tensor_cores=tensor_cores, workspace_bytes=1024, graph_wrappers="any_model"),
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


def _observe_all(version: str) -> list[tuple[str, RoutingQuery, ObservedRoute]]:
    """(label, query, observation) for every supported case on a FRESH auto adapter, per arch and decode mode."""
    out = []
    for arch in FAKE_ARCHS:
        with pytest.MonkeyPatch.context() as mp:
            _install_fake(mp, arch, version)
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
            _install_fake(mp, arch, version, cudnn=True)
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


Observed = list[tuple[str, RoutingQuery, ObservedRoute]]


@pytest.fixture(scope="module")
def observed() -> Callable[[str], Observed]:
    """The fake's observations as `version` resolves (each version's computed once per module)."""
    cache: dict[str, Observed] = {}

    def get(version: str) -> Observed:
        if version not in cache:
            cache[version] = _observe_all(version)
        return cache[version]

    return get


def _verdicts(spec: RoutingSpec, observed: list) -> list:
    return [(label, check(expected_route(spec, q), o)) for label, q, o in observed]


# ---- the spec's own shape -----------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_spec_is_registered_cites_its_versions_source_and_never_expects_none(version):
    """Upstream gives no reason: every row says NOT_REPORTED, never None; every row cites file:line of
    this version's wheel (a row both versions share cites both)."""
    spec = BY_VERSION[version]
    assert flashinfer_cuda_spec(version) is spec and spec_for("flashinfer_cuda", version) is spec
    assert spec.version == version and spec.library == "flashinfer-cuda" and version in spec.title
    assert all(r.expect_reason is NOT_REPORTED for r in spec.rules)
    cited = re.compile(re.escape(version) + r" [^;]*?\b(prefill|decode|utils)\.py:\d+")
    bad = [r.name for r in spec.rules if not cited.search(r.source)]
    assert not bad, f"rows without a file:line source of {version}: {bad}"
    assert set(NOT_DRIVEN_BY_ADAPTER) <= set(CPU_UNREACHABLE[version]) <= {r.name for r in spec.rules}


def test_a_version_picks_its_own_rows_and_one_without_rows_is_unmodelled():
    """Exact measured versions only: a patch release, a local build tag or an unknown version has no
    spec (unmodelled), never the nearest version's rows."""
    assert modelled_versions("flashinfer_cuda") == (V072, V074) and "flashinfer_cuda" in NAMES
    assert spec_for("flashinfer-cuda", V072) is SPEC_072 and spec_for("flashinfer_cuda", V074) is SPEC_074
    for other in ("0.7.3", "0.7.4.post1", "0.7.4+cu130", "0.7.2", "unknown", None):
        assert flashinfer_cuda_spec(other) is None, other
    assert spec_for("torch", "2.13.0") is TORCH_SDPA and spec_for("torch_sdpa") is TORCH_SDPA
    with pytest.raises(KeyError):
        spec_for("flashinfer_cud", V074)
    note = unmodelled_note("flashinfer_cuda", "0.7.5")
    assert "flashinfer-cuda 0.7.5" in note and f"{V072}, {V074}" in note and "not checked" in note


@pytest.mark.parametrize("version", VERSIONS)
def test_an_arch_outside_the_tables_is_a_gap_not_a_guess(version):
    spec = BY_VERSION[version]
    q = RoutingQuery(api="paged", arch="sm89")
    assert expected_route(spec, q).gap == SpecGap("fa3_capable", "sm89")
    assert expected_route(spec, q.replace(api="ragged")).gap is not None
    # Rows that read no table hold on any arch: decode without tensor cores is the CUDA-core kernel.
    assert expected_route(spec, q.replace(api="decode")).backend == "fa2"
    v = check(expected_route(spec, q), ObservedRoute("fa2", NOT_REPORTED))
    assert v.status == "spec_gap" and coverage(spec, [v]).unexplained == (v,)


# ---- (a) against the fake -----------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_every_observed_decision_passes_and_is_explained(observed, version):
    obs = observed(version)
    assert len(obs) >= 120, "the quick matrix should give the auto adapter most of its cases"
    vs = _verdicts(BY_VERSION[version], obs)
    bad = [f"{label}: {v.status} ({v.detail}); rule {v.expected.rule}" for label, v in vs if not v.passed]
    assert not bad, "\n".join(bad)
    cov = coverage(BY_VERSION[version], [v for _, v in vs])
    assert cov.unexplained == () and cov.failed == ()


@pytest.mark.parametrize("version,row", [(v, r.name) for v in VERSIONS for r in BY_VERSION[v].rules])
def test_every_row_is_reached_or_named_cpu_unreachable(observed, version, row):
    spec = BY_VERSION[version]
    cov = coverage(spec, [v for _, v in _verdicts(spec, observed(version))])
    if row in CPU_UNREACHABLE[version]:
        assert row in cov.unreached, f"{row} was reached on the fake: drop it from CPU_UNREACHABLE"
    else:
        assert row not in cov.unreached, f"no passing observation on the fake reached row {row!r}"


@pytest.mark.parametrize("version", VERSIONS)
def test_both_architectures_were_driven(observed, version):
    """sm90 resolves some plan to fa3; sm80 none (is_sm90a_supported is the first test, utils.py:616)."""
    by_arch = {a: {o.backend for label, _, o in observed(version) if label.startswith(a)} for a in FAKE_ARCHS}
    assert "fa3" in by_arch["sm90"] and "fa3" not in by_arch["sm80"]


def test_only_0_7_4_demotes_a_short_paged_batch(observed):
    """The change the H200 showed: paged auto at 64 query rows runs fa2 on 0.7.4 where 0.7.2.post1 ran fa3."""
    for version, at_64 in ((V072, "fa3"), (V074, "fa2")):
        got = {label: o.backend for label, _, o in observed(version) if label.startswith("sm90 paged, ")}
        assert got == {
            "sm90 paged, 64 query rows": at_64,
            "sm90 paged, 65 query rows": "fa3",
            "sm90 paged, fp8 q and kv, 64 query rows": "fa3",  # an fp8 query is never demoted (:3277)
        }, version


def _queries(arch: str, cases: list[Case], adapter: dict) -> list[RoutingQuery]:
    env = RoutingEnv(arch=arch, graph_mode=adapter.get("graph", False))
    return [query_from_case(c, env, use_tensor_cores=adapter.get("tensor_cores", False)) for c in cases]


def _sequence(version: str, arch: str, cases: list[Case], **adapter: Any) -> tuple[list[Any], list[Any]]:
    """(expected, observed) for successive plans of ONE long-lived auto adapter on the fake."""
    with pytest.MonkeyPatch.context() as mp:
        _install_fake(mp, arch, version)
        a = _adapter(**adapter)
        obs = [_observe(a, c) for c in cases]
        exp = expected_sequence(BY_VERSION[version], _queries(arch, cases, adapter))
    fl.lib_facts.cache_clear()
    return exp, obs


_P = Case("paged", (3, 6), (11, 6), head_dim_qk=64, head_dim_vo=64, page_size=5, causal=True, **_H)
_PL = _P.replace(qo_lens=(65,), kv_lens=(70,))  # longer than 0.7.4's paged short-query demotion
_R = Case("ragged", (5, 9), (12, 9), head_dim_qk=64, head_dim_vo=64, **_H)
# One graph wrapper (keyed by API, KV layout, batch size and mask kind: "any_model") whose later plans
# need no more query rows than its first: the adapter would make a new wrapper for more.
_G64 = Case("paged", (64, 64), (70, 70), head_dim_qk=64, head_dim_vo=64, page_size=5, causal=True, **_H)
_G65 = _G64.replace(qo_lens=(65, 63))
# name -> (arch, cases, adapter options, {version: outcomes}); a version left out has no such lifecycle.
LIFECYCLES: dict[str, tuple[str, list[Case], dict, dict[str, list[str]]]] = {
    # paged: 0.7.2.post1's first plan decides, a mask or an fa3-less head dim later changes nothing
    # (prefill.py:3669); 0.7.4 resolves every plan (prefill.py:3812-3832).
    "paged sticky": (
        "sm90",
        [_PL, _PL.replace(mask="custom"), _PL.replace(head_dim_qk=192, head_dim_vo=192), _P],
        {},
        {V072: ["fa3", "fa3", "fa3", "fa3"], V074: ["fa3", "fa2", "fa2", "fa2"]},
    ),
    # a plan that raises (empty batch) fixes nothing: the next plan decides.
    "paged raise then plan": (
        "sm90",
        [Case("paged", (), (), page_size=5, **_H), _P.replace(mask="custom"), _PL],
        {},
        {V072: ["RuntimeError", "fa2", "fa2"], V074: ["RuntimeError", "fa2", "fa3"]},
    ),
    # 0.7.4: a graph wrapper keeps its first fa2/fa3 plan's backend (prefill.py:4540-4547): a short first
    # plan holds fa2 for a long one; an fp8 query then is refused (:3258-3269).
    "paged graph held on fa2": (
        "sm90",
        [_G64, _G65, _G65.replace(q_dtype="e4m3fn", kv_dtype="e4m3fn", o_dtype="bf16")],
        {"graph": True},
        {V074: ["fa2", "fa2", "ValueError"]},
    ),
    # ... a long first plan holds fa3 for a short one; a plan the selector answers fa2 is refused (:3255-3269)
    # and leaves the hold as it was.
    "paged graph held on fa3": (
        "sm90",
        [_G65, _G64, _G65.replace(head_dim_qk=192, head_dim_vo=192), _G65],
        {"graph": True},
        {V074: ["fa3", "fa3", "ValueError", "fa3"]},
    ),
    # ragged: every plan re-resolves, but a mask once given stays (prefill.py:5295-5300, :6129-6135).
    "ragged stale mask": (
        "sm90",
        [_R, _R.replace(mask="custom"), _R, _R.replace(head_dim_qk=192, head_dim_vo=192)],
        {},
        {v: ["fa3", "fa2", "fa2", "fa2"] for v in VERSIONS},
    ),
    # ragged under graphs still re-resolves; the graph wrapper's mask is fixed at construction.
    "ragged graph re-resolves": (
        "sm90",
        [_R, _R.replace(head_dim_qk=192, head_dim_vo=192), _R],
        {"graph": True},
        {v: ["fa3", "fa2", "fa3"] for v in VERSIONS},
    ),
    # decode with tensor cores: the first plan decides (decode.py:2375, :2795).
    "decode tensor cores sticky": (
        "sm90",
        [CRAFTED["decode, fp8 q and kv"], CRAFTED["decode, 16-bit"]],
        {"tensor_cores": True},
        {v: ["fa3", "fa3"] for v in VERSIONS},
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
        {v: ["fa3", "fa2", "fa3"] for v in VERSIONS},
    ),
}
LIFECYCLE_RUNS = [(v, name) for name, (_, _, _, want) in LIFECYCLES.items() for v in want]


def _outcome(x: Any) -> str:
    return x.raises if getattr(x, "raises", None) else x.raised if getattr(x, "raised", None) else x.backend


@pytest.fixture(scope="module")
def lifecycles() -> dict[tuple[str, str], tuple[list[Any], list[Any]]]:
    return {(v, name): _sequence(v, *LIFECYCLES[name][:2], **LIFECYCLES[name][2]) for v, name in LIFECYCLE_RUNS}


@pytest.mark.parametrize("version,name", LIFECYCLE_RUNS)
def test_lifecycle_matches_the_library_on_a_long_lived_wrapper(lifecycles, version, name):
    want = LIFECYCLES[name][3][version]
    exp, obs = lifecycles[(version, name)]
    assert [_outcome(o) for o in obs] == want, "the fake no longer behaves as this test was written for"
    verdicts = [check(e, o) for e, o in zip(exp, obs)]
    assert all(v.passed for v in verdicts), [(v.status, v.detail) for v in verdicts]


# ---- 0.7.4's SM100 rows, which the fake cannot reach: the lifecycle the source reads ----------------

_SM100 = RoutingEnv(arch="sm100", cudnn_paged_auto=True, cudnn_decode_auto=True)
# _blackwell_paged_auto_cudnn's prefix domain: bf16 d128 HND, page 16, 8..64 q heads, enough work.
_PAGED_CUDNN = Case(
    "paged", (128,), (4096,), num_qo_heads=32, num_kv_heads=8, page_size=16, kv_layout="HND", causal=True
)
# _auto_decode_prefers_cudnn's single-token band: head dim 256, group 4, 32 x 4 = 128 units.
_DECODE_CUDNN = Case(
    "decode",
    (1,) * 32,
    (2048,) * 32,
    num_qo_heads=16,
    num_kv_heads=4,
    head_dim_qk=256,
    head_dim_vo=256,
    page_size=16,
)


def _expected_074(cases: list[Case], graph: bool = False, tensor_cores: bool = False) -> list[str]:
    env = dataclasses.replace(_SM100, graph_mode=graph)
    qs = [query_from_case(c, env, use_tensor_cores=tensor_cores) for c in cases]
    return [_outcome(e) for e in expected_sequence(SPEC_074, qs)]


def test_0_7_4_sm100_cudnn_picks_hold_nothing():
    """A paged cuDNN pick sets no `_cuda_graph_backend` (prefill.py:4544: fa2/fa3 only) and leaves
    `_plan_info` unset, so a graph wrapper's next plan resolves afresh; its first fa2 plan then holds fa2
    (cuDNN needs `_plan_info is None`, :3957). Eager plans each resolve. Decode's cuDNN is decided per plan
    (decode.py:2395-2397) and leaves a tensor-core wrapper's `_backend` as it was."""
    off = _PAGED_CUDNN.replace(causal=False)  # the paged upgrade needs causal (:3958)
    assert _outcome(expected_route(SPEC_074, query_from_case(_PAGED_CUDNN, _SM100))) == "cudnn"
    assert _expected_074([_PAGED_CUDNN, _PAGED_CUDNN, off, _PAGED_CUDNN], graph=True) == [
        "cudnn",
        "cudnn",
        "fa2",
        "fa2",
    ]
    assert _expected_074([_PAGED_CUDNN, off, _PAGED_CUDNN]) == ["cudnn", "fa2", "cudnn"]
    d128 = _DECODE_CUDNN.replace(head_dim_qk=128, head_dim_vo=128)  # single-token d128: never cuDNN
    assert _expected_074([d128, _DECODE_CUDNN, d128], tensor_cores=True) == ["fa2", "cudnn", "fa2"]
    assert _expected_074([_DECODE_CUDNN, _DECODE_CUDNN], graph=True) == ["fa2", "fa2"]  # decode.py:1701-1706
    assert expected_route(SPEC_072, query_from_case(_DECODE_CUDNN, _SM100)).backend == "fa2"


# ---- (c) spec mutants ---------------------------------------------------------------------------


def _with_rule(spec: RoutingSpec, name: str, when: Callable[[RoutingQuery, Any], bool]) -> RoutingSpec:
    rules = tuple(dataclasses.replace(r, when=when) if r.name == name else r for r in spec.rules)
    return dataclasses.replace(spec, rules=rules)


def _auto(p: Callable[[RoutingQuery], bool]) -> Callable[[RoutingQuery, Any], bool]:
    return lambda q, c: q.requested == "auto" and p(q)


MUTANTS: dict[str, RoutingSpec] = {
    "sm90 row deleted from fa3_capable": SPEC_072.with_table(FA3_CAPABLE.without("sm90")),
    "fa3 on sm80": SPEC_072.with_table(FA3_CAPABLE.with_row("sm80", True)),
    "custom-mask condition flipped": _with_rule(SPEC_072, "fa3_custom_mask", _auto(lambda q: not q.custom_mask)),
    "fp8-KV condition flipped (fp8 q under 16-bit kv)": _with_rule(
        SPEC_072, "fa3_fp8_kv_needs_fp8_q", _auto(lambda q: q.q_dtype in FP8 and q.kv_dtype not in FP8)
    ),
    "head-dim check dropped": _with_rule(SPEC_072, "fa3_head_dims", lambda q, c: False),
    "decode without tensor cores resolves like prefill": SPEC_072.without_rule("decode_cuda_cores"),
    "0.7.4: the short-query demotion dropped": SPEC_074.without_rule("paged_short_query_fa2"),
    "0.7.4 read as 0.7.2.post1": dataclasses.replace(SPEC_074, rules=SPEC_072.rules),
    "0.7.2.post1 judged by 0.7.4's spec": dataclasses.replace(SPEC_074, version=V072),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_spec_mutant_is_caught_by_the_checker(observed, name):
    mutant = MUTANTS[name]
    vs = [v for _, v in _verdicts(mutant, observed(mutant.version))]
    cov = coverage(mutant, vs)
    assert cov.failed, f"mutant '{name}' survives: every fake observation still passes"


LIFECYCLE_MUTANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "paged re-resolves": (
        V072,
        dict(sticky_apis=frozenset({"decode"}), re_resolve_every_eager_plan=frozenset({"paged", "ragged", "single"})),
    ),
    "ragged mask cleared": (V072, dict(stale_mask_apis=frozenset())),
    "ragged fixed under graphs": (V072, dict(graph_mode_first_plan_decides=True)),
    "a raising plan fixes the wrapper": (V072, dict(raised_plan_fixes_nothing=False)),
    "0.7.4: paged sticky": (V074, dict(sticky_apis=frozenset({"paged", "decode"}))),
    "0.7.4: a paged graph wrapper not held": (V074, dict(graph_held_apis=frozenset())),
    "0.7.4: a held graph wrapper refuses nothing": (V074, dict(held_rules=frozenset())),
    "0.7.4: ragged mask cleared": (V074, dict(stale_mask_apis=frozenset())),
}


@pytest.mark.parametrize("name", list(LIFECYCLE_MUTANTS))
def test_a_lifecycle_mutant_is_caught(lifecycles, name):
    version, flags = LIFECYCLE_MUTANTS[name]
    base = BY_VERSION[version]
    spec = dataclasses.replace(base, lifecycle=dataclasses.replace(base.lifecycle, **flags))
    failed = []
    for v, key in LIFECYCLE_RUNS:
        if v != version:
            continue
        arch, cases, adapter, _ = LIFECYCLES[key]
        obs = lifecycles[(v, key)][1]
        exp = expected_sequence(spec, _queries(arch, cases, adapter))
        failed += [r for r in (check(e, o) for e, o in zip(exp, obs)) if not r.passed]
    assert failed, f"lifecycle mutant '{name}' survives"


# ---- (b) against the library itself -------------------------------------------------------------

POS = ("NONE", "ROPE_LLAMA", "ALIBI")
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
HEAD_DIMS = ((64, 64), (128, 128), (256, 256), (192, 128), (96, 96), (128, 64), (192, 192))
# Paged query lengths either side of 0.7.4's short-query demotion, and a batch whose requests have no rows.
PAGED_QO_LENS = ((1,), (64,), (65,), (64, 65), (0, 3), (0,))


@pytest.fixture(scope="module")
def real() -> SimpleNamespace:
    """flashinfer's utils/prefill/decode and the spec of its version, or a skip saying why.

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
            f"flashinfer does not import here ({type(e).__name__}: {e}); each spec is compared with the "
            f"library's own selector where flashinfer-python {' or '.join(VERSIONS)} is installed"
        )
    if getattr(utils, "__file__", None) is None:
        pytest.skip("sys.modules['flashinfer'] is the CPU fake, not the library")
    version = str(flashinfer.__version__)
    if version not in BY_VERSION:
        pytest.skip(f"flashinfer-python {version} has no spec (rows for {', '.join(VERSIONS)}): unmodelled")
    return SimpleNamespace(
        utils=utils, prefill=pre, decode=dec, pos=utils.PosEncodingMode, spec=BY_VERSION[version], version=version
    )


@pytest.fixture
def at_arch(real: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Any]:
    """Patch the library's compute-capability probe (and a CUDA new enough for every is_smXXa_supported);
    0.7.4 caches the is_smXXa_supported answers, so their caches are cleared around each arch."""
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.delenv("FLASHINFER_RAGGED_AUTO_BACKEND_ORDER", raising=False)
    monkeypatch.delenv("FLASHINFER_DECODE_AUTO_CUDNN", raising=False)
    cached = [f for n, f in vars(real.utils).items() if n.startswith("is_sm") and hasattr(f, "cache_clear")]

    def set_arch(arch: str) -> Any:
        for module in (real.utils, real.prefill):
            if hasattr(module, "get_compute_capability"):
                monkeypatch.setattr(module, "get_compute_capability", lambda device: CAPABILITY[arch])
        for f in cached:
            f.cache_clear()
        return torch.device("cuda")

    yield set_arch
    for f in cached:
        f.cache_clear()


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


def _indptr(lens: tuple[int, ...]) -> torch.Tensor:
    return torch.tensor([0, *itertools.accumulate(lens)], dtype=torch.int32)


def _lib_paged(real: SimpleNamespace, dev: Any, q: RoutingQuery) -> str:
    """A fresh eager paged wrapper's resolution: 0.7.4's `_determine_auto_backend` (prefill.py:3232-3282),
    else the selector itself (0.7.2.post1, prefill.py:3669-3678)."""
    resolve = getattr(real.prefill.BatchPrefillWithPagedKVCacheWrapper, "_determine_auto_backend", None)
    if resolve is None:
        return _lib_determine(real, dev, q, mask=q.custom_mask, red=q.use_fp16_qk_reduction)
    fresh = SimpleNamespace(device=dev, _cuda_graph_backend=None)
    return resolve(
        fresh,
        _indptr(q.qo_lens),
        real.pos[q.pos_encoding].value,
        q.use_fp16_qk_reduction,
        q.custom_mask,
        DTYPES[q.q_dtype],
        DTYPES[q.kv_dtype],
        q.head_dim_qk,
        q.head_dim_vo,
    )


@pytest.mark.parametrize("arch", ARCHS)
def test_prefill_and_single_agree_with_the_library(real, at_arch, arch):
    """single: the library's selector; paged: the wrapper's resolution; over pos x fp16 reduction x mask x
    dtypes x head dims (x query lengths for paged)."""
    dev = at_arch(arch)
    for pos, red, mask, (dq, dkv), (dqk, dvo) in itertools.product(
        POS, (False, True), (False, True), itertools.product(DTYPES, DTYPES), HEAD_DIMS
    ):
        q = RoutingQuery(
            api="single",
            arch=arch,
            pos_encoding=pos,
            use_fp16_qk_reduction=red,
            custom_mask=mask,
            q_dtype=dq,
            kv_dtype=dkv,
            head_dim_qk=dqk,
            head_dim_vo=dvo,
        )
        want = expected_route(real.spec, q)
        assert want.backend == _lib_determine(real, dev, q, mask=mask, red=red), (arch, pos, red, mask, dq, dkv, dqk)
        for lens in PAGED_QO_LENS:
            p = q.replace(api="paged", qo_lens=lens, kv_lens=(70,) * len(lens), max_q_len=max(lens), max_kv_len=70)
            want = expected_route(real.spec, p)
            assert want.backend == _lib_paged(real, dev, p), (arch, pos, red, mask, dq, dkv, dqk, dvo, lens, want.rule)


def _lib_paged_cudnn(real: SimpleNamespace, dev: Any, q: RoutingQuery) -> bool:
    """0.7.4's paged cuDNN upgrade of an fa2 answer: plan()'s own conditions (prefill.py:3952-3975, those
    the adapter's plans can vary), then _blackwell_paged_auto_cudnn (:2520-2586) on host lengths."""
    if _lib_paged(real, dev, q) != "fa2":
        return False
    if not (
        q.causal
        and q.pos_encoding == "NONE"
        and not q.use_fp16_qk_reduction
        and not q.custom_mask
        and q.window_left == -1
        and q.logits_soft_cap == 0
    ):
        return False
    return bool(
        real.prefill._blackwell_paged_auto_cudnn(
            dev,
            q.kv_layout,
            DTYPES[q.q_dtype],
            DTYPES[q.kv_dtype],
            DTYPES[q.o_dtype],
            q.head_dim_qk,
            q.head_dim_vo,
            q.batch_size,
            q.num_qo_heads,
            q.num_kv_heads,
            q.max_q_len,
            q.max_kv_len,
            q.page_size,
            sum(q.qo_lens),
            _indptr(q.qo_lens),
            torch.tensor(q.kv_lens, dtype=torch.int32),
        )
    )


PAGED_CUDNN_SHAPES = (  # (qo_lens, kv_lens): prefix, full, mixed, short, too little work, too many requests
    ((128,), (4096,)),
    ((1024,), (1024,)),
    ((1024, 512), (1024, 1024)),
    ((2048, 2048), (2048, 2048)),
    ((64,), (2048,)),
    ((32,), (4096,)),
    ((128,) * 5, (4096,) * 5),
    ((256, 64), (8192, 2048)),
)


@pytest.mark.parametrize("arch", ARCHS)
def test_paged_blackwell_cudnn_agrees_with_the_library(real, at_arch, arch, monkeypatch):
    """0.7.4's paged cuDNN pick (absent from 0.7.2.post1) over layouts, dtypes, head dims, heads, pages,
    features and lengths, with cuDNN's paged-auto support (an install fact) either way."""
    if not hasattr(real.prefill, "_blackwell_paged_auto_cudnn"):
        assert "paged_blackwell_cudnn" not in {r.name for r in real.spec.rules}
        pytest.skip(f"flashinfer-python {real.version} has no paged cuDNN upgrade")
    dev = at_arch(arch)
    for supported in (False, True):
        monkeypatch.setattr(real.prefill, "_cudnn_supports_paged_auto", lambda s=supported: s)
        for layout, (dq, dkv, do), feature, (qo, kv), (hq, hk), (dqk, dvo), page in itertools.product(
            ("NHD", "HND"),
            (("bf16", "bf16", "bf16"), ("fp16", "fp16", "fp16"), ("bf16", "bf16", "fp16")),
            ("causal", "none", "window", "mask", "cap"),
            PAGED_CUDNN_SHAPES,
            ((32, 8), (64, 64), (4, 4), (96, 8), (24, 8)),
            ((128, 128), (64, 64)),
            (16, 8),
        ):
            q = RoutingQuery(
                api="paged",
                arch=arch,
                kv_layout=layout,
                q_dtype=dq,
                kv_dtype=dkv,
                o_dtype=do,
                causal=feature != "none",
                custom_mask=feature == "mask",
                window_left=7 if feature == "window" else -1,
                logits_soft_cap=30.0 if feature == "cap" else 0.0,
                qo_lens=qo,
                kv_lens=kv,
                max_q_len=max(qo),
                max_kv_len=max(kv),
                num_qo_heads=hq,
                num_kv_heads=hk,
                head_dim_qk=dqk,
                head_dim_vo=dvo,
                page_size=page,
                cudnn_paged_auto=supported,
            )
            want = expected_route(real.spec, q)
            lib = _lib_paged_cudnn(real, dev, q)
            assert (want.backend == "cudnn") == lib, (
                arch,
                supported,
                layout,
                dq,
                do,
                feature,
                qo,
                kv,
                hq,
                hk,
                dqk,
                page,
            )


@pytest.mark.parametrize("arch", ARCHS)
def test_tensor_core_decode_agrees_with_the_library(real, at_arch, arch):
    """decode.py:2375-2391 (:2795-2811): fp8 anywhere -> the selector with no mask, no fp16 reduction, (d, d);
    else fa2."""
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
        assert expected_route(real.spec, q).backend == lib, (arch, pos, mask, dq, dkv, d)
        assert expected_route(real.spec, q.replace(use_tensor_cores=False)).backend == "fa2"


def _lib_ragged(real: SimpleNamespace, dev: Any, q: RoutingQuery) -> str:
    """prefill.py:5527-5631 (:6389-6496): the selector, then fmha_v2 (inline conditions), else the upgrade."""
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
    upgrade = real.prefill._blackwell_ragged_auto_upgrade
    gqa = max(q.qo_lens) == 1 and q.num_qo_heads != q.num_kv_heads
    if "single_token_gqa" in inspect.signature(upgrade).parameters:  # 0.7.2.post1, prefill.py:5626-5628
        gqa_kw = {"single_token_gqa": gqa}
    else:  # 0.7.4, prefill.py:6488-6493
        empty_rows = sum(q.qo_lens) != q.batch_size and q.cudnn_single_token_gqa_stats_broken
        gqa_kw = {"single_token_gqa_with_empty_rows": gqa and empty_rows}
    up = upgrade(
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
        cutlass_work_items=real.prefill._cutlass_plan_work_items(_indptr(q.qo_lens), q.num_qo_heads),
        cuda_graph_enabled=q.graph_mode,
        cutlass_indptr_is_int32=True,
        **gqa_kw,
    )
    return up or b


# (qo_lens == kv_lens, heads): MHA, single-token GQA (also with a request of no rows), long GQA, past CUTLASS's capacity
RAGGED_SHAPES = (
    ((1, 1), (4, 4)),
    ((1, 1), (8, 2)),
    ((1, 0), (8, 2)),
    ((300, 7), (8, 2)),
    ((300, 7), (4, 4)),
    ((256 * 2048 + 1,), (64, 64)),
)
FEATURES = ("none", "mask", "window", "cap", "rope")


@pytest.mark.parametrize("arch", ARCHS)
def test_ragged_agrees_with_the_library_upgrades(real, at_arch, arch, monkeypatch):
    """Ragged on every arch: the selector, fmha_v2 on SM120 and the SM100 cudnn/cutlass walk."""
    dev = at_arch(arch)
    for direct, broken in itertools.product((False, True), (False, True)):
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
                cudnn_single_token_gqa_stats_broken=broken,
            )
            want = expected_route(real.spec, q)
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
                broken,
                want.rule,
            )


@pytest.mark.parametrize("arch", ARCHS)
def test_decode_cudnn_auto_agrees_with_the_library_at_one_query_row(real, at_arch, arch):
    """_auto_decode_prefers_cudnn (0.7.2.post1 decode.py:665-815, 0.7.4 :683-871) at q_len_per_req == 1, the
    adapter's only decode: never on 0.7.2.post1; 0.7.4's head-dim-256 band only."""
    at_arch(arch)
    kw = dict(
        frontend_serves_frost_decode=True,
        cudnn_available=True,
        pos_encoding_mode="NONE",
        logits_soft_cap=0.0,
        q_len_per_req=1,
        fa2_available=True,
        frontend_leads_short_caches=True,
        frost_runtime_available=True,
        override="",
    )
    for dt, d, (hq, hk), batch, page, window in itertools.product(
        ("bf16", "fp16"),
        (128, 256),
        ((32, 8), (64, 4), (64, 1), (16, 4), (64, 16), (12, 4)),
        (16, 24, 64, 256),
        (16, 128, 12),
        (-1, 7),
    ):
        lib = real.decode._auto_decode_prefers_cudnn(
            compute_capability=CAPABILITY[arch],
            q_data_type=DTYPES[dt],
            kv_data_type=DTYPES[dt],
            o_data_type=DTYPES[dt],
            head_dim=d,
            num_qo_heads=hq,
            num_kv_heads=hk,
            batch_size=batch,
            page_size=page,
            window_left=window,
            **kw,
        )
        case = Case(
            "decode",
            (1,) * batch,
            (33,) * batch,
            num_qo_heads=hq,
            num_kv_heads=hk,
            head_dim_qk=d,
            head_dim_vo=d,
            page_size=page,
            window_left=window,
            q_dtype=dt,
            kv_dtype=dt,
            o_dtype=dt,
        )
        q = query_from_case(case, RoutingEnv(arch=arch, cudnn_decode_auto=True))
        assert (expected_route(real.spec, q).backend == "cudnn") == lib, (arch, dt, d, hq, hk, batch, page, window)
