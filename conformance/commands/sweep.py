"""`attncheck sweep`: A/B timing of two backends over a grid (ratio tables, crossover, threshold).

Also the grid options and the timed sweep that `attncheck record --time` reuses. Exit status: 0
done, 2 bad usage (before anything is timed or written).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Sequence

from conformance.commands.common import EXIT_OK, device_of, set_jit_cache
from conformance.progress import HEARTBEAT_S, Heartbeat, pace
from conformance.usage import heartbeat_seconds, usable_out_dir

NAME = "sweep"


def add_parser(sub: Any) -> None:
    s = sub.add_parser(NAME, help="A/B timing of two backends over a grid: ratio tables, crossover, threshold")
    s.add_argument("--target", default="torch", help="library under test (default: torch)")
    s.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available, else cpu)")
    s.add_argument("--a", required=True, help="backend A (the ratio is time(A) / time(B))")
    s.add_argument("--b", required=True, help="backend B")
    s.add_argument("--seed", type=int, default=0, help="seed of the input values")
    s.add_argument(
        "--out", default="attncheck-sweep", help="directory for timing.jsonl, timing.md and report.html (its plot)"
    )
    s.add_argument(
        "--jit-cache",
        default=None,
        dest="jit_cache",
        help="directory for JIT-compiled kernels (FlashInfer: FLASHINFER_WORKSPACE_BASE)",
    )
    s.add_argument(
        "--heartbeat",
        type=float,
        default=HEARTBEAT_S,
        metavar="SECONDS",
        help=f"while one configuration is timed longer, say so every SECONDS (default {HEARTBEAT_S:g}, 0: none)",
    )
    grid_options(s)
    s.set_defaults(handler=handle)


def grid_options(p: argparse.ArgumentParser) -> None:
    """The sweep grid's options (sweep, and record --time)."""
    from conformance.sweep import SEED_GRID as G

    p.add_argument(
        "--rows",
        default=",".join(f"{b}x{k}" for b, k in G.rows),
        help="table rows as BATCHxKV,... (default: the seeds' five shapes)",
    )
    p.add_argument(
        "--q", default=",".join(map(str, G.q_lens)), help="table columns: query lengths (default: the seeds')"
    )
    p.add_argument("--layout", default=G.layout, help=f"layout of every configuration (default {G.layout})")
    p.add_argument("--heads", default=f"{G.num_qo_heads}/{G.num_kv_heads}", help="QO/KV heads (default 32/8)")
    p.add_argument("--head-dim", type=int, default=G.head_dim, dest="head_dim", help="head dim (default 128)")
    p.add_argument("--dtype", default=G.dtype, help="q/kv/output dtype (default bf16)")
    p.add_argument("--page-size", type=int, default=G.page_size, dest="page_size", help="page size (default 16)")
    p.add_argument("--no-causal", action="store_false", dest="causal", help="unmasked (default: causal)")
    p.add_argument("--reps", type=int, default=20, help="timed repetitions per configuration and backend (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    p.add_argument("--chunk", type=int, default=4, help="configurations allocated at a time (default 4)")


def grid(args: argparse.Namespace) -> Any:
    """The Grid the grid options describe (a usage error names a malformed one)."""
    from conformance.sweep import Grid, parse_heads, parse_ints, parse_rows

    hq, hk = parse_heads(args.heads)
    return Grid(
        rows=parse_rows(args.rows),
        q_lens=parse_ints("--q", args.q),
        layout=args.layout,
        num_qo_heads=hq,
        num_kv_heads=hk,
        head_dim=args.head_dim,
        dtype=args.dtype,
        page_size=args.page_size,
        causal=args.causal,
    )


def timed_sweep(args: argparse.Namespace, device: str, backends: list[str], argv: Sequence[str]) -> Any:
    """Time `backends` over the grid into args.out, printing each configuration with the time left; the
    sweep's outcome."""
    from conformance.sweep import progress_line, run_sweep

    heartbeat_s = heartbeat_seconds(args.heartbeat)
    started = time.monotonic()
    with Heartbeat(heartbeat_s) as beat:

        def progress(rec: Any, i: int, n: int) -> None:
            beat.end()
            print(f"  [{i}/{n}] {progress_line(rec)}; {pace(i, n, time.monotonic() - started)}", flush=True)

        return run_sweep(
            args.target,
            device,
            backends,
            grid(args),
            args.out,
            reps=args.reps,
            warmup=args.warmup,
            chunk=args.chunk,
            seed=args.seed,
            argv=["attncheck", *argv],
            progress=progress,
            on_config=lambda config_id: beat.begin(f"configuration {config_id}"),
        )


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from conformance.commands.report import REPORT_HTML, model_of
    from conformance.sweep import check_sweep
    from reports import timing
    from reports.html import render_html
    from reports.records import read_jsonl

    if args.jit_cache:
        set_jit_cache(args.jit_cache)
    device = device_of(args.device)
    usable_out_dir("--out", args.out)  # a file, or a path under one: refused before anything is timed
    heartbeat_seconds(args.heartbeat)
    g = grid(args)
    check_sweep(args.target, device, [args.a, args.b], g, args.reps, args.warmup, args.chunk)
    n = len(g.configs())
    print(
        f"attncheck sweep --target {args.target} --device {device}: {args.a} against {args.b}, {n} configurations "
        f"x {args.reps} interleaved repetitions -> {args.out}",
        flush=True,
    )
    outcome = timed_sweep(args, device, [args.a, args.b], argv)
    md = timing.render_all(read_jsonl(outcome.path))
    md_path, page_path = os.path.join(args.out, "timing.md"), os.path.join(args.out, REPORT_HTML)
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(md)
    page = render_html(model_of([outcome.path]), f"attncheck sweep: time({args.a}) / time({args.b})")
    with open(page_path, "w", encoding="utf-8") as f:  # the same tables, and the ratio plot (reports/plots.py)
        f.write(page)
    print("\n" + md + f"\nresults: {outcome.path}\nreport:  {md_path}, {page_path}")
    return EXIT_OK
