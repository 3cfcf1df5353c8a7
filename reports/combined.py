"""One report from the runs of several runners: parity, routing and timing, as JSON and markdown.

`build(runs)` makes the report's model, a JSON-able dict (report.json); the markdown here and the
HTML page (reports/html.py) are renderings of it, so the three never disagree. Sections:

* runs: one line per run (target, device, architecture, versions, finished or not);
* parity: worst error/bound per architecture x target/backend x dtype x feature (< 1 holds), and
  what the page plots: every compared record's err/bound by backend and feature, the worst per KV
  length; outcomes per backend, failures (crashes and ledger entries named), skips by reason;
* routing: each run's `auto` records against the routing spec of its target, architecture and library
  version (conformance/route_records.py, checked by the caller): rows observed, passed, failed, rows never
  reached; a version without rows is said to be unmodelled, not checked;
* timing: each A/B sweep as a ratio table with intervals, crossover and threshold (reports/timing.py).

The markdown keeps to what a pull-request comment holds: long lists are cut, and say so.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any, Optional, Sequence

from tabulate import tabulate

from kernels import skips
from reports import timing
from reports.merge import Run, records_of
from reports.parity import failure_line, ratios_by_feature, worst_by_kv_len, worst_cells
from reports.records import STATUSES, ParityRecord, is_crash, versions_text

MAX_LINES = 40  # failures listed in the markdown; report.json has them all


def _num(x: Optional[float]) -> Any:
    """JSON has no infinity: an infinite ratio (NaN, unwritten output, inf mismatch) is "inf"."""
    return None if x is None else ("inf" if math.isinf(x) else x)


def _run_line(run: Run) -> dict[str, Any]:
    h = run.header
    if h is None:
        return {"run_id": run.run_id, "path": run.path, "header": False}
    return {
        "run_id": h.run_id,
        "target": h.target,
        "device": h.device,
        "arch": run.arch,
        "budget": h.budget,
        "versions": h.versions,
        "harness_version": h.harness_version,
        "standin": h.standin,
        "started": h.started,
        "finished": run.footer is not None,
        "records": len(run.parity) + len(run.timing),
    }


def _by_arch(runs: list[Run]) -> dict[str, list[ParityRecord]]:
    out: dict[str, list[ParityRecord]] = defaultdict(list)
    for run in runs:
        out[run.arch].extend(run.parity)
    return dict(out)


def _sig(x: float) -> Any:
    """A plotted ratio to 3 significant digits: the page draws no finer, and report.json stays small."""
    return _num(x if math.isinf(x) else float(f"{x:.3g}"))


def _points(arch: str, recs: list[ParityRecord]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What the page's plots draw: err/bound by backend and feature; the worst err/bound by KV length."""
    by_feature = [
        {"arch": arch, "backend": b, "feature": f, "ratios": [_sig(x) for x in xs]}
        for (b, f), xs in sorted(ratios_by_feature(recs).items())
    ]
    by_kv = [
        {"arch": arch, "backend": b, "kv_lens": list(w), "worst": [_sig(x) for x in w.values()]}
        for b, w in sorted(worst_by_kv_len(recs).items())
    ]
    return by_feature, by_kv


def _parity(runs: list[Run]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    features: set[str] = set()
    by_feature: list[dict[str, Any]] = []
    by_kv_len: list[dict[str, Any]] = []
    for arch, recs in sorted(_by_arch(runs).items()):
        bf, bk = _points(arch, recs)
        by_feature += bf
        by_kv_len += bk
        for (backend, dtype), cells in sorted(worst_cells(recs).items()):
            features |= set(cells)
            rows.append(
                {
                    "arch": arch,
                    "backend": backend,
                    "dtype": dtype,
                    "cells": {f: _num(v) for f, v in cells.items()},
                    "worst": _num(max(cells.values())),
                }
            )
    return {"features": sorted(features), "rows": rows, "by_feature": by_feature, "by_kv_len": by_kv_len}


def _outcomes(runs: list[Run]) -> list[dict[str, Any]]:
    out = []
    for arch, recs in sorted(_by_arch(runs).items()):
        by: dict[str, Counter[str]] = defaultdict(Counter)
        for r in recs:
            by[f"{r.target}/{r.backend}" + (f" (stand-in {r.standin})" if r.standin else "")][r.status] += 1
        out += [{"arch": arch, "backend": b, **{s: c.get(s, 0) for s in STATUSES}} for b, c in sorted(by.items())]
    return out


def _failures(runs: list[Run]) -> list[dict[str, Any]]:
    return [
        {
            "arch": run.arch,
            "backend": r.backend,
            "case_id": r.case_id,
            "status": r.status,
            "crash": is_crash(r),
            "known": r.known,
            "line": failure_line(r),
        }
        for run in runs
        for r in run.parity
        if r.status in ("fail", "error")
    ]


def _skips(runs: list[Run]) -> list[dict[str, Any]]:
    c: Counter[tuple[str, str, str, str]] = Counter()
    for run in runs:
        for r in run.parity:
            if r.status in ("skip", "refused"):
                c[(run.arch, r.status, r.backend, skips.constant_of(r.reason))] += 1
    return [
        {"arch": a, "status": s, "backend": b, "reason": reason, "count": n}
        for (a, s, b, reason), n in sorted(c.items())
    ]


def incomplete(runs: list[Run], empty_paths: Sequence[str] = ()) -> list[str]:
    """Why these results are not a complete account: paths holding no record, runs with no end record."""
    return [f"{p} holds no attncheck record" for p in empty_paths] + [
        f"run {r.run_id} ({r.path}) has no end record: interrupted, killed or still running"
        for r in runs
        if r.unfinished
    ]


def build(runs: list[Run], routing: Sequence[dict[str, Any]] = (), empty_paths: Sequence[str] = ()) -> dict[str, Any]:
    """The report's model: every section as plain data (report.json is this, dumped).

    `routing` holds the routing checks of the runs, made by their caller
    (conformance/route_records.py `check_runs`): rendering checks nothing itself."""
    recs = records_of(runs)
    return {
        "incomplete": incomplete(runs, empty_paths),
        "runs": [_run_line(r) for r in runs],
        "parity": _parity(runs),
        "outcomes": _outcomes(runs),
        "failures": _failures(runs),
        "skips": _skips(runs),
        "routing": list(routing),
        "timing": [dict(timing.to_json(ab), markdown=timing.render_markdown(ab)) for ab in timing.tables(recs)],
    }


def _fmt(v: Any) -> str:
    return "-" if v is None else (v if isinstance(v, str) else f"{v:.2f}")


def _demote(md: str, levels: int) -> str:
    """Nest a rendered section's headings under this report's."""
    return "\n".join(("#" * levels + line) if line.startswith("#") else line for line in md.splitlines())


def render_markdown(model: dict[str, Any], title: str = "attncheck report") -> str:
    first = (
        [f"**Incomplete results**: {'; '.join(model['incomplete'])}. What follows covers only the records written.", ""]
        if model["incomplete"]
        else []
    )
    lines = [*first, f"# {title}", ""]
    for r in model["runs"]:
        if not r.get("header", True):
            lines.append(f"- records without a run header in {r['path']}")
            continue
        vers = versions_text(r["versions"])
        lines.append(
            f"- `{r['arch']}`: {r['target']} on {r['device']}, {r['budget']}, run `{r['run_id']}`"
            + ("" if r["finished"] else " (**did not finish**)")
            + (f", **stand-in {r['standin']}**" if r["standin"] else "")
            + f"; {vers}"
        )
    p = model["parity"]
    if p["rows"]:
        lines += [
            "",
            "## Parity: worst error / bound",
            "",
            "Per architecture, backend, dtype and feature; below 1 holds, `inf` is NaN, unwritten output or "
            "an infinity mismatch.",
            "",
            tabulate(
                [
                    [r["arch"], r["backend"], r["dtype"], *(_fmt(r["cells"].get(f)) for f in p["features"])]
                    for r in p["rows"]
                ],
                ["arch", "backend", "dtype", *p["features"]],
                tablefmt="github",
                disable_numparse=True,
            ),
        ]
    if model["outcomes"]:
        lines += [
            "",
            "## Outcomes",
            "",
            tabulate(
                [[o["arch"], o["backend"], *(o[s] for s in STATUSES)] for o in model["outcomes"]],
                ["arch", "backend", *STATUSES],
                tablefmt="github",
            ),
        ]
    fl = model["failures"]
    lines += ["", f"## Failures ({len(fl)})", ""]
    lines += [f"- `{f['arch']}` " + ("**crash** " if f["crash"] else "") + f["line"] for f in fl[:MAX_LINES]] or [
        "None."
    ]
    if len(fl) > MAX_LINES:
        lines.append(f"- ... and {len(fl) - MAX_LINES} more (report.json has them all)")
    if model["skips"]:
        lines += [
            "",
            "<details><summary>Skips and refusals by reason</summary>",
            "",
            tabulate(
                [[s["arch"], s["status"], s["backend"], s["reason"], s["count"]] for s in model["skips"]],
                ["arch", "status", "backend", "reason", "count"],
                tablefmt="github",
            ),
            "",
            "</details>",
        ]
    for r in model["routing"]:
        if "error" in r or "unmodelled" in r:
            why = r.get("error") or r["unmodelled"]
            lines += ["", f"## Routing: {r['spec']} at {r['arch']} (**not checked**)", "", why]
            continue
        verdict = "holds" if r["ok"] else "**fails**"
        body = r["markdown"].split("\n", 1)[1]  # its own title is replaced by this section's
        lines += ["", f"## Routing: {r['spec']} at {r['arch']} ({verdict})", _demote(body, 1)]
    if model["timing"]:
        lines += ["", "## Timing: A/B ratio tables", ""]
        lines += [t["markdown"] for t in model["timing"]]
    return "\n".join(lines).rstrip() + "\n"
