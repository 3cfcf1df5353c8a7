"""A/B tables from timing records: intervals per cell, and a threshold only where the intervals support it."""

from __future__ import annotations

from reports import timing
from reports.records import TimingRecord

B = [1.0] * 8
TIGHT = {1.5: [1.5] * 8, 1.3: [1.3] * 8, 0.7: [0.7] * 8}
NOISY = [0.8, 1.6, 0.9, 1.5, 1.2, 1.2, 0.85, 1.55]  # median ratio 1.2, interval reaching below 1


def _rec(bs: int, kv: int, q: int, a: list[float], status: str = "ok") -> TimingRecord:
    return TimingRecord(
        run_id="r",
        target="flashinfer",
        device="cuda",
        arch="sm90",
        config_id=f"paged/bs{bs}/kv{kv}/q{q}",
        layout="paged",
        batch=bs,
        kv_len=kv,
        q_len=q,
        case={},
        backends=["fa2", "fa3"],
        samples={"fa2": a, "fa3": B} if status == "ok" else {},
        status=status,
        reason="" if status == "ok" else "fa3: backend does not serve this layout",
    )


RECS = [
    _rec(1, 1024, 16, TIGHT[1.5]),
    _rec(8, 1024, 16, TIGHT[1.5]),
    _rec(1, 1024, 32, TIGHT[1.3]),
    _rec(8, 1024, 32, NOISY),
    _rec(1, 1024, 64, TIGHT[0.7]),
    _rec(8, 1024, 64, [], status="skip"),
]


def test_a_cell_whose_interval_holds_1_stops_the_threshold() -> None:
    """Point estimates alone would gate through q32; the noisy q32 cell cannot tell, so q* is 16."""
    [ab] = timing.tables(RECS)
    assert (ab.arch, ab.layout, ab.a, ab.b) == ("sm90", "paged", "fa2", "fa3")
    rec = timing.recommend(ab)
    assert rec.recommended is not None and rec.point is not None
    assert rec.recommended.threshold == 16 and rec.point.threshold == 32
    assert not ab.cells[(8, 1024, 32)].significant and ab.cells[(1, 1024, 32)].significant
    md = timing.render_markdown(ab)
    assert "| sm90 | **q16** (q*) | q32 | q64 |" in md
    assert "1.20 [" in md and "]\\*" in md and "–†" in md
    assert "q* = 16: routing row `{'sm90': 16}`" in md and "From point estimates alone q* would be 32" in md
    j = timing.to_json(ab)
    assert (
        j["threshold"] == 16
        and j["threshold_point"] == 32
        and j["rows"][1]["cells"][2] == {"unmeasured": "skip: fa3: backend does not serve this layout"}
    )


def test_no_data_gives_no_threshold_and_says_why() -> None:
    [ab] = timing.tables([_rec(1, 1024, 16, [], status="skip")])
    rec = timing.recommend(ab)
    assert rec.recommended is None and "no threshold" in rec.problem
    assert "- No threshold: " in timing.render_markdown(ab)


def test_too_few_repetitions_leave_the_interval_open_and_the_json_strict() -> None:
    """Two pairs cannot bound a ratio: the interval is (0, inf), written as null, never as Infinity."""
    import json

    [ab] = timing.tables([_two_sample_record()])
    cell = timing.to_json(ab)["rows"][0]["cells"][0]
    assert cell["hi"] is None and cell["significant"] is False
    json.dumps(timing.to_json(ab), allow_nan=False)


def _two_sample_record() -> TimingRecord:
    rec = _rec(1, 1024, 16, [1.5, 1.5])
    rec.samples = {"fa2": [1.5, 1.5], "fa3": [1.0, 1.0]}
    return rec
