"""Switching an injected fault on and off: one attribute replaced, the library module labelled.

The fault catalogues (kernels/torch_precision_faults.py, torch_batch_faults.py, torch_state_faults.py: torch's
attention functions; kernels/flashinfer/lifecycle_faults.py: FlashInfer's wrappers' plan()) look their faults
up and patch through here, so all of them name their choices alike, refuse a second fault, label the library
with the fault's name (kernels/standin_label.py FAULT_MARKER: versions() then say "+fault:NAME") and undo alike.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Mapping, Optional, TypeVar

from kernels.standin_label import FAULT_MARKER

T = TypeVar("T")


def lookup(catalogue: Mapping[str, T], name: str, kind: str) -> T:
    """Fault `name` of a `kind` catalogue; a ValueError naming the choices otherwise."""
    if name not in catalogue:
        raise ValueError(f"{kind} fault {name!r}: expected one of {', '.join(catalogue)}")
    return catalogue[name]


def patch(
    home: Any, owner: Any, attr: str, replacement: Callable[[Any], Any], name: str, kind: str, again_ok: bool = False
) -> Callable[[], None]:
    """Replace `owner.attr` by `replacement(original)` and label `home` with fault `name`; returns the undo.

    One fault at a time: another fault already on `home` is a ValueError naming it; the same fault again
    changes nothing where `again_ok` (a script written from inside a subject's context installs it once more).
    """
    present = getattr(home, FAULT_MARKER, None)
    if present == name and again_ok:
        return lambda: None
    if present:
        raise ValueError(f"{kind} fault {name!r}: {present!r} is injected already; remove it first")
    original = vars(owner)[attr]
    setattr(owner, attr, replacement(original))
    setattr(home, FAULT_MARKER, name)

    def undo() -> None:
        setattr(owner, attr, original)
        if getattr(home, FAULT_MARKER, None) == name:
            delattr(home, FAULT_MARKER)

    return undo


@contextlib.contextmanager
def injected(
    install: Callable[[str], Callable[[], None]], catalogue: Mapping[str, T], name: Optional[str]
) -> Iterator[Optional[T]]:
    """Fault `name` of `catalogue` switched on by `install` for the block (None: nothing, the library as it is)."""
    if name is None:
        yield None
        return
    undo = install(name)
    try:
        yield catalogue[name]
    finally:
        undo()
