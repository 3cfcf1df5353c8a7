"""Append records to a JSONL file as they are produced, so a crash keeps what was measured."""

from __future__ import annotations

import os
from typing import IO, Optional

from reports.records import Record, to_line


class JsonlSink:
    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._f: Optional[IO[str]] = open(path, "a", encoding="utf-8")

    def write(self, rec: Record) -> None:
        assert self._f is not None, "sink already closed"
        self._f.write(to_line(rec) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def __enter__(self) -> "JsonlSink":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
