"""`attncheck record`: a parity run kept as a baseline for `attncheck diff`, optionally with timing.

Takes every option of `attncheck run`, and the sweep grid's for `--time`. Exit status: that of the
parity run (0 held, 1 failed), 2 bad usage before anything is written.
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from conformance.commands import run, sweep
from conformance.commands.common import device_of, set_jit_cache

NAME = "record"


def add_parser(sub: Any) -> None:
    rec = sub.add_parser(
        NAME,
        help="run the matrix as a baseline for `attncheck diff`, stamped with versions and "
        "architecture; --time adds timing",
    )
    run.add_run_options(rec)
    rec.add_argument(
        "--time",
        action="append",
        dest="time_backends",
        default=None,
        metavar="BACKEND",
        help="also time this backend over the sweep grid (repeatable), for timing regressions",
    )
    sweep.grid_options(rec)
    rec.set_defaults(out="attncheck-baseline", handler=handle)


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from conformance.sweep import check_sweep

    if args.jit_cache:  # before the sweep's checks, which import the library on a GPU
        set_jit_cache(args.jit_cache)
    device = device_of(args.device)
    args.device = device
    if args.time_backends:  # every usage error before the parity run writes anything
        check_sweep(args.target, device, args.time_backends, sweep.grid(args), args.reps, args.warmup, args.chunk)
    status = run.handle(args, argv)
    if args.time_backends:
        print(f"\ntiming {', '.join(args.time_backends)} over the sweep grid:", flush=True)
        sweep.timed_sweep(args, device, args.time_backends, argv)
    print(f"baseline: {args.out} (compare a later run with `attncheck diff {args.out} NEW`)")
    return status
