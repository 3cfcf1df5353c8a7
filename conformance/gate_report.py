"""What a gate run did, per test and in sum: the terminal summary and the JSON sidecar of the JUnit XML.

Pure: the plugin (conformance/gate_plugin.py) feeds it each report's fields; nothing here needs a
pytest session. A test's outcome folds its phases (setup, call, teardown) into one word, as JUnit
does: passed, failed, error (setup or teardown failed), skipped, xfailed, xpassed. Skips are
grouped by reason constant (the text before ': ', kernels/skips.py) and split into decisions
(an adapter declined the case, the ledger held it back) and everything else.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from conformance import known_failures
from conformance.known_failures import NOT_FILED
from kernels import skips

SIDECAR_SCHEMA = 1


@dataclass
class TestOutcome:
    nodeid: str
    outcome: str = "passed"
    markers: list[str] = field(default_factory=list)
    reason: str = ""  # skip reason, xfail reason, or the first line of a failure
    decision: bool = False  # a skip that is a decision about the case
    required_failure: bool = False  # a skip that --require turned into a failure
    known: Optional[str] = None  # ledger entry behind an expected failure or an unexpected pass
    unexpected_pass: bool = False
    crash: bool = False
    record_status: Optional[str] = None
    duration_s: float = 0.0


def reason_constant(reason: str) -> str:
    """A skip reason's group: the parity grid's "skip: "/"refused: " prefix dropped, then the constant."""
    for prefix in ("skip: ", "refused: "):
        if reason.startswith(prefix):
            reason = reason[len(prefix) :]
    return skips.constant_of(reason)


def absorb(
    outcomes: dict[str, TestOutcome],
    nodeid: str,
    when: str,
    outcome: str,
    wasxfail: Optional[str],
    text: str,
    info: dict[str, Any],
    duration: float,
) -> None:
    """Fold one phase's report into the test's outcome."""
    t = outcomes.setdefault(nodeid, TestOutcome(nodeid))
    t.duration_s += duration
    t.markers = sorted(set(t.markers) | set(info.get("markers", [])))
    for k in ("known", "crash", "unexpected_pass", "record_status", "decision", "required_failure"):
        if info.get(k) is not None:
            setattr(t, k, info[k])
    if t.outcome in ("failed", "error"):
        return
    first = text.strip().splitlines()[0][:500] if text.strip() else ""
    if info.get("required_failure"):  # a skip --require turned into a failure: grouped by the skip's reason
        t.outcome, t.reason = "failed", info.get("skip_reason", first)
    elif outcome == "failed":
        t.outcome, t.reason = ("failed" if when == "call" else "error"), first
    elif outcome == "skipped":
        t.outcome, t.reason = ("xfailed", wasxfail or "") if wasxfail is not None else ("skipped", text)
    elif when == "call" and wasxfail is not None:
        t.outcome, t.reason = "xpassed", wasxfail


def totals(outcomes: dict[str, TestOutcome]) -> dict[str, int]:
    return dict(Counter(t.outcome for t in outcomes.values()))


def skips_by_reason(outcomes: dict[str, TestOutcome]) -> list[tuple[str, str, int]]:
    """(reason, kind, count): kind "decision", "hardware" (a required skip that failed), or "skip"."""
    c: Counter[tuple[str, str]] = Counter()
    for t in outcomes.values():
        if t.outcome == "skipped" or t.required_failure:
            kind = "decision" if t.decision else ("required: failed" if t.required_failure else "skip")
            c[(reason_constant(t.reason), kind)] += 1
    return [(r, k, n) for (r, k), n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]


def known_rows(outcomes: dict[str, TestOutcome]) -> list[dict[str, Any]]:
    """Per ledger entry seen: expected failures, unexpected passes, not-launched, and its issue (or none)."""
    entries = known_failures.entries_by_id()
    rows: dict[str, dict[str, Any]] = {}
    for t in outcomes.values():
        if not t.known:
            continue
        e = entries.get(t.known)
        row = rows.setdefault(
            t.known,
            {
                "id": t.known,
                "upstream": e.upstream if e else None,
                "status": e.status if e else None,
                "expected_failures": 0,
                "unexpected_passes": 0,
                "not_launched": 0,
            },
        )
        if t.unexpected_pass:
            row["unexpected_passes"] += 1
        elif t.outcome == "xfailed":
            row["expected_failures"] += 1
        elif t.outcome == "skipped":
            row["not_launched"] += 1
    return [rows[k] for k in sorted(rows)]


def summary_lines(
    outcomes: dict[str, TestOutcome], required: list[str], met: list[str], arch: str, unused_required: list[str]
) -> list[str]:
    lines = [f"runner {arch}: markers met {', '.join(met) or 'none'}; required {', '.join(required) or 'none'}"]
    sk = skips_by_reason(outcomes)
    if sk:
        lines.append("skips by reason:")
        lines += [f"  {n:5d}  {reason}  [{kind}]" for reason, kind, n in sk]
    for row in known_rows(outcomes):
        issue = row["upstream"] or f"{NOT_FILED}: file it and add the URL to the ledger"
        lines.append(
            f"known failure {row['id']}: {row['expected_failures']} expected, {row['unexpected_passes']} "
            f"unexpected pass(es), {row['not_launched']} not launched; {issue}"
        )
    crashes = [t for t in outcomes.values() if t.crash]
    for t in crashes:
        lines.append(f"CRASH {t.nodeid}: {t.reason}")
    for m in unused_required:
        lines.append(f"--require {m}: no collected test needs {m}, so this run proves nothing about it (a failure)")
    return lines


def sidecar(
    outcomes: dict[str, TestOutcome],
    *,
    required: list[str],
    met: list[str],
    arch: str,
    pinning: dict[str, str],
    unused_required: list[str],
    exitstatus: int,
    junitxml: Optional[str],
    harness_version: str,
) -> dict[str, Any]:
    """The JSON written beside the JUnit XML: what JUnit cannot say (markers, ledger, crashes, reasons)."""
    return {
        "schema": SIDECAR_SCHEMA,
        "kind": "gate",
        "harness_version": harness_version,
        "arch": arch,
        "markers_met": met,
        "required": required,
        "unused_required": unused_required,
        "pinning": pinning,
        "junitxml": junitxml,
        "exitstatus": exitstatus,
        "totals": totals(outcomes),
        "skips_by_reason": [{"reason": r, "kind": k, "count": n} for r, k, n in skips_by_reason(outcomes)],
        "known_failures": known_rows(outcomes),
        "crashes": [t.nodeid for t in outcomes.values() if t.crash],
        "tests": [asdict(t) for t in outcomes.values()],
    }
