"""The threshold tool reproduces the seeds' thresholds from their printed tables, and its rule holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from routing import ab_tables as T
from scenarios.errors import InvalidValue
from routing.threshold import (
    ABTable,
    Cell,
    ContradictoryObservation,
    InvalidTable,
    NoMeasurements,
    Observation,
    Quote,
    Row,
    UndeterminedThreshold,
    costs_at,
    derive,
    render,
    row_crossovers,
)

SEED_LINES = Path(__file__).resolve().parents[1] / "data" / "sources" / "seed_lines"
Q = Quote("synthetic", 1, "synthetic")


def table(columns, *rows, arch="gfx942"):
    """A synthetic table: rows given as (batch, kv_len, cells...)."""
    return ABTable(
        arch=arch,
        layout="paged",
        a="aiter",
        b="fa2",
        columns=tuple(columns),
        rows=tuple(Row(b, k, tuple(cells)) for b, k, *cells in rows),
    )


def seed(name):
    return derive(T.TABLES[name], T.OBSERVATIONS.get(name, ()))


# --- The seeds' conclusions -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["paged-gfx942", "paged-gfx950"])
def test_paged_threshold_is_16_on_both_architectures(name):
    """'16 is the last column where AITER loses in every cell on both architectures' (seed 001)."""
    r = seed(name)
    assert r.threshold == 16 and r.stopped_by == "win" and r.next_column == 24
    assert r.observations_used == () and r.missing_cells == ()


@pytest.mark.parametrize("name,wins", [("paged-gfx942", ["bs8/kv1024/q24"]), ("paged-gfx950", ["bs32/kv2048/q24"])])
def test_paged_q24_wins_are_exactly_the_cells_the_seed_names(name, wins):
    """'at 24 it already wins at bs8/kv1024 on gfx942 and bs32/kv2048 on gfx950' (0.96 and 0.70)."""
    r = seed(name)
    assert [c.label for c in r.next_column_wins] == wins
    assert r.next_column_best_for_A.ratio == {"paged-gfx942": 0.96, "paged-gfx950": 0.70}[name]


def test_paged_gated_cells_span_the_titles_1_19_to_6_08():
    """The title's 'at 1.19-6.08x over AITER' is the range of the gated q16 cells over both arches."""
    rs = [seed("paged-gfx942"), seed("paged-gfx950")]
    best = min(r.best_gated_ratio for r in rs)
    worst = max(r.worst_gated_ratio for r in rs)
    assert (best.ratio, best.label) == (1.19, "bs32/kv2048/q16")
    assert (worst.ratio, worst.label) == (6.08, "bs1/kv8192/q16")
    assert all(r.worst_cost_of_gating is None for r in rs)


def test_choosing_fa2_wrongly_costs_4_6x_at_bs8_kv8192_q256_on_gfx942():
    """'choosing fa2 wrongly costs up to 4.6x at bs8/kv8192/q256': 1/0.22, within the cell's rounding."""
    worst = costs_at(T.PAGED_GFX942, 256).worst_cost_of_gating
    assert worst.label == "bs8/kv8192/q256" and worst.ratio == 0.22
    assert 1 / 0.225 <= 4.6 <= 1 / 0.215  # a printed 0.22 is [0.215, 0.225)


def test_gating_everything_on_gfx950_costs_6_7x_more_than_the_seeds_4_6x():
    """The same cell on gfx950 is 0.15, so the seed's 4.6x is gfx942's figure, not a bound on both."""
    worst = costs_at(T.PAGED_GFX950, 256).worst_cost_of_gating
    assert worst.label == "bs8/kv8192/q256" and round(1 / worst.ratio, 2) == 6.67


@pytest.mark.parametrize("name,ratio", [("paged-gfx942", 3.83), ("paged-gfx950", 4.67)])
def test_not_gating_q24_leaves_more_than_the_seeds_1_9x(name, ratio):
    """'choosing AITER wrongly costs at most the 1.9x bs1 cells' does not follow: bs1/kv8192/q24 loses more."""
    r = seed(name)
    assert r.next_column_worst_for_A.label == "bs1/kv8192/q24"
    assert r.next_column_worst_for_A.ratio == ratio > 1.9


def test_bs1_rows_cross_between_q128_and_q256_except_a_printed_tie():
    """'bs1 does not cross until ~192': bs1 rows cross in (128, 256], but gfx950 bs1/kv8192 ties at q128."""
    got = {
        t.arch: {(x.batch, x.kv_len): (x.last_loss, x.first_non_loss) for x in row_crossovers(t) if x.batch == 1}
        for t in (T.PAGED_GFX942, T.PAGED_GFX950)
    }
    assert got == {
        "gfx942": {(1, 1024): (128, 256), (1, 8192): (128, 256)},
        "gfx950": {(1, 1024): (128, 256), (1, 8192): (64, 128)},
    }
    assert T.PAGED_GFX950.rows[1].cells[4] == 1.00


def test_bs8_and_bs32_crossovers_as_printed():
    """'bs>=8 crosses between 24 and 32' holds for one printed row only; the others cross elsewhere."""
    got = {
        t.arch: {(x.batch, x.kv_len): (x.last_loss, x.first_non_loss) for x in row_crossovers(t) if x.batch >= 8}
        for t in (T.PAGED_GFX942, T.PAGED_GFX950)
    }
    assert got == {
        "gfx942": {(8, 1024): (16, 24), (8, 8192): (32, 64), (32, 2048): (32, 64)},
        "gfx950": {(8, 1024): (16, 24), (8, 8192): (24, 32), (32, 2048): (16, 24)},
    }


def test_ragged_gfx942_is_16_with_the_seeds_stated_facts():
    """#372's 'all five measured shapes lose at 16 ... first win at q24' gives 16, as seed 000 sets it."""
    r = seed("ragged-gfx942")
    assert r.threshold == 16 and r.stopped_by == "observed_win" and r.next_column == 24
    assert r.observations_used == (T.OBS_RAGGED_GFX942_Q16, T.OBS_RAGGED_GFX942_Q24)
    assert (r.worst_gated_ratio.label, r.worst_gated_ratio.ratio) == ("bs1/kv8192/q16", 4.74)
    assert (r.best_gated_ratio.label, r.best_gated_ratio.ratio) == ("bs1/kv1024/q16", 1.18)


def test_ragged_gfx942_cannot_be_decided_from_its_two_printed_cells():
    """Three of five q16 cells are unprinted: the tool refuses a verdict and names the holes."""
    with pytest.raises(UndeterminedThreshold) as e:
        derive(T.RAGGED_GFX942)
    assert e.value.field == "cells"
    assert e.value.value == [(8, 1024, 16), (8, 8192, 16), (32, 2048, 16)]
    assert "Observation" in e.value.fix


def test_ragged_gfx942_without_first_win_stops_at_the_last_measured_column():
    """Without 'first win at q24' the answer is still 16, but as the end of the data, not a win."""
    r = derive(T.RAGGED_GFX942, [T.OBS_RAGGED_GFX942_Q16])
    assert r.threshold == 16 and r.stopped_by == "end" and r.next_column is None


def test_pr367_ragged_range_belongs_to_another_sweep_than_pr372_cells():
    """#367's '1.07-4.42x' cannot settle #372's table: its printed 4.74 lies outside that range."""
    with pytest.raises(ContradictoryObservation) as e:
        derive(T.RAGGED_GFX942, [T.OBS_RAGGED_GFX942_PR367_Q16])
    assert e.value.field == "ratio_range"
    assert derive(T.RAGGED_GFX942_PR367, T.OBSERVATIONS["ragged-gfx942-pr367"]).threshold == 16


@pytest.mark.parametrize("obs", [(), (T.OBS_RAGGED_GFX950_EVERY_Q,)])
def test_ragged_gfx950_is_never_gate_from_its_one_printed_cell(obs):
    """bs32/kv2048 at 0.59 in the first column makes gfx950 'None', a measured verdict."""
    r = derive(T.RAGGED_GFX950, obs)
    assert r.threshold is None and r.stopped_by == "win"
    assert r.next_column_best_for_A.label == "bs32/kv2048/q16" and r.next_column_best_for_A.ratio == 0.59
    assert r.routing_row == {"gfx950": None}


@pytest.mark.parametrize("name", list(T.SEED_THRESHOLDS))
def test_every_seed_threshold_is_reproduced(name):
    """Each threshold the seeds set ({gfx942: 16, gfx950: 16} paged, {16, None} ragged) comes out."""
    assert seed(name).threshold == T.SEED_THRESHOLDS[name]


# --- Provenance of the data -------------------------------------------------------------------


def _quotes():
    for name, t in T.TABLES.items():
        if t.header is not None:
            yield f"{name}:header", t.header
        for row in t.rows:
            if row.quote is not None:
                yield f"{name}:{row.label}", row.quote
    for name, obs in T.OBSERVATIONS.items():
        for o in obs:
            yield f"{name}:obs:q{o.q_len}", o.quote


def _seed_lines(seed: str) -> dict[int, str]:
    """{line: text} of a seed's excerpt in tests/data/sources/seed_lines (`LINE:TEXT`, the seed's numbers)."""
    lines = {}
    for entry in (SEED_LINES / seed).read_text(encoding="utf-8").splitlines():
        n, text = entry.split(":", 1)
        lines[int(n)] = text
    return lines


@pytest.mark.parametrize("where,quote", list(_quotes()), ids=[w for w, _ in _quotes()])
def test_every_quote_is_on_its_line_of_the_seed(where, quote):
    """Each quoted text is found on the line of the seed file it names (its excerpt, copied verbatim)."""
    lines = _seed_lines(quote.seed)
    assert quote.line in lines, f"{where}: line {quote.line} of {quote.seed} is not in its excerpt"
    assert quote.text in lines[quote.line], where


@pytest.mark.parametrize("name", list(T.TABLES))
def test_every_printed_cell_is_in_its_rows_quote(name):
    """A non-None cell has a quote holding that number; a cell with no quote is None."""
    for row in T.TABLES[name].rows:
        for c in row.cells:
            if c is not None:
                assert row.quote is not None and f"{c:.2f}" in row.quote.text


@pytest.mark.parametrize("t", [T.PAGED_GFX942, T.PAGED_GFX950])
def test_paged_rows_and_header_parse_back_to_the_data(t):
    """The paged quotes, split on blanks, give exactly the columns and every cell in order."""
    assert tuple(int(x[1:]) for x in t.header.text.split()[1:]) == t.columns
    for row in t.rows:
        label, *nums = row.quote.text.split()
        assert label == row.label and tuple(float(x) for x in nums) == row.cells


# --- The rule, on synthetic tables ------------------------------------------------------------


def test_all_lose_gives_the_last_column():
    """A loses every cell everywhere: q* is the last column and nothing is claimed beyond."""
    r = derive(table((16, 32, 64), (1, 1024, 2.0, 1.5, 1.1), (8, 1024, 3.0, 1.2, 1.01)))
    assert r.threshold == 64 and r.stopped_by == "end" and r.next_column is None
    assert r.cells_considered == 6 and r.worst_gated_ratio.ratio == 3.0


def test_none_lose_gives_none():
    """A wins every cell: the measured verdict None, reported as a win in the first column."""
    r = derive(table((16, 32), (1, 1024, 0.5, 0.4), (8, 1024, 0.9, 0.8)))
    assert r.threshold is None and r.stopped_by == "win" and r.next_column == 16
    assert r.worst_gated_ratio is None and r.next_column_best_for_A.ratio == 0.5


def test_single_win_in_the_first_column_gives_none():
    """One winning cell at the smallest column is enough for None, however much A loses elsewhere."""
    r = derive(table((16, 32), (1, 1024, 5.0, 4.0), (8, 1024, 0.99, 3.0)))
    assert r.threshold is None and [c.label for c in r.next_column_wins] == ["bs8/kv1024/q16"]


def test_a_hole_stops_the_threshold_before_its_column():
    """A missing cell is neither a loss nor a win: the threshold stops before it, and says so."""
    r = derive(table((16, 24, 32), (1, 1024, 2.0, None, 2.0), (8, 1024, 2.0, 1.5, 2.0)))
    assert r.threshold == 16 and r.stopped_by == "hole" and r.next_column == 24
    assert r.missing_cells == ((1, 1024, 24),)
    assert r.next_column_wins == ()


def test_a_hole_after_a_win_is_reported_but_does_not_move_the_threshold():
    """Holes beyond the stopping column are listed in missing_cells only."""
    r = derive(table((16, 24, 32), (1, 1024, 2.0, 0.5, None), (8, 1024, 2.0, 1.5, 2.0)))
    assert r.threshold == 16 and r.stopped_by == "win" and r.missing_cells == ((1, 1024, 32),)


def test_a_hole_in_the_first_column_is_undetermined_not_none():
    """A first-column hole with no measured win gives no verdict: an error, never None."""
    with pytest.raises(UndeterminedThreshold) as e:
        derive(table((16, 24), (1, 1024, None, 0.5), (8, 1024, 2.0, 2.0)))
    assert e.value.value == [(1, 1024, 16)] and "q16" in e.value.expected


def test_a_hole_beside_a_measured_win_in_the_first_column_is_none():
    """A measured win decides the first column whatever is missing beside it."""
    r = derive(table((16,), (1, 1024, None), (8, 1024, 0.8)))
    assert r.threshold is None and r.stopped_by == "win"


def test_non_contiguous_columns_give_a_measured_column_value():
    """Columns 16, 64, 256: q* is the column's length (64), not an index and not interpolated."""
    r = derive(table((16, 64, 256), (1, 1024, 2.5, 1.5, 0.5), (8, 1024, 2.0, 1.2, 0.7)))
    assert r.threshold == 64 and r.next_column == 256
    assert r.worst_gated_ratio.label == "bs1/kv1024/q16" and r.best_gated_ratio.ratio == 1.2


def test_a_tie_is_not_a_loss():
    """Ratio exactly 1.0 stops the threshold (stopped_by 'tie'); it is not counted as a win either."""
    r = derive(table((16, 24, 32), (1, 1024, 2.0, 1.0, 2.0), (8, 1024, 2.0, 1.5, 2.0)))
    assert r.threshold == 16 and r.stopped_by == "tie" and r.next_column_wins == ()


def test_a_tie_in_the_first_column_gives_none():
    """A tie at the smallest column leaves no column where A loses everywhere."""
    r = derive(table((16, 24), (1, 1024, 1.0, 2.0), (8, 1024, 2.0, 2.0)))
    assert r.threshold is None and r.stopped_by == "tie"


def test_costs_at_an_arbitrary_threshold():
    """Gating through q32 costs 1/0.5 at the worst winning cell, and q64 is the next column."""
    t = table((16, 32, 64), (1, 1024, 2.0, 0.5, 3.0), (8, 1024, 4.0, 0.8, 0.9))
    c = costs_at(t, 32)
    assert c.worst_cost_of_gating.label == "bs1/kv1024/q32" and 1 / c.worst_cost_of_gating.ratio == 2.0
    assert c.worst_gated_ratio.ratio == 4.0 and c.next_column == 64
    assert (c.next_column_best_for_A.ratio, c.next_column_worst_for_A.ratio) == (0.9, 3.0)


def test_cells_considered_counts_the_columns_the_decision_read():
    """Gated columns plus the stopping column; columns after it are not read."""
    r = derive(table((16, 24, 32), (1, 1024, 2.0, 0.5, 2.0), (8, 1024, 2.0, None, 2.0)))
    assert r.cells_considered == 3


@pytest.mark.parametrize(
    "t,field",
    [
        (table((16, 24)), "rows"),
        (table((), (1, 1024)), "columns"),
        (table((16, 24), (1, 1024, None, None)), "cells"),
    ],
)
def test_an_empty_table_is_no_data_not_none(t, field):
    """No rows, no columns or no measured cell raise NoMeasurements with field, expected and fix."""
    with pytest.raises(NoMeasurements) as e:
        derive(t)
    assert e.value.field == field and e.value.expected and "not None" in e.value.fix


@pytest.mark.parametrize(
    "columns,rows,field",
    [
        ((24, 16), [(1, 1024, 2.0, 2.0)], "columns"),
        ((16, 16), [(1, 1024, 2.0, 2.0)], "columns"),
        ((0,), [(1, 1024, 2.0)], "columns"),
        ((16,), [(1, 1024, 2.0), (1, 1024, 3.0)], "rows"),
        ((16, 24), [(1, 1024, 2.0)], "rows[bs1/kv1024].cells"),
        ((16,), [(1, 1024, float("nan"))], "rows[bs1/kv1024].cells"),
        ((16,), [(1, 1024, 0.0)], "rows[bs1/kv1024].cells"),
    ],
)
def test_a_malformed_table_names_the_offending_field(columns, rows, field):
    """Unordered columns, duplicate rows, ragged rows, NaN or zero ratios raise InvalidTable."""
    with pytest.raises(InvalidTable) as e:
        ABTable("gfx942", "paged", "aiter", "fa2", columns, tuple(Row(b, k, tuple(c)) for b, k, *c in rows))
    assert e.value.field == field and e.value.fix


def test_an_observation_contradicted_by_a_measured_win_is_refused():
    """'Every cell loses at q16' against a measured 0.8 at q16 raises ContradictoryObservation."""
    t = table((16,), (1, 1024, 2.0), (8, 1024, 0.8))
    with pytest.raises(ContradictoryObservation) as e:
        derive(t, [Observation(16, True, Q)])
    assert e.value.field == "a_loses_every_cell"


def test_an_observed_win_contradicted_by_a_fully_measured_losing_column_is_refused():
    """'A wins at q16' against a q16 column measured everywhere as a loss raises."""
    t = table((16,), (1, 1024, 2.0), (8, 1024, 1.5))
    with pytest.raises(ContradictoryObservation):
        derive(t, [Observation(16, False, Q)])


def test_an_observation_beyond_the_stopping_column_is_still_checked():
    """A contradicted observation is refused even at a column the scan never reaches."""
    t = table((16, 24, 32), (1, 1024, 2.0, 0.5, 0.7), (8, 1024, 2.0, 2.0, 2.0))
    with pytest.raises(ContradictoryObservation):
        derive(t, [Observation(32, True, Q)])


def test_an_observation_settles_a_hole_but_costs_use_measured_cells_only():
    """A stated loss fills the holes of its column for the verdict; the figures stay measured."""
    t = table((16, 24), (1, 1024, 2.0, 0.5), (8, 1024, None, 0.7))
    r = derive(t, [Observation(16, True, Q)])
    assert r.threshold == 16 and r.worst_gated_ratio.ratio == r.best_gated_ratio.ratio == 2.0


# --- Rendering and the command line -----------------------------------------------------------


def test_render_marks_the_threshold_column_and_bolds_gated_cells():
    """The q* header is marked, gated cells are bold, ungated cells and holes are not."""
    md = render(T.PAGED_GFX942, seed("paged-gfx942"))
    header = next(line for line in md.splitlines() if line.startswith("| gfx942"))
    assert "**q16** (q*)" in header and "**q24**" not in header
    assert re.search(r"\| bs1/kv8192 +\| +\*\*5\.04\*\* +\| +3\.83 ", md)
    md2 = render(T.RAGGED_GFX942, seed("ragged-gfx942"))
    assert re.search(r"\| bs8/kv1024 +\| +– +\|", md2) and "first win at q24" in md2


def test_render_states_a_none_verdict_as_never_gate():
    """A None threshold renders as a measured 'never gate', with no column marked."""
    md = render(T.RAGGED_GFX950, seed("ragged-gfx950"))
    assert "never gate" in md and "(q*)" not in md and "`{'gfx950': None}`" in md


def test_render_refuses_a_result_from_another_table():
    """Rendering gfx942's table with gfx950's result is a usage error naming the mismatch."""
    with pytest.raises(InvalidValue) as e:
        render(T.PAGED_GFX942, seed("paged-gfx950"))
    assert e.value.field == "result"


def test_cli_renders_every_table_and_refuses_an_unknown_name(capsys):
    """`attncheck threshold` prints each table (exit 0); an unknown name exits 2 with a fix."""
    from conformance.commands.threshold import forward as main

    assert main([]) == 0
    out = capsys.readouterr().out
    assert all(f"## {name}" in out for name in T.TABLES)
    assert main(["nope"]) == 2
    assert "Fix:" in capsys.readouterr().err


# --- Properties -------------------------------------------------------------------------------

LOSS = st.floats(1.0001, 8.0)
# Biased towards losses so that thresholds land past the first column; edge values include a tie.
RATIO = st.one_of(st.sampled_from([0.5, 0.96, 1.0, 1.04, 2.0]), st.floats(0.05, 20.0), LOSS, LOSS, LOSS)


@st.composite
def tables(draw, holes=True):
    cols = sorted(draw(st.sets(st.integers(1, 64).map(lambda i: 8 * i), min_size=1, max_size=6)))
    shapes = draw(
        st.lists(
            st.tuples(st.sampled_from([1, 2, 8, 32]), st.sampled_from([128, 1024, 8192])),
            min_size=1,
            max_size=5,
            unique=True,
        )
    )
    cell = st.one_of(st.none(), RATIO, RATIO, RATIO) if holes else RATIO
    rows = [(b, k, *draw(st.lists(cell, min_size=len(cols), max_size=len(cols)))) for b, k in shapes]
    return table(cols, *rows)


def _derive_or_undetermined(t):
    """derive(t), or None after checking that an UndeterminedThreshold was deserved."""
    try:
        return derive(t)
    except (UndeterminedThreshold, NoMeasurements):
        first = t.column(t.columns[0])
        assert len(first) < len(t.rows) and all(c.a_loses for c in first)
        return None


PROPS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(tables())
def test_threshold_never_reaches_a_column_holding_a_win(t):
    """No measured cell that A wins or ties lies at a column <= q*; every gated cell is a loss."""
    r = _derive_or_undetermined(t)
    assume(r is not None)
    for c in t.cells():
        if not c.a_loses:
            assert r.threshold is None or c.q_len > r.threshold
    if r.threshold is not None:
        assert r.worst_cost_of_gating is None and r.worst_gated_ratio.a_loses
        assert all(q > r.threshold for _, _, q in r.missing_cells)


@PROPS
@given(tables(), st.data())
def test_inserting_an_all_losing_column_just_above_the_threshold_extends_it(t, data):
    """A column after q* (before the first column when q* is None) where every cell loses becomes q*."""
    r = _derive_or_undetermined(t)
    assume(r is not None)
    q_new = t.columns[0] - 1 if r.threshold is None else r.threshold + 1
    pos = 0 if r.threshold is None else t.columns.index(r.threshold) + 1
    new_cells = data.draw(st.lists(LOSS, min_size=len(t.rows), max_size=len(t.rows)))
    t2 = ABTable(
        t.arch,
        t.layout,
        t.a,
        t.b,
        t.columns[:pos] + (q_new,) + t.columns[pos:],
        tuple(
            Row(row.batch, row.kv_len, row.cells[:pos] + (v,) + row.cells[pos:]) for row, v in zip(t.rows, new_cells)
        ),
    )
    assert derive(t2).threshold == q_new


@PROPS
@given(tables(), st.data())
def test_permuting_rows_changes_nothing(t, data):
    """The result (threshold, reason, cost cells, holes) is independent of row order."""
    perm = data.draw(st.permutations(t.rows))
    t2 = ABTable(t.arch, t.layout, t.a, t.b, t.columns, tuple(perm))
    try:
        r1 = derive(t)
    except (UndeterminedThreshold, NoMeasurements) as e:
        with pytest.raises(type(e)) as e2:
            derive(t2)
        assert e2.value.value == e.value
        return
    assert derive(t2) == r1


@PROPS
@given(tables(holes=False))
def test_without_holes_the_threshold_is_the_last_all_losing_prefix_column(t):
    """Fully measured: q* is the last column of the longest prefix of columns where every cell loses."""
    q_star = None
    for q in t.columns:
        if not all(c.a_loses for c in t.column(q)):
            break
        q_star = q
    r = derive(t)
    assert r.threshold == q_star
    gated = [c for c in t.cells() if q_star is not None and c.q_len <= q_star]
    assert r.worst_gated_ratio == (max(gated) if gated else None)
    assert r.cells_considered == sum(
        len(t.column(q))
        for q in t.columns
        if q_star is None and q == t.columns[0] or q_star is not None and (q <= q_star or q == r.next_column)
    )


def test_cell_order_is_by_ratio_then_position():
    """Cells compare by ratio first, so max/min pick the worst cell and break ties by position."""
    assert max(Cell(2.0, 8, 1024, 16), Cell(2.0, 1, 1024, 16)) == Cell(2.0, 8, 1024, 16)
    assert min(Cell(0.5, 8, 1024, 16), Cell(0.6, 1, 1024, 16)).ratio == 0.5
