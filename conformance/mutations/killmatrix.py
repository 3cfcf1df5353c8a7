"""The kill matrix: tests x mutants, each mutant's verdict, and the two ways a run fails.

A run fails (exit 1) when a mutant is not killed (it survived, was killed only by tests its
catalogue entry does not name, or its run was broken) or when a test kills no mutant. Records
are plain dicts so that mutants.jsonl, kill-matrix.json and kill-matrix.md carry the same facts.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from conformance.mutations.kinds import named

Status = Literal["killed", "survived", "misnamed", "broken", "skipped"]
KILLING_OUTCOMES = ("failed", "error")
JSONL, JSON, MARKDOWN = "mutants.jsonl", "kill-matrix.json", "kill-matrix.md"


@dataclass
class MutantResult:
    """One mutant's run: the tests selected for it, which of them failed, and the verdict."""

    name: str
    kind: str
    status: Status
    kills: list[str]
    selected: list[str] = field(default_factory=list)
    killed_by: list[str] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)  # outcome -> count over the selected tests
    duration_s: float = 0.0
    cpu_s: Optional[float] = None
    detail: str = ""
    cached: bool = False  # its verdict came from the verdict file (its key matched); nothing ran
    pass_tests: list[str] = field(default_factory=list)  # the tests of the run that decided the status
    ran: list[str] = field(default_factory=list)  # those of them that ran (with -x: none after the first failure)

    def to_json(self) -> dict[str, Any]:
        return {"record": "mutant", **asdict(self)}


def classify(kills: list[str], selected: list[str], outcomes: dict[str, str]) -> tuple[Status, list[str], str]:
    """Verdict from the selected tests' outcomes: killed needs one of the named tests among the killers."""
    killers = [t for t in selected if outcomes.get(t) in KILLING_OUTCOMES]
    if not killers:
        missing = [t for t in selected if t not in outcomes]
        if missing:
            return "broken", [], f"{len(missing)} selected test(s) did not run, e.g. {missing[0]}"
        return "survived", [], f"all {len(selected)} selected tests passed or skipped under the mutant"
    if any(named(t, tuple(kills)) for t in killers):
        return "killed", killers, ""
    return "misnamed", killers, f"killed only by tests its entry does not name, e.g. {killers[0]}; name one in kills"


def outcome_counts(selected: list[str], outcomes: dict[str, str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in selected:
        o = outcomes.get(t, "not-run")
        counts[o] = counts.get(o, 0) + 1
    return counts


@dataclass
class KillMatrix:
    target: str
    device: str
    budget: str
    isolation: str
    selection: str
    rows: list[str]
    mutants: list[MutantResult]
    control: dict[str, Any]
    timing: dict[str, Optional[float]]
    interrupted: bool = False
    subset: bool = False  # --only: a test may be killed by a mutant not run, so rows are not checked
    strategy: str = "complete"  # or "first-kill": a blank cell was not measured

    def runnable(self) -> list[MutantResult]:
        return [m for m in self.mutants if m.status != "skipped"]

    def cells(self) -> dict[str, list[str]]:
        """test -> the mutants it killed (every row present, possibly with none)."""
        out: dict[str, list[str]] = {r: [] for r in self.rows}
        for m in self.runnable():
            for t in m.killed_by:
                out.setdefault(t, []).append(m.name)
        return out

    def not_killed(self) -> list[MutantResult]:
        return [m for m in self.runnable() if m.status != "killed"]

    def rows_killing_nothing(self) -> list[str]:
        if self.subset:
            return []
        here = set(self.skipped_here())
        return [r for r, ms in self.cells().items() if not ms and r in self.rows and r not in here]

    def skipped_here(self) -> list[str]:
        """Tests the control run skipped on this machine (no hardware, no reference document): a
        skipped test can kill nothing here, so it is listed as unproven here, not as a failure."""
        return list(self.control.get("skipped_tests", []))

    @property
    def ok(self) -> bool:
        return (
            self.control.get("passed", False)
            and not self.interrupted
            and not self.not_killed()
            and not self.rows_killing_nothing()
        )

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, dict[str, int]] = {}
        for m in self.mutants:
            counts.setdefault(m.kind, {}).setdefault(m.status, 0)
            counts[m.kind][m.status] += 1
        return {
            "target": self.target,
            "device": self.device,
            "budget": self.budget,
            "isolation": self.isolation,
            "selection": self.selection,
            "strategy": self.strategy,
            "ok": self.ok,
            "interrupted": self.interrupted,
            "subset": self.subset,
            "cached": sum(m.cached for m in self.mutants),
            "counts_by_kind": counts,
            "control": self.control,
            "timing": self.timing,
            "not_killed": [m.name for m in self.not_killed()],
            "rows_killing_nothing": self.rows_killing_nothing(),
            "rows": self.rows,
            "mutants": [m.to_json() for m in self.mutants],
            "matrix": self.cells(),
        }

    def write(self, out_dir: Path) -> None:
        (out_dir / JSON).write_text(json.dumps(self.to_json(), indent=1), encoding="utf-8")
        (out_dir / MARKDOWN).write_text(render_markdown(self), encoding="utf-8")


def _short(test: str) -> str:
    return test.split("::", 1)[1] if "::" in test else test


def render_markdown(km: KillMatrix) -> str:
    t = km.timing
    lines = [f"# Kill matrix: {km.target} on {km.device}, budget {km.budget}", ""]
    verdict = "every mutant killed, every test kills one" if km.ok else "NOT proven (see below)"
    lines += [
        f"{len(km.runnable())} mutants run, {len(km.mutants) - len(km.runnable())} skipped, "
        f"{len(km.rows)} tests: **{verdict}**.",
        "",
    ]
    lines += [
        f"isolation {km.isolation}, selection {km.selection}, cells {km.strategy}"
        + (" (a blank cell was not measured)" if km.strategy == "first-kill" else "")
        + "; control "
        f"{'passed' if km.control.get('passed') else 'FAILED'} in {km.control.get('duration_s', 0):.1f} s.",
        "",
    ]
    cached = [m for m in km.mutants if m.cached]
    if t.get("verdicts_s") is not None:
        lines.append(
            f"verdict cache: {len(cached)} of {len(km.runnable())} verdicts cached (their keys matched), "
            f"{'the control too' if km.control.get('cached') else 'the control ran'}; keys checked in "
            f"{t['verdicts_s']:.1f} s"
        )
    if t.get("selected_s") is not None:
        lines.append(
            f"coverage selection (coverage run + mutants): {t['selected_s']:.1f} s wall, "
            f"{t.get('selected_cpu_s') or 0:.1f} s CPU"
        )
    if t.get("whole_suite_s") is not None:
        lines.append(
            f"whole suite for every mutant: {t['whole_suite_s']:.1f} s wall "
            f"({t['whole_suite_s'] / max(t['selected_s'] or 1e-9, 1e-9):.1f}x), "
            f"{t.get('whole_suite_cpu_s') or 0:.1f} s CPU "
            f"({(t.get('whole_suite_cpu_s') or 0) / max(t.get('selected_cpu_s') or 1e-9, 1e-9):.1f}x)"
        )
    lines += [
        "",
        "## Mutants",
        "",
        "| mutant | kind | status | tests run | killed by | secs |",
        "|---|---|---|---|---|---|",
    ]
    for m in km.mutants:
        by = ", ".join(f"`{_short(k)}`" for k in m.killed_by[:3]) + (
            f" (+{len(m.killed_by) - 3})" if len(m.killed_by) > 3 else ""
        )
        lines.append(
            f"| `{m.name}` | {m.kind} | {m.status}{' (cached)' if m.cached else ''} | "
            f"{'-' if m.cached else len(m.selected)} | {by or m.detail[:120]} "
            f"| {m.duration_s:.1f} |"
        )
    nothing = km.rows_killing_nothing()
    if km.subset:
        lines += ["", "(--only: a subset of the catalogue ran, so tests killing nothing are not checked)"]
    if nothing:
        lines += ["", "## Tests that kill no mutant", ""] + [f"- `{r}`" for r in nothing]
    if km.skipped_here():
        lines += ["", "## Tests skipped here (not proven on this machine)", ""] + [
            f"- `{r}`" for r in km.skipped_here()
        ]
    lines += ["", "## Tests x mutants", "", "| test | mutants it kills |", "|---|---|"]
    for r, ms in km.cells().items():
        lines.append(f"| `{r}` | {', '.join(ms) if ms else '**none**'} |")
    return "\n".join(lines) + "\n"
