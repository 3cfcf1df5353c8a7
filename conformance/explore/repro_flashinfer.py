"""A machine failure on an eager flashinfer adapter as a script of plain FlashInfer calls.

    flashinfer_script(failure, subject, name) -> (script text, data for the .pt beside it)

The adapter logs every library call it makes (kernels/flashinfer/calls.py); each Step of the
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

from kernels.flashinfer.calls import LibraryCall, Poisoned, Zeros
from conformance.explore.machines import ScenarioFailure, Step, Subject
from conformance.explore.script_parts import SCRIPT_CHECKS, expected_route, script_header, reference_data

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

'''

_CHECK_AND_MAIN = r'''

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
'''

_END = """    print("not reproduced: every call held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
"""


class _Writer:
    """Formats logged calls as Python source; tensors become T[i] and are collected for the .pt."""

    def __init__(self) -> None:
        self.tensors: list[torch.Tensor] = []
        self._index: dict[int, int] = {}  # id(tensor) -> its T index: the control's replay saves nothing twice

    def value(self, v: Any) -> str:
        if isinstance(v, torch.Tensor):
            if id(v) not in self._index:
                self._index[id(v)] = len(self.tensors)
                self.tensors.append(v)
            return f"T[{self._index[id(v)]}]"
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


# Inside a run's try: a kernel's fault is reported at the next synchronising call, so without it a run the
# machine saw raise returns here and its error surfaces later, outside the try, or never (the H200: "every
# call held" from a script whose ragged run read a mask at address 0; with the sync it raises there).
SYNC = "torch.cuda.synchronize() if DEV.startswith('cuda') else None"


def _try(code: str, step: Step, what: str, tolerated: bool) -> list[str]:
    """`code` inside a try: a raise is printed as expected, or returned as the reproduction."""
    handler = (
        f"        print(f'step {step.n}: {what} raised {{type(e).__name__}} (expected: {step.outcome})')"
        if tolerated
        else f"        return reproduced({step.n}, [f'{what} raised {{type(e).__name__}}: {{e}}'])"
    )
    body = [f"        {code}"] + ([f"        {SYNC}"] if what == "run" else [])
    return ["    try:", *body, "    except Exception as e:", handler]


def _judge_unraised_run(n: int) -> list[str]:
    """The machine's finding is that run n raised; where it does not here, its output is judged all the same
    (a script that only watched for the raise printed "every call held" for a run it never judged)."""
    return [
        f"    problems = against_reference({n}, *split(res), DATA['lse_base2'][{n}])",
        "    if problems:",
        f"        return reproduced({n}, ['run did not raise here, and what it wrote is wrong:'] + problems)",
        f"    print('not reproduced: step {n} run did not raise here, and its output held. A fault that depends "
        "on what ran before it may still show under: compute-sanitizer --tool memcheck python ' + sys.argv[0])",
        "    return 0",
    ]


def flashinfer_script(failure: ScenarioFailure, subject: Subject, name: str) -> tuple[str, dict[str, Any]]:
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
                tolerated = _tolerated(s, failure)
                lines += _try(code, s, "plan", tolerated)
                if not tolerated:
                    lines += [f"    print('not reproduced: step {s.n} plan did not raise')", "    return 0"]
                continue
            if c.method == "plan":
                lines.append(f"    {code}")
                continue
            # a run (wrapper run or single prefill); judged against the reference unless a raise is expected
            tolerated = s.outcome != "ok" and _tolerated(s, failure)
            if not tolerated:
                refs[s.n] = reference_data(s.case, s.seed)
                base2[s.n] = c.kwargs.get("lse_base", "log2") != "ln"
            if s.outcome != "ok":
                lines += _try(f"res = {code}", s, "run", tolerated)
                if not tolerated:
                    lines += _judge_unraised_run(s.n)
                continue
            lines.append(f"    res = {code}")
            expect[s.n] = expected_route(s)
            if c.on == "flashinfer":  # single prefill: no wrapper, so no backend to read
                lines.append(f"    ctl = {code}")
                lines.append(
                    f"    problems = check({s.n}, res, {s.backend!r}, 'NOT_REPORTED', ctl, {s.backend!r}, "
                    f"'NOT_REPORTED')"
                )
            else:
                lines.append("    # the control: a fresh wrapper, the same construction, plan and run")
                lines.append("    try:")
                lines.append(f"        ctl_w = {w.call(ctor[c.on])}")
                lines.append(f"        {w.call(last_plan[c.on], on='ctl_w')}")
                lines.append(f"        ctl = {w.call(c, on='ctl_w')}")
                lines.append(f"        {SYNC}")
                lines.append("    except Exception as e:  # the machine judges a control that raises, as here")
                lines.append(
                    f"        return reproduced({s.n}, [f'a fresh wrapper raised {{type(e).__name__}}: {{e}} "
                    "on the same plan'])"
                )
                lines.append(
                    f"    problems = check({s.n}, res, backend_of({c.on}), reason_of({c.on}), ctl, "
                    f"backend_of(ctl_w), reason_of(ctl_w))"
                )
            lines.append(f"    if problems:\n        return reproduced({s.n}, problems)")
    how = (
        "Replays the library calls the adapter made, as plain flashinfer calls on the saved tensors, and\n"
        "checks each run against the saved oracle reference, a fresh wrapper given the same plan, and the\n"
        "backend the routing spec expects. Only torch and flashinfer are imported."
    )
    script = (
        script_header(failure, name, how) + _PRELUDE + SCRIPT_CHECKS + _CHECK_AND_MAIN + "\n".join(lines) + "\n" + _END
    )
    data = {
        "device": str(subject.device),
        "exact": subject.exact_history,
        "tensors": w.tensors,
        "refs": refs,
        "expect": expect,
        "lse_base2": base2,
    }
    return script, data
