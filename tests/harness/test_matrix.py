"""The regression matrix is deterministic, budgeted, and always holds the directed cases."""

from __future__ import annotations

import pytest

from scenarios import matrix
from scenarios.errors import InvalidValue


def test_same_budget_and_seed_give_the_same_cases():
    """Two builds of one (budget, seed) are equal case by case."""
    assert [c.id for c in matrix.build("quick", 0)] == [c.id for c in matrix.build("quick", 0)]


def test_another_seed_gives_another_sample():
    """The seed changes the sampled part."""
    assert [c.id for c in matrix.build("quick", 0)] != [c.id for c in matrix.build("quick", 1)]


def test_directed_cases_are_always_included():
    """Every directed case is in every budget."""
    directed = {c.id for c in matrix.directed_cases()}
    for name in matrix.BUDGETS:
        assert directed <= {c.id for c in matrix.build(name, 3)}


@pytest.mark.parametrize("name", list(matrix.BUDGETS))
def test_sampled_cases_respect_the_budget(name):
    """Lengths, batch and heads never exceed the budget's caps."""
    b = matrix.BUDGETS[name]
    long = [c for kv in b.long_lengths("cpu") for c in matrix.long_cases(kv)]
    for c in matrix.build(name, 0)[len(matrix.directed_cases()) + len(long) :]:
        assert c.batch_size <= b.max_batch
        assert max(c.qo_lens, default=0) <= b.max_qo
        assert max(c.kv_lens, default=0) <= b.max_kv


def test_quick_covers_every_layout_and_fp8():
    """The quick matrix reaches every layout, causal, custom masks, windows, soft cap and fp8."""
    cases = matrix.build("quick", 0)
    assert {c.layout for c in cases} == {"ragged", "paged", "decode", "single"}
    feats = {f for c in cases for f in c.features}
    assert {"causal", "custom_mask", "window", "soft_cap", "fp8", "gqa", "mqa", "zero_len", "empty_batch"} <= feats


@pytest.mark.parametrize("bad", ["fast", "", "QUICK", "quick:10"])
def test_malformed_budget_is_refused_with_the_value(bad):
    """parse_budget names the value and the valid budgets."""
    with pytest.raises(InvalidValue) as e:
        matrix.parse_budget(bad)
    assert e.value.value == bad and "quick" in e.value.expected


def _long(cases):
    return [c for c in cases if "long_context" in c.features]


def test_standard_reaches_8192_keys_where_accumulation_error_grows():
    """The standard budget's long cases on the CPU: 8192 keys, no more, each with a feature under which a kernel's
    accumulation error grows (16-bit inputs, a soft cap, GQA and MQA, short causal queries, a window)."""
    long = _long(matrix.build("standard", 0, "cpu"))
    assert long and {max(c.kv_lens) for c in long} == {8192}
    assert {c.q_dtype for c in long} == {"bf16", "fp16"}
    feats = {f for c in long for f in c.features}
    assert {"soft_cap", "gqa", "mqa", "causal", "window"} <= feats
    assert any(c.causal and max(c.qo_lens) <= 16 for c in long), "decode-like: short causal queries over long KV"


def test_quick_stays_as_it_was_and_draws_no_long_case():
    """quick holds no long case on any device: its run time is CI's."""
    for device in ("cpu", "cuda"):
        cases = matrix.build("quick", 0, device)
        assert not _long(cases) and max(max(c.kv_lens, default=0) for c in cases) <= 1031


@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_32k_and_128k_keys_only_where_the_device_is_cuda(device):
    """The GPU's long cases (32k, 128k keys) join the standard matrix on CUDA and never on the CPU."""
    gpu = {max(c.kv_lens) for c in _long(matrix.build("standard", 0, device))}
    cpu = {max(c.kv_lens) for c in _long(matrix.build("standard", 0, "cpu"))}
    assert gpu == {8192, 32768, 131072} and cpu == {8192}


def test_a_run_builds_the_matrix_of_its_device():
    """`attncheck run` (parity_run.matrix_of) hands the device to both matrices; FlashInfer's long cases stay inside
    the modules its profiles build."""
    from conformance.parity_run import matrix_of
    from kernels.flashinfer.matrix import profile_of

    for target in ("torch", "flashinfer"):
        on_gpu = _long(matrix_of(target, "standard", 0, "cuda"))
        assert 131072 in {max(c.kv_lens) for c in on_gpu}, target
        assert 131072 not in {max(c.kv_lens) for c in _long(matrix_of(target, "standard", 0, "cpu"))}, target
        if target == "flashinfer":
            assert all(profile_of(c) is not None for c in on_gpu)
