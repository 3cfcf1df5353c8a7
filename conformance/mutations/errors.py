"""Errors of the mutation runner; each carries its facts as attributes."""

from __future__ import annotations


class StaleMutant(ValueError):
    """A mutant's `old` text does not occur exactly once in its file, so it cannot be applied."""

    def __init__(self, mutant: str, path: str, occurrences: int) -> None:
        self.mutant = mutant
        self.path = path
        self.occurrences = occurrences
        self.fix = (
            "update the mutant's `old` to the file's current text"
            if occurrences == 0
            else "extend `old` with surrounding lines until it is unique"
        )
        super().__init__(
            f"mutant {mutant!r}: its `old` text occurs {occurrences} times in {path}, "
            f"expected exactly once. Fix: {self.fix}"
        )


class InvalidMutant(ValueError):
    """A catalogue entry is malformed (a field that no run could honour)."""

    def __init__(self, mutant: str, field: str, value: object, expected: str) -> None:
        self.mutant = mutant
        self.field = field
        self.value = value
        self.expected = expected
        super().__init__(f"mutant {mutant!r}: {field}={value!r} is invalid: expected {expected}")
