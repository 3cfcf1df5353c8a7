#!/usr/bin/env python3
"""H200 smoke run of the flashinfer adapter: every offered backend on a handful of small cases per API.

    PYTHONPATH=. python3 scripts/h200_flashinfer_smoke.py --out DIR [--budget-s 280] [--backends fa2,fa3]

Cases: bf16, causal, GQA 4 (16 query heads over 4 KV heads), head dim 128; three per API (paged,
ragged, decode, single), the first two of equal batch size so CUDA-graph mode replays a captured
graph after a re-plan; the third ones (zero-length requests in paged/ragged) run last of all, so a
fault that breaks the CUDA context cannot take the ordinary cases with it. Each backend eager,
plus fa2 in graph mode ("fa2+graph"), through kernels.flashinfer.adapter; each case runs twice on one
adapter (the first run's plan+run is the compile, or JIT-cache load, of its variant; the second is
the run time), judged against the oracle (oracle.judge.truth/judge). Prints a table (api, backend,
resolved, status, err/bound, compile s, run s) and writes DIR/flashinfer_smoke.json after every
case, so a killed run still leaves data.

Time: FlashInfer JIT-compiles each variant on first use (~25 s fa2, ~90 s fa3 on an H200), so
groups run in an order that shares modules (fa2, fa2+graph, fa3, auto -- which resolves to fa3 here
--, cudnn, then the fa3 single-prefill module), and a group whose module is not built yet is skipped
("budget") when its estimated compile would overrun --budget-s. Per-case exceptions are recorded
and the run goes on. FLASHINFER_CUDA_ARCH_LIST=9.0a and MAX_JOBS=16 are set unless already set;
set FLASHINFER_WORKSPACE_BASE to keep the JIT cache between runs (default: $HOME/.cache/flashinfer).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from typing import Any, Optional

os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0a")
os.environ.setdefault("MAX_JOBS", "16")

import torch  # noqa: E402

from kernels.flashinfer import adapter as fi  # noqa: E402
from kernels.flashinfer.variants import variant_key  # noqa: E402
from kernels.protocol import reason_to_json  # noqa: E402
from oracle.judge import judge, truth  # noqa: E402
from scenarios.case import Case  # noqa: E402
from scenarios.tensors import materialize  # noqa: E402

DEVICE = "cuda"
HEADS = dict(num_qo_heads=16, num_kv_heads=4, head_dim_qk=128, head_dim_vo=128, causal=True)
CASES: dict[str, list[Case]] = {
    "paged": [
        Case("paged", (17, 64), (33, 300), page_size=16, **HEADS),
        Case("paged", (5, 30), (40, 100), page_size=16, **HEADS),
        Case("paged", (1, 7, 0), (128, 7, 5), page_size=16, **HEADS),
    ],
    "ragged": [
        Case("ragged", (17, 64), (33, 300), **HEADS),
        Case("ragged", (5, 30), (40, 100), **HEADS),
        Case("ragged", (3, 127, 0), (7, 127, 9), **HEADS),
    ],
    "decode": [
        Case("decode", (1, 1, 1, 1), (1, 33, 300, 1031), page_size=16, **HEADS),
        Case("decode", (1, 1, 1, 1), (16, 17, 64, 200), page_size=16, **HEADS),
        Case("decode", (1, 1), (5, 129), page_size=16, **HEADS),
    ],
    "single": [
        Case("single", (64,), (300,), **HEADS),
        Case("single", (127,), (127,), **HEADS),
        Case("single", (1,), (1031,), **HEADS),
    ],
}
# Estimated first-use cost (s) of each module on an H200 (fa2 ~25 s, fa3 ~90 s seen), with margin.
COMPILE_S = {"fa2": 35.0, "fa3": 100.0, "cudnn": 15.0, "trtllm-gen": 30.0, "auto": 100.0}


def plan_groups(offered: tuple[str, ...]) -> list[tuple[str, str]]:
    """(backend, api) in an order that builds each module once and leaves the costliest for last."""
    order: list[tuple[str, str]] = []
    batch_apis = ("paged", "ragged", "decode")
    if "fa2" in offered:
        order += [("fa2", a) for a in (*batch_apis, "single")]
    if "fa2+graph" in offered:
        order += [("fa2+graph", a) for a in batch_apis]
    if "fa3" in offered:
        order += [("fa3", a) for a in batch_apis]
    if "auto" in offered:
        order += [("auto", a) for a in batch_apis]
    for b in ("cudnn", "trtllm-gen", "aiter"):
        if b in offered:
            order += [(b, a) for a in (*batch_apis, "single")]
    if "fa3" in offered:
        order.append(("fa3", "single"))
    if "auto" in offered:
        order.append(("auto", "single"))
    return order


def label(case: Case) -> str:
    return f"q{list(case.qo_lens)} kv{list(case.kv_lens)}".replace(" ", "")


def ratio(cmp: Any) -> Optional[float]:
    if cmp is None:
        return None
    r = cmp.ratio
    return None if r != r else float(r)


def fmt(x: Optional[float], nd: int = 3) -> str:
    if x is None:
        return "-"
    if x == float("inf"):
        return "inf"
    return f"{x:.{nd}g}"


class Recorder:
    def __init__(self, out_dir: str, header: dict) -> None:
        self.path = os.path.join(out_dir, "flashinfer_smoke.json")
        self.doc = dict(header, results=[])

    def add(self, rec: dict) -> None:
        self.doc["results"].append(rec)
        self.flush()

    def flush(self) -> None:
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(self.doc, f, indent=1, default=str)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory for flashinfer_smoke.json")
    ap.add_argument("--budget-s", type=float, default=280.0, help="wall-clock budget incl. JIT compiles")
    ap.add_argument("--backends", default="", help="comma-separated subset (default: all offered + fa2+graph)")
    ap.add_argument("--device", default=DEVICE, help=argparse.SUPPRESS)  # tests drive the script on "cpu"
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)

    sup = fi.TARGET.available(args.device)
    header: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": sys.argv,
        "env": {k: os.environ.get(k) for k in ("FLASHINFER_CUDA_ARCH_LIST", "MAX_JOBS", "FLASHINFER_WORKSPACE_BASE")},
    }
    if not sup.ok:
        print(f"flashinfer unavailable: {sup.reason}")
        Recorder(args.out, dict(header, available=sup.reason)).flush()
        return 2
    dev = args.device
    header["device"] = torch.cuda.get_device_name(0) if dev.startswith("cuda") else dev
    header["capability"] = list(torch.cuda.get_device_capability(0)) if dev.startswith("cuda") else None
    header["versions"] = fi.TARGET.versions()
    offered = fi.TARGET.backends(dev)
    header["offered"] = list(offered)
    try:
        import flashinfer.jit.env as jenv  # the JIT cache actually in use

        header["jit_dir"] = str(jenv.FLASHINFER_JIT_DIR)
    except Exception as e:  # noqa: BLE001
        header["jit_dir"] = f"unknown ({type(e).__name__})"
    facts = fi.fl.lib_facts(dev)
    header["lib_facts"] = {
        k: getattr(facts, k) for k in ("version", "fork", "lse_base_kw", "fa3", "cudnn", "trtllm_gen", "aiter", "notes")
    }
    rec = Recorder(args.out, header)
    print(f"device {header['device']} sm{header['capability']}, flashinfer {facts.version}, offered {offered}")
    print(f"JIT cache: {header['jit_dir']}")

    wanted = [b for b in args.backends.split(",") if b] or list(offered)
    groups = [(b, a) for b, a in plan_groups(offered) if b in wanted]
    built: set = set()
    truths: dict[str, Any] = {}
    inputs: dict[str, Any] = {}
    rows: list[list[str]] = []
    cols = ["api", "backend", "case", "resolved", "status", "err/bound out", "lse", "compile s", "run s"]

    def budget_row(backend: str, api: str, case: Case, why: str) -> None:
        rec.add({"api": api, "backend": backend, "case_id": case.id, "status": "budget", "reason": why})
        rows.append([api, backend, label(case), "-", "budget", "-", "-", "-", "-"])

    def one(adapter: Any, backend: str, api: str, case: Case, module: tuple) -> None:
        r: dict[str, Any] = {"api": api, "backend": backend, "case_id": case.id, "case": case.to_json()}
        try:
            s = adapter.supports(case)
            if not s.ok:
                r.update(status="skip", reason=s.reason)
                rows.append([api, backend, label(case), "-", "skip", "-", "-", "-", "-"])
                rec.add(r)
                print(" | ".join(rows[-1]), flush=True)
                return
            if case.id not in inputs:
                inputs[case.id] = materialize(case, 0, dev)
            inp = inputs[case.id]
            if case.id not in truths:
                truths[case.id] = truth(inp)
            times = []
            res = None
            for rep in range(2):
                adapter.plan(inp)
                res = adapter.run(inp)
                times.append(adapter.last_timing)
                if rep == 0:
                    built.add(module)
            assert res is not None
            out_cmp, lse_cmp = judge(
                truths[case.id],
                res.out,
                res.lse if case.return_lse else None,
                lse_base=res.lse_base,
                adapter="flashinfer",
                backend=backend,
            )
            ok = out_cmp.passed and (lse_cmp is None or lse_cmp.passed)
            compile_s = times[0].plan_s + times[0].run_s + times[0].capture_s
            run_s = times[1].run_s
            r.update(
                status="pass" if ok else "fail",
                resolved=res.resolved_backend,
                fallback_reason=reason_to_json(res.fallback_reason),
                lse_base=res.lse_base,
                out=out_cmp.to_json(),
                lse=lse_cmp.to_json() if lse_cmp else None,
                first_use=times[0].first_use,
                compile_s=compile_s,
                run_s=run_s,
                timings=[t.to_json() for t in times],
                last_run={k: str(v) for k, v in adapter.last_run.items()},
            )
            rows.append(
                [
                    api,
                    backend,
                    label(case),
                    res.resolved_backend,
                    r["status"],
                    fmt(ratio(out_cmp)),
                    fmt(ratio(lse_cmp)),
                    f"{compile_s:.1f}" if times[0].first_use else f"({compile_s:.2f})",
                    f"{run_s * 1e3:.2f}ms",
                ]
            )
        except Exception as e:  # noqa: BLE001 -- record and keep going
            r.update(status="error", reason=f"{type(e).__name__}: {e}"[:2000], traceback=traceback.format_exc()[-4000:])
            rows.append([api, backend, label(case), "-", "error", "-", "-", "-", f"{type(e).__name__}"])
            if "CUDA error" in str(e) or "illegal memory" in str(e):
                r["note"] = "CUDA context may be unusable after this error"
        rec.add(r)
        print(" | ".join(rows[-1]), flush=True)

    # Phase 1: the first two cases of every group (equal batch size: graph mode replays after a
    # re-plan). Phase 2: the remaining edge cases (zero-length requests), last, so that a fault
    # that poisons the CUDA context cannot take the ordinary cases with it.
    ran: list[tuple[str, str, tuple]] = []
    for backend, api in groups:
        lib_backend = backend.split("+")[0]
        if lib_backend == "auto":  # on an H200 auto builds fa3's modules (fa2's CUDA-core one for decode)
            lib_backend = "fa3" if "fa3" in offered and api != "decode" else "fa2"
        module = variant_key(CASES[api][0], lib_backend).module_key
        elapsed = time.perf_counter() - t_start
        cost = COMPILE_S.get(lib_backend, 60.0)
        if module not in built and elapsed + cost > args.budget_s:
            for case in CASES[api]:
                budget_row(
                    backend,
                    api,
                    case,
                    f"module not built and {elapsed:.0f}s + ~{cost:.0f}s compile > budget {args.budget_s:.0f}s",
                )
            continue
        adapter = fi.TARGET.make(backend, dev)
        for case in CASES[api][:2]:
            one(adapter, backend, api, case, module)
        ran.append((backend, api, module))
        if isinstance(adapter, fi.FlashInferKernel) and adapter.graph_events:
            rec.doc.setdefault("graph_events", {})[backend + "/" + api] = list(adapter.graph_events)
    for backend, api, module in ran:
        adapter = fi.TARGET.make(backend, dev)
        for case in CASES[api][2:]:
            elapsed = time.perf_counter() - t_start
            if elapsed > args.budget_s:
                budget_row(backend, api, case, f"{elapsed:.0f}s > budget {args.budget_s:.0f}s")
                continue
            one(adapter, backend, api, case, module)
    rec.doc["elapsed_s"] = time.perf_counter() - t_start
    counts: dict[str, int] = {}
    for x in rec.doc["results"]:
        counts[x["status"]] = counts.get(x["status"], 0) + 1
    rec.doc["counts"] = counts
    rec.flush()
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(cols)]
    print()
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for r_ in rows:
        print("  ".join(x.ljust(w) for x, w in zip(r_, widths)))
    print(f"\n{counts} in {rec.doc['elapsed_s']:.0f}s; JSON: {rec.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
