"""`attncheck prebuild ...`: build the FlashInfer JIT modules the coming runs need, before they run.

Every module a matrix run on `--backend`s will load is built with all cores on it, before anything
else runs: built while the matrix, the machines and the mutants ran, the builds spent a device
session on lock waits (docs/h200-runner.md). Exit status: 0 built (or cached), 1 a build failed,
2 bad usage (a device without FlashInfer, an unknown backend, a malformed case).
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

from conformance.commands.common import EXIT_USAGE, add_forwarded, prog, writable_file
from conformance.usage import Parser

NAME = "prebuild"
DESCRIPTION = "Build FlashInfer's JIT modules for the coming runs' cases and backends, all cores on it."


def add_parser(sub: Any) -> None:
    add_forwarded(sub, NAME, "build FlashInfer's JIT modules for the coming runs")


def forward(argv: Sequence[str]) -> int:
    import json

    from kernels.flashinfer.adapter import TARGET
    from kernels.flashinfer.prebuild import prebuild, requests_for, supports_fn
    from kernels.flashinfer.variants import split_backend
    from scenarios.case import load_cases
    from scenarios.errors import InvalidValue
    from scenarios.matrix import parse_budget

    p = Parser(prog=prog(NAME), description=DESCRIPTION)
    p.add_argument("--budget", default="quick", help="the matrix budget whose cases decide the modules")
    p.add_argument("--backend", action="append", help="backends of the coming runs (repeatable; default: all)")
    p.add_argument(
        "--case",
        action="append",
        dest="cases",
        default=None,
        help="these cases instead of the budget's matrix: a JSON object or list, or @file.json "
        "(repeatable), as `attncheck run --case` takes them",
    )
    p.add_argument(
        "--decode-tensor-cores",
        action="store_true",
        help="the run will pass --adapter-option decode_tensor_cores=true (decode loads prefill modules)",
    )
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", help="write the build summary here as JSON")
    a = p.parse_args(list(argv))
    try:  # what needs no device first: a bad value is named on any machine, before any build
        if a.out is not None:
            writable_file("--out", a.out)
        parse_budget(a.budget)
        given = [c for text in a.cases for c in load_cases(text)] if a.cases else None
    except InvalidValue as e:
        print(f"{prog(NAME)}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    avail = TARGET.available(a.device)
    if not avail.ok:
        print(
            f"{prog(NAME)}: error: --device {a.device}: {avail.reason}. Fix: run this on the FlashInfer runner",
            file=sys.stderr,
        )
        return EXIT_USAGE
    offered = TARGET.backends(a.device)
    unknown = [b for b in a.backend or () if b not in offered]
    if unknown:
        print(
            f"{prog(NAME)}: error: --backend {unknown[0]}: expected one of {', '.join(offered)}. "
            "Fix: pass a listed backend",
            file=sys.stderr,
        )
        return EXIT_USAGE
    cases = given if given is not None else TARGET.matrix(a.budget, device=a.device)
    families = list(dict.fromkeys(split_backend(b)[0] for b in (a.backend or offered)))
    tc = a.decode_tensor_cores
    reqs = requests_for(
        cases, families, a.device, supports_fn(TARGET, a.device, {"decode_tensor_cores": tc}), decode_tensor_cores=tc
    )
    print(f"{len(reqs)} modules for {len(cases)} cases on {', '.join(families)}", flush=True)
    res = prebuild(reqs)
    print(
        f"{len(res.requested)} modules built or found cached in {res.seconds:.1f} s"
        + (f"; failed: {res.error}" if res.error else ""),
        flush=True,
    )
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(
                {
                    **res.to_json(),
                    "families": families,
                    "budget": None if a.cases else a.budget,
                    "cases": len(cases),
                    "decode_tensor_cores": tc,
                },
                f,
                indent=2,
            )
    return 1 if res.error else 0
