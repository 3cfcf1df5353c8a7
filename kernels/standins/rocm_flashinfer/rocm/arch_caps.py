"""Stand-in for the ROCm fork's `flashinfer.rocm.arch_caps` (MAIN @10f72434), built from rocm_fork.md.

A CPU stand-in, never the library: the tables and the capability check as
tests/data/sources/rocm_fork.md section 3 gives them, and the architecture probe the fork's own
GPU-free tests patch (`as_arch` monkeypatches `_device_arch`, section 5).

Section 3, per table (dict.get semantics: an arch absent from a table reads None / False):
  _AITER_FLAT_GATHER_GATED_Q_LEN  gfx942 16, gfx950 8; compare `<=`; None disarms
  _AITER_RAGGED_GATED_Q_LEN       gfx942 16, gfx950 None (a measured "never", present as a key)
  _AITER_SOFTCAP_DEFECT_ARCHS     gfx942 False, gfx950 True; unknown arch False
  _AITER_ASM_PREFILL_MIN_QO_LEN   gfx942 None, gfx950 2048 (single prefill's asm arm only)
  capability rows                 aiter batch_prefill / single_prefill / batch_decode SUPPORTED on
                                  gfx942 and gfx950, fallback "fa2"; an arch absent from a row is
                                  unsupported; no known-bad row today
  pins                            AITER_MIN_VERSION 0.1.20 (the ABI floor, section 2 step 11)
Section 2 step 1 gives the capability_reason texts (reason_text.py holds them).
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional

from kernels.standins.rocm_flashinfer.rocm import reason_text as T

__attncheck_standin__ = "flashinfer-rocm-fork"

_AITER_FLAT_GATHER_GATED_Q_LEN: dict[str, Optional[int]] = {"gfx942": 16, "gfx950": 8}
_AITER_RAGGED_GATED_Q_LEN: dict[str, Optional[int]] = {"gfx942": 16, "gfx950": None}
_AITER_SOFTCAP_DEFECT_ARCHS: dict[str, bool] = {"gfx942": False, "gfx950": True}
_AITER_ASM_PREFILL_MIN_QO_LEN: dict[str, Optional[int]] = {"gfx942": None, "gfx950": 2048}

SUPPORTED = "supported"
# backend -> op -> {arch: status}; every row's fallback is "fa2".
_CAPABILITIES: Mapping[str, Mapping[str, Mapping[str, str]]] = {
    "aiter": {
        "batch_prefill": {"gfx942": SUPPORTED, "gfx950": SUPPORTED},
        "single_prefill": {"gfx942": SUPPORTED, "gfx950": SUPPORTED},
        "batch_decode": {"gfx942": SUPPORTED, "gfx950": SUPPORTED},
    },
}
CAPABILITY_FALLBACK = "fa2"
# (backend, op, arch) -> why it is known broken. Empty: section 3 names no such row today.
_KNOWN_BAD: Mapping[tuple[str, str, str], str] = {}
ALLOW_KNOWN_BAD_ENV = "FLASHINFER_ARCH_ALLOW_KNOWN_BAD"

AITER_MIN_VERSION = "0.1.20"
UNKNOWN_ARCH = "unknown"


class ArchCapabilityError(ValueError, RuntimeError):
    """An op/backend the device cannot run (section 1: a ValueError and a RuntimeError)."""


def normalize_arch(name: str) -> str:
    """`gfx942:sramecc+:xnack-` -> `gfx942`: everything from the first ':' is dropped."""
    return name.split(":", 1)[0]


def _device_arch(device: Any) -> str:
    """The device's gcnArchName, normalised; "unknown" when it cannot be read (a CPU, CUDA)."""
    try:
        import torch

        return normalize_arch(str(torch.cuda.get_device_properties(device).gcnArchName))
    except Exception:
        return UNKNOWN_ARCH


def _declared_archs(backend: str) -> frozenset[str]:
    return frozenset(a for row in _CAPABILITIES.get(backend, {}).values() for a in row)


def capability_reason(device: Any, op: str, backend: str) -> Optional[str]:
    """None when `backend` may run `op` on this device, else why not (section 2 step 1)."""
    arch = _device_arch(device)
    if arch not in _declared_archs(backend):
        return T.CAPABILITY_UNDECLARED.format(backend=backend, op=op, arch=arch)
    rows = _CAPABILITIES[backend]
    if op not in rows:
        return T.CAPABILITY_UNKNOWN_OP.format(backend=backend, op=op)
    if rows[op].get(arch) != SUPPORTED:
        return T.CAPABILITY_UNSUPPORTED.format(backend=backend, op=op, arch=arch)
    bad = _KNOWN_BAD.get((backend, op, arch))
    if bad is not None and os.environ.get(ALLOW_KNOWN_BAD_ENV) != "1":
        return T.CAPABILITY_KNOWN_BAD.format(backend=backend, op=op, arch=arch, why=bad)
    return None


def aiter_flat_gather_gated_q_len(arch: str) -> Optional[int]:
    return _AITER_FLAT_GATHER_GATED_Q_LEN.get(arch)


def aiter_ragged_gated_q_len(arch: str) -> Optional[int]:
    return _AITER_RAGGED_GATED_Q_LEN.get(arch)


def aiter_softcap_defect_arch(arch: str) -> bool:
    return bool(_AITER_SOFTCAP_DEFECT_ARCHS.get(arch, False))


def aiter_asm_prefill_min_qo_len(arch: str) -> Optional[int]:
    return _AITER_ASM_PREFILL_MIN_QO_LEN.get(arch)
