"""torch scaled_dot_product_attention (SDPA), one adapter per backend: forced, or SDPA's own choice.

Backends: "math", "flash", "efficient", "cudnn" are forced with
`torch.nn.attention.sdpa_kernel([SDPBackend.X])`; "auto" is SDPA's own choice, observed per
request with `torch._fused_sdp_choice` (the function SDPA itself consults) and reported as the
backend name, several names joined with '+' (sorted) when requests of one batch went to
different backends. torch gives no reason for its choice: fallback_reason is NOT_REPORTED.

SDPA has no batched, ragged or paged API, so a batch is one SDPA call per request:
q [1, Hq, qo_len, Dqk], k [1, Hkv, kv_len, Dqk], v [1, Hkv, kv_len, Dvo], with enable_gqa
when Hq > Hkv. Paged KV is gathered through the page table by the adapter
(kernels/_torch_common.py), NHD or HND. Masks:
  * bottom-right causal alone: `torch.nn.attention.bias.causal_lower_right(qo, kv)`, which
    torch routes itself (flash/efficient natively on CUDA, a materialised mask otherwise);
  * a window or a custom mask (with or without causal): an explicit boolean [qo, kv] mask
    built here, independently of oracle/masks.py.
Zero-length requests are still sent to SDPA, never answered by the adapter. torch 2.13 answers
q or k of length 0 with zeros through an empty-input path, before any backend is chosen: such
requests run no backend, so "auto" leaves them out of its resolved name (an all-empty batch
resolves to "empty"). torch 2.11 has no such path: forced fused backends refuse empty inputs
(supports() declines, having asked), and auto routes them to math, which the name then shows.
`empty_input_shortcut()` tells the two apart. SDPA exposes no LSE publicly: lse is None.

supports() declines soft cap, fp8, mixed q/kv dtypes and an output dtype other than q's, a
backend this device lacks, and any request shape SDPA would refuse under the forced backend,
found by asking SDPA's own selector with empty probe tensors shaped exactly like the run's
(zero-length shapes: by calling SDPA itself); torch's explanation is kept as the detail. A
refusal that still happens at run time raises kernels.errors.LibraryRefused with torch's message.

Seen on an H200 (torch 2.11+cu130, cuDNN 9.19): rows with nothing to attend come back non-zero
from cudnn (boolean mask with a fully masked row) and from efficient (causal_lower_right with
qo_len > kv_len); the adapter reports what torch computed and the oracle comparison fails them.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import warnings
from dataclasses import dataclass
from typing import Any, Iterator, Literal, Optional, Union

import torch

from kernels import _env, skips
from kernels._torch_common import (
    TARGET,
    KVSlots,
    check_inputs,
    hand_back_poisoned,
    kv_slots,
    physical_kv,
    same_inputs,
    sdpa_decline,
    store_rows,
)
from kernels.errors import LibraryRefused, UnknownBackend, UnsupportedCase
from kernels.protocol import NOT_REPORTED, KernelOutput, Support
from scenarios.poison import poison
from scenarios.case import Case
from scenarios.dtypes import to_torch
from scenarios.tensors import Inputs

CPU_BACKENDS: tuple[str, ...] = ("math", "flash", "auto")
CUDA_BACKENDS: tuple[str, ...] = ("math", "flash", "efficient", "cudnn", "auto")
AUTO = "auto"
# Resolved name of an "auto" batch whose every request has a zero length: no backend ran.
EMPTY_PATH = "empty"
# Fragments of torch's refusal when every enabled backend declines (sdp_utils.cpp, attention.cpp).
REFUSAL_FRAGMENTS = ("No available kernel", "No viable backend")

_FORCED = {"math": "MATH", "flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION"}
_CHOICE_NAMES = {
    "MATH": "math",
    "FLASH_ATTENTION": "flash",
    "EFFICIENT_ATTENTION": "efficient",
    "CUDNN_ATTENTION": "cudnn",
    "OVERRIDEABLE": "overrideable",
}
_TRIGGERED = re.compile(r"\s*\(Triggered internally at .*\)\s*$", re.S)

CallForm = Literal["plain", "causal", "explicit"]
Mask = Union[None, torch.Tensor]


def backends_for(device: str) -> tuple[str, ...]:
    kind = _env.device_type(device)
    return CPU_BACKENDS if kind == "cpu" else CUDA_BACKENDS if kind == "cuda" else ()


def explicit_mask(
    qo: int, kv: int, *, causal: bool, window_left: int, custom: Optional[torch.Tensor], device: torch.device
) -> torch.Tensor:
    """Boolean [qo, kv], True = attend: bottom-right causal, window and custom mask, ANDed.

    Row i is aligned with key i + (kv - qo); causal keeps keys at or left of it, the window keeps
    keys no more than `window_left` left of it.
    """
    aligned = torch.arange(qo, device=device).view(-1, 1) + (kv - qo)
    key = torch.arange(kv, device=device).view(1, -1)
    keep = torch.ones((qo, kv), dtype=torch.bool, device=device)
    if causal:
        keep &= key <= aligned
    if window_left >= 0:
        keep &= key >= aligned - window_left
    if custom is not None:
        keep &= custom.to(device=device, dtype=torch.bool)
    return keep


def call_form(case: Case) -> CallForm:
    if case.window_left >= 0 or case.mask == "custom":
        return "explicit"
    return "causal" if case.causal else "plain"


@contextlib.contextmanager
def _forced(backend: str) -> Iterator[None]:
    if backend == AUTO:
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([getattr(SDPBackend, _FORCED[backend])]):
        yield


def _choice_name(choice: int) -> str:
    from torch.nn.attention import SDPBackend

    for member, name in _CHOICE_NAMES.items():
        if int(getattr(SDPBackend, member).value) == int(choice):
            return name
    return f"sdp-backend-{int(choice)}"


def _sdpa_params(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Mask, causal: bool, gqa: bool) -> Any:
    params_t = torch.backends.cuda.SDPAParams
    try:
        return params_t(q, k, v, mask, 0.0, causal, gqa)
    except TypeError:  # torch < 2.5: no enable_gqa field
        return params_t(q, k, v, mask, 0.0, causal)


def route(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, form: CallForm, mask: Mask, scale: float, gqa: bool
) -> str:
    """The backend SDPA runs for this call under the active sdpa_kernel context; RuntimeError if none.

    Mirrors torch.nn.attention.bias.CausalBias._dispatch for causal_lower_right: with qo == kv it
    is plain is_causal; otherwise flash, then efficient are called directly when their
    can_use_* check passes, and anything else gets the materialised mask through SDPA.
    """
    qo, kv = q.shape[-2], k.shape[-2]
    is_causal = False
    if form == "causal":
        if qo == kv:
            is_causal = True
        else:
            params = _sdpa_params(q, k, v, None, False, gqa)
            if torch.backends.cuda.can_use_flash_attention(params, False):
                return "flash"
            if torch.backends.cuda.can_use_efficient_attention(params, False):
                return "efficient"
            mask = explicit_mask(qo, kv, causal=True, window_left=-1, custom=None, device=q.device)
    choice = torch._fused_sdp_choice(q, k, v, mask, 0.0, is_causal, scale=scale, enable_gqa=gqa)
    return _choice_name(int(choice))


def _explanation(caught: list[warnings.WarningMessage], error: BaseException) -> str:
    """torch's own words for a refusal: its debug warnings (less the backends the forced context
    switched off, which say so), else the error text."""
    lines = []
    for w in caught:
        text = _TRIGGERED.sub("", str(w.message)).strip()
        if text and not text.endswith("because:") and "runtime disabled" not in text and text not in lines:
            lines.append(text)
    return "; ".join(lines) if lines else str(error).strip().splitlines()[0]


@functools.lru_cache(maxsize=None)
def empty_input_shortcut(device_type: str) -> bool:
    """Whether this torch answers zero-length q or k itself, before choosing any backend.

    torch 2.13 does (zeros, whatever backend is forced); torch 2.11 does not (a forced fused
    backend refuses, auto routes to math). Asked once per device type by forcing the efficient
    backend on empty float64 tensors, which no fused kernel takes: success means the shortcut.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.empty((1, 1, 0, 8), dtype=torch.float64, device=device_type)
    with warnings.catch_warnings(), sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
        warnings.simplefilter("ignore")
        try:
            torch.nn.functional.scaled_dot_product_attention(q, q, q)
        except RuntimeError:
            return False
    return True


@dataclass(frozen=True)
class _Request:
    index: int
    q0: int
    qo: int
    kv: int
    mask: Any  # None, a CausalBias, or a boolean [qo, kv] tensor


@dataclass
class _Plan:
    inputs: Inputs
    slots: KVSlots
    requests: tuple[_Request, ...]
    empty_shortcut: bool  # torch answers zero-length requests without a backend


class SdpaKernel:
    """One SDPA backend (or SDPA's own choice) on one device."""

    target = TARGET

    def __init__(self, backend: str, device: str) -> None:
        if backend not in CPU_BACKENDS + CUDA_BACKENDS:
            raise UnknownBackend(TARGET, backend, backends_for(device), device)
        self.backend = backend
        self.device = device
        self._plan: Optional[_Plan] = None
        self._support: dict[Case, Support] = {}

    def __repr__(self) -> str:
        return f"SdpaKernel(backend={self.backend!r}, device={self.device!r})"

    def fresh(self) -> "SdpaKernel":
        return SdpaKernel(self.backend, self.device)

    # ---- support -------------------------------------------------------------------------
    def supports(self, case: Case) -> Support:
        if case not in self._support:
            self._support[case] = self._decide(case)
        return self._support[case]

    def _decide(self, case: Case) -> Support:
        common = sdpa_decline(case, self.backend, self.backend, self.device, backends_for(self.device))
        if common is not None:
            return common
        return self._probe(case)

    def _probe(self, case: Case) -> Support:
        """Ask SDPA itself, under the forced backend, about every distinct request shape.

        Zero-length shapes are simply called (empty tensors cost nothing and the answer is
        exact, whether or not this torch has the empty-input shortcut). Other shapes go to
        SDPA's selector (`route`) with empty probe tensors laid out exactly like the run's.
        math and auto are only asked about zero-length shapes: they take every other one.
        """
        dev = torch.device(self.device)
        dtype = to_torch(case.q_dtype)
        form = call_form(case)
        gqa = case.group_size > 1
        for qo, kv in sorted(set(zip(case.qo_lens, case.kv_lens))):
            empty = qo == 0 or kv == 0
            if not empty and self.backend in (AUTO, "math"):
                continue
            q = torch.empty((qo, case.num_qo_heads, case.head_dim_qk), dtype=dtype, device=dev).transpose(0, 1)[None]
            k = torch.empty((1, case.num_kv_heads, kv, case.head_dim_qk), dtype=dtype, device=dev)
            v = torch.empty((1, case.num_kv_heads, kv, case.head_dim_vo), dtype=dtype, device=dev)
            mask = torch.ones((qo, kv), dtype=torch.bool, device=dev) if form == "explicit" else None
            with warnings.catch_warnings(record=True) as caught, _forced(self.backend):
                warnings.simplefilter("always")
                try:
                    if empty:
                        attn = _causal_lower_right(qo, kv) if form == "causal" else mask
                        torch.nn.functional.scaled_dot_product_attention(
                            q, k, v, attn_mask=attn, scale=case.scale, enable_gqa=gqa
                        )
                    else:
                        route(q, k, v, form, mask, case.scale, gqa)
                except RuntimeError as e:
                    if empty and not any(f in str(e) for f in REFUSAL_FRAGMENTS):
                        raise
                    why = _explanation(caught, e)
                    return Support.no(
                        skips.detail(skips.LIBRARY_REFUSED, f"SDPA {self.backend} for qo_len={qo} kv_len={kv}: {why}")
                    )
        return Support.yes()

    # ---- lifecycle -----------------------------------------------------------------------
    def plan(self, inputs: Inputs) -> None:
        """Validate; gather index and per-request masks. torch itself has no plan stage."""
        check_inputs(inputs, self.device)
        c = inputs.case
        sup = self.supports(c)
        if not sup.ok:
            raise UnsupportedCase(TARGET, self.backend, c.id, sup.reason)
        form = call_form(c)
        reqs = []
        q0 = 0
        for i, (qo, kv) in enumerate(zip(c.qo_lens, c.kv_lens)):
            mask: Any = None
            if form == "causal":
                mask = _causal_lower_right(qo, kv)
            elif form == "explicit":
                mask = explicit_mask(
                    qo,
                    kv,
                    causal=c.causal,
                    window_left=c.window_left,
                    custom=inputs.request_mask(i),
                    device=inputs.device,
                )
            reqs.append(_Request(i, q0, qo, kv, mask))
            q0 += qo
        self._plan = _Plan(
            inputs=inputs,
            slots=kv_slots(inputs),
            requests=tuple(reqs),
            empty_shortcut=empty_input_shortcut(inputs.device.type),
        )

    def run(self, inputs: Inputs) -> KernelOutput:
        if self._plan is None or not same_inputs(self._plan.inputs, inputs):
            self.plan(inputs)
        assert self._plan is not None
        c = inputs.case
        out = poison(
            torch.empty((c.total_qo, c.num_qo_heads, c.head_dim_vo), dtype=to_torch(c.o_dtype), device=inputs.device)
        )
        k_store, v_store = physical_kv(inputs)
        gqa = c.group_size > 1
        form = call_form(c)
        chosen: list[str] = []
        shortcut = self._plan.empty_shortcut
        with _forced(self.backend):
            for r in self._plan.requests:
                slots = self._plan.slots.per_request[r.index]
                q = inputs.q[r.q0 : r.q0 + r.qo].transpose(0, 1)[None]
                k = k_store.index_select(1, slots)[None]
                v = v_store.index_select(1, slots)[None]
                hand_back_poisoned(inputs.device, q.dtype, out.numel())
                try:
                    o = torch.nn.functional.scaled_dot_product_attention(
                        q, k, v, attn_mask=r.mask, scale=c.scale, enable_gqa=gqa
                    )
                except RuntimeError as e:
                    if any(f in str(e) for f in REFUSAL_FRAGMENTS):
                        raise LibraryRefused(TARGET, self.backend, c.id, str(e).strip()) from e
                    raise
                if self.backend == AUTO and (r.qo > 0 and r.kv > 0 or not shortcut):
                    mask = r.mask if form == "explicit" else None
                    chosen.append(route(q, k, v, form, mask, c.scale, gqa))
                store_rows(out, r.q0, o[0].transpose(0, 1))
        resolved = self.backend
        if self.backend == AUTO:
            resolved = "+".join(sorted(set(chosen))) if chosen else EMPTY_PATH
        return KernelOutput(out=out, lse=None, lse_base=math.e, resolved_backend=resolved, fallback_reason=NOT_REPORTED)


def _causal_lower_right(qo: int, kv: int) -> Any:
    from torch.nn.attention.bias import causal_lower_right

    with warnings.catch_warnings():
        # torch warns that qo > kv "will produce NaNs"; whether it does is what the run checks.
        warnings.simplefilter("ignore", UserWarning)
        return causal_lower_right(qo, kv)
