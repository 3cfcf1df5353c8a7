"""The HTML report's plots: what they draw (the model), how (the SVG's geometry), and how a browser shows them.

One real report is rendered through `attncheck report` from a small parity run (two backends, one failing
case) and an A/B sweep whose ratios are the seed's gfx942 paged table (routing/ab_tables.py), one cell made
noisy so its interval holds 1. The page is then read three ways: report.json, the SVG text, and headless
Chromium's rendering (element boxes from the DOM and the screenshot's pixels).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conformance import cli
from conformance.parity_run import HARNESS_VERSION
from reports.plots import BOUND_COLOR, FEATURE_COLORS, SERIES_COLORS, THRESHOLD_COLOR
from reports.records import ParityRecord, RunFooter, RunHeader, TimingRecord, to_line
from routing.ab_tables import PAGED_GFX942
from scenarios.case import Case

BASE = {
    "layout": "ragged",
    "num_qo_heads": 4,
    "num_kv_heads": 2,
    "head_dim_qk": 16,
    "head_dim_vo": 16,
    "causal": True,
    "q_dtype": "fp32",
    "kv_dtype": "fp32",
    "o_dtype": "fp32",
}
# backend, features, kv_lens, max error, bound: the window case fails (5x its bound; its error alone, 0.05,
# is below 1), and its longest request (256) is not its first.
PARITY = (
    ("math", ["causal"], [64], 0.0002, 0.01),
    ("math", ["causal"], [1024, 64], 0.002, 0.01),
    ("math", ["window"], [16, 256], 0.05, 0.01),
    ("flex", ["causal", "gqa"], [64], 0.001, 0.01),
    ("flex", ["plain"], [4096], 0.004, 0.01),
    ("flex", ["zero_len"], [0], 0.0, 0.01),
)
NOISE = (0.99, 1.01, 1.0, 0.995, 1.005, 0.99, 1.01, 1.0)  # tight: every seed cell's interval excludes 1
NOISY_CELL = (32, 2048, 32)  # batch, kv, q: paired ratios so spread that the interval holds 1
NOISY = (0.8, 1.3, 0.9, 1.25, 1.02, 1.1, 0.85, 1.2)
SVG = "{http://www.w3.org/2000/svg}"


def _out(err: float, bound: float) -> dict[str, Any]:
    return {
        "max_abs": err,
        "bound": bound,
        "nan_count": 0,
        "unwritten_count": 0,
        "inf_mismatch_count": 0,
        "passed": err <= bound,
        "worst_index": None,
        "max_rel": 0.0,
    }


def _header(run_id: str, arch: str) -> RunHeader:
    return RunHeader(
        run_id=run_id,
        target="torch",
        device="cuda",
        budget="quick",
        seed=0,
        versions={"torch": "2.13.0"},
        argv=[],
        started="t",
        harness_version=HARNESS_VERSION,
        arch=arch,
    )


def _parity_run(path: Path) -> Path:
    recs: list[Any] = [_header("p", "sm90")]
    for backend, features, kv, err, bound in PARITY:
        case = Case.from_json(dict(BASE, qo_lens=[1] * len(kv), kv_lens=kv, causal=False)).to_json()
        recs.append(
            ParityRecord(
                run_id="p",
                target="torch",
                backend=backend,
                device="cuda",
                case_id=f"{backend}-{kv}",
                case=case,
                seed=0,
                status="pass" if err <= bound else "fail",
                out=_out(err, bound),
                features=features,
            )
        )
    recs.append(RunFooter(run_id="p", counts={}, elapsed_s=1.0, exit_status=1))
    path.write_text("".join(to_line(r) + "\n" for r in recs))
    return path


def _sweep_run(path: Path) -> Path:
    t = PAGED_GFX942
    recs: list[Any] = [_header("s", t.arch)]
    for row in t.rows:
        for q, ratio in zip(t.columns, row.cells):
            assert ratio is not None
            a = NOISY if (row.batch, row.kv_len, q) == NOISY_CELL else tuple(ratio * n for n in NOISE)
            recs.append(
                TimingRecord(
                    run_id="s",
                    target="flashinfer",
                    device="cuda",
                    arch=t.arch,
                    config_id=f"{t.layout}/bs{row.batch}/kv{row.kv_len}/q{q}",
                    layout=t.layout,
                    batch=row.batch,
                    kv_len=row.kv_len,
                    q_len=q,
                    case={},
                    backends=[t.a, t.b],
                    samples={t.a: [1e-3 * x for x in a], t.b: [1e-3] * len(a)},
                    timer="cuda-events",
                )
            )
    recs.append(RunFooter(run_id="s", counts={}, elapsed_s=1.0, exit_status=0))
    path.write_text("".join(to_line(r) + "\n" for r in recs))
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """report.html and report.json of the parity run and the sweep, through `attncheck report`."""
    d = tmp_path_factory.mktemp("plots")
    runs = [str(_parity_run(d / "parity.jsonl")), str(_sweep_run(d / "sweep.jsonl"))]
    assert cli.main(["report", *runs, "--out", str(d / "rep")]) == 0
    return d / "rep"


def _svgs(page: str) -> dict[str, ET.Element]:
    """Each <figure class="plot">'s SVG, parsed, by the figure's id."""
    out = {}
    for fid, svg in re.findall(r'<figure class="plot" id="([^"]+)">(<svg.*?</svg>)', page, flags=re.S):
        out[fid] = ET.fromstring(svg)
    return out


def _by_id(svg: ET.Element, ident: str) -> ET.Element:
    found = [e for e in svg.iter() if e.get("id") == ident]
    assert len(found) == 1, ident
    return found[0]


def _segments(group: ET.Element) -> list[tuple[float, float, float, float]]:
    """Every straight path `M x1 y1 L x2 y2` under a group, in document order."""
    out = []
    for p in group.iter(SVG + "path"):
        nums = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", p.get("d", ""))]
        if len(nums) == 4:
            out.append((nums[0], nums[1], nums[2], nums[3]))
    return out


def test_the_model_holds_each_records_err_over_bound_and_its_longest_kv_length(
    report: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report.json is what the plots draw: err/bound (not err) per backend and feature, the worst per
    longest-request KV length."""
    capsys.readouterr()
    parity = json.loads((report / "report.json").read_text())["parity"]
    by_feature = {(i["backend"], i["feature"]): i["ratios"] for i in parity["by_feature"]}
    assert by_feature == {
        ("torch/math", "causal"): [0.02, 0.2],
        ("torch/math", "window"): [5.0],
        ("torch/flex", "causal"): [0.1],
        ("torch/flex", "gqa"): [0.1],
        ("torch/flex", "plain"): [0.4],
        ("torch/flex", "zero_len"): [0.0],
    }
    by_kv = {i["backend"]: dict(zip(i["kv_lens"], i["worst"])) for i in parity["by_kv_len"]}
    assert by_kv == {"torch/math": {64: 0.02, 256: 5.0, 1024: 0.2}, "torch/flex": {0: 0.0, 64: 0.1, 4096: 0.4}}


def test_every_plot_is_inline_svg_with_a_title_axes_a_legend_and_a_caption(report: Path) -> None:
    page = (report / "report.html").read_text()
    svgs = _svgs(page)
    assert list(svgs) == ["plot-ratio-by-feature", "plot-ratio-by-kv", "plot-timing-0"]
    titles = {
        "plot-ratio-by-feature": ("Error / bound of every compared case", "backend", "error / bound (log)"),
        "plot-ratio-by-kv": ("Worst error / bound against KV length", "KV length", "worst error / bound (log)"),
        "plot-timing-0": ("gfx942 paged: time(aiter) / time(fa2) against query length", "query length", "time(aiter)"),
    }
    for fid, svg in svgs.items():
        text = " ".join("".join(t.itertext()) for t in svg.iter(SVG + "text"))
        assert all(words in text for words in titles[fid]), (fid, text)
        assert any((e.get("id") or "").startswith(f"{fid}-legend") for e in svg.iter()), fid
        assert svg.get("role") == "img" and svg.get("aria-labelledby") == f"{fid}-cap"
        cap = re.search(rf'<figcaption id="{fid}-cap">([^<]+)</figcaption>', page)
        assert cap and len(cap.group(1)) > 80, fid
    assert "route q ≤ q* to fa2" in "".join(svgs["plot-timing-0"].itertext())
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "ids repeat across the page's SVGs"
    assert not re.search(r"<script|<img|<link|\b(?:src|href)=\"(?!#)|url\((?!#)", page)


def test_the_threshold_sits_on_q_star_and_every_cell_carries_its_interval(report: Path) -> None:
    """In the SVG's coordinates: the q* line runs through the tick labelled 16 (the seed's threshold), and
    each row's error bars span its cells' intervals: the noisy cell's bar is long, the others short."""
    model = json.loads((report / "report.json").read_text())["timing"][0]
    assert model["threshold"] == 16
    svg = _svgs((report / "report.html").read_text())["plot-timing-0"]
    ticks = {}
    for g in svg.iter(SVG + "g"):
        if re.fullmatch(r"plot-timing-0-xtick_\d+", g.get("id", "")):
            label = "".join("".join(t.itertext()) for t in g.iter(SVG + "text")).strip()
            ticks[label] = float(next(u for u in g.iter(SVG + "use")).get("x", "nan"))
    assert list(ticks) == [str(q) for q in PAGED_GFX942.columns]
    ((x1, _, x2, _),) = _segments(_by_id(svg, "plot-timing-0-threshold"))
    assert x1 == pytest.approx(x2) and x1 == pytest.approx(ticks["16"], abs=0.5)
    for n, row in enumerate(PAGED_GFX942.rows):
        bars = _segments(_by_id(svg, f"plot-timing-0-interval-{n}"))
        assert [b[0] for b in bars] == pytest.approx([ticks[str(q)] for q in PAGED_GFX942.columns], abs=0.5)
        for q, (_, y1, _, y2) in zip(PAGED_GFX942.columns, bars):
            wide = (row.batch, row.kv_len, q) == NOISY_CELL
            assert (abs(y1 - y2) > 20) if wide else (abs(y1 - y2) < 8), (row.label, q, y1, y2)


# ---- the rendered page -------------------------------------------------------------------------------------


def _near(img: Any, box: dict[str, float], color: str, pad: int = 0) -> int:
    """Pixels of a colour inside a box (CSS pixels of the screenshot, widened by `pad` each side: a line's box
    is flat). Thin lines are blended with the white page, so a pixel counts when it lies on the way from white
    to the colour, at least half way."""
    import numpy as np

    x0, y0 = max(0, int(box["x"]) - pad), max(0, int(box["y"]) - pad)
    crop = img[y0 : int(box["y"] + box["height"]) + pad + 1, x0 : int(box["x"] + box["width"]) + pad + 1]
    white = np.array([255.0, 255.0, 255.0])
    ink = np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)]) - white
    d = crop.astype(float) - white
    t = d @ ink / (ink @ ink)  # how far along white -> colour
    off = np.linalg.norm(d - t[..., None] * ink, axis=-1)  # how far off that way
    return int(((t >= 0.5) & (t <= 1.2) & (off <= 30)).sum())


def _blank(img: Any, box: dict[str, float]) -> int:
    """White pixels inside a box."""
    crop = img[int(box["y"]) : int(box["y"] + box["height"]), int(box["x"]) : int(box["x"] + box["width"])]
    return int((crop.min(axis=-1) >= 250).sum())


BOXES_JS = """JSON.stringify((() => {
  const box = e => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; };
  const out = {figures: {}, marks: {}, ticks: {}};
  for (const f of document.querySelectorAll('figure.plot')) out.figures[f.id] = box(f.querySelector('svg'));
  const marked = '[id$="-plot-area"], [id$="-bound"], [id$="-threshold"], [id*="-f-"], [id*="-cross-"]';
  for (const e of document.querySelectorAll(marked))
    out.marks[e.id] = [...e.querySelectorAll('path, use')].map(box);
  for (const g of document.querySelectorAll('[id^="plot-timing-0-xtick_"]')) out.ticks[g.textContent.trim()] = box(g);
  return out;
})())"""


def test_the_rendered_page_shows_every_plot_with_its_marks_where_the_numbers_put_them(report: Path) -> None:
    """Headless Chromium renders the page: inside each plot's axes the data are drawn in their colours (not
    only a frame, a legend and text), the failing case's dots sit above the bound line and the passing ones
    below it, and the q* line is drawn, in its colour, straight above the tick labelled 16."""
    from headless_page import INSTALL, Page, chromium

    if chromium() is None:
        pytest.skip(f"needs Debian's chromium: {INSTALL}")
    with Page((report / "report.html").resolve().as_uri()) as page:
        got = json.loads(page.evaluate(BOXES_JS))
        img = page.screenshot()
    figs, marks = got["figures"], got["marks"]
    assert list(figs) == ["plot-ratio-by-feature", "plot-ratio-by-kv", "plot-timing-0"]
    inks = {
        "plot-ratio-by-feature": [FEATURE_COLORS[f] for f in ("causal", "window", "gqa", "plain", "zero_len")],
        "plot-ratio-by-kv": list(SERIES_COLORS[:2]),
        "plot-timing-0": list(SERIES_COLORS[: len(PAGED_GFX942.rows)]),
    }
    for fid, box in figs.items():
        assert box["width"] > 600 and box["height"] > 250, (fid, box)
        area = int(box["width"]) * int(box["height"])
        assert 0.02 * area < area - _blank(img, box) < 0.6 * area, fid
        (inside,) = [b for b in marks[f"{fid}-plot-area"] if b["width"]]
        for color in inks[fid]:
            assert _near(img, inside, color) > 10, (fid, color)
    (bound,) = marks["plot-ratio-by-feature-bound"]
    line_y = bound["y"] + bound["height"] / 2
    assert _near(img, bound, BOUND_COLOR, pad=2) > 0.3 * bound["width"]

    def centres(gid: str) -> list[float]:
        return [b["y"] + b["height"] / 2 for b in marks[gid] if b["width"] and b["height"]]

    above = centres("plot-ratio-by-feature-f-window")
    below = centres("plot-ratio-by-feature-f-causal") + centres("plot-ratio-by-feature-f-plain")
    assert len(above) == 1 and len(below) == 4 and above[0] < line_y < min(below)
    (q_star,) = marks["plot-timing-0-threshold"]
    tick = got["ticks"]["16"]
    assert abs((q_star["x"] + q_star["width"] / 2) - (tick["x"] + tick["width"] / 2)) < 2, (q_star, tick)
    assert q_star["height"] > 200 and _near(img, q_star, THRESHOLD_COLOR, pad=2) > 0.3 * q_star["height"]
    rings = [k for k in marks if k.startswith("plot-timing-0-cross-")]
    assert len(rings) == len(PAGED_GFX942.rows)  # every row of the seed's table crosses inside its columns
