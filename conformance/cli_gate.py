"""The upgrade and report subcommands of `attncheck`: record, diff, sweep, report (and `run --isolate`).

Kept apart from conformance/cli.py, which only calls `add_commands(sub)` and dispatches to the
`handler` each parser here sets. Exit status: 0 done (diff: no regression), 1 diff found a
regression, 2 bad usage or a baseline that cannot be compared, in one line naming the value and the
fix, before any file is written.
"""
from __future__ import annotations

import argparse
import json
import os
from typing import Any, Sequence

from scenarios.errors import InvalidValue

DIFF_MD, DIFF_JSON = "diff.md", "diff.json"
REPORT_MD, REPORT_JSON, REPORT_HTML = "report.md", "report.json", "report.html"


def add_commands(sub: Any) -> None:
    """Register record, diff, sweep and report on the `attncheck` subparsers (after `run`)."""
    run = sub.choices["run"]
    run.add_argument("--isolate", action="store_true",
                     help="evaluate each case in a child process: a case that kills it is recorded as a crash, "
                          "and the run goes on")
    rec = sub.add_parser("record", parents=[run], add_help=False, conflict_handler="resolve",
                         help="run the matrix as a baseline for `attncheck diff`, stamped with versions and "
                              "architecture; --time adds timing")
    rec.add_argument("--time", action="append", dest="time_backends", default=None, metavar="BACKEND",
                     help="also time this backend over the sweep grid (repeatable), for timing regressions")
    _grid_options(rec)
    rec.set_defaults(out="attncheck-baseline", handler=cmd_record)

    d = sub.add_parser("diff", help="compare NEW results with a BASE baseline; exit 1 on a regression")
    d.add_argument("base", metavar="BASE", help="baseline: results file or directory (attncheck record --out)")
    d.add_argument("new", metavar="NEW", help="new results: file or directory")
    d.add_argument("--error-factor", type=float, default=2.0,
                   help="error growth that is a regression: NEW worst err/bound > FACTOR x BASE (default 2)")
    d.add_argument("--error-floor", type=float, default=0.25,
                   help="... and NEW worst err/bound at least this (default 0.25 of the bound)")
    d.add_argument("--max-slowdown", type=float, default=0.10,
                   help="allowed slowdown: a timing regression when the interval of NEW/BASE lies above 1 + this "
                        "(default 0.10)")
    d.add_argument("--out", default=None, help=f"directory for {DIFF_MD} and {DIFF_JSON}")
    d.set_defaults(handler=cmd_diff)

    s = sub.add_parser("sweep", help="A/B timing of two backends over a grid: ratio tables, crossover, threshold")
    s.add_argument("--target", default="torch", help="library under test (default: torch)")
    s.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available, else cpu)")
    s.add_argument("--a", required=True, help="backend A (the ratio is time(A) / time(B))")
    s.add_argument("--b", required=True, help="backend B")
    s.add_argument("--seed", type=int, default=0, help="seed of the input values")
    s.add_argument("--out", default="attncheck-sweep", help="directory for timing.jsonl and timing.md")
    s.add_argument("--jit-cache", default=None, dest="jit_cache",
                   help="directory for JIT-compiled kernels (FlashInfer: FLASHINFER_WORKSPACE_BASE)")
    _grid_options(s)
    s.set_defaults(handler=cmd_sweep)

    r = sub.add_parser("report", help="render or merge results of several runners: markdown, JSON, HTML")
    r.add_argument("results", nargs="+", metavar="RESULTS", help="results files or directories (any number)")
    r.add_argument("--out", default="attncheck-report", help=f"directory for {REPORT_MD}, {REPORT_JSON}, {REPORT_HTML}")
    r.add_argument("--title", default="attncheck report", help="the report's title")
    r.set_defaults(handler=cmd_report)


def _grid_options(p: argparse.ArgumentParser) -> None:
    from conformance.sweep import SEED_GRID as G

    p.add_argument("--rows", default=",".join(f"{b}x{k}" for b, k in G.rows),
                   help="table rows as BATCHxKV,... (default: the seeds' five shapes)")
    p.add_argument("--q", default=",".join(map(str, G.q_lens)),
                   help="table columns: query lengths (default: the seeds')")
    p.add_argument("--layout", default=G.layout, help=f"layout of every configuration (default {G.layout})")
    p.add_argument("--heads", default=f"{G.num_qo_heads}/{G.num_kv_heads}", help="QO/KV heads (default 32/8)")
    p.add_argument("--head-dim", type=int, default=G.head_dim, dest="head_dim", help="head dim (default 128)")
    p.add_argument("--dtype", default=G.dtype, help="q/kv/output dtype (default bf16)")
    p.add_argument("--page-size", type=int, default=G.page_size, dest="page_size", help="page size (default 16)")
    p.add_argument("--no-causal", action="store_false", dest="causal", help="unmasked (default: causal)")
    p.add_argument("--reps", type=int, default=20, help="timed repetitions per configuration and backend (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    p.add_argument("--chunk", type=int, default=4, help="configurations allocated at a time (default 4)")


def _grid(args: argparse.Namespace) -> Any:
    from conformance.sweep import Grid, parse_heads, parse_ints, parse_rows

    hq, hk = parse_heads(args.heads)
    return Grid(rows=parse_rows(args.rows), q_lens=parse_ints("--q", args.q), layout=args.layout, num_qo_heads=hq,
                num_kv_heads=hk, head_dim=args.head_dim, dtype=args.dtype, page_size=args.page_size,
                causal=args.causal)


def _out_dir(flag: str, path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise InvalidValue(flag, path, "a directory that can be created",
                           f"pass a writable path ({e.strerror})") from None


def _sweep(args: argparse.Namespace, device: str, backends: list[str], argv: Sequence[str]) -> Any:
    from conformance.sweep import progress_line, run_sweep

    def progress(rec: Any, i: int, n: int) -> None:
        print(f"  [{i}/{n}] {progress_line(rec)}", flush=True)

    return run_sweep(args.target, device, backends, _grid(args), args.out, reps=args.reps, warmup=args.warmup,
                     chunk=args.chunk, seed=args.seed, argv=["attncheck", *argv], progress=progress)


def cmd_sweep(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from conformance.cli import _default_device, _set_jit_cache
    from conformance.sweep import check_sweep
    from reports import timing
    from reports.records import read_jsonl

    if args.jit_cache:
        _set_jit_cache(args.jit_cache)
    device = args.device or _default_device()
    grid = _grid(args)
    check_sweep(args.target, device, [args.a, args.b], grid, args.reps, args.warmup, args.chunk)
    n = len(grid.configs())
    print(f"attncheck sweep --target {args.target} --device {device}: {args.a} against {args.b}, {n} configurations "
          f"x {args.reps} interleaved repetitions -> {args.out}", flush=True)
    outcome = _sweep(args, device, [args.a, args.b], argv)
    md = timing.render_all(read_jsonl(outcome.path))
    with open(os.path.join(args.out, "timing.md"), "w", encoding="utf-8") as f:
        f.write(md)
    print("\n" + md + f"\nresults: {outcome.path}\nreport:  {os.path.join(args.out, 'timing.md')}")
    return 0


def cmd_record(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from conformance.cli import _default_device, cmd_run
    from conformance.sweep import check_sweep

    device = args.device or _default_device()
    args.device = device
    if args.time_backends:  # every usage error before the parity run writes anything
        check_sweep(args.target, device, args.time_backends, _grid(args), args.reps, args.warmup, args.chunk)
    status = cmd_run(args, argv)
    if args.time_backends:
        print(f"\ntiming {', '.join(args.time_backends)} over the sweep grid:", flush=True)
        _sweep(args, device, args.time_backends, argv)
    print(f"baseline: {args.out} (compare a later run with `attncheck diff {args.out} NEW`)")
    return status


def cmd_diff(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from conformance import record_diff as rd
    from reports.merge import load_runs

    for flag, v in (("--error-factor", args.error_factor), ("--error-floor", args.error_floor)):
        if not v > 0:
            raise InvalidValue(flag, v, "a positive number", f"pass e.g. {flag} 2")
    if not args.max_slowdown >= 0:
        raise InvalidValue("--max-slowdown", args.max_slowdown, "a fraction >= 0", "pass e.g. --max-slowdown 0.10")
    base, new = rd.side("BASE", load_runs([args.base])), rd.side("NEW", load_runs([args.new]))
    rd.check_compatible(base, new)
    rep = rd.diff(base, new, args.error_factor, args.error_floor, args.max_slowdown)
    md = rd.render_markdown(rep)
    if args.out:
        _out_dir("--out", args.out)
        with open(os.path.join(args.out, DIFF_MD), "w", encoding="utf-8") as f:
            f.write(md)
        with open(os.path.join(args.out, DIFF_JSON), "w", encoding="utf-8") as f:
            json.dump(rd.to_json(rep), f, indent=1, sort_keys=True)
    print(md)
    return 1 if rep.regressions else 0


def cmd_report(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from conformance.route_records import check_runs  # imports the FlashInfer adapter module: only here
    from reports import combined
    from reports.html import render_html
    from reports.merge import load_runs

    runs = load_runs(list(args.results))
    model = combined.build(runs, routing=check_runs(runs))
    md, page = combined.render_markdown(model, args.title), render_html(model, args.title)
    _out_dir("--out", args.out)
    for name, text in ((REPORT_MD, md), (REPORT_HTML, page),
                       (REPORT_JSON, json.dumps(model, indent=1, sort_keys=True, allow_nan=False))):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write(text)
    print(md)
    print(f"written: {', '.join(os.path.join(args.out, n) for n in (REPORT_MD, REPORT_JSON, REPORT_HTML))}")
    return 0
