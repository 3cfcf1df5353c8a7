"""The subjects each explore target drives: which adapters, specs, modes and script recipes.

    torch    the torch adapters: SDPA `auto` under test (routing/specs/torch_sdpa.py), the other
             backends requested explicitly
    model    the correct model router (scenarios/model_router.py), eager and graph, gfx942 and gfx950
    faults   one model per seed defect class (scenarios/faults.py)
    standin  the flashinfer adapter on the ROCm fork's CPU stand-in (kernels/standins/), eager and
             graph, gfx942 and gfx950; the stand-in is installed around each subject's run
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable

from kernels import _env, get_target
from kernels.protocol import AttentionKernel
from routing.spec import RoutingEnv
from routing.specs import FLASHINFER_ROCM, TORCH_SDPA
from scenarios import model_tables
from scenarios.faults import FAULTS, make_faulty
from scenarios.machines import Recipe, Subject
from scenarios.model_router import make_model

TARGETS = ("torch", "model", "faults", "standin")


def torch_subjects(device: str) -> list[Subject]:
    target = get_target("torch")
    here = target.available(device)
    if not here.ok:
        raise ValueError(f"--device {device}: {here.reason}")
    return [Subject(name=f"torch-auto-{_env.device_type(device)}", target="torch", backend="auto",
                    make=lambda b: target.make(b, device),
                    explicit=tuple(b for b in target.backends(device) if b != "auto"),
                    # flex compiles once per shape (about a second on a CPU): only the exploration asks
                    directed_backend="flash",
                    specs={"auto": TORCH_SDPA}, env=RoutingEnv(arch="unknown", device=_env.device_type(device)),
                    device=device, recipe=Recipe("torch"), exact_history=_env.device_type(device) == "cpu")]


def _model_subject(name: str, arch: str, make: Callable[[str], AttentionKernel], recipe: Recipe) -> Subject:
    return Subject(name=name, target="model", backend=model_tables.AUTO, make=make,
                   explicit=(model_tables.FALLBACK, model_tables.FAST),
                   specs={b: FLASHINFER_ROCM for b in model_tables.BACKENDS},
                   env=RoutingEnv(arch=arch, device="cpu"), recipe=recipe)


def model_subjects() -> list[Subject]:
    out = []
    for arch in model_tables.ARCHS:
        for graph in (False, True):
            recipe = Recipe("library", "from scenarios.model_router import make_model",
                            f"make_model(backend, arch={arch!r}, graph={graph!r})")
            out.append(_model_subject(f"model-{arch}{'-graph' if graph else ''}", arch,
                                      lambda b, a=arch, g=graph: make_model(b, arch=a, graph=g), recipe))
    return out


def fault_subjects() -> list[Subject]:
    out = []
    for name, f in FAULTS.items():
        recipe = Recipe("library", "from scenarios.faults import make_faulty",
                        f"make_faulty({name!r}, backend, arch='gfx942', graph={f.graph!r})")
        out.append(_model_subject(f"fault-{name}", "gfx942", lambda b, n=name, g=f.graph: make_faulty(n, b, graph=g),
                                  recipe))
    return out


STANDIN_ARCHS = ("gfx942", "gfx950")
# Single prefill exposes no fallback reason through the adapter (NOT_REPORTED where the spec says None).
STANDIN_EXCLUDED = {"single": "single_prefill_with_kv_cache exposes no reason; the spec's rows expect None"}


def standin_subjects() -> list[Subject]:
    """The flashinfer adapter against the fork's stand-in; explore() installs it around each run."""
    out = []
    for arch in STANDIN_ARCHS:
        for graph in (False, True):
            imports = ("from kernels import get_target\nfrom kernels.standins.rocm_fork import install\n"
                       f"install(arch={arch!r})")
            recipe = Recipe("library", imports, f"get_target('flashinfer').make(backend, 'cpu', graph={graph!r})")
            out.append(Subject(name=f"standin-{arch}{'-graph' if graph else ''}", target="flashinfer",
                               backend="auto", make=lambda b, g=graph: get_target("flashinfer").make(b, "cpu", graph=g),
                               explicit=("fa2", "aiter"), specs={b: FLASHINFER_ROCM for b in ("auto", "fa2", "aiter")},
                               env=RoutingEnv(arch=arch, device="cpu"), recipe=recipe,
                               exclude_layouts=STANDIN_EXCLUDED, context=lambda a=arch: _installed(a)))
    return out


def _installed(arch: str) -> contextlib.AbstractContextManager[Any]:
    from kernels.standins.rocm_fork import installed
    return installed(arch=arch)


def subjects_for(target: str, device: str = "cpu") -> list[Subject]:
    if target == "torch":
        return torch_subjects(device)
    if target == "model":
        return model_subjects()
    if target == "faults":
        return fault_subjects()
    if target == "standin":
        return standin_subjects()
    raise ValueError(f"target={target!r}: expected one of {', '.join(TARGETS)}")
