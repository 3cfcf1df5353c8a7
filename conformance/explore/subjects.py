"""The subjects each explore target drives: which adapters, specs, modes and script recipes.

torch    the torch adapters: SDPA `auto` under test (routing/specs/torch_sdpa.py), the other
         backends requested explicitly; and FlexAttention under test on its own, drawing from its
         own profile (soft caps, which SDPA declines, so the `auto` subject never draws them)
standin  the flashinfer adapter on the ROCm fork's CPU stand-in (kernels/standins/), eager and
         graph, gfx942 and gfx950; the stand-in is installed around each subject's run
faults   the same, on gfx942, with one seed defect switched on per subject (kernels/standins/faults.py)
flashinfer  the installed FlashInfer on a GPU: `auto` under test per wrapper API (paged, ragged,
         decode), eager and graph, fa2/fa3 requested explicitly, against the CUDA routing spec; paged
         and ragged also in graph mode on one wrapper per batch size holding mask buffers, re-planned
         masked and unmasked (AdapterOptions.graph_wrappers="shared")
lifecycle  one subject per lifecycle fault of kernels/flashinfer/lifecycle_faults.py (and mode): the
         flashinfer subject of the fault's API and mode with the fault injected, on upstream's CPU
         model (kernels/standins/upstream_flashinfer/) on a CPU, on the installed FlashInfer on a GPU
lifecycle-clean  the same subjects with no fault: what the lifecycle subjects are compared with
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any, Callable, Iterator, Optional

import torch

from conformance.known_failures import entry_for, history_entry_for
from conformance.markers import arch_here
from kernels import _env, get_target
from kernels.protocol import AttentionKernel
from kernels.torch_target import per_request_backends
from routing.spec import RoutingEnv
from routing.specs import FLASHINFER_CUDA_LIBRARY, FLASHINFER_ROCM, TORCH_SDPA, flashinfer_cuda_spec, unmodelled_note
from conformance.explore.machines import Recipe, Subject
from kernels.standins.faults import FAULTS
from kernels.flashinfer.lifecycle_faults import FAULTS as LIFECYCLE_FAULTS, LifecycleFault, injected
from scenarios.errors import InvalidValue

TARGETS = ("torch", "standin", "faults", "flashinfer", "lifecycle", "lifecycle-clean")
# Targets whose subjects are expected to fail (faults switched on), and their clean comparison: explored with
# the budget's `hunt` counts (conformance/explore/loop.py).
HUNT_TARGETS = frozenset({"faults", "lifecycle", "lifecycle-clean"})
# Of those, the ones whose every subject must fail (a fault each): a run passes when none escaped. The clean
# comparison passes, as every other target does, when every subject held.
FAULT_TARGETS = frozenset({"faults", "lifecycle"})


def _torch_ledger(arch: str) -> Callable[[Any, str], Optional[tuple[str, str]]]:
    """A torch subject's `known`: the ledger's (id, status) for a case on a backend (or the kernel an auto run
    reported) at the installed torch on `arch`."""
    version = str(torch.__version__)

    def known(case: Any, backend: str) -> Optional[tuple[str, str]]:
        e = entry_for("torch", case.to_json(), backend, version, arch)
        return (e.id, e.status) if e is not None else None

    return known


def torch_subjects(device: str) -> list[Subject]:
    target = get_target("torch")
    here = target.available(device)
    if not here.ok:
        raise InvalidValue("--device", device, "a device the target runs on", f"{here.reason}: pass another --device")
    kind = _env.device_type(device)
    arch = "unknown" if kind == "cpu" else arch_here(device)
    return [
        Subject(
            name=f"torch-auto-{_env.device_type(device)}",
            target="torch",
            backend="auto",
            make=lambda b: target.make(b, device),
            # the per-request backends: the batched ones are checked by the parity runs, not explored
            explicit=tuple(b for b in per_request_backends(device) if b != "auto"),
            # flex compiles once per shape (about a second on a CPU): only the exploration asks
            directed_backend="flash",
            # torch's CPU rule reads no arch; on CUDA its rows are per arch (sm90 written)
            specs={"auto": TORCH_SDPA},
            env=RoutingEnv(arch=arch, device=kind),
            device=device,
            recipe=Recipe("torch"),
            exact_history=kind == "cpu",
            known=_torch_ledger(arch),
        ),
        # FlexAttention takes a soft cap (a score_mod): under test on its own, its profile is its own. No
        # spec: each run must be flex itself.
        Subject(
            name=f"torch-flex-{kind}",
            target="torch",
            backend="flex",
            make=lambda b: target.make(b, device),
            env=RoutingEnv(arch=arch, device=kind),
            device=device,
            recipe=Recipe("torch"),
            exact_history=kind == "cpu",
            known=_torch_ledger(arch),
        ),
    ]


STANDIN_ARCHS = ("gfx942", "gfx950")
# The stand-in never reads its workspace. The adapter's default is 128 MiB per wrapper and fresh control: zeroed
# by hand, it exhausted a 24 GiB CPU machine over a runner-sized exploration; mapped untouched on the CPU now
# (kernels/flashinfer/adapter.py zeroed_workspace), it still reserves that much address space per wrapper.
STANDIN_WORKSPACE = 1 << 16
# Single prefill exposes no fallback reason through the adapter (NOT_REPORTED where the spec says None).
STANDIN_EXCLUDED = {"single": "single_prefill_with_kv_cache exposes no reason; the spec's rows expect None"}


# The seed defects are routing and lifecycle defects at short lengths (the gates' 8 and 16): a stand-in
# subject draws no long context and no explicit sm_scale, which reach no gate and which, with every hunt
# shrinking each distinct failure it meets, made the CI fault hunts ten times longer (8 s to 85 s).
STANDIN_LIMITS = {"long_kv": False, "sm_scale": False}


def _standin_subject(name: str, arch: str, graph: bool, fault: Optional[str] = None) -> Subject:
    """The flashinfer adapter against the fork's stand-in (with `fault` switched on); installed around each run.

    The fork's stand-in is layered on upstream's CPU model, whose one kernel serves every backend: it copies
    upstream fa2's case-level defects, so the subject reads the ledger as the lifecycle subjects do
    (`_model_ledger`): a paged mask over a request with no pages (`flashinfer-paged-mask-zero-pages-*`) is
    not launched or is known, not found again by whichever draws reach it."""
    config = f"arch={arch!r}" + (f", fault={fault!r}" if fault else "")
    imports = f"from kernels import get_target\nfrom kernels.standins.rocm_fork import install\ninstall({config})"
    recipe = Recipe(
        "library",
        imports,
        f"get_target('flashinfer').make(backend, 'cpu', graph={graph!r}, workspace_bytes={STANDIN_WORKSPACE})",
    )
    return Subject(
        name=name,
        target="flashinfer",
        backend="auto",
        make=lambda b: get_target("flashinfer").make(b, "cpu", graph=graph, workspace_bytes=STANDIN_WORKSPACE),
        explicit=("fa2", "aiter"),
        specs={b: FLASHINFER_ROCM for b in ("auto", "fa2", "aiter")},
        env=RoutingEnv(arch=arch, device="cpu"),
        recipe=recipe,
        exclude_layouts=STANDIN_EXCLUDED,
        context=lambda: _installed(arch, fault),
        known=_model_ledger(),
        profile_limits=STANDIN_LIMITS,
    )


def _model_ledger() -> Callable[[Any, str], Optional[tuple[str, str]]]:
    """The ledger of the CPU model's kernel: fa2 of the version it copies on the arch it answers as, whatever
    backend the stand-in was asked for (the mode kept: "+graph" entries are graph mode's)."""
    from kernels.standins.upstream import MODELLED_VERSION

    known = _ledger_at(MODELLED_VERSION, MODEL_ARCH)
    return lambda case, backend: known(case, LIFECYCLE_BACKEND + ("+graph" if backend.endswith("+graph") else ""))


def standin_subjects() -> list[Subject]:
    """The correct stand-in, eager and graph, on each architecture with gates."""
    return [
        _standin_subject(f"standin-{arch}{'-graph' if graph else ''}", arch, graph)
        for arch in STANDIN_ARCHS
        for graph in (False, True)
    ]


def fault_subjects() -> list[Subject]:
    """One stand-in per seed defect (kernels/standins/faults.py), in the mode the defect needs."""
    return [_standin_subject(f"fault-{name}", "gfx942", f.graph, name) for name, f in FAULTS.items()]


def _installed(arch: str, fault: Optional[str]) -> contextlib.AbstractContextManager[Any]:
    from kernels.standins.rocm_fork import installed

    return installed(arch=arch, fault=fault)


# One subject per wrapper API: a defect found on one (Hypothesis stops at the first) hides nothing on
# the others. Single prefill has no wrapper to keep across plans.
FLASHINFER_APIS = ("paged", "ragged", "decode")
# Subject modes: eager, graph (one wrapper per batch size and mask kind, as SGLang keys them), and graph on
# one wrapper per batch size with mask buffers from construction (the APIs that take them), as adapter
# options; its own subject, since a shared wrapper's defect would stop the graph exploration at it.
GRAPH_MODES: dict[str, tuple[bool, dict[str, str]]] = {
    "": (False, {}),
    "-graph": (True, {}),
    "-graph-shared": (True, {"graph_wrappers": "shared"}),
}
SHARED_APIS = ("paged", "ragged")
# What a JIT runner draws: the dtype and head dims whose modules the quick FlashInfer matrix builds
# (kernels/flashinfer/matrix.py profiles bf16-128 and bf16-128-window, fa2 and fa3), window on or off,
# no soft cap (its module is another); every other axis is a runtime argument of those modules.
FLASHINFER_LIMITS = {"dtypes": ("bf16",), "head_dim_pairs": ((128, 128),), "soft_cap": False}
# FlashInfer's CPU models (upstream's, and the test fake) draw as the stand-ins do (STANDIN_LIMITS): their
# hunts look for lifecycle faults at short lengths; on a GPU the flashinfer subjects draw long contexts and
# explicit scales.
CPU_MODEL_LIMITS = {**FLASHINFER_LIMITS, **STANDIN_LIMITS}


def _logging(adapter: AttentionKernel) -> AttentionKernel:
    """An eager flashinfer adapter that logs its library calls, for plain-library scripts."""
    if not getattr(adapter, "graph", False):
        adapter.call_log = []  # type: ignore[attr-defined]
    return adapter


def flashinfer_subjects(
    device: str,
    make: Optional[Callable[..., AttentionKernel]] = None,
    offered: Optional[tuple[str, ...]] = None,
    arch: Optional[str] = None,
    spec_version: Optional[str] = None,
) -> list[Subject]:
    """The installed FlashInfer, `auto` under test; raises ValueError where it cannot run.

    `make(backend, graph, **options)` (options: AdapterOptions fields), `offered` and `arch` replace the
    target's own (the CPU tests drive the adapter on a fake of the library this way), `spec_version` the
    installed version whose CUDA routing spec judges the route (the fake copies 0.7.2.post1). A version
    without rows is unmodelled: no spec, and `auto`'s route is observed, not checked (`Subject.unmodelled`
    says why).
    """
    target = get_target("flashinfer")
    if make is None:
        here = target.available(device)
        if not here.ok:
            raise InvalidValue(
                "--device", device, "a device the target runs on", f"{here.reason}: pass another --device"
            )
        make = lambda b, g, **o: target.make(b, device, graph=g, **o)  # noqa: E731
    offered = target.backends(device) if offered is None else offered
    explicit = tuple(b for b in ("fa2", "fa3", "aiter") if b in offered)
    version = target.versions().get("flashinfer")
    spec = FLASHINFER_ROCM if "aiter" in offered else flashinfer_cuda_spec(spec_version or version)
    unmodelled = "" if spec is not None else unmodelled_note(FLASHINFER_CUDA_LIBRARY, spec_version or version)
    arch = arch or arch_here(device)

    out = []
    for api in FLASHINFER_APIS:
        for mode, (graph, options) in GRAPH_MODES.items():
            if options and api not in SHARED_APIS:
                continue
            # Eager: the adapter's logged calls become plain flashinfer calls; graph mode's capture and
            # replay choreography is the adapter's, so its script drives the adapter.
            extra = "".join(f", {k}={v!r}" for k, v in options.items())
            recipe = (
                Recipe(
                    "library",
                    "from kernels import get_target",
                    f"get_target('flashinfer').make(backend, {device!r}, graph=True{extra})",
                )
                if graph
                else Recipe("flashinfer")
            )
            out.append(
                Subject(
                    name=f"flashinfer-{arch}-{api}{mode}",
                    target="flashinfer",
                    backend="auto",
                    make=lambda b, g=graph, o=options: _logging(make(b, g, **o)),
                    explicit=explicit,  # type: ignore[misc]
                    directed_backend=explicit[0] if explicit else None,
                    specs={b: spec for b in ("auto",) + explicit} if spec is not None else {},
                    unmodelled=unmodelled,
                    env=RoutingEnv(arch=arch, device=_env.device_type(device)),
                    device=device,
                    recipe=recipe,
                    exact_history=False,
                    exclude_layouts={
                        x: "explored by its own subject" for x in ("paged", "ragged", "decode", "single") if x != api
                    },
                    profile_limits=FLASHINFER_LIMITS if _env.device_type(device) == "cuda" else CPU_MODEL_LIMITS,
                    known=_ledger_at(version, arch, options),
                    known_history=_history_at(version, arch, options),
                )
            )
    return out


def _ledger_at(
    version: Optional[str], arch: str, options: Optional[dict[str, Any]] = None
) -> Callable[[Any, str], Optional[tuple[str, str]]]:
    """A subject's `known`: the known-failure ledger's (id, status) for a case at `version` on `arch`, with
    the subject's adapter `options`."""

    def known(case: Any, backend: str) -> Optional[tuple[str, str]]:
        e = entry_for("flashinfer", case.to_json(), backend, version, arch, options or None)
        return (e.id, e.status) if e is not None else None

    return known


def _history_at(
    version: Optional[str], arch: str, options: Optional[dict[str, Any]] = None
) -> Callable[[Any, str], Optional[str]]:
    """A subject's `known_history`: the ledger's lifecycle entry a wrapper's plans show, at `version` on `arch`."""

    def known_history(plans: Any, backend: str) -> Optional[str]:
        e = history_entry_for("flashinfer", [c.to_json() for c in plans], backend, version, arch, options or None)
        return e.id if e is not None else None

    return known_history


# ---- lifecycle faults injected into upstream FlashInfer -------------------------------------------------
# Each fault is explored on an explicitly requested fa2 wrapper: auto's own choice is another concern (paged
# auto is sticky on 0.7.2.post1, a real defect), and fa2 serves every case of the profile, masks included.
LIFECYCLE_BACKEND = "fa2"
# The CPU model answers as an sm90 device (kernels/standins/upstream.py install(sm90=True)), as the H200 does.
MODEL_ARCH = "sm90"


# Where a real defect of upstream (modelled by the CPU model too) shows on a single case or on the first
# sequence that draws it, the lifecycle subjects of that API and mode draw around it: else the exploration
# stops at that defect, clean or faulted, and no fault could be told from it. Decode draws no mask either (a
# rule that is always declined only dilutes the hunt). Profile fields, with why.
DECODE_NO_MASK = "decode takes no custom mask: supports() declines every masked plan, a step spent on nothing"
LIFECYCLE_LIMITS: dict[tuple[str, bool], tuple[dict[str, Any], str]] = {
    ("ragged", False): (
        {"mask": False},
        "eager ragged plan() keeps a stale custom mask (ledger flashinfer-ragged-stale-mask, 0.7.2.post1 and 0.7.4)",
    ),
    ("decode", False): ({"mask": False}, DECODE_NO_MASK),
    ("decode", True): ({"mask": False}, DECODE_NO_MASK),
    ("paged", True): (
        {"mask": False},
        "graph mode runs a masked request over no pages wrong (ledger flashinfer-paged-mask-zero-pages-graph-wrong, "
        "0.7.2.post1), a wrong output the machines report whatever came before",
    ),
}


def _lifecycle_key(api: str, graph: bool) -> str:
    """The clean subject a fault subject is compared with: its API and mode."""
    return f"{api}{'-graph' if graph else ''}"


def _lifecycle_name(f: LifecycleFault, graph: bool) -> str:
    return f"lifecycle-{f.name}{'-graph' if graph and f.mode == 'both' else ''}"


@contextlib.contextmanager
def _lifecycle_installed(device: str, fault: Optional[str]) -> Iterator[None]:
    """The library a lifecycle subject runs: on a CPU upstream's model, installed; `fault` injected into it."""
    with contextlib.ExitStack() as stack:
        if _env.device_type(device) == "cpu":
            from kernels.standins.upstream import installed

            stack.enter_context(installed(sm90=True))
        stack.enter_context(injected(fault))
        yield


def _lifecycle_recipe(device: str, graph: bool, fault: Optional[str]) -> Recipe:
    """The script's library: the model installed on a CPU, the fault injected, an adapter of this mode."""
    cpu = _env.device_type(device) == "cpu"
    lines = ["from kernels import get_target"]
    if cpu:
        lines += ["from kernels.standins.upstream import install", "install(sm90=True)"]
    if fault is not None:
        lines += ["from kernels.flashinfer.lifecycle_faults import install as inject", f"inject({fault!r})"]
    workspace = f", workspace_bytes={STANDIN_WORKSPACE}" if cpu else ""
    return Recipe(
        "library", "\n".join(lines), f"get_target('flashinfer').make(backend, {device!r}, graph={graph!r}{workspace})"
    )


def _lifecycle_bases(device: str) -> dict[tuple[str, bool], Subject]:
    """The flashinfer subjects per (API, graph mode): on a CPU over the model, the ledger read at its version."""
    cpu = _env.device_type(device) == "cpu"
    workspace: dict[str, Any] = {"workspace_bytes": STANDIN_WORKSPACE} if cpu else {}

    def make(b: str, g: bool) -> AttentionKernel:
        return get_target("flashinfer").make(b, device, graph=g, **workspace)

    if cpu:
        from kernels.standins.upstream import MODELLED_VERSION

        bases = flashinfer_subjects(
            device, make=make, offered=(LIFECYCLE_BACKEND,), arch=MODEL_ARCH, spec_version=MODELLED_VERSION
        )
        bases = [
            replace(
                s,
                known=_ledger_at(MODELLED_VERSION, MODEL_ARCH),
                known_history=_history_at(MODELLED_VERSION, MODEL_ARCH),
            )
            for s in bases
        ]
    else:
        bases = flashinfer_subjects(device)
    out = {}
    for s in bases:
        if s.name.endswith("-graph-shared"):
            continue  # the faults model one wrapper per mask kind, as the default graph keying allocates them
        graph = s.name.endswith("-graph")
        api = next(x for x in FLASHINFER_APIS if x not in s.exclude_layouts)
        out[(api, graph)] = replace(
            s,
            backend=LIFECYCLE_BACKEND,
            make=lambda b, g=graph: make(b, g),
            explicit=(),
            directed_backend=None,
            specs={LIFECYCLE_BACKEND: s.specs["auto"]} if "auto" in s.specs else {},
        )
    return out


def _lifecycle_subject(base: Subject, name: str, device: str, api: str, graph: bool, fault: Optional[str]) -> Subject:
    return replace(
        base,
        name=name,
        recipe=_lifecycle_recipe(device, graph, fault),
        profile_limits={**FLASHINFER_LIMITS, **LIFECYCLE_LIMITS.get((api, graph), ({}, ""))[0]},
        context=lambda: _lifecycle_installed(device, fault),
    )


def lifecycle_subjects(device: str = "cpu") -> list[Subject]:
    """One subject per lifecycle fault and mode (kernels/flashinfer/lifecycle_faults.py), the fault injected."""
    bases = _lifecycle_bases(device)
    return [
        _lifecycle_subject(
            bases[(f.api, m == "graph")], _lifecycle_name(f, m == "graph"), device, f.api, m == "graph", f.name
        )
        for f in LIFECYCLE_FAULTS.values()
        for m in f.modes
    ]


def lifecycle_clean_subjects(device: str = "cpu") -> list[Subject]:
    """The lifecycle subjects' library with no fault: one per API and mode the faults use."""
    bases = _lifecycle_bases(device)
    used = sorted({(f.api, m == "graph") for f in LIFECYCLE_FAULTS.values() for m in f.modes})
    return [
        _lifecycle_subject(
            bases[(api, graph)], f"lifecycle-clean-{_lifecycle_key(api, graph)}", device, api, graph, None
        )
        for api, graph in used
    ]


def lifecycle_clean_name(subject_name: str) -> str:
    """The clean subject a lifecycle fault subject is compared with."""
    for f in LIFECYCLE_FAULTS.values():
        for m in f.modes:
            if _lifecycle_name(f, m == "graph") == subject_name:
                return f"lifecycle-clean-{_lifecycle_key(f.api, m == 'graph')}"
    raise ValueError(f"{subject_name!r}: not a lifecycle fault subject")


def subjects_for(target: str, device: str = "cpu") -> list[Subject]:
    if target == "torch":
        return torch_subjects(device)
    if target == "faults":
        return fault_subjects()
    if target == "standin":
        return standin_subjects()
    if target == "flashinfer":
        return flashinfer_subjects(device)
    if target == "lifecycle":
        return lifecycle_subjects(device)
    if target == "lifecycle-clean":
        return lifecycle_clean_subjects(device)
    raise ValueError(f"target={target!r}: expected one of {', '.join(TARGETS)}")
