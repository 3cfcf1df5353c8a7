"""How a stand-in library is recognised and labelled (kernels/standins/ holds the stand-ins).

Apart from the stand-ins themselves, so that the adapters can read the label without importing
a stand-in, which in turn patches an adapter when it is installed.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

MARKER = "__attncheck_standin__"
VERSION_PREFIX = "stand-in: "
# Set on a library module while one of attncheck's faults is injected into it (the real library or a
# stand-in: kernels/flashinfer/lifecycle_faults.py); versions() then say "+fault:NAME".
FAULT_MARKER = "__attncheck_fault__"
FAULT_SUFFIX = "+fault:"


def standin_of(module: Any) -> Optional[str]:
    """The stand-in name a module carries, or None for a real library (or no module)."""
    name = getattr(module, MARKER, None)
    return str(name) if name else None


def fault_of(module: Any) -> Optional[str]:
    """The name of the fault injected into a library module, or None."""
    name = getattr(module, FAULT_MARKER, None)
    return str(name) if name else None


def version_label(name: str) -> str:
    """What a target's versions() says for a library that is a stand-in."""
    return VERSION_PREFIX + name


def standin_from_versions(versions: Mapping[str, str]) -> Optional[str]:
    """The stand-in a run header's versions name, or None when every library is real."""
    for value in versions.values():
        if isinstance(value, str) and value.startswith(VERSION_PREFIX):
            return value[len(VERSION_PREFIX) :]
    return None
