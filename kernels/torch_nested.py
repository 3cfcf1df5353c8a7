"""torch SDPA on nested (jagged) tensors: the whole batch in ONE call, no padding.

Backends: "nested-math", "nested-flash", "nested-efficient", "nested-cudnn" forced with
`sdpa_kernel`; "nested-auto" is SDPA's own choice, observed with the selector jagged SDPA consults
(`torch.nested._internal.sdpa._select_sdp_backend`) and reported as the backend's name. The
forced backends report their own name. An empty batch makes no call ("empty").

q, k, v are `torch.nested.nested_tensor_from_jagged(values, offsets)` over the packed rows
[total, H, D] (KV gathered through the page table first), transposed to [B, H, j, D] as the
nested API takes them; the output's values are the packed rows. Causal is `is_causal=True`, which
aligns the diagonal top-left (the efficient kernel's CausalFromTopLeft); jagged SDPA has no
bottom-right form, so a causal batch with a request whose qo and kv lengths differ is declined.
Window and custom masks are an attn_mask, which jagged SDPA refuses.

What torch 2.13 accepts (measured on the CPU, by calling it): math only (flash on the CPU takes no
nested input); no attn_mask ("Masks are not yet supported!"), no is_causal (math: "Nested tensors
for query / key are not supported when is_causal=True."), no GQA (math ignores enable_gqa:
"matmul: For nested tensors, batch dimensions must have the same sizes"), and a batch that holds a
zero-length request beside others fails inside the math path. supports() learns all of this by
calling SDPA, under the forced backend, on small nested tensors shaped like the run's (lengths
capped at PROBE_LENGTH, zero lengths kept) and declines with torch's words: its selector's log
lines, else the error's first line. SDPA exposes no LSE: lse is None.
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import torch

from kernels import _env, skips
from kernels._torch_batch import packed_kv
from kernels._torch_common import (
    TARGET,
    KVSlots,
    check_inputs,
    hand_back_poisoned,
    kv_slots,
    same_inputs,
    sdpa_decline,
    store_rows,
)
from kernels.errors import LibraryRefused, UnknownBackend, UnsupportedCase
from kernels.protocol import NOT_REPORTED, KernelOutput, Support
from kernels.torch_sdpa import AUTO, EMPTY_PATH, REFUSAL_FRAGMENTS, _choice_name, _forced
from scenarios.case import Case
from scenarios.dtypes import to_torch
from scenarios.poison import poison
from scenarios.tensors import Inputs

PREFIX = "nested-"
CPU_BACKENDS: tuple[str, ...] = ("nested-math", "nested-auto")
CUDA_BACKENDS: tuple[str, ...] = ("nested-math", "nested-flash", "nested-efficient", "nested-cudnn", "nested-auto")
# Longest request length the support probe builds (zero lengths stay zero: they change what torch takes).
PROBE_LENGTH = 2
_SELECTOR_LOG = "torch.nested._internal.sdpa"
# torch's math path builds strided nested tensors and warns, every run, that they are a prototype.
PROTOTYPE_WARNING = "The PyTorch API of nested tensors"


def backends_for(device: str) -> tuple[str, ...]:
    kind = _env.device_type(device)
    return CPU_BACKENDS if kind == "cpu" else CUDA_BACKENDS if kind == "cuda" else ()


def jagged(values: torch.Tensor, lens: tuple[int, ...]) -> torch.Tensor:
    """A jagged nested tensor [B, H, j, D] over packed rows `values` [total, H, D]."""
    offsets = torch.zeros(len(lens) + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(torch.tensor(lens, dtype=torch.int64), 0)
    return torch.nested.nested_tensor_from_jagged(values, offsets.to(values.device)).transpose(1, 2)


def nested_mask(case: Case) -> Optional[torch.Tensor]:
    """What the run passes as attn_mask: jagged SDPA takes none, so a window or custom mask is a
    (dense, all-True) stand-in that makes torch say so; None otherwise."""
    if case.window_left >= 0 or case.mask == "custom":
        return torch.ones((1, 1, 1, 1), dtype=torch.bool)
    return None


@contextlib.contextmanager
def _selector_log() -> Iterator[list[str]]:
    """The jagged selector's log lines (why each backend was not used), captured, not printed."""
    lines: list[str] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage().strip())

    log = logging.getLogger(_SELECTOR_LOG)
    handlers, propagate, level = log.handlers, log.propagate, log.level
    log.handlers, log.propagate = [_Keep()], False
    log.setLevel(logging.WARNING)
    try:
        yield lines
    finally:
        log.handlers, log.propagate = handlers, propagate
        log.setLevel(level)


def _explanation(lines: list[str], error: BaseException) -> str:
    kept = [t for t in lines if t and not t.endswith("because:")]
    return "; ".join(dict.fromkeys(kept)) if kept else str(error).strip().splitlines()[0]


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, case: Case, mask: Any) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, is_causal=case.causal, scale=case.scale, enable_gqa=case.group_size > 1
    )


def selector_choice(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, case: Case) -> str:
    """The backend jagged SDPA picks for this call under the active sdpa_kernel context."""
    from torch.nested._internal.sdpa import _select_sdp_backend

    with _selector_log():
        choice = _select_sdp_backend(q, k, v, None, 0.0, case.causal, case.group_size > 1)
    return _choice_name(int(choice.value))


@dataclass
class _Plan:
    inputs: Inputs
    slots: KVSlots


class NestedSdpaKernel:
    """One SDPA backend (or SDPA's own choice) called once on jagged nested tensors."""

    target = TARGET

    def __init__(self, backend: str, device: str) -> None:
        if backend not in CPU_BACKENDS + CUDA_BACKENDS:
            raise UnknownBackend(TARGET, backend, backends_for(device), device)
        self.backend = backend
        self.sdpa = backend[len(PREFIX) :]
        self.device = device
        self._plan: Optional[_Plan] = None
        self._support: dict[Case, Support] = {}

    def __repr__(self) -> str:
        return f"NestedSdpaKernel(backend={self.backend!r}, device={self.device!r})"

    def fresh(self) -> "NestedSdpaKernel":
        return NestedSdpaKernel(self.backend, self.device)

    def supports(self, case: Case) -> Support:
        if case not in self._support:
            self._support[case] = self._decide(case)
        return self._support[case]

    def _decide(self, case: Case) -> Support:
        common = sdpa_decline(case, self.backend, self.sdpa, self.device, backends_for(self.device))
        if common is not None:
            return common
        unequal = [(q, k) for q, k in zip(case.qo_lens, case.kv_lens) if q and q != k]
        if case.causal and unequal:  # is_causal aligns top-left (module docstring)
            return Support.no(skips.detail(skips.CAUSAL_ALIGNMENT, f"requests (qo, kv) {unequal[:3]}"))
        return self._probe(case)

    def _probe(self, case: Case) -> Support:
        """Call jagged SDPA, under the forced backend, on small tensors shaped like the run's."""
        if case.batch_size == 0:
            return Support.yes()
        dev = torch.device(self.device)
        dtype = to_torch(case.q_dtype)
        qo = tuple(min(n, PROBE_LENGTH) for n in case.qo_lens)
        kv = tuple(min(n, PROBE_LENGTH) for n in case.kv_lens)
        q = jagged(torch.zeros((sum(qo), case.num_qo_heads, case.head_dim_qk), dtype=dtype, device=dev), qo)
        k = jagged(torch.zeros((sum(kv), case.num_kv_heads, case.head_dim_qk), dtype=dtype, device=dev), kv)
        v = jagged(torch.zeros((sum(kv), case.num_kv_heads, case.head_dim_vo), dtype=dtype, device=dev), kv)
        mask = nested_mask(case)
        with _selector_log() as lines, _forced(self.sdpa), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=PROTOTYPE_WARNING, category=UserWarning)
            try:
                _sdpa(q, k, v, case, None if mask is None else mask.to(dev))
            except (RuntimeError, ValueError) as e:
                why = _explanation(lines, e)
                return Support.no(
                    skips.detail(
                        skips.LIBRARY_REFUSED, f"jagged SDPA {self.backend} for qo_lens={qo} kv_lens={kv}: {why}"
                    )
                )
        return Support.yes()

    def plan(self, inputs: Inputs) -> None:
        """Validate; gather the slots. torch itself has no plan stage."""
        check_inputs(inputs, self.device)
        c = inputs.case
        sup = self.supports(c)
        if not sup.ok:
            raise UnsupportedCase(TARGET, self.backend, c.id, sup.reason)
        self._plan = _Plan(inputs=inputs, slots=kv_slots(inputs))

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
            k_packed, v_packed = packed_kv(inputs, p.slots)
            q = jagged(inputs.q, c.qo_lens)
            k, v = jagged(k_packed, c.kv_lens), jagged(v_packed, c.kv_lens)
            mask = nested_mask(c)
            with _selector_log(), _forced(self.sdpa), warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=PROTOTYPE_WARNING, category=UserWarning)
                hand_back_poisoned(inputs.device, inputs.q.dtype, out.numel())
                try:
                    o = _sdpa(q, k, v, c, None if mask is None else mask.to(inputs.device))
                except RuntimeError as e:
                    if any(f in str(e) for f in REFUSAL_FRAGMENTS):
                        raise LibraryRefused(TARGET, self.backend, c.id, str(e).strip()) from e
                    raise
                if self.sdpa == AUTO:
                    resolved = selector_choice(q, k, v, c)
            store_rows(out, 0, o.transpose(1, 2).values())
        return KernelOutput(out=out, lse=None, lse_base=math.e, resolved_backend=resolved, fallback_reason=NOT_REPORTED)
