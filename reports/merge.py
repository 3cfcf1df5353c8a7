"""Results of several files and runners read as one list of runs.

A path is a results file (`*.jsonl`) or a directory, which stands for every `*.jsonl` directly in
it (results.jsonl, timing.jsonl, the per-worker results-gw0.jsonl of a pytest gate run, ...).
Records keep their run_id, and each run its header (target, device, arch, versions), so records
of different runners never mix: reports group by the run's architecture. The same run read
twice is refused rather than counted twice.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field
from typing import Optional

from reports.records import (
    SCHEMA_VERSION,
    IncompatibleRecord,
    ParityRecord,
    Record,
    RunFooter,
    RunHeader,
    StageRecord,
    TimingRecord,
    read_jsonl,
)
from scenarios.errors import InvalidValue


class ResultsError(InvalidValue):
    """A results path that cannot be read as attncheck records."""


@dataclass
class Run:
    header: Optional[RunHeader]
    parity: list[ParityRecord] = field(default_factory=list)
    timing: list[TimingRecord] = field(default_factory=list)
    stages: list[StageRecord] = field(default_factory=list)
    footer: Optional[RunFooter] = None
    path: str = ""

    @property
    def run_id(self) -> str:
        return self.header.run_id if self.header else "?"

    @property
    def unfinished(self) -> bool:
        """A run that began (its header) and never wrote its end record: interrupted, killed or still going."""
        return self.header is not None and self.footer is None

    @property
    def arch(self) -> str:
        """The header's architecture; older files, written before the stamp, read 'unknown'."""
        return (self.header.arch if self.header else None) or "unknown"


def result_files(path: str) -> list[str]:
    if os.path.isdir(path):
        files = sorted(glob.glob(os.path.join(path, "*.jsonl")))
        if not files:
            raise ResultsError(
                "RESULTS",
                path,
                "a directory holding results (*.jsonl)",
                "pass the --out directory of attncheck run/record/sweep, or a results file",
            )
        return files
    if not os.path.isfile(path):
        raise ResultsError("RESULTS", path, "an existing results file or directory", "check the path")
    return [path]


def read_records(path: str) -> list[Record]:
    """One file's records; a file that is not attncheck records is one line naming it and the fix."""
    try:
        return read_jsonl(path)
    except OSError as e:
        raise ResultsError("RESULTS", path, "a readable file", f"check the path ({e.strerror})") from None
    except IncompatibleRecord as e:
        raise ResultsError(
            "RESULTS",
            f"{path}:{e.line_no}",
            f"records of schema version {SCHEMA_VERSION}, not {e.got!r}",
            "re-record with this attncheck version, or read it with the version that wrote it",
        ) from None
    except (json.JSONDecodeError, TypeError, UnicodeDecodeError) as e:
        raise ResultsError(
            "RESULTS",
            path,
            "attncheck records, one JSON object per line",
            f"pass a file attncheck wrote ({type(e).__name__})",
        ) from None


def load_runs(paths: list[str]) -> list[Run]:
    """Every run in `paths`, in the order read; records before any header form a run of their own."""
    runs: dict[str, Run] = {}
    for p in paths:
        for f in result_files(p):
            current: dict[str, Run] = {}
            for rec in read_records(f):
                rid = rec.run_id
                if isinstance(rec, RunHeader):
                    if rid in runs:
                        raise ResultsError(
                            "RESULTS",
                            f,
                            f"each run once (run {rid} is also in {runs[rid].path})",
                            "pass each results file (or directory) once",
                        )
                    current[rid] = runs[rid] = Run(rec, path=f)
                    continue
                run = current.get(rid) or runs.setdefault(rid, Run(None, path=f))
                if isinstance(rec, ParityRecord):
                    run.parity.append(rec)
                elif isinstance(rec, TimingRecord):
                    run.timing.append(rec)
                elif isinstance(rec, StageRecord):
                    run.stages.append(rec)
                elif isinstance(rec, RunFooter):
                    run.footer = rec
    return list(runs.values())


def records_of(runs: list[Run]) -> list[Record]:
    """The runs' records as one flat list (header first in each run), for renderers that take records."""
    out: list[Record] = []
    for r in runs:
        out += [r.header] if r.header else []
        out += [*r.stages, *r.parity, *r.timing]
        out += [r.footer] if r.footer else []
    return out
