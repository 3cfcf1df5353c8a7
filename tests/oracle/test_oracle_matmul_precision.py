"""The oracle's matmuls are true fp32: TF32 is off during every call, whatever the caller set, and
the caller's setting is back once the call returns.

On a CPU the flags change no number, so the test reads them from inside the call (through a
wrapped oracle.reference._softmax, which runs between the two GEMMs of every chunk).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from oracle import reference
from oracle.reference import attention
from scenarios.case import Case
from scenarios.tensors import materialize

CASE = Case(
    layout="ragged",
    qo_lens=(3, 2),
    kv_lens=(5, 4),
    num_qo_heads=4,
    num_kv_heads=2,
    head_dim_qk=8,
    head_dim_vo=8,
    q_dtype="fp32",
    kv_dtype="fp32",
    o_dtype="fp32",
)


def _tf32() -> tuple[bool, bool]:
    return torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32


def test_tf32_is_off_during_the_call_and_the_callers_setting_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    """With TF32 allowed by the caller, every chunk of the oracle runs with it off, and it is allowed again after."""
    seen: list[tuple[bool, bool]] = []
    softmax = reference._softmax

    def recording_softmax(*args: Any) -> Any:
        seen.append(_tf32())
        return softmax(*args)

    monkeypatch.setattr(reference, "_softmax", recording_softmax)
    saved = _tf32()
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        attention(materialize(CASE, seed=0))
        after = _tf32()
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    assert len(seen) >= CASE.batch_size and set(seen) == {(False, False)}
    assert after == (True, True)
