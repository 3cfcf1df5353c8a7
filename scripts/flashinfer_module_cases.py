#!/usr/bin/env python3
"""Which cases of FlashInfer's matrix load which JIT module: to run a budget's cases of one module only.

    python scripts/flashinfer_module_cases.py --budget quick --backend fa2            # modules, with case counts
    python scripts/flashinfer_module_cases.py --budget quick --backend fa2 --module LABEL [--module ...] > cases.json

With --module, prints the JSON list of the matrix's cases whose module (under --backend) is one of the
labels, for `attncheck run --case @cases.json` and `attncheck prebuild --case @cases.json`: a run of a
fault that needs its modules rebuilt (scripts/run_with_flashinfer_fault.py) pays one module's build,
not the matrix's. Needs no GPU and no FlashInfer. Exit 2 for a label no case loads.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kernels.flashinfer.adapter import TARGET  # noqa: E402
from kernels.flashinfer.prebuild import module_request  # noqa: E402


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", default="quick")
    ap.add_argument("--backend", default="fa2", help="the backend whose modules are meant (fa2, fa3, auto, ...)")
    ap.add_argument("--module", action="append", default=[], help="a module label as the listing prints it")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    by_module: dict[str, list] = collections.defaultdict(list)
    for c in TARGET.matrix(a.budget, seed=a.seed, device="cuda"):
        r = module_request(c, a.backend, "cuda")
        if r is not None:
            by_module[r.label].append(c)
    if not a.module:
        for label, cases in sorted(by_module.items(), key=lambda kv: -len(kv[1])):
            print(f"{len(cases):4}  {label}")
        return 0
    missing = [m for m in a.module if m not in by_module]
    if missing:
        print(
            f"--module {missing[0]}: no {a.budget} case loads it under {a.backend}. Fix: pass a label this "
            "script lists without --module",
            file=sys.stderr,
        )
        return 2
    print(json.dumps([c.to_json() for m in a.module for c in by_module[m]], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
