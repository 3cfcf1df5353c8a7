#!/usr/bin/env python
"""Reproduction of a scenario-machine failure: flashinfer-sm90-decode, invariant no_unexpected_error.

Written by `attncheck explore` on the H200 (2026-12-01, third sitting) and kept as the evidence of the
ledger entry flashinfer-decode-empty-batch-run: BatchDecodeWithPagedKVCacheWrapper.plan() accepts a batch
of no requests and run() then divides by it (decode.py:2855 `q_len_per_req = q.size(0) // actual_batch_size`).

    python repro-flashinfer-sm90-decode-explore-no_unexpected_error.py      # exit 1 when the defect shows, 0 when it does not

Replays the library calls the adapter made, as plain flashinfer calls on the saved tensors, and
checks each run against the saved oracle reference, a fresh wrapper given the same plan, and the
backend the routing spec expects. Only torch and flashinfer are imported.
What the machine saw:
    no_unexpected_error: run raised ZeroDivisionError: integer division or modulo by zero
The sequence of calls (shrunk, where the exploration found it):
     1. plan auto   Case('decode', (), (), 1, 1), seed=0
     2. run  auto    [raise: ZeroDivisionError: integer division or modulo by zero]
"""

import math
import sys
from pathlib import Path

import torch
import flashinfer

DATA = torch.load(Path(__file__).with_suffix(".pt"), weights_only=True)
DEV = DATA["device"]
T = [t.to(DEV) for t in DATA["tensors"]]
EXACT = DATA["exact"]


def zeros(shape, dtype):
    return torch.zeros(shape, dtype=dtype, device=DEV)


def poisoned(shape, dtype):
    return torch.full(shape, math.nan, dtype=dtype, device=DEV)


def backend_of(w):
    """What the wrapper says it resolved: decode's resolved_backend property, else _backend."""
    if isinstance(getattr(type(w), "resolved_backend", None), property):
        return str(w.resolved_backend)
    return str(getattr(w, "_backend", "unknown"))


def reason_of(w):
    """The ROCm fork's backend_fallback_reason; upstream has no such attribute (no reason given)."""
    return w.backend_fallback_reason if hasattr(w, "backend_fallback_reason") else "NOT_REPORTED"


def split(res):
    return (res[0], res[1]) if isinstance(res, (tuple, list)) else (res, None)


def against_reference(n, out, lse, lse_base2):
    """The output and LSE against the saved oracle reference and its bounds; the problems found."""
    ref, problems = DATA["refs"][n], []
    o, want = out.double().cpu(), ref["out"]
    finite = torch.isfinite(want)
    bad = torch.isnan(o) & finite
    if bool(bad.any()):
        problems.append(f"{int(bad.sum())} output elements NaN or never written")
    err = (o - want).abs()[finite & ~bad]
    if err.numel() and float(err.max()) > ref["bound_out"]:
        problems.append(f"output off by {float(err.max()):.3g} > bound {ref['bound_out']:.3g}")
    if lse is not None:
        got = lse.double().cpu() * (math.log(2.0) if lse_base2 else 1.0)
        fin = torch.isfinite(ref["lse"])
        e = (got - ref["lse"]).abs()[fin]
        if (e.numel() and float(e.nan_to_num(nan=math.inf).max()) > ref["bound_lse"]) or \
                bool((got[~fin] != ref["lse"][~fin]).any()):
            problems.append("LSE differs from the reference")
    return problems


def against_spec(n, backend, reason, not_reported):
    """The backend and reason against the route the routing spec expects; the problems found."""
    expect, problems = DATA["expect"][n], []
    if backend != expect["backend"]:
        problems.append(f"ran {backend!r}, the routing spec expects {expect['backend']!r}")
    r = expect["reason"]
    if r is None and reason is not None:
        problems.append(f"reason {reason!r}, the spec expects none")
    elif r == "NOT_REPORTED" and not not_reported:
        problems.append(f"reason {reason!r}, the spec expects the library to give none")
    elif isinstance(r, dict) and not (isinstance(reason, str) and r["fragment"] in reason):
        problems.append(f"reason {reason!r} is not {r['name']} (text with {r['fragment']!r})")
    return problems


def check(n, res, backend, reason, ctl, ctl_backend, ctl_reason):
    """What the machine checks after a run; returns the problems found."""
    torch.cuda.synchronize() if DEV.startswith("cuda") else None
    out, lse = split(res)
    problems = against_reference(n, out, lse, DATA["lse_base2"][n])
    o, c = out.double().cpu(), split(ctl)[0].double().cpu()
    d = float((o - c).abs().nan_to_num(nan=math.inf).max()) if o.numel() else 0.0
    if (EXACT and d > 0) or d > DATA["refs"][n]["bound_out"]:
        problems.append(f"output differs from a fresh wrapper's for the same plan (max |diff| {d:.3g})")
    if (backend, reason) != (ctl_backend, ctl_reason):
        problems.append(f"ran {backend!r} ({reason!r}); a fresh wrapper runs {ctl_backend!r} ({ctl_reason!r})")
    return problems + against_spec(n, backend, reason, reason == "NOT_REPORTED")


def reproduced(n, what):
    print(f"REPRODUCED at step {n}:\n  " + "\n  ".join(what))
    return 1


def main():
    # step 1: plan auto   Case('decode', (), (), 1, 1), seed=0
    w1 = flashinfer.BatchDecodeWithPagedKVCacheWrapper(zeros((134217728,), torch.uint8), 'NHD', backend='auto', use_tensor_cores=False)
    w1.plan(T[0], T[1], T[2], 1, 1, 128, 1, window_left=-1, logits_soft_cap=None, sm_scale=0.08838834764831843, q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16, o_data_type=torch.bfloat16)
    # step 2: run  auto    [raise: ZeroDivisionError: integer division or modulo by zero]
    try:
        res = w1.run(T[3], (T[4], T[5]), out=poisoned((0, 1, 128), torch.bfloat16), return_lse=True, lse=poisoned((0, 1), torch.float32))
    except Exception as e:
        return reproduced(2, [f'run raised {type(e).__name__}: {e}'])
    print("not reproduced: every call held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
