"""The batched torch backends (padded SDPA, jagged SDPA, FlexAttention on a padded batch) against the oracle.

Each batched SDPA backend runs every quick-matrix case it supports and must match the fp32 oracle within the
tolerance rule, except the records the known-failure ledger explains (jagged SDPA's bf16 scores,
`torch-nested-math-scores-in-half`); a backend serving too few cases fails too, so a blanket decline cannot
pass. FlexAttention on a padded batch (eager on the CPU: about a second a case) runs crafted batches here;
the conformance grid (conformance/test_parity_grid.py) runs every backend over the quick matrix. The
declines are pinned with torch's own words.
"""

from __future__ import annotations

import functools

import pytest
import torch

from conformance.known_failures import entry_for
from kernels import get_target, skips
from kernels._env import library_versions
from kernels.torch_target import batched_backends
from oracle.judge import Truth, judge, truth
from scenarios.case import Case
from scenarios.matrix import build
from scenarios.tensors import Inputs, materialize

TORCH = get_target("torch")
CPU = "cpu"
# The fewest quick-matrix cases each backend must serve (93 cases; the padded ones start at B = 2).
MIN_SERVED = {
    "padded-math": 35,
    "padded-flash": 30,
    "padded-auto": 35,
    "nested-math": 12,
    "nested-auto": 12,
}
_H = dict(num_qo_heads=4, num_kv_heads=4, head_dim_qk=64, head_dim_vo=64)


@functools.lru_cache(maxsize=None)
def _quick() -> tuple[Case, ...]:
    return tuple(build("quick"))


@functools.lru_cache(maxsize=None)
def _truth(case: Case) -> tuple[Inputs, Truth]:
    inputs = materialize(case, seed=0)
    return inputs, truth(inputs)


def _passes(backend: str, case: Case) -> bool:
    inputs, t = _truth(case)
    res = TORCH.make(backend, CPU).run(inputs)
    out_cmp, lse_cmp = judge(t, res.out, res.lse, lse_base=res.lse_base, adapter="torch", backend=backend)
    return out_cmp.passed and (lse_cmp is None or lse_cmp.passed)


def test_the_cpu_offers_these_batched_backends() -> None:
    assert batched_backends(CPU) == tuple(MIN_SERVED) + ("flex-padded",)


@pytest.mark.slow
@pytest.mark.parametrize("backend", list(MIN_SERVED))
def test_batched_backend_agrees_with_the_oracle_on_the_quick_matrix(backend: str) -> None:
    adapter = TORCH.make(backend, CPU)
    version = library_versions()["torch"]
    served, wrong = 0, []
    for case in _quick():
        if not adapter.supports(case).ok:
            continue
        served += 1
        known = entry_for("torch", case.to_json(), backend, version=version)
        if _passes(backend, case) == (known is None):
            continue
        wrong.append(f"{case.id}: " + (f"passes, yet ledger {known.id} predicts a failure" if known else "fails"))
    assert not wrong, "\n".join(wrong)
    assert served >= MIN_SERVED[backend], f"{backend} served {served} quick cases"


# feature -> (case, a fragment of torch's explanation the decline must quote)
NESTED_REFUSALS: dict[str, tuple[Case, str]] = {
    "causal": (Case("ragged", (3, 4), (3, 4), causal=True, **_H), "not supported when is_causal=True"),
    "custom mask": (Case("ragged", (3, 4), (5, 6), mask="custom", **_H), "Masks are not yet supported!"),
    "window": (Case("ragged", (3, 4), (5, 6), window_left=2, **_H), "Masks are not yet supported!"),
    "gqa": (
        Case("ragged", (3, 4), (5, 6), 4, 2, 64, 64),
        "For nested tensors, batch dimensions must have the same sizes",
    ),
    "zero-length request": (Case("ragged", (0, 4), (5, 0), **_H), "jagged SDPA nested-math"),
}


@pytest.mark.parametrize("feature", list(NESTED_REFUSALS))
def test_nested_declines_what_jagged_sdpa_refuses_in_torchs_words(feature: str) -> None:
    case, words = NESTED_REFUSALS[feature]
    sup = TORCH.make("nested-math", CPU).supports(case)
    assert not sup.ok and skips.constant_of(sup.reason) == skips.LIBRARY_REFUSED, sup.reason
    assert words in sup.reason, sup.reason


@pytest.mark.parametrize("backend", ["nested-math", "nested-auto"])
def test_nested_declines_causal_where_top_left_and_bottom_right_differ(backend: str) -> None:
    """SDPA's is_causal aligns top-left; attncheck's causal is bottom-right: equal only where qo == kv."""
    sup = TORCH.make(backend, CPU).supports(Case("ragged", (3, 4, 0), (5, 4, 2), causal=True, **_H))
    assert not sup.ok and skips.constant_of(sup.reason) == skips.CAUSAL_ALIGNMENT, sup.reason
    assert "(3, 5)" in sup.reason and "(4, 4)" not in sup.reason, sup.reason
    square = TORCH.make(backend, CPU).supports(Case("ragged", (3, 4), (3, 4), causal=True, **_H))
    assert skips.constant_of(square.reason) != skips.CAUSAL_ALIGNMENT, square.reason


@pytest.mark.parametrize(("backend", "per_request"), [("padded-auto", "auto"), ("flex-padded", "flex")])
def test_a_padded_backend_declines_a_batch_of_one_naming_its_per_request_backend(
    backend: str, per_request: str
) -> None:
    sup = TORCH.make(backend, CPU).supports(Case("ragged", (3,), (5,), **_H))
    assert not sup.ok and skips.constant_of(sup.reason) == skips.LAYOUT
    assert f"backend {per_request!r} makes this call" in sup.reason
    assert TORCH.make(backend, CPU).supports(Case("ragged", (3, 2), (5, 7), **_H)).ok


def test_padded_flash_quotes_torch_when_it_refuses_the_batch() -> None:
    case = Case("ragged", (3, 2), (5, 7), 4, 4, 64, 32)
    sup = TORCH.make("padded-flash", CPU).supports(case)
    assert not sup.ok and skips.constant_of(sup.reason) == skips.LIBRARY_REFUSED
    assert "same last dimension" in sup.reason
    assert TORCH.make("padded-math", CPU).supports(case).ok


# name -> a batch of requests of different lengths for FlexAttention on a padded batch
FLEX_BATCHES: dict[str, Case] = {
    "paged-causal-custom-soft-cap": Case(
        "paged", (4, 1, 6), (9, 17, 5), 4, 2, 64, 64, page_size=4, causal=True, mask="custom", logits_soft_cap=5.0
    ),
    "ragged-gqa-plain": Case("ragged", (5, 2, 3), (7, 12, 1), 8, 2, 64, 64, "fp16", "fp16", "fp16"),
}


@pytest.mark.parametrize("name", list(FLEX_BATCHES))
def test_flex_padded_matches_the_oracle_with_each_requests_lse(name: str) -> None:
    """Out and LSE of every real row match; the soft cap is applied (SDPA's padded backends decline it)."""
    case = FLEX_BATCHES[name]
    inputs, t = _truth(case)
    res = TORCH.make("flex-padded", CPU).run(inputs)
    assert res.lse is not None and torch.isfinite(res.lse).any()
    out_cmp, lse_cmp = judge(t, res.out, res.lse, lse_base=res.lse_base, adapter="torch", backend="flex-padded")
    assert out_cmp.passed and lse_cmp is not None and lse_cmp.passed, (out_cmp, lse_cmp)
    assert TORCH.make("padded-auto", CPU).supports(case).ok == (case.logits_soft_cap == 0)
