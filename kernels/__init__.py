"""The adapters: one registry from target name to the Target object that serves it.

    REGISTRY["torch"] == "kernels.torch_target:TARGET"
    get_target("torch") -> TorchTarget (imported on first use)

Entries are "module:attribute" strings so that importing `kernels` never imports a kernel
library: the FlashInfer module may need CUDA and a JIT cache, and a CPU-only run must not pay
for it or fail on it. The registry checks itself at import (every name well formed, every module
present on disk), so a typo in a new entry fails the first `import kernels`, not a GPU run.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from typing import TYPE_CHECKING, Mapping

from kernels.errors import UnknownTarget

if TYPE_CHECKING:  # the protocol imports torch, which importing `kernels` alone never needs
    from kernels.protocol import Target

REGISTRY: dict[str, str] = {
    "torch": "kernels.torch_target:TARGET",
    "flashinfer": "kernels.flashinfer.adapter:TARGET",
}

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_ENTRY = re.compile(r"^kernels(\.[a-z_][a-z0-9_]*)+:[A-Za-z_][A-Za-z0-9_]*$")
# What get_target checks on the object an entry names (the Target protocol, kernels/protocol.py).
_TARGET_METHODS = ("backends", "available", "make", "versions")


def get_target(name: str) -> Target:
    """The Target registered as `name`, importing its module on first use."""
    if name not in REGISTRY:
        raise UnknownTarget(name, tuple(REGISTRY))
    module, attr = REGISTRY[name].split(":")
    obj = getattr(importlib.import_module(module), attr)
    missing = [m for m in _TARGET_METHODS if not callable(getattr(obj, m, None))]
    if getattr(obj, "name", None) != name or missing:
        raise TypeError(
            f"kernels.REGISTRY[{name!r}] = {REGISTRY[name]!r} names {obj!r}, whose name is "
            f"{getattr(obj, 'name', None)!r} and which lacks {missing}: expected a Target "
            f"named {name!r} (kernels/protocol.py). Fix: point the entry at the module's "
            f"Target instance"
        )
    return obj  # type: ignore[no-any-return]


def check_registry(registry: Mapping[str, str]) -> None:
    """Raise ImportError naming the first malformed entry; the module runs this on itself."""
    for name, entry in registry.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise ImportError(
                f"kernels.REGISTRY key {name!r} is malformed: expected a lowercase name "
                f"like 'torch'. Fix: rename the entry"
            )
        if not isinstance(entry, str) or not _ENTRY.match(entry):
            raise ImportError(
                f"kernels.REGISTRY[{name!r}] = {entry!r} is malformed: expected "
                f"'kernels.<module>[.<module>...]:<attribute>'. Fix: name the module and its Target"
            )
        module = entry.split(":")[0]
        if importlib.util.find_spec(module) is None:  # locates the file without importing it
            raise ImportError(
                f"kernels.REGISTRY[{name!r}] = {entry!r}: module {module!r} does not exist. "
                f"Fix: add the module or drop the entry"
            )


check_registry(REGISTRY)
