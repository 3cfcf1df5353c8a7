#!/usr/bin/env python3
"""Draw scripts/precision_baseline.py's summary as an SVG strip chart, with no plotting library.

    python scripts/plot_precision_baseline.py SUMMARY.json OUT.svg

One row per group (honest backends first, then each precision fault), one dot per compared
quantity (output or LSE of a record), err/bound on a log axis from 1e-3 to 1e3 (beyond: drawn at
the edge); the line at 1 is the bound. Honest dots are blue, faults' red, records the ledger
explains grey. The same data is in the summary's "points".
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

LO, HI = -3.0, 3.0  # log10 of the axis ends
ROW, LEFT, WIDTH, TOP = 22, 260, 640, 40


def _x(r: float) -> float:
    lg = LO if r <= 0 else HI if not math.isfinite(r) else max(LO, min(HI, math.log10(r)))
    return LEFT + (lg - LO) / (HI - LO) * WIDTH


def write_svg(summary: dict[str, Any], path: str) -> None:
    pts = summary["points"]
    rows: list[str] = []
    for p in pts:
        if p["group"] not in rows:
            rows.append(p["group"])
    rows.sort(key=lambda g: (g.startswith("fault:"), g))
    height = TOP + ROW * len(rows) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 40}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        f'<text x="{LEFT}" y="20">err / bound ({summary["device"]}, {summary["budget"]} matrix; '
        f"faults: {summary['faults_budget']}); the bound is 1</text>",
    ]
    for k in range(int(LO), int(HI) + 1):
        x = _x(10.0**k)
        stroke = "#000" if k == 0 else "#ccc"
        out.append(f'<line x1="{x:.1f}" y1="{TOP - 8}" x2="{x:.1f}" y2="{height - 30}" stroke="{stroke}"/>')
        out.append(f'<text x="{x:.1f}" y="{height - 14}" text-anchor="middle">1e{k}</text>')
    for i, g in enumerate(rows):
        y = TOP + ROW * i + ROW / 2
        out.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{g}</text>')
        for p in pts:
            if p["group"] != g:
                continue
            r = float(p["ratio"])
            colour = "#999" if p["known"] else "#c22" if g.startswith("fault:") and g != "fault:honest" else "#25b"
            dy = -4 if p["quantity"] == "out" else 4
            out.append(f'<circle cx="{_x(r):.1f}" cy="{y + dy:.1f}" r="2.2" fill="{colour}" fill-opacity="0.6"/>')
    out.append("</svg>")
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: plot_precision_baseline.py SUMMARY.json OUT.svg", file=sys.stderr)
        sys.exit(2)
    with open(sys.argv[1]) as fh:
        write_svg(json.load(fh), sys.argv[2])
