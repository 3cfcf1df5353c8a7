"""Parity records -> tables: counts per backend, worst error/bound per backend x dtype x feature.

Pure rendering: records in, markdown (or rows for tabulate) out, readable on a machine with no
GPU. A ratio is the largest error over its bound (< 1 holds); "inf" means NaN, unwritten
output or an infinity where the reference is finite (or the reverse).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Iterable, Optional

from tabulate import tabulate

from kernels.skips import constant_of
from reports.records import STATUSES, ParityRecord, Record, RunFooter, RunHeader, StageRecord, versions_text


def _fmt_ratio(r: Optional[float]) -> str:
    if r is None:
        return "-"
    return "inf" if math.isinf(r) else f"{r:.2f}"


def parity_records(records: Iterable[Record]) -> list[ParityRecord]:
    return [r for r in records if isinstance(r, ParityRecord)]


def counts_by_backend(recs: list[ParityRecord]) -> list[list[object]]:
    """Rows: target, backend, one count per status, worst ratio, cases compared."""
    by: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    worst: dict[tuple[str, str], Optional[float]] = {}
    for r in recs:
        key = (r.target if r.standin is None else f"{r.target} (stand-in: {r.standin})", r.backend)
        by[key][r.status] += 1
        w = r.worst_ratio
        if w is not None:
            worst[key] = max(worst.get(key) or 0.0, w)
    rows = []
    for key in sorted(by):
        c = by[key]
        rows.append([key[0], key[1], *(c.get(s, 0) for s in STATUSES), _fmt_ratio(worst.get(key))])
    return rows


COUNT_HEADERS = ["target", "backend", *STATUSES, "worst err/bound"]


def worst_cells(recs: list[ParityRecord]) -> dict[tuple[str, str], dict[str, float]]:
    """(target/backend, dtype) -> feature -> the worst ratio among compared cases with that feature."""
    cells: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for r in recs:
        w = r.worst_ratio
        if w is None:
            continue
        row = (f"{r.target}/{r.backend}", r.case.get("q_dtype", "?"))
        for f in r.features:
            cells[row][f] = max(cells[row].get(f, 0.0), w)
    return dict(cells)


def kv_len(r: ParityRecord) -> int:
    """The case's longest request's KV length: where accumulation error grows (0 for a batch with no keys)."""
    return int(max(r.case.get("kv_lens") or [0]))


def ratios_by_feature(recs: list[ParityRecord]) -> dict[tuple[str, str], list[float]]:
    """(target/backend, feature) -> the err/bound of every compared record with that feature, ascending."""
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in recs:
        w = r.worst_ratio
        if w is None:
            continue
        for f in r.features:
            out[(f"{r.target}/{r.backend}", f)].append(w)
    return {k: sorted(v) for k, v in out.items()}


def worst_by_kv_len(recs: list[ParityRecord]) -> dict[str, dict[int, float]]:
    """target/backend -> KV length (kv_len) -> the worst err/bound among compared records of that length."""
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for r in recs:
        w = r.worst_ratio
        if w is None:
            continue
        by = out[f"{r.target}/{r.backend}"]
        by[kv_len(r)] = max(by.get(kv_len(r), 0.0), w)
    return {b: dict(sorted(v.items())) for b, v in out.items()}


def worst_by_feature(recs: list[ParityRecord]) -> tuple[list[str], list[list[str]]]:
    """Rows backend x dtype, columns features: the worst ratio among compared cases."""
    cells = worst_cells(recs)
    cols = sorted({f for feats in cells.values() for f in feats})
    rows = [[row[0], row[1], *(_fmt_ratio(cells[row].get(f)) for f in cols)] for row in sorted(cells)]
    return ["backend", "dtype", *cols], rows


def outcomes_by_feature(recs: list[ParityRecord]) -> tuple[list[str], list[list[str]]]:
    """Rows backend, columns features: "passed/compared", with fails and errors named when any."""
    cells: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    feats: set[str] = set()
    for r in recs:
        for f in r.features or ["(plain)"]:
            feats.add(f)
            cells[f"{r.target}/{r.backend}"][f][r.status] += 1
    cols = sorted(feats)

    def cell(c: Counter[str]) -> str:
        compared = c["pass"] + c["fail"] + c["error"]
        if not compared:
            return "-" if not c else f"skip {sum(c.values())}"
        bad = ", ".join(f"{c[s]} {s}" for s in ("fail", "error") if c[s])
        return f"{c['pass']}/{compared}" + (f" ({bad})" if bad else "")

    rows = [[b, *(cell(cells[b][f]) for f in cols)] for b in sorted(cells)]
    return ["backend", *cols], rows


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def timing_by_backend(recs: list[ParityRecord]) -> list[list[object]]:
    """Rows: backend, first uses, compile s (first plan+run of a module), run records, median/p90 run ms.

    Run time is plan + run of records that were not a module's first use: what a server pays per
    call once kernels are built (graph mode: the replay).
    """
    by: dict[str, list[ParityRecord]] = defaultdict(list)
    for r in recs:
        if r.status in ("pass", "fail"):
            by[f"{r.target}/{r.backend}"].append(r)
    rows: list[list[object]] = []
    for b in sorted(by):
        firsts = [r for r in by[b] if r.compile_s > 0]
        runs = [1e3 * r.run_s for r in by[b] if r.compile_s == 0]
        rows.append(
            [
                b,
                len(firsts),
                f"{sum(r.compile_s for r in firsts):.1f}",
                len(runs),
                f"{_quantile(runs, 0.5):.3f}" if runs else "-",
                f"{_quantile(runs, 0.9):.3f}" if runs else "-",
            ]
        )
    return rows


TIMING_HEADERS = ["backend", "first uses", "compile s", "timed runs", "median run ms", "p90 run ms"]


def stage_rows(stages: list[StageRecord]) -> list[list[object]]:
    """Rows: stage, backends, modules prebuilt, build s, waited s, error."""
    rows: list[list[object]] = []
    for st in stages:
        p = st.prepare or {}
        err = p.get("error")
        rows.append(
            [
                st.stage,
                " ".join(st.backends),
                len(p.get("requested", [])),
                f"{p.get('seconds', 0.0):.1f}",
                f"{st.waited_s:.1f}",
                (err[:120] + "...") if err and len(err) > 120 else (err or ""),
            ]
        )
    return rows


STAGE_HEADERS = ["stage", "backends", "modules", "build s", "waited s", "build error"]


def skips_by_reason(recs: list[ParityRecord]) -> list[list[object]]:
    c: Counter[tuple[str, str, str]] = Counter()
    for r in recs:
        if r.status in ("skip", "refused"):
            c[(r.status, r.backend, constant_of(r.reason))] += 1
    return [[s, b, reason, n] for (s, b, reason), n in sorted(c.items())]


def failures(recs: list[ParityRecord]) -> list[ParityRecord]:
    return [r for r in recs if r.status in ("fail", "error")]


def failure_line(r: ParityRecord) -> str:
    bits = [f"{r.backend} {r.case_id}: {r.status}"]
    for name, cmp in (("out", r.out), ("lse", r.lse)):
        if cmp and not cmp["passed"]:
            bits.append(
                f"{name} max_abs={float(cmp['max_abs']):.3g} bound={float(cmp['bound']):.3g} "
                f"worst={cmp['worst_index']} nan={cmp['nan_count']} unwritten={cmp['unwritten_count']} "
                f"inf_mismatch={cmp['inf_mismatch_count']}"
            )
    if r.reason:
        bits.append(r.reason)
    if r.known:
        bits.append(f"known failure: {r.known}")
    if r.fresh == "pass":
        bits.append(
            "a fresh adapter passes this case: the failure depends on the earlier plans of the long-lived "
            "one (a lifecycle defect)"
        )
    elif r.fresh:
        bits.append(f"a fresh adapter: {r.fresh} too")
    return " | ".join(bits)


def render_markdown(records: list[Record], title: str = "attncheck parity report") -> str:
    heads = [r for r in records if isinstance(r, RunHeader)]
    ends = [r for r in records if isinstance(r, RunFooter)]
    recs = parity_records(records)
    lines = [f"# {title}", ""]
    for h in heads:
        vers = versions_text(h.versions)
        lines += [
            f"- run `{h.run_id}`: target `{h.target}` on `{h.device}`, budget `{h.budget}`, seed {h.seed}, "
            f"started {h.started}, attncheck {h.harness_version}",
            f"- versions: {vers}",
            f"- command: `{' '.join(h.argv)}`",
        ]
        if h.standin:  # kernels/standins/: the adapter against a stand-in of the library
            lines.append(f"- **stand-in**: `{h.standin}` ran in place of the library; not conformance results")
    if heads and not ends:
        lines.append("- **this run did not finish**: the tables cover what was measured before it stopped")
    for e in ends:
        lines.append(f"- finished in {e.elapsed_s:.1f} s, exit status {e.exit_status}")
    lines += ["", "## Outcomes by backend", "", tabulate(counts_by_backend(recs), COUNT_HEADERS, tablefmt="github"), ""]
    stages = [r for r in records if isinstance(r, StageRecord)]
    if stages:
        lines += [
            "## Stages and JIT prebuild",
            "",
            "Each stage's modules are built in one parallel build while the previous stage runs; "
            "`waited s` is what the run waited for it.",
            "",
            tabulate(stage_rows(stages), STAGE_HEADERS, tablefmt="github"),
            "",
        ]
    oh, orows = outcomes_by_feature(recs)
    if orows:
        lines += [
            "## Outcomes by backend and feature",
            "",
            "`passed/compared`; a record counts under each feature its case has.",
            "",
            tabulate(orows, oh, tablefmt="github"),
            "",
        ]
    tr = timing_by_backend(recs)
    if tr:
        lines += [
            "## Compile and run time by backend",
            "",
            "`compile s`: first plan+run of each module in the run (compile, or load of a prebuilt "
            "module); run times exclude those.",
            "",
            tabulate(tr, TIMING_HEADERS, tablefmt="github"),
            "",
        ]
    fh, fr = worst_by_feature(recs)
    if fr:
        lines += [
            "## Worst error / bound by backend, dtype and feature",
            "",
            "A value below 1 holds; `inf` is NaN, unwritten output or an infinity mismatch.",
            "",
            tabulate(fr, fh, tablefmt="github"),
            "",
        ]
    sk = skips_by_reason(recs)
    if sk:
        lines += [
            "## Skips and refusals by reason",
            "",
            tabulate(sk, ["status", "backend", "reason", "count"], tablefmt="github"),
            "",
        ]
    fl = failures(recs)
    lines += ["## Failures", ""]
    lines += [f"- {failure_line(r)}" for r in fl] if fl else ["None."]
    return "\n".join(lines) + "\n"
