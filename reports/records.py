"""The records a run writes, one JSON object per line, and nothing that needs a GPU to read.

Every line carries `schema` and `kind`. A run file starts with one RunHeader, then one
ParityRecord per (case, backend) in the order they were produced (a StageRecord before each stage
of a staged target); a RunFooter closes a run that
finished (its absence means the run was interrupted, and what was written still counts).
A timing sweep's file holds TimingRecords in place of ParityRecords.

Fields added within a schema version have defaults (RunHeader.arch, the timing kind), so files
written before them still read.
"""

from __future__ import annotations

import json
import lzma
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Optional

SCHEMA_VERSION = 1

Status = Literal["pass", "fail", "skip", "refused", "error"]
STATUSES: tuple[str, ...] = ("pass", "fail", "skip", "refused", "error")
# Statuses that make a run exit 1.
FAILING: frozenset[str] = frozenset({"fail", "error"})
# The reason of an error record whose evaluating process died (conformance/isolate.py).
CRASHED = "crashed, the process evaluating this case died"


class IncompatibleRecord(ValueError):
    """A line written by another schema version, or not a record at all."""

    def __init__(self, path: str, line_no: int, got: Any) -> None:
        self.path = path
        self.line_no = line_no
        self.got = got
        super().__init__(
            f"{path}:{line_no}: schema {got!r} is not {SCHEMA_VERSION}. "
            f"Fix: re-run with this attncheck version, or read it with the version that wrote it"
        )


@dataclass
class RunHeader:
    run_id: str
    target: str
    device: str
    budget: str
    seed: int
    versions: dict[str, str]
    argv: list[str]
    started: str
    harness_version: str
    standin: Optional[str] = None  # a CPU stand-in ran in place of the library (kernels/standins/): not conformance
    arch: Optional[str] = None  # sm90, gfx942, cpu-x86_64 (conformance/markers.py); None in older files
    schema: int = SCHEMA_VERSION
    kind: str = "run"


@dataclass(frozen=True)
class ParityRecord:
    run_id: str
    target: str
    backend: str
    device: str
    case_id: str
    case: dict[str, Any]
    seed: int
    status: str
    reason: str = ""  # skip/refusal reason, or the error text
    resolved_backend: Optional[str] = None
    fallback_reason: Optional[str] = None
    out: Optional[dict[str, Any]] = None  # Comparison.to_json()
    lse: Optional[dict[str, Any]] = None
    lse_provided: bool = False
    plan_s: float = 0.0
    run_s: float = 0.0
    compile_s: float = 0.0  # first use of a JIT-compiled variant (included in plan_s + run_s)
    features: list[str] = field(default_factory=list)
    standin: Optional[str] = None  # measured on a stand-in of the library: never a conformance result
    known: Optional[str] = None  # id of the known-failure ledger entry that explains a failing record
    # A failing record's case again on a FRESH adapter (parity_run.fresh_control): "pass" means the
    # failure depends on the long-lived adapter's earlier plans (a lifecycle defect), not on the case.
    fresh: Optional[str] = None
    # The library wrapper that served the plan, as the adapter names it (unique within a run and backend;
    # a new name when the adapter replaced the wrapper): a record's place in its wrapper's plan history.
    wrapper: Optional[str] = None
    schema: int = SCHEMA_VERSION
    kind: str = "parity"

    @property
    def worst_ratio(self) -> Optional[float]:
        """Largest error/bound over out and LSE; None when nothing was compared."""
        ratios = []
        for cmp in (self.out, self.lse):
            if cmp is None:
                continue
            if cmp["nan_count"] or cmp["unwritten_count"] or cmp["inf_mismatch_count"]:
                return float("inf")
            b = float(cmp["bound"])
            ratios.append(float(cmp["max_abs"]) / b if b > 0 else float("inf"))
        return max(ratios) if ratios else None


@dataclass
class StageRecord:
    """A stage of the run starts (kernels.protocol.Stage): its backends and what its prepare did.

    For FlashInfer `prepare` is the parallel JIT prebuild: modules requested, seconds, error.
    `waited_s` is how long the runner waited for it after the previous stage's last case (the
    prebuild runs in the background while the previous stage runs).
    """

    run_id: str
    stage: str
    backends: list[str]
    prepare: Optional[dict[str, Any]] = None
    waited_s: float = 0.0
    schema: int = SCHEMA_VERSION
    kind: str = "stage"


@dataclass
class RunFooter:
    run_id: str
    counts: dict[str, int]
    elapsed_s: float
    exit_status: int
    schema: int = SCHEMA_VERSION
    kind: str = "end"


@dataclass
class TimingRecord:
    """One configuration of a timing sweep (conformance/sweep.py): seconds per repetition, per backend.

    Repetition i of every backend ran back to back, in an order that alternates between
    repetitions, so samples[a][i] and samples[b][i] form a pair. `timer` is "cuda-events" or
    "wall"; `cold_l2` says whether L2 was flushed before each timed call. A backend that declined
    the configuration has no samples, and `reason` says why (status "skip"); "error" when one raised.
    """

    run_id: str
    target: str
    device: str
    arch: str
    config_id: str  # layout/bsB/kvK/qQ: the row (batch, kv_len) and column (q_len) of an A/B table
    layout: str
    batch: int
    kv_len: int
    q_len: int
    case: dict[str, Any]
    backends: list[str]  # the backends compared, A first
    samples: dict[str, list[float]]
    status: str = "ok"
    reason: str = ""
    timer: str = "wall"
    cold_l2: bool = False
    warmup: int = 0
    schema: int = SCHEMA_VERSION
    kind: str = "timing"


def versions_text(versions: dict[str, Optional[str]]) -> str:
    """A run's stamp as one line, "name version, ...": what is absent here ("none": no HIP on a CUDA
    runner) is left out rather than printed as if it were a version."""
    return ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if v not in (None, "none"))


def count_key(rec: ParityRecord) -> str:
    """The footer's count key: the status, prefixed "stand-in " when a stand-in produced it."""
    return rec.status if rec.standin is None else f"stand-in {rec.status}"


Record = RunHeader | ParityRecord | StageRecord | RunFooter | TimingRecord
_KINDS = {"run": RunHeader, "parity": ParityRecord, "stage": StageRecord, "end": RunFooter, "timing": TimingRecord}


def to_line(rec: Record) -> str:
    return json.dumps(asdict(rec), sort_keys=True, allow_nan=True)


def from_obj(obj: dict[str, Any], path: str = "<memory>", line_no: int = 0) -> Record:
    if not isinstance(obj, dict) or obj.get("schema") != SCHEMA_VERSION or obj.get("kind") not in _KINDS:
        raise IncompatibleRecord(path, line_no, obj.get("schema") if isinstance(obj, dict) else obj)
    cls = _KINDS[obj["kind"]]
    return cls(**obj)  # type: ignore[no-any-return]


def read_jsonl(path: str) -> list[Record]:
    """All records of a results file (xz-compressed where its name ends in .xz, as kept evidence is); a
    truncated last line (a killed run) is ignored."""
    out: list[Record] = []
    with (lzma.open if path.endswith(".xz") else open)(path, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines) or (n == len(lines) - 1 and not lines[-1]):
                break  # the line being written when the run died
            raise
        out.append(from_obj(obj, path, n))
    return out


def is_crash(rec: ParityRecord) -> bool:
    """An error record whose process died: its reason's constant (before ': ') is CRASHED."""
    return rec.status == "error" and rec.reason.split(": ", 1)[0] == CRASHED
