"""Facts about this machine, behind plain functions that tests patch.

Nothing here runs at import time: no device query, no import of torch or of a kernel library.
Routing tests for another architecture patch `device_capability` (as FlashInfer's own tests
patch `get_compute_capability`); adapters and specs call these functions every time they need
a fact, so a patch is seen everywhere.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import Any, Optional, Union

DeviceLike = Union[str, Any]  # a device string ("cpu", "cuda", "cuda:1") or a torch.device

# Distribution names FlashInfer is published under, tried in order (upstream, then older names).
FLASHINFER_DISTRIBUTIONS = ("flashinfer-python", "flashinfer", "flashinfer-cubin")
NOT_INSTALLED = "none"


def device_type(device: DeviceLike) -> str:
    """'cpu', 'cuda' (also ROCm builds of torch), ... for a device string or torch.device."""
    import torch

    return torch.device(device).type


def cuda_available() -> bool:
    """Whether torch sees a CUDA (or ROCm) device."""
    import torch

    return bool(torch.cuda.is_available())


def device_capability(device: DeviceLike) -> Optional[tuple[int, int]]:
    """(major, minor) compute capability of a CUDA device; None for the CPU or no device.

    On ROCm builds torch reports the gfx version the same way (gfx942 -> (9, 4)).
    """
    import torch

    dev = torch.device(device)
    if dev.type != "cuda" or not cuda_available():
        return None
    major, minor = torch.cuda.get_device_capability(dev)
    return int(major), int(minor)


def is_rocm() -> bool:
    """Whether torch is a ROCm (HIP) build."""
    import torch

    return getattr(torch.version, "hip", None) is not None


def _flashinfer_version() -> Optional[str]:
    if importlib.util.find_spec("flashinfer") is None:  # finds the package without importing it
        return None
    for dist in FLASHINFER_DISTRIBUTIONS:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


def library_versions() -> dict[str, str]:
    """Versions a run is stamped with: torch, its CUDA / HIP / cuDNN, and FlashInfer if installed.

    Absent components read NOT_INSTALLED; flashinfer appears only when it is importable, and its
    version is read from the package metadata, never by importing it.
    """
    import torch

    out = {
        "torch": str(torch.__version__),
        "cuda": str(torch.version.cuda) if torch.version.cuda else NOT_INSTALLED,
        "hip": str(torch.version.hip) if getattr(torch.version, "hip", None) else NOT_INSTALLED,
    }
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    out["cudnn"] = str(cudnn) if cudnn else NOT_INSTALLED
    fi = _flashinfer_version()
    if fi is not None:
        out["flashinfer"] = fi
    return out


def context_after_error(device: str) -> tuple[bool, str]:
    """(usable, what the probe met) after a library raised on `device`.

    A failed kernel launch ("invalid argument") leaves a pending error that the NEXT CUDA call to
    check reports, whatever that call is: here the probe reads (and so clears) it, instead of the
    next case being blamed. A dead context (an illegal memory access) fails every call, so the
    probe fails twice.
    """
    if device.split(":")[0] != "cuda":
        return True, ""
    import torch

    met: list[str] = []
    for _ in range(2):
        try:
            torch.cuda.synchronize(device)
            torch.zeros(1, device=device).add_(1).item()
            return True, "; ".join(met)
        except Exception as e:  # the pending or sticky CUDA error, as torch reports it
            met.append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300])
    return False, "; ".join(met)
