"""Stand-in for the ROCm fork's `flashinfer.rocm.aiter_utils` (@3578e732), built from rocm_fork.md.

A CPU stand-in, never the library. Section 4 ("Probe failures"): `handle_aiter_probe_failure`
re-raises ArchCapabilityError, MissingJITCacheError, ValueError and torch.cuda.OutOfMemoryError
(everything under FLASHINFER_AITER_STRICT=1), and otherwise turns the failure into the fallback
reason "aiter <op> kernel bootstrap failed on this install: <Exc>: <detail<=200> (...)" (rule 17).
Fatal errors propagate and are never cached (rule 18): the probes that call this are not
memoised on an exception.
"""

from __future__ import annotations

import os

import torch

from kernels.standins.rocm_flashinfer.rocm import reason_text as T
from kernels.standins.rocm_flashinfer.rocm.arch_caps import ArchCapabilityError

__attncheck_standin__ = "flashinfer-rocm-fork"

STRICT_ENV = "FLASHINFER_AITER_STRICT"
DETAIL_MAX = 200


class MissingJITCacheError(RuntimeError):
    """A prebuilt AITER kernel the install should ship is missing (fatal: never a fallback)."""


_AITER_PROBE_FATAL: tuple[type[BaseException], ...] = (
    ArchCapabilityError,
    MissingJITCacheError,
    ValueError,
    torch.cuda.OutOfMemoryError,
)


def aiter_strict() -> bool:
    """FLASHINFER_AITER_STRICT=1: every probe failure raises instead of falling back."""
    return os.environ.get(STRICT_ENV) == "1"


def handle_aiter_probe_failure(exc: BaseException, op: str) -> str:
    """Re-raise `exc` when fatal (or strict); else the bootstrap-failed fallback reason."""
    if aiter_strict() or isinstance(exc, _AITER_PROBE_FATAL):
        raise exc
    return T.BOOTSTRAP_FAILED.format(op=op, exc=type(exc).__name__, detail=str(exc)[:DETAIL_MAX])
