"""The A/B timing tables the seeds print, as data: ratio = time(aiter) / time(fa2), > 1 = AITER slower.

Data only; the rule that reads them is routing/threshold.py. Every number here is copied from the
seed text, and every row and observation carries a Quote: the seed file's name, the 1-based
line, and the exact text on that line. A row's cells are the numbers in its quote, in the order
of the columns in the table's header quote. tests/routing/test_threshold.py checks each quote
against the seed's lines copied verbatim in tests/data/sources/seed_lines/ (README.md there) and
each cell against its quote.

Nothing is invented: a cell the seeds do not print is None. Where a seed states a column-level
fact without printing the cells ("all five ... lose at 16", "first win at q24", "at every query
length measured"), it is an Observation with its quote, kept apart from the cells (OBSERVATIONS),
so the threshold tool takes it as an explicit input.

Seeds:
  000_d42b38d50858ad1d.txt  PR #373 (ragged gate), quoting #372's ragged measurement
  001_276466bfdc418ad0.txt  PR #367 (paged short-query gate); its commit "...plan" prints the
                            paged tables and the ragged q16 figures of the same sweep
"""

from __future__ import annotations

from routing.threshold import ABTable, Observation, Quote, Row

SEED_000 = "000_d42b38d50858ad1d.txt"
SEED_001 = "001_276466bfdc418ad0.txt"

PAGED_COLUMNS = (16, 24, 32, 64, 128, 256)

_PAGED_NOTE = (
    "Measured through BatchPrefillWithPagedKVCacheWrapper, page_size 16, GQA 32/8, hd128, "
    "causal bf16, aiter/fa2 median ratio (seed 001, lines 152-153). The table prints 6 query "
    "lengths; the PR body (seed 001 line 310: 'all 90 configs per architecture') and the 9 "
    "AITER medians 'flat from 16 to 256' (line 304) suggest 9 were measured, so columns may "
    "be unprinted (docs/threshold-tool.md)."
)

# --- Paged prefill, seed 001, commit message "...plan", lines 154-165 ------------------------

PAGED_GFX942 = ABTable(
    arch="gfx942",
    layout="paged",
    a="aiter",
    b="fa2",
    columns=PAGED_COLUMNS,
    header=Quote(SEED_001, 154, "gfx942 q16 q24 q32 q64 q128 q256"),
    rows=(
        Row(
            1,
            1024,
            (1.88, 1.84, 1.83, 1.61, 1.43, 0.85),
            Quote(SEED_001, 155, "bs1/kv1024 1.88 1.84 1.83 1.61 1.43 0.85"),
        ),
        Row(
            1,
            8192,
            (5.04, 3.83, 3.79, 1.87, 1.03, 0.55),
            Quote(SEED_001, 156, "bs1/kv8192 5.04 3.83 3.79 1.87 1.03 0.55"),
        ),
        Row(
            8,
            1024,
            (1.46, 0.96, 0.88, 0.49, 0.36, 0.27),
            Quote(SEED_001, 157, "bs8/kv1024 1.46 0.96 0.88 0.49 0.36 0.27"),
        ),
        Row(
            8,
            8192,
            (2.10, 1.09, 1.08, 0.54, 0.32, 0.22),
            Quote(SEED_001, 158, "bs8/kv8192 2.10 1.09 1.08 0.54 0.32 0.22"),
        ),
        Row(
            32,
            2048,
            (1.86, 1.04, 1.02, 0.54, 0.30, 0.25),
            Quote(SEED_001, 159, "bs32/kv2048 1.86 1.04 1.02 0.54 0.30 0.25"),
        ),
    ),
    note=_PAGED_NOTE,
)

PAGED_GFX950 = ABTable(
    arch="gfx950",
    layout="paged",
    a="aiter",
    b="fa2",
    columns=PAGED_COLUMNS,
    header=Quote(SEED_001, 160, "gfx950 q16 q24 q32 q64 q128 q256"),
    rows=(
        Row(
            1,
            1024,
            (1.62, 1.71, 1.51, 1.42, 1.17, 0.74),
            Quote(SEED_001, 161, "bs1/kv1024 1.62 1.71 1.51 1.42 1.17 0.74"),
        ),
        Row(
            1,
            8192,
            (6.08, 4.67, 3.64, 1.83, 1.00, 0.52),
            Quote(SEED_001, 162, "bs1/kv8192 6.08 4.67 3.64 1.83 1.00 0.52"),
        ),
        Row(
            8,
            1024,
            (1.50, 1.00, 0.88, 0.47, 0.28, 0.22),
            Quote(SEED_001, 163, "bs8/kv1024 1.50 1.00 0.88 0.47 0.28 0.22"),
        ),
        Row(
            8,
            8192,
            (2.06, 1.04, 0.89, 0.48, 0.24, 0.15),
            Quote(SEED_001, 164, "bs8/kv8192 2.06 1.04 0.89 0.48 0.24 0.15"),
        ),
        Row(
            32,
            2048,
            (1.19, 0.70, 0.67, 0.38, 0.26, 0.21),
            Quote(SEED_001, 165, "bs32/kv2048 1.19 0.70 0.67 0.38 0.26 0.21"),
        ),
    ),
    note=_PAGED_NOTE,
)

# --- Ragged prefill ---------------------------------------------------------------------------
# The seeds print ragged figures at q16 only. Row labels: seed 001 calls the ragged data "the
# same sweep through mha_varlen_fwd" (line 174-175) as the paged one, and seed 000 counts "five
# measured shapes" and names bs1/kv1024, bs1/kv8192 (gfx942) and bs32/kv2048 (gfx950) - all
# paged rows. So the rows are the five paged shapes; that is an inference about row *labels*
# only. Every cell the seeds do not print is None.

RAGGED_COLUMNS = (16,)

# gfx942, #372's measurement (the basis of the ragged threshold), seed 000 lines 41-48. Only two
# of its five q16 cells are printed; the other three are known only to lie in the stated range
# 1.18-4.74 (OBSERVATIONS below), so they are None here.
RAGGED_GFX942 = ABTable(
    arch="gfx942",
    layout="ragged",
    a="aiter",
    b="fa2",
    columns=RAGGED_COLUMNS,
    header=Quote(SEED_000, 45, "shape\tAITER/fa2 at q16"),
    rows=(
        Row(1, 1024, (1.18,), Quote(SEED_000, 46, "bs1 / kv1024\t1.18×")),
        Row(1, 8192, (4.74,), Quote(SEED_000, 47, "bs1 / kv8192\t4.74×")),
        Row(8, 1024, (None,)),  # not printed
        Row(8, 8192, (None,)),  # not printed
        Row(32, 2048, (None,)),  # not printed
    ),
    note="#372's ragged sweep as quoted by #373 (seed 000); q16 only; 3 of 5 cells not printed.",
)

# gfx942, #367's own ragged sweep (seed 001 lines 174-175): only a range is printed, no cell.
# It is a different measurement from #372's (its range 1.07-4.42 does not contain #372's 4.74),
# so it is its own table, every cell None, and its range is an observation.
RAGGED_GFX942_PR367 = ABTable(
    arch="gfx942",
    layout="ragged",
    a="aiter",
    b="fa2",
    columns=RAGGED_COLUMNS,
    header=Quote(SEED_001, 175, "mha_varlen_fwd splits by architecture at q16"),
    rows=(
        Row(1, 1024, (None,)),
        Row(1, 8192, (None,)),
        Row(8, 1024, (None,)),
        Row(8, 8192, (None,)),
        Row(32, 2048, (None,)),
    ),
    note="#367's ragged sweep (seed 001): only the range 1.07-4.42x at q16 is printed, no cell.",
)

# gfx950: one cell, bs32/kv2048 at q16 = 0.59 (#367's sweep, seed 001 line 176). The other four
# shapes are not printed for gfx950 in either seed.
RAGGED_GFX950 = ABTable(
    arch="gfx950",
    layout="ragged",
    a="aiter",
    b="fa2",
    columns=RAGGED_COLUMNS,
    header=Quote(SEED_001, 175, "mha_varlen_fwd splits by architecture at q16"),
    rows=(
        Row(1, 1024, (None,)),  # not printed
        Row(1, 8192, (None,)),  # not printed
        Row(8, 1024, (None,)),  # not printed
        Row(8, 8192, (None,)),  # not printed
        Row(32, 2048, (0.59,), Quote(SEED_001, 176, "gfx950 runs bs32/kv2048 at 0.59")),
    ),
    note="#367's ragged sweep (seed 001), q16: only bs32/kv2048 printed for gfx950.",
)

# --- Column-level statements, as observations -------------------------------------------------

OBS_RAGGED_GFX942_Q16 = Observation(
    q_len=16,
    a_loses_every_cell=True,
    ratio_range=(1.18, 4.74),
    cells_stated=5,
    quote=Quote(SEED_000, 43, "All five measured shapes lose at 16 query tokens"),
)
# The range line of the same table: seed 000 line 48, "(five shapes, range)\t1.18–4.74×".

OBS_RAGGED_GFX942_Q24 = Observation(q_len=24, a_loses_every_cell=False, quote=Quote(SEED_000, 43, "first win at q24"))

OBS_RAGGED_GFX942_PR367_Q16 = Observation(
    q_len=16,
    a_loses_every_cell=True,
    ratio_range=(1.07, 4.42),
    cells_stated=5,
    quote=Quote(SEED_001, 175, "gfx942 loses 1.07-4.42x"),
)

OBS_RAGGED_GFX950_EVERY_Q = Observation(
    q_len=None,
    a_loses_every_cell=False,
    quote=Quote(SEED_000, 50, "gfx950 has a shape (bs32/kv2048) favouring AITER at every query length measured"),
)

TABLES: dict[str, ABTable] = {
    "paged-gfx942": PAGED_GFX942,
    "paged-gfx950": PAGED_GFX950,
    "ragged-gfx942": RAGGED_GFX942,
    "ragged-gfx942-pr367": RAGGED_GFX942_PR367,
    "ragged-gfx950": RAGGED_GFX950,
}

OBSERVATIONS: dict[str, tuple[Observation, ...]] = {
    "ragged-gfx942": (OBS_RAGGED_GFX942_Q16, OBS_RAGGED_GFX942_Q24),
    "ragged-gfx942-pr367": (OBS_RAGGED_GFX942_PR367_Q16,),
    "ragged-gfx950": (OBS_RAGGED_GFX950_EVERY_Q,),
}

# What the seeds concluded, for the tests to reproduce: {table: threshold}; None = never gate.
SEED_THRESHOLDS: dict[str, int | None] = {
    "paged-gfx942": 16,  # seed 001 line 166: "16 is the last column where AITER loses in every cell"
    "paged-gfx950": 16,  # same line: "on both architectures"
    "ragged-gfx942": 16,  # seed 000: _AITER_RAGGED_GATED_Q_LEN {"gfx942": 16, ...}
    "ragged-gfx950": None,  # seed 000: {..., "gfx950": None}, "a measured verdict, not a gap"
}
