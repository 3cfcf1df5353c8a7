"""The ROCm fork's code paths of the flashinfer adapter, driven against the fork's CPU stand-in.

kernels/standins/rocm_flashinfer/ reproduces the fork's documented API (rocm_fork.md sections
1-4) with plain-torch numerics; kernels/standins/rocm_fork.py installs it as `flashinfer` on a
patched architecture and AITER install. What these tests pin: the stand-in is labelled everywhere
(module markers, LibFacts, versions, run records, the report); its texts and tables equal the
document's (its copy in tests/data/sources/); and the adapter's fork paths -- backend="aiter", fa2,
auto, eager and graph mode, fp8 through scale_q/scale_k/scale_v, fallback reasons parsed by
routing.reasons -- behave as the fork documents, with numerics judged by the oracle. A pass says
the adapter drives the fork's API as documented; it says nothing about the fork's kernels.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import pkgutil
import re
import sys
import warnings
from pathlib import Path
from typing import Any, Optional

import pytest
import torch

import kernels.flashinfer.adapter as fi
import kernels.flashinfer.lib as fl
import kernels.standins.rocm_flashinfer as standin_pkg
from kernels.flashinfer.variants import reset_seen
from kernels.protocol import NOT_REPORTED, Support
from kernels.standin_label import standin_from_versions, standin_of
from kernels.standins.rocm_flashinfer.rocm import arch_caps, decode, prefill
from kernels.standins.rocm_flashinfer.rocm import reason_text as text
from kernels.standins.rocm_fork import NAME, RecordedGraphs, install, installed, uninstall
from oracle.judge import judge, truth
from routing import reasons as R
from scenarios.case import Case
from scenarios.tensors import Inputs, materialize

DOC = Path(__file__).resolve().parents[1] / "data" / "sources" / "rocm_fork.md"  # a verbatim copy (README there)
CPU = "cpu"
H = dict(num_qo_heads=4, num_kv_heads=2, head_dim_qk=64, head_dim_vo=64)
SOFTCAP = dict(num_qo_heads=2, num_kv_heads=1, head_dim_qk=128, head_dim_vo=128, causal=True, logits_soft_cap=30.0)
PAGED = Case("paged", (3, 20), (11, 40), page_size=5, causal=True, **H)
PAGED_SHORT = Case("paged", (3, 16), (11, 40), page_size=5, causal=True, **H)
PAGED_1024 = Case("paged", (3, 6), (11, 40), page_size=1024, causal=True, **H)
PAGED_MASK = Case("paged", (5, 4), (13, 10), page_size=5, mask="custom", causal=True, window_left=3, **H)
RAGGED = Case("ragged", (5, 30), (12, 39), causal=True, **H)
RAGGED_SHORT = Case("ragged", (5, 16), (12, 19), **H)
DECODE = Case("decode", (1, 1), (9, 30), page_size=4, **H)
SINGLE = Case("single", (7,), (20,), causal=True, window_left=5, **H)


@pytest.fixture(autouse=True, scope="module")
def _one_intra_op_thread() -> Any:
    """The stand-in's tensors are tiny: one torch thread avoids thread hand-off costs that dominate on a busy CPU."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch) -> Any:
    """use(arch=..., aiter=..., ...) installs the stand-in for this test (undone by monkeypatch)."""
    reset_seen()

    def _use(**config: Any) -> Any:
        return install(monkeypatch, **config)

    yield _use
    fl.lib_facts.cache_clear()


def adapter(backend: str, **kw: Any) -> fi.FlashInferKernel:
    graph = kw.pop("graph", False)
    kw.setdefault("workspace_bytes", 1024)  # the stand-in uses no workspace: 1 KiB, not 128 MiB of address space
    return fi.FlashInferKernel(backend, CPU, graph=graph, options=fi.AdapterOptions(**kw), graphs=RecordedGraphs())


def run_case(a: fi.FlashInferKernel, case: Case, seed: int = 0) -> tuple[Inputs, Any]:
    inp = materialize(case, seed, CPU)
    a.plan(inp)
    return inp, a.run(inp)


def passes(inp: Inputs, res: Any) -> bool:
    out_cmp, lse_cmp = judge(truth(inp), res.out, res.lse, lse_base=res.lse_base, adapter="flashinfer")
    return out_cmp.passed and (lse_cmp is None or lse_cmp.passed)


def bypass_supports(a: fi.FlashInferKernel) -> fi.FlashInferKernel:
    """Let plan() reach the library for a case supports() declines: the library's own refusal is the subject."""
    a.supports = lambda case: Support.yes()  # type: ignore[method-assign]
    return a


# ---- labelling ----------------------------------------------------------------------------------


def test_every_module_of_the_standin_is_marked_and_says_it_is_a_standin() -> None:
    """`__attncheck_standin__` on every module; docstrings say stand-in, fork modules cite rocm_fork.md sections."""
    modules = [standin_pkg] + [
        importlib.import_module(i.name) for i in pkgutil.walk_packages(standin_pkg.__path__, standin_pkg.__name__ + ".")
    ]
    assert len(modules) >= 8
    for m in modules:
        assert standin_of(m) == NAME == "flashinfer-rocm-fork", m.__name__
        assert "stand-in" in (m.__doc__ or "").lower(), m.__name__
    for m in (standin_pkg, arch_caps, prefill, decode, importlib.import_module(arch_caps.__package__)):
        assert "rocm_fork.md" in m.__doc__ and re.search(r"section|\bs\d\b", m.__doc__), m.__name__


def test_installed_points_flashinfer_at_the_standin_and_undoes_it() -> None:
    """sys.modules['flashinfer'] and the fork's submodules are the stand-in inside the block, restored after."""
    before = sys.modules.get("flashinfer")
    assert fl.loaded_standin() is None and not fi.TARGET.available(CPU).ok
    with installed(arch="gfx950") as lib:
        assert sys.modules["flashinfer"] is lib and sys.modules["flashinfer.rocm.prefill"] is prefill
        assert arch_caps._device_arch(torch.device(CPU)) == "gfx950"
        assert fl.loaded_standin() == NAME and fi.TARGET.available(CPU).ok
        facts = fl.lib_facts(CPU)
        assert (facts.standin, facts.fork, facts.aiter, facts.softcap_defect, facts.native_fp8) == (
            NAME,
            True,
            True,
            True,
            "e4m3fn",
        )
        assert fi.TARGET.versions()["flashinfer"] == "stand-in: flashinfer-rocm-fork"
        assert standin_from_versions(fi.TARGET.versions()) == NAME
    assert sys.modules.get("flashinfer") is before and arch_caps._device_arch(torch.device(CPU)) == "unknown"
    assert fl.loaded_standin() is None and not fi.TARGET.available(CPU).ok
    install(arch="gfx942")  # a script's install, undone by uninstall()
    try:
        assert fl.lib_facts(CPU).native_fp8 == "e4m3fnuz"
    finally:
        uninstall()
    assert sys.modules.get("flashinfer") is before


def test_a_real_looking_library_is_not_labelled_a_standin(monkeypatch: pytest.MonkeyPatch) -> None:
    """A library without the marker (the tests' unlabelled upstream model): LibFacts.standin None, no stand-in."""
    sys.path.insert(0, os.path.dirname(__file__))
    import fake_flashinfer as ff

    ff.install(monkeypatch)
    fl.lib_facts.cache_clear()
    assert fl.lib_facts(CPU).standin is None and fl.loaded_standin() is None
    assert standin_from_versions(fl.versions()) is None
    fl.lib_facts.cache_clear()


@pytest.mark.parametrize(
    "config,eager",
    [
        ({"arch": "gfx942"}, ("fa2", "aiter", "auto")),
        ({"arch": "gfx950"}, ("fa2", "aiter", "auto")),
        ({"arch": "unknown"}, ("fa2", "auto")),
        ({"aiter": "not_installed"}, ("fa2", "auto")),
        ({"aiter": "below_abi_floor"}, ("fa2", "auto")),
    ],
    ids=["gfx942", "gfx950", "unknown-arch", "no-aiter", "old-aiter"],
)
def test_aiter_is_offered_per_the_forks_own_checks(use: Any, config: dict, eager: tuple) -> None:
    """LibFacts reads arch_caps.capability_reason and _aiter_ops_importable, both patched probes."""
    use(**config)
    graph = tuple(b + "+graph" for b in eager)
    assert fi.TARGET.backends(CPU) == eager + graph


def test_a_run_against_the_standin_is_labelled_and_never_a_conformance_result(use: Any, tmp_path: Path) -> None:
    """Header and records carry `standin`; the footer counts "stand-in pass"; the report says stand-in."""
    from conformance.parity_run import run_parity
    from reports.records import ParityRecord, RunFooter, RunHeader, read_jsonl

    use(arch="gfx942")
    out = run_parity(
        "flashinfer",
        CPU,
        "quick",
        str(tmp_path),
        cases=[PAGED],
        backends=["aiter", "auto+graph"],
        adapter_options={"workspace_bytes": 1024},
    )
    recs = read_jsonl(str(tmp_path / "results.jsonl"))
    head = [r for r in recs if isinstance(r, RunHeader)][0]
    parity = [r for r in recs if isinstance(r, ParityRecord)]
    foot = [r for r in recs if isinstance(r, RunFooter)][0]
    assert head.standin == NAME and all(r.standin == NAME for r in parity) and len(parity) == 2
    assert foot.counts == {"stand-in pass": 2} and out.exit_status == 0
    report = (tmp_path / "report.md").read_text()
    assert "**stand-in**" in report and "not conformance results" in report and "(stand-in: " in report
    assert json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])["standin"] == NAME


# ---- against rocm_fork.md -------------------------------------------------------------------------


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _section(doc: str, n: int) -> str:
    m = re.search(rf"^## {n}\. .*?(?=^## \d+\. |\Z)", doc, re.S | re.M)
    assert m, f"section {n} not found in rocm_fork.md"
    return m.group(0)


_WILD = r"(\{[^{}]*\}|<[^<>]+>|\.\.\.|…|\.\.)"


def _doc_pattern(quoted: str, extra_wild: tuple[str, ...] = ()) -> re.Pattern:
    """A quoted doc text as a regex: {expr}, <name>, "...", "…", ".." (and `extra_wild`) match anything."""
    wild = _WILD[:-1] + "".join("|" + re.escape(w) for w in extra_wild) + ")"
    parts = re.split(wild, quoted)
    return re.compile("".join("(.*?)" if i % 2 else re.escape(p) for i, p in enumerate(parts)), re.S)


def _quoted(doc: str) -> list[str]:
    return re.findall(r'f?"((?:[^"\\\n]|\\.)*)"', doc)


# (template, values, anchor in the doc's quoted text, extra wildcards, whole text quoted)
TEXTS = [
    (text.BOTH_LENGTHS, {}, "different routes", (), True),
    (
        text.CAPABILITY_UNDECLARED,
        dict(backend="aiter", op="batch_prefill", arch="unknown"),
        "requires an AMD gfx942/gfx950 device",
        (),
        True,
    ),
    (
        text.CAPABILITY_UNSUPPORTED,
        dict(backend="aiter", op="batch_decode", arch="gfx90a"),
        "is not supported on",
        (),
        True,
    ),
    (text.CAPABILITY_UNKNOWN_OP, dict(backend="aiter", op="frob"), "is not a declared capability", (), True),
    (
        text.CAPABILITY_KNOWN_BAD,
        dict(backend="aiter", op="batch_prefill", arch="gfx950", why="x"),
        "known-broken",
        (),
        True,
    ),
    (text.LAYOUT, dict(kv_layout="HND"), "(AITER requires NHD)", (), True),
    (text.CUSTOM_MASK, {}, "custom mask (not supported by AITER)", (), True),
    (text.DTYPE, dict(dtype_q=torch.float32, fp8="/fp8"), "(AITER requires fp16/bf16", (), True),
    (text.DTYPE, dict(dtype_q=torch.float32, fp8=""), "(AITER requires fp16/bf16", (), True),
    (
        text.DTYPE_MISMATCH,
        dict(dtype_q=torch.float16, dtype_kv=torch.bfloat16),
        "(AITER requires equal dtypes)",
        (),
        True,
    ),
    (text.HEAD_DIMS, dict(head_dim_qk=192, head_dim_vo=128), "(AITER requires equal head dims)", (), True),
    (text.POS_ENCODING, dict(pos_encoding_mode="ROPE_LLAMA"), "(AITER only supports NONE)", (), True),
    (text.SOFTCAP_DEFECT, dict(cap=30.0, hd=128), "computes the soft cap incorrectly", (), True),
    (text.PAGED_SHORT_QUERY, dict(T=16), "cannot page natively", (), True),
    (text.RAGGED_SHORT_QUERY, dict(T=16), "on ragged KV (AITER", (), True),
    (text.ABI_FLOOR, dict(v="0.1.12", floor=arch_caps.AITER_MIN_VERSION), "ABI floor (the vendored", (), True),
    (text.NOT_INSTALLED, {}, "aiter package not installed (", (), True),
    (
        text.BOOTSTRAP_FAILED,
        dict(op="batch_prefill", exc="ModuleNotFoundError", detail="x"),
        "kernel bootstrap failed on this install:",
        (),
        True,
    ),
    (text.NATIVE_PAGING_UNAVAILABLE, dict(page_size=1024, arch="gfx950"), "native paging was unavailable", (), True),
    (text.DECODE_CAPACITY, dict(kv_len=256, max_seq_len=128), "exceeding the declared max_seq_len", ("X", "Y"), True),
    (text.DECODE_CAPACITY_RAISE, dict(kv_len=256, max_seq_len=128), "AITER graph decode:", (), True),
    (text.DECODE_LSE_CAPTURE, {}, "not supported for AITER decode under CUDA-graph capture", (), True),
    (text.RAGGED_BACKEND, dict(backend="triton"), "backend must be one of", (), True),
    (text.FP8_FLOAT_SCALES, {}, "cannot be combined with an fp8 query", (), True),
    (text.FP8_NO_LSE, {}, "fp8 prefill cannot produce LSE", (), True),
    (
        text.SCALES_ON_FA2,
        dict(reason="custom mask (not supported by AITER)"),
        "honoured only by the AITER paged",
        (),
        True,
    ),
    (text.FP8_RAGGED, dict(dtype_q=torch.float8_e4m3fnuz), "is not supported on ragged batch prefill", (), True),
    (text.FP8_ON_FA2, dict(dtype_q=torch.float8_e4m3fnuz), "has no in-tree fa2 kernel", (), True),
    (text.MAX_SEQ_LEN_POSITIVE, dict(value=0), "must be positive", (), False),
    (text.MAX_SEQ_LEN_GRAPH, {}, "requires use_cuda_graph=True", (), False),
    (
        text.FP8_WRONG_ENCODING,
        dict(native=torch.float8_e4m3fnuz, dtype_q=torch.float8_e4m3fn),
        "wrong exponent bias",
        (),
        False,
    ),
    (text.PER_TENSOR, dict(name="scale_q", shape=(4,)), "per-tensor", (), False),
    (
        text.FP8_OFF_NATIVE_PAGING,
        dict(dtype_q=torch.float8_e4m3fnuz, routed=[1, 16, 1024], page_size=32),
        "the paged flat-gather route",
        (),
        False,
    ),
]


@pytest.mark.parametrize(
    "template,values,anchor,extra,whole", TEXTS, ids=[f"{t[2][:30]}-{i}" for i, t in enumerate(TEXTS)]
)
def test_reason_and_error_texts_equal_the_documents(
    template: str, values: dict, anchor: str, extra: tuple, whole: bool
) -> None:
    """Each text renders to what rocm_fork.md quotes (placeholders and its own "..." elisions aside)."""
    doc = _doc()
    quoted = [q for q in _quoted(doc) if anchor in q]
    assert quoted, f"rocm_fork.md quotes no text containing {anchor!r}"
    rendered = template.format(**values)
    pats = [_doc_pattern(q, extra) for q in quoted]
    if whole:
        assert any(p.fullmatch(rendered) for p in pats), (rendered, quoted)
    else:
        assert any(p.search(rendered) for p in pats), (rendered, quoted)


def test_reason_texts_parse_to_the_routing_constants() -> None:
    """What the stand-in reports is what routing/reasons.py recognises, one constant each."""
    for rendered, code in [
        (text.CUSTOM_MASK, R.CUSTOM_MASK),
        (text.PAGED_SHORT_QUERY.format(T=8), R.PAGED_SHORT_QUERY),
        (text.RAGGED_SHORT_QUERY.format(T=16), R.RAGGED_SHORT_QUERY),
        (text.NOT_INSTALLED, R.NOT_INSTALLED),
        (text.NATIVE_PAGING_UNAVAILABLE.format(page_size=1024, arch="gfx950"), R.NATIVE_PAGING_UNAVAILABLE),
        (text.DECODE_CAPACITY.format(kv_len=9, max_seq_len=8), R.DECODE_CAPACITY),
    ]:
        assert R.parse_reason(rendered) is code, rendered


def _table(section: str, name: str) -> dict[str, Any]:
    row = re.search(rf"^\| `{name}` \| ([^|]+) \| ([^|]+) \|", section, re.M)
    assert row, f"no row {name} in rocm_fork.md section 3"

    def value(cell: str) -> Any:
        v = cell.strip().strip("*")
        return {"None": None, "True": True, "False": False}.get(v, int(v) if v.isdigit() else v)

    return {"gfx942": value(row.group(1)), "gfx950": value(row.group(2))}


def test_arch_tables_and_pins_equal_the_documents() -> None:
    """Section 3's tables, the ABI floor and the native page sizes, read from rocm_fork.md."""
    s3 = _section(_doc(), 3)
    assert arch_caps._AITER_FLAT_GATHER_GATED_Q_LEN == _table(s3, "_AITER_FLAT_GATHER_GATED_Q_LEN")
    assert arch_caps._AITER_RAGGED_GATED_Q_LEN == _table(s3, "_AITER_RAGGED_GATED_Q_LEN")
    assert "gfx950" in arch_caps._AITER_RAGGED_GATED_Q_LEN  # a measured "never", not an absent row
    assert arch_caps._AITER_SOFTCAP_DEFECT_ARCHS == _table(s3, "_AITER_SOFTCAP_DEFECT_ARCHS")
    assert arch_caps._AITER_ASM_PREFILL_MIN_QO_LEN == _table(s3, "_AITER_ASM_PREFILL_MIN_QO_LEN")
    assert re.search(rf"`AITER_MIN_VERSION` {re.escape(arch_caps.AITER_MIN_VERSION)}\b", s3)
    m = re.search(r"≥(\d+\.\d+\.\d+) → \{([\d,]+)\}, else \{([\d,]+)\}", s3)
    assert m and prefill._version_tuple(m.group(1)) == (0, 1, 10)
    assert prefill.NATIVE_PAGE_SIZES_FROM_0_1_10 == {int(x) for x in m.group(2).split(",")}
    assert prefill.NATIVE_PAGE_SIZES_BEFORE == {int(x) for x in m.group(3).split(",")}
    assert arch_caps.normalize_arch("gfx942:sramecc+:xnack-") == "gfx942"


def _doc_signatures(s1: str) -> list[tuple[str, str, list[str]]]:
    """(class or function, method, parameter names in the document's order) for every s1 signature."""
    out = []
    for block in re.split(r"^\*\*", s1, flags=re.M)[1:]:
        owner = re.match(r"`?(\w+)", block).group(1)  # type: ignore[union-attr]
        for method, params in re.findall(r"`(\w+)\(([^`]*)\)`", block):
            if method not in ("__init__", "plan", "run", owner) and not hasattr(standin_pkg, method):
                continue
            if method not in ("__init__", "plan", "run"):
                owner = method  # a function, or a class called as its constructor
            names = [
                re.sub(r"^(\*{1,2})\w+", r"\1", re.match(r"\*{0,2}\w+", p.strip()).group(0))  # type: ignore
                for p in params.split(",")
                if re.match(r"\s*\*{0,2}\w", p)
            ]
            out.append((owner, method, names))
    return out


def test_signatures_keep_the_documents_parameter_names_in_order() -> None:
    """Every parameter s1 names is a parameter of the stand-in, in s1's order (s1 elides some with "...")."""
    sigs = _doc_signatures(_section(_doc(), 1))
    assert len(sigs) >= 10
    for owner, method, names in sigs:
        obj = getattr(standin_pkg, owner)
        fn = (
            obj.__init__
            if method == owner and inspect.isclass(obj)
            else obj
            if method == owner
            else getattr(obj, method)
        )
        params = inspect.signature(fn).parameters
        have = [
            "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else n
            for n, p in params.items()
            if n != "self"
        ]
        it = iter(have)
        missing = [n for n in names if n not in it]
        assert not missing, f"{owner}.{method}: {missing} not in {have} in the document's order"


# ---- the adapter's fork paths against the stand-in -----------------------------------------------


@pytest.mark.filterwarnings("ignore:AITER decode returns no LSE")
@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_every_api_and_backend_eager_and_graph_matches_the_oracle(use: Any, arch: str) -> None:
    """aiter, fa2 and auto on paged/ragged/decode/single, eager and "+graph": the oracle's answer every time."""
    use(arch=arch)
    for backend in ("aiter", "fa2", "auto"):
        for graph in (False, True):
            a = adapter(backend, graph=graph)
            for case in (PAGED, PAGED_1024, RAGGED, DECODE, SINGLE):
                if graph and case.layout == "single":
                    continue
                if graph and backend == "aiter" and case.layout == "decode":
                    case = case.replace(return_lse=False)  # the fork refuses aiter decode LSE under capture
                inp, res = run_case(a, case)
                assert passes(inp, res), (arch, backend, graph, case.id)
                want = backend if backend != "auto" else res.resolved_backend
                assert res.resolved_backend == want
                assert (
                    res.fallback_reason is (NOT_REPORTED if case.layout == "single" else None)
                    or R.parse_reason(res.fallback_reason) is not R.UNRECOGNISED
                )


@pytest.mark.parametrize("arch,fp8", [("gfx942", "e4m3fnuz"), ("gfx950", "e4m3fn")])
def test_fp8_paged_goes_as_per_tensor_scale_tensors_to_aiter(
    use: Any, monkeypatch: pytest.MonkeyPatch, arch: str, fp8: str
) -> None:
    """s1/s4: scale_q/k/v one-element float32 tensors, never q_scale; bf16 out, no LSE; the descale is honoured."""
    use(arch=arch)
    seen: list[dict] = []
    orig = prefill.BatchPrefillWithPagedKVCacheWrapper.run

    @functools.wraps(orig)
    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return orig(self, *args, **kwargs)

    monkeypatch.setattr(prefill.BatchPrefillWithPagedKVCacheWrapper, "run", spy)
    case = Case(
        "paged",
        (4, 2),
        (9, 7),
        page_size=16,
        q_dtype=fp8,
        kv_dtype=fp8,
        o_dtype="bf16",
        q_scale=0.5,
        k_scale=2.0,
        v_scale=0.25,
        **H,
    )
    outs = {}
    for backend in ("aiter", "auto", "aiter+graph"):
        inp, res = run_case(adapter(backend), case)
        assert (res.resolved_backend, res.fallback_reason, res.lse) == ("aiter", None, None) and passes(inp, res)
        kw = seen[-1]
        assert kw.get("q_scale") is None and kw["scale_q"].shape == (1,) and kw["scale_q"].dtype == torch.float32
        assert (float(kw["scale_q"][0]), float(kw["scale_k"][0]), float(kw["scale_v"][0])) == (0.5, 2.0, 0.25)
        assert kw["return_lse"] is False and res.out.dtype == torch.bfloat16
        outs[backend] = res.out
    inp, res = run_case(adapter("aiter"), case.replace(q_scale=4.0))
    assert passes(inp, res) and not torch.equal(res.out, outs["aiter"])  # the descale changes the result


def test_fp8_refusals_reach_the_adapter_as_the_library_raises_them(use: Any) -> None:
    """Wrong encoding, page off the native route, ragged fp8, fp8 on fa2: NotImplementedError with the doc's words."""
    use(arch="gfx942")
    fp8 = dict(q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz", o_dtype="bf16", **H)
    for backend, case, words in [
        (
            "aiter",
            Case("paged", (4,), (9,), page_size=16, **{**fp8, "q_dtype": "e4m3fn", "kv_dtype": "e4m3fn"}),
            "exponent bias",
        ),
        ("auto", Case("paged", (4,), (9,), page_size=32, **fp8), "flat-gather"),
        ("aiter", Case("paged", (4,), (9,), page_size=32, **fp8), "fp8 prefill"),
        ("aiter", Case("ragged", (4,), (9,), **fp8), "ragged batch prefill"),
        ("fa2", Case("paged", (4,), (9,), page_size=16, **fp8), "no in-tree fa2 kernel"),
    ]:
        with pytest.raises(NotImplementedError, match=words):
            run_case(bypass_supports(adapter(backend)), case)
    q = torch.zeros(4, 4, 64, dtype=torch.float8_e4m3fnuz)
    kv = torch.zeros(9, 2, 64, dtype=torch.float8_e4m3fnuz)
    for backend in ("fa2", "auto"):  # single prefill (the adapter never sends it fp8 on the fork)
        with pytest.raises(NotImplementedError, match="no in-tree fa2 kernel"):
            prefill.single_prefill_with_kv_cache(q, kv, kv, backend=backend)


REASONS = [
    # (id, install, case, expected constant, embedded threshold)
    ("mask", {}, PAGED_MASK, R.CUSTOM_MASK, None),
    ("hnd", {}, PAGED.replace(kv_layout="HND"), R.LAYOUT, None),
    ("paged-short-gfx942", {}, PAGED_SHORT, R.PAGED_SHORT_QUERY, 16),
    ("paged-short-gfx950", {"arch": "gfx950"}, PAGED_SHORT.replace(qo_lens=(3, 8)), R.PAGED_SHORT_QUERY, 8),
    ("ragged-short-gfx942", {}, RAGGED_SHORT, R.RAGGED_SHORT_QUERY, 16),
    ("softcap-gfx950", {"arch": "gfx950"}, Case("ragged", (5, 30), (12, 39), **SOFTCAP), R.SOFTCAP_DEFECT, None),
    ("not-installed", {"aiter": "not_installed"}, PAGED_SHORT, R.NOT_INSTALLED, None),
    ("below-floor", {"aiter": "below_abi_floor"}, RAGGED_SHORT, R.ABI_FLOOR, None),
    ("unknown-arch", {"arch": "unknown"}, PAGED, R.CAPABILITY_UNDECLARED, None),
    ("bootstrap", {"bootstrap_ok": False}, RAGGED, R.BOOTSTRAP_FAILED, None),
]


@pytest.mark.parametrize("config,case,code,t", [r[1:] for r in REASONS], ids=[r[0] for r in REASONS])
def test_fallback_reasons_read_through_the_adapter_parse_to_their_constant(
    use: Any, config: dict, case: Case, code: R.ReasonCode, t: Optional[int]
) -> None:
    """auto -> fa2 with the fork's reason; parse_reason names it; a short-query reason embeds T, not the length."""
    use(**config)
    inp, res = run_case(adapter("auto"), case)
    assert res.resolved_backend == "fa2" and R.parse_reason(res.fallback_reason) is code, res.fallback_reason
    assert R.embedded_threshold(code, res.fallback_reason) == t
    assert passes(inp, res)


# ---- lifecycle (s4) -------------------------------------------------------------------------------


def test_eager_paged_re_resolves_every_plan_and_the_demotion_flag_follows(use: Any) -> None:
    """Rule 12: long -> aiter, short -> fa2 (flag set), long -> aiter again with reason None (flag cleared)."""
    use(arch="gfx942")
    a = adapter("auto")
    got = []
    for case in (PAGED, PAGED_SHORT, PAGED):
        inp, res = run_case(a, case)
        assert passes(inp, res)
        got.append(
            (
                res.resolved_backend,
                R.parse_reason(res.fallback_reason),
                a._wrappers[("paged", "NHD")]._backend_short_query_demoted,
            )
        )
    assert got == [("aiter", None, False), ("fa2", R.PAGED_SHORT_QUERY, True), ("aiter", None, False)]


def test_a_maskless_plan_after_a_masked_one_drops_the_mask(use: Any) -> None:
    """Rule 13: the eager plan clears the mask, re-promotes to aiter and computes unmasked numbers."""
    use(arch="gfx942")
    a = adapter("auto")
    masked = PAGED_MASK.replace(qo_lens=(20, 18), kv_lens=(30, 25))
    _, r1 = run_case(a, masked)
    inp, r2 = run_case(a, masked.replace(mask="none"))
    assert (r1.resolved_backend, R.parse_reason(r1.fallback_reason)) == ("fa2", R.CUSTOM_MASK)
    assert (r2.resolved_backend, r2.fallback_reason) == ("aiter", None) and passes(inp, r2)


@pytest.mark.parametrize("first,then,backend", [((16, 16), (1, 31), "fa2"), ((1, 31), (16, 16), "aiter")])
def test_graph_mode_the_first_plan_decides(use: Any, first: tuple, then: tuple, backend: str) -> None:
    """Rule 14: one graph wrapper (same batch and rows), ragged short/long in either order keeps the first choice."""
    use(arch="gfx942")
    a = adapter("auto", graph=True)
    results = [run_case(a, Case("ragged", qo, (40, 40), **H)) for qo in (first, then)]
    assert [r.resolved_backend for _, r in results] == [backend, backend]
    assert all(passes(i, r) for i, r in results)
    assert len([e for e in a.graph_events if e.startswith("graph wrapper")]) == 1


def test_graph_mode_paged_flat_gather_buffers_are_allocated_once(use: Any) -> None:
    """s4 Buffers: on the flat-gather route the graph wrapper allocates indices_buf.numel()*page_size once."""
    use(arch="gfx942")
    a = adapter("aiter", graph=True, graph_max_pages=64)
    run_case(a, PAGED)
    w = next(iter(a._slots.values())).wrapper
    first = w._aiter_flat_gather_idx
    assert first is not None and first.numel() == 64 * 5
    inp, res = run_case(a, PAGED.replace(qo_lens=(2, 21), kv_lens=(30, 7)), seed=1)
    assert w._aiter_flat_gather_idx is first and passes(inp, res)


def test_an_explicit_backend_is_never_redirected_and_reports_none(use: Any) -> None:
    """Rule 15: explicit aiter on short paged/ragged stays aiter, reason None; explicit fa2 reason None."""
    use(arch="gfx942")
    for backend in ("aiter", "fa2"):
        for case in (PAGED_SHORT, RAGGED_SHORT):
            inp, res = run_case(adapter(backend), case)
            assert (res.resolved_backend, res.fallback_reason) == (backend, None) and passes(inp, res)


def test_an_empty_batch_is_never_short(use: Any) -> None:
    """Rule 7 / s4: an empty ragged batch has _max_q_len 0, not gated: auto keeps aiter."""
    use(arch="gfx942")
    _, res = run_case(adapter("auto"), Case("ragged", (), (), **H))
    assert (res.resolved_backend, res.fallback_reason) == ("aiter", None) and res.out.shape[0] == 0


def test_both_length_gates_raise_before_any_other_check(use: Any) -> None:
    """Rule 2 / s2 step 0: max_q_len and ragged_q_len together -> ValueError, even where step 1 would decline."""
    use(arch="unknown")
    with pytest.raises(ValueError) as err:
        prefill._auto_select_prefill_backend(
            torch.device(CPU),
            dtype_q=torch.bfloat16,
            dtype_kv=torch.bfloat16,
            kv_layout="HND",
            has_custom_mask=True,
            head_dim_qk=64,
            head_dim_vo=64,
            max_q_len=4,
            ragged_q_len=4,
        )
    assert str(err.value) == text.BOTH_LENGTHS


def test_a_fallback_is_warned_once_per_device_and_reason(use: Any) -> None:
    """Rule 9: lengths inside one gate give one entry in _aiter_auto_warned; the reason is returned every call."""
    use(arch="gfx942")
    a = adapter("auto")
    reasons = [run_case(a, RAGGED_SHORT.replace(qo_lens=(5, n)))[1].fallback_reason for n in (16, 3, 9)]
    assert len(set(reasons)) == 1 and len(prefill._aiter_auto_warned) == 1


# ---- probes (s4 "Probe site", "Probe failures") ---------------------------------------------------


def test_native_paging_probe_failure_at_a_routed_page(use: Any) -> None:
    """Rule 16: short -> fa2 flat-gather reason and flag; long -> aiter on the flat gather; explicit aiter stays."""
    use(arch="gfx942", native_paging_ok=False)
    a = adapter("auto")
    _, short = run_case(a, PAGED_1024.replace(qo_lens=(3, 4)))
    w = a._wrappers[("paged", "NHD")]
    assert (short.resolved_backend, R.parse_reason(short.fallback_reason)) == ("fa2", R.PAGED_SHORT_QUERY)
    assert w._backend_short_query_demoted
    inp, long_ = run_case(a, PAGED_1024.replace(qo_lens=(3, 40)))
    assert (long_.resolved_backend, long_.fallback_reason) == ("aiter", None) and passes(inp, long_)
    assert w._aiter_flat_gather_idx is not None
    _, res = run_case(adapter("aiter"), PAGED_1024.replace(qo_lens=(3, 4)))
    assert (res.resolved_backend, res.fallback_reason) == ("aiter", None)


def test_half_precision_takes_the_flat_gather_off_page_1024(use: Any) -> None:
    """Rule 11: bf16 at page 1 or 16 on aiter sets _aiter_flat_gather_idx; at 1024 it routes natively (None)."""
    use(arch="gfx942")
    for page, flat in ((1, True), (16, True), (1024, False)):
        a = adapter("aiter")
        inp, res = run_case(a, PAGED.replace(page_size=page))
        assert (a._wrappers[("paged", "NHD")]._aiter_flat_gather_idx is not None) == flat and passes(inp, res)


def test_soft_cap_defect_with_native_paging_unavailable(use: Any) -> None:
    """s4 probe site on gfx950: auto -> fa2 "native paging was unavailable"; explicit aiter -> ValueError."""
    use(arch="gfx950", native_paging_ok=False)
    case = Case("paged", (3, 40), (11, 40), page_size=1024, **SOFTCAP)
    _, res = run_case(adapter("auto"), case)
    assert (res.resolved_backend, R.parse_reason(res.fallback_reason)) == ("fa2", R.NATIVE_PAGING_UNAVAILABLE)
    with pytest.raises(ValueError, match="soft cap"):
        run_case(bypass_supports(adapter("aiter")), case)


def test_bootstrap_failures_demote_auto_raise_explicit_and_strict(use: Any) -> None:
    """Rule 17: auto -> fa2 'bootstrap failed'; explicit aiter re-raises; FLASHINFER_AITER_STRICT=1 raises."""
    use(arch="gfx942", bootstrap_ok=False)
    _, res = run_case(adapter("auto"), SINGLE)
    assert res.resolved_backend == "fa2"  # single prefill: silently
    with pytest.raises(ModuleNotFoundError):
        run_case(adapter("aiter"), RAGGED)
    use(arch="gfx942", bootstrap_ok=False, strict=True)
    with pytest.raises(ModuleNotFoundError):
        run_case(adapter("auto"), RAGGED)
    use(arch="gfx942", native_paging_ok=False, strict=True)
    with pytest.raises(RuntimeError, match="STRICT"):
        run_case(adapter("auto"), PAGED_1024)


# ---- the wrappers' own errors (s1, s4), called directly ------------------------------------------


def _ws() -> torch.Tensor:
    return torch.zeros(16, dtype=torch.uint8)


def _paged(backend: str = "auto", **kw: Any) -> Any:
    return prefill.BatchPrefillWithPagedKVCacheWrapper(_ws(), "NHD", backend=backend, **kw)


def _plan_paged(w: Any, case: Case, **extra: Any) -> Inputs:
    inp = materialize(case, 0, CPU)
    w.plan(
        inp.qo_indptr,
        inp.kv_page_indptr,
        inp.kv_page_indices,
        inp.kv_last_page_len,
        case.num_qo_heads,
        case.num_kv_heads,
        case.head_dim_qk,
        case.page_size,
        causal=case.causal,
        q_data_type=getattr(torch, {"bf16": "bfloat16", "e4m3fnuz": "float8_e4m3fnuz"}[case.q_dtype]),
        **extra,
    )
    return inp


def test_constructor_rules(use: Any) -> None:
    """s1: paged unknown backend warns and is fa2; ragged raises; graph mode needs buffers; workspace_size raises."""
    use(arch="gfx942")
    with pytest.warns(UserWarning, match="triton"):
        w = _paged("triton")
    assert (w.backend, w._backend_requested, w.backend_fallback_reason) == ("fa2", "fa2", None)
    with pytest.raises(ValueError, match="backend must be one of 'fa2', 'aiter', 'auto'"):
        prefill.BatchPrefillWithRaggedKVCacheWrapper(_ws(), "NHD", backend="triton")
    with pytest.raises(ValueError, match="paged_kv_indices_buf"):
        _paged(
            use_cuda_graph=True,
            qo_indptr_buf=torch.zeros(2),
            paged_kv_indptr_buf=torch.zeros(2),
            paged_kv_last_page_len_buf=torch.zeros(1),
        )
    with pytest.raises(NotImplementedError):
        _paged().workspace_size()
    w = _paged()
    assert (w.backend, w.backend_fallback_reason, w.is_cuda_graph_enabled) == ("auto", None, False)  # rule 34
    use(arch="unknown")
    with pytest.raises(arch_caps.ArchCapabilityError) as err:
        _paged("aiter")
    assert isinstance(err.value, ValueError) and isinstance(err.value, RuntimeError)
    use(arch="gfx942", aiter="not_installed")
    with pytest.raises(ImportError):
        _paged("aiter")


def test_paged_run_errors_in_the_documents_order(use: Any) -> None:
    """s4 "Paged run() errors": float scales, LSE, scale_* on fa2 (naming the reason), per-head descale."""
    use(arch="gfx942")
    fp8 = Case("paged", (4,), (9,), page_size=16, q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz", o_dtype="bf16", **H)
    w = _paged("aiter")
    inp = _plan_paged(w, fp8)
    one = torch.ones(1)
    with pytest.raises(ValueError, match="cannot be combined with an fp8 query"):
        w.run(inp.q, (inp.k, inp.v), q_scale=1.0, scale_q=one, scale_k=one, scale_v=one)
    with pytest.raises(NotImplementedError, match="cannot produce LSE"):
        w.run(inp.q, (inp.k, inp.v), return_lse=True, scale_q=one, scale_k=one, scale_v=one)
    with pytest.raises(RuntimeError, match="per-tensor"):
        w.run(inp.q, (inp.k, inp.v), scale_q=torch.ones(4), scale_k=one, scale_v=one)
    assert w.run(inp.q, (inp.k, inp.v), scale_q=one, scale_k=one, scale_v=one).dtype == torch.bfloat16
    masked = _paged()
    inp = _plan_paged(masked, PAGED_MASK, custom_mask=torch.ones(5 * 13 + 4 * 10, dtype=torch.bool))
    with pytest.raises(
        NotImplementedError, match=re.escape("would ignore them (custom mask (not supported by AITER))")
    ):
        masked.run(inp.q, (inp.k, inp.v), scale_q=one, scale_k=one, scale_v=one)
    with pytest.raises(NotImplementedError, match="o_data_type"):
        _plan_paged(_paged(), PAGED, o_data_type=torch.float16)
    with pytest.raises(NotImplementedError, match="CUDA-only"):
        _plan_paged(_paged(), PAGED, seq_lens=torch.ones(2))


def test_ragged_plan_and_run_rules(use: Any) -> None:
    """s1: ragged plan refuses CUDA-only arguments; run() takes no scale_* and o_scale only None or 1.0."""
    use(arch="gfx942")
    w = prefill.BatchPrefillWithRaggedKVCacheWrapper(_ws(), "NHD")
    inp = materialize(RAGGED, 0, CPU)
    with pytest.raises(NotImplementedError):
        w.plan(inp.qo_indptr, inp.kv_indptr, 4, 2, 64, max_token_per_sequence=40, q_data_type=torch.bfloat16)
    w.plan(inp.qo_indptr, inp.kv_indptr, 4, 2, 64, causal=True, q_data_type=torch.bfloat16)
    assert "scale_q" not in inspect.signature(w.run).parameters
    with pytest.raises(ValueError, match="o_scale"):
        w.run(inp.q, inp.k, inp.v, o_scale=2.0)
    assert w.run(inp.q, inp.k, inp.v, o_scale=1.0).shape == inp.q.shape


def _decode(**kw: Any) -> Any:
    bufs = dict(
        indptr_buf=torch.zeros(3, dtype=torch.int32),
        indices_buf=torch.zeros(64, dtype=torch.int32),
        last_page_len_buf=torch.zeros(2, dtype=torch.int32),
    )
    return decode.CUDAGraphBatchDecodeWithPagedKVCacheWrapper(_ws(), **bufs, **kw)


def _plan_decode(w: Any, kv_lens: tuple, **extra: Any) -> Inputs:
    inp = materialize(Case("decode", (1, 1), kv_lens, page_size=4, **H), 0, CPU)
    w.plan(
        inp.kv_page_indptr, inp.kv_page_indices, inp.kv_last_page_len, 4, 2, 64, 4, q_data_type=torch.bfloat16, **extra
    )
    return inp


def test_decode_rules(use: Any) -> None:
    """Rules 28-31: max_seq_len validation, graph auto by max_seq_len, capacity demotion and reset, aiter raise."""
    use(arch="gfx942")
    with pytest.raises(TypeError):
        _decode(max_seq_len=True)
    with pytest.raises(ValueError, match="must be positive"):
        _decode(max_seq_len=0)
    with pytest.raises(ValueError, match="requires use_cuda_graph=True"):
        decode.BatchDecodeWithPagedKVCacheWrapper(_ws(), max_seq_len=8)
    w = _decode()
    _plan_decode(w, (9, 30))
    assert (w.backend, w.backend_fallback_reason) == ("fa2", None)  # graph mode without max_seq_len
    w = _decode(max_seq_len=16)
    seen = []
    for kv in ((9, 12), (9, 20), (9, 12)):
        _plan_decode(w, kv)
        seen.append((w.backend, R.parse_reason(w.backend_fallback_reason), w._backend_capacity_demoted))
    assert seen == [("aiter", None, False), ("fa2", R.DECODE_CAPACITY, True), ("aiter", None, False)]
    w = _decode(max_seq_len=16, backend="aiter")
    _plan_decode(w, (9, 12))
    before = w._paged_kv_indptr_buf.clone()
    with pytest.raises(ValueError, match="increase max_seq_len"):
        _plan_decode(w, (9, 20))
    assert torch.equal(w._paged_kv_indptr_buf, before)  # refused before any buffer write
    t = decode.BatchDecodeWithPagedKVCacheWrapper(_ws(), use_tensor_cores=True)
    _plan_decode(t, (9, 12))
    assert (t.backend, t.backend_fallback_reason) == ("fa2", None)
    with pytest.raises(ValueError):
        _plan_decode(decode.BatchDecodeWithPagedKVCacheWrapper(_ws(), use_tensor_cores=True, backend="aiter"), (9, 12))
    with pytest.warns(DeprecationWarning):
        w = decode.BatchDecodeWithPagedKVCacheWrapper(_ws())
        inp = materialize(Case("decode", (1, 1), (9, 12), page_size=4, **H), 0, CPU)
        w.plan(
            inp.kv_page_indptr, inp.kv_page_indices, inp.kv_last_page_len, 4, 2, 64, 4, "NONE", -1, None, torch.bfloat16
        )


def test_aiter_decode_lse_shadow_plan_eager_and_refusal_under_capture(use: Any) -> None:
    """Rule 32 through the adapter: eager aiter decode LSE matches the oracle (warned once); under a graph
    capture the fork refuses it, so the adapter's "aiter+graph" decode with LSE is an error there."""
    use(arch="gfx942")
    with pytest.warns(UserWarning, match="shadow plan"):
        inp, res = run_case(adapter("aiter"), DECODE)
    assert res.lse is not None and passes(inp, res)
    with pytest.raises(ValueError, match="under CUDA-graph capture"):
        run_case(adapter("aiter", graph=True), DECODE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inp, res = run_case(adapter("aiter", graph=True), DECODE.replace(return_lse=False))
    assert passes(inp, res)
