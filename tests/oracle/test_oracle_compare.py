"""oracle/compare.py, oracle/tolerances.py and oracle/judge.py: the verdict half of the oracle.

Poisoning must tell an element the kernel never wrote from a NaN it computed; neither passes,
whatever the bound. The tolerance rule and its table are tested here, and only here, with
literal numbers.
"""

from __future__ import annotations

import math

import pytest
import torch

from oracle import tolerances
from oracle.compare import compare
from scenarios.poison import poison, unwritten_mask
from oracle.judge import judge, truth
from oracle.reference import lse_to_base2
from scenarios.case import Case
from scenarios.dtypes import DTYPE_NAMES
from scenarios.tensors import materialize

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
DTYPE_IDS = ["fp16", "bf16", "fp32"]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_poisoned_tensor_is_all_nan_and_all_unwritten(dtype: torch.dtype) -> None:
    """poison() fills every element with a NaN that unwritten_mask() recognises."""
    t = poison(torch.zeros(3, 4, dtype=dtype))
    assert bool(torch.isnan(t).all()) and bool(unwritten_mask(t).all())


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_unwritten_elements_fail_even_under_an_infinite_bound(dtype: torch.dtype) -> None:
    """Elements left poisoned are counted as unwritten, the first one is reported, and the comparison fails."""
    t = poison(torch.empty(3, 4, dtype=dtype))
    t[0] = 1.0
    cmp = compare(t, torch.ones(3, 4), quantity="out", bound=math.inf)
    assert (cmp.unwritten_count, cmp.nan_count, cmp.inf_mismatch_count) == (8, 0, 0)
    assert cmp.worst_index == (1, 0) and not cmp.passed and cmp.ratio == math.inf


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_computed_nan_counts_as_nan_not_unwritten(dtype: torch.dtype) -> None:
    """A NaN the kernel computed (0/0, either sign) is a NaN, not an unwritten element, and never passes."""
    t = torch.zeros(2, 3, dtype=dtype)
    zero = torch.zeros((), dtype=dtype)
    t[0, 1] = zero / zero
    t[1, 2] = -(zero / zero)
    cmp = compare(t, torch.zeros(2, 3), quantity="out", bound=math.inf)
    assert (cmp.nan_count, cmp.unwritten_count) == (2, 0)
    assert not bool(unwritten_mask(t).any()) and not cmp.passed and cmp.worst_index == (0, 1)


def test_lse_neg_inf_against_finite_is_an_inf_mismatch() -> None:
    """Where the reference LSE is -inf (an empty row) anything but -inf is an inf mismatch."""
    ref = torch.tensor([-math.inf, -math.inf, 1.0])
    for actual, mismatches in (
        ([-math.inf, -math.inf, 1.0], 0),
        ([0.0, -math.inf, 1.0], 1),
        ([math.inf, -40.0, 1.0], 2),
    ):
        cmp = compare(torch.tensor(actual), ref, quantity="lse", bound=math.inf)
        assert cmp.inf_mismatch_count == mismatches and cmp.passed == (mismatches == 0)


def test_infinite_actual_against_finite_reference_fails() -> None:
    """A -inf where the reference is finite is an infinite error, which no finite bound passes."""
    cmp = compare(torch.tensor([-math.inf]), torch.tensor([2.0]), quantity="lse", bound=1e30)
    assert cmp.max_abs == math.inf and not cmp.passed


def test_error_equal_to_the_bound_passes_and_the_next_float_fails() -> None:
    """The bound is inclusive: max_abs == bound passes, the next float64 above it fails."""
    b = tolerances.bound(0.0, "fp32", "out", ref_scale=0.0)
    ref = torch.zeros(2, dtype=torch.float64)
    assert compare(torch.tensor([0.0, b], dtype=torch.float64), ref, quantity="out", bound=b).passed
    above = math.nextafter(b, math.inf)
    cmp = compare(torch.tensor([0.0, above], dtype=torch.float64), ref, quantity="out", bound=b)
    assert not cmp.passed and cmp.worst_index == (1,) and cmp.max_abs == above


def test_compare_refuses_mismatched_shapes() -> None:
    """Comparing tensors of different shapes is an error, not a verdict."""
    with pytest.raises(ValueError):
        compare(torch.zeros(2, 3), torch.zeros(3, 2), quantity="out", bound=1.0)


# ---- the tolerance table --------------------------------------------------------------------
def test_every_dtype_has_an_out_and_lse_floor() -> None:
    """FLOORS has one (atol, rtol) row per dtype a Case may name, for out and for lse."""
    assert set(tolerances.FLOORS) == {(d, q) for d in DTYPE_NAMES for q in ("out", "lse")}


def test_every_dtype_has_a_factor_and_fp32_the_largest() -> None:
    """FACTORS has one row per dtype a Case may name: 3 for 16-bit and fp8 cases, 16 for fp32 (issue 17)."""
    assert set(tolerances.FACTORS) == set(DTYPE_NAMES)
    assert tolerances.FACTORS["fp32"] == 16.0
    assert {d: k for d, k in tolerances.FACTORS.items() if d != "fp32"} == dict.fromkeys(DTYPE_NAMES[1:], 3.0)


@pytest.mark.parametrize("key", sorted(tolerances.FLOORS), ids="-".join)
def test_bound_is_factor_times_baseline_and_the_floor_only_where_the_baseline_is_zero(key: tuple[str, str]) -> None:
    """bound = FACTORS[dtype] * baseline_err, however far under the floor; atol + rtol * ref_scale at 0 only."""
    dtype, quantity = key
    atol, rtol = tolerances.FLOORS[key]
    k = tolerances.FACTORS[dtype]
    floor = atol + rtol * 3.0
    assert tolerances.floor(dtype, quantity, 3.0) == floor
    assert tolerances.bound(0.0, dtype, quantity, 3.0) == floor
    for baseline in (floor / 1e4, floor / 4, floor, 10 * floor):
        assert tolerances.bound(baseline, dtype, quantity, 3.0) == k * baseline
    assert tolerances.bound(floor, dtype, quantity, 3.0, factor=5.0) == 5.0 * floor


def test_floors_grow_as_dtypes_coarsen() -> None:
    """A coarser dtype never gets a tighter floor (fp32 <= fp16 <= bf16 <= e4m3 <= e5m2)."""
    order = ("fp32", "fp16", "bf16", "e4m3fn", "e5m2")
    for q in ("out", "lse"):
        floors = [tolerances.FLOORS[(d, q)] for d in order]
        assert floors == sorted(floors)
    assert tolerances.FLOORS[("e4m3fnuz", "out")] == tolerances.FLOORS[("e4m3fn", "out")]


@pytest.mark.parametrize(
    "dtypes, governing",
    [
        (("fp32", "fp32", "fp32"), "fp32"),
        (("bf16", "bf16", "fp32"), "bf16"),
        (("fp16", "fp16", "bf16"), "bf16"),
        (("bf16", "e4m3fn", "bf16"), "e4m3fn"),
        (("e4m3fn", "e5m2", "fp16"), "e5m2"),
        (("fp32", "fp32", "fp16"), "fp16"),
    ],
    ids=lambda x: "-".join(x) if isinstance(x, tuple) else f"is-{x}",
)
def test_governing_dtype_is_the_coarsest_of_q_kv_and_o(dtypes: tuple[str, str, str], governing: str) -> None:
    """The floor that applies is the least precise of the case's q, kv and output dtypes."""
    assert tolerances.governing_dtype(*dtypes) == governing


@pytest.mark.parametrize("issue", ["see slack thread", "", "TODO"], ids=["prose", "empty", "todo"])
def test_override_without_a_tracker_reference_is_refused(issue: str) -> None:
    """An Override whose issue is not a URL or #NNNN cannot be constructed."""
    with pytest.raises(ValueError):
        tolerances.Override("flashinfer", "fa2", "bf16", "out", 3.0, "known rounding", issue)


def test_override_applies_only_to_its_own_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """factor_for returns an override's factor for its exact (adapter, backend, dtype, quantity) only."""
    row = tolerances.Override("flashinfer", "fa2", "bf16", "out", 3.0, "known rounding", "#1234")
    monkeypatch.setattr(tolerances, "OVERRIDES", (row,))
    assert tolerances.factor_for("flashinfer", "fa2", "bf16", "out") == 3.0
    for other in (
        ("flashinfer", "fa3", "bf16", "out"),
        ("flashinfer", "fa2", "bf16", "lse"),
        ("torch", "fa2", "bf16", "out"),
        ("flashinfer", "fa2", "fp16", "out"),
    ):
        assert tolerances.factor_for(*other) == tolerances.FACTORS[other[2]]
    tolerances.Override(
        "flashinfer",
        "fa2",
        "bf16",
        "out",
        3.0,
        "known rounding",
        "https://github.com/flashinfer-ai/flashinfer/issues/1",
    )


# ---- judge: the rule applied, and LSE bases --------------------------------------------------
JUDGE_CASE = Case(
    layout="ragged",
    qo_lens=(3, 0, 2),
    kv_lens=(5, 2, 0),
    num_qo_heads=2,
    num_kv_heads=1,
    head_dim_qk=8,
    head_dim_vo=8,
    q_dtype="bf16",
    kv_dtype="bf16",
    o_dtype="bf16",
    causal=True,
)


def test_judge_passes_the_reference_itself_in_either_lse_base() -> None:
    """The oracle's own output passes, with its LSE given in base e or converted to base 2."""
    t = truth(materialize(JUDGE_CASE, seed=2))
    assert t.dtype == "bf16"
    for lse, base in ((t.ref.lse, math.e), (t.ref.lse / math.log(2.0), 2)):
        out_cmp, lse_cmp = judge(t, t.ref.out.clone(), lse.clone(), lse_base=base)
        assert out_cmp.passed and lse_cmp is not None and lse_cmp.passed


# fp32 at large logits and a wide head: the fp32 oracle's own error is far above the fp32 floor.
FP32_CASE = Case(
    "ragged",
    (5, 0, 9),
    (40, 3, 17),
    num_qo_heads=4,
    num_kv_heads=4,
    head_dim_qk=192,
    head_dim_vo=128,
    q_dtype="fp32",
    kv_dtype="fp32",
    o_dtype="fp32",
    input_scale=16.0,
)


def test_fp32_cases_are_judged_against_fp64_with_the_fp32_oracle_error_as_baseline() -> None:
    """All-fp32 cases take an fp64 reference, so honest fp32 attention (SDPA math) passes."""
    inputs = materialize(FP32_CASE, seed=0)
    t = truth(inputs)
    assert t.ref.precision == "fp64" and t.base.precision == "honest"
    assert t.out_baseline_err > 0
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    for i, (qo, kv) in enumerate(zip(FP32_CASE.qo_lens, FP32_CASE.kv_lens)):
        q0, k0 = int(inputs.qo_indptr[i]), int(inputs.kv_indptr[i])
        q = inputs.q[q0 : q0 + qo].transpose(0, 1)
        k, v = inputs.k[k0 : k0 + kv].transpose(0, 1), inputs.v[k0 : k0 + kv].transpose(0, 1)
        with sdpa_kernel([SDPBackend.MATH]):
            rows.append(torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(0, 1))
    out_cmp, _ = judge(t, torch.cat(rows), None)
    assert out_cmp.passed, out_cmp.summary()


def test_judge_fails_a_natural_log_lse_declared_as_base_2() -> None:
    """A natural-log LSE that an adapter declares to be base 2 is converted, and fails."""
    t = truth(materialize(JUDGE_CASE, seed=2))
    _, lse_cmp = judge(t, t.ref.out.clone(), t.ref.lse.clone(), lse_base=2)
    assert lse_cmp is not None and not lse_cmp.passed


def test_judge_refuses_an_lse_base_other_than_e_or_2() -> None:
    """An adapter must declare base e or 2; anything else is refused, never guessed."""
    t = truth(materialize(JUDGE_CASE, seed=2))
    with pytest.raises(ValueError):
        judge(t, t.ref.out, t.ref.lse, lse_base=10)


def test_judge_fails_a_poisoned_output() -> None:
    """An output the kernel never wrote fails the judge."""
    t = truth(materialize(JUDGE_CASE, seed=2))
    out_cmp, _ = judge(t, poison(torch.empty_like(t.ref.out)), None)
    assert not out_cmp.passed and out_cmp.unwritten_count == t.ref.out.numel()


@pytest.mark.parametrize("qo_lens, kv_lens", [((), ()), ((2, 0), (0, 3))], ids=["empty-batch", "no-keys"])
def test_truth_of_an_empty_batch_has_no_baseline_error(qo_lens: tuple, kv_lens: tuple) -> None:
    """A batch with nothing to attend (no rows, or no keys) has a truth with zero baseline error, and passes."""
    t = truth(materialize(JUDGE_CASE.replace(qo_lens=qo_lens, kv_lens=kv_lens), seed=2))
    assert (t.out_baseline_err, t.lse_baseline_err) == (0.0, 0.0)
    out_cmp, lse_cmp = judge(t, t.ref.out.clone(), t.ref.lse.clone())
    assert out_cmp.passed and lse_cmp is not None and lse_cmp.passed


def test_lse_to_base2_is_log2_of_the_same_sum() -> None:
    """lse_to_base2(ln 4) is log2(4) = 2, and -inf stays -inf."""
    got = lse_to_base2(torch.tensor([math.log(4.0), -math.inf], dtype=torch.float64))
    assert abs(got[0].item() - 2.0) <= math.ulp(2.0) and got[1].item() == -math.inf
