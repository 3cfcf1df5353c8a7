"""Timing records -> A/B ratio tables in the seeds' layout, with intervals and a threshold.

One table per (arch, layout, A, B): rows `bsB/kvK`, columns `qN`, each cell the median of the
paired per-repetition ratios time(A)/time(B) with its bootstrap interval (reports/stats.py).

The threshold is routing/threshold.py's rule, applied twice:

* recommended: on the table in which a cell whose interval contains 1 is read as a tie (1.0).
  The threshold tool stops at a tie, so the gate never extends over a column where the
  measurement cannot tell the backends apart;
* point: on the point estimates alone, shown beside it so a difference is visible.

Costs at the recommended q* and each row's crossover come from the point estimates
(`costs_at`, `row_crossovers`). Nothing here measures; it reads records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from reports.records import Record, TimingRecord
from reports.stats import LEVEL, RatioCI, paired_ratio
from routing.threshold import ABTable, Row, RowCrossover, ThresholdResult, costs_at, derive, row_crossovers
from scenarios.errors import InvalidValue

TableKey = tuple[str, str, str, str]  # arch, layout, a, b


@dataclass(frozen=True)
class ABCells:
    """Measured cells of one A/B comparison: (batch, kv_len, q_len) -> interval."""

    arch: str
    layout: str
    a: str
    b: str
    cells: dict[tuple[int, int, int], RatioCI]
    unmeasured: dict[tuple[int, int, int], str]  # skipped or failed configurations, with why

    @property
    def rows(self) -> list[tuple[int, int]]:
        return sorted({(b, k) for b, k, _ in [*self.cells, *self.unmeasured]})

    @property
    def columns(self) -> list[int]:
        return sorted({q for _, _, q in [*self.cells, *self.unmeasured]})

    def table(self, significant_only: bool) -> ABTable:
        """The threshold tool's table: point ratios, or ties where the interval contains 1."""
        rows = []
        for bs, kv in self.rows:
            cells: list[Optional[float]] = []
            for q in self.columns:
                ci = self.cells.get((bs, kv, q))
                if ci is None or not math.isfinite(ci.ratio):
                    cells.append(None)
                else:
                    cells.append(ci.ratio if (ci.significant or not significant_only) else 1.0)
            rows.append(Row(bs, kv, tuple(cells)))
        return ABTable(
            self.arch, self.layout, self.a, self.b, tuple(self.columns), tuple(rows), note="measured by attncheck sweep"
        )


def pairs(records: Iterable[Record]) -> list[TableKey]:
    """Every (arch, layout, a, b) the timing records hold, A and B in the order they were named."""
    out: list[TableKey] = []
    for r in records:
        if isinstance(r, TimingRecord) and len(r.backends) == 2:
            key = (r.arch, r.layout, r.backends[0], r.backends[1])
            if key not in out:
                out.append(key)
    return out


def ab_cells(records: Iterable[Record], key: TableKey) -> ABCells:
    arch, layout, a, b = key
    cells: dict[tuple[int, int, int], RatioCI] = {}
    unmeasured: dict[tuple[int, int, int], str] = {}
    for r in records:
        if not isinstance(r, TimingRecord) or (r.arch, r.layout, *r.backends) != key:
            continue
        pos = (r.batch, r.kv_len, r.q_len)
        if r.status == "ok":
            cells[pos] = paired_ratio(r.samples[a], r.samples[b])
        else:
            unmeasured[pos] = f"{r.status}: {r.reason}"
    return ABCells(arch, layout, a, b, cells, unmeasured)


@dataclass(frozen=True)
class Recommendation:
    recommended: Optional[ThresholdResult]
    point: Optional[ThresholdResult]
    problem: str  # why no threshold could be derived ("" when one was)


def recommend(ab: ABCells) -> Recommendation:
    try:
        return Recommendation(derive(ab.table(significant_only=True)), derive(ab.table(significant_only=False)), "")
    except InvalidValue as e:  # no data, or a first column with a hole: said, never guessed
        return Recommendation(None, None, str(e))


def _cell(ci: Optional[RatioCI], why: Optional[str]) -> str:
    if ci is None:
        return "–" if why is None else "–†"
    mark = "" if ci.significant else "\\*"
    return f"{ci.ratio:.2f} [{ci.lo:.2f}, {ci.hi:.2f}]{mark}"


def _crossover(c: RowCrossover) -> str:
    lo = f"q{c.last_loss}" if c.last_loss is not None else "below the first column"
    hi = f"q{c.first_non_loss}" if c.first_non_loss is not None else "beyond the last column"
    return f"bs{c.batch}/kv{c.kv_len} in ({lo}, {hi}]"


def _q(v: Optional[int]) -> str:
    return "None (never gate)" if v is None else str(v)


def render_markdown(ab: ABCells) -> str:
    rec = recommend(ab)
    q_star = rec.recommended.threshold if rec.recommended else None
    head = [ab.arch] + [
        f"**q{q}** (q*)" if q == q_star else f"**q{q}**" if q_star is not None and q <= q_star else f"q{q}"
        for q in ab.columns
    ]
    lines = [
        f"### {ab.arch} {ab.layout}: time({ab.a}) / time({ab.b})",
        "",
        f"Median of paired per-repetition ratios [{LEVEL:.0%} bootstrap interval]; > 1: {ab.a} slower. "
        "`*`: the interval contains 1 (no measured difference), read as a tie by the recommendation; "
        "`–†`: not measured (skipped or failed).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for bs, kv in ab.rows:
        cells = [_cell(ab.cells.get((bs, kv, q)), ab.unmeasured.get((bs, kv, q))) for q in ab.columns]
        lines.append(f"| bs{bs}/kv{kv} | " + " | ".join(cells) + " |")
    lines.append("")
    if rec.recommended is None:
        lines.append(f"- No threshold: {rec.problem}")
        return "\n".join(lines) + "\n"
    r, p = rec.recommended, rec.point
    assert p is not None
    lines.append(
        f"- Recommended threshold: q* = {_q(r.threshold)}: routing row `{r.routing_row}` "
        f"(route q_len <= q* to {ab.b}). Why: {r.reason}."
    )
    if p.threshold != r.threshold:
        lines.append(f"- From point estimates alone q* would be {_q(p.threshold)}; the intervals do not support it.")
    costs = costs_at(ab.table(significant_only=False), r.threshold)
    worst, best = costs.worst_gated_ratio, costs.best_gated_ratio
    if worst is not None and best is not None:
        lines.append(
            f"- Gated cells: {ab.a} slower by {worst.ratio:.2f}x at worst ({worst.label}), {best.ratio:.2f}x at best."
        )
    if costs.next_column is not None and costs.next_column_best_for_A is not None:
        nb = costs.next_column_best_for_A
        lines.append(
            f"- Next column q{costs.next_column}: best for {ab.a} {nb.ratio:.2f} at {nb.label}"
            + (f" (gating it would cost {1 / nb.ratio:.2f}x there)" if nb.a_wins else "")
            + "."
        )
    lines.append(
        "- Crossover by row (where A stops losing): "
        + "; ".join(_crossover(c) for c in row_crossovers(ab.table(significant_only=True)))
        + "."
    )
    return "\n".join(lines) + "\n"


def _cell_json(ab: ABCells, pos: tuple[int, int, int]) -> Optional[dict[str, Any]]:
    if pos in ab.cells:
        return ab.cells[pos].to_json()
    return {"unmeasured": ab.unmeasured[pos]} if pos in ab.unmeasured else None


def to_json(ab: ABCells) -> dict[str, Any]:
    rec = recommend(ab)
    return {
        "arch": ab.arch,
        "layout": ab.layout,
        "a": ab.a,
        "b": ab.b,
        "columns": ab.columns,
        "rows": [
            {
                "label": f"bs{bs}/kv{kv}",
                "batch": bs,
                "kv_len": kv,
                "cells": [_cell_json(ab, (bs, kv, q)) for q in ab.columns],
            }
            for bs, kv in ab.rows
        ],
        "threshold": rec.recommended.threshold if rec.recommended else None,
        "threshold_reason": rec.recommended.reason if rec.recommended else rec.problem,
        "threshold_point": rec.point.threshold if rec.point else None,
        "derived": rec.recommended is not None,
        "crossovers": [
            {"row": f"bs{c.batch}/kv{c.kv_len}", "last_loss": c.last_loss, "first_non_loss": c.first_non_loss}
            for c in (row_crossovers(ab.table(significant_only=True)) if rec.recommended else ())
        ],
    }


def tables(records: list[Record]) -> list[ABCells]:
    """Every A/B comparison the records hold, in the order first seen."""
    return [ab_cells(records, k) for k in pairs(records)]


def render_all(records: list[Record]) -> str:
    """Every A/B table the records hold, as markdown ("" when there are none)."""
    return "\n".join(render_markdown(ab) for ab in tables(records))
