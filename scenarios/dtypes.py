"""The closed vocabulary of dtypes a Case may name, and their torch counterparts.

Cases hold dtype *names* so they stay JSON values; this is the one place that maps a name to
a torch dtype, so no other module spells `torch.float8_e4m3fn`.
"""

from __future__ import annotations

from typing import Literal, get_args

import torch

DTypeName = Literal["fp32", "fp16", "bf16", "e4m3fn", "e4m3fnuz", "e5m2"]
DTYPE_NAMES: tuple[str, ...] = get_args(DTypeName)
FP8_NAMES: frozenset[str] = frozenset({"e4m3fn", "e4m3fnuz", "e5m2"})
# Output and LSE are never fp8 in any library this harness drives.
OUTPUT_DTYPE_NAMES: tuple[str, ...] = ("fp32", "fp16", "bf16")

_TORCH = {
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "e4m3fn": torch.float8_e4m3fn,
    "e4m3fnuz": torch.float8_e4m3fnuz,
    "e5m2": torch.float8_e5m2,
}
_NAMES = {v: k for k, v in _TORCH.items()}


def to_torch(name: str) -> torch.dtype:
    """Map a dtype name to the torch dtype."""
    return _TORCH[name]


def name_of(dtype: torch.dtype) -> str:
    """Map a torch dtype back to its Case name (KeyError for dtypes no Case can hold)."""
    return _NAMES[dtype]


def is_fp8(name: str) -> bool:
    return name in FP8_NAMES


def finfo_max(name: str) -> float:
    return float(torch.finfo(_TORCH[name]).max)
