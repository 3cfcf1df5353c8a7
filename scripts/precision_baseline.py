#!/usr/bin/env python3
"""Where honest kernels and the precision defects sit against the tolerance bound, on one device.

    python scripts/precision_baseline.py --device cuda --budget standard --out DIR
        [--parts torch,faults,flashinfer] [--time-budget 330] [--flashinfer-time-budget 540]
        [--faults-budget B] [--jit-cache DIR] [--flashinfer-backends fa2,cudnn]

Three parts, each an `attncheck run` in this process (conformance.parity_run), records kept:
  torch       honest-torch/: every backend of the torch target on the device (cuda: math, flash,
              efficient, cudnn, auto, flex; cpu: math, flash, auto, flex) over the budget's matrix;
  faults      fault-NAME/: each fault of kernels/torch_precision_faults.py injected into torch, the
              SDPA ones through the math backend (the fault replaces SDPA whatever is forced), the
              LSE one through flex; "honest" is the faultless loop, the control;
  flashinfer  honest-flashinfer/: every FlashInfer backend over FlashInfer's own matrix, when
              flashinfer imports. Its modules are built first (`attncheck prebuild`, all at once),
              outside its time limit: on a cold JIT cache the builds alone can spend it
              (docs/h200-runner.md). To build in one step and run in the next, run `attncheck prebuild
              --budget B` first with the same --jit-cache.
Then DIR/summary.json (every err/bound ratio, per group: count, median, p90, max; per fault whether
and where its run caught it), DIR/distributions.svg (scripts/plot_precision_baseline.py), and a
table printed last. A failing record the known-failure ledger explains (`known`) is a library
defect, not precision: it stays out of the honest distributions and is counted apart.

--time-budget (seconds) is shared by the torch and faults parts: honest first (half), then the
faults, each given an equal share of what is left; a pair not started in time is recorded as
skipped, and the table says how many. The parts default to all three (flashinfer only where it
imports); on a 10-minute device slot run torch,faults in one call and flashinfer in another.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time
from typing import Any, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conformance.commands import prebuild as prebuild_command  # noqa: E402
from conformance.parity_run import run_parity  # noqa: E402
from kernels.torch_precision_faults import FAULTS, HONEST, SDPA, injected  # noqa: E402
from oracle.tolerances import governing_dtype  # noqa: E402
from plot_precision_baseline import write_svg  # noqa: E402
from reports.records import ParityRecord, read_jsonl  # noqa: E402


PARTS = ("torch", "faults", "flashinfer")


def ratio(cmp: Optional[dict[str, Any]]) -> Optional[float]:
    """err/bound of one comparison; inf for NaN, unwritten or infinity mismatches; None if absent."""
    if cmp is None:
        return None
    if cmp["nan_count"] or cmp["unwritten_count"] or cmp["inf_mismatch_count"]:
        return math.inf
    b = float(cmp["bound"])
    return float(cmp["max_abs"]) / b if b > 0 else (0.0 if float(cmp["max_abs"]) == 0 else math.inf)


def points(records: list[ParityRecord], label: str) -> list[dict[str, Any]]:
    """One point per compared quantity of every judged record (pass or fail)."""
    out = []
    for r in records:
        if r.status not in ("pass", "fail"):
            continue
        c = r.case
        dtype = governing_dtype(c["q_dtype"], c["kv_dtype"], c["o_dtype"])
        for q, cmp in (("out", r.out), ("lse", r.lse)):
            x = ratio(cmp)
            if x is None:
                continue
            assert cmp is not None
            out.append(
                dict(
                    group=label if label.startswith("fault:") else f"{r.target}/{r.backend}",
                    backend=r.backend,
                    dtype=dtype,
                    quantity=q,
                    ratio=x,
                    err=float(cmp["max_abs"]),
                    baseline_err=float(cmp["baseline_err"]),
                    bound=float(cmp["bound"]),
                    case_id=r.case_id,
                    status=r.status,
                    known=r.known,
                )
            )
    return out


def _out_of_time(r: ParityRecord) -> bool:
    return r.status == "skip" and "--time-budget" in r.reason


def summarised(pts: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary's parts made of points: per group, dtype and quantity the ratios' stats (points the ledger
    explains left out), the honest points failing outside the ledger, and every point (JSON's "inf")."""
    groups: dict[str, list[float]] = {}
    for p in pts:
        if not p["known"]:
            groups.setdefault(f"{p['group']} {p['dtype']} {p['quantity']}", []).append(p["ratio"])
    return dict(
        groups={k: stats(v) for k, v in sorted(groups.items())},
        honest_failing=[
            p for p in pts if not p["group"].startswith("fault:") and p["status"] == "fail" and not p["known"]
        ],
        points=[dict(p, ratio=p["ratio"] if math.isfinite(p["ratio"]) else "inf") for p in pts],
    )


def stats(values: list[float]) -> dict[str, Any]:
    v = sorted(values)
    n = len(v)
    if not n:
        return dict(n=0)
    return dict(n=n, median=v[n // 2], p90=v[min(n - 1, int(0.9 * n))], max=v[-1])


def run_one(label: str, out_dir: str, **kw: Any) -> tuple[list[ParityRecord], float]:
    t0 = time.perf_counter()
    os.makedirs(out_dir, exist_ok=True)
    outcome = run_parity(out_dir=out_dir, **kw)
    recs = [r for r in read_jsonl(outcome.results_path) if isinstance(r, ParityRecord)]
    took = time.perf_counter() - t0
    print(f"  {label}: {len(recs)} records in {took:.0f} s", flush=True)
    return recs, took


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget", default="standard")
    ap.add_argument("--faults-budget", default=None, help="matrix of the fault runs (default: --budget)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--time-budget", type=float, default=330.0, help="seconds for all torch runs together")
    ap.add_argument("--flashinfer-time-budget", type=float, default=540.0)
    ap.add_argument(
        "--flashinfer-backends",
        default="",
        help="comma-separated FlashInfer backends to run (default: all); their modules alone are built",
    )
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    ap.add_argument("--jit-cache", default=None, help="FlashInfer's JIT cache (FLASHINFER_WORKSPACE_BASE)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    parts = [p for p in a.parts.split(",") if p]
    if not parts or set(parts) - set(PARTS):
        print(f"--parts {a.parts!r}: pass a comma-separated choice of {', '.join(PARTS)}", file=sys.stderr)
        return 2
    if a.jit_cache:
        os.environ["FLASHINFER_WORKSPACE_BASE"] = a.jit_cache
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        print(f"--out {a.out!r}: cannot be created ({e.strerror}); pass a writable directory", file=sys.stderr)
        return 2
    started = time.perf_counter()
    deadline = started + a.time_budget
    common = dict(device=a.device, seed=a.seed)
    pts: list[dict[str, Any]] = []
    timings: dict[str, float] = {}

    if "torch" in parts:
        print(f"honest torch backends, {a.budget} matrix, {a.device}", flush=True)
        share = (deadline - time.perf_counter()) / (2 if "faults" in parts else 1)
        recs, timings["honest-torch"] = run_one(
            "torch",
            os.path.join(a.out, "honest-torch"),
            target_name="torch",
            budget=a.budget,
            time_budget_s=share,
            **common,
        )
        pts += points(recs, "honest")
        timings["honest-torch skipped for time"] = sum(1 for r in recs if _out_of_time(r))

    fault_runs: dict[str, dict[str, Any]] = {}
    names = [HONEST] + [n for n in FAULTS if n != HONEST] if "faults" in parts else []
    if names:
        print(f"precision faults injected into torch, {a.faults_budget or a.budget} matrix", flush=True)
    for i, name in enumerate(names):
        f = FAULTS[name]
        left = max(1.0, (deadline - time.perf_counter()) / (len(names) - i))
        with injected(name):
            recs, timings[f"fault-{name}"] = run_one(
                name,
                os.path.join(a.out, f"fault-{name}"),
                target_name="torch",
                budget=a.faults_budget or a.budget,
                backends=["math" if f.target == SDPA else "flex"],
                time_budget_s=left,
                **common,
            )
        fp = points(recs, f"fault:{name}")
        pts += fp
        failing = [p for p in fp if p["status"] == "fail" and not p["known"] and p["ratio"] > 1]
        skipped = sum(1 for r in recs if _out_of_time(r))
        worst = max(fp, key=lambda p: p["ratio"], default=None)
        fault_runs[name] = dict(
            description=f.description,
            records=len(recs),
            failing=len({p["case_id"] for p in failing}),
            caught=bool(failing) if name != HONEST else None,
            worst_ratio=worst["ratio"] if worst else None,
            worst_case=worst["case_id"] if worst else None,
            first_failing_case=failing[0]["case_id"] if failing else None,
            skipped_for_time=skipped,
        )

    if "flashinfer" in parts and importlib.util.find_spec("flashinfer") is not None:
        print(f"honest FlashInfer backends, {a.budget} matrix; its modules built first", flush=True)
        t0 = time.perf_counter()
        chosen = [b for b in a.flashinfer_backends.split(",") if b]
        argv = ["--budget", a.budget, "--device", a.device] + [x for b in chosen for x in ("--backend", b)]
        prebuild_command.forward(argv)  # before the clock starts
        timings["flashinfer prebuild (untimed)"] = time.perf_counter() - t0
        recs, timings["honest-flashinfer"] = run_one(
            "flashinfer",
            os.path.join(a.out, "honest-flashinfer"),
            target_name="flashinfer",
            budget=a.budget,
            backends=chosen or None,
            time_budget_s=a.flashinfer_time_budget,
            **common,
        )
        pts += points(recs, "honest")
        timings["honest-flashinfer skipped for time"] = sum(1 for r in recs if _out_of_time(r))

    honest = [p for p in pts if not p["group"].startswith("fault:")]
    summary = dict(
        device=a.device,
        budget=a.budget,
        faults_budget=a.faults_budget or a.budget,
        seconds=time.perf_counter() - started,
        timings=timings,
        **summarised(pts),
        known_failing=len({(p["group"], p["case_id"]) for p in honest if p["known"]}),
        faults=fault_runs,
    )
    with open(os.path.join(a.out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    write_svg(summary, os.path.join(a.out, "distributions.svg"))

    print(f"\n{'group (err/bound)':44} {'n':>5} {'median':>8} {'p90':>8} {'max':>8}")
    for key, s in summary["groups"].items():
        if s["n"]:
            print(f"{key:44} {s['n']:5d} {s['median']:8.3f} {s['p90']:8.3f} {s['max']:8.3f}")
    print(f"\n{'fault':18} {'caught':>7} {'failing cases':>14} {'worst ratio':>12} {'not run':>8}  first failing case")
    for name, fr in fault_runs.items():
        caught = "control" if fr["caught"] is None else ("yes" if fr["caught"] else "NO")
        worst = f"{fr['worst_ratio']:.2f}" if fr["worst_ratio"] is not None else "-"
        print(
            f"{name:18} {caught:>7} {fr['failing']:14d} {worst:>12} {fr['skipped_for_time']:8d}  "
            f"{fr['first_failing_case'] or '-'}"
        )
    for part in ("honest-torch", "honest-flashinfer"):
        if f"{part} skipped for time" in timings:
            print(f"{part}: {timings[part]:.0f} s, {timings[part + ' skipped for time']:g} pairs not run for time")
    n_bad = len(summary["honest_failing"])
    print(
        f"\nhonest records over the bound (ledger aside): {n_bad}; ledger-explained: {summary['known_failing']}; "
        f"{summary['seconds']:.0f} s; {os.path.join(a.out, 'summary.json')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
