"""The gate's vocabulary: hardware and library markers, and which of them this machine has.

A test that needs hardware says so with a marker (`@pytest.mark.sm90`); the plugin skips it,
naming what is missing, on a machine without it, and `--require sm90` turns any such skip into a
failure on a runner that declares the hardware. Detection is kept apart from the pytest hooks
(conformance/gate_plugin.py) so it can be tested with patched facts: `gpu_facts()` is the only
function that asks torch, and nothing is queried at import (nor is torch imported: an xdist worker
whose tests need no marker never pays for it).

`cuda` follows torch's vocabulary: a GPU reached as device "cuda", NVIDIA or AMD (ROCm builds of
torch serve AMD GPUs through torch.cuda); `rocm` and the gfx markers narrow it to AMD.
"""

from __future__ import annotations

import importlib.util
import platform
from dataclasses import dataclass
from typing import Literal, Optional


@dataclass(frozen=True)
class Marker:
    name: str
    kind: Literal["hardware", "library"]
    needs: str  # the marker's help line: what a test with it needs


MARKERS: tuple[Marker, ...] = (
    Marker("cuda", "hardware", "a GPU torch reaches as device 'cuda' (NVIDIA CUDA, or AMD through ROCm)"),
    Marker("sm90", "hardware", "an NVIDIA GPU of compute capability 9.0 (H100, H200)"),
    Marker("rocm", "hardware", "an AMD GPU through a ROCm build of torch"),
    Marker("gfx942", "hardware", "an AMD CDNA3 GPU, gfx942 (MI300X, MI325X)"),
    Marker("gfx950", "hardware", "an AMD CDNA4 GPU, gfx950 (MI350X, MI355X)"),
    Marker("multi_gpu", "hardware", "two or more GPUs visible to the process"),
    Marker("flashinfer", "library", "FlashInfer importable (upstream, or the ROCm fork)"),
    Marker("aiter", "library", "AMD AITER importable (the ROCm fork's second backend)"),
)
BY_NAME: dict[str, Marker] = {m.name: m for m in MARKERS}
# Library markers: the importable module each one needs.
LIBRARY_MODULES: dict[str, str] = {"flashinfer": "flashinfer", "aiter": "aiter"}


@dataclass(frozen=True)
class GpuFacts:
    """What torch says about the GPUs of this process (after any *_VISIBLE_DEVICES pinning)."""

    count: int
    rocm: bool
    capability: Optional[tuple[int, int]]  # device 0
    gcn_arch: Optional[str]  # device 0 on ROCm, e.g. "gfx942" (torch's gcnArchName, features cut)


NO_GPU = GpuFacts(0, False, None, None)


def gpu_facts() -> GpuFacts:
    """Ask torch, once per call: device count, vendor, device 0's capability and gfx name."""
    from kernels import _env

    if not _env.cuda_available():
        return NO_GPU
    import torch

    count = int(torch.cuda.device_count())
    gcn = None
    if _env.is_rocm():  # asked without making a context here (_env.device_properties)
        gcn = _env.device_properties(0)[2].split(":", 1)[0] or None
    return GpuFacts(count, _env.is_rocm(), _env.device_capability("cuda:0"), gcn)


def library_present(marker: str) -> bool:
    return importlib.util.find_spec(LIBRARY_MODULES[marker]) is not None  # finds it without importing


def detect(facts: GpuFacts, libraries: frozenset[str]) -> frozenset[str]:
    """The markers whose needs these facts meet (libraries: the library markers importable here)."""
    have: set[str] = set(libraries)
    if facts.count >= 1:
        have.add("cuda")
        if facts.rocm:
            have.add("rocm")
            if facts.gcn_arch in ("gfx942", "gfx950"):
                have.add(facts.gcn_arch)
        elif facts.capability == (9, 0):
            have.add("sm90")
    if facts.count >= 2:
        have.add("multi_gpu")
    return frozenset(have)


def detect_here() -> frozenset[str]:
    """Markers this process meets now."""
    return detect(gpu_facts(), frozenset(m for m in LIBRARY_MODULES if library_present(m)))


def arch_of(facts: GpuFacts, device: str) -> str:
    """The architecture a run on `device` is stamped with: sm90, gfx942, ... or cpu-<machine>."""
    if device.split(":")[0] == "cpu" or facts.count == 0:
        return f"cpu-{platform.machine().lower() or 'unknown'}"
    if facts.rocm:
        return facts.gcn_arch or "rocm-unknown"
    if facts.capability is None:
        return "cuda-unknown"
    return f"sm{facts.capability[0]}{facts.capability[1]}"


def arch_here(device: str) -> str:
    return arch_of(gpu_facts() if device.split(":")[0] != "cpu" else NO_GPU, device)


def missing_reason(name: str, have: frozenset[str], arch: str) -> str:
    """The skip reason of a test whose marker `name` this machine does not meet."""
    met = ", ".join(sorted(have)) or "none"
    return f"needs {name}: {BY_NAME[name].needs}; this machine: {arch}, markers met: {met}"


def needs_of(target: str, device: str) -> tuple[str, ...]:
    """The markers a parity grid of `target` on `device` carries: the hardware and library it needs."""
    out = ["cuda"] if device.split(":")[0] == "cuda" else []
    if target in LIBRARY_MODULES:
        out.append(target)
    return tuple(out)
