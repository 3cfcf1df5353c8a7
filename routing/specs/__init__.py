"""Routing specs, one module per library: data only (rows, tables, lifecycle flags).

Each module builds a `routing.spec.RoutingSpec` and calls `routing.spec.validate` on it at import,
so a spec that names an unknown reason, repeats a row name or leaves an architecture out of a
table fails on import. SPECS maps a library name to its spec; BY_MODULE maps the module's name
(what a command line is likelier to be given) to the same spec.
"""

from __future__ import annotations

from routing.spec import RoutingSpec
from routing.specs.flashinfer_cuda import SPEC as FLASHINFER_CUDA
from routing.specs.flashinfer_rocm import SPEC as FLASHINFER_ROCM
from routing.specs.torch_sdpa import SPEC as TORCH_SDPA

SPECS: dict[str, RoutingSpec] = {s.library: s for s in (FLASHINFER_CUDA, FLASHINFER_ROCM, TORCH_SDPA)}
BY_MODULE: dict[str, RoutingSpec] = {
    "flashinfer_cuda": FLASHINFER_CUDA,
    "flashinfer_rocm": FLASHINFER_ROCM,
    "torch_sdpa": TORCH_SDPA,
}
