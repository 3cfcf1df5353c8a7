"""The attncheck command line: `attncheck run ...` (also `python -m conformance run ...`).

Exit status: 0 every case held, 1 something failed or errored, 2 bad usage (an unknown target
or backend, a malformed budget or case, a batch file that contradicts its case). Usage errors
are reported in one line naming the value and the fix, before any result file is written.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Optional, Sequence

from tabulate import tabulate

from conformance.cli_gate import add_commands
from conformance.mutations import cli_mutate
from kernels._env import warm_mkl_vml
from kernels.errors import KernelUnavailable, UnknownBackend, UnknownTarget
from reports.parity import COUNT_HEADERS, counts_by_backend, failure_line, failures, skips_by_reason
from reports.records import ParityRecord, StageRecord
from scenarios.case import FEATURES, load_cases
from scenarios.errors import InvalidInputs, InvalidValue
from scenarios.matrix import BUDGETS, parse_budget

USAGE_ERRORS = (UnknownTarget, UnknownBackend, KernelUnavailable, InvalidValue, InvalidInputs)
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="attncheck", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the parity matrix of a target against the oracle")
    run.add_argument("--target", default="torch", help="library under test (default: torch)")
    run.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available, else cpu)")
    run.add_argument("--budget", default="quick",
                     help=f"matrix size: {', '.join(BUDGETS)} (default: quick, under 2 minutes on 2 cores)")
    run.add_argument("--backend", action="append", dest="backends", default=None,
                     help="restrict to this backend (repeatable); default: every backend of the target")
    run.add_argument("--seed", type=int, default=0, help="seed of the matrix and of the input values")
    run.add_argument("--out", default="attncheck-out", help="directory for results.jsonl and report.md")
    run.add_argument("--case", action="append", dest="cases", default=None,
                     help="run this case (a JSON object) or these cases (a JSON list) instead of the matrix: JSON "
                          "text or @file.json (repeatable)")
    run.add_argument("--inputs", default=None,
                     help="replay a captured batch (a file written by scenarios.tensors.save)")
    run.add_argument("--feature", action="append", dest="features", default=None,
                     help=f"keep only matrix cases with this feature (repeatable: any of them), one of {', '.join(FEATURES)}")
    run.add_argument("--time-budget", type=float, default=None, dest="time_budget",
                     help="seconds; (case, backend) pairs not started by then are recorded as skipped")
    run.add_argument("--adapter-option", action="append", dest="adapter_options", default=None,
                     metavar="KEY=VALUE", help="adapter option for every backend, e.g. mask_form=packed (repeatable)")
    run.add_argument("--jit-cache", default=None, dest="jit_cache",
                     help="directory for JIT-compiled kernels (FlashInfer: FLASHINFER_WORKSPACE_BASE)")
    add_commands(sub)  # record, diff, sweep, report (conformance/cli_gate.py)
    cli_mutate.add_parser(sub)  # mutate: conformance/mutations/cli_mutate.py
    sub.add_parser("explore", help="drive the stateful scenario machines (its options: attncheck explore --help)",
                   add_help=False)  # parsed by conformance/explore/loop.py itself: see main()
    return p


def _stage(st: StageRecord) -> None:
    p = st.prepare or {}
    print(f"  stage {st.stage} ({' '.join(st.backends)}): {len(p.get('requested', []))} modules prepared in "
          f"{p.get('seconds', 0.0):.1f} s, waited {st.waited_s:.1f} s" + (f"; error: {p['error'][:300]}"
                                                                          if p.get("error") else ""), flush=True)


def _parse_options(items: Optional[list[str]]) -> dict:
    """["mask_form=packed", "decode_tensor_cores=true"] -> {"mask_form": "packed", "decode_tensor_cores": True}."""
    out: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidValue("--adapter-option", item, "KEY=VALUE", "write it as e.g. mask_form=packed")
        low = value.lower()
        out[key] = True if low == "true" else False if low == "false" else int(value) if value.isdigit() else value
    return out


def _set_jit_cache(path: str) -> None:
    """Point FlashInfer's JIT cache at `path`; it reads the variable once, at import."""
    if "flashinfer" in sys.modules:
        raise InvalidValue("--jit-cache", path, "to be set before flashinfer is imported",
                           "set FLASHINFER_WORKSPACE_BASE in the environment instead")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise InvalidValue("--jit-cache", path, "a directory that can be created",
                           f"pass a writable path ({e.strerror})") from None
    os.environ["FLASHINFER_WORKSPACE_BASE"] = os.path.abspath(path)


def _default_device() -> str:
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def _progress(rec: ParityRecord, i: int, n: int) -> None:
    if rec.status in ("fail", "error"):
        print(f"  {rec.status.upper():5s} {failure_line(rec)}", flush=True)
    if i == n or i % 50 == 0:
        print(f"  [{i}/{n}] records written", flush=True)


def cmd_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from conformance.parity_run import run_parity
    from scenarios.tensors import load

    parse_budget(args.budget)
    options = _parse_options(args.adapter_options)
    for f in args.features or []:
        if f not in FEATURES:
            raise InvalidValue("--feature", f, f"one of {', '.join(FEATURES)}", "pass a feature name from that list")
    cases = [c for text in args.cases for c in load_cases(text)] if args.cases else None
    inputs = load(args.inputs) if args.inputs else None
    if args.jit_cache:
        _set_jit_cache(args.jit_cache)
    device = args.device or _default_device()
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise InvalidValue("--device", device, "cpu, cuda or cuda:N", "pass --device cpu or --device cuda")
    t0 = time.perf_counter()
    what = (f"{len(cases)} given case(s)" if cases else "a captured batch" if inputs
            else f"the {args.budget} matrix")
    print(f"attncheck run --target {args.target} --device {device}: {what} -> {args.out}", flush=True)
    if args.features:
        from conformance.parity_run import matrix_of

        pool = cases if cases is not None else matrix_of(args.target, args.budget, args.seed)
        cases = [c for c in pool if set(c.features) & set(args.features)]
    outcome = run_parity(args.target, device, args.budget, args.out, seed=args.seed, backends=args.backends,
                         argv=["attncheck", *argv], cases=cases, inputs=inputs, time_budget_s=args.time_budget,
                         adapter_options=options, progress=_progress,
                         on_stage=_stage, isolate=args.isolate)
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
    print(f"\n{cases_n} cases, {len(recs)} records, {backends_n} backends exercised, "
          f"{len(fl)} failing, {time.perf_counter() - t0:.1f} s")
    print(f"results: {outcome.results_path}\nreport:  {os.path.join(outcome.out_dir, 'report.md')}")
    return EXIT_FAILED if outcome.exit_status else EXIT_OK


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    warm_mkl_vml()  # oneMKL picks its VML kernels in this one thread before any attention is computed
    if argv[:1] == ["explore"]:  # the scenario machines keep their own parser (conformance/explore/loop.py)
        from conformance.explore.loop import main as explore_main

        return explore_main(argv[1:])
    args = _parser().parse_args(argv)  # argparse itself exits 2 on malformed options
    try:
        if args.command == "run":
            return cmd_run(args, argv)
        if args.command == "mutate":
            return cli_mutate.run(args)
        if hasattr(args, "handler"):  # the subcommands of conformance/cli_gate.py
            return args.handler(args, argv)
    except USAGE_ERRORS as e:
        print(f"attncheck: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("attncheck: interrupted; results written so far are kept", file=sys.stderr)
        return 130
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
