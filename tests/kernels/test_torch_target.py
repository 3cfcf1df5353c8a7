"""The torch target against the oracle: every CPU backend, every layout and mask feature.

Each (backend, case) pair either matches the fp32 oracle within the tolerance rule, or is
declined by supports() for the reason listed in EXPECTED_DECLINES: a skip here is a stated
decision, not an escape. The remaining tests pin the adapter contract: poisoned outputs,
refusals, declines, auto's reported choice, fresh(), and that plans never go stale.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import pytest
import torch

import kernels.torch_flex as torch_flex
import kernels.torch_sdpa as torch_sdpa
from kernels import get_target, skips
from kernels.errors import LibraryRefused, UnknownBackend, UnsupportedCase
from kernels.protocol import NOT_REPORTED, AttentionKernel, Support
from kernels.torch_target import per_request_backends
from oracle.judge import Truth, judge, truth
from scenarios.case import Case
from scenarios.dtypes import to_torch
from scenarios.errors import InvalidInputs
from scenarios.tensors import Inputs, materialize, to_device

TORCH = get_target("torch")
CPU = "cpu"
# The per-request backends (batch 1); the batched ones: tests/kernels/test_torch_batched.py.
CPU_BACKENDS = per_request_backends(CPU)
SDPA_NAMES = {"math", "flash", "efficient", "cudnn"}

_H = dict(num_qo_heads=4, num_kv_heads=2, head_dim_qk=64, head_dim_vo=64)

# name -> case; names are the pytest ids. Lengths are small: the oracle and eager flex run on CPU.
CASES: dict[str, Case] = {
    "ragged-gqa-bf16": Case("ragged", (5, 9), (12, 9), 8, 2, 64, 64, "bf16", "bf16", "bf16"),
    "ragged-mqa-fp16-causal-qo<kv": Case("ragged", (4, 7), (20, 7), 4, 1, 64, 64, "fp16", "fp16", "fp16", causal=True),
    "ragged-fp32-causal-qo>kv": Case(
        "ragged", (9, 3), (4, 3), q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32", causal=True, **_H
    ),
    "ragged-mha-bf16-causal-qo>kv": Case("ragged", (9, 3), (4, 3), 4, 4, 64, 64, causal=True),
    "ragged-mha-fp16-custom": Case("ragged", (6, 5), (19, 5), 4, 4, 64, 64, "fp16", "fp16", "fp16", mask="custom"),
    "ragged-HND-causal-window-custom": Case(
        "ragged", (6, 8), (15, 8), kv_layout="HND", causal=True, window_left=4, mask="custom", **_H
    ),
    "ragged-zero-lengths": Case("ragged", (0, 5, 0, 3), (7, 0, 0, 6), causal=True, **_H),
    "ragged-empty-batch": Case("ragged", (), (), **_H),
    "paged-empty-batch": Case("paged", (), (), page_size=5, **_H),
    "paged-p1-NHD-causal": Case("paged", (3, 6), (11, 6), page_size=1, causal=True, **_H),
    "paged-p5-HND-causal-window": Case(
        "paged",
        (6, 2),
        (23, 9),
        page_size=5,
        kv_layout="HND",
        causal=True,
        window_left=3,
        q_dtype="fp16",
        kv_dtype="fp16",
        o_dtype="fp16",
        **_H,
    ),
    "paged-p5-NHD-custom": Case("paged", (5, 4), (13, 10), page_size=5, mask="custom", **_H),
    "paged-p5-HND-fp32-gqa-own-scale": Case(
        "paged", (7,), (16,), 8, 2, 32, 32, "fp32", "fp32", "fp32", page_size=5, kv_layout="HND", sm_scale=0.3
    ),
    "paged-kv0-beside-real-causal": Case("paged", (3, 2), (0, 9), page_size=5, causal=True, **_H),
    "decode-mqa-p5-HND": Case("decode", (1, 1, 1), (1, 17, 40), 8, 1, 64, 64, page_size=5, kv_layout="HND"),
    "decode-p1-window": Case(
        "decode",
        (1, 1),
        (9, 30),
        page_size=1,
        window_left=5,
        causal=True,
        q_dtype="fp16",
        kv_dtype="fp16",
        o_dtype="fp16",
        **_H,
    ),
    "single-fp16-window": Case(
        "single", (10,), (25,), window_left=4, q_dtype="fp16", kv_dtype="fp16", o_dtype="fp16", **_H
    ),
    "single-bf16-large-logits": Case("single", (8,), (33,), causal=True, input_scale=4.0, **_H),
    "ragged-dqk192-dvo128": Case("ragged", (7, 12), (30, 12), 4, 4, 192, 128, causal=True),
    "single-gqa8-short-q": Case("single", (17,), (300,), 16, 2, 128, 128, causal=True),
    "single-soft-cap": Case("single", (17,), (65,), causal=True, logits_soft_cap=5.0, input_scale=4.0, **_H),
}

# (backend, case name) -> the reason constant supports() must decline with. Everything else runs.
EXPECTED_DECLINES: dict[tuple[str, str], str] = {
    ("flash", "ragged-dqk192-dvo128"): skips.LIBRARY_REFUSED,  # CPU flash needs Dqk == Dvo
    **{(b, "single-soft-cap"): skips.NO_SOFT_CAP for b in ("math", "flash", "auto")},
}

_TRUTH: dict[str, tuple[Inputs, Truth]] = {}


def _truth(name: str) -> tuple[Inputs, Truth]:
    """Inputs and oracle truth of a named case, computed once per worker."""
    if name not in _TRUTH:
        inputs = materialize(CASES[name], seed=0, device=CPU)
        _TRUTH[name] = (inputs, truth(inputs))
    return _TRUTH[name]


def _judged(adapter: AttentionKernel, name: str) -> tuple[Any, Any, Any]:
    inputs, t = _truth(name)
    adapter.plan(inputs)
    res = adapter.run(inputs)
    out_cmp, lse_cmp = judge(
        t, res.out, res.lse, lse_base=res.lse_base, adapter=adapter.target, backend=adapter.backend
    )
    return res, out_cmp, lse_cmp


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_backend_matches_oracle_or_declines_as_expected(backend: str, name: str) -> None:
    """Each CPU backend matches the oracle on each case, or declines it for the listed reason."""
    adapter = TORCH.make(backend, CPU)
    sup = adapter.supports(CASES[name])
    expected = EXPECTED_DECLINES.get((backend, name))
    if expected is not None:
        assert not sup.ok and skips.constant_of(sup.reason) == expected, sup.reason
        return
    assert sup.ok, sup.reason
    res, out_cmp, lse_cmp = _judged(adapter, name)
    assert out_cmp.passed, out_cmp.summary()
    if res.lse is not None:
        assert lse_cmp is not None and lse_cmp.passed, lse_cmp.summary() if lse_cmp else "no lse comparison"
    assert res.out.dtype == to_torch(CASES[name].o_dtype)
    assert res.fallback_reason is NOT_REPORTED
    if backend == "auto":
        assert set(res.resolved_backend.split("+")) <= SDPA_NAMES | {torch_sdpa.EMPTY_PATH}
    else:
        assert res.resolved_backend == backend


# ---- supports(): declines carry their reason constant ---------------------------------------

_BASE = Case("ragged", (4,), (9,), **_H)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize(
    "change, constant",
    [
        (dict(q_dtype="e4m3fn", kv_dtype="e4m3fn", o_dtype="bf16"), skips.NO_FP8),
        (dict(q_dtype="fp16", kv_dtype="e5m2", o_dtype="fp16"), skips.NO_FP8),
        (dict(q_dtype="fp16", kv_dtype="bf16", o_dtype="fp16"), skips.MIXED_QKV_DTYPE),
        (dict(q_dtype="bf16", kv_dtype="bf16", o_dtype="fp32"), skips.OUTPUT_DTYPE),
    ],
    ids=["fp8", "fp8-kv-only", "mixed-qkv", "o-dtype"],
)
def test_supports_declines_dtypes_no_torch_backend_takes(backend: str, change: dict, constant: str) -> None:
    """fp8, mixed q/kv dtypes and a foreign output dtype are declined by every backend, by name."""
    sup = TORCH.make(backend, CPU).supports(_BASE.replace(**change))
    assert not sup.ok and skips.constant_of(sup.reason) == constant


@pytest.mark.parametrize("backend", ["math", "flash", "auto"])
def test_sdpa_declines_soft_cap(backend: str) -> None:
    """SDPA has no score modification, so a soft-capped case is declined with NO_SOFT_CAP."""
    sup = TORCH.make(backend, CPU).supports(_BASE.replace(logits_soft_cap=30.0))
    assert not sup.ok and skips.constant_of(sup.reason) == skips.NO_SOFT_CAP


def test_flex_takes_soft_cap_and_declines_cases_past_its_eager_budget() -> None:
    """Flex serves a soft cap; on the CPU it declines a case past FLEX_EAGER_MAX_SCORES as TOO_LARGE."""
    flex = TORCH.make("flex", CPU)
    assert flex.supports(_BASE.replace(logits_soft_cap=30.0)).ok
    side = math.isqrt(torch_flex.FLEX_EAGER_MAX_SCORES // _BASE.num_qo_heads) + 1
    big = _BASE.replace(qo_lens=[side], kv_lens=[side])
    sup = flex.supports(big)
    assert not sup.ok and skips.constant_of(sup.reason) == skips.TOO_LARGE
    assert flex.supports(big.replace(qo_lens=[side - 2], kv_lens=[side - 2])).ok


def test_cpu_flash_decline_quotes_torch_reason() -> None:
    """The probe's decline keeps torch's own explanation (CPU flash needs equal head dims)."""
    sup = TORCH.make("flash", CPU).supports(CASES["ragged-dqk192-dvo128"])
    assert skips.constant_of(sup.reason) == skips.LIBRARY_REFUSED
    assert "same last dimension" in sup.reason


def test_plan_refuses_a_declined_case_with_its_reason() -> None:
    """plan() on a case supports() declines raises UnsupportedCase carrying the decision."""
    adapter = TORCH.make("math", CPU)
    case = CASES["single-soft-cap"]
    with pytest.raises(UnsupportedCase) as err:
        adapter.plan(_truth("single-soft-cap")[0])
    e = err.value
    assert (e.target, e.backend, e.case_id, e.reason) == ("torch", "math", case.id, adapter.supports(case).reason)


def test_cuda_adapter_without_cuda_declines_as_device_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a CUDA device, the target is unavailable there and its adapters decline every case."""
    from kernels import _env

    monkeypatch.setattr(_env, "cuda_available", lambda: False)
    assert skips.constant_of(TORCH.available("cuda").reason) == skips.DEVICE_BACKEND
    assert TORCH.available(CPU).ok
    for backend in TORCH.backends("cuda"):
        sup = TORCH.make(backend, "cuda").supports(_BASE)
        assert not sup.ok and skips.constant_of(sup.reason) == skips.DEVICE_BACKEND


# ---- refusals at run time -------------------------------------------------------------------


def test_forced_backend_refusal_at_run_time_raises_library_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real 'No available kernel' from torch becomes LibraryRefused with torch's message, never a pass."""
    adapter = TORCH.make("flash", CPU)
    monkeypatch.setattr(adapter, "supports", lambda case: Support.yes())  # a supports() that missed a rule
    inputs = _truth("ragged-dqk192-dvo128")[0]
    with pytest.raises(LibraryRefused) as err:
        adapter.run(inputs)
    e = err.value
    assert (e.target, e.backend, e.case_id) == ("torch", "flash", inputs.case.id)
    assert "No available kernel" in e.message


def test_other_library_errors_propagate_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """A RuntimeError that is not a refusal is not reclassified: the runner counts it as an error."""

    def broken(*args: Any, **kwargs: Any) -> torch.Tensor:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", broken)
    with pytest.raises(RuntimeError, match="illegal memory access") as err:
        TORCH.make("math", CPU).run(_truth("ragged-gqa-bf16")[0])
    assert not isinstance(err.value, LibraryRefused)


# ---- never invent an answer -----------------------------------------------------------------


def _counting(monkeypatch: pytest.MonkeyPatch, owner: Any, attr: str) -> list[int]:
    calls: list[int] = []
    real: Callable[..., Any] = getattr(owner, attr)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, attr, counted)
    return calls


class _SdpaCalls(torch.overrides.TorchFunctionMode):
    """Counts top-level SDPA calls (a mode, not a patch: CausalBias dispatches on the real function)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func is torch.nn.functional.scaled_dot_product_attention:
            self.calls += 1  # nested calls run with this mode switched off, so each counts once
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("backend", ["math", "flash", "auto"])
def test_sdpa_is_asked_for_every_request_including_zero_length_ones(backend: str) -> None:
    """Zero-length requests go to SDPA too (torch answers them), one call per request."""
    inputs, t = _truth("ragged-zero-lengths")
    adapter = TORCH.make(backend, CPU)
    adapter.plan(inputs)  # supports() probes SDPA itself; only the run's calls are counted
    with _SdpaCalls() as mode:
        res = adapter.run(inputs)
    assert mode.calls == CASES["ragged-zero-lengths"].batch_size
    out_cmp, _ = judge(t, res.out, None)
    assert out_cmp.passed, out_cmp.summary()


def test_flex_is_called_with_a_padded_slot_when_the_batch_has_no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no KV at all, flex still computes the rows (one masked-out slot), giving 0 and LSE -inf."""
    calls = _counting(monkeypatch, torch_flex, "_call")
    case = Case("ragged", (3, 2), (0, 0), **_H)
    inputs = materialize(case, seed=0)
    adapter = TORCH.make("flex", CPU)
    adapter.plan(inputs)
    res = adapter.run(inputs)
    out_cmp, lse_cmp = judge(truth(inputs), res.out, res.lse, lse_base=res.lse_base)
    assert len(calls) == 1 and out_cmp.passed and lse_cmp is not None and lse_cmp.passed
    assert bool(torch.isneginf(res.lse).all())


@pytest.mark.parametrize("backend", ["flex", "flex-padded"])
def test_eager_flex_is_traced_with_static_shapes(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eager flex traces each call through dynamo; the adapters ask for static shapes (a plain retrace per
    length, cheaper than a symbolic one) and leave dynamo's setting as it was after the call."""
    import torch._dynamo.config as dynamo_config
    import torch.nn.attention.flex_attention as flex_module

    seen: list[bool] = []
    real = flex_module.flex_attention

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(dynamo_config.automatic_dynamic_shapes)
        return real(*args, **kwargs)

    monkeypatch.setattr(flex_module, "flex_attention", recording)
    before = dynamo_config.automatic_dynamic_shapes
    adapter = TORCH.make(backend, CPU)
    for qo in ((3, 2), (5, 4)):
        inputs = materialize(Case("ragged", qo, (6, 5), **_H), seed=0)
        res = adapter.run(inputs)
        assert judge(truth(inputs), res.out, res.lse, lse_base=res.lse_base)[0].passed
    assert seen == [False, False] and dynamo_config.automatic_dynamic_shapes == before


def test_flex_returns_empty_tensors_without_a_call_when_there_are_no_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no query rows there is nothing to ask flex: empty out and LSE, no call."""
    calls = _counting(monkeypatch, torch_flex, "_call")
    res = TORCH.make("flex", CPU).run(_truth("ragged-empty-batch")[0])
    assert calls == [] and res.out.shape == (0, 4, 64) and res.lse is not None and res.lse.shape == (0, 4)


# ---- outputs are poisoned: an unwritten row fails ------------------------------------------

# (backend, the module whose run() calls the library): every torch adapter's call allocates its own output
_OWN_OUTPUT = {
    "math": "kernels.torch_sdpa",
    "padded-math": "kernels.torch_padded",
    "nested-math": "kernels.torch_nested",
    "flex": "kernels.torch_flex",
    "flex-padded": "kernels.torch_flex_padded",
}


@pytest.mark.parametrize("backend", list(_OWN_OUTPUT))
def test_each_call_that_allocates_its_output_first_hands_back_poisoned_memory(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch allocates these calls' outputs, so a row the library never writes reads what the memory held: 0 in
    a fresh CUDA process. Before each such call the adapter hands poisoned blocks of the output's dtype, larger
    than its output, to the allocator (a no-op on the CPU; what it does on CUDA, the tests below)."""
    import importlib

    module = importlib.import_module(_OWN_OUTPUT[backend])
    calls: list[tuple[str, torch.dtype, int]] = []
    monkeypatch.setattr(module, "hand_back_poisoned", lambda d, t, n: calls.append((d.type, t, n)))
    inputs = materialize(Case("ragged", (3, 2), (6, 5), 4, 4, head_dim_qk=64, head_dim_vo=64), seed=0)
    res = TORCH.make(backend, CPU).run(inputs)
    assert judge(truth(inputs), res.out, res.lse, lse_base=res.lse_base)[0].passed
    per_request = backend == "math"
    assert len(calls) == (2 if per_request else 1), calls
    assert all(d == "cpu" and t == inputs.q.dtype and n >= (3 if per_request else 5) * 4 * 64 for d, t, n in calls)


def test_poisoned_memory_is_handed_back_on_cuda_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The blocks read as unwritten in the output's dtype: 16 small-pool ones of 512 KiB, two large-pool ones
    larger than the output and than 1 MiB. Only a CUDA device gets them (the CPU allocator's reuse is not the
    harness's to arrange)."""
    from kernels import _torch_common as common
    from scenarios.poison import unwritten_mask

    blocks = common.poisoned_blocks(torch.device("cpu"), torch.bfloat16, 3 * 2**20)
    assert [b.numel() for b in blocks] == [2**18] * 16 + [3 * 2**20 + 1] * 2
    assert all(b.dtype == torch.bfloat16 and bool(unwritten_mask(b).all()) for b in blocks)
    assert [b.numel() for b in common.poisoned_blocks(torch.device("cpu"), torch.float32, 10)][-1] == 2**18 + 1
    asked: list[str] = []
    monkeypatch.setattr(common, "poisoned_blocks", lambda d, t, n: asked.append(d.type) or [])
    common.hand_back_poisoned(torch.device("cpu"), torch.float16, 100)
    common.hand_back_poisoned(torch.device("cuda"), torch.float16, 100)
    assert asked == ["cuda"]


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_a_row_the_adapter_never_writes_stays_poisoned_and_fails(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the adapter skips a row, the comparison counts it unwritten and the case fails."""
    import kernels._torch_common as common

    def drop_first_row(out: torch.Tensor, lo: int, rows: torch.Tensor) -> None:
        out[lo + 1 : lo + rows.shape[0]].copy_(rows[1:])

    for module in (common, torch_sdpa, torch_flex):
        monkeypatch.setattr(module, "store_rows", drop_first_row)
    _, out_cmp, _ = _judged(TORCH.make(backend, CPU), "paged-p5-NHD-custom")
    c = CASES["paged-p5-NHD-custom"]
    assert not out_cmp.passed
    assert out_cmp.unwritten_count >= c.num_qo_heads * c.head_dim_vo  # at least one whole row


# ---- flex LSE is the natural log ------------------------------------------------------------


def test_flex_lse_is_natural_log() -> None:
    """Flex's LSE matches the oracle in base e, and would not if read as base 2."""
    res, _, lse_cmp = _judged(TORCH.make("flex", CPU), "paged-p5-HND-fp32-gqa-own-scale")
    assert res.lse_base == math.e and lse_cmp is not None and lse_cmp.passed, lse_cmp
    _, t = _truth("paged-p5-HND-fp32-gqa-own-scale")
    _, as_base2 = judge(t, res.out, res.lse, lse_base=2)
    assert as_base2 is not None and not as_base2.passed


def test_sdpa_reports_no_lse() -> None:
    """SDPA exposes no LSE publicly, so its adapters return None rather than a derived one."""
    for backend in ("math", "flash", "auto"):
        res = TORCH.make(backend, CPU).run(_truth("ragged-gqa-bf16")[0])
        assert res.lse is None


# ---- auto reports SDPA's choice -------------------------------------------------------------


def test_auto_reports_the_backend_sdpa_chose() -> None:
    """auto names CPU flash where it can run and math where it cannot (Dqk != Dvo), 'empty' for no work."""
    assert TORCH.make("auto", CPU).run(_truth("ragged-gqa-bf16")[0]).resolved_backend == "flash"
    assert TORCH.make("auto", CPU).run(_truth("ragged-dqk192-dvo128")[0]).resolved_backend == "math"
    assert TORCH.make("auto", CPU).run(_truth("ragged-empty-batch")[0]).resolved_backend == torch_sdpa.EMPTY_PATH


def test_auto_joins_differing_choices_sorted(monkeypatch: pytest.MonkeyPatch) -> None:
    """When requests of one batch go to different backends, auto reports them joined by '+'."""
    answers = iter(["math", "flash"])
    monkeypatch.setattr(torch_sdpa, "route", lambda *a, **k: next(answers))
    assert TORCH.make("auto", CPU).run(_truth("ragged-gqa-bf16")[0]).resolved_backend == "flash+math"


# ---- lifecycle: fresh(), plan reuse, history --------------------------------------------------


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_fresh_gives_an_equal_config_in_a_new_object(backend: str) -> None:
    """fresh() returns a different adapter with the same target, backend, device and type."""
    a = TORCH.make(backend, CPU)
    a.run(_truth("ragged-gqa-bf16")[0])
    b = a.fresh()
    assert b is not a and type(b) is type(a)
    assert (b.target, b.backend, b.device) == (a.target, a.backend, a.device)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_run_with_other_inputs_than_planned_does_not_use_the_stale_plan(backend: str) -> None:
    """plan(A) then run(B) computes B: the adapter's own preparation never goes stale."""
    a = TORCH.make(backend, CPU)
    a.plan(_truth("paged-p1-NHD-causal")[0])
    res = a.run(_truth("paged-p5-NHD-custom")[0])
    out_cmp, _ = judge(_truth("paged-p5-NHD-custom")[1], res.out, None)
    assert out_cmp.passed, out_cmp.summary()


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_long_lived_adapter_matches_a_fresh_one(backend: str) -> None:
    """After other batches (long, empty, masked), the adapter gives what a fresh one gives, bit for bit."""
    a = TORCH.make(backend, CPU)
    for name in ("paged-p5-HND-causal-window", "ragged-empty-batch", "ragged-HND-causal-window-custom"):
        a.run(_truth(name)[0])
    inputs = _truth("decode-mqa-p5-HND")[0]
    a.plan(inputs)
    old = a.run(inputs)
    new = a.fresh().run(inputs)
    assert torch.equal(old.out, new.out) and old.resolved_backend == new.resolved_backend


def test_unknown_backend_carries_its_fields() -> None:
    """A backend the device lacks raises UnknownBackend naming target, backend, offer and device."""
    with pytest.raises(UnknownBackend) as err:
        TORCH.make("efficient", CPU)
    e = err.value
    assert (e.target, e.backend, e.known, e.device) == ("torch", "efficient", TORCH.backends(CPU), CPU)


def test_backends_per_device() -> None:
    """The CPU offers math, flash, auto and flex per request, then the batched ones; CUDA adds efficient and
    cudnn to both SDPA families (padded and nested)."""
    batched_cpu = ("padded-math", "padded-flash", "padded-auto", "nested-math", "nested-auto", "flex-padded")
    assert TORCH.backends(CPU) == ("math", "flash", "auto", "flex") + batched_cpu
    assert TORCH.backends("cuda") == ("math", "flash", "efficient", "cudnn", "auto", "flex") + (
        "padded-math",
        "padded-flash",
        "padded-efficient",
        "padded-cudnn",
        "padded-auto",
        "nested-math",
        "nested-flash",
        "nested-efficient",
        "nested-cudnn",
        "nested-auto",
        "flex-padded",
    )
    assert TORCH.backends("cuda:1") == TORCH.backends("cuda")
    assert TORCH.backend_groups(CPU) == (("math", "flash", "auto", "flex"), batched_cpu)


def test_inputs_on_another_device_are_refused() -> None:
    """An adapter bound to the CPU refuses tensors that live elsewhere, naming both devices."""
    inputs = to_device(_truth("ragged-gqa-bf16")[0], "meta")
    with pytest.raises(InvalidInputs) as err:
        TORCH.make("math", CPU).plan(inputs)
    assert err.value.what == "inputs.device"


# ---- paging: the adapters read through the page table, independently of the oracle ---------


def _share_first_page(inputs: Inputs) -> Inputs:
    """Point request 1's first page at request 0's first page (prefix sharing)."""
    assert inputs.kv_page_indptr is not None and inputs.kv_page_indices is not None
    idx = inputs.kv_page_indices.clone()
    idx[int(inputs.kv_page_indptr[1])] = idx[0]
    return Inputs(**{**inputs.__dict__, "kv_page_indices": idx})


def test_shared_pages_are_read_by_sdpa_and_declined_by_flex() -> None:
    """Pages shared between requests: SDPA gathers them per request; flex cannot name a slot twice."""
    inputs = _share_first_page(materialize(CASES["paged-p5-NHD-custom"], seed=1))
    res = TORCH.make("math", CPU).run(inputs)
    out_cmp, _ = judge(truth(inputs), res.out, None)
    assert out_cmp.passed, out_cmp.summary()
    with pytest.raises(UnsupportedCase) as err:
        TORCH.make("flex", CPU).plan(inputs)
    assert skips.constant_of(err.value.reason) == skips.LAYOUT


# ---- CUDA: the same cases on the GPU's backends (skipped on a host without CUDA) -------------

CUDA = "cuda"
requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

# On CUDA, which shapes a fused backend takes depends on torch, cuDNN and the GPU, so declines are
# checked by kind: only the library's own refusal (or soft cap) may be a reason, and each fused
# backend must still serve MIN_CUDA_SERVED of the cases, so a probe that declines everything fails.
CUDA_DECLINE_REASONS: dict[str, set[str]] = {
    "math": {skips.NO_SOFT_CAP},
    "auto": {skips.NO_SOFT_CAP},
    "flex": set(),
    **{b: {skips.NO_SOFT_CAP, skips.LIBRARY_REFUSED} for b in ("flash", "efficient", "cudnn")},
}
MIN_CUDA_SERVED = 3
# Known torch disagreements with "a row with nothing to attend is 0", seen on an H200 with
# torch 2.11.0+cu130 and cuDNN 9.19 (strict: a torch that fixes them turns these red, to be removed).
_CUDNN_MASKED_ROW = (
    "cuDNN SDPA writes a non-zero output row where the boolean mask leaves nothing to "
    "attend; SDPA's stated semantics since torch 2.5 are 0 "
    "(https://github.com/pytorch/pytorch/pull/133882)"
)
_EFFICIENT_QO_GT_KV = (
    "mem-efficient SDPA with causal_lower_right and qo_len > kv_len leaves the rows with "
    "no key unmasked (https://github.com/pytorch/pytorch/pull/193632)"
)
CUDA_KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("cudnn", "ragged-HND-causal-window-custom"): _CUDNN_MASKED_ROW,
    ("auto", "ragged-HND-causal-window-custom"): _CUDNN_MASKED_ROW + "; auto picks cuDNN",
    ("cudnn", "paged-p5-NHD-custom"): _CUDNN_MASKED_ROW,
    ("auto", "paged-p5-NHD-custom"): _CUDNN_MASKED_ROW + "; auto picks cuDNN",
    ("cudnn", "ragged-mha-fp16-custom"): _CUDNN_MASKED_ROW,
    ("auto", "ragged-mha-fp16-custom"): _CUDNN_MASKED_ROW + "; auto picks cuDNN",
    ("cudnn", "ragged-mha-bf16-causal-qo>kv"): _CUDNN_MASKED_ROW + " (materialised causal_lower_right)",
    ("efficient", "ragged-mha-bf16-causal-qo>kv"): _EFFICIENT_QO_GT_KV,
    ("flex", "single-gqa8-short-q"): (
        "compiled flex routes qo_len < 128 to its decoding template, whose BLOCK_M = next_pow2(qo_len x "
        "group) = 256 exceeds the 128 query block and leaves no config: InductorError 'No choices to "
        "select' (described in https://github.com/AgileRL/AgileRL/pull/643)"
    ),
}
_CUDA_TRUTH: dict[str, tuple[Inputs, Truth]] = {}


def _cuda_truth(name: str) -> tuple[Inputs, Truth]:
    if name not in _CUDA_TRUTH:
        inputs = materialize(CASES[name], seed=0, device=CUDA)
        _CUDA_TRUTH[name] = (inputs, truth(inputs))
    return _CUDA_TRUTH[name]


def _cuda_params() -> list[Any]:
    out = []
    for backend in per_request_backends(CUDA):
        for name in CASES:
            known = CUDA_KNOWN_FAILURES.get((backend, name))
            marks = [pytest.mark.xfail(strict=True, reason=known)] if known else []
            out.append(pytest.param(backend, name, marks=marks, id=f"{backend}-{name}"))
    return out


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("backend, name", _cuda_params())
def test_cuda_backend_matches_oracle_or_declines_as_the_library_says(backend: str, name: str) -> None:
    """Each CUDA backend matches the oracle on each case, or declines it for an allowed reason."""
    adapter = TORCH.make(backend, CUDA)
    sup = adapter.supports(CASES[name])
    if not sup.ok:
        assert skips.constant_of(sup.reason) in CUDA_DECLINE_REASONS[backend], sup.reason
        assert (backend, name) not in CUDA_KNOWN_FAILURES, f"known failure now declined: {sup.reason}"
        return
    inputs, t = _cuda_truth(name)
    adapter.plan(inputs)
    res = adapter.run(inputs)
    out_cmp, lse_cmp = judge(t, res.out, res.lse, lse_base=res.lse_base, adapter="torch", backend=backend)
    assert out_cmp.passed, out_cmp.summary()
    if res.lse is not None:
        assert lse_cmp is not None and lse_cmp.passed, lse_cmp.summary() if lse_cmp else "no lse comparison"
    if backend == "auto":
        assert set(res.resolved_backend.split("+")) <= SDPA_NAMES | {torch_sdpa.EMPTY_PATH}
    else:
        assert res.resolved_backend == backend


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("backend", per_request_backends(CUDA))
def test_cuda_backend_serves_a_share_of_the_cases(backend: str) -> None:
    """No CUDA backend declines (nearly) everything: each serves at least MIN_CUDA_SERVED cases."""
    adapter = TORCH.make(backend, CUDA)
    served = [n for n, c in CASES.items() if adapter.supports(c).ok]
    assert len(served) >= MIN_CUDA_SERVED, {n: adapter.supports(c).reason for n, c in CASES.items()}


@pytest.mark.cuda
@requires_cuda
def test_cuda_auto_reports_math_for_empty_requests_unless_torch_short_circuits_them() -> None:
    """Zero-length requests show in auto's name exactly when torch routes them to a backend."""
    res = TORCH.make("auto", CUDA).run(_cuda_truth("ragged-empty-batch")[0])
    assert res.resolved_backend == torch_sdpa.EMPTY_PATH
    res = TORCH.make("auto", CUDA).run(_cuda_truth("ragged-zero-lengths")[0])
    names = set(res.resolved_backend.split("+"))
    assert ("math" in names) == (not torch_sdpa.empty_input_shortcut("cuda")), res.resolved_backend


@pytest.mark.cuda
@requires_cuda
def test_on_cuda_an_output_after_the_hand_back_reads_as_unwritten() -> None:
    """What a library's output allocated next reads until written: the poison, where fresh memory reads 0."""
    from kernels._torch_common import hand_back_poisoned
    from scenarios.poison import unwritten_mask

    for n in (3 * 64 * 128, 4096 * 8 * 128):  # the small pool, the large pool
        hand_back_poisoned(torch.device(CUDA), torch.bfloat16, n)
        assert bool(unwritten_mask(torch.empty(n, dtype=torch.bfloat16, device=CUDA)).all()), n
