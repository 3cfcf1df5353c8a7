"""Point `import flashinfer` at the ROCm fork stand-in, on a chosen architecture and AITER install.

    lib = install(monkeypatch, arch="gfx942")             # pytest: undone with the monkeypatch
    with installed(arch="gfx950", aiter="not_installed") as lib:
        ...                                                # a script: undone on exit

The stand-in (kernels/standins/rocm_flashinfer/) goes into sys.modules as `flashinfer`,
`flashinfer.quantization` and `flashinfer.rocm.{arch_caps,prefill,decode,aiter_utils}`, the fork's
paths, so kernels/flashinfer/lib.py finds it exactly where it looks for the fork. Then the probes
are patched as the fork's own GPU-free tests patch them (rocm_fork.md section 5: `as_arch`
monkeypatches `_device_arch`; AITER's importability, version, fp8 encoding and kernel bootstraps
likewise), because a CPU has neither a gcnArchName nor AITER:

  arch              what `arch_caps._device_arch` returns ("gfx942", "gfx950", "unknown", ...)
  aiter             "importable" | "not_installed" | "below_abi_floor" (section 2 step 11)
  aiter_version     the amd-aiter version reported (default: the validated 0.1.20 build, or
                    0.1.12 below the floor; None when not installed)
  bootstrap_ok      AITER's kernel bootstraps succeed (False: they raise ModuleNotFoundError,
                    and native paging is unavailable too, since it launches the same kernels)
  native_paging_ok  `_aiter_native_paging_available` at a routed page size
  strict            FLASHINFER_AITER_STRICT=1
  fault             defects of kernels/standins/faults.py switched on, "a" or "a+b" (the label names them)

While installed, the adapter's default CUDA-graph driver (kernels.flashinfer.adapter.TorchGraphs) is
`RecordedGraphs`, which records the stand-in's launches at capture and runs them at replay: graph
mode ("+graph" backends) on a CPU.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Optional

import torch

from kernels.standin_label import MARKER
from kernels.standins import faults
from kernels.standins._install import forget_facts, installed_by, script_undo, uninstall
from kernels.standins.rocm_flashinfer import quantization, rocm
from kernels.standins._launch import RecordedGraphs
from kernels.standins.rocm_flashinfer.rocm import aiter_utils, arch_caps, decode, prefill

import kernels.flashinfer.adapter as flashinfer_adapter
import kernels.standins.rocm_flashinfer as package

NAME = package.__attncheck_standin__
AITER_STATES = ("importable", "not_installed", "below_abi_floor")
VALIDATED_AITER = "0.1.20+rocm10.1.0a20260819.3135022"  # rocm_fork.md section 3, pins
BELOW_FLOOR_AITER = "0.1.12"
# aiter.dtypes.fp8 per architecture (rocm_fork.md section 4: e4m3fnuz gfx942, e4m3fn gfx950).
NATIVE_FP8 = {"gfx942": torch.float8_e4m3fnuz, "gfx950": torch.float8_e4m3fn}
MODULES = {
    "flashinfer": package,
    "flashinfer.quantization": quantization,
    "flashinfer.rocm": rocm,
    "flashinfer.rocm.arch_caps": arch_caps,
    "flashinfer.rocm.prefill": prefill,
    "flashinfer.rocm.decode": decode,
    "flashinfer.rocm.aiter_utils": aiter_utils,
}

__all__ = ["AITER_STATES", "NAME", "RecordedGraphs", "install", "installed", "uninstall"]


def _bootstrap(ok: bool, missing: str) -> Callable[..., bool]:
    def probe(*_: Any) -> bool:
        if not ok:
            raise ModuleNotFoundError(missing)
        return True

    return probe


def install(
    monkeypatch: Any = None,
    *,
    arch: str = "gfx942",
    aiter: str = "importable",
    aiter_version: Optional[str] = None,
    bootstrap_ok: bool = True,
    native_paging_ok: bool = True,
    strict: bool = False,
    fault: Optional[str] = None,
) -> Any:
    """Install the stand-in as `flashinfer`; returns that module. Without a monkeypatch, uninstall() undoes it."""
    if aiter not in AITER_STATES:
        raise ValueError(f"aiter={aiter!r}: expected one of {AITER_STATES}")
    defects = [faults.fault(name) for name in fault.split("+")] if fault is not None else []
    mp = monkeypatch if monkeypatch is not None else script_undo()
    importable = aiter == "importable"
    if aiter_version is None and aiter != "not_installed":
        aiter_version = VALIDATED_AITER if importable else BELOW_FLOOR_AITER
    bootstrap_ok = bootstrap_ok and importable
    missing = (
        "No module named 'aiter'" if not importable else "No module named 'aiter.jit' (stand-in: bootstrap_ok=False)"
    )
    for name, module in MODULES.items():
        mp.setitem(sys.modules, name, module)
    normal = arch_caps.normalize_arch(arch)
    mp.setattr(arch_caps, "_device_arch", lambda device: normal)
    mp.setattr(prefill, "_aiter_installed_version", lambda: aiter_version if aiter != "not_installed" else None)
    mp.setattr(prefill, "_aiter_ops_importable", lambda: importable)
    mp.setattr(prefill, "_native_fp8_dtype", lambda: NATIVE_FP8.get(normal) if importable else None)
    mp.setattr(prefill, "_aiter_native_paging_available", lambda page_size: bootstrap_ok and native_paging_ok)
    mp.setattr(prefill, "_aiter_batch_ragged_available", _bootstrap(bootstrap_ok, missing))
    mp.setattr(prefill, "_aiter_single_prefill_available", _bootstrap(bootstrap_ok, missing))
    mp.setattr(decode, "_aiter_pa_v1_available", _bootstrap(bootstrap_ok, missing))
    # A CPU has no torch.cuda.CUDAGraph: the adapter's default graph driver becomes the recorder.
    mp.setattr(flashinfer_adapter, "TorchGraphs", RecordedGraphs)
    mp.setattr(prefill, "_aiter_auto_warned", set())
    mp.setattr(decode, "_lse_shadow_warned", False)
    if strict:
        mp.setenv(aiter_utils.STRICT_ENV, "1")
    else:
        mp.delenv(aiter_utils.STRICT_ENV, raising=False)
    for defect in defects:
        defect.patch(mp)
    if defects:
        mp.setattr(package, MARKER, f"{NAME}+fault:{'+'.join(d.name for d in defects)}")
    forget_facts()
    return package


def installed(**config: Any) -> contextlib.AbstractContextManager[Any]:
    """install(None, **config) for the duration of a `with` block."""
    return installed_by(install, **config)
