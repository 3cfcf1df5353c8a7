"""Poisoned outputs: a NaN with a distinctive bit pattern, written before a kernel runs.

An element the kernel never wrote still holds the pattern and is counted as *unwritten*, apart
from NaNs the kernel computed. Kernels poison (kernels/*), the oracle's compare() counts: the
helpers sit at the bottom layer so that neither imports the other.
"""

from __future__ import annotations

import torch

# Distinctive quiet-NaN bit patterns; kernels produce the canonical NaN, not these.
_POISON_BITS = {
    torch.float16: (torch.int16, 0x7E5A),
    torch.bfloat16: (torch.int16, 0x7FDA),
    torch.float32: (torch.int32, 0x7FC05A5A),
    torch.float64: (torch.int64, 0x7FF8_0000_5A5A_5A5A),
}


def poison(t: torch.Tensor) -> torch.Tensor:
    """Fill `t` in place with the poison NaN; returns t."""
    if t.dtype in _POISON_BITS:
        int_dtype, bits = _POISON_BITS[t.dtype]
        t.view(int_dtype).fill_(_as_signed(bits, t.element_size()))
    else:
        t.fill_(float("nan"))
    return t


def unwritten_mask(t: torch.Tensor) -> torch.Tensor:
    """True where `t` still holds the poison pattern."""
    if t.dtype in _POISON_BITS:
        int_dtype, bits = _POISON_BITS[t.dtype]
        return t.view(int_dtype) == _as_signed(bits, t.element_size())
    return torch.isnan(t)


def _as_signed(bits: int, width: int) -> int:
    top = 1 << (8 * width - 1)
    return bits - (1 << (8 * width)) if bits & top else bits
