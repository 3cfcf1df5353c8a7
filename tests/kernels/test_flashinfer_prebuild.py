"""The parallel JIT prebuild: which module each (case, backend) loads, and one build call for all of them.

Against the CPU fake for the mapping; the module names are compared with the real library's own
URIs where flashinfer imports (the H200 runner), so a prebuild can never build a module plan()
would not load.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

import pytest

from kernels.flashinfer import matrix as fm
from conformance.commands.prebuild import forward as prebuild_command
from kernels.flashinfer import prebuild as pb
from scenarios.case import Case

sys.path.insert(0, os.path.dirname(__file__))
from fake_flashinfer import fake  # noqa: E402,F401  (the fixture)

H = dict(num_qo_heads=8, num_kv_heads=2, head_dim_qk=128, head_dim_vo=128)
PAGED = Case("paged", (3, 6), (11, 6), page_size=5, causal=True, **H)
PAGED_MASK = Case("paged", (3, 6), (11, 6), page_size=5, mask="custom", **H)
DECODE = Case("decode", (1, 1), (9, 40), page_size=16, window_left=7, **H)
SINGLE = Case("single", (10,), (25,), logits_soft_cap=30.0, **H)
FP8_KV = Case("ragged", (4,), (9,), kv_dtype="e4m3fn", k_scale=1.0, v_scale=1.0, **H)


def test_module_requests_follow_the_generators_plan_calls(fake: Any) -> None:
    r = pb.module_request(PAGED, "fa2", "cpu")
    assert (r.generator, r.backend, r.args) == (
        "batch_prefill_fa2",
        "fa2",
        ("bf16", "bf16", "bf16", "int32", 128, 128, False, False),
    )
    assert pb.module_request(PAGED, "fa3+graph", "cpu").generator == "batch_prefill"
    assert pb.module_request(DECODE, "fa2", "cpu").generator == "batch_decode"  # CUDA cores
    d3 = pb.module_request(DECODE, "fa3", "cpu")  # tensor cores: the prefill module, one head dim, window on
    assert (d3.generator, d3.backend, d3.args[-2:]) == ("batch_prefill", "fa3", (True, False))
    s = pb.module_request(SINGLE, "fa2", "cpu")
    assert (s.generator, s.args) == ("single_prefill", ("bf16", "bf16", "bf16", 128, 128, False, True))
    assert pb.module_request(PAGED, "cudnn", "cpu") is None


def test_auto_is_resolved_by_the_librarys_selector(fake: Any) -> None:
    assert pb.module_request(PAGED, "auto", "cpu").backend == "fa3"  # sm90, no mask
    assert pb.module_request(PAGED_MASK, "auto", "cpu").backend == "fa2"  # custom mask: fa3 unsupported
    assert pb.module_request(FP8_KV, "auto", "cpu").backend == "fa2"  # fp8 KV under a bf16 query
    assert pb.module_request(DECODE, "auto", "cpu").generator == "batch_decode"


def test_requests_are_unique_and_only_for_supported_cases(fake: Any) -> None:
    cases = [PAGED, PAGED, PAGED_MASK, FP8_KV]
    reqs = pb.requests_for(cases, ["fa3", "fa3+graph"], "cpu", lambda c, b: c.mask != "custom" and not c.is_fp8)
    assert [r.label for r in reqs] == ["batch_prefill:fa3:bf16,bf16,bf16,int32,128,128,False,False"]
    with_mask = pb.requests_for([PAGED_MASK], ["fa2"], "cpu", lambda c, b: True)
    assert with_mask[0] == pb.QUANTIZATION and with_mask[1].generator == "batch_prefill_fa2"


class _Spec:
    """What a fake generator returns: records its build, like JitSpec.build(need_lock=...)."""

    built: list = []

    def __init__(self, name: str, args: tuple) -> None:
        self.name, self.args = name, args

    def build(self, need_lock: bool = False) -> None:
        assert need_lock  # concurrent builds of one module must take the spec's file lock
        if self.name == "broken":
            raise RuntimeError("ninja: build stopped: subcommand failed")
        _Spec.built.append((self.name, self.args, os.environ.get("MAX_JOBS")))


def _fake_generators(monkeypatch: pytest.MonkeyPatch, **override: str) -> None:
    gen = lambda name: lambda *a: _Spec(name, a)  # noqa: E731
    mods = types.ModuleType("flashinfer.jit.attention.modules")
    mods.gen_single_prefill_module = gen(override.get("single", "single"))
    mods.gen_batch_decode_module = gen("decode")
    mods.gen_batch_prefill_module = gen("prefill")
    mods._gen_batch_prefill_primary_module = gen("prefill_fa2_primary")
    for name, m in {
        "flashinfer.jit": types.ModuleType("flashinfer.jit"),
        "flashinfer.jit.attention": types.ModuleType("flashinfer.jit.attention"),
        "flashinfer.jit.attention.modules": mods,
    }.items():
        monkeypatch.setitem(sys.modules, name, m)
    _Spec.built = []


def test_prebuild_builds_every_spec_with_the_cores_shared(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    _fake_generators(monkeypatch)
    monkeypatch.setenv("MAX_JOBS", "7")
    reqs = [pb.module_request(c, "fa2", "cpu") for c in (PAGED, DECODE, SINGLE)]
    res = pb.prebuild(reqs, cores=32)
    assert res.error is None and res.requested == [r.label for r in reqs]
    assert sorted(n for n, _, _ in _Spec.built) == ["decode", "prefill_fa2_primary", "single"]
    args = {n: a for n, a, _ in _Spec.built}
    assert args["prefill_fa2_primary"][:5] == ("fa2", torch.bfloat16, torch.bfloat16, torch.bfloat16, torch.int32)
    assert args["single"] == ("fa2", torch.bfloat16, torch.bfloat16, torch.bfloat16, 128, 128, 0, False, True, False)
    assert {j for _, _, j in _Spec.built} == {str(32 // 3 + 1 + 2)}  # 3 builds at once share 32 cores
    assert os.environ["MAX_JOBS"] == "7"  # restored


def test_one_failing_build_is_reported_and_the_others_still_build(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_generators(monkeypatch, single="broken")
    res = pb.prebuild([pb.module_request(c, "fa2", "cpu") for c in (PAGED, SINGLE, DECODE)], cores=8)
    assert res.error and "single_prefill:fa2" in res.error and "subcommand failed" in res.error
    assert sorted(n for n, _, _ in _Spec.built) == ["decode", "prefill_fa2_primary"]


def test_a_missing_generator_module_is_reported_not_raised(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "flashinfer.jit.attention.modules", None)  # import fails
    res = pb.prebuild([pb.module_request(PAGED, "fa2", "cpu")])
    assert res.error and res.error.startswith("batch_prefill_fa2:fa2:") and "Error" in res.error
    assert pb.prebuild([]).requested == []


def test_prebuilt_specs_are_the_modules_plan_loads() -> None:
    """On a machine with flashinfer: each spec's name equals the library's own URI for the same arguments."""
    try:
        from flashinfer.jit.attention import modules as m
    except Exception as e:  # CPU CI: the library is not installed
        pytest.skip(f"needs the flashinfer package ({type(e).__name__})")
    import torch

    checked = 0
    for c in fm.build("quick"):
        for b in ("fa2", "fa3"):
            r = pb.module_request(c, b, "cuda")
            if r is None or (b == "fa3" and (c.mask == "custom" or c.head_dim_qk not in (64, 128, 256, 192))):
                continue
            if (b == "fa2" and c.q_dtype.startswith("e")) or (b == "fa3" and c.kv_dtype != c.q_dtype):
                continue  # declined by supports() (NO_FP8, MIXED_QKV_DTYPE): never requested
            spec = pb.jit_spec(r)
            q, kv, o, *rest = pb._torch_args(r.args)
            if r.generator == "single_prefill":
                uri = m.get_single_prefill_uri(r.backend, q, kv, o, *rest[:2], 0, *rest[2:], False)
            elif r.generator == "batch_decode":
                uri = m.get_batch_decode_uri(q, kv, o, torch.int32, *rest[1:3], 0, *rest[3:])
            else:
                uri = m.get_batch_prefill_uri(r.backend, q, kv, o, torch.int32, *rest[1:3], 0, *rest[3:], False)
            assert spec.name.startswith(uri), (spec.name, uri)
            checked += 1
    assert checked > 20


def test_stages_run_fa2_then_fa3_then_auto_each_with_its_modules(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import kernels.flashinfer.adapter as fi

    monkeypatch.setattr(fi.TARGET, "backends", lambda device: ("fa2", "fa3", "auto", "fa2+graph", "auto+graph"))
    cases = [PAGED, PAGED_MASK, DECODE, SINGLE, FP8_KV]
    stages = fi.TARGET.stages(cases, ["auto", "fa3", "fa2+graph", "fa2", "auto+graph"], "cpu")
    assert [(s.name, s.backends) for s in stages] == [
        ("fa2", ("fa2+graph", "fa2")),
        ("fa3", ("fa3",)),
        ("auto", ("auto", "auto+graph")),
    ]
    fa3_reqs = [r for r in pb.requests_for(cases, ["fa3"], "cpu", pb.supports_fn(fi.TARGET, "cpu"))]
    assert fa3_reqs and all(r.backend == "fa3" for r in fa3_reqs)
    assert PAGED_MASK.mask == "custom" and not any(r.args[:3] == ("bf16", "e4m3fn", "bf16") for r in fa3_reqs)
    monkeypatch.setattr(pb, "prebuild", lambda reqs: pb.BuildResult(requested=[r.label for r in reqs]))
    summary = stages[0].prepare()
    assert "batch_prefill_fa2:fa2:bf16,bf16,bf16,int32,128,128,False,False" in summary["requested"]
    assert any(lbl.startswith("batch_decode:fa2:") for lbl in summary["requested"])


def test_a_prebuild_still_running_does_not_hold_the_process_at_exit() -> None:
    """A run whose time budget ran out during a prebuild must exit when its records are written
    (on the H200 the interpreter joined the builder threads and the step's timeout killed it)."""
    import subprocess
    import textwrap
    import time

    script = textwrap.dedent("""
        import threading, time
        from kernels.flashinfer import prebuild as pb
        class Slow:
            def build(self, need_lock):
                time.sleep(40)
        pb.fl.import_flashinfer = lambda: None
        pb.jit_spec = lambda r: Slow()
        req = pb.ModuleRequest("single_prefill", "fa2", ("bf16",))
        threading.Thread(target=pb.prebuild, args=([req],), daemon=True).start()
        time.sleep(0.5)
    """)
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", script],
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        timeout=35,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    assert time.perf_counter() - t0 < 30  # it left the build behind instead of waiting 40 s for it


def test_the_command_builds_every_module_of_the_matrix_before_a_run(
    fake: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`attncheck prebuild`: the first step of a device session builds the matrix's modules for the
    runs to come; bad usage exits 2 naming the value, before building anything."""
    import json

    import kernels.flashinfer.adapter as fi

    from kernels.protocol import Support

    _fake_generators(monkeypatch)
    monkeypatch.setattr(fi.TARGET, "backends", lambda device: ("fa2", "fa3", "auto", "fa2+graph"))
    monkeypatch.setattr(fi.TARGET, "available", lambda device: Support.yes())  # the fake is no stand-in
    quant = types.ModuleType("flashinfer.jit.quantization")
    quant.gen_quantization_module = lambda: _Spec("quantization", ())
    monkeypatch.setitem(sys.modules, "flashinfer.jit.quantization", quant)
    out = tmp_path / "prebuild.json"
    assert prebuild_command(["--device", "cpu", "--backend", "fa2+graph", "--backend", "fa3", "--out", str(out)]) == 0
    summary = json.loads(out.read_text())
    expected = pb.requests_for(fm.build("quick"), ["fa2", "fa3"], "cpu", pb.supports_fn(fi.TARGET, "cpu"))
    assert summary["families"] == ["fa2", "fa3"] and summary["requested"] == [r.label for r in expected]
    assert len(_Spec.built) == len(expected)
    _Spec.built = []
    assert (
        prebuild_command(["--device", "cpu", "--backend", "cudnn"]) == 2
        and "--backend cudnn" in capsys.readouterr().err
    )
    assert prebuild_command(["--device", "cpu", "--budget", "huge"]) == 2 and "huge" in capsys.readouterr().err
    assert _Spec.built == []


def test_the_slowest_modules_are_queued_first(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """fa3 batch prefill modules took 60-150 s each on the H200: queued last (the matrix's first-seen order),
    they alone decided when the prebuild ended; one worker shows the queue's order."""
    _fake_generators(monkeypatch)
    reqs = [
        pb.module_request(DECODE, "fa2", "cpu"),
        pb.module_request(SINGLE, "fa2", "cpu"),
        pb.module_request(PAGED, "fa2", "cpu"),
        pb.module_request(SINGLE, "fa3", "cpu"),
        pb.module_request(PAGED, "fa3", "cpu"),
    ]
    res = pb.prebuild(reqs, cores=pb.JOBS_PER_BUILD)  # one worker
    assert res.requested == [r.label for r in reqs]  # the summary keeps the asked order
    assert [n for n, _, _ in _Spec.built] == ["prefill", "single", "prefill_fa2_primary", "single", "decode"]
    assert [a[0] for n, a, _ in _Spec.built if n == "single"] == ["fa3", "fa2"]


def test_tensor_core_decode_prebuilds_the_prefill_module_the_run_loads(
    fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--adapter-option decode_tensor_cores=true` makes decode plan a prefill module (decode.py:2397): the run's
    stages must prebuild that one, not the CUDA-core decode module the run never loads."""
    import kernels.flashinfer.adapter as fi

    monkeypatch.setattr(fi.TARGET, "backends", lambda device: ("fa2", "fa3", "auto"))
    plain = pb.requests_for([DECODE], ["fa2"], "cpu", lambda c, b: True)
    tc = pb.requests_for([DECODE], ["fa2"], "cpu", lambda c, b: True, decode_tensor_cores=True)
    assert [r.generator for r in plain] == ["batch_decode"] and [r.generator for r in tc] == ["batch_prefill_fa2"]
    monkeypatch.setattr(pb, "prebuild", lambda reqs: pb.BuildResult(requested=[r.label for r in reqs]))
    (stage,) = fi.TARGET.stages([DECODE], ["fa2"], "cpu", {"decode_tensor_cores": True})
    assert stage.prepare()["requested"] == [tc[0].label]
    (stage,) = fi.TARGET.stages([DECODE], ["fa2"], "cpu", {})
    assert stage.prepare()["requested"] == [plain[0].label]


def test_the_command_prebuilds_given_cases_with_tensor_core_decode(
    fake: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--case @file` narrows the prebuild to a session's cases (a runner's 30 minutes do not hold the whole
    matrix's 36 modules); `--decode-tensor-cores` matches a run with that adapter option; a bad file exits 2."""
    import json

    import kernels.flashinfer.adapter as fi
    from kernels.protocol import Support

    _fake_generators(monkeypatch)
    monkeypatch.setattr(fi.TARGET, "backends", lambda device: ("fa2", "fa3", "auto"))
    monkeypatch.setattr(fi.TARGET, "available", lambda device: Support.yes())
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([DECODE.to_json(), PAGED.to_json()]))
    out = tmp_path / "prebuild.json"
    assert (
        prebuild_command(
            ["--device", "cpu", "--backend", "fa2", "--case", f"@{cases}", "--decode-tensor-cores", "--out", str(out)]
        )
        == 0
    )
    summary = json.loads(out.read_text())
    assert summary["cases"] == 2 and summary["decode_tensor_cores"] is True and summary["budget"] is None
    assert summary["requested"] == [
        "batch_prefill_fa2:fa2:bf16,bf16,bf16,int32,128,128,True,False",
        "batch_prefill_fa2:fa2:bf16,bf16,bf16,int32,128,128,False,False",
    ]
    assert prebuild_command(["--device", "cpu", "--case", f"@{tmp_path / 'missing.json'}"]) == 2
    assert "missing.json" in capsys.readouterr().err
