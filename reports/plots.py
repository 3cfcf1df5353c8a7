"""The HTML report's plots, drawn by matplotlib as inline SVG: one self-contained page, no script.

Three pictures of the report's model (reports/combined.py), each a <figure> with a caption saying
what it shows (the tables beside them keep every number, so nothing depends on a plot):

* err/bound by backend and feature: every compared record, one colour per feature, the bound at 1;
* the worst err/bound against the longest request's KV length, one line per backend, log axes;
* for each A/B sweep: time(A)/time(B) against query length, one line per row with its bootstrap
  interval, each row's crossover and the recommended threshold q* marked.

matplotlib's SVG canvas is used directly (no pyplot, no global backend switch): text stays text
(`svg.fonttype` none), and every id in a figure is prefixed with the figure's id, so several SVGs
live in one page without clashing. Artists a test looks for carry a gid (`bound`, `threshold`, ...),
which the prefix makes `<figure id>-bound`.
"""

from __future__ import annotations

import html
import io
import math
import re
from typing import Any, Optional, Sequence

from matplotlib import rc_context
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from scenarios.case import FEATURES

# Colours and shapes are data: a feature keeps its colour from one report to the next.
FEATURE_COLORS = dict(
    zip(
        FEATURES,
        (
            "#1f77b4",
            "#ff7f0e",
            "#2ca02c",
            "#d62728",
            "#9467bd",
            "#8c564b",
            "#e377c2",
            "#b15928",
            "#bcbd22",
            "#17becf",
            "#393b79",
        ),
    )
)
OTHER_FEATURE = "#555555"
SERIES_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#393b79",
    "#b15928",
)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
BOUND_COLOR = "#000000"
THRESHOLD_COLOR = "#6a3d9a"
FLOOR = 1e-4  # err/bound below this (an exact match included) is drawn at it: a log axis has no 0
DEDUP_PER_DECADE = 50  # points of one group closer than 1/50 decade are drawn once
WIDTH_IN, HEIGHT_IN, LEGEND_IN = 10.0, 4.6, 2.6


def _svg(fig: Figure, prefix: str) -> str:
    """The figure as an <svg> element whose ids all begin with `prefix`."""
    buf = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": prefix}):
        FigureCanvasSVG(fig)  # the SVG canvas, explicitly: no interactive backend is ever loaded
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r'(\bid="|href="#|url\(#)', lambda m: m.group(1) + prefix + "-", text)
    return text.replace("<svg ", f'<svg role="img" aria-labelledby="{prefix}-cap" ', 1)


def _figure(fid: str, fig: Figure, caption: str) -> str:
    return (
        f'<figure class="plot" id="{fid}">{_svg(fig, fid)}'
        f'<figcaption id="{fid}-cap">{html.escape(caption)}</figcaption></figure>'
    )


def _new(bottom_in: float = 0.65) -> Any:
    """A figure with fixed margins (inches) and the legend's column at the right; no layout engine, which
    would measure every text before drawing."""
    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN))
    fig.subplots_adjust(
        left=1.1 / WIDTH_IN,
        right=1 - LEGEND_IN / WIDTH_IN,
        bottom=bottom_in / HEIGHT_IN,
        top=1 - 0.4 / HEIGHT_IN,
    )
    ax = fig.add_subplot()
    ax.patch.set_gid("plot-area")
    return fig, ax


def _clip(x: Any, top: float) -> float:
    """A model ratio on the plot's log axis: "inf" at the top row, below FLOOR at FLOOR."""
    if x == "inf":
        return top
    return max(float(x), FLOOR)


def _top(values: Sequence[Any]) -> float:
    """The axis's top decade: at least 10, and above every finite ratio; infinite ones are drawn a decade higher."""
    finite = [float(v) for v in values if v != "inf"]
    top = 10.0 ** math.ceil(math.log10(max([10.0, *finite])))
    return top * 10 if "inf" in values else top


def _ratio_axis(ax: Any, top: float, has_inf: bool) -> None:
    ax.set_yscale("log")
    ax.set_ylim(FLOOR / 2, top * 2)
    ticks = [10.0**e for e in range(round(math.log10(FLOOR)), round(math.log10(top)) + (0 if has_inf else 1))]
    labels = [f"≤{t:g}" if t == FLOOR else f"{t:g}" for t in ticks]
    if has_inf:
        ticks, labels = ticks + [top], labels + ["inf"]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_yticklabels(labels)


def _bound(ax: Any) -> None:
    ax.axhline(1.0, color=BOUND_COLOR, ls="--", lw=1.2, label="bound: err/bound = 1 (above it fails)", gid="bound")


def _label(item: dict[str, Any], archs: int) -> str:
    return item["backend"] if archs == 1 else f"{item['arch']} {item['backend']}"


def _spread(ys: list[float], width: float) -> list[float]:
    """Deterministic offsets in (-width/2, width/2) for a column of points (the golden-ratio sequence)."""
    return [((i * 0.6180339887) % 1.0 - 0.5) * width for i in range(len(ys))]


def _dedup(ys: list[float]) -> list[float]:
    seen: dict[int, float] = {}
    for y in ys:
        seen.setdefault(round(math.log10(y) * DEDUP_PER_DECADE), y)
    return list(seen.values())


def ratio_by_feature(parity: dict[str, Any], fid: str = "plot-ratio-by-feature") -> Optional[str]:
    """Strip plot: err/bound of every compared record, a column per backend, a colour per feature."""
    items = parity.get("by_feature") or []
    if not items:
        return None
    archs = len({i["arch"] for i in items})
    backends = list(dict.fromkeys(_label(i, archs) for i in sorted(items, key=lambda i: (i["arch"], i["backend"]))))
    features = [f for f in FEATURES if any(i["feature"] == f for i in items)]
    features += sorted({i["feature"] for i in items} - set(features))
    values = [v for i in items for v in i["ratios"]]
    top, has_inf = _top(values), "inf" in values
    fig, ax = _new(bottom_in=1.35)  # backend names, slanted
    slot = 0.8 / len(features)
    for k, f in enumerate(features):
        xs: list[float] = []
        ys: list[float] = []
        for i in items:
            if i["feature"] != f:
                continue
            col = _dedup([_clip(v, top) for v in i["ratios"]])
            centre = backends.index(_label(i, archs)) - 0.4 + slot * (k + 0.5)
            xs += [centre + d for d in _spread(col, slot * 0.8)]
            ys += col
        ax.scatter(xs, ys, s=14, color=FEATURE_COLORS.get(f, OTHER_FEATURE), label=f, gid=f"f-{f}", linewidths=0)
    _bound(ax)
    _ratio_axis(ax, top, has_inf)
    ax.set_xticks(range(len(backends)), backends, rotation=30, ha="right")
    ax.set_xlim(-0.6, len(backends) - 0.4)
    ax.set_xlabel("backend")
    ax.set_ylabel("error / bound (log)")
    ax.set_title("Error / bound of every compared case, by backend and feature")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="feature", title_fontsize=8)
    n = len(values)
    caption = (
        f"Each dot is one compared record's worst error over its bound (output and LSE), {n} dots in all (a record "
        "counts once under each feature its case has; dots closer than 1/50 of a decade are drawn once). Columns "
        "are backends, colours features; the dashed line is the bound: a dot above it failed. Exact matches and "
        f"anything below {FLOOR:g} sit on the bottom row"
        + ("; NaN, unwritten output or an infinity mismatch on the row marked inf." if has_inf else ".")
    )
    return _figure(fid, fig, caption)


def ratio_by_kv_len(parity: dict[str, Any], fid: str = "plot-ratio-by-kv") -> Optional[str]:
    """The worst err/bound per KV length (the longest request's), one line per backend, log axes."""
    items = parity.get("by_kv_len") or []
    series = [(i, [(k, w) for k, w in zip(i["kv_lens"], i["worst"]) if k > 0]) for i in items]
    series = [(i, pts) for i, pts in series if pts]
    if not series:
        return None
    archs = len({i["arch"] for i in items})
    no_keys = sum(1 for i in items for k in i["kv_lens"] if k == 0)
    values = [w for _, pts in series for _, w in pts]
    top, has_inf = _top(values), "inf" in values
    fig, ax = _new()
    for n, (i, pts) in enumerate(series):
        ax.plot(
            [k for k, _ in pts],
            [_clip(w, top) for _, w in pts],
            marker=MARKERS[n % len(MARKERS)],
            ms=5,
            lw=1.2,
            color=SERIES_COLORS[n % len(SERIES_COLORS)],
            label=_label(i, archs),
            gid=f"b-{n}",
        )
    _bound(ax)
    _ratio_axis(ax, top, has_inf)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("KV length of the case's longest request (log)")
    ax.set_ylabel("worst error / bound (log)")
    ax.set_title("Worst error / bound against KV length, by backend")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="backend", title_fontsize=8)
    caption = (
        "For each backend, the worst error over its bound among the compared records whose longest request has "
        "that many keys; the dashed line is the bound (above it fails). Values below "
        f"{FLOOR:g} sit on the bottom row."
        + (
            f" {no_keys} backend and length pairs with no keys at all are left out (a log axis has no 0)."
            if no_keys
            else ""
        )
    )
    return _figure(fid, fig, caption)


def _q(v: Optional[int]) -> str:
    return "None (never gate)" if v is None else str(v)


def timing_ratio(t: dict[str, Any], fid: str) -> Optional[str]:
    """time(A)/time(B) against query length, a line per row with its interval, crossovers and q* marked."""
    cols: list[int] = t["columns"]
    rows = [r for r in t["rows"] if any(c and c.get("ratio") for c in r["cells"])]
    if not rows or not cols:
        return None
    fig, ax = _new()
    ys_all: list[float] = []
    cross = {c["row"]: c["first_non_loss"] for c in t.get("crossovers", [])}
    for n, row in enumerate(rows):
        color = SERIES_COLORS[n % len(SERIES_COLORS)]
        pts = [(q, c) for q, c in zip(cols, row["cells"]) if c and c.get("ratio")]
        xs, ys = [q for q, _ in pts], [c["ratio"] for _, c in pts]
        ys_all += ys
        lo = [max(0.0, c["ratio"] - c["lo"]) if c.get("lo") is not None else 0.0 for _, c in pts]
        hi = [max(0.0, c["hi"] - c["ratio"]) if c.get("hi") is not None else 0.0 for _, c in pts]
        ys_all += [c["lo"] for _, c in pts if c.get("lo")] + [c["hi"] for _, c in pts if c.get("hi")]
        eb = ax.errorbar(xs, ys, yerr=[lo, hi], color=color, lw=1.3, capsize=3, label=row["label"], zorder=3)
        eb.lines[0].set_gid(f"row-{n}")
        for bars in eb.lines[2]:
            bars.set_gid(f"interval-{n}")
        sig = [(q, c["ratio"]) for q, c in pts if c.get("significant")]
        faint = [(q, c["ratio"]) for q, c in pts if not c.get("significant")]
        if sig:
            ax.plot(*zip(*sig), ls="none", marker="o", ms=5, color=color, zorder=4)
        if faint:  # the interval holds 1: read as a tie by the recommendation
            ax.plot(*zip(*faint), ls="none", marker="o", ms=7, mfc="white", mec=color, mew=1.5, zorder=4)
        at = cross.get(row["label"])
        if at is not None and at in xs:
            ax.plot(
                [at],
                [ys[xs.index(at)]],
                ls="none",
                marker="o",
                ms=14,
                mfc="none",
                mec=color,
                mew=2,
                zorder=5,
                gid=f"cross-{n}",
            )
    ax.axhline(1.0, color="#777777", lw=1, zorder=1)
    q_star = t.get("threshold")
    if t.get("derived") and q_star is not None:
        ax.axvspan(min(cols) / 1.6, q_star, color=THRESHOLD_COLOR, alpha=0.10, lw=0, zorder=0)
        ax.axvline(q_star, color=THRESHOLD_COLOR, ls="--", lw=2, zorder=2, gid="threshold")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(cols))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(q) for q in cols])
    ax.set_xlim(min(cols) / 1.6, max(cols) * 1.6)
    ax.set_yscale("log")
    lo_y, hi_y = min([*ys_all, 1.0]), max([*ys_all, 1.0])
    ax.set_ylim(lo_y / 1.3, hi_y * 1.3)
    halvings = [2.0**k for k in range(math.floor(math.log2(lo_y / 1.3)) + 1, math.ceil(math.log2(hi_y * 1.3)))]
    ax.yaxis.set_major_locator(FixedLocator(halvings))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_yticklabels([f"{y:g}" for y in halvings])
    ax.set_xlabel("query length q (log)")
    ax.set_ylabel(f"time({t['a']}) / time({t['b']}) (log)")
    ax.set_title(f"{t['arch']} {t['layout']}: time({t['a']}) / time({t['b']}) against query length, per row")
    handles, _ = ax.get_legend_handles_labels()
    extra = [
        Line2D([], [], ls="none", marker="o", ms=7, mfc="white", mec="#444444", label="interval holds 1 (a tie)"),
        Line2D(
            [], [], ls="none", marker="o", ms=12, mfc="none", mec="#444444", mew=2, label="crossover: A stops losing"
        ),
    ]
    if t.get("derived") and q_star is not None:
        extra.append(
            Line2D([], [], color=THRESHOLD_COLOR, ls="--", lw=2, label=f"q* = {q_star}: route q ≤ q* to {t['b']}")
        )
    ax.legend(handles=[*handles, *extra], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="row")
    gate = (
        f"No threshold: {t['threshold_reason']}"
        if not t.get("derived")
        else f"Recommended q* = {_q(q_star)}"
        + ("" if q_star is None else f" (dashed line: q ≤ {q_star} goes to {t['b']})")
    )
    caption = (
        f"time({t['a']}) / time({t['b']}) against query length on {t['arch']} {t['layout']}, one line per row "
        "(batch and KV length): the median of paired ratios with its bootstrap interval as error bars; above 1 "
        f"{t['a']} is slower. A hollow dot's interval holds 1 (no measured difference); a large ring marks the "
        f"row's crossover, the first column where {t['a']} stops losing. {gate}."
    )
    return _figure(fid, fig, caption)
