"""torch SDPA on a padded batch: the whole batch in ONE call, B > 1, as a model calls it.

Backends: "padded-math", "padded-flash", "padded-efficient", "padded-cudnn" are SDPA's backends
forced with `sdpa_kernel`; "padded-auto" is SDPA's own choice, observed with the selector SDPA
consults (kernels.torch_sdpa.route) and reported as the backend's name ("empty" when the padded
batch has no query or no key, which torch 2.13 answers without a backend). The forced backends
report their own name.

q, k, v are padded to the batch's largest lengths (kernels/_torch_batch.py). The mask SDPA gets:
  * none, for a batch with no padding (every request the same lengths) and no mask feature;
  * `causal_lower_right(Lq, Lk)` for such a batch that is causal alone (torch routes it itself);
  * otherwise a boolean [B, 1, Lq, Lk] mask per request: padding hidden, each request's own
    bottom-right causal, window and custom mask (kernels.torch_sdpa.explicit_mask per request).
Padded query rows are never reported; a real row with nothing to attend is what torch computed.

supports() declines what the per-request adapter declines (soft cap, fp8, mixed dtypes, a backend
this device lacks) and asks SDPA's selector, under the forced backend, about the batch's one call
with empty probe tensors shaped exactly like the run's (a zero-length padded shape: by calling SDPA
itself); torch's explanation is kept. SDPA exposes no LSE: lse is None.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Optional

import torch

from kernels import _env, skips
from kernels._torch_batch import batch_decline, max_lengths, pad_batch, padded_mask, store_padded, uniform
from kernels._torch_common import (
    TARGET,
    KVSlots,
    check_inputs,
    hand_back_poisoned,
    kv_slots,
    same_inputs,
    sdpa_decline,
)
from kernels.errors import LibraryRefused, UnknownBackend, UnsupportedCase
from kernels.protocol import NOT_REPORTED, KernelOutput, Support
from kernels.torch_sdpa import (
    AUTO,
    EMPTY_PATH,
    REFUSAL_FRAGMENTS,
    CallForm,
    _causal_lower_right,
    _explanation,
    _forced,
    empty_input_shortcut,
    route,
)
from scenarios.case import Case
from scenarios.dtypes import to_torch
from scenarios.poison import poison
from scenarios.tensors import Inputs

PREFIX = "padded-"
CPU_BACKENDS: tuple[str, ...] = ("padded-math", "padded-flash", "padded-auto")
CUDA_BACKENDS: tuple[str, ...] = ("padded-math", "padded-flash", "padded-efficient", "padded-cudnn", "padded-auto")


def backends_for(device: str) -> tuple[str, ...]:
    kind = _env.device_type(device)
    return CPU_BACKENDS if kind == "cpu" else CUDA_BACKENDS if kind == "cuda" else ()


def sdpa_backend(backend: str) -> str:
    """The SDPA backend a padded backend forces ("auto": none): "padded-flash" -> "flash"."""
    return backend[len(PREFIX) :]


def padded_form(case: Case) -> CallForm:
    """How the batch's mask reaches SDPA: none, causal_lower_right, or the explicit per-request mask."""
    if case.window_left >= 0 or case.mask == "custom" or not uniform(case.qo_lens, case.kv_lens):
        return "explicit"
    return "causal" if case.causal else "plain"


@dataclass
class _Plan:
    inputs: Inputs
    slots: KVSlots
    mask: Any  # None, a CausalBias, or a boolean [B, 1, Lq, Lk] tensor


class PaddedSdpaKernel:
    """One SDPA backend (or SDPA's own choice) called once on the padded batch."""

    target = TARGET

    def __init__(self, backend: str, device: str) -> None:
        if backend not in CPU_BACKENDS + CUDA_BACKENDS:
            raise UnknownBackend(TARGET, backend, backends_for(device), device)
        self.backend = backend
        self.sdpa = sdpa_backend(backend)
        self.device = device
        self._plan: Optional[_Plan] = None
        self._support: dict[Case, Support] = {}

    def __repr__(self) -> str:
        return f"PaddedSdpaKernel(backend={self.backend!r}, device={self.device!r})"

    def fresh(self) -> "PaddedSdpaKernel":
        return PaddedSdpaKernel(self.backend, self.device)

    def supports(self, case: Case) -> Support:
        if case not in self._support:
            self._support[case] = self._decide(case)
        return self._support[case]

    def _decide(self, case: Case) -> Support:
        common = sdpa_decline(case, self.backend, self.sdpa, self.device, backends_for(self.device))
        if common is not None:
            return common
        small = batch_decline(case, self.sdpa)
        if small is not None:
            return small
        return self._probe(case)

    def _probe(self, case: Case) -> Support:
        """Ask SDPA about the batch's one call: its selector for a non-empty padded shape (math and
        auto take every one), SDPA itself for a zero-length one."""
        if case.batch_size == 0:
            return Support.yes()
        lq, lk = max_lengths(case.qo_lens, case.kv_lens)
        empty = lq == 0 or lk == 0
        if not empty and self.sdpa in (AUTO, "math"):
            return Support.yes()
        dev = torch.device(self.device)
        dtype = to_torch(case.q_dtype)
        b, form, gqa = case.batch_size, padded_form(case), case.group_size > 1
        q = torch.empty((b, lq, case.num_qo_heads, case.head_dim_qk), dtype=dtype, device=dev).transpose(1, 2)
        k = torch.empty((b, lk, case.num_kv_heads, case.head_dim_qk), dtype=dtype, device=dev).transpose(1, 2)
        v = torch.empty((b, lk, case.num_kv_heads, case.head_dim_vo), dtype=dtype, device=dev).transpose(1, 2)
        mask = torch.ones((b, 1, lq, lk), dtype=torch.bool, device=dev) if form == "explicit" else None
        with warnings.catch_warnings(record=True) as caught, _forced(self.sdpa):
            warnings.simplefilter("always")
            try:
                if empty:
                    attn = _causal_lower_right(lq, lk) if form == "causal" else mask
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
                    skips.detail(skips.LIBRARY_REFUSED, f"SDPA {self.backend} for B={b} Lq={lq} Lk={lk}: {why}")
                )
        return Support.yes()

    def plan(self, inputs: Inputs) -> None:
        """Validate; gather the slots and build the batch's mask. torch itself has no plan stage."""
        check_inputs(inputs, self.device)
        c = inputs.case
        sup = self.supports(c)
        if not sup.ok:
            raise UnsupportedCase(TARGET, self.backend, c.id, sup.reason)
        form = padded_form(c)
        mask: Any = None
        if c.batch_size and form == "causal":
            mask = _causal_lower_right(*max_lengths(c.qo_lens, c.kv_lens))
        elif c.batch_size and form == "explicit":
            mask = padded_mask(inputs)
        self._plan = _Plan(inputs=inputs, slots=kv_slots(inputs), mask=mask)

    def run(self, inputs: Inputs) -> KernelOutput:
        if self._plan is None or not same_inputs(self._plan.inputs, inputs):
            self.plan(inputs)
        p = self._plan
        assert p is not None
        c = inputs.case
        out = poison(
            torch.empty((c.total_qo, c.num_qo_heads, c.head_dim_vo), dtype=to_torch(c.o_dtype), device=inputs.device)
        )
        resolved = self.backend if self.sdpa != AUTO else EMPTY_PATH
        if c.batch_size:
            t = pad_batch(inputs, p.slots)
            gqa = c.group_size > 1
            hand_back_poisoned(inputs.device, t.q.dtype, t.q.numel() // t.q.shape[-1] * t.v.shape[-1])
            with _forced(self.sdpa):
                try:
                    o = torch.nn.functional.scaled_dot_product_attention(
                        t.q, t.k, t.v, attn_mask=p.mask, scale=c.scale, enable_gqa=gqa
                    )
                except RuntimeError as e:
                    if any(f in str(e) for f in REFUSAL_FRAGMENTS):
                        raise LibraryRefused(TARGET, self.backend, c.id, str(e).strip()) from e
                    raise
                lq, lk = t.q.shape[-2], t.k.shape[-2]
                if self.sdpa == AUTO and (lq > 0 and lk > 0 or not empty_input_shortcut(inputs.device.type)):
                    form = padded_form(c)
                    resolved = route(t.q, t.k, t.v, form, p.mask if form == "explicit" else None, c.scale, gqa)
            store_padded(out, c.qo_lens, o)
        return KernelOutput(out=out, lse=None, lse_base=math.e, resolved_backend=resolved, fallback_reason=NOT_REPORTED)
