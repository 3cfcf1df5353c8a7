"""Build the FlashInfer JIT modules an exploration can load, before its first subject runs.

A fresh GPU runner has an empty JIT cache: without this, modules are built inside the examples that
first need them (docs/h200-runner.md measures what that costs). A module is decided by the API, the
dtypes, the head dims, whether a window and a soft cap are on, and the kernel (fa2 or fa3); one case
per combination of those in each subject's profile, asked of every backend the subject runs, names
every module it can load (kernels/flashinfer/prebuild.py builds them, all cores on it).
"""

from __future__ import annotations

from typing import Sequence

from conformance.explore.machines import Subject, machine_for
from kernels import get_target
from kernels.flashinfer.prebuild import BuildResult, ModuleRequest, prebuild, requests_for, supports_fn
from scenarios.case import Case
from scenarios.strategies import Profile, probe_case

WINDOW = 4  # any window turns the sliding-window variant on
SOFT_CAP = 30.0  # any cap turns the soft-cap variant on


def axis_cases(profile: Profile) -> list[Case]:
    """One case per combination of what decides a module in `profile` (layout, dtype, head dims, window,
    soft cap), and one masked case per layout that takes masks (the packbits module)."""
    out = []
    for layout in profile.layouts:
        for dtype in profile.dtypes:
            for qk, vo in profile.head_dims():
                base = probe_case(layout, dtype).replace(head_dim_qk=qk, head_dim_vo=vo)
                for window in (-1, WINDOW) if profile.window else (-1,):
                    for cap in (0.0, SOFT_CAP) if profile.soft_cap else (0.0,):
                        out.append(base.replace(window_left=window, logits_soft_cap=cap))
                if profile.mask and layout in ("paged", "ragged"):
                    out.append(base.replace(mask="custom"))
    return out


def module_requests(subjects: Sequence[Subject], device: str) -> list[ModuleRequest]:
    """Every module the FlashInfer subjects among `subjects` can load, each once, in first-seen order."""
    target = get_target("flashinfer")
    supports = supports_fn(target, device)
    out: dict[ModuleRequest, None] = {}
    for s in subjects:
        if s.target != "flashinfer":
            continue
        cases = axis_cases(machine_for(s).profile)
        for r in requests_for(cases, (s.backend, *s.explicit), device, supports):
            out.setdefault(r, None)
    return list(out)


def prebuild_subjects(subjects: Sequence[Subject], device: str) -> tuple[int, BuildResult]:
    """Build what `module_requests` names: (how many modules, the build's result)."""
    reqs = module_requests(subjects, device)
    return len(reqs), prebuild(reqs) if reqs else BuildResult()
