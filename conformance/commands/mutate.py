"""`attncheck mutate`: the command line of the mutation run (conformance/mutations/engine.py does the work).

    attncheck mutate --target T [--device D] [--budget B] [--out DIR] [--only NAME ...]
                     [--workers N] [--isolation forkserver|exec] [--selection coverage|all]
                     [--compare-whole-suite] [--fresh] [--update-verdicts] [--verdicts FILE]

Exit status: 0 every mutant killed and every test kills one, 1 otherwise, 2 bad usage. Usage is
checked before anything is written: an unknown target, budget, device, isolation, selection or
mutant name, a worker count below 1, an output directory that cannot be written, selection by
coverage without the coverage package, a verdict file that cannot be read or written, or
--update-verdicts with a run whose verdicts are not the file's, each in one line naming the
value and the fix.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Sequence

from conformance.commands.common import EXIT_FAILED, EXIT_OK
from conformance.usage import usable_out_dir
from scenarios.errors import InvalidValue

NAME = "mutate"
DEFAULT_OUT = "attncheck-mutate"
SELECTIONS = ("coverage", "all")


def add_parser(sub: Any) -> None:
    """Register `mutate` on the attncheck subparsers."""
    from conformance.mutations.launcher import ISOLATIONS
    from conformance.mutations.targets import BUDGETS, TARGETS

    p = sub.add_parser(NAME, help="prove every test can fail: run a mutant catalogue, write its kill matrix")
    p.add_argument("--target", default="torch", help=f"whose catalogue: {', '.join(TARGETS)} (default: torch)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu); CUDA-only mutants skip on cpu")
    p.add_argument("--budget", default="quick", help="; ".join(f"{k}: {v}" for k, v in BUDGETS.items()))
    p.add_argument("--out", default=DEFAULT_OUT, help="directory for mutants.jsonl, kill-matrix.json and .md")
    p.add_argument(
        "--only",
        nargs="+",
        action="extend",
        default=None,
        metavar="NAME",
        help="run these mutants only (repeatable: every name given counts)",
    )
    p.add_argument("--workers", type=int, default=2, help="mutants run at once (default: 2)")
    p.add_argument("--isolation", default="forkserver", help=f"{' or '.join(ISOLATIONS)} (see launcher.py)")
    p.add_argument(
        "--selection",
        default="coverage",
        help="coverage: each mutant's tests from coverage contexts; all: every test for every mutant",
    )
    p.add_argument(
        "--complete",
        action="store_true",
        help="measure every cell (every selected test under every mutant), whatever the budget",
    )
    p.add_argument(
        "--compare-whole-suite",
        action="store_true",
        help="also run every mutant against every test, and report both wall times (implies --fresh)",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="ignore the verdict file: run every mutant (the refreshed verdicts are still written to --out)",
    )
    p.add_argument(
        "--update-verdicts",
        action="store_true",
        help="write the refreshed verdicts over the verdict file (commit it: CI re-runs only what changed)",
    )
    p.add_argument(
        "--verdicts",
        default=None,
        metavar="FILE",
        help="the verdict file (default: conformance/mutations/verdicts/<target>-<device>-<budget>.json)",
    )
    p.set_defaults(handler=handle)


def _settings(args: argparse.Namespace) -> Any:
    from conformance.mutations.engine import Settings
    from conformance.mutations.launcher import ISOLATIONS
    from conformance.mutations.targets import BUDGETS, STRATEGY, TARGETS, catalogue

    if args.target not in TARGETS:
        raise InvalidValue("--target", args.target, f"one of {', '.join(TARGETS)}", "pass --target torch")
    if args.budget not in BUDGETS:
        raise InvalidValue("--budget", args.budget, f"one of {', '.join(BUDGETS)}", "pass --budget quick")
    if args.device not in ("cpu", "cuda"):
        raise InvalidValue("--device", args.device, "cpu or cuda", "pass --device cpu")
    if args.isolation not in ISOLATIONS:
        raise InvalidValue(
            "--isolation", args.isolation, f"one of {', '.join(ISOLATIONS)}", "pass --isolation forkserver"
        )
    if args.selection not in SELECTIONS:
        raise InvalidValue(
            "--selection", args.selection, f"one of {', '.join(SELECTIONS)}", "pass --selection coverage"
        )
    if args.workers < 1:
        raise InvalidValue("--workers", args.workers, "at least 1", "pass --workers 2")
    names = {m.name for m in catalogue(args.target)}
    unknown = sorted(set(args.only or ()) - names)
    if unknown:
        raise InvalidValue(
            "--only",
            unknown[0],
            f"a mutant of the {args.target} catalogue",
            f"pick names from kill-matrix.md or conformance/mutations/ ({len(names)} mutants)",
        )
    if args.selection == "coverage":
        try:
            import coverage  # noqa: F401
        except ImportError:
            raise InvalidValue(
                "--selection",
                "coverage",
                "the coverage package installed",
                "pip install coverage, or pass --selection all",
            ) from None
    verdicts = _verdict_file(args)
    usable_out_dir("--out", args.out)  # an empty path, a file, a path under one, a folder not writable
    out = Path(args.out)
    return Settings(
        target=args.target,
        device=args.device,
        budget=args.budget,
        out_dir=out,
        workers=args.workers,
        isolation=args.isolation,
        selection=args.selection,
        strategy="complete" if args.complete else STRATEGY[args.budget],
        compare_whole_suite=args.compare_whole_suite,
        only=tuple(args.only) if args.only else None,
        verdicts=verdicts,
        fresh=args.fresh,
        update_verdicts=args.update_verdicts,
    )


def _verdict_file(args: argparse.Namespace) -> Path:
    """The verdict file, refused in one line when it cannot serve this run."""
    from conformance.mutations.runner import repo_root
    from conformance.mutations.targets import STRATEGY
    from conformance.mutations.verdicts import CorruptVerdicts, Verdicts, default_path

    path = Path(args.verdicts) if args.verdicts else default_path(repo_root(), args.target, args.device, args.budget)
    if args.update_verdicts:
        if args.selection != "coverage":
            raise InvalidValue(
                "--selection",
                args.selection,
                "coverage with --update-verdicts (keys rest on the coverage run)",
                "drop --selection all, or drop --update-verdicts",
            )
        if args.complete and STRATEGY[args.budget] != "complete":
            raise InvalidValue(
                "--update-verdicts",
                "with --complete",
                f"the {args.budget} budget's own cells (first kill): its verdict file holds no complete matrix",
                "drop --complete, or pass --budget full",
            )
    if path.is_dir():
        raise InvalidValue("--verdicts", str(path), "a file", "pass a file path, e.g. --verdicts verdicts.json")
    if path.exists() and not (args.fresh or args.compare_whole_suite):
        try:
            Verdicts.load(path)
        except CorruptVerdicts as e:
            raise InvalidValue(
                "--verdicts",
                str(path),
                "a verdict file attncheck wrote",
                f"{e.why}: pass --fresh "
                "--update-verdicts to rewrite it (a full run), or take either side of a merge "
                "conflict and pass --update-verdicts",
            ) from None
    if args.update_verdicts:
        probe = path if path.exists() else path.parent
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not os.access(probe, os.W_OK):
            raise InvalidValue(
                "--verdicts",
                str(path),
                "a file that can be written (--update-verdicts)",
                "pass a writable --verdicts FILE",
            )
    return path


def handle(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Validate, run, print the verdict; 0 when proven, 1 when not (usage errors raise InvalidValue)."""
    from conformance.mutations.engine import Mutation
    from conformance.mutations.killmatrix import JSON, MARKDOWN
    from conformance.mutations.verdicts import FILE_NAME

    settings = _settings(args)
    km = Mutation(settings).run()
    t = km.timing
    print(
        f"\n{len(km.runnable())} mutants, {len(km.rows)} tests: "
        f"{len(km.not_killed())} not killed, {len(km.rows_killing_nothing())} tests killing nothing"
        + (
            ""
            if km.control.get("passed")
            else "; the control FAILED: " + ", ".join(list(km.control.get("failed", {}))[:5])
        )
    )
    if t.get("selected_s") is not None:
        line = f"with coverage selection: {t['selected_s']:.1f} s wall, {t['selected_cpu_s'] or 0:.1f} s CPU"
        if t.get("whole_suite_s") is not None:
            line += (
                f"; the whole suite per mutant: {t['whole_suite_s']:.1f} s wall "
                f"({t['whole_suite_s'] / t['selected_s']:.1f}x), {t['whole_suite_cpu_s'] or 0:.1f} s CPU "
                f"({(t['whole_suite_cpu_s'] or 0) / max(t['selected_cpu_s'] or 1e-9, 1e-9):.1f}x)"
            )
        print(line)
    for test, why in list(km.control.get("why", {}).items())[:10]:
        print(f"  control failed {test}: {why}"[:400])
    for m in km.not_killed():
        print(f"  {m.status}: {m.name}: {m.detail.splitlines()[0] if m.detail else ''}"[:300])
    for r in km.rows_killing_nothing()[:20]:
        print(f"  kills nothing: {r}")
    cached = sum(m.cached for m in km.mutants)
    if cached:
        print(f"{cached} of {len(km.runnable())} verdicts cached from {settings.verdicts} (--fresh runs them all)")
    print(
        f"matrix: {settings.out_dir / JSON}\nreport: {settings.out_dir / MARKDOWN}\n"
        f"verdicts: {settings.out_dir / FILE_NAME}"
        + (
            f" (also written to {settings.verdicts})"
            if settings.update_verdicts
            else f" (--update-verdicts writes them to {settings.verdicts})"
        )
    )
    return EXIT_OK if km.ok else EXIT_FAILED
