"""Routing specs, one module per library: data only (rows, tables, lifecycle flags).

Each module builds a `routing.spec.RoutingSpec` and calls `routing.spec.validate` on it at import,
so a spec that names an unknown reason, repeats a row name or leaves an architecture out of a
table fails on import. SPECS maps a library name to its spec.
"""
from __future__ import annotations

from routing.spec import RoutingSpec
from routing.specs.flashinfer_rocm import SPEC as FLASHINFER_ROCM
from routing.specs.torch_sdpa import SPEC as TORCH_SDPA

SPECS: dict[str, RoutingSpec] = {s.library: s for s in (FLASHINFER_ROCM, TORCH_SDPA)}
