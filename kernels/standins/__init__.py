"""CPU stand-ins for attention libraries that cannot be imported here, and how to recognise one.

A stand-in reproduces a library's documented API surface (names, signatures, routing, reason
strings, errors) with plain-torch numerics, so the adapter's code paths for that library run on
a CPU. Its results say the adapter hands the library the right problem and reads back what the
library reports; they say nothing about the library's kernels. So a stand-in is always labelled:
every one of its modules carries `__attncheck_standin__` (its name), `kernels.flashinfer_lib`
reports it in LibFacts and in the target's versions ("stand-in: <name>"), and a run whose header
names a stand-in is never counted as a conformance result (conformance/parity_run.py).

    rocm_flashinfer/   the ROCm FlashInfer fork (AMD-Ecosystem/flashinfer) as module tree
    rocm_fork.py       install() / installed(): point `import flashinfer` at it, patch its probes
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

MARKER = "__attncheck_standin__"
VERSION_PREFIX = "stand-in: "


def standin_of(module: Any) -> Optional[str]:
    """The stand-in name a module carries, or None for a real library (or no module)."""
    name = getattr(module, MARKER, None)
    return str(name) if name else None


def version_label(name: str) -> str:
    """What a target's versions() says for a library that is a stand-in."""
    return VERSION_PREFIX + name


def standin_from_versions(versions: Mapping[str, str]) -> Optional[str]:
    """The stand-in a run header's versions name, or None when every library is real."""
    for value in versions.values():
        if isinstance(value, str) and value.startswith(VERSION_PREFIX):
            return value[len(VERSION_PREFIX):]
    return None
