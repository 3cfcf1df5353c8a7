"""The compiled softmax a large GPU chunk takes (oracle.reference._softmax_compiled): the function compiled is the
literal softmax to the bit, it traces as one graph, it is taken where attention() says and nowhere else, a
failure to build it falls back to the eager fused softmax once and says so; on CUDA, Inductor's build of it
agrees with the literal softmax (the hand tests' "oracle-compiled" instances hold it to written-out values)."""

from __future__ import annotations

from unittest.mock import patch

import pytest
import torch
import torch._dynamo.config
import torch._inductor.config
from oracle_support import compiled_softmax_run_eagerly

from oracle import reference
from oracle.reference import attention
from scenarios.case import Case
from scenarios.tensors import materialize

CASES = {
    "causal-cap-gqa": Case("ragged", (5, 9), (7, 13), 4, 2, causal=True, logits_soft_cap=20.0, q_dtype="fp32"),
    "custom-window-empty-rows": Case("paged", (3, 0, 6), (8, 4, 0), 4, 1, mask="custom", window_left=3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_compiled_function_is_the_literal_softmax_to_the_bit(name: str) -> None:
    inputs = materialize(CASES[name], seed=1)
    literal = attention(inputs, fused=False, compiled=False)
    with compiled_softmax_run_eagerly():
        got = attention(inputs, fused=True, compiled=True)
    assert torch.equal(got.out, literal.out) and torch.equal(got.lse, literal.lse)


def test_the_exact_softmax_traces_as_one_graph_with_and_without_a_cap_and_a_mask() -> None:
    """fullgraph: a graph break (a data-dependent branch) would fail the GPU's compile, and every chunk would
    fall back to the eager fused softmax."""
    s = torch.randn(2, 5, 7) * 4
    keep = torch.rand(5, 7) > 0.4
    keep[1] = False
    traced = torch.compile(reference._softmax_exact, backend="eager", fullgraph=True, dynamic=True)
    for k in (None, keep):
        for cap in (None, torch.tensor(3.0)):
            want = reference._softmax_exact(s, k, cap)
            got = traced(s, k, cap)
            assert all(torch.equal(a, b) for a, b in zip(got, want))


class _Spy:
    """Stands for the compiled function: counts its calls and the chunks' sizes, runs the function eagerly."""

    def __init__(self, fail: bool = False) -> None:
        self.sizes: list[int] = []
        self.fail = fail

    def __call__(self, s, keep, cap):
        self.sizes.append(s.numel())
        if self.fail:
            raise RuntimeError("no C compiler for Triton's launcher\nmore lines")
        return reference._softmax_exact(s, keep, cap)


def test_only_chunks_of_compiled_min_scores_or_more_take_it() -> None:
    """Two requests, 4 heads x 3 rows x 5 keys (60 scores) and 4 x 8 x 16 (512): a threshold of 100 sends
    the second alone; on the CPU nothing is compiled unless asked."""
    inputs = materialize(Case("ragged", (3, 8), (5, 16), 4, 4), seed=0)
    spy = _Spy()
    with patch.object(reference, "_COMPILED", reference._Compiled(fn=spy)):
        with patch.object(reference, "COMPILED_MIN_SCORES", 100):
            got = attention(inputs, fused=True, compiled=True)
            assert spy.sizes == [512]
            attention(inputs)  # the CPU's default: neither fused nor compiled
            attention(inputs, fused=True)
            assert spy.sizes == [512]
    # The first request's rows from the fused softmax, the second's from the compiled function (the literal one).
    fused, literal = attention(inputs, fused=True, compiled=False), attention(inputs, fused=False)
    for part, want in ((slice(0, 3), fused), (slice(3, 11), literal)):
        assert torch.equal(got.out[part], want.out[part]) and torch.equal(got.lse[part], want.lse[part])


def test_the_honest_baseline_never_takes_the_compiled_softmax() -> None:
    inputs = materialize(Case("single", (6,), (9,), 2, 2, causal=True), seed=0)
    spy = _Spy()
    with (
        patch.object(reference, "_COMPILED", reference._Compiled(fn=spy)),
        patch.object(reference, "COMPILED_MIN_SCORES", 0),
    ):
        got = attention(inputs, "honest", fused=True, compiled=True)
    assert spy.sizes == []
    literal = attention(inputs, "honest", fused=False)
    assert torch.equal(got.out, literal.out) and torch.equal(got.lse, literal.lse)


def test_the_fp64_oracle_never_takes_the_compiled_softmax() -> None:
    """Only the fp32 oracle is compiled: an fp64 graph beside it would be one more of the function's graphs for
    a check whose time does not matter."""
    inputs = materialize(Case("single", (6,), (9,), 2, 2, causal=True), seed=0)
    spy = _Spy()
    with (
        patch.object(reference, "_COMPILED", reference._Compiled(fn=spy)),
        patch.object(reference, "COMPILED_MIN_SCORES", 0),
    ):
        attention(inputs, "fp64", fused=True, compiled=True)
        assert spy.sizes == []
        attention(inputs, "fp32", fused=True, compiled=True)
        assert spy.sizes == [2 * 6 * 9]


def test_the_compiled_softmax_runs_with_a_raised_recompile_limit_and_one_compile_thread() -> None:
    before = torch._dynamo.config.recompile_limit, torch._inductor.config.compile_threads
    with reference._compile_settings():
        assert torch._dynamo.config.recompile_limit == reference.COMPILED_RECOMPILE_LIMIT > 8
        assert torch._inductor.config.compile_threads == 1
    assert (torch._dynamo.config.recompile_limit, torch._inductor.config.compile_threads) == before


def test_a_failed_build_falls_back_to_the_fused_softmax_once_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    inputs = materialize(Case("ragged", (3, 8), (5, 16), 4, 2, causal=True), seed=0)
    spy = _Spy(fail=True)
    compiled = reference._Compiled(fn=spy)
    with patch.object(reference, "_COMPILED", compiled), patch.object(reference, "COMPILED_MIN_SCORES", 0):
        got = attention(inputs, fused=True, compiled=True)
        again = attention(inputs, fused=True, compiled=True)
    assert len(spy.sizes) == 1, "a failed build is not tried again"
    assert compiled.failed == "RuntimeError: no C compiler for Triton's launcher"
    err = capsys.readouterr().err
    assert err.count("the compiled softmax failed (RuntimeError: no C compiler for Triton's launcher)") == 1, err
    fused = attention(inputs, fused=True, compiled=False)
    for r in (got, again):
        assert torch.equal(r.out, fused.out) and torch.equal(r.lse, fused.lse)


requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (Inductor's build)")

# Chunks of 8 heads x 2048 rows x 2048 keys (33.5 M scores at the CUDA default budget): over COMPILED_MIN_SCORES.
CUDA_CASES = {
    "plain": Case("single", (2048,), (2048,), 8, 8, q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"),
    "causal-gqa": Case("single", (2048,), (2048,), 8, 2, causal=True, q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32"),
    "soft-cap-bf16": Case("single", (2048,), (2048,), 8, 8, logits_soft_cap=30.0, input_scale=8.0),
    "custom-empty-rows": Case("single", (2048,), (2048,), 8, 8, mask="custom", window_left=0),
}


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("name", list(CUDA_CASES))
def test_on_cuda_inductors_build_is_taken_and_agrees_with_the_literal_softmax(name: str) -> None:
    """The compiled path taken (not its fallback), its error against the fp64 oracle within twice the literal
    fp32 softmax's plus a few roundoffs, and its LSE likewise; -inf exactly where the literal's is."""
    inputs = materialize(CUDA_CASES[name], seed=0, device="cuda")
    compiled = reference._Compiled()
    with patch.object(reference, "_COMPILED", compiled):
        got = attention(inputs, compiled=True)
    assert compiled.failed is None and compiled.fn is not None
    literal = attention(inputs, fused=False, compiled=False)
    exact = attention(inputs, precision="fp64")
    for a, b, want in ((got.out, literal.out, exact.out), (got.lse, literal.lse, exact.lse)):
        assert torch.equal(torch.isneginf(a), torch.isneginf(b))
        fin = torch.isfinite(want)
        err = (a.double() - want)[fin].abs().max().item()
        ref = (b.double() - want)[fin].abs().max().item()
        roundoff = 4 * torch.finfo(torch.float32).eps * want[fin].abs().max().item()
        assert err <= 2 * ref + roundoff, (name, err, ref)
