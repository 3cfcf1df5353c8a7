"""Compare what a library did with what its routing spec expects, both ways.

Separate from the spec (data) and the engine (`routing/spec.py`) so the verdict logic is one pure
module with no pytest and no library import; reports render the same records tests assert on.

* `check(expected, observed) -> RoutingVerdict`: equality on the backend and on the PARSED reason
  constant (`routing.reasons.parse_reason`); text never compared. `UNRECOGNISED` always fails;
  `NOT_REPORTED` (the library gives no reason) is its own status, never a pass of None, and
  passes only where the spec itself expects `NOT_REPORTED` (torch); a spec gap (`MISSING` table
  row) is its own status, never read as None, and its observation counts as unexplained.
* `coverage(spec, verdicts) -> Coverage`: which rows no passing observation reached (gaps in what
  was exercised) and which observed decisions no row of the spec explains (failures).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional, Sequence, cast

from kernels.protocol import NOT_REPORTED, Reason
from routing import reasons as R
from routing.per_request import rows_of
from routing.spec import ExpectedRoute, RoutingSpec

Status = Literal[
    "pass",
    "wrong_backend",
    "wrong_reason",
    "wrong_threshold",  # right reason kind, but the T it embeds is not the spec's
    "unrecognised_reason",
    "library_gives_no_reason",  # NOT_REPORTED where the spec expects a reason or None
    "expected_raise",  # the spec expects an exception, the plan routed (or raised another)
    "unexpected_raise",
    "spec_gap",  # the spec has no row for this arch: MISSING, never None
]


@dataclass(frozen=True)
class ObservedRoute:
    """What the library did on one plan: backend and reason text, or the exception type it raised."""

    backend: Optional[str]
    reason: Reason = NOT_REPORTED
    raised: Optional[str] = None  # exception class name, e.g. "ValueError"


@dataclass(frozen=True)
class RoutingVerdict:
    status: Status
    expected: ExpectedRoute
    observed: ObservedRoute
    parsed: R.Parsed
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def check(expected: ExpectedRoute, observed: ObservedRoute) -> RoutingVerdict:
    parsed = R.parse_reason(observed.reason) if observed.raised is None else None

    def v(status: Status, detail: str = "") -> RoutingVerdict:
        return RoutingVerdict(status, expected, observed, parsed, detail)

    if expected.gap is not None:
        return v("spec_gap", f"no row for arch {expected.gap.arch!r} in table {expected.gap.table!r}")
    if expected.raises is not None:
        if observed.raised == expected.raises:
            return v("pass")
        return v(
            "expected_raise",
            f"expected {expected.raises}, got {observed.raised or 'backend ' + repr(observed.backend)}",
        )
    if observed.raised is not None:
        return v("unexpected_raise", f"expected backend {expected.backend!r}, got {observed.raised}")
    if observed.backend != expected.backend:
        return v("wrong_backend", f"expected {expected.backend!r}, got {observed.backend!r}")
    if parsed is R.UNRECOGNISED:
        return v("unrecognised_reason", f"no single reasons constant matches {observed.reason!r}")
    if parsed is NOT_REPORTED and expected.reason is not NOT_REPORTED:
        return v("library_gives_no_reason", f"expected reason {expected.reason!r}; library gives none")
    if parsed != expected.reason:
        return v("wrong_reason", f"expected {expected.reason!r}, got {parsed!r}")
    if isinstance(parsed, R.ReasonCode) and parsed.threshold_re is not None and expected.threshold is not None:
        # parse_reason returns a ReasonCode only for a str reason.
        t = R.embedded_threshold(parsed, cast(str, observed.reason))
        if t != expected.threshold:
            return v("wrong_threshold", f"reason embeds T={t}, spec says {expected.threshold}")
    return v("pass")


@dataclass(frozen=True)
class Coverage:
    unreached: tuple[str, ...]  # rule names no passing verdict confirmed
    unexplained: tuple[RoutingVerdict, ...]  # observations no row's outcome matches
    failed: tuple[RoutingVerdict, ...]  # verdicts that did not pass (includes gaps)

    @property
    def complete(self) -> bool:
        """Every row observed and every observation explained and passing."""
        return not (self.unreached or self.unexplained or self.failed)


def _outcome_explained(spec: RoutingSpec, v: RoutingVerdict) -> bool:
    o = v.observed
    if v.parsed is R.UNRECOGNISED or v.expected.gap is not None:
        return False  # a gap explains nothing: no row was written for that query
    for r in spec.rules:
        if o.raised is not None:
            if r.expect_raises == o.raised:
                return True
        elif r.expect_backend == o.backend and (v.parsed is NOT_REPORTED or r.expect_reason == v.parsed):
            return True
    return False


def coverage(spec: RoutingSpec, verdicts: Sequence[RoutingVerdict]) -> Coverage:
    reached = {n for v in verdicts if v.passed for n in rows_of(v.expected)}  # a joined route reaches each row
    unreached = tuple(r.name for r in spec.rules if r.name not in reached)
    unexplained = tuple(v for v in verdicts if not v.passed and not _outcome_explained(spec, v))
    failed = tuple(v for v in verdicts if not v.passed)
    return Coverage(unreached, unexplained, failed)
