"""Routing specs, one module per library: data only (rows, tables, lifecycle flags).

Each module builds a `routing.spec.RoutingSpec` and calls `routing.spec.validate` on it at import,
so a spec that names an unknown reason, repeats a row name or leaves an architecture out of a
table fails on import. SPECS maps a library name to its spec.
"""
from __future__ import annotations

from routing.spec import RoutingSpec
from routing.specs.flashinfer_rocm import SPEC as FLASHINFER_ROCM

SPECS: dict[str, RoutingSpec] = {FLASHINFER_ROCM.library: FLASHINFER_ROCM}
