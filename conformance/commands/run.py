"""`attncheck run`: the parity matrix of a target (or given cases, or a captured batch) against the oracle.

Exit status is the gate's verdict (conformance.gate.Ledger): 0 every record held or failed as a
ledger entry predicts, 1 an unexplained failure or an unexpected pass, 2 bad usage (an unknown target
or backend, a malformed budget or case, a batch file that contradicts its case), before any result
file is written.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable, Sequence

from tabulate import tabulate

from conformance.commands.common import (
    EXIT_FAILED,
    EXIT_OK,
    device_of,
    parse_options,
    set_jit_cache,
)
from conformance.progress import HEARTBEAT_S, Heartbeat, Pace
from conformance.usage import heartbeat_seconds, usable_out_dir
from reports.parity import COUNT_HEADERS, counts_by_backend, failure_line, failures, skips_by_reason
from reports.records import ParityRecord, StageRecord
from scenarios.case import FEATURES, load_cases
from scenarios.errors import InvalidValue
from scenarios.matrix import BUDGETS, parse_budget

NAME = "run"


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The options of a parity run (`attncheck record` takes them too)."""
    p.add_argument("--target", default="torch", help="library under test (default: torch)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available, else cpu)")
    p.add_argument(
        "--budget",
        default="quick",
        help=f"matrix size: {', '.join(BUDGETS)} (default: quick, under 2 minutes on 2 cores)",
    )
    p.add_argument(
        "--backend",
        action="append",
        dest="backends",
        default=None,
        help="restrict to this backend (repeatable); default: every backend of the target",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the matrix and of the input values")
    p.add_argument("--out", default="attncheck-out", help="directory for results.jsonl and report.md")
    p.add_argument(
        "--case",
        action="append",
        dest="cases",
        default=None,
        help="run this case (a JSON object) or these cases (a JSON list) instead of the matrix: JSON "
        "text or @file.json (repeatable)",
    )
    p.add_argument("--inputs", default=None, help="replay a captured batch (a file written by scenarios.tensors.save)")
    p.add_argument(
        "--feature",
        action="append",
        dest="features",
        default=None,
        help=f"keep only matrix cases with this feature (repeatable: any of them), one of {', '.join(FEATURES)}",
    )
    p.add_argument(
        "--time-budget",
        type=float,
        default=None,
        dest="time_budget",
        help="seconds; (case, backend) pairs not started by then are recorded as skipped",
    )
    p.add_argument(
        "--adapter-option",
        action="append",
        dest="adapter_options",
        default=None,
        metavar="KEY=VALUE",
        help="adapter option for every backend, e.g. mask_form=packed (repeatable)",
    )
    p.add_argument(
        "--jit-cache",
        default=None,
        dest="jit_cache",
        help="directory for JIT-compiled kernels (FlashInfer: FLASHINFER_WORKSPACE_BASE)",
    )
    p.add_argument(
        "--isolate",
        action="store_true",
        help="evaluate each case in a child process: a case that kills it is recorded as a crash, and the run goes on",
    )
    p.add_argument(
        "--case-timeout",
        type=float,
        default=None,
        dest="case_timeout",
        metavar="SECONDS",
        help="with --isolate: a case whose child has not answered in SECONDS (a hung kernel) is recorded as a "
        "crash, the child is killed, and the run goes on",
    )
    p.add_argument(
        "--heartbeat",
        type=float,
        default=HEARTBEAT_S,
        metavar="SECONDS",
        help=f"while one case runs longer, say so every SECONDS; progress lines at least that often "
        f"(default {HEARTBEAT_S:g}, 0: none)",
    )


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="run the parity matrix of a target against the oracle")
    add_run_options(p)
    p.set_defaults(handler=handle)


def _stage(st: StageRecord) -> None:
    p = st.prepare or {}
    print(
        f"  stage {st.stage} ({' '.join(st.backends)}): {len(p.get('requested', []))} modules prepared in "
        f"{p.get('seconds', 0.0):.1f} s, waited {st.waited_s:.1f} s"
        + (f"; error: {p['error'][:300]}" if p.get("error") else ""),
        flush=True,
    )


def _progress(pace: Pace, beat: Heartbeat) -> Callable[[ParityRecord, int, int], None]:
    """Each record: its failure said at once, a progress line with the time left when one is due."""

    def said(rec: ParityRecord, i: int, n: int) -> None:
        beat.end()
        if rec.status in ("fail", "error"):
            print(f"  {rec.status.upper():5s} {failure_line(rec)}", flush=True)
        line = pace.line(i, n, "records written")
        if line:
            print(f"  {line}", flush=True)

    return said


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from conformance.parity_run import run_parity
    from scenarios.tensors import load

    parse_budget(args.budget)
    options = parse_options(args.adapter_options)
    for f in args.features or []:
        if f not in FEATURES:
            raise InvalidValue("--feature", f, f"one of {', '.join(FEATURES)}", "pass a feature name from that list")
    cases = [c for text in args.cases for c in load_cases(text)] if args.cases else None
    inputs = load(args.inputs) if args.inputs else None
    if args.jit_cache:
        set_jit_cache(args.jit_cache)
    device = device_of(args.device)
    usable_out_dir("--out", args.out)  # a file, or a path under one, is refused before anything is written
    heartbeat_s = heartbeat_seconds(args.heartbeat)
    if args.case_timeout is not None and not (args.isolate and args.case_timeout > 0):
        raise InvalidValue(
            "--case-timeout",
            args.case_timeout,
            "a positive number of seconds, with --isolate (only a child process can be stopped)",
            "pass --isolate --case-timeout 300",
        )
    t0 = time.perf_counter()
    what = f"{len(cases)} given case(s)" if cases else "a captured batch" if inputs else f"the {args.budget} matrix"
    header = f"attncheck run --target {args.target} --device {device}: {what} -> {args.out}"
    if args.features:
        from conformance.parity_run import matrix_of

        pool = cases if cases is not None else matrix_of(args.target, args.budget, args.seed, device)
        cases = [c for c in pool if set(c.features) & set(args.features)]
    with Heartbeat(heartbeat_s) as beat:
        outcome = run_parity(
            args.target,
            device,
            args.budget,
            args.out,
            seed=args.seed,
            backends=args.backends,
            argv=["attncheck", *argv],
            cases=cases,
            inputs=inputs,
            time_budget_s=args.time_budget,
            adapter_options=options,
            progress=_progress(Pace(heartbeat_s), beat),
            on_stage=_stage,
            on_pair=lambda case, backend: beat.begin(f"case {case.id} on {backend}"),
            on_wait=beat.begin,
            on_ready=lambda: print(header, flush=True),  # once the usage checks have passed
            isolate=args.isolate,
            case_timeout_s=args.case_timeout,
        )
    recs = outcome.records
    print()
    print(tabulate(counts_by_backend(recs), COUNT_HEADERS, tablefmt="simple"))
    sk = skips_by_reason(recs)
    if sk:
        print("\nskips and refusals by reason:")
        print(tabulate(sk, ["status", "backend", "reason", "count"], tablefmt="simple"))
    fl = failures(recs)
    cases_n = len({r.case_id for r in recs})
    backends_n = len({r.backend for r in recs if r.status in ("pass", "fail")})
    known = sum(v.outcome == "expected_failure" for v in outcome.verdicts)
    claimed = [(r, v) for r, v in zip(recs, outcome.verdicts) if v.outcome == "unexpected_pass"]
    print(
        f"\n{cases_n} cases, {len(recs)} records, {backends_n} backends exercised, "
        f"{len(fl)} failing ({known} explained by the ledger), {len(claimed)} unexpected passes, "
        f"{time.perf_counter() - t0:.1f} s"
    )
    for r, v in claimed:
        print(f"  UNEXPECTED PASS {r.backend} {r.case_id}: {v.message}")
    print(f"results: {outcome.results_path}\nreport:  {os.path.join(outcome.out_dir, 'report.md')}")
    return EXIT_FAILED if outcome.exit_status else EXIT_OK
