"""The batch-axis defects of kernels/torch_batch_faults.py against the batched torch backends, on the CPU.

Each defect is caught by a default run (quick or standard: CATCHES names which) of the batched backend it
reaches (docs/evidence/2026-12-02-batch-axis-faults.md); here, on a case of that budget's matrix where the
run caught it, the defect fails and torch without it passes, so neither a looser bound nor a disarmed fault goes
unnoticed. The per-request backend of the same family passes under the defect on the same case: torch called
with batch 1, as attncheck called it before, cannot see it.
"""

from __future__ import annotations

import functools

import pytest
import torch

from kernels import get_target
from kernels._env import library_versions
from kernels.torch_batch_faults import FAULTS, fault, injected, install
from oracle.judge import Truth, judge, truth
from scenarios.case import Case
from scenarios.matrix import build
from scenarios.tensors import Inputs, materialize

TORCH = get_target("torch")
_B2 = "decode-b2-h2x2-d128-fp32-p5NHD-causal-9a315bb003"
# fault -> (the budget whose default run caught it, the batched backend of that run, a case of that budget's
# matrix the run failed on); the evidence file's table.
CATCHES: dict[str, tuple[str, str, str]] = {
    "padding_keys_leak": ("quick", "padded-math", _B2),
    "mask_of_request_0": ("quick", "padded-math", _B2),
    "kv_len_short_after_first": ("quick", "padded-math", _B2),
    "outputs_rolled": ("quick", "padded-math", _B2),
    "jagged_rows_shifted": ("quick", "nested-math", "decode-b3-h2x2-d128-fp16-p1HND-zero_len-5ff687b870"),
    "block_mask_of_request_0": ("quick", "flex-padded", _B2),
    "lse_of_request_0": ("quick", "flex-padded", _B2),
}
# The per-request backend that makes batch-1 calls of the same torch function.
PER_REQUEST = {"padded-math": "math", "nested-math": "math", "flex-padded": "flex"}


@functools.lru_cache(maxsize=None)
def _truth(budget: str, case_id: str) -> tuple[Inputs, Truth]:
    cases = {c.id: c for c in build(budget)}
    assert case_id in cases, f"{case_id} is no longer in the {budget} matrix: rerun the evidence and update CATCHES"
    case: Case = cases[case_id]
    inputs = materialize(case, seed=0)
    return inputs, truth(inputs)


def _passes(name: str | None, backend: str, inputs: Inputs, t: Truth) -> bool:
    adapter = TORCH.make(backend, "cpu")
    with injected(name):
        res = adapter.run(inputs)
    out_cmp, lse_cmp = judge(t, res.out, res.lse, lse_base=res.lse_base, adapter="torch", backend=backend)
    return out_cmp.passed and (lse_cmp is None or lse_cmp.passed)


def test_every_batch_fault_names_the_case_that_caught_it() -> None:
    assert set(CATCHES) == set(FAULTS)
    assert all(CATCHES[n][0] in ("quick", "standard") and CATCHES[n][1] in fault(n).backends for n in FAULTS)


@pytest.mark.parametrize("name", sorted(CATCHES))
def test_a_batch_fault_fails_where_its_run_caught_it_and_batch_one_calls_do_not_see_it(name: str) -> None:
    budget, backend, case_id = CATCHES[name]
    inputs, t = _truth(budget, case_id)
    assert not _passes(name, backend, inputs, t), f"{name} passes on {case_id} under {backend}"
    assert _passes(None, backend, inputs, t), f"{backend} fails on {case_id} without a fault"
    assert _passes(name, PER_REQUEST[backend], inputs, t), f"{name} shows in batch-1 calls too"


def test_a_batch_fault_says_so_in_the_versions_and_is_undone() -> None:
    sdpa = torch.nn.functional.scaled_dot_product_attention
    plain = library_versions()["torch"]
    with injected("outputs_rolled"):
        assert torch.nn.functional.scaled_dot_product_attention is not sdpa
        assert library_versions()["torch"] == plain + "+fault:outputs_rolled"
        with pytest.raises(ValueError, match="'outputs_rolled' is injected already"):
            install("mask_of_request_0")
    assert torch.nn.functional.scaled_dot_product_attention is sdpa and library_versions()["torch"] == plain
    with pytest.raises(ValueError, match="batch fault 'stale'.*padding_keys_leak"):
        fault("stale")
