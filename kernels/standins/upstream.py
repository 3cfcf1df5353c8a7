"""Point `import flashinfer` at the upstream FlashInfer model, on a chosen device generation.

    lib = install(monkeypatch, sm90=True, cudnn=False)   # pytest: undone with the monkeypatch
    with installed(sm90=False) as lib:                  # a script: undone on exit
        ...

The model (kernels/standins/upstream_flashinfer/) goes into sys.modules as `flashinfer` and its
submodules (utils, prefill, decode, quantization, cudnn, cudnn.prefill), where
kernels/flashinfer/lib.py looks for upstream. The probes a CPU cannot answer are patched:

  sm90     what utils.is_sm90a_supported says (fa3 is offered, and `auto` may choose it)
  cudnn    cudnn.prefill.CUDNN_AVAILABLE

Installing clears the model's call log (upstream_flashinfer/_state.py). While installed, the
adapter's default CUDA-graph driver is `RecordedGraphs`: graph mode on a CPU.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import kernels.flashinfer.adapter as flashinfer_adapter
import kernels.standins.upstream_flashinfer as package
from kernels.standins._install import forget_facts, installed_by, script_undo, uninstall
from kernels.standins._launch import RecordedGraphs
from kernels.standins.upstream_flashinfer import cudnn as cudnn_package
from kernels.standins.upstream_flashinfer import decode, prefill, quantization, utils
from kernels.standins.upstream_flashinfer._state import STATE
from kernels.standins.upstream_flashinfer.cudnn import prefill as cudnn_prefill

NAME = package.__attncheck_standin__
# The release the model copies (its modules cite that release's lines): the known-failure ledger is read at it.
MODELLED_VERSION = "0.7.2.post1"
MODULES = {
    "flashinfer": package,
    "flashinfer.utils": utils,
    "flashinfer.prefill": prefill,
    "flashinfer.decode": decode,
    "flashinfer.quantization": quantization,
    "flashinfer.cudnn": cudnn_package,
    "flashinfer.cudnn.prefill": cudnn_prefill,
}

__all__ = ["MODELLED_VERSION", "NAME", "RecordedGraphs", "STATE", "install", "installed", "uninstall"]


def install(monkeypatch: Any = None, *, sm90: bool = True, cudnn: bool = False) -> Any:
    """Install the model as `flashinfer`; returns that module. Without a monkeypatch, uninstall() undoes it."""
    mp = monkeypatch if monkeypatch is not None else script_undo()
    for name, module in MODULES.items():
        mp.setitem(sys.modules, name, module)
    mp.setattr(utils, "is_sm90a_supported", lambda device: sm90)
    mp.setattr(cudnn_prefill, "CUDNN_AVAILABLE", cudnn)
    mp.setattr(flashinfer_adapter, "TorchGraphs", RecordedGraphs)
    STATE.clear()
    forget_facts()
    return package


def installed(**config: Any) -> contextlib.AbstractContextManager[Any]:
    """install(None, **config) for the duration of a `with` block."""
    return installed_by(install, **config)
