"""A machine failure on an eager flashinfer adapter as a script of plain FlashInfer calls.

    flashinfer_script(failure, subject, name) -> (script text, data for the .pt beside it)

The adapter logs every library call it makes (kernels/flashinfer_calls.py); each Step of the
shrunk sequence carries the calls it made. The script is those calls, one line each, in order, on
the saved tensors: the wrappers' construction, plan() and run(). After each run it checks what
the machine checked: the output and LSE against the saved fp32 oracle reference and its bound, a
fresh wrapper (the same constructor, the same last plan, the same run) for the output and the
backend, and the backend the routing spec expects. Only torch and flashinfer are imported, so a
defect that reproduces is the library's. `python <name>.py` exits 1 when the defect shows, 0 when
it does not.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from kernels.flashinfer_calls import LibraryCall, Poisoned, Zeros
from scenarios.machines import ScenarioFailure, Step, Subject

_PRELUDE = r'''
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


def check(n, res, backend, reason, ctl, ctl_backend, ctl_reason):
    """What the machine checks after a run; returns the problems found."""
    torch.cuda.synchronize() if DEV.startswith("cuda") else None
    ref, expect, problems = DATA["refs"][n], DATA["expect"][n], []
    out, lse = split(res)
    o, want = out.double().cpu(), ref["out"]
    finite = torch.isfinite(want)
    bad = torch.isnan(o) & finite
    if bool(bad.any()):
        problems.append(f"{int(bad.sum())} output elements NaN or never written")
    err = (o - want).abs()[finite & ~bad]
    if err.numel() and float(err.max()) > ref["bound_out"]:
        problems.append(f"output off by {float(err.max()):.3g} > bound {ref['bound_out']:.3g}")
    if lse is not None:
        got = lse.double().cpu() * (math.log(2.0) if DATA["lse_base2"][n] else 1.0)
        fin = torch.isfinite(ref["lse"])
        e = (got - ref["lse"]).abs()[fin]
        if (e.numel() and float(e.nan_to_num(nan=math.inf).max()) > ref["bound_lse"]) or \
                bool((got[~fin] != ref["lse"][~fin]).any()):
            problems.append("LSE differs from the reference")
    c = split(ctl)[0].double().cpu()
    d = float((o - c).abs().nan_to_num(nan=math.inf).max()) if o.numel() else 0.0
    if (EXACT and d > 0) or d > ref["bound_out"]:
        problems.append(f"output differs from a fresh wrapper's for the same plan (max |diff| {d:.3g})")
    if (backend, reason) != (ctl_backend, ctl_reason):
        problems.append(f"ran {backend!r} ({reason!r}); a fresh wrapper runs {ctl_backend!r} ({ctl_reason!r})")
    if backend != expect["backend"]:
        problems.append(f"ran {backend!r}, the routing spec expects {expect['backend']!r}")
    r = expect["reason"]
    if r is None and reason is not None:
        problems.append(f"reason {reason!r}, the spec expects none")
    elif r == "NOT_REPORTED" and reason != "NOT_REPORTED":
        problems.append(f"reason {reason!r}, the spec expects the library to give none")
    elif isinstance(r, dict) and not (isinstance(reason, str) and r["fragment"] in reason):
        problems.append(f"reason {reason!r} is not {r['name']} (text with {r['fragment']!r})")
    return problems


def reproduced(n, what):
    print(f"REPRODUCED at step {n}:\n  " + "\n  ".join(what))
    return 1


def main():
'''

_END = '''    print("not reproduced: every call held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


class _Writer:
    """Formats logged calls as Python source; tensors become T[i] and are collected for the .pt."""

    def __init__(self) -> None:
        self.tensors: list[torch.Tensor] = []

    def value(self, v: Any) -> str:
        if isinstance(v, torch.Tensor):
            self.tensors.append(v)
            return f"T[{len(self.tensors) - 1}]"
        if isinstance(v, Zeros):
            return f"zeros({v.shape}, {v.dtype})"
        if isinstance(v, Poisoned):
            return f"poisoned({v.shape}, {v.dtype})"
        if isinstance(v, float) and not math.isfinite(v):
            return "math.nan" if math.isnan(v) else ("math.inf" if v > 0 else "-math.inf")
        if isinstance(v, tuple):
            inner = ", ".join(self.value(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if isinstance(v, list):
            return "[" + ", ".join(self.value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k!r}: {self.value(x)}" for k, x in v.items()) + "}"
        return repr(v)

    def call(self, c: LibraryCall, on: str | None = None) -> str:
        target = on or c.on
        parts = [self.value(a) for a in c.args] + [f"{k}={self.value(v)}" for k, v in c.kwargs.items()]
        return f"{target}.{c.method}({', '.join(parts)})"


def _tolerated(step: Step, failure: ScenarioFailure) -> bool:
    """Whether a raise at this step is expected (the ledger, the spec, a documented refusal)."""
    if step.outcome in ("known", "refuse"):
        return True
    return step.outcome == "raise" and step is not failure.steps[-1]


def flashinfer_script(failure: ScenarioFailure, subject: Subject, name: str) -> tuple[str, dict[str, Any]]:
    from scenarios.repro import _expect, _header, _reference

    w = _Writer()
    lines: list[str] = []
    ctor: dict[str, LibraryCall] = {}
    last_plan: dict[str, LibraryCall] = {}
    refs, expect, base2 = {}, {}, {}
    for s in failure.steps:
        if not s.library_calls:
            continue
        lines.append(f"    # step {s.n}: {s.line().split('. ', 1)[1]}")
        for c in s.library_calls:
            if c.result is not None:  # a wrapper's construction
                ctor[c.result] = c
                lines.append(f"    {c.result} = {w.call(c)}")
                continue
            if c.method == "plan":
                last_plan[c.on] = c
            code = w.call(c)
            if c.method == "plan" and s.outcome != "ok":
                if _tolerated(s, failure):
                    lines += ["    try:", f"        {code}", "    except Exception as e:",
                              f"        print(f'step {s.n}: plan raised {{type(e).__name__}} (expected: "
                              f"{s.outcome})')"]
                else:
                    lines += ["    try:", f"        {code}", "    except Exception as e:",
                              f"        return reproduced({s.n}, [f'plan raised {{type(e).__name__}}: {{e}}'])",
                              f"    print('not reproduced: step {s.n} plan did not raise')", "    return 0"]
                continue
            if c.method == "plan":
                lines.append(f"    {code}")
                continue
            # a run (wrapper run or single prefill)
            if s.outcome != "ok":
                tail = ("        print(f'step {n}: run raised {{type(e).__name__}} (expected: {o})')".format(
                    n=s.n, o=s.outcome) if _tolerated(s, failure) else
                    f"        return reproduced({s.n}, [f'run raised {{type(e).__name__}}: {{e}}'])")
                lines += ["    try:", f"        res = {code}", "    except Exception as e:", tail]
                continue
            lines.append(f"    res = {code}")
            refs[s.n], expect[s.n] = _reference(s.case, s.seed), _expect(s)
            base2[s.n] = c.kwargs.get("lse_base", "log2") != "ln"
            if c.on == "flashinfer":  # single prefill: no wrapper, so no backend to read
                lines.append(f"    ctl = {code}")
                lines.append(f"    problems = check({s.n}, res, {s.backend!r}, 'NOT_REPORTED', ctl, {s.backend!r}, "
                             f"'NOT_REPORTED')")
            else:
                lines.append("    # the control: a fresh wrapper, the same construction, plan and run")
                lines.append(f"    ctl_w = {w.call(ctor[c.on])}")
                lines.append(f"    {w.call(last_plan[c.on], on='ctl_w')}")
                lines.append(f"    ctl = {w.call(c, on='ctl_w')}")
                lines.append(f"    problems = check({s.n}, res, backend_of({c.on}), reason_of({c.on}), ctl, "
                             f"backend_of(ctl_w), reason_of(ctl_w))")
            lines.append(f"    if problems:\n        return reproduced({s.n}, problems)")
    how = ("Replays the library calls the adapter made, as plain flashinfer calls on the saved tensors, and\n"
           "checks each run against the saved oracle reference, a fresh wrapper given the same plan, and the\n"
           "backend the routing spec expects. Only torch and flashinfer are imported.")
    script = _header(failure, name, how) + _PRELUDE + "\n".join(lines) + "\n" + _END
    data = {"device": str(subject.device), "exact": subject.exact_history, "tensors": w.tensors, "refs": refs,
            "expect": expect, "lse_base2": base2}
    return script, data
