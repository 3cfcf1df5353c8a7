"""The scenario strategies draw valid batches of every layout, shrink to plain cases, and probe profiles.

Hypothesis settings here are derandomised and database-free, as in tests/oracle: CI sees the
same examples every run.
"""

from __future__ import annotations

from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from kernels import get_target
from scenarios import axes
from scenarios import strategies as S
from scenarios.case import Case
from kernels.standins.rocm_fork import installed
from scenarios.tensors import materialize, validate_inputs

WIDE = S.Profile(layouts=axes.LAYOUTS, dtypes=axes.INPUT_DTYPES + ("e4m3fn",))
PROPS = settings(
    max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
FIND = settings(derandomize=True, database=None, deadline=None)


@PROPS
@given(st.data())
def test_every_plan_kind_draws_valid_materialisable_batches(data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(sorted(S.plans(WIDE))))
    case = data.draw(S.plans(WIDE)[kind])
    inputs = materialize(case, 0)
    validate_inputs(inputs)
    longest = max(case.qo_lens, default=0)
    if kind == "short":
        assert 1 <= longest <= S.SHORT_HI
    if kind == "long":
        assert longest >= S.LONG_LO and case.layout != "decode"
    if kind == "empty":
        assert longest == 0
    assert (case.mask == "custom") == (kind == "masked") or kind not in ("masked", "unmasked")
    assert kind != "windowed" or case.window_left >= 0
    assert kind != "capped" or case.logits_soft_cap > 0
    assert case.is_fp8 == (case.q_dtype == "e4m3fn")


@PROPS
@given(S.batches(WIDE, lengths="any"))
def test_paged_batches_get_shuffled_pools_with_unused_pages(case: Case) -> None:
    inputs = materialize(case, 3)
    if not case.is_paged:
        return
    assert inputs.kv_page_indices is not None
    used = sum(case.pages_per_request)
    assert inputs.k.shape[0] >= used + 2, "the pool always holds unused pages"
    assert inputs.kv_page_indices.unique().numel() == used


def test_zero_lengths_and_empty_batches_are_drawn() -> None:
    find(S.batches(WIDE, lengths="empty"), lambda c: c.batch_size == 0, settings=FIND)
    find(S.batches(WIDE, lengths="empty"), lambda c: c.batch_size > 0 and c.layout == "paged", settings=FIND)
    find(S.batches(WIDE), lambda c: 0 in c.qo_lens and any(c.qo_lens) and 0 in c.kv_lens, settings=FIND)
    for layout in axes.LAYOUTS:
        find(S.batches(WIDE), lambda c, x=layout: c.layout == x, settings=FIND)


def test_shrinking_goes_to_a_small_plain_case() -> None:
    """What a shrunk failure shows: one request, first axis values, lengths at their floor, no features."""
    long_ = find(S.plans(WIDE)["long"], lambda c: True, settings=FIND)
    assert long_ == Case(
        "ragged",
        (S.LONG_LO,),
        (0,),
        1,
        1,
        head_dim_qk=64,
        head_dim_vo=64,
        q_dtype="fp16",
        kv_dtype="fp16",
        o_dtype="fp16",
    )
    masked = find(S.plans(WIDE)["masked"], lambda c: c.causal, settings=FIND)
    assert masked.replace(causal=False) == long_.replace(qo_lens=(0,), mask="custom")


def test_profiles_are_probed_from_supports() -> None:
    torch_auto = S.probe_profile(get_target("torch").make("auto", "cpu"))
    assert torch_auto.layouts == axes.LAYOUTS and not torch_auto.soft_cap
    assert torch_auto.dtypes == axes.INPUT_DTYPES, "torch declines fp8"
    with installed(arch="gfx942"):
        fork = S.probe_profile(get_target("flashinfer").make("auto", "cpu", workspace_bytes=1024))
    assert fork.layouts == axes.LAYOUTS and fork.soft_cap and fork.mask and fork.hnd
    assert fork.dtypes == ("fp16", "bf16", "e4m3fnuz"), "the fork's native fp8 on gfx942, and no fp32"


def test_helpers_keep_a_case_valid() -> None:
    c = Case("decode", (1, 1), (5, 9), 4, 1, page_size=5)
    assert S.with_lengths(c, [(7, 3), (0, 0), (4, 4)]) == c.replace(qo_lens=(1, 1), kv_lens=(3, 0))
    assert S.with_dtype(c, "e5m2").o_dtype == "bf16"
    assert S.toggled_mask(S.toggled_mask(c)) == c
    ragged = Case("ragged", (5, 9, 4), (9, 9, 9), 4, 1)
    assert S.within_rows(ragged, 10).qo_lens == (5, 5, 0), "a re-plan fits the captured rows, first request kept"
    assert S.within_rows(ragged, 30) == ragged
    assert S.within_rows(ragged, 30, fill=True).qo_lens == (5, 9, 16), "a filled re-plan holds the rows exactly"
    assert S.within_rows(ragged, 10, fill=True).qo_lens == (5, 5, 0)
    assert S.within_rows(c, 5, fill=True) == c, "decode keeps one row a request"
    assert S.other_dtype(WIDE, "fp16", "fp16") == "bf16" and S.other_dtype(WIDE, "fp16", "fp32") == "fp32"
