"""Lifecycle faults of our own design, injected into upstream FlashInfer's wrapper classes.

Each fault is plan-time state a fresh wrapper would not carry (a flag, a buffer or an argument kept
from an earlier plan), patched into the plan() of BatchPrefillWithPagedKVCacheWrapper,
BatchPrefillWithRaggedKVCacheWrapper or BatchDecodeWithPagedKVCacheWrapper while it is injected:

    with injected("paged_causal_first_plan"):     # the installed flashinfer: the real wheel or the CPU model
        ...                                       # every wrapper planned twice keeps its first causal
    undo = install("decode_window_first_plan")    # a script: undone by undo() or uninstall()

The patch wraps the class's plan(); whatever a fault keeps lives on the wrapper INSTANCE (attributes
named `_attncheck_lifecycle_*`), so a fresh wrapper never carries it and the machines' fresh control
stays correct. It reads plan()'s arguments by name and, for buffer faults, the wrapper attributes
both upstream versions and the CPU model (kernels/standins/upstream_flashinfer/) hold with the same
meaning (docs/scenario-machines.md, "Lifecycle faults in upstream FlashInfer", cites each per version).
While a fault is injected, the flashinfer module carries its name (kernels/standin_label.py:
FAULT_MARKER) and kernels/flashinfer/lib.versions() says "+fault:NAME". `FAULTS` is the catalogue.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Optional

import torch

from kernels.flashinfer import lib as fl
from kernels import fault_patch
from kernels.standin_label import FAULT_MARKER

API_CLASSES = {"paged": fl.PAGED_WRAPPER, "ragged": fl.RAGGED_WRAPPER, "decode": fl.DECODE_WRAPPER}
MODES = ("eager", "graph", "both")
STATE = "_attncheck_lifecycle_"  # prefix of every attribute a fault keeps on a wrapper instance
ORIGINAL = "__attncheck_lifecycle_original__"  # the patched plan's attribute holding the library's plan


# plan()'s signature, read once per function: a machine plans thousands of times.
_signature = functools.lru_cache(maxsize=None)(inspect.signature)


class PlanCall:
    """One plan() call: its arguments by name (the ones plan() folds into **kwargs too), changeable."""

    def __init__(self, plan: Callable[..., Any], wrapper: Any, args: tuple, kwargs: dict[str, Any]) -> None:
        self.wrapper = wrapper
        self._sig = _signature(plan)
        self._bound = self._sig.bind(wrapper, *args, **kwargs)
        self._extra = next(
            (n for n, p in self._sig.parameters.items() if p.kind is inspect.Parameter.VAR_KEYWORD), None
        )

    def _named(self, name: str) -> bool:
        p = self._sig.parameters.get(name)
        return p is not None and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)

    def get(self, name: str, default: Any = None) -> Any:
        if name in self._bound.arguments:
            return self._bound.arguments[name]
        if self._named(name):
            d = self._sig.parameters[name].default
            return default if d is inspect.Parameter.empty else d
        return self._bound.arguments.get(self._extra, {}).get(name, default) if self._extra else default

    def set(self, name: str, value: Any) -> None:
        if self._named(name) or not self._extra:
            self._bound.arguments[name] = value
        else:
            self._bound.arguments.setdefault(self._extra, {})[name] = value

    def call(self, plan: Callable[..., Any]) -> Any:
        return plan(*self._bound.args, **self._bound.kwargs)

    @property
    def graph(self) -> bool:
        return bool(self.wrapper.is_cuda_graph_enabled)

    @property
    def masked(self) -> bool:
        return self.get("custom_mask") is not None or self.get("packed_custom_mask") is not None


# A fault's patch: given the call (changeable) and `proceed` (the library's plan on it), returns what plan returns.
Around = Callable[[PlanCall, Callable[[], Any]], Any]


def _kept(w: Any, key: str, value: Any) -> Any:
    """The value the wrapper's first plan stored under `key` (this one, on the first plan)."""
    attr = STATE + key
    if not hasattr(w, attr):
        setattr(w, attr, value)
    return getattr(w, attr)


def _first_plan(w: Any) -> bool:
    """Whether this is the wrapper's first plan (marks it planned)."""
    first = not hasattr(w, STATE + "planned")
    setattr(w, STATE + "planned", True)
    return first


def _host(t: Any) -> Any:
    return t.detach().to("cpu").clone() if torch.is_tensor(t) else t


# ---- argument faults: plan() is called with a value an earlier plan gave ---------------------------------
def _first_plan_argument(name: str, default: Any) -> Around:
    """plan() takes `name` from the wrapper's first plan, whatever it is given now."""

    def around(call: PlanCall, proceed: Callable[[], Any]) -> Any:
        call.set(name, _kept(call.wrapper, name, call.get(name, default)))
        return proceed()

    return around


def _mask_mode_first_plan(call: PlanCall, proceed: Callable[[], Any]) -> Any:
    """Whether the wrapper is masked is decided by its first plan: later masks are dropped from an unmasked one."""
    if not _kept(call.wrapper, "masked", call.masked):
        call.set("custom_mask", None)
        call.set("packed_custom_mask", None)
    return proceed()


def _last_page_len_first_plan(length_arg: str) -> Around:
    """plan() keeps the first plan's last_page_len while the batch size is unchanged."""

    def around(call: PlanCall, proceed: Callable[[], Any]) -> Any:
        last = call.get(length_arg)
        first = _kept(call.wrapper, "last_page_len", _host(last))
        if len(first) == len(last):
            call.set(length_arg, first.to(device=last.device, dtype=last.dtype))
        return proceed()

    return around


# ---- state faults: what the library's plan() stored is put back to an earlier plan's --------------------
def _mask_kept(call: PlanCall, proceed: Callable[[], Any]) -> Any:
    """An unmasked re-plan keeps the previous plan's custom mask (eager: the buffers are not cleared)."""
    w = call.wrapper
    before = (getattr(w, "_custom_mask_buf", None), getattr(w, "_mask_indptr_buf", None))
    out = proceed()
    if not call.graph and not call.masked and before[0] is not None:
        w._custom_mask_buf, w._mask_indptr_buf = before
    return out


def _graph_buffer_first_plan(attr: str) -> Around:
    """Graph mode: the fixed buffer `attr` is written by the wrapper's first plan only."""

    def around(call: PlanCall, proceed: Callable[[], Any]) -> Any:
        first = _first_plan(call.wrapper)
        buf = getattr(call.wrapper, attr, None)
        if first or not call.graph or not torch.is_tensor(buf):  # an unmasked graph wrapper has no mask buffer
            return proceed()
        saved = buf.clone()
        out = proceed()
        buf.copy_(saved)
        return out

    return around


def _graph_qo_indptr_same_total(call: PlanCall, proceed: Callable[[], Any]) -> Any:
    """Graph mode: qo_indptr is not copied when the total query rows (its last entry) are unchanged."""
    w, total = call.wrapper, int(call.get("qo_indptr")[-1])
    skip = call.graph and getattr(w, STATE + "qo_total", None) == total
    saved = w._qo_indptr_buf.clone() if skip else None
    out = proceed()
    if saved is not None:
        w._qo_indptr_buf.copy_(saved)
    setattr(w, STATE + "qo_total", total)
    return out


def _kv_indptr_same_batch(call: PlanCall, proceed: Callable[[], Any]) -> Any:
    """kv_indptr is not refreshed when the batch size is unchanged: eager keeps the previous plan's tensor,
    graph mode skips the copy into its fixed buffer."""
    w = call.wrapper
    before = getattr(w, "_kv_indptr_buf", None)
    same = not _first_plan(w) and torch.is_tensor(before) and before.numel() == len(call.get("kv_indptr"))
    saved = before.clone() if same and call.graph else None
    out = proceed()
    if saved is not None:
        w._kv_indptr_buf.copy_(saved)
    elif same:
        w._kv_indptr_buf = before
    return out


# ---- the catalogue ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LifecycleFault:
    name: str
    api: str  # "paged" | "ragged" | "decode": the wrapper class patched
    mode: str  # "eager" | "graph" | "both": the adapter modes its subjects explore
    models: str  # what it models, in one line
    around: Around
    # What a GPU run should know: a real defect with the same symptom, or a read outside the tensors.
    caveat: str = ""

    @property
    def modes(self) -> tuple[str, ...]:
        return ("eager", "graph") if self.mode == "both" else (self.mode,)


OUT_OF_BOUNDS = "on a GPU the stale values may read outside the KV cache (a lost context is still a catch)"

FAULTS: dict[str, LifecycleFault] = {
    f.name: f
    for f in (
        LifecycleFault(
            "paged_causal_first_plan",
            "paged",
            "eager",
            "plan() keeps the first plan's causal",
            _first_plan_argument("causal", False),
        ),
        LifecycleFault(
            "paged_mask_kept",
            "paged",
            "eager",
            "an unmasked re-plan keeps the previous plan's custom mask (mask buffers not cleared)",
            _mask_kept,
            caveat="the symptom of the real ragged defect flashinfer-ragged-stale-mask, on the paged wrapper, "
            "which clears its mask in both versions; " + OUT_OF_BOUNDS,
        ),
        LifecycleFault(
            "paged_mask_mode_first_plan",
            "paged",
            "eager",
            "the first plan fixes MaskMode: after an unmasked first plan a custom mask is dropped",
            _mask_mode_first_plan,
        ),
        LifecycleFault(
            "paged_graph_indices_first_plan",
            "paged",
            "graph",
            "graph: paged_kv_indices buffer copied only on the first plan",
            _graph_buffer_first_plan("_paged_kv_indices_buf"),
            caveat=OUT_OF_BOUNDS,
        ),
        LifecycleFault(
            "paged_graph_last_page_len_first_plan",
            "paged",
            "graph",
            "graph: paged_kv_last_page_len buffer copied only on the first plan",
            _graph_buffer_first_plan("_paged_kv_last_page_len_buf"),
            caveat=OUT_OF_BOUNDS,
        ),
        LifecycleFault(
            "ragged_causal_first_plan",
            "ragged",
            "eager",
            "causal from the first plan",
            _first_plan_argument("causal", False),
        ),
        LifecycleFault(
            "ragged_window_first_plan",
            "ragged",
            "eager",
            "window_left of the first plan",
            _first_plan_argument("window_left", -1),
        ),
        LifecycleFault(
            "ragged_kv_indptr_same_batch",
            "ragged",
            "both",
            "kv_indptr not refreshed when the batch size is unchanged",
            _kv_indptr_same_batch,
            caveat=OUT_OF_BOUNDS,
        ),
        LifecycleFault(
            "ragged_graph_mask_first_plan",
            "ragged",
            "graph",
            "graph: custom mask buffer copied only on the first plan (mask_indptr refreshed)",
            _graph_buffer_first_plan("_custom_mask_buf"),
        ),
        LifecycleFault(
            "ragged_graph_qo_indptr_same_total",
            "ragged",
            "graph",
            "graph: qo_indptr not copied when the total query rows are unchanged",
            _graph_qo_indptr_same_total,
        ),
        LifecycleFault(
            "decode_window_first_plan",
            "decode",
            "eager",
            "decode: window_left of the first plan",
            _first_plan_argument("window_left", -1),
        ),
        LifecycleFault(
            "decode_last_page_len_first_plan",
            "decode",
            "eager",
            "decode: plan() keeps the first plan's last_page_len while the batch size is unchanged",
            _last_page_len_first_plan("last_page_len"),
            caveat=OUT_OF_BOUNDS,
        ),
        LifecycleFault(
            "decode_graph_indptr_first_plan",
            "decode",
            "graph",
            "decode, graph: paged_kv_indptr buffer copied only on the first plan",
            _graph_buffer_first_plan("_paged_kv_indptr_buf"),
            caveat=OUT_OF_BOUNDS,
        ),
        LifecycleFault(
            "decode_graph_last_page_len_first_plan",
            "decode",
            "graph",
            "decode, graph: paged_kv_last_page_len buffer copied only on the first plan",
            _graph_buffer_first_plan("_paged_kv_last_page_len_buf"),
            caveat=OUT_OF_BOUNDS,
        ),
    )
}


def fault(name: str) -> LifecycleFault:
    """The catalogue's fault `name`; a ValueError naming the choices otherwise."""
    return fault_patch.lookup(FAULTS, name, "lifecycle")


# ---- injecting ---------------------------------------------------------------------------------------------
def _patched(f: LifecycleFault, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)  # the adapter reads plan()'s signature (lib.kwargs_for): it stays the library's
    def plan(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = PlanCall(original, self, args, kwargs)
        return f.around(call, lambda: call.call(original))

    setattr(plan, ORIGINAL, original)
    setattr(plan, FAULT_MARKER, f.name)
    return plan


def install(name: str) -> Callable[[], None]:
    """Switch fault `name` on in the installed flashinfer's wrapper class; returns what switches it off.

    Injecting the fault already injected changes nothing (its undo neither): one patch, one set of state."""
    f = fault(name)
    module = fl.import_flashinfer()
    cls = getattr(module, API_CLASSES[f.api])
    return fault_patch.patch(
        module, cls, "plan", lambda original: _patched(f, original), f.name, "lifecycle", again_ok=True
    )


def uninstall() -> None:
    """Switch off whatever fault the installed flashinfer carries (a script's install, say)."""
    module = fl.import_flashinfer()
    for name in API_CLASSES.values():
        cls = getattr(module, name)
        while hasattr(cls.__dict__["plan"], ORIGINAL):
            cls.plan = getattr(cls.__dict__["plan"], ORIGINAL)
    if hasattr(module, FAULT_MARKER):
        delattr(module, FAULT_MARKER)


def injected(name: Optional[str]) -> ContextManager[Optional[LifecycleFault]]:
    """Fault `name` switched on for the block (None: nothing, the clean library)."""
    return fault_patch.injected(install, FAULTS, name)
