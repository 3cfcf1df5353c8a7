"""The subjects each explore target drives: which adapters, specs, modes and script recipes.

torch    the torch adapters: SDPA `auto` under test (routing/specs/torch_sdpa.py), the other
         backends requested explicitly
standin  the flashinfer adapter on the ROCm fork's CPU stand-in (kernels/standins/), eager and
         graph, gfx942 and gfx950; the stand-in is installed around each subject's run
faults   the same, on gfx942, with one seed defect switched on per subject (kernels/standins/faults.py)
flashinfer  the installed FlashInfer on a GPU: `auto` under test per wrapper API (paged, ragged,
         decode), eager and graph, fa2/fa3 requested explicitly, against the CUDA routing spec; paged
         and ragged also in graph mode on one wrapper per batch size holding mask buffers, re-planned
         masked and unmasked (AdapterOptions.graph_wrappers="shared")
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Optional

from conformance.known_failures import entry_for, history_entry_for
from conformance.markers import arch_here
from kernels import _env, get_target
from kernels.protocol import AttentionKernel
from routing.spec import RoutingEnv
from routing.specs import FLASHINFER_CUDA_LIBRARY, FLASHINFER_ROCM, TORCH_SDPA, flashinfer_cuda_spec, unmodelled_note
from conformance.explore.machines import Recipe, Subject
from kernels.standins.faults import FAULTS

TARGETS = ("torch", "standin", "faults", "flashinfer")


def torch_subjects(device: str) -> list[Subject]:
    target = get_target("torch")
    here = target.available(device)
    if not here.ok:
        raise ValueError(f"--device {device}: {here.reason}")
    return [
        Subject(
            name=f"torch-auto-{_env.device_type(device)}",
            target="torch",
            backend="auto",
            make=lambda b: target.make(b, device),
            explicit=tuple(b for b in target.backends(device) if b != "auto"),
            # flex compiles once per shape (about a second on a CPU): only the exploration asks
            directed_backend="flash",
            # torch's CPU rule reads no arch; on CUDA its rows are per arch (sm90 written)
            specs={"auto": TORCH_SDPA},
            env=RoutingEnv(
                arch="unknown" if _env.device_type(device) == "cpu" else arch_here(device),
                device=_env.device_type(device),
            ),
            device=device,
            recipe=Recipe("torch"),
            exact_history=_env.device_type(device) == "cpu",
        )
    ]


STANDIN_ARCHS = ("gfx942", "gfx950")
# The stand-in never reads its workspace; the adapter's default (128 MiB, zeroed, one per wrapper and
# fresh control) exhausted a 24 GiB CPU machine over a runner-sized exploration.
STANDIN_WORKSPACE = 1 << 16
# Single prefill exposes no fallback reason through the adapter (NOT_REPORTED where the spec says None).
STANDIN_EXCLUDED = {"single": "single_prefill_with_kv_cache exposes no reason; the spec's rows expect None"}


def _standin_subject(name: str, arch: str, graph: bool, fault: Optional[str] = None) -> Subject:
    """The flashinfer adapter against the fork's stand-in (with `fault` switched on); installed around each run."""
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
    )


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
            raise ValueError(f"--device {device}: {here.reason}")
        make = lambda b, g, **o: target.make(b, device, graph=g, **o)  # noqa: E731
    offered = target.backends(device) if offered is None else offered
    explicit = tuple(b for b in ("fa2", "fa3", "aiter") if b in offered)
    version = target.versions().get("flashinfer")
    spec = FLASHINFER_ROCM if "aiter" in offered else flashinfer_cuda_spec(spec_version or version)
    unmodelled = "" if spec is not None else unmodelled_note(FLASHINFER_CUDA_LIBRARY, spec_version or version)
    arch = arch or arch_here(device)

    def known(case: Any, backend: str, options: Optional[dict[str, Any]] = None) -> Optional[tuple[str, str]]:
        e = entry_for("flashinfer", case.to_json(), backend, version, arch, options)
        return (e.id, e.status) if e is not None else None

    def known_history(plans: Any, backend: str, options: Optional[dict[str, Any]] = None) -> Optional[str]:
        e = history_entry_for("flashinfer", [c.to_json() for c in plans], backend, version, arch, options)
        return e.id if e is not None else None

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
                    profile_limits=FLASHINFER_LIMITS,
                    known=lambda c, b, o=options: known(c, b, o),
                    known_history=lambda ps, b, o=options: known_history(ps, b, o),
                )
            )
    return out


def subjects_for(target: str, device: str = "cpu") -> list[Subject]:
    if target == "torch":
        return torch_subjects(device)
    if target == "faults":
        return fault_subjects()
    if target == "standin":
        return standin_subjects()
    if target == "flashinfer":
        return flashinfer_subjects(device)
    raise ValueError(f"target={target!r}: expected one of {', '.join(TARGETS)}")
