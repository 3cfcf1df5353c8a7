#!/usr/bin/env python3
"""Where the test suite's CPU goes: per test, the wall time and the user, system and child-process CPU.

As a pytest plugin, each process (the xdist controller and every worker) writes `<worker>.json` into
$SUITE_CPU_DIR at the end of its session: per test its node id, wall seconds, own user and system CPU and its
children's (os.times() around the test's whole protocol: setup, call, teardown), and the process's totals.
As a script, it reads such a directory and prints the totals and the files that cost most.

    SUITE_CPU_DIR=/tmp/cpu PYTHONPATH=scripts python -m pytest -n 2 -p suite_cpu ...
    python scripts/suite_cpu.py /tmp/cpu [--top 25]

docs/test-times.md gives the numbers it measured. On two cores the suite's wall time is about half its CPU,
so the CPU, not the wall time, is what a cut must take down; and this machine's speed moves by 10% between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from typing import Any, Generator

import pytest

# Per pytest session (a test that runs pytest in its own process has a session of its own): its rows, and when
# it was configured. A row: node id, wall, user, system, children's user, children's system (seconds).
_ROWS = pytest.StashKey[list]()
_START = pytest.StashKey[float]()
COLUMNS = ("wall", "user", "sys", "child_user", "child_sys")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_ROWS] = []
    config.stash[_START] = time.time()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Generator[None, None, None]:
    a, wall = os.times(), time.time()
    yield
    b = os.times()
    item.config.stash[_ROWS].append(
        (
            item.nodeid,
            time.time() - wall,
            b.user - a.user,
            b.system - a.system,
            b.children_user - a.children_user,
            b.children_system - a.children_system,
        )
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("SUITE_CPU_DIR")
    if not out:
        return
    os.makedirs(out, exist_ok=True)
    t = os.times()
    totals = (time.time() - session.config.stash[_START], t.user, t.system, t.children_user, t.children_system)
    doc = {"rows": session.config.stash[_ROWS], **dict(zip(COLUMNS, totals))}
    with open(os.path.join(out, os.environ.get("PYTEST_XDIST_WORKER", "main") + ".json"), "w") as fh:
        json.dump(doc, fh)


def summary(folder: str) -> dict[str, Any]:
    """Per process its totals; per test file the sums of its tests' columns and their count."""
    procs, files = {}, defaultdict(lambda: [0.0] * len(COLUMNS) + [0])
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name)) as fh:
            doc = json.load(fh)
        procs[name[:-5]] = {k: doc[k] for k in COLUMNS}
        for node, *cols in doc["rows"]:
            f = files[node.split("::")[0]]
            for i, v in enumerate(cols):
                f[i] += v
            f[-1] += 1
    return {"processes": procs, "files": dict(files)}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder")
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args(argv)
    if not os.path.isdir(a.folder):
        print(f"suite_cpu: {a.folder!r} is not a folder; pass the SUITE_CPU_DIR of a run", file=sys.stderr)
        return 2
    s = summary(a.folder)
    for name, t in s["processes"].items():
        print(f"{name:6} " + "  ".join(f"{k} {v:7.1f}" for k, v in t.items()))
    print(f"\n{'cpu':>7} " + " ".join(f"{c:>10}" for c in COLUMNS) + "  tests  file")
    ranked = sorted(s["files"].items(), key=lambda kv: -sum(kv[1][1:5]))
    for f, cols in ranked[: a.top]:
        print(f"{sum(cols[1:5]):7.1f} " + " ".join(f"{v:10.1f}" for v in cols[:5]) + f"  {cols[5]:5d}  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
