"""Distinct defects of an exploration: what makes two failures "the same defect", and the book of them.

A `Signature` is what a kernel engineer would call one defect, its `key`: the wrapper API and mode,
the backend asked for, the invariant that failed first and how (the exception's type and message with
numbers blanked; which of output and LSE is off; the routing verdict with its backends; which of
output, backend and reason differ from a fresh wrapper), and its scope: "history" where a fresh
wrapper given the same plan disagrees (or a re-plan raised), "case" where the case alone shows it.
Each key raises its own ScenarioFailure class, so Hypothesis shrinks and reports every key apart and
never slips from one defect to another while shrinking. The shrunk failure's plan features (and the
previous plan's) are kept for the reader, not for matching: a shrunk example keeps incidental ones.

A `DefectBook` holds what a subject found so far. A later violation with a known key is that defect
met again: the machine logs `known: <id>`, resets that wrapper and goes on.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from scenarios.case import Case

# Blanked in a violation's text: addresses, then every number (shapes, lengths, errors, bounds).
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")  # not inside a name: fa2
KIND_CHARS = 160


_FRESH_ANSWER = re.compile(r"""a fresh adapter's( in a pristine process)? (None|'[^']*'|"[^"]*")""")


def blank_numbers(text: str) -> str:
    """`text` with addresses and numbers replaced by `#`, whitespace folded, cut at KIND_CHARS."""
    text = _NUMBER.sub("#", _ADDRESS.sub("#", text))
    return " ".join(text.split())[:KIND_CHARS]


def case_features(case: Case) -> frozenset[str]:
    """The features of a plan a defect may need: what the strategies draw apart from lengths and values."""
    f = set()
    if case.batch_size == 0:
        f.add("empty batch")
    elif case.total_qo == 0:
        f.add("no query rows")
    elif any(k == 0 for k in case.kv_lens):
        f.add("a request without keys")
    if case.mask != "none":
        f.add(f"mask {case.mask}")
    if case.causal:
        f.add("causal")
    if case.window_left >= 0:
        f.add("window")
    if case.logits_soft_cap > 0:
        f.add("soft cap")
    if case.sm_scale is not None:
        f.add("sm_scale")
    if case.kv_layout != "NHD":
        f.add(case.kv_layout)
    if case.head_dim_qk != case.head_dim_vo:
        f.add("unequal head dims")
    if case.num_qo_heads != case.num_kv_heads:
        f.add("GQA")
    if case.q_dtype != case.kv_dtype:
        f.add(f"{case.q_dtype} over {case.kv_dtype}")
    return frozenset(f)


def kind_of(invariant: str, detail: str) -> str:
    """How `invariant` failed, as far as it tells defects apart: for the oracle, which quantities are off
    ("out", "lse", "out+lse"); for the fresh control, what the long-lived wrapper said, not what the fresh one
    answered (that follows the case: a stale mask flag reads 'custom mask' where a fresh wrapper gives each
    case's own reason, one defect); otherwise the detail with numbers blanked."""
    if invariant == "output_matches_oracle":
        off = [q for q in ("out", "lse") if re.search(rf"(^|; ){q}: ", detail)]
        if off:
            return "+".join(off)
    if invariant == "history_independent":
        detail = _FRESH_ANSWER.sub(r"a fresh adapter's\1 other", detail)
    return blank_numbers(detail)


@dataclass(frozen=True)
class Signature:
    api: str
    mode: str  # "eager" | "graph"
    backend: str  # the backend asked for
    invariant: str
    kind: str  # how it failed (kind_of)
    scope: str  # "history": a fresh wrapper disagrees, or a re-plan raised; "case": the case alone shows it
    features: frozenset[str] = frozenset()  # the failing plan's; "before: X" for the previous plan's; "re-plan"

    @property
    def key(self) -> tuple[str, str, str, str, str, str]:
        return (self.api, self.mode, self.backend, self.invariant, self.kind, self.scope)

    @property
    def id(self) -> str:
        """A short stable name: api-mode-backend-invariant and a hash of the key."""
        digest = hashlib.sha256(repr(self.key).encode()).hexdigest()[:8]
        return f"{self.api}-{self.mode}-{self.backend}-{self.invariant}-{digest}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "api": self.api,
            "mode": self.mode,
            "backend": self.backend,
            "invariant": self.invariant,
            "kind": self.kind,
            "scope": self.scope,
            "features": sorted(self.features),
        }


def signature_of(
    case: Case,
    backend: str,
    graph: bool,
    plans: Sequence[Case],
    invariant: str,
    detail: str,
    invariants: Sequence[str] = (),
) -> Signature:
    """The signature of a violation of `invariant` (its `detail`; `invariants`: every one violated) at a
    call on `case`, where `plans` are the wrapper's plans so far, this one last."""
    features = set(case_features(case))
    earlier = list(plans[:-1]) if plans and plans[-1] == case else list(plans)
    if earlier:
        features.add("re-plan")
        features |= {f"before: {x}" for x in case_features(earlier[-1])}
    raised_on_replan = invariant == "no_unexpected_error" and bool(earlier)
    scope = "history" if "history_independent" in invariants or raised_on_replan else "case"
    return Signature(
        case.layout,
        "graph" if graph else "eager",
        backend,
        invariant,
        kind_of(invariant, detail),
        scope,
        frozenset(features),
    )


@dataclass
class Found:
    """A distinct defect of a subject: its signature, the recorded failure, how often and how soon met."""

    signature: Signature
    failure: dict[str, Any]
    round: int
    seconds: float  # since the exploration began, when it was first reported
    hits: int = 0  # later examples that met it and went on (logged as known)

    def to_json(self) -> dict[str, Any]:
        return {
            "signature": self.signature.to_json(),
            "round": self.round,
            "first_seconds": round(self.seconds, 2),
            "hits": self.hits,
            **self.failure,
        }


@dataclass
class DefectBook:
    """The defects a subject found so far, and the ledger's lifecycle entries its machines met."""

    found: list[Found] = field(default_factory=list)
    ledger_hits: dict[str, int] = field(default_factory=dict)  # sequence-level ledger entries met, by id

    def match(self, sig: Signature) -> Optional[Found]:
        return next((f for f in self.found if f.signature.key == sig.key), None)

    def add(self, found: Found) -> bool:
        """Record a shrunk failure; False (counted as a hit) where its key is already known."""
        again = self.match(found.signature)
        if again is not None:
            again.hits += 1
            return False
        self.found.append(found)
        return True


_FAILURE_CLASSES: dict[tuple[str, ...], type] = {}


def failure_class(base: type, key: tuple[str, ...]) -> type:
    """One subclass of `base` per signature key: Hypothesis tells failures apart by exception class."""
    if key not in _FAILURE_CLASSES:
        _FAILURE_CLASSES[key] = type(f"{base.__name__}_{len(_FAILURE_CLASSES)}", (base,), {"signature_key": key})
    return _FAILURE_CLASSES[key]
