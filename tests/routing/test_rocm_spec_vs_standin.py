"""The ROCm fork's routing spec (routing/specs/flashinfer_rocm.py) checked both ways against the fork.

Observations come from the fork driven through the flashinfer adapter on a patched architecture
and AITER install, the way the fork's own GPU-free tests patch `_device_arch` and
`_aiter_ops_importable` (rocm_fork.md section 5): against the library where it imports (a ROCm
machine with the fork; only the architecture is patched there), against its CPU stand-in
(kernels/standins/rocm_flashinfer/) where it does not. supports() is bypassed, so what is observed
is the library's own choice or refusal. The few rows no Case can express (both length gates,
RoPE, decode's max_seq_len) are driven on the wrappers directly ("direct" scenarios).

Both ways: every observation passes and is explained by a row (routing.check.coverage), and every
row is reached by a passing observation, except NOT_CONFIRMABLE, each with why. A stand-in
observation checks the spec against the document the stand-in was built from; it is never a
conformance result for the fork.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

import pytest
import torch

import kernels.flashinfer.adapter as fi
import kernels.flashinfer.lib as fl
from kernels.flashinfer.variants import reset_seen
from kernels.protocol import Support
from kernels.standin_label import standin_of
from kernels.standins.rocm_fork import RecordedGraphs, installed
from routing import reasons as R
from routing.check import ObservedRoute, RoutingVerdict, check, coverage
from routing.spec import RoutingEnv, expected_route, expected_sequence, query_from_case
from routing.specs.flashinfer_rocm import SPEC
from scenarios.case import Case
from scenarios.tensors import materialize

H = dict(num_qo_heads=4, num_kv_heads=2, head_dim_qk=64, head_dim_vo=64)
CAP = dict(num_qo_heads=2, num_kv_heads=1, head_dim_qk=128, head_dim_vo=128, causal=True, logits_soft_cap=30.0)
T_FLAT = {"gfx942": 16, "gfx950": 8}
NATIVE_FP8 = {"gfx942": "e4m3fnuz", "gfx950": "e4m3fn"}
OTHER_FP8 = {"gfx942": "e4m3fn", "gfx950": "e4m3fnuz"}

# Rows no observation can confirm through the adapter on a CPU, and why.
NOT_CONFIRMABLE = {
    "single_bootstrap_failed": "single prefill exposes no reason (the adapter reports NOT_REPORTED) and the row "
    "expects None; its backend (fa2) is checked in test_single_prefill_backends",
}


def paged(qo: tuple = (3, 40), kv: tuple = (11, 60), page: int = 5, **kw: Any) -> Case:
    return Case("paged", qo, kv, page_size=page, **{"causal": True, **H, **kw})


def ragged(qo: tuple = (5, 40), kv: tuple = (12, 60), **kw: Any) -> Case:
    return Case("ragged", qo, kv, **{**H, **kw})


def fp8(arch: str, wrong: bool = False) -> dict:
    d = (OTHER_FP8 if wrong else NATIVE_FP8)[arch]
    return dict(q_dtype=d, kv_dtype=d, o_dtype="bf16")


DECODE = Case("decode", (1, 1), (9, 30), page_size=4, **H)


@dataclass(frozen=True)
class Install:
    """The patched machine: what kernels.standins.rocm_fork.install() takes."""

    arch: str = "gfx942"
    aiter: str = "importable"
    bootstrap_ok: bool = True
    native_paging_ok: bool = True

    def env(self, graph: bool) -> RoutingEnv:
        # a failed bootstrap also fails the native-paging probe: it launches the same kernels
        return RoutingEnv(
            arch=self.arch,
            aiter_install=self.aiter,
            graph_mode=graph,
            bootstrap_ok=self.bootstrap_ok,
            native_paging_ok=self.native_paging_ok and self.bootstrap_ok,
        )

    @property
    def plain(self) -> bool:
        return (self.aiter, self.bootstrap_ok, self.native_paging_ok) == ("importable", True, True)


@dataclass(frozen=True)
class Scenario:
    """Successive plans of one adapter (one plan for most), under one install."""

    label: str
    cases: tuple[Case, ...]
    requested: str = "auto"
    graph: bool = False
    tensor_cores: bool = False
    install: Install = field(default_factory=Install)


def one(label: str, case: Case, requested: str = "auto", **kw: Any) -> Scenario:
    graph, tc = kw.pop("graph", False), kw.pop("tensor_cores", False)
    return Scenario(label, (case,), requested, graph, tc, Install(**kw))


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for arch in ("gfx942", "gfx950"):
        t = T_FLAT[arch]
        a = dict(arch=arch)
        out += [
            one(f"{arch} long paged", paged(), **a),
            one(f"{arch} long ragged", ragged(), **a),
            one(f"{arch} decode", DECODE, **a),
            one(f"{arch} paged at T", paged(qo=(3, t)), **a),
            one(f"{arch} paged at T+1", paged(qo=(3, t + 1)), **a),
            one(f"{arch} paged page 1 short", paged(qo=(1, 2), page=1), **a),
            one(f"{arch} paged page 16 short", paged(qo=(1, 2), page=16), **a),
            one(f"{arch} paged page 1024 short (routed)", paged(qo=(1, 1), page=1024), **a),
            one(f"{arch} ragged q=16", ragged(qo=(5, 16)), **a),
            one(f"{arch} ragged q=17", ragged(qo=(5, 17)), **a),
            one(f"{arch} ragged q=1", ragged(qo=(1, 1)), **a),
            one(f"{arch} empty ragged batch", Case("ragged", (), (), **H), **a),
            one(f"{arch} explicit fa2", paged(qo=(3, 4)), "fa2", **a),
            one(f"{arch} explicit aiter short paged", paged(qo=(3, 4)), "aiter", **a),
            one(f"{arch} explicit aiter short ragged", ragged(qo=(1, 4)), "aiter", **a),
            one(f"{arch} HND", paged(kv_layout="HND"), **a),
            one(f"{arch} decode HND", DECODE.replace(kv_layout="HND"), **a),
            one(f"{arch} mask", paged(mask="custom"), **a),
            one(f"{arch} fp32 paged", paged(q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"), **a),
            one(f"{arch} fp32 ragged", ragged(q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"), **a),
            one(f"{arch} e5m2 paged", paged(page=16, q_dtype="e5m2", kv_dtype="e5m2", o_dtype="bf16"), **a),
            one(f"{arch} fp16 over bf16", paged(q_dtype="fp16", kv_dtype="bf16", o_dtype="fp16"), **a),
            one(f"{arch} head dims 192/128", paged(head_dim_qk=192, head_dim_vo=128), **a),
            one(f"{arch} soft cap ragged", ragged(qo=(5, 40), **CAP), **a),
            one(f"{arch} soft cap paged off route", paged(**CAP), **a),
            one(f"{arch} soft cap paged routed", paged(page=1024, **CAP), **a),
            one(f"{arch} explicit aiter soft cap ragged", ragged(**CAP), "aiter", **a),
            one(f"{arch} explicit aiter HND ragged", ragged(kv_layout="HND"), "aiter", **a),
            one(f"{arch} unknown backend ragged", ragged(), "triton", **a),
            one(f"{arch} unknown backend paged", paged(), "triton", **a),
            one(f"{arch} fp8 paged routed", paged(qo=(1, 1), page=16, **fp8(arch)), **a),
            one(f"{arch} fp8 paged routed aiter", paged(page=1024, **fp8(arch)), "aiter", **a),
            one(f"{arch} fp8 ragged", ragged(**fp8(arch)), **a),
            one(f"{arch} fp8 paged page 32", paged(page=32, **fp8(arch)), **a),
            one(f"{arch} fp8 paged fp16 out", paged(page=16, **{**fp8(arch), "o_dtype": "fp16"}), "aiter", **a),
            one(f"{arch} fp8 wrong encoding", paged(page=16, **fp8(arch, wrong=True)), **a),
            one(f"{arch} fp8 on fa2", paged(page=16, **fp8(arch)), "fa2", **a),
            one(f"{arch} fp8 masked", paged(page=16, mask="custom", **fp8(arch)), **a),
            one(f"{arch} decode tensor cores", DECODE, tensor_cores=True, **a),
            one(f"{arch} graph decode", DECODE, graph=True, **a),
            one(f"{arch} probe fails, short", paged(qo=(3, 4), page=1024), native_paging_ok=False, **a),
            one(f"{arch} probe fails, long", paged(qo=(3, 40), page=1024), native_paging_ok=False, **a),
            one(f"{arch} probe fails, soft cap", paged(page=1024, **CAP), native_paging_ok=False, **a),
            one(f"{arch} bootstrap fails ragged", ragged(), bootstrap_ok=False, **a),
            one(f"{arch} bootstrap fails ragged short", ragged(qo=(5, 4)), bootstrap_ok=False, **a),
            one(f"{arch} bootstrap fails paged", paged(), bootstrap_ok=False, **a),
            one(f"{arch} bootstrap fails paged routed", paged(page=1024), bootstrap_ok=False, **a),
            one(f"{arch} bootstrap fails decode", DECODE, bootstrap_ok=False, **a),
        ]
        for aiter in ("not_installed", "below_abi_floor"):
            out += [
                one(f"{arch} {aiter} short paged", paged(qo=(3, 4)), aiter=aiter, **a),
                one(f"{arch} {aiter} short ragged", ragged(qo=(5, 4)), aiter=aiter, **a),
                one(f"{arch} {aiter} decode", DECODE, aiter=aiter, **a),
            ]
        # lifecycle: successive plans of one adapter
        out += [
            Scenario(
                f"{arch} eager paged long-short-long", (paged(), paged(qo=(3, t)), paged()), install=Install(arch)
            ),
            Scenario(
                f"{arch} eager ragged long-short-long", (ragged(), ragged(qo=(5, 9)), ragged()), install=Install(arch)
            ),
            Scenario(f"{arch} eager masked then maskless", (paged(mask="custom"), paged()), install=Install(arch)),
            Scenario(
                f"{arch} graph ragged short first",
                (ragged((16, 16), (40, 40)), ragged((1, 31), (40, 40))),
                graph=True,
                install=Install(arch),
            ),
            Scenario(
                f"{arch} graph ragged long first",
                (ragged((1, 31), (40, 40)), ragged((16, 16), (40, 40))),
                graph=True,
                install=Install(arch),
            ),
            Scenario(
                f"{arch} graph paged short first",
                (paged((t, t), (40, 40)), paged((1, 2 * t - 1), (40, 40))),
                graph=True,
                install=Install(arch),
            ),
            Scenario(
                f"{arch} graph paged long first",
                (paged((1, 2 * t - 1), (40, 40)), paged((t, t), (40, 40))),
                graph=True,
                install=Install(arch),
            ),
            Scenario(
                f"{arch} decode sticky",
                (DECODE, DECODE.replace(kv_layout="NHD", kv_lens=(3, 50))),
                install=Install(arch),
            ),
        ]
    out += [
        one("unknown arch paged", paged(), arch="unknown"),
        one("unknown arch fp8", paged(page=16, **fp8("gfx942")), arch="unknown"),
        one("unknown arch decode", DECODE, arch="unknown"),
    ]
    return out


SCENARIOS = scenarios()


@pytest.fixture(autouse=True, scope="module")
def _one_intra_op_thread() -> Any:
    """The stand-in's tensors are tiny: one torch thread avoids thread hand-off costs that dominate on a busy CPU."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ---- the fork under test: its stand-in here, the library where it imports ------------------------


def _library_fork() -> Optional[str]:
    """Why the real fork cannot be observed here, or None when it can (a ROCm device and the fork)."""
    if fl.loaded_standin() is not None or importlib.util.find_spec("flashinfer") is None:
        return "flashinfer is not installed"
    if not (torch.cuda.is_available() and getattr(torch.version, "hip", None)):
        return "no ROCm device"
    try:
        pre = importlib.import_module("flashinfer.rocm.prefill")
    except Exception as e:
        return f"flashinfer.rocm.prefill does not import ({type(e).__name__})"
    if standin_of(sys.modules.get("flashinfer")) or not hasattr(pre, "_auto_select_prefill_backend"):
        return "the installed flashinfer is not the ROCm fork"
    return None


@contextlib.contextmanager
def machine(target: str, install: Install) -> Iterator[str]:
    """Patch the fork's probes for `install`; yields the adapter's device."""
    if target == "stand-in":
        with installed(
            arch=install.arch,
            aiter=install.aiter,
            bootstrap_ok=install.bootstrap_ok,
            native_paging_ok=install.native_paging_ok,
        ):
            yield "cpu"
        return
    caps = importlib.import_module("flashinfer.rocm.arch_caps")
    real = caps._device_arch
    caps._device_arch = lambda device: install.arch  # as the fork's own tests do (`as_arch`)
    try:
        yield "cuda"
    finally:
        caps._device_arch = real


@pytest.fixture(scope="module", params=["stand-in", "library"])
def target(request: pytest.FixtureRequest) -> str:
    if request.param == "library":
        why = _library_fork()
        if why is not None:
            pytest.skip(f"the ROCm fork cannot be observed here ({why}); the spec is checked against its stand-in")
    return request.param


def _observe_plans(target: str, s: Scenario) -> list[ObservedRoute]:
    """Plan each case on ONE adapter and read the route as the adapter reads it (resolved_backend_of,
    fallback_reason_of) from the wrapper just planned; an exception is the observation of that plan.
    Single prefill resolves inside its call, so it is run. Routing is decided by plan(); run() errors
    (e.g. scale_* on a plan resolved to fa2) are the tests in tests/kernels/test_rocm_standin.py."""
    reset_seen()
    with machine(target, s.install) as device:
        graphs = RecordedGraphs() if target == "stand-in" else None
        a = fi.FlashInferKernel(
            s.requested,
            device,
            graph=s.graph,
            graphs=graphs,
            options=fi.AdapterOptions(
                decode_tensor_cores=s.tensor_cores, workspace_bytes=1 << 10 if target == "stand-in" else 128 << 20
            ),
        )
        a.supports = lambda case: Support.yes()  # type: ignore[method-assign]
        out = []
        for i, case in enumerate(s.cases):
            inp = materialize(case.replace(return_lse=False), i, device)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the unknown-backend warning, the logger's fallbacks
                    a.plan(inp)
                    if case.layout == "single":
                        res = a.run(inp)
                        out.append(ObservedRoute(res.resolved_backend, res.fallback_reason))
                        continue
            except Exception as e:
                out.append(ObservedRoute(None, None, raised=type(e).__name__))
                continue
            w = a._planned.wrapper  # type: ignore[union-attr]
            out.append(ObservedRoute(fi.resolved_backend_of(case.layout, w), fi.fallback_reason_of(w)))
    fl.lib_facts.cache_clear()
    return out


def _expected(s: Scenario) -> list:
    queries = [
        query_from_case(c, s.install.env(s.graph), requested=s.requested, use_tensor_cores=s.tensor_cores)
        for c in s.cases
    ]
    return expected_sequence(SPEC, queries)


@pytest.fixture(scope="module")
def verdicts(target: str) -> list[tuple[str, RoutingVerdict]]:
    out = []
    for s in SCENARIOS:
        if target == "library" and not s.install.plain:
            continue  # on the library only the architecture is patched
        for i, (e, o) in enumerate(zip(_expected(s), _observe_plans(target, s))):
            out.append((f"{s.label} #{i}", check(e, o)))
    if target == "stand-in":
        out += [(label, check(e, o)) for label, e, o in _direct()]
    return out


# ---- direct scenarios: rows no Case expresses ----------------------------------------------------


def _direct() -> list[tuple[str, Any, ObservedRoute]]:
    """(label, expected, observed) from the stand-in's wrappers and selector, called directly."""
    out = []
    for arch in ("gfx942", "gfx950"):
        env = Install(arch).env(False)
        with installed(arch=arch) as lib:
            case = paged()
            inp = materialize(case, 0, "cpu")
            pre = sys.modules["flashinfer.rocm.prefill"]
            q = query_from_case(case, env).replace(both_length_gates=True)
            try:
                pre._auto_select_prefill_backend(
                    torch.device("cpu"),
                    dtype_q=torch.bfloat16,
                    dtype_kv=torch.bfloat16,
                    kv_layout="NHD",
                    has_custom_mask=False,
                    head_dim_qk=64,
                    head_dim_vo=64,
                    max_q_len=4,
                    ragged_q_len=4,
                )
                obs = ObservedRoute("no raise", None)
            except Exception as e:
                obs = ObservedRoute(None, None, raised=type(e).__name__)
            out.append((f"{arch} direct: both length gates", expected_route(SPEC, q), obs))
            for requested in ("auto", "aiter"):
                w = lib.BatchPrefillWithPagedKVCacheWrapper(torch.zeros(8, dtype=torch.uint8), "NHD", backend=requested)
                try:
                    w.plan(
                        inp.qo_indptr,
                        inp.kv_page_indptr,
                        inp.kv_page_indices,
                        inp.kv_last_page_len,
                        4,
                        2,
                        64,
                        5,
                        causal=True,
                        pos_encoding_mode="ROPE_LLAMA",
                        q_data_type=torch.bfloat16,
                    )
                    obs = ObservedRoute(w.backend, w.backend_fallback_reason)
                except Exception as e:
                    obs = ObservedRoute(None, None, raised=type(e).__name__)
                e = expected_route(SPEC, query_from_case(case, env, requested=requested, pos_encoding="ROPE_LLAMA"))
                out.append((f"{arch} direct: RoPE {requested}", e, obs))
            for requested in ("auto", "aiter"):
                d = lib.CUDAGraphBatchDecodeWithPagedKVCacheWrapper(
                    torch.zeros(8, dtype=torch.uint8),
                    torch.zeros(3, dtype=torch.int32),
                    torch.zeros(64, dtype=torch.int32),
                    torch.zeros(2, dtype=torch.int32),
                    backend=requested,
                    max_seq_len=16,
                )
                for kv in ((9, 12), (9, 20), (9, 12)):
                    c = DECODE.replace(kv_lens=kv)
                    di = materialize(c, 0, "cpu")
                    try:
                        d.plan(
                            di.kv_page_indptr,
                            di.kv_page_indices,
                            di.kv_last_page_len,
                            4,
                            2,
                            64,
                            4,
                            q_data_type=torch.bfloat16,
                        )
                        obs = ObservedRoute(d.backend, d.backend_fallback_reason)
                    except Exception as e:
                        obs = ObservedRoute(None, None, raised=type(e).__name__)
                    e = expected_route(
                        SPEC, query_from_case(c, Install(arch).env(True), requested=requested, max_seq_len=16)
                    )
                    out.append((f"{arch} direct: decode max_seq_len=16 {requested} kv {kv}", e, obs))
    fl.lib_facts.cache_clear()
    return out


# ---- the checks ----------------------------------------------------------------------------------


def test_every_observation_passes_and_is_explained(verdicts: list) -> None:
    bad = [f"{label}: {v.status} ({v.detail}); rule {v.expected.rule}" for label, v in verdicts if not v.passed]
    assert not bad, "\n".join(bad)
    cov = coverage(SPEC, [v for _, v in verdicts])
    assert cov.unexplained == () and cov.failed == ()


def test_every_row_is_reached_or_listed_as_not_confirmable(target: str, verdicts: list) -> None:
    unreached = set(coverage(SPEC, [v for _, v in verdicts]).unreached)
    if target == "library":  # install states and direct calls are the stand-in's only
        pytest.skip(f"library: rows reached {len(SPEC.rules) - len(unreached)} of {len(SPEC.rules)}")
    assert unreached == set(NOT_CONFIRMABLE), sorted(unreached)
    assert set(NOT_CONFIRMABLE) <= {r.name for r in SPEC.rules}


def test_single_prefill_backends_follow_the_spec(target: str) -> None:
    """Single prefill reports no reason, so only its backend is compared (including the NOT_CONFIRMABLE row)."""
    cases = [
        ("plain", Install(), Case("single", (7,), (20,), causal=True, **H)),
        ("mask", Install(), Case("single", (7,), (20,), mask="custom", **H)),
        ("soft cap gfx950", Install("gfx950"), Case("single", (7,), (20,), **CAP)),
        ("soft cap gfx942", Install("gfx942"), Case("single", (7,), (20,), **CAP)),
        ("no aiter", Install(aiter="not_installed"), Case("single", (7,), (20,), **H)),
        ("bootstrap fails", Install(bootstrap_ok=False), Case("single", (7,), (20,), **H)),
    ]
    rows = set()
    for label, inst, case in cases:
        if target == "library" and not inst.plain:
            continue
        s = Scenario(label, (case,), install=inst)
        (e,), (o,) = _expected(s), _observe_plans(target, s)
        assert (o.backend, o.reason is not None) == (e.backend, True), label  # NOT_REPORTED, never None
        rows.add(e.rule)
    if target == "stand-in":
        assert set(NOT_CONFIRMABLE) <= rows


def test_short_query_reasons_embed_the_tables_threshold(verdicts: list) -> None:
    """Rule 8: the paged reason embeds 16 (gfx942) / 8 (gfx950), the ragged one 16; never the query length."""
    seen = {}
    for label, v in verdicts:
        if v.passed and v.parsed in (R.PAGED_SHORT_QUERY, R.RAGGED_SHORT_QUERY):
            seen[(label.split()[0], v.parsed)] = R.embedded_threshold(v.parsed, v.observed.reason)
    assert seen[("gfx942", R.PAGED_SHORT_QUERY)] == 16 and seen[("gfx950", R.PAGED_SHORT_QUERY)] == 8
    assert seen[("gfx942", R.RAGGED_SHORT_QUERY)] == 16 and ("gfx950", R.RAGGED_SHORT_QUERY) not in seen
