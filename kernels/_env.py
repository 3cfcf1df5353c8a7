"""Facts about this machine, behind plain functions that tests patch.

Nothing here runs at import time: no device query, no import of torch or of a kernel library.
Routing tests for another architecture patch `device_capability` (as FlashInfer's own tests
patch `get_compute_capability`); adapters and specs call these functions every time they need
a fact, so a patch is seen everywhere.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import os
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
    """Whether torch sees a CUDA (or ROCm) device. While torch has no context it is asked through NVML
    (torch.cuda.device_count): is_available's cudaGetDeviceCount initialises the driver, after which no forked
    child can use the GPU (the pristine control's server, conformance/explore/pristine.py)."""
    import torch

    if not torch.cuda.is_initialized():
        return torch.cuda.device_count() > 0
    return bool(torch.cuda.is_available())


def device_capability(device: DeviceLike) -> Optional[tuple[int, int]]:
    """(major, minor) compute capability of a CUDA device; None for the CPU or no device.

    On ROCm builds torch reports the gfx version the same way (gfx942 -> (9, 4)).
    """
    import torch

    dev = torch.device(device)
    if dev.type != "cuda" or not cuda_available():
        return None
    if dev.index is not None:
        index = dev.index
    else:  # "cuda": the current device, as torch.cuda.get_device_capability reads it (0 before any context)
        index = torch.cuda.current_device() if torch.cuda.is_initialized() else 0
    major, minor, _ = device_properties(index)
    return int(major), int(minor)


def device_properties(index: int) -> tuple[int, int, str]:
    """Device `index`'s (major, minor, gcnArchName or ""), without making a CUDA context in this process.

    Where torch has none yet the question is asked in a forked child: a process that only looked at its
    device can still fork children that use it (conformance/explore/pristine.py forks its server after the
    subjects are chosen, which needs the architecture). Where a context exists it is asked directly."""
    import torch

    if torch.cuda.is_initialized() or not hasattr(os, "fork"):
        p = torch.cuda.get_device_properties(index)
        return int(p.major), int(p.minor), str(getattr(p, "gcnArchName", "") or "")
    return _properties_from_a_fork(index)


@functools.lru_cache(maxsize=None)
def _properties_from_a_fork(index: int) -> tuple[int, int, str]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: make the context, answer, leave without running the parent's exit handlers
        try:
            os.close(read)
            import torch

            p = torch.cuda.get_device_properties(index)
            answer: Any = [p.major, p.minor, getattr(p, "gcnArchName", "") or ""]
        except BaseException as e:  # noqa: BLE001 - the parent says why
            answer = {"error": f"{type(e).__name__}: {e}"}
        finally:
            os.write(write, json.dumps(answer).encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        text = f.read()
    os.waitpid(pid, 0)
    got = json.loads(text) if text else {"error": "no answer"}
    if isinstance(got, dict):
        raise RuntimeError(f"device {index}'s properties, asked in a forked child: {got['error']}")
    major, minor, gcn = got
    return int(major), int(minor), str(gcn)


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

    from kernels.standin_label import FAULT_SUFFIX, fault_of

    fault = fault_of(torch.nn.functional)  # a precision fault injected (kernels/torch_precision_faults.py)
    out = {
        "torch": str(torch.__version__) + (FAULT_SUFFIX + fault if fault else ""),
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


def out_of_memory(e: BaseException) -> bool:
    """Whether `e` is the machine running out of memory (torch's OutOfMemoryError, a CUDA "out of
    memory" error as a library's own allocator words it, or Python's MemoryError): an environment
    failure, never a finding about the kernel."""
    import torch

    if isinstance(e, (torch.OutOfMemoryError, MemoryError)):
        return True
    text = str(e).lower()
    return isinstance(e, RuntimeError) and ("out of memory" in text or "cudaerrormemoryallocation" in text)


# A GPU process that holds more than this (the allocator's reserve) collects its garbage and hands its
# cached blocks back, so sixteen subject processes can share one GPU. Below it, nothing is collected: a
# full collection costs more than an example's calls (docs/scenario-machines.md, "device memory").
RECLAIM_ABOVE_BYTES = 4 << 30


def reclaim_memory(device: str) -> bool:
    """On a GPU, collect garbage and empty the allocator's cache when this process holds more than
    RECLAIM_ABOVE_BYTES; whether it did."""
    if device.split(":")[0] != "cuda":
        return False
    import gc

    import torch

    if torch.cuda.memory_reserved(device) <= RECLAIM_ABOVE_BYTES:
        return False
    gc.collect()
    torch.cuda.empty_cache()
    return True


def memory_report(device: str) -> str:
    """What device memory looked like when it ran out: free of total, and what this process holds."""
    if device.split(":")[0] != "cuda":
        return "host memory"
    import torch

    gib = 2.0**30
    try:
        free, total = torch.cuda.mem_get_info(device)
        mine = torch.cuda.memory_reserved(device)
    except Exception as e:  # noqa: BLE001 - a report, never a second failure
        return f"device memory not readable: {type(e).__name__}: {e}"[:200]
    return f"{free / gib:.1f} GiB free of {total / gib:.1f} GiB; this process holds {mine / gib:.1f} GiB"


# The float unary functions torch 2.13 computes through oneMKL's VML on the CPU (float32 and float64;
# measured with a breakpoint on each vms*/vmd* entry point). The harness's own attention uses exp,
# log, log2 and tanh (oracle/reference.py, the stand-ins' kernels/standins/_kernels.py).
VML_FUNCTIONS = (
    "acos",
    "asin",
    "atan",
    "cos",
    "erf",
    "erfc",
    "exp",
    "log",
    "log10",
    "log2",
    "sin",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
)


@functools.cache
def warm_mkl_vml() -> None:
    """Call each of VML_FUNCTIONS once on one element, per float32 and float64, in this thread.

    torch computes these on the CPU through oneMKL's VML, one call per intra-op thread on its chunk
    (2048 elements or more: two chunks on two threads). The oneMKL that torch bundles (2024.2) picks
    a VML function's kernel on that function's first call, and a first call made on two threads at
    once can run one thread's chunk on the AVX2 low-accuracy (EP) kernel: a relative error of about
    1.5e-4 instead of 6e-8, once per process (pytorch/pytorch#188792). The oracle would then be off
    for one first run, and a run would differ from a fresh adapter's bit for bit (a false
    history_independent). A one-element call runs in the calling thread alone, so every kernel is
    picked before any call is shared between threads. Cached: once per process.
    """
    import torch

    for dtype in (torch.float32, torch.float64):
        one = torch.ones(1, dtype=dtype)
        for name in VML_FUNCTIONS:
            getattr(torch, name)(one)
