"""The pieces every reproduction script shares: the saved reference, the expected route, the
header, and the checks a library script makes after a run (conformance/explore/repro.py writes
torch and library scripts, repro_flashinfer.py plain FlashInfer ones; both take these from here).
"""

from __future__ import annotations

from typing import Any, Optional

from conformance.explore.machines import ScenarioFailure, Step, cached_truth
from kernels.protocol import NOT_REPORTED
from oracle.judge import judge
from routing.reasons import ReasonCode
from routing.spec import ExpectedRoute
from scenarios.case import Case

ANY = "<any>"  # what a route without a spec leaves unchecked


def reference_data(case: Case, seed: int) -> dict[str, Any]:
    """The oracle's output and LSE for (case, seed) with the bounds judge() applies to them."""
    t = cached_truth(case, seed)
    oc, lc = judge(t, t.ref.out.to(t.base.out.dtype), t.ref.lse)
    return {
        "out": t.ref.out.double(),
        "lse": t.ref.lse.double(),
        "bound_out": oc.bound,
        "bound_lse": lc.bound if lc is not None else float("inf"),
    }


def expected_route(step: Step) -> dict[str, Any]:
    """The route a run must show: a backend and a reason (None, NOT_REPORTED or a text fragment). With no
    spec, the backend asked for; `auto` without one (a version with no rows) any backend."""
    e: Optional[ExpectedRoute] = step.expected
    if e is None:
        return {"backend": ANY if step.backend == "auto" else step.backend, "reason": ANY, "raises": None}
    if isinstance(e.reason, ReasonCode):
        reason: Any = {"fragment": e.reason.fragment, "name": e.reason.name}
    else:
        reason = "NOT_REPORTED" if e.reason is NOT_REPORTED else None
    return {"backend": e.backend, "reason": reason, "raises": e.raises}


def script_header(failure: ScenarioFailure, name: str, how: str) -> str:
    steps = "\n".join("    " + s.line() for s in failure.steps)
    viol = "\n".join(f"    {v.invariant}: {v.detail}" for v in failure.violations)
    return f'''#!/usr/bin/env python
"""Reproduction of a scenario-machine failure: {failure.subject}, invariant {failure.invariant}.

    python {name}.py      # exit 1 when the defect shows, 0 when it does not

{how}
What the machine saw:
{viol}
The sequence of calls (shrunk, where the exploration found it):
{steps}
"""
'''.replace("\\", "\\\\")


# ---- the checks both library script kinds make after a run (inserted in each: a script stands alone) -----
SCRIPT_CHECKS = r'''
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
    if expect["backend"] != "<any>" and backend != expect["backend"]:
        problems.append(f"ran {backend!r}, the routing spec expects {expect['backend']!r}")
    r = expect["reason"]
    if r is None and reason is not None:
        problems.append(f"reason {reason!r}, the spec expects none")
    elif r == "NOT_REPORTED" and not not_reported:
        problems.append(f"reason {reason!r}, the spec expects the library to give none")
    elif isinstance(r, dict) and not (isinstance(reason, str) and r["fragment"] in reason):
        problems.append(f"reason {reason!r} is not {r['name']} (text with {r['fragment']!r})")
    return problems
'''
