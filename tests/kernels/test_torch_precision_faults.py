"""The precision defects of kernels/torch_precision_faults.py against the tolerance model, on the CPU.

Each defect is caught by a default run at the budget docs/evidence/2026-12-02-honest-baseline.md
names; here, on the case of that budget's matrix where the run caught it, the defect fails and
the same flash loop without it passes (for the LSE defect: FlexAttention itself), so neither a
looser bound nor a disarmed fault goes unnoticed. The full runs are in the evidence file.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import os
from typing import Any

import pytest
import torch

from kernels import get_target
from kernels._env import library_versions
from kernels.torch_precision_faults import FAULTS, FLEX, HONEST, fault, injected, install
from oracle.judge import Truth, judge, truth
from scenarios.case import Case
from scenarios.matrix import build
from scenarios.tensors import Inputs, materialize

TORCH = get_target("torch")

# fault -> (budget, a case of that budget's matrix its run failed on); the evidence file's table 2.
CATCHES: dict[str, tuple[str, str]] = {
    "acc_in_half": ("quick", "paged-b3-h4x1-d128-fp16-p1NHD-causal+zero_len-95aed7b351"),
    "no_rescale": ("quick", "decode-b3-h8x1-d128-bf16-p16NHD-56148f9d09"),
    "row_sum_in_half": ("standard", "single-b1-h2x2-d256-fp16-causal+custom_mask-771148493d"),
    "p_coarser": ("quick", "paged-b2-h4x2-d64-bf16-p4NHD-causal+zero_len-22ddbe6a13"),
    "scores_in_half": ("quick", "ragged-b1-h4x1-d128-bf16-causal-4cb5ee63b7"),
    "lse_in_half": ("quick", "paged-b2-h4x2-d64-bf16-p4NHD-causal+zero_len-22ddbe6a13"),
}


@functools.lru_cache(maxsize=None)
def _matrix(budget: str) -> dict[str, Case]:
    return {c.id: c for c in build(budget)}


@functools.lru_cache(maxsize=None)
def _truth(budget: str, case_id: str) -> tuple[Inputs, Truth]:
    cases = _matrix(budget)
    assert case_id in cases, f"{case_id} is no longer in the {budget} matrix: rerun the evidence and update CATCHES"
    inputs = materialize(cases[case_id], seed=0)
    return inputs, truth(inputs)


def _passes(name: str | None, backend: str, inputs: Inputs, t: Truth) -> bool:
    adapter = TORCH.make(backend, "cpu")
    with injected(name):
        adapter.plan(inputs)
        res = adapter.run(inputs)
    out_cmp, lse_cmp = judge(t, res.out, res.lse, lse_base=res.lse_base, adapter="torch", backend=backend)
    return out_cmp.passed and (lse_cmp is None or lse_cmp.passed)


def test_every_defect_names_the_case_that_caught_it() -> None:
    """The catalogue and the table of catching cases hold the same defects (the control "honest" aside)."""
    assert set(CATCHES) == set(FAULTS) - {HONEST}


@pytest.mark.parametrize("name", sorted(CATCHES))
def test_a_defect_fails_where_its_run_caught_it_and_the_faultless_loop_passes(name: str) -> None:
    budget, case_id = CATCHES[name]
    inputs, t = _truth(budget, case_id)
    backend = "flex" if fault(name).target == FLEX else "math"
    assert not _passes(name, backend, inputs, t), f"{name} passes on {case_id}"
    control = None if backend == "flex" else HONEST
    assert _passes(control, backend, inputs, t), f"{control or 'flex'} fails on {case_id}"


def test_a_fault_replaces_its_function_says_so_in_the_versions_and_is_undone() -> None:
    sdpa = torch.nn.functional.scaled_dot_product_attention
    plain = library_versions()["torch"]
    with injected("acc_in_half"):
        assert torch.nn.functional.scaled_dot_product_attention is not sdpa
        assert library_versions()["torch"] == plain + "+fault:acc_in_half"
        with pytest.raises(ValueError, match="'acc_in_half' is injected already"):
            install("no_rescale")
    assert torch.nn.functional.scaled_dot_product_attention is sdpa and library_versions()["torch"] == plain
    with pytest.raises(ValueError, match="precision fault 'stale'.*acc_in_half"):
        fault("stale")


# The standard matrix's long bf16 case (scenarios/matrix.py long_cases: 8192 keys, GQA, short causal queries),
# where a 16-bit accumulator's error grows past the bound by a wide margin (docs/evidence/2026-12-02-long-contexts.md).
LONG_BF16 = "ragged-b2-h8x2-d128-bf16-causal+long_context-ecb47835fc"


@pytest.mark.parametrize("name", ["acc_in_half", "row_sum_in_half"])
def test_a_16_bit_accumulator_fails_the_standard_long_context_and_the_faultless_loop_passes(name: str) -> None:
    inputs, t = _truth("standard", LONG_BF16)
    assert not _passes(name, "math", inputs, t), f"{name} passes over 8192 keys"
    assert _passes(HONEST, "math", inputs, t), "the faultless loop fails over 8192 keys"


def test_the_lse_fault_rounds_outside_a_compiled_graph() -> None:
    """On CUDA the flex adapter compiles flex_attention with the LSE fault wrapped inside; traced into the graph,
    the rounding is gone once inductor compiles it (it keeps an upcast's fp32 value), and the H200's lse_in_half
    run passed every case it reached. The fault's rounding runs outside any graph dynamo captures."""
    from kernels.torch_precision_faults import _round_in_place

    graphs: list[torch.fx.GraphModule] = []

    def capture(gm: torch.fx.GraphModule, _inputs: list) -> Any:
        graphs.append(gm)
        return gm.forward

    def caller(x: torch.Tensor) -> torch.Tensor:
        y = x * 3.0
        _round_in_place(y, torch.bfloat16)
        return y + 1.0

    x = torch.linspace(-7.3, 9.1, 257)
    torch._dynamo.reset()
    got = torch.compile(caller, backend=capture)(x)
    assert torch.equal(got, (x * 3.0).to(torch.bfloat16).float() + 1.0)
    traced = [str(n.target) for g in graphs for n in g.graph.nodes if n.op in ("call_method", "call_function")]
    assert graphs and not any("copy_" in t or t == "to" for t in traced), traced


def test_an_isolated_run_injects_the_fault_in_its_children_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--isolate` evaluates cases in fresh interpreters (python -m conformance.isolate): the script's fault must
    be there too, or the records say "+fault:NAME" of a library that never had it (the fault passes every case).
    The script names it in the environment the children inherit; a child injects what it names."""
    import conformance.cli
    from conformance import isolate
    from conformance.isolate import INJECTED_ENV

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = importlib.util.spec_from_file_location("fault_command", os.path.join(root, "scripts", "fault_command.py"))
    assert spec is not None and spec.loader is not None
    fault_command = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fault_command)
    run_with_fault = fault_command.run_with_fault

    monkeypatch.delenv(INJECTED_ENV, raising=False)  # restored absent, whatever the script sets
    seen: list[tuple[str, ...]] = []
    monkeypatch.setattr(conformance.cli, "main", lambda argv: seen.append((os.environ[INJECTED_ENV], *argv)) or 0)
    assert run_with_fault(["no_rescale", "run"], "precision fault", FAULTS, injected, str) == 0
    assert seen == [("kernels.torch_precision_faults:no_rescale", "run")]
    # the child, python -m conformance.isolate, with the environment the parent left: its protocol served with
    # the fault in (the stdout juggling for the protocol channel left out)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(isolate, "_serve", lambda *args: seen.append((library_versions()["torch"],)))
    for name, stub in (("dup", lambda fd: fd), ("dup2", lambda a, b: None), ("fdopen", lambda *a, **k: io.StringIO())):
        monkeypatch.setattr(isolate.os, name, stub)
    assert isolate.main(["{}"]) == 0
    assert seen[-1][0].endswith("+fault:no_rescale")
    assert torch.nn.functional.scaled_dot_product_attention is sdpa
    monkeypatch.delenv(INJECTED_ENV)
    assert isolate.main(["{}"]) == 0 and "+fault" not in seen[-1][0]
