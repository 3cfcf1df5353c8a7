"""Routing specs, one module per library: data only (rows, tables, lifecycle flags).

Each module builds `routing.spec.RoutingSpec`s and calls `routing.spec.validate` on them at import,
so a spec that names an unknown reason, repeats a row name or leaves an architecture out of a
table fails on import.

A library whose `auto` changed between releases has one spec per measured version (FlashInfer on
CUDA: `flashinfer_cuda.BY_VERSION`), picked by the installed version's exact string: a version
without rows is unmodelled (`spec_for` answers None), never judged by a neighbour's rows. SPECS
maps each other library's name to its one spec; BY_MODULE maps the module's name (what a command
line is likelier to be given) to the library's name.
"""

from __future__ import annotations

from typing import Mapping, Optional

from routing.spec import RoutingSpec
from routing.specs import flashinfer_cuda
from routing.specs.flashinfer_rocm import SPEC as FLASHINFER_ROCM
from routing.specs.torch_sdpa import SPEC as TORCH_SDPA

FLASHINFER_CUDA_LIBRARY = "flashinfer-cuda"
# Libraries with one spec per measured version: name -> {version: spec}.
VERSIONED: dict[str, Mapping[str, RoutingSpec]] = {FLASHINFER_CUDA_LIBRARY: flashinfer_cuda.BY_VERSION}
# Libraries with one spec whatever the version.
SPECS: dict[str, RoutingSpec] = {s.library: s for s in (FLASHINFER_ROCM, TORCH_SDPA)}
BY_MODULE: dict[str, str] = {
    "flashinfer_cuda": FLASHINFER_CUDA_LIBRARY,
    "flashinfer_rocm": FLASHINFER_ROCM.library,
    "torch_sdpa": TORCH_SDPA.library,
}
NAMES: tuple[str, ...] = tuple(sorted({*VERSIONED, *SPECS, *BY_MODULE}))


def library_of(name: str) -> Optional[str]:
    """The library a spec name means (its library name or its module's name), or None: not a spec."""
    name = BY_MODULE.get(name, name)
    return name if name in VERSIONED or name in SPECS else None


def is_versioned(name: str) -> bool:
    """Whether the library `name` means has one spec per version (its version picks the rows)."""
    return library_of(name) in VERSIONED


def modelled_versions(name: str) -> tuple[str, ...]:
    """The versions with rows of a versioned library; () for another."""
    return tuple(VERSIONED.get(library_of(name) or "", {}))


def spec_for(name: str, version: Optional[str] = None) -> Optional[RoutingSpec]:
    """The spec that judges library `name` at `version`: a versioned library's rows for exactly that
    version, or None where it has none (unmodelled; no version known is unmodelled too); another
    library's one spec whatever the version. KeyError for a name that is no spec."""
    library = library_of(name)
    if library is None:
        raise KeyError(name)
    if library in VERSIONED:
        return VERSIONED[library].get(version) if version is not None else None
    return SPECS[library]


def flashinfer_cuda_spec(version: Optional[str]) -> Optional[RoutingSpec]:
    """Upstream FlashInfer's CUDA spec for the installed flashinfer-python `version`, or None: unmodelled."""
    return spec_for(FLASHINFER_CUDA_LIBRARY, version)


def unmodelled_note(name: str, version: Optional[str]) -> str:
    """Why library `name` at `version` has no spec: the note a report or a summary gives instead of a
    routing verdict (the routes are observed, not checked; never a failure of every record)."""
    library = library_of(name) or name
    return (
        f"{library} {version if version is not None else '(version unknown)'} has no routing spec rows "
        f"(rows for {', '.join(modelled_versions(library))}): its routes are observed, not checked"
    )
