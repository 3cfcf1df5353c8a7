"""How a stand-in is installed as `flashinfer` and undone: by a pytest monkeypatch, a `with`, or a script.

install(monkeypatch=None, ...) of kernels/standins/upstream.py and rocm_fork.py records every
change on the monkeypatch given, or on an Undo kept here for uninstall(); installed(...) is the
`with` form. The adapter's cached library facts are forgotten whenever the library changes.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator


class Undo:
    """The monkeypatch calls install() makes, recorded for undo() where no monkeypatch is given."""

    _absent = object()

    def __init__(self) -> None:
        self._log: list[Callable[[], None]] = []

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        old = getattr(obj, name)
        setattr(obj, name, value)
        self._log.append(lambda: setattr(obj, name, old))

    def setitem(self, mapping: Any, key: Any, value: Any) -> None:
        old = mapping.get(key, self._absent)
        mapping[key] = value
        self._log.append(lambda: mapping.__setitem__(key, old) if old is not self._absent else mapping.pop(key, None))

    def setenv(self, name: str, value: str) -> None:
        self.setitem(os.environ, name, value)

    def delenv(self, name: str, raising: bool = False) -> None:
        old = os.environ.pop(name, None)
        if old is not None:
            self._log.append(lambda: os.environ.__setitem__(name, old))

    def undo(self) -> None:
        while self._log:
            self._log.pop()()


_script_installs: list[Undo] = []


def forget_facts() -> None:
    from kernels.flashinfer import lib as flashinfer_lib

    flashinfer_lib.lib_facts.cache_clear()


def script_undo() -> Undo:
    """A fresh Undo that uninstall() will undo: an install() made without a monkeypatch.

    An earlier such install is undone first: a script's install replaces the last one (its fault
    included) rather than stacking on it.
    """
    uninstall()
    undo = Undo()
    _script_installs.append(undo)
    return undo


def uninstall() -> None:
    """Undo every install() made without a monkeypatch, newest first."""
    while _script_installs:
        _script_installs.pop().undo()
    forget_facts()


@contextlib.contextmanager
def installed_by(install: Callable[..., Any], **config: Any) -> Iterator[Any]:
    """install(undo, **config) for the duration of a `with` block."""
    undo = Undo()
    try:
        yield install(undo, **config)
    finally:
        undo.undo()
        forget_facts()
