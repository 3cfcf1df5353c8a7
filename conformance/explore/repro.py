"""Turn a machine failure into a standalone reproduction script, written next to its data.

    write_repro(failure, subject, directory) -> Path of <name>.py (and <name>.pt beside it)

`python <name>.py` replays the shrunk sequence of calls and exits 1 when the defect shows (a check
fails, or the call the failure recorded raises again), 0 when it does not. The .pt file holds what
the script compares against: the fp32 oracle's output and LSE with their tolerance bounds, and for
the torch target the concrete per-request tensors.

Three kinds, by the subject's Recipe:
* "torch": only torch. Each run is replayed as the SDPA (or FlexAttention) calls the torch adapter
  makes, one per request, on the saved tensors (KV already gathered through the page table, masks
  already built), then compared with the reference; for `auto`, torch's own backend choice
  (`torch._fused_sdp_choice`, as the adapter observes it) is compared with the spec's expectation.
  The harness's own adapters are not used, so a defect that reproduces is torch's.
* "flashinfer": plain FlashInfer calls, the very ones an eager flashinfer adapter logged
  (conformance/explore/repro_flashinfer.py); neither attncheck nor its adapter is imported.
* "library": the library through its own API (the recipe's import and constructor), planned and run
  in the recorded order on inputs regenerated from (case, seed); each run is compared with the
  reference, with a fresh adapter given the same plan, and with the expected route.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path
from string import Template
from typing import Any

import torch

from kernels._torch_common import kv_slots, physical_kv
from kernels.torch_sdpa import call_form, explicit_mask
from scenarios.case import Case
from conformance.explore.machines import ScenarioFailure, Subject, case_expr
from conformance.isolate import INJECTED_ENV
from conformance.explore.repro_flashinfer import flashinfer_script
from conformance.explore.script_parts import SCRIPT_CHECKS, expected_route, script_header, reference_data
from scenarios.tensors import materialize


def slug(text: str) -> str:
    """`text` as a file-name part: letters, digits, '_', '.' and '-' kept, every other run as '_'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def script_name(failure: ScenarioFailure, phase: str) -> str:
    return slug(f"repro-{failure.subject}-{phase}-{failure.invariant}")


# How long a script written for a finding may take when it is run at once to check it reproduces: a
# GPU script may build a kernel module first (a JIT library's first call in a process, tens of seconds).
VERIFY_SECONDS = {"cpu": 120.0, "cuda": 600.0}


# A script run with the fault the exploring process runs under (conformance/isolate.py INJECTED_ENV) injected first.
_UNDER_FAULT = (
    "import runpy, sys\n"
    "from conformance.isolate import injected_from_environment\n"
    "sys.argv = sys.argv[1:]\n"
    "with injected_from_environment():\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def verify_script(script: Path, device: str = "cpu") -> tuple[str, str]:
    """Run `python script` in a fresh process: ("reproduces" (exit 1) | "does not reproduce" (exit 0) |
    "could not run: why", the last lines it printed). Where this process runs under one of attncheck's faults
    (INJECTED_ENV), the fresh process injects it before the script runs: the library as the exploration saw it."""
    limit = VERIFY_SECONDS["cuda" if device.startswith("cuda") else "cpu"]
    argv, env = [sys.executable, str(script)], None
    if os.environ.get(INJECTED_ENV):
        root = str(Path(__file__).resolve().parents[2])
        argv[1:1] = ["-c", _UNDER_FAULT]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=limit, cwd=script.parent, env=env)
    except subprocess.TimeoutExpired:
        return f"could not run: no end within {limit:.0f} s", ""
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-6:])
    if done.returncode == 1 and "REPRODUCED" in done.stdout:
        return "reproduces", tail
    if done.returncode == 0:
        return "does not reproduce", tail
    how = f"killed by signal {-done.returncode}" if done.returncode < 0 else f"exit status {done.returncode}"
    return f"could not run: {how}", tail


def write_repro(failure: ScenarioFailure, subject: Subject, directory: Path, phase: str = "explore") -> Path:
    """Write <directory>/<name>.py and <name>.pt for `failure`; returns the script's path."""
    directory.mkdir(parents=True, exist_ok=True)
    name = script_name(failure, phase)
    if subject.recipe.kind == "flashinfer":
        script, data = flashinfer_script(failure, subject, name)
    else:
        script, data = (_torch_script if subject.recipe.kind == "torch" else _library_script)(failure, subject, name)
    torch.save(data, directory / f"{name}.pt")
    path = directory / f"{name}.py"
    path.write_text(script)
    return path


# ---- library scripts ----------------------------------------------------------------------------------
_LIBRARY_BODY = r'''
import math
import sys
from pathlib import Path

import torch

try:
    import scenarios  # noqa: F401  (attncheck installed, or run from the checkout's root)
except ImportError:  # not installed: the checkout this script lies in, if it lies in one
    HERE = Path(__file__).resolve().parent
    ROOT = next((p for p in (HERE, *HERE.parents) if (p / "scenarios" / "case.py").is_file()), None)
    if ROOT is None:
        print("attncheck is not importable here: pip install -e <attncheck checkout>, or keep this script "
              "inside the checkout", file=sys.stderr)
        sys.exit(2)
    sys.path.insert(0, str(ROOT))
from scenarios.case import Case
from scenarios.tensors import materialize
from kernels._env import warm_mkl_vml
$imports

warm_mkl_vml()  # oneMKL picks its VML kernels in this one thread before any attention is computed

DATA = torch.load(Path(__file__).with_suffix(".pt"), weights_only=True)
DEVICE = $device  # where the subject ran: the cases are materialised there
EXACT = $exact
GRAPH = $graph
LAST = $last
CALLS = [  # (step, call, backend, case, seed)
$calls
]


def make(backend):
    return $make

$checks


def same(a, b):
    return a.shape == b.shape and bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())


def check(n, adapter_make, inputs, got):
    """What the machine checks after a run; returns the problems found."""
    problems = against_reference(n, got.out, got.lse, got.lse_base == 2.0)
    control = adapter_make()
    try:
        control.plan(inputs)
        fresh = control.run(inputs)
    except Exception as e:  # the machine judges a control that raises, as here
        return problems + [f"a fresh adapter raised {type(e).__name__}: {e} on the same plan"]
    if EXACT and not same(got.out, fresh.out):
        problems.append("output differs from a fresh adapter's for the same plan")
    if not GRAPH and (got.resolved_backend, got.fallback_reason) != (fresh.resolved_backend, fresh.fallback_reason):
        problems.append(f"ran {got.resolved_backend!r} ({got.fallback_reason!r}); a fresh adapter runs "
                        f"{fresh.resolved_backend!r} ({fresh.fallback_reason!r})")
    return problems + against_spec(n, got.resolved_backend, got.fallback_reason,
                                   repr(got.fallback_reason) == "NOT_REPORTED")


def main():
    adapters, planned = {}, {}
    for n, call, backend, case, seed in CALLS:
        if call == "reset":  # the machine met a known defect here and went on with a new adapter
            adapters[backend] = make(backend)
            planned.pop(backend, None)
            continue
        adapter = adapters.setdefault(backend, make(backend))
        if call == "plan":
            inputs = materialize(case, seed, DEVICE)
            raises = DATA["raises"].get(n)
            try:
                adapter.plan(inputs)
            except Exception as e:
                if raises in (type(e).__name__, "*"):
                    continue
                print(f"REPRODUCED at step {n}: plan raised {type(e).__name__}: {e}")
                return 1
            if n == LAST:
                print(f"not reproduced: step {n} plan did not raise")
                return 0
            planned[backend] = inputs
        else:
            inputs = planned[backend]
            try:
                got = adapter.run(inputs)
                if DEVICE.startswith("cuda"):  # a kernel's fault surfaces at a sync: here, inside the try
                    torch.cuda.synchronize()
            except Exception as e:
                if DATA["raises"].get(n) == "*":
                    continue
                print(f"REPRODUCED at step {n}: run raised {type(e).__name__}: {e}")
                return 1
            if n in DATA["known"]:  # a violation the machine attributed to a known defect
                print(f"step {n}: known ({DATA['known'][n]}), not judged")
                continue
            problems = check(n, lambda: make(backend), inputs, got)
            if problems:
                print(f"REPRODUCED at step {n} ({backend}):\n  " + "\n  ".join(problems))
                return 1
    print("not reproduced: every run held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _library_script(failure: ScenarioFailure, subject: Subject, name: str) -> tuple[str, dict[str, Any]]:
    calls, refs, expect, raises, known = [], {}, {}, {}, {}
    for s in failure.steps:
        if s.outcome in ("decline", "refuse", "not-launched"):
            continue  # the library was not asked (supports or the ledger said no) or refused, as documented
        calls.append(f"    ({s.n}, {s.call!r}, {s.backend!r}, {case_expr(s.case)}, {s.seed}),")
        if s.call == "run" and s.outcome == "known":
            known[s.n] = s.note.split(":", 1)[0]
        if s.call == "plan" and s.outcome == "raise" and s.expected is not None and s.expected.raises:
            raises[s.n] = s.expected.raises
        if s.outcome == "known":  # a raise the known-failure ledger explains: any exception is expected
            raises[s.n] = "*"
        if s.call == "run" and s.outcome in ("ok", "raise"):  # a run that raised here may not raise there: judged
            refs[s.n] = reference_data(s.case, s.seed)
            expect[s.n] = expected_route(s)
    with subject.context() if subject.context else contextlib.nullcontext():  # a stand-in is made installed
        graph = bool(getattr(subject.make(subject.backend), "graph", False))
    body = Template(_LIBRARY_BODY).substitute(
        imports=subject.recipe.imports,
        make=subject.recipe.make,
        checks=SCRIPT_CHECKS,
        exact=repr(subject.exact_history),
        graph=repr(graph),
        last=failure.steps[-1].n,
        calls="\n".join(calls),
        device=repr(subject.device),
    )
    how = (
        "Replays the calls on the library through its own API, then checks each run against the saved\n"
        "oracle reference, a fresh adapter given the same plan, and the route the spec expects."
    )
    data = {"refs": refs, "expect": expect, "raises": raises, "known": known}
    return script_header(failure, name, how) + body, data


# ---- torch scripts ------------------------------------------------------------------------------------
_TORCH_BODY = r'''
import math
import sys
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

# torch warns that a lower-right causal bias with more query rows than keys "will produce NaNs";
# whether it does is what the script checks.
warnings.filterwarnings("ignore", message="Lower right causal bias")

DATA = torch.load(Path(__file__).with_suffix(".pt"), weights_only=True)
FORCED = {"math": "MATH", "flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION"}
NAMES = {"MATH": "math", "FLASH_ATTENTION": "flash", "EFFICIENT_ATTENTION": "efficient", "CUDNN_ATTENTION": "cudnn"}


def lower_right(qo, kv):
    return torch.arange(kv).view(1, -1) <= torch.arange(qo).view(-1, 1) + (kv - qo)


def choice(q, k, v, r, scale, gqa):
    """The backend SDPA picks for this call, as torch decides it (the adapter observes it the same way)."""
    mask, causal = r["mask"], False
    if r["form"] == "causal":
        if r["qo"] == r["kv"]:
            causal = True
        else:
            params = torch.backends.cuda.SDPAParams(q, k, v, None, 0.0, False, gqa)
            if torch.backends.cuda.can_use_flash_attention(params, False):
                return "flash"
            if torch.backends.cuda.can_use_efficient_attention(params, False):
                return "efficient"
            mask = lower_right(r["qo"], r["kv"])
    c = int(torch._fused_sdp_choice(q, k, v, mask, 0.0, causal, scale=scale, enable_gqa=gqa))
    for member, name in NAMES.items():
        if int(getattr(SDPBackend, member).value) == c:
            return name
    return f"sdp-backend-{c}"


def attend(run, r):
    q, k, v = r["q"], r["k"], r["v"]
    if run["backend"] == "flex":
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        if r["qo"] == 0:
            return q.new_zeros((1, q.shape[1], 0, v.shape[-1]))
        if r["kv"] == 0:
            return q.new_zeros((1, q.shape[1], r["qo"], v.shape[-1]))
        keep = r["mask"]
        if keep is None and r["form"] == "causal":
            keep = lower_right(r["qo"], r["kv"])
        block = None if keep is None else create_block_mask(lambda b, h, i, j: keep[i, j], None, None,
                                                            r["qo"], r["kv"], device="cpu")
        cap = run["cap"]
        mod = None if cap <= 0 else (lambda s, b, h, i, j: cap * torch.tanh(s / cap))
        return flex_attention(q, k, v, score_mod=mod, block_mask=block, scale=run["scale"], enable_gqa=True)
    mask = causal_lower_right(r["qo"], r["kv"]) if r["form"] == "causal" else r["mask"]
    if run["backend"] == "auto":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=run["scale"], enable_gqa=run["gqa"])
    with sdpa_kernel([getattr(SDPBackend, FORCED[run["backend"]])]):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=run["scale"], enable_gqa=run["gqa"])


def main():
    for run in DATA["runs"]:
        ref = run["ref_out"]
        out = ref.new_full(ref.shape, math.nan)
        chosen = set()
        for r in run["requests"]:
            o = attend(run, r)
            out[r["q0"]:r["q0"] + r["qo"]] = o[0].transpose(0, 1).double()
            if run["backend"] == "auto" and r["qo"] > 0 and r["kv"] > 0:
                chosen.add(choice(r["q"], r["k"], r["v"], r, run["scale"], run["gqa"]))
        problems = []
        finite = torch.isfinite(ref)
        bad = torch.isnan(out) & finite
        if bool(bad.any()):
            problems.append(f"{int(bad.sum())} output elements NaN or never written")
        err = (out - ref).abs()[finite & ~bad]
        if err.numel() and float(err.max()) > run["bound_out"]:
            problems.append(f"output off by {float(err.max()):.3g} > bound {run['bound_out']:.3g}")
        if run["backend"] == "auto" and run["expect"] is not None:
            got = "+".join(sorted(chosen)) if chosen else "empty"
            if got != run["expect"]:
                problems.append(f"SDPA chose {got!r}, the routing spec expects {run['expect']!r}")
        if problems:
            print(f"REPRODUCED at step {run['n']} ({run['backend']}):\n  " + "\n  ".join(problems))
            return 1
    print("not reproduced in plain torch: every call held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _torch_requests(case: Case, seed: int) -> list[dict[str, Any]]:
    """The per-request (q, k, v, mask) the torch adapters hand SDPA: KV gathered, masks built."""
    inputs = materialize(case, seed)
    slots = kv_slots(inputs)
    k_store, v_store = physical_kv(inputs)
    form = call_form(case)
    out, q0 = [], 0
    for i, (qo, kv) in enumerate(zip(case.qo_lens, case.kv_lens)):
        mask = None
        if form == "explicit":
            mask = explicit_mask(
                qo,
                kv,
                causal=case.causal,
                window_left=case.window_left,
                custom=inputs.request_mask(i),
                device=inputs.device,
            )
        out.append(
            {
                "q": inputs.q[q0 : q0 + qo].transpose(0, 1)[None].contiguous(),
                "k": k_store.index_select(1, slots.per_request[i])[None].contiguous(),
                "v": v_store.index_select(1, slots.per_request[i])[None].contiguous(),
                "mask": mask,
                "form": form,
                "qo": qo,
                "kv": kv,
                "q0": q0,
            }
        )
        q0 += qo
    return out


def _torch_script(failure: ScenarioFailure, subject: Subject, name: str) -> tuple[str, dict[str, Any]]:
    runs = []
    for s in failure.steps:
        if s.call != "run" or s.outcome in ("refuse", "known"):
            continue  # refused as documented, or a violation the machine attributed to a known defect
        c = s.case
        ref = reference_data(c, s.seed)
        e = s.expected
        runs.append(
            {
                "n": s.n,
                "backend": s.backend,
                "scale": c.scale,
                "gqa": c.group_size > 1,
                "cap": c.logits_soft_cap,
                "requests": _torch_requests(c, s.seed),
                "ref_out": ref["out"],
                "bound_out": ref["bound_out"],
                "expect": e.backend if e is not None else None,
            }
        )
    how = (
        "Replays every run as the SDPA / FlexAttention calls the torch adapter makes, on the saved tensors,\n"
        "and checks the output against the saved oracle reference and SDPA's backend choice against the\n"
        "routing spec. Only torch is imported."
    )
    return script_header(failure, name, how) + _TORCH_BODY, {"runs": runs}
