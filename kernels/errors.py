"""Errors an adapter raises: the library is missing, or a name does not resolve."""

from __future__ import annotations


class UnknownTarget(ValueError):
    """A target name that is not in kernels.REGISTRY."""

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        self.name = name
        self.known = known
        super().__init__(
            f"unknown target {name!r}: expected one of {', '.join(known)}. "
            f"Fix: pass --target {known[0]} (or another listed target)"
        )


class UnknownBackend(ValueError):
    """A backend name the target does not offer on this device."""

    def __init__(self, target: str, backend: str, known: tuple[str, ...], device: str) -> None:
        self.target = target
        self.backend = backend
        self.known = known
        self.device = device
        super().__init__(
            f"target {target!r} has no backend {backend!r} on {device}: expected one of "
            f"{', '.join(known)}. Fix: pick a listed backend"
        )


class KernelUnavailable(RuntimeError):
    """The library cannot be imported or used on this machine (not installed, no device)."""

    def __init__(self, target: str, reason: str) -> None:
        self.target = target
        self.reason = reason
        super().__init__(
            f"target {target!r} is unavailable here: {reason}. Fix: run it where the library "
            f"and its device are (see docs/), or pass --target torch"
        )


class LibraryRefused(RuntimeError):
    """The library declined a configuration it was asked for, with its own message.

    Raised when a forced backend answers a real call with its documented refusal (torch SDPA:
    "No available kernel", "No viable backend"). A refusal is counted apart from a failure and
    never turned into a pass; `message` is the library's text, verbatim.
    """

    def __init__(self, target: str, backend: str, case_id: str, message: str) -> None:
        self.target = target
        self.backend = backend
        self.case_id = case_id
        self.message = message
        super().__init__(
            f"{target} backend {backend!r} refused case {case_id}: {message!r}. "
            f"Fix: none needed in the harness (it is counted as a refusal); if the "
            f"refusal is predictable, teach the adapter's supports() to decline it"
        )


class UnsupportedCase(ValueError):
    """plan() or run() was handed a case that supports() declines; `reason` is that decision."""

    def __init__(self, target: str, backend: str, case_id: str, reason: str) -> None:
        self.target = target
        self.backend = backend
        self.case_id = case_id
        self.reason = reason
        super().__init__(
            f"{target} backend {backend!r} does not support case {case_id}: {reason.rstrip('.')}. "
            f"Fix: ask supports(case) first and skip the case when it declines"
        )
