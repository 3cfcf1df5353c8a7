"""The one module that touches the `flashinfer` package: lazy import, feature detection, its own checks.

Nothing here runs at import time, and `import kernels.flashinfer.adapter` never imports flashinfer: every
function imports it on first call (CPU machines and CI never do). Tests inject a fake package
into sys.modules["flashinfer"] (kernels/standins/: the upstream model and the ROCm fork) and everything below reads it
the same way.

Both vendors are served from here, told apart by FEATURE, never by a version string:
  * upstream flashinfer-python (0.7.2.post1 is the version under test);
  * the ROCm fork (AMD-Ecosystem/flashinfer, tests/data/sources/rocm_fork.md section 1): its
    wrappers carry `backend_fallback_reason`, its paged run() takes `scale_q/scale_k/scale_v`,
    and it offers backend="aiter".
A CPU stand-in of a library (kernels/standins/, e.g. the ROCm fork's) is read the same way and
labelled wherever it shows: LibFacts.standin, and versions() says "stand-in: <name>".

Which backends exist is decided by the library's own checks, cited per backend in `LibFacts`.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from kernels import _env
from kernels.errors import KernelUnavailable
from kernels.standin_label import FAULT_SUFFIX, fault_of, standin_of, version_label

TARGET = "flashinfer"

# Environment variables read by flashinfer's JIT (jit/env.py and jit/cpp_ext.py of 0.7.2.post1):
#   FLASHINFER_WORKSPACE_BASE  cache root; kernels go to
#       $FLASHINFER_WORKSPACE_BASE/.cache/flashinfer/<version>/<archs>/cached_ops   (default base: $HOME)
#       (jit/env.py:66-70 FLASHINFER_BASE_DIR/FLASHINFER_CACHE_DIR, :382-397 workspace/JIT dirs);
#       read once, when flashinfer is imported: set it before the first import.
#   FLASHINFER_CUDA_ARCH_LIST  archs to compile for, e.g. "9.0a" (compilation_context.py:114)
#   MAX_JOBS                   parallel nvcc jobs of one module build (jit/cpp_ext.py:405)
JIT_ENV_VARS = ("FLASHINFER_WORKSPACE_BASE", "FLASHINFER_CUDA_ARCH_LIST", "MAX_JOBS")

PAGED_WRAPPER = "BatchPrefillWithPagedKVCacheWrapper"
RAGGED_WRAPPER = "BatchPrefillWithRaggedKVCacheWrapper"
DECODE_WRAPPER = "BatchDecodeWithPagedKVCacheWrapper"
SINGLE_FUNCTION = "single_prefill_with_kv_cache"


def installed() -> bool:
    """Whether a `flashinfer` package can be found, without importing it."""
    return importlib.util.find_spec("flashinfer") is not None


def loaded_standin() -> Optional[str]:
    """The stand-in name of the `flashinfer` already in sys.modules, or None; never imports anything."""
    return standin_of(sys.modules.get("flashinfer"))


def import_flashinfer() -> Any:
    """The flashinfer module; KernelUnavailable (with the import error) when it cannot be imported."""
    try:
        return importlib.import_module("flashinfer")
    except Exception as e:  # ImportError, or a CUDA/JIT error raised while importing
        raise KernelUnavailable(TARGET, f"import flashinfer failed: {type(e).__name__}: {e}") from e


def _submodule(name: str) -> Optional[Any]:
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def accepts(fn: Callable[..., Any], name: str) -> bool:
    """Whether `fn` (or the function a flashinfer_api decorator wraps) takes a parameter `name`."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params


@functools.lru_cache(maxsize=None)
def _parameters(fn: Callable[..., Any]) -> Optional[Mapping[str, inspect.Parameter]]:
    """`fn`'s parameters, read once per function (a bound method is read through its function): the adapter
    asks before every plan and run; None where there is no signature to read."""
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None


def kwargs_for(fn: Callable[..., Any], **kwargs: Any) -> dict[str, Any]:
    """`kwargs` less the None-valued ones `fn` does not take; a non-None one it does not take raises.

    So an argument a library version lacks is simply not sent when it would mean "default", and
    one that carries a real value is never dropped silently.
    """
    params = _parameters(getattr(fn, "__func__", fn))
    if params is None:
        return kwargs
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return kwargs
    out = {}
    for k, v in kwargs.items():
        if k in params:
            out[k] = v
        elif v is not None:
            raise TypeError(
                f"this flashinfer's {getattr(fn, '__qualname__', fn)} takes no {k!r} argument, "
                f"which this case needs ({k}={v!r})"
            )
    return out


@dataclass(frozen=True)
class LibFacts:
    """What the installed flashinfer offers on one device, from the library's own checks.

    fork           ROCm fork API: the paged wrapper class has `backend_fallback_reason`, or its
                   run() takes `scale_q` (rocm_fork.md section 1).
    lse_base_kw    {api: bool}: paged/ragged run() take `lse_base` ("log2"/"ln"; upstream 0.7.2
                   prefill.py run(), utils.py:65 LSE_BASES). Absent: the kernels' base 2.
    fa3            upstream: flashinfer.utils.is_sm90a_supported(device) (utils.py:663, the check
                   determine_attention_backend uses before picking fa3, utils.py:574).
    cudnn          upstream: flashinfer.cudnn.prefill.CUDNN_AVAILABLE (cudnn/prefill.py:14-21,
                   the cuDNN python frontend imports).
    trtllm_gen     upstream: compute capability major 10 (aot.py:466 "trtllm_gen_fmha loads prebuilt
                   SM10x cubins"; decode.py:4134 auto picks trtllm-gen iff major == 10).
    aiter          fork: arch_caps.capability_reason(device, "batch_prefill", "aiter") is None and,
                   where the fork has it, prefill._aiter_ops_importable().
    softcap_defect fork: arch_caps.aiter_softcap_defect_arch(_device_arch(device)).
    native_fp8     fork: the torch dtype name of aiter.dtypes.fp8 when readable, else None.
    standin        the stand-in's name when the package is a CPU stand-in (kernels/standins/),
                   else None: its results are never conformance results.
    """

    version: str
    fork: bool
    lse_base_kw: dict = field(default_factory=dict)
    fork_scale_kw: bool = False
    fa3: bool = False
    cudnn: bool = False
    trtllm_gen: bool = False
    aiter: bool = False
    softcap_defect: bool = False
    native_fp8: Optional[str] = None
    notes: tuple = ()
    standin: Optional[str] = None

    def eager_backends(self) -> tuple[str, ...]:
        if self.fork:
            return ("fa2",) + (("aiter",) if self.aiter else ()) + ("auto",)
        out = ["fa2"]
        if self.fa3:
            out.append("fa3")
        if self.cudnn:
            out.append("cudnn")
        if self.trtllm_gen:
            out.append("trtllm-gen")
        out.append("auto")
        return tuple(out)


def _is_fork(lib: Any) -> bool:
    cls = getattr(lib, PAGED_WRAPPER, None)
    if cls is None:
        return False
    return hasattr(cls, "backend_fallback_reason") or accepts(getattr(cls, "run", None), "scale_q")


def _torch_device(device: str) -> Any:
    import torch

    return torch.device(device)


def _fork_arch_caps() -> Optional[Any]:
    for name in ("flashinfer.rocm.arch_caps", "flashinfer.arch_caps"):
        mod = _submodule(name)
        if mod is not None:
            return mod
    return None


def _fork_prefill() -> Optional[Any]:
    for name in ("flashinfer.rocm.prefill", "flashinfer.prefill"):
        mod = _submodule(name)
        if mod is not None and hasattr(mod, "_aiter_ops_importable"):
            return mod
    return None


def _compute_facts(device: str) -> LibFacts:
    lib = import_flashinfer()
    version = str(getattr(lib, "__version__", "unknown"))
    fork = _is_fork(lib)
    lse_kw = {
        "paged": accepts(getattr(getattr(lib, PAGED_WRAPPER, None), "run", None), "lse_base"),
        "ragged": accepts(getattr(getattr(lib, RAGGED_WRAPPER, None), "run", None), "lse_base"),
        "decode": accepts(getattr(getattr(lib, DECODE_WRAPPER, None), "run", None), "lse_base"),
        "single": accepts(getattr(lib, SINGLE_FUNCTION, None), "lse_base"),
    }
    notes: list[str] = []
    dev = _torch_device(device)
    if fork:
        aiter, defect, native = False, False, None
        caps = _fork_arch_caps()
        if caps is None or not hasattr(caps, "capability_reason"):
            notes.append("fork without a readable arch_caps.capability_reason: aiter not offered")
        else:
            try:
                aiter = caps.capability_reason(dev, "batch_prefill", "aiter") is None
            except Exception as e:  # the fork's check itself failed: do not offer what it could not confirm
                notes.append(f"arch_caps.capability_reason raised {type(e).__name__}: {e}")
            pre = _fork_prefill()
            if aiter and pre is not None:
                aiter = bool(pre._aiter_ops_importable())
            if hasattr(caps, "aiter_softcap_defect_arch") and hasattr(caps, "_device_arch"):
                try:
                    defect = bool(caps.aiter_softcap_defect_arch(caps._device_arch(dev)))
                except Exception:
                    defect = False
            if pre is not None and hasattr(pre, "_native_fp8_dtype"):
                try:
                    from scenarios.dtypes import name_of

                    nd = pre._native_fp8_dtype()
                    native = name_of(nd) if nd is not None else None
                except Exception:
                    native = None
        return LibFacts(
            version=version,
            fork=True,
            lse_base_kw=lse_kw,
            fork_scale_kw=accepts(getattr(lib, PAGED_WRAPPER).run, "scale_q"),
            aiter=aiter,
            softcap_defect=defect,
            native_fp8=native,
            notes=tuple(notes),
            standin=standin_of(lib),
        )
    utils = _submodule("flashinfer.utils")
    fa3 = False
    if utils is not None and hasattr(utils, "is_sm90a_supported"):
        try:
            fa3 = bool(utils.is_sm90a_supported(dev))
        except Exception as e:
            notes.append(f"is_sm90a_supported raised {type(e).__name__}: {e}")
    cudnn_mod = _submodule("flashinfer.cudnn.prefill")
    cudnn = bool(getattr(cudnn_mod, "CUDNN_AVAILABLE", False)) if cudnn_mod is not None else False
    cap = _env.device_capability(device)
    trtllm = cap is not None and cap[0] == 10
    return LibFacts(
        version=version,
        fork=False,
        lse_base_kw=lse_kw,
        fa3=fa3,
        cudnn=cudnn,
        trtllm_gen=trtllm,
        notes=tuple(notes),
        standin=standin_of(lib),
    )


@functools.lru_cache(maxsize=None)
def lib_facts(device: str) -> LibFacts:
    """LibFacts for `device` (cached per device string; tests call lib_facts.cache_clear())."""
    return _compute_facts(device)


def determine_auto(
    device: str, *, has_mask: bool, q_dtype: Any, kv_dtype: Any, head_dim_qk: int, head_dim_vo: int
) -> Optional[str]:
    """What upstream's own selector picks for a prefill plan, or None when it cannot be asked.

    flashinfer.utils.determine_attention_backend (utils.py:574) with the arguments the paged and
    ragged plan() pass it (pos_encoding NONE, no fp16 qk reduction, use_custom_mask, q/kv dtypes,
    head dims). A prediction for supports(); the adapter reports what plan() actually set.
    """
    utils = _submodule("flashinfer.utils")
    fn = getattr(utils, "determine_attention_backend", None) if utils is not None else None
    if fn is None:
        return None
    try:
        return str(
            fn(
                _torch_device(device),
                0,
                False,
                has_mask,
                q_dtype,
                kv_dtype,
                head_dim_qk=head_dim_qk,
                head_dim_vo=head_dim_vo,
            )
        )
    except TypeError:  # an older selector without the head-dim keywords
        return str(fn(_torch_device(device), 0, False, has_mask, q_dtype, kv_dtype))
    except Exception:
        return None


def single_prefill_module_hook(fn: Callable[..., Any]) -> tuple[dict, Optional[Callable[..., Any]]]:
    """The globals single_prefill_with_kv_cache looks `get_single_prefill_module` up in, and its value.

    single_prefill_with_kv_cache resolves "auto" internally (prefill.py: `backend =
    determine_attention_backend(...)` then `module = get_single_prefill_module(backend, ...)`) and
    exposes the choice nowhere; the adapter observes it by wrapping that global for one call.
    """
    inner = inspect.unwrap(fn)
    g = getattr(inner, "__globals__", {})
    return g, g.get("get_single_prefill_module")


def versions() -> dict[str, str]:
    """Run-header stamp: torch/CUDA/cuDNN/FlashInfer versions (metadata only, no import) and JIT env.

    A stand-in in place of flashinfer reads "stand-in: <name>", never a version; a library with one of
    attncheck's faults injected (kernels/flashinfer/lifecycle_faults.py) adds "+fault:<name>".
    """
    import os

    out = _env.library_versions()
    standin = loaded_standin()
    if standin is not None:
        out["flashinfer"] = version_label(standin)
    fault = fault_of(sys.modules.get("flashinfer"))
    if fault is not None:
        out["flashinfer"] = f"{out.get('flashinfer', 'unknown')}{FAULT_SUFFIX}{fault}"
    for var in JIT_ENV_VARS:
        if os.environ.get(var):
            out[var] = os.environ[var]
    return out
