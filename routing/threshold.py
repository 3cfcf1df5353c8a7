"""A/B timing tables -> a short-query routing threshold, with what a wrong choice would cost.

A table compares backend A with backend B on one architecture: rows are shapes (batch, kv_len),
columns are query lengths, each cell ratio = time(A) / time(B), or None where nothing was measured.
The rule (the seeds' "16 is the last column where AITER loses in every cell"):

    q* = the largest measured query length such that A loses in every cell of every column
         <= q*; the gate then routes q_len <= q* to B.

`threshold=None` is a measured verdict ("never gate"); no data is an error, never None. What stops
the scan (a win, a tie, an observed win, a hole), Observations and the cost figures:
docs/threshold-tool.md, section "`routing/threshold.py`: the terms in brief".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Literal, Optional, Sequence, cast

from tabulate import tabulate

from scenarios.errors import InvalidValue

Stop = Literal["win", "tie", "observed_win", "hole", "end"]

# A tie (ratio exactly 1.0) is not a loss: it stops the threshold (docs/threshold-tool.md, "The rule").
TIE_IS_LOSS = False


class _PrefixedError(InvalidValue):
    """An InvalidValue whose message names the object it concerns (PREFIX)."""

    PREFIX = ""

    def __init__(self, field: str, value: object, expected: str, fix: str) -> None:
        super().__init__(field, value, expected, fix, prefix=self.PREFIX)


class InvalidTable(_PrefixedError):
    """An A/B table that is malformed (shape, order, values)."""

    PREFIX = "ABTable."


class NoMeasurements(_PrefixedError):
    """The table holds no data at all: 'no data', which is not the verdict None."""

    PREFIX = "ABTable."


class UndeterminedThreshold(_PrefixedError):
    """The first column has missing cells and no measured win or tie: no verdict can be given."""

    PREFIX = "ABTable."


class ContradictoryObservation(_PrefixedError):
    """An Observation that a measured cell contradicts."""

    PREFIX = "Observation."


@dataclass(frozen=True)
class Quote:
    """Where a fact comes from: ``text`` is an exact substring of line ``line`` (1-based) of
    ``seed`` (a seed file's name; its quoted lines are copied in tests/data/sources/seed_lines/)."""

    seed: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.seed}:{self.line}"


@dataclass(frozen=True)
class Row:
    """One shape: its ratios in column order (None: not measured / not printed).

    ``quote`` is the seed text holding every printed number of the row; a cell's column is the
    table's header column at the same position.
    """

    batch: int
    kv_len: int
    cells: tuple[Optional[float], ...]
    quote: Optional[Quote] = None

    @property
    def label(self) -> str:
        return f"bs{self.batch}/kv{self.kv_len}"


@dataclass(frozen=True, order=True)
class Cell:
    """One measured ratio and where it sits. Ordered by ratio, then position (deterministic)."""

    ratio: float
    batch: int
    kv_len: int
    q_len: int

    @property
    def label(self) -> str:
        return f"bs{self.batch}/kv{self.kv_len}/q{self.q_len}"

    @property
    def a_loses(self) -> bool:
        return self.ratio > 1.0 or (TIE_IS_LOSS and self.ratio == 1.0)

    @property
    def a_wins(self) -> bool:
        return self.ratio < 1.0


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@dataclass(frozen=True)
class ABTable:
    """Ratios time(a)/time(b) for one architecture and layout. Construction validates shape;
    emptiness is left to ``derive``, where 'no data' is reported as such."""

    arch: str
    layout: str
    a: str
    b: str
    columns: tuple[int, ...]
    rows: tuple[Row, ...]
    header: Optional[Quote] = None
    note: str = ""

    def __post_init__(self) -> None:
        cols = self.columns
        if not isinstance(cols, tuple) or not all(_is_int(q) and q > 0 for q in cols):
            raise InvalidTable(
                "columns",
                cols,
                "a tuple of positive int query lengths",
                "list the measured query lengths, e.g. (16, 24, 32)",
            )
        if any(b <= a for a, b in zip(cols, cols[1:])):
            raise InvalidTable(
                "columns",
                cols,
                "strictly increasing query lengths",
                "order the columns by query length and drop duplicates",
            )
        seen: set[tuple[int, int]] = set()
        for row in self.rows:
            if not (_is_int(row.batch) and row.batch > 0 and _is_int(row.kv_len) and row.kv_len > 0):
                raise InvalidTable(
                    "rows",
                    (row.batch, row.kv_len),
                    "positive int batch and kv_len",
                    "label each row with the shape it measured",
                )
            if (row.batch, row.kv_len) in seen:
                raise InvalidTable("rows", row.label, "each shape once", "merge or drop the duplicated row")
            seen.add((row.batch, row.kv_len))
            if len(row.cells) != len(cols):
                raise InvalidTable(
                    f"rows[{row.label}].cells",
                    row.cells,
                    f"{len(cols)} cells, one per column {cols}",
                    "pad unmeasured cells with None",
                )
            for c in row.cells:
                if c is None:
                    continue
                if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or c <= 0:
                    raise InvalidTable(
                        f"rows[{row.label}].cells",
                        c,
                        "a finite ratio time(a)/time(b) > 0, or None",
                        "record an unmeasured cell as None, never as 0 or NaN",
                    )

    def cells(self) -> list[Cell]:
        """Every measured cell."""
        return [
            Cell(float(r), row.batch, row.kv_len, q)
            for row in self.rows
            for q, r in zip(self.columns, row.cells)
            if r is not None
        ]

    def column(self, q: int) -> list[Cell]:
        return [c for c in self.cells() if c.q_len == q]

    def missing(self) -> tuple[tuple[int, int, int], ...]:
        """(batch, kv_len, q_len) of every unmeasured cell, sorted."""
        return tuple(
            sorted(
                (row.batch, row.kv_len, q) for row in self.rows for q, r in zip(self.columns, row.cells) if r is None
            )
        )


@dataclass(frozen=True)
class Observation:
    """A column-level fact a seed states in words, with its quote.

    q_len None means "at every query length measured" and may only state a win.
    ratio_range (lo, hi) is the range the seed states for the column; cells_stated how many
    cells it says the range covers.
    """

    q_len: Optional[int]
    a_loses_every_cell: bool
    quote: Quote
    ratio_range: Optional[tuple[float, float]] = None
    cells_stated: Optional[int] = None

    def __post_init__(self) -> None:
        if self.q_len is not None and not (_is_int(self.q_len) and self.q_len > 0):
            raise InvalidValue(
                "Observation.q_len", self.q_len, "a positive int or None", "name the query length the seed talks about"
            )
        if self.q_len is None and self.a_loses_every_cell:
            raise InvalidValue(
                "Observation.q_len",
                None,
                "a query length for a loss statement",
                "state 'loses at every length' as one observation per column",
            )
        if self.ratio_range is not None:
            lo, hi = self.ratio_range
            if not (0 < lo <= hi):
                raise InvalidValue(
                    "Observation.ratio_range",
                    self.ratio_range,
                    "0 < lo <= hi",
                    "copy the range as printed, low end first",
                )
            if self.a_loses_every_cell != (lo > 1.0):
                raise InvalidValue(
                    "Observation.ratio_range",
                    self.ratio_range,
                    "lo > 1 exactly when the observation states a loss in every cell",
                    "the range's low end decides whether A loses everywhere",
                )

    def covers(self, q: int) -> bool:
        return self.q_len is None or self.q_len == q


@dataclass(frozen=True)
class GateCosts:
    """Measured consequences of gating q_len <= q to B (docs/threshold-tool.md, "What it reports")."""

    q: Optional[int]
    worst_gated_ratio: Optional[Cell]
    best_gated_ratio: Optional[Cell]
    worst_cost_of_gating: Optional[Cell]
    next_column: Optional[int]
    next_column_best_for_A: Optional[Cell]
    next_column_worst_for_A: Optional[Cell]
    next_column_wins: tuple[Cell, ...]


@dataclass(frozen=True)
class ThresholdResult:
    """The derived threshold for one table, why, and what either wrong choice would cost."""

    arch: str
    layout: str
    a: str
    b: str
    threshold: Optional[int]
    stopped_by: Stop
    reason: str
    worst_gated_ratio: Optional[Cell]
    best_gated_ratio: Optional[Cell]
    worst_cost_of_gating: Optional[Cell]
    next_column: Optional[int]
    next_column_best_for_A: Optional[Cell]
    next_column_worst_for_A: Optional[Cell]
    next_column_wins: tuple[Cell, ...]
    cells_considered: int
    missing_cells: tuple[tuple[int, int, int], ...]
    observations_used: tuple[Observation, ...] = field(default=())

    @property
    def routing_row(self) -> dict[str, Optional[int]]:
        """The routing-table row this result proposes: {arch: q*}; None = measured 'never gate'."""
        return {self.arch: self.threshold}


@dataclass(frozen=True)
class _Verdict:
    q: int
    status: Literal["lose", "win", "tie", "observed_win", "hole"]
    measured: tuple[Cell, ...]
    missing: int
    observation: Optional[Observation]


def _check_observation(table: ABTable, o: Observation, q: int, measured: Sequence[Cell], missing: int) -> None:
    not_loss = [c for c in measured if not c.a_loses]
    if o.a_loses_every_cell and not_loss:
        raise ContradictoryObservation(
            "a_loses_every_cell",
            True,
            f"no measured cell at q{q} where {table.a} does not lose; {not_loss[0].label} is {not_loss[0].ratio}",
            f"check the quote ({o.quote}) against the table: it may describe another sweep",
        )
    if not o.a_loses_every_cell and measured and missing == 0 and not not_loss:
        raise ContradictoryObservation(
            "a_loses_every_cell",
            False,
            f"a cell at q{q} where {table.a} wins; every measured cell there loses",
            f"check the quote ({o.quote}) against the table: it may describe another sweep",
        )
    if o.ratio_range is not None:
        lo, hi = o.ratio_range
        outside = [c for c in measured if not (lo <= c.ratio <= hi)]
        if outside:
            raise ContradictoryObservation(
                "ratio_range",
                o.ratio_range,
                f"every measured cell at q{q} inside it; {outside[0].label} is {outside[0].ratio}",
                f"check the quote ({o.quote}): a range from another sweep cannot settle this table",
            )
    if o.cells_stated is not None and o.cells_stated != len(table.rows) and o.q_len is not None:
        raise ContradictoryObservation(
            "cells_stated",
            o.cells_stated,
            f"the table's row count, {len(table.rows)}",
            "give the table one row per shape the seed says it measured (cells None where unprinted)",
        )


def _verdict(table: ABTable, q: int, observations: Sequence[Observation]) -> _Verdict:
    measured = tuple(sorted(table.column(q))) if q in table.columns else ()
    missing = len(table.rows) - len(measured)
    obs = [o for o in observations if o.covers(q)]
    for o in obs:
        _check_observation(table, o, q, measured, missing)
    if any(c.a_wins for c in measured):
        return _Verdict(q, "win", measured, missing, None)
    if any(not c.a_loses for c in measured):
        return _Verdict(q, "tie", measured, missing, None)
    if missing == 0:
        return _Verdict(q, "lose", measured, missing, None)
    # Some cell missing, every measured one loses: only an observation can settle the column.
    for o in obs:
        if not o.a_loses_every_cell:
            return _Verdict(q, "observed_win", measured, missing, o)
    for o in obs:
        if o.a_loses_every_cell:
            return _Verdict(q, "lose", measured, missing, o)
    return _Verdict(q, "hole", measured, missing, None)


def _scan_columns(table: ABTable, observations: Sequence[Observation]) -> list[int]:
    return sorted(set(table.columns) | {o.q_len for o in observations if o.q_len is not None})


def costs_at(table: ABTable, q: Optional[int], observations: Sequence[Observation] = ()) -> GateCosts:
    """What gating q_len <= q to B would gain and cost, from the measured cells (q None: no gate)."""
    cells = table.cells()
    gated = [c for c in cells if q is not None and c.q_len <= q]
    wins = [c for c in gated if c.a_wins]
    above = [c for c in _scan_columns(table, observations) if q is None or c > q]
    nxt = above[0] if above else None
    nxt_cells = sorted(c for c in cells if c.q_len == nxt)
    return GateCosts(
        q=q,
        worst_gated_ratio=max(gated) if gated else None,
        best_gated_ratio=min(gated) if gated else None,
        worst_cost_of_gating=min(wins) if wins else None,
        next_column=nxt,
        next_column_best_for_A=nxt_cells[0] if nxt_cells else None,
        next_column_worst_for_A=nxt_cells[-1] if nxt_cells else None,
        next_column_wins=tuple(c for c in nxt_cells if c.a_wins),
    )


def _fmt(c: Optional[Cell]) -> str:
    return "-" if c is None else f"{c.ratio:.2f} at {c.label}"


def _stop_reason(table: ABTable, v: _Verdict) -> str:
    a = table.a
    if v.status == "win":
        wins = [c for c in v.measured if c.a_wins]
        return f"{a} wins {len(wins)} cell(s) at q{v.q} (best {_fmt(wins[0])})"
    if v.status == "tie":
        return f"a tie (ratio 1.0) at q{v.q}, which is not a loss ({_fmt([c for c in v.measured if not c.a_loses][0])})"
    if v.status == "observed_win":
        assert v.observation is not None
        return f"{a} wins somewhere at q{v.q} by observation ({v.observation.quote}: {v.observation.quote.text!r})"
    return (
        f"q{v.q} has {v.missing} missing cell(s) and no measured win: a missing cell is neither "
        f"a loss nor a win, so the threshold does not extend over it"
    )


def derive(table: ABTable, observations: Iterable[Observation] = ()) -> ThresholdResult:
    """The threshold q* for one table by the rule in the module docstring, with its costs."""
    obs = tuple(observations)
    if not table.rows:
        raise NoMeasurements(
            "rows",
            (),
            "at least one measured shape",
            "pass the table the sweep printed; 'no data' has no threshold, not None",
        )
    if not table.columns:
        raise NoMeasurements(
            "columns",
            (),
            "at least one measured query length",
            "pass the table the sweep printed; 'no data' has no threshold, not None",
        )
    if not table.cells() and not obs:
        raise NoMeasurements(
            "cells",
            f"{len(table.rows)}x{len(table.columns)} cells, all None",
            "at least one measured ratio (or an Observation with its quote)",
            "fill in the measured ratios; 'no data' has no threshold, not None",
        )

    threshold: Optional[int] = None
    stop: Optional[_Verdict] = None
    considered = 0
    used: list[Observation] = []
    # Every column's verdict first, so an observation contradicted anywhere is refused, not only
    # one the scan reaches.
    verdicts = [_verdict(table, q, obs) for q in _scan_columns(table, obs)]
    for v in verdicts:
        q = v.q
        considered += len(v.measured)
        if v.observation is not None and v.observation not in used:
            used.append(v.observation)
        if v.status == "lose":
            threshold = q
            continue
        if v.status == "hole" and threshold is None:
            raise UndeterminedThreshold(
                "cells",
                [(b, k, qq) for (b, k, qq) in table.missing() if qq == q],
                f"every row measured at the first column q{q}, or an Observation that settles it",
                "measure the missing cells, or pass the seed's statement about the column as an "
                "Observation with its quote; a missing cell is never counted as a loss or a win",
            )
        stop = v
        break

    if stop is None:
        stopped_by: Stop = "end"
        reason = (
            f"{table.a} loses every cell of every column through the last, q{threshold}; nothing is claimed beyond it"
        )
    else:
        stopped_by = cast(Stop, stop.status)  # never "lose": the scan continues past every losing column
        why = _stop_reason(table, stop)
        if threshold is None:
            reason = f"never gate: {why}, the smallest column"
        else:
            reason = f"{table.a} loses every cell of every column <= q{threshold}; stops: {why}"
    settled = [o for o in used if o.a_loses_every_cell]
    if settled:
        reason += "; holes settled by observation: " + "; ".join(f"{o.quote} {o.quote.text!r}" for o in settled)

    costs = costs_at(table, threshold, obs)
    return ThresholdResult(
        arch=table.arch,
        layout=table.layout,
        a=table.a,
        b=table.b,
        threshold=threshold,
        stopped_by=stopped_by,
        reason=reason,
        worst_gated_ratio=costs.worst_gated_ratio,
        best_gated_ratio=costs.best_gated_ratio,
        worst_cost_of_gating=costs.worst_cost_of_gating,
        next_column=costs.next_column,
        next_column_best_for_A=costs.next_column_best_for_A,
        next_column_worst_for_A=costs.next_column_worst_for_A,
        next_column_wins=costs.next_column_wins,
        cells_considered=considered,
        missing_cells=table.missing(),
        observations_used=tuple(used),
    )


@dataclass(frozen=True)
class RowCrossover:
    """Where one row stops losing: between last_loss and first_non_loss (measured columns).

    Holes in between widen the interval; they are never read as a loss or a win.
    """

    batch: int
    kv_len: int
    last_loss: Optional[int]
    first_non_loss: Optional[int]


def row_crossovers(table: ABTable) -> tuple[RowCrossover, ...]:
    """Per row, the interval (last_loss, first_non_loss] in which A stops losing (first time)."""
    out = []
    for row in table.rows:
        last, first = None, None
        for q, r in zip(table.columns, row.cells):
            if r is None:
                continue
            if Cell(float(r), row.batch, row.kv_len, q).a_loses:
                last = q
            else:
                first = q
                break
        out.append(RowCrossover(row.batch, row.kv_len, last, first))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Markdown, in the seeds' layout: rows batch x kv, columns q; gated columns bold, q* marked.


def render(table: ABTable, result: Optional[ThresholdResult] = None) -> str:
    """The table as markdown (gated columns bold, the q* header marked) and the result below it."""
    if result is not None and (result.arch, result.layout) != (table.arch, table.layout):
        raise InvalidValue(
            "result",
            f"{result.arch} {result.layout}",
            f"a result for {table.arch} {table.layout}",
            "render each table with the result derived from it",
        )
    q_star = result.threshold if result is not None else None

    def gated(q: int) -> bool:
        return q_star is not None and q <= q_star

    headers = [table.arch] + [
        (f"**q{q}** (q*)" if q == q_star else f"**q{q}**" if gated(q) else f"q{q}") for q in table.columns
    ]
    body = []
    for row in table.rows:
        cells = []
        for q, r in zip(table.columns, row.cells):
            s = "–" if r is None else f"{r:.2f}"
            cells.append(f"**{s}**" if gated(q) and r is not None else s)
        body.append([row.label] + cells)
    lines = [
        f"**{table.arch} {table.layout}**: time({table.a}) / time({table.b}) "
        f"(> 1: {table.a} slower; – not measured or not printed)",
        "",
        tabulate(
            body,
            headers=headers,
            tablefmt="pipe",
            disable_numparse=True,
            colalign=("left",) + ("right",) * len(table.columns),
        ),
    ]
    row_lines = [str(row.quote.line) for row in table.rows if row.quote is not None]
    if table.header is not None or row_lines:
        src = f"header {table.header}" if table.header is not None else "header not quoted"
        lines += ["", f"Source: {src}; rows at line(s) {', '.join(row_lines) or 'none printed'}."]
    if table.note:
        lines += ["", f"Note: {table.note}"]
    if result is None:
        return "\n".join(lines) + "\n"
    if result.threshold is None:
        verdict = f"q* = None: never gate, {table.a} at every length (a measured verdict, not a gap)"
    else:
        verdict = f"q* = {result.threshold}: route q_len <= {result.threshold} to {table.b} (bold columns)"
    nb, nw = result.next_column_best_for_A, result.next_column_worst_for_A
    lines += ["", f"- {verdict}. Routing-table row: `{result.routing_row}`.", f"- Why: {result.reason}."]
    if result.threshold is not None:
        if result.worst_gated_ratio is None:
            lines.append("- Gated cells: none printed; the gated verdict rests on the observations below.")
        else:
            lines.append(
                f"- Gated cells ({table.a} slower by this factor where the gate routes to {table.b}): worst "
                f"{_fmt(result.worst_gated_ratio)}, best {_fmt(result.best_gated_ratio)}."
            )
        cost = result.worst_cost_of_gating
        lines.append(
            "- Worst cost of gating: "
            + (
                f"none ({table.a} wins no measured gated cell)."
                if cost is None
                else f"{1 / cost.ratio:.2f}x at {cost.label}."
            )
        )
    if result.next_column is not None:
        label = "first" if result.threshold is None else "next"
        if nb is None:
            lines.append(f"- The {label} column q{result.next_column} has no measured cell.")
        else:
            ext = f"; gating it would cost {1 / nb.ratio:.2f}x there" if nb.a_wins else ""
            left = (
                f"; not gating it leaves {table.a} {nw.ratio:.2f}x slower at {nw.label}"
                if nw is not None and nw.a_loses
                else f"; {table.a} loses no measured cell there"
            )
            lines.append(f"- The {label} column q{result.next_column}: best for {table.a} {_fmt(nb)}{ext}{left}.")
    if result.missing_cells:
        lines.append(
            f"- Missing cells ({len(result.missing_cells)}): "
            + ", ".join(f"bs{b}/kv{k}/q{q}" for b, k, q in result.missing_cells)
            + "."
        )
    for o in result.observations_used:
        at = "every measured length" if o.q_len is None else f"q{o.q_len}"
        lines.append(f'- Observation at {at} ({o.quote}): "{o.quote.text}".')
    return "\n".join(lines) + "\n"
