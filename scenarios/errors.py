"""Errors raised when a description of a batch cannot be honoured.

Every error carries its facts as attributes (field, value, expected, fix) so tests compare
fields, not text, and the CLI can turn any of them into one clear line and exit status 2.
"""

from __future__ import annotations

from typing import Any


class InvalidValue(ValueError):
    """A user-supplied value (an option, a field) that cannot be honoured."""

    def __init__(self, field: str, value: Any, expected: str, fix: str, prefix: str = "") -> None:
        self.field = field
        self.value = value
        self.expected = expected
        self.fix = fix
        super().__init__(f"{prefix}{field}={value!r} is invalid: expected {expected}. Fix: {fix}")


class InvalidCase(InvalidValue):
    """A Case field holds a value no library could be asked to run."""

    def __init__(self, field: str, value: Any, expected: str, fix: str) -> None:
        super().__init__(field, value, expected, fix, prefix="Case.")


class InvalidInputs(ValueError):
    """Materialised tensors (a page table, a mask) contradict their Case.

    `expected` is text, or an object whose str() reads as the expected value (a torch.dtype).
    """

    def __init__(self, what: str, value: Any, expected: object, fix: str) -> None:
        self.what = what
        self.value = value
        self.expected = expected
        self.fix = fix
        super().__init__(f"{what}={value!r} is invalid: expected {expected}. Fix: {fix}")
