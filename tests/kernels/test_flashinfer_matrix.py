"""The FlashInfer matrix: every axis the issue names is covered, with a fixed, small set of modules."""

from __future__ import annotations

import pytest

from kernels.flashinfer import matrix as fm
from kernels.flashinfer.variants import variant_key
from scenarios.matrix import directed_cases


@pytest.fixture(scope="module")
def quick() -> list:
    return fm.build("quick", 0)


def test_same_budget_and_seed_give_the_same_cases(quick: list) -> None:
    assert [c.id for c in fm.build("quick", 0)] == [c.id for c in quick]
    assert [c.id for c in fm.build("quick", 1)] != [c.id for c in quick]
    assert len({c.id for c in quick}) == len(quick)


def test_every_case_selects_one_of_the_profiles_modules(quick: list) -> None:
    for c in quick:
        assert fm.profile_of(c) is not None, c


def test_module_count_does_not_grow_with_the_budget(quick: list) -> None:
    def modules(cases: list, backend: str) -> set:
        return {variant_key(c, backend).module_key for c in cases}

    full = fm.build("full", 0)
    assert len(full) > len(fm.build("standard", 0)) > len(quick)
    for b in ("fa2", "fa3"):
        assert modules(full, b) == modules(quick, b)
    # one batch-prefill, batch-decode and single-prefill module per profile at most
    assert len(modules(quick, "fa2")) <= 3 * len(fm.PROFILES)


def test_the_issue_axes_are_all_present(quick: list) -> None:
    got = lambda f: {f(c) for c in quick}  # noqa: E731
    assert got(lambda c: c.layout) == {"paged", "ragged", "decode", "single"}
    assert {"bf16", "fp16", "e4m3fn"} <= got(lambda c: c.q_dtype)
    assert "e4m3fn" in got(lambda c: c.kv_dtype if c.q_dtype == "bf16" else None)  # fp8 KV under a 16-bit query
    assert {64, 128, 256, 192} <= got(lambda c: c.head_dim_qk)
    assert {1, 4, 8} <= got(lambda c: c.group_size)
    assert {"none", "custom"} == got(lambda c: c.mask)
    assert {True, False} == got(lambda c: c.causal)
    assert {True, False} == got(lambda c: c.window_left >= 0)
    assert {True, False} == got(lambda c: c.logits_soft_cap > 0)
    assert {"NHD", "HND"} == got(lambda c: c.kv_layout)
    assert {1, 5, 16} <= got(lambda c: c.page_size)
    assert any(0 in c.qo_lens or 0 in c.kv_lens for c in quick)  # zero-length requests
    assert any(c.batch_size == 0 for c in quick)  # empty batches


def test_directed_cases_keep_their_shape_on_a_profile(quick: list) -> None:
    labels = {c.label for c in quick}
    for d in directed_cases():
        assert d.label in labels
        moved = fm.rehome(d)
        assert (
            moved.layout,
            moved.qo_lens,
            moved.kv_lens,
            moved.mask,
            moved.causal,
            moved.window_left,
            moved.logits_soft_cap,
            moved.is_fp8,
        ) == (d.layout, d.qo_lens, d.kv_lens, d.mask, d.causal, d.window_left, d.logits_soft_cap, d.is_fp8)
        assert (moved.head_dim_qk != moved.head_dim_vo) == (d.head_dim_qk != d.head_dim_vo)


def test_an_unknown_budget_is_refused() -> None:
    from scenarios.matrix import InvalidBudget

    with pytest.raises(InvalidBudget):
        fm.build("huge")
