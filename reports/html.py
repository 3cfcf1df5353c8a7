"""The report as one self-contained HTML page: inline CSS, no script, no external file.

Renders the model of reports/combined.py (the same data as report.json and report.md), so the
page can be attached to a CI run or opened from disk anywhere. Heatmaps: parity cells are coloured
by worst error/bound (green far inside the bound, amber near it, red at or beyond it); timing
cells by time(A)/time(B) on a log scale (red: A slower, blue: A faster), pale grey where the
interval contains 1. Every coloured cell also prints its number, so nothing depends on colour.
Plots (reports/plots.py, inline SVG): err/bound by backend and feature and against KV length under
the parity table, and each A/B sweep's ratio against query length under its table.
"""

from __future__ import annotations

import html
import math
from typing import Any, Iterable, Optional

from reports import plots
from reports.records import STATUSES, versions_text
from reports.stats import LEVEL

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}td.na{background:#f2f2f2;color:#999}
.legend span{display:inline-block;padding:2px 8px;margin-right:4px;border:1px solid #ccc}
.bad{color:#b00020;font-weight:600}.ok{color:#1a7f37;font-weight:600}code{background:#f6f8fa;padding:1px 4px}
ul.fail li{font-family:ui-monospace,monospace;font-size:12px}
figure.plot{margin:12px 0 24px}figure.plot svg{max-width:100%;height:auto;display:block}
figcaption{font-size:13px;color:#444;max-width:960px}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _mix(c1: tuple[int, int, int], c2: tuple[int, int, int], t: float) -> str:
    t = min(1.0, max(0.0, t))
    return "#%02x%02x%02x" % tuple(round(a + (b - a) * t) for a, b in zip(c1, c2))


GREEN, AMBER, ORANGE, RED, BLUE, WHITE = (
    (26, 152, 80),
    (254, 224, 139),
    (252, 141, 89),
    (215, 48, 39),
    (69, 117, 180),
    (255, 255, 255),
)


def parity_color(ratio: Any) -> Optional[str]:
    """Background for a worst error/bound cell; None where nothing was compared."""
    if ratio is None:
        return None
    r = math.inf if ratio == "inf" else float(ratio)
    if r >= 1.0:
        return _mix(WHITE, RED, 1.0)
    return _mix(GREEN, AMBER, r / 0.5) if r < 0.5 else _mix(AMBER, ORANGE, (r - 0.5) / 0.5)


def timing_color(ratio: float, significant: bool) -> str:
    """Background for time(A)/time(B): log scale, saturated at 4x either way; pale when not significant."""
    if not significant or not math.isfinite(ratio) or ratio <= 0:
        return "#eeeeee"
    t = min(1.0, abs(math.log2(ratio)) / 2.0)
    return _mix(WHITE, RED if ratio > 1 else BLUE, 0.15 + 0.85 * t)


def _f(x: Optional[float]) -> str:
    return "?" if x is None else f"{x:.2f}"


def _cell(text: str, color: Optional[str], title: str = "") -> str:
    if color is None:
        return f'<td class="na" title="{_e(title)}">{_e(text)}</td>'
    return f'<td style="background:{color}" title="{_e(title)}">{_e(text)}</td>'


def _table(head: Iterable[str], rows: Iterable[str], left: int = 1) -> str:
    hs = "".join(f'<th class="l">{_e(h)}</th>' if i < left else f"<th>{_e(h)}</th>" for i, h in enumerate(head))
    return f"<table><tr>{hs}</tr>{''.join(rows)}</table>"


def _plain_row(values: Iterable[Any], left: int = 1) -> str:
    return (
        "<tr>"
        + "".join(f'<td class="l">{_e(v)}</td>' if i < left else f"<td>{_e(v)}</td>" for i, v in enumerate(values))
        + "</tr>"
    )


def _parity(p: dict[str, Any]) -> str:
    feats = p["features"]
    rows = []
    for r in p["rows"]:
        cells = []
        for f in feats:
            v = r["cells"].get(f)
            cells.append(
                _cell(
                    "-" if v is None else (v if isinstance(v, str) else f"{v:.2f}"),
                    parity_color(v),
                    f"{r['arch']} {r['backend']} {r['dtype']} {f}",
                )
            )
        rows.append(
            f'<tr><td class="l">{_e(r["arch"])}</td><td class="l">{_e(r["backend"])}</td>'
            f'<td class="l">{_e(r["dtype"])}</td>{"".join(cells)}</tr>'
        )
    legend = (
        '<p class="legend">'
        + "".join(
            f'<span style="background:{parity_color(v)}">{t}</span>'
            for v, t in ((0.0, "0"), (0.5, "0.5"), (0.9, "0.9"), (1.0, "&ge; 1"))
        )
        + " worst error / bound (below 1 holds)</p>"
    )
    return legend + _table(["arch", "backend", "dtype", *feats], rows, left=3)


def _timing(t: dict[str, Any]) -> str:
    rows = []
    for row in t["rows"]:
        cells = []
        for q, c in zip(t["columns"], row["cells"]):
            if c is None or "ratio" not in c:
                cells.append(_cell("–", None, c["unmeasured"] if c else "not measured"))
                continue
            text = f"{_f(c['ratio'])} [{_f(c['lo'])}, {_f(c['hi'])}]"
            cells.append(
                _cell(text, timing_color(c["ratio"] or math.nan, c["significant"]), f"{row['label']}/q{q}, n={c['n']}")
            )
        rows.append(f'<tr><td class="l">{_e(row["label"])}</td>{"".join(cells)}</tr>')
    q = t["threshold"]
    gate = (
        ("no threshold: " + t["threshold_reason"])
        if not t["derived"]
        else (f"recommended q* = {'None (never gate)' if q is None else q}; {t['threshold_reason']}")
    )
    return (
        f"<h3>{_e(t['arch'])} {_e(t['layout'])}: time({_e(t['a'])}) / time({_e(t['b'])})</h3>"
        + _table([t["arch"], *(f"q{c}" for c in t["columns"])], rows)
        + f"<p>{_e(gate)}</p>"
    )


def _routing(r: dict[str, Any]) -> str:
    if "error" in r or "unmodelled" in r:
        why = r.get("error") or r["unmodelled"]
        return f'<h3>{_e(r["spec"])} at {_e(r["arch"])}: <span class="bad">not checked</span></h3><p>{_e(why)}</p>'
    ok = '<span class="ok">holds</span>' if r["ok"] else '<span class="bad">fails</span>'
    rows = [
        _plain_row([x["rule"], x["expects"], x["observations"], x["passed"], x["failed"]], left=2) for x in r["rows"]
    ]
    unreached = ", ".join(r["unreached"]) or "none"
    bad = "".join(
        f"<li>{_e(v['backend'])} {_e(v['case_id'])}: expected {_e(v['expected'])}, observed "
        f"{_e(v['observed'])} ({_e(v['verdict'])})</li>"
        for v in r["unexplained"]
    )
    return (
        f"<h3>{_e(r['spec'])} at {_e(r['arch'])}: {ok}</h3>"
        + _table(["rule", "expects", "observations", "passed", "failed"], rows, left=2)
        + f"<p>Rows never reached: {_e(unreached)}</p>"
        + (f'<ul class="fail">{bad}</ul>' if bad else "")
    )


def render_html(model: dict[str, Any], title: str = "attncheck report") -> str:
    parts = [f"<h1>{_e(title)}</h1>"]
    if model["incomplete"]:
        parts.append(f'<p class="bad"><b>Incomplete results</b>: {_e("; ".join(model["incomplete"]))}</p>')
    parts.append("<ul>")
    for r in model["runs"]:
        if not r.get("header", True):
            parts.append(f"<li>records without a run header in {_e(r['path'])}</li>")
            continue
        vers = versions_text(r["versions"])
        parts.append(
            f"<li><code>{_e(r['arch'])}</code> {_e(r['target'])} on {_e(r['device'])}, {_e(r['budget'])}, "
            f"run <code>{_e(r['run_id'])}</code>"
            + ("" if r["finished"] else ' <span class="bad">did not finish</span>')
            + (f' <span class="bad">stand-in {_e(r["standin"])}</span>' if r["standin"] else "")
            + f"; {_e(vers)}</li>"
        )
    parts.append("</ul>")
    if model["parity"]["rows"]:
        parts += ['<h2 id="parity">Parity: worst error / bound</h2>', _parity(model["parity"])]
        parts += [p for p in (plots.ratio_by_feature(model["parity"]), plots.ratio_by_kv_len(model["parity"])) if p]
    if model["outcomes"]:
        parts += [
            '<h2 id="outcomes">Outcomes</h2>',
            _table(
                ["arch", "backend", *STATUSES],
                [_plain_row([o["arch"], o["backend"], *(o[s] for s in STATUSES)], 2) for o in model["outcomes"]],
                left=2,
            ),
        ]
    fl = model["failures"]
    parts.append(f'<h2 id="failures">Failures ({len(fl)})</h2>')
    parts.append(
        '<ul class="fail">'
        + "".join(
            f"<li>{_e(f['arch'])} "
            + ('<span class="bad">crash</span> ' if f["crash"] else "")
            + f"{_e(f['line'])}</li>"
            for f in fl
        )
        + "</ul>"
        if fl
        else "<p>None.</p>"
    )
    if model["skips"]:
        parts += [
            '<h2 id="skips">Skips and refusals by reason</h2>',
            _table(
                ["arch", "status", "backend", "reason", "count"],
                [
                    _plain_row([s["arch"], s["status"], s["backend"], s["reason"], s["count"]], 4)
                    for s in model["skips"]
                ],
                left=4,
            ),
        ]
    if model["routing"]:
        parts += ['<h2 id="routing">Routing: expected against observed</h2>', *(_routing(r) for r in model["routing"])]
    if model["timing"]:
        parts += [
            '<h2 id="timing">Timing: A/B ratio tables</h2>',
            '<p class="legend"><span style="background:%s">A slower</span><span style="background:%s">A faster'
            '</span><span style="background:#eeeeee">no measured difference</span> median of paired ratios '
            "[%.0f%% interval]</p>" % (timing_color(2.0, True), timing_color(0.5, True), 100 * LEVEL),
            *(_timing(t) + (plots.timing_ratio(t, f"plot-timing-{n}") or "") for n, t in enumerate(model["timing"])),
        ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )
