#!/usr/bin/env python3
"""The err/bound distribution of recorded runs, as scripts/precision_baseline.py summarises its own runs.

    python scripts/honest_distribution.py RESULTS.jsonl[.xz]... --out DIR [--title TEXT]

For records a device run wrote (e.g. the torch standard matrix on the H200, run in slices over several calls):
one point per compared quantity of each judged (case, backend) pair, its last record when a pair ran twice,
grey where the ledger as it is now explains the record. Writes DIR/summary.json (per backend, dtype and
quantity: count, max, quantiles) and DIR/distributions.svg (scripts/plot_precision_baseline.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conformance.known_failures import known_for  # noqa: E402
from plot_precision_baseline import write_svg  # noqa: E402
from precision_baseline import points, summarised  # noqa: E402
from reports.records import ParityRecord, RunHeader, read_jsonl  # noqa: E402


def _records(path: str) -> tuple[list[ParityRecord], dict[str, Any]]:
    """A results file's parity records, and what its header says of the run."""
    recs = read_jsonl(path)
    head = next((r for r in recs if isinstance(r, RunHeader)), None)
    header = {} if head is None else {"target": head.target, "versions": head.versions, "arch": head.arch}
    return [r for r in recs if isinstance(r, ParityRecord)], dict(header, device=getattr(head, "device", "?"))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--title", default="")
    a = p.parse_args(argv)
    last: dict[tuple[str, str], ParityRecord] = {}
    headers = []
    for path in a.results:
        recs, header = _records(path)
        headers.append(header)
        target, arch = header.get("target"), header.get("arch")
        version = header.get("versions", {}).get(target)
        for r in recs:
            known = known_for(r.target, r.case, r.backend, version, arch, resolved=r.resolved_backend)
            last[(r.backend, r.case_id)] = replace(r, known=known)
    pts = points(list(last.values()), "honest")
    devices = sorted({h["device"] for h in headers})
    summary = dict(
        device="/".join(devices) + (f", {a.title}" if a.title else ""),
        budget="recorded",
        faults_budget="none",
        sources=a.results,
        pairs=len(last),
        **summarised(pts),
    )
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    write_svg(summary, os.path.join(a.out, "distributions.svg"))
    worst = {}
    for pt in pts:
        if not pt["known"]:
            key = (pt["group"], pt["quantity"])
            worst[key] = max(worst.get(key, 0.0), pt["ratio"])
    for (g, q), w in sorted(worst.items()):
        print(f"{g:32} {q:4} max err/bound {w:.3f}")
    print(f"{len(last)} pairs, {len(pts)} points; {len(summary['honest_failing'])} failing points no entry explains")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
