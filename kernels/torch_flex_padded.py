"""torch FlexAttention on a padded batch, B > 1: a block mask built from per-request lengths.

q, k, v are padded to the batch's largest lengths (kernels/_torch_batch.py), q [B, Hq, Lq, Dqk],
k [B, Hkv, Lk, Dqk], v [B, Hkv, Lk, Dvo]; the mask_mod reads the batch index and each request's
lengths, as a model with a padded batch writes it:

    keep = (q_idx < qo_len[b]) & (kv_idx < kv_len[b])
           & (causal:  kv_idx <= q_idx + kv_len[b] - qo_len[b])             bottom-right aligned
           & (window:  kv_idx >= q_idx + kv_len[b] - qo_len[b] - window_left)
           & (custom:  custom_mask[mask_off[b] + q_idx * kv_len[b] + kv_idx])

and `create_block_mask(mask_mod, B, None, Lq, Lk)` gives each request its own blocks. Soft cap is a
score_mod (kernels.torch_flex.make_score_mod). Only real rows of the output and of flex's LSE
(natural log) are reported. Eager on the CPU, bounded as the packed flex adapter is (supports()
declines, TOO_LARGE, past FLEX_EAGER_MAX_SCORES = B x Lq x Lk x Hq scores); compiled once per
adapter on CUDA. Edges: no query row (B == 0 or Lq == 0) makes no call; a batch with no key gets
one masked-out zero key so flex still computes the empty rows' 0 output and -inf LSE.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from kernels import skips
from kernels._torch_batch import batch_decline, max_lengths, pad_batch, store_padded
from kernels._torch_common import (
    TARGET,
    KVSlots,
    check_inputs,
    device_decline,
    dtype_decline,
    hand_back_poisoned,
    kv_slots,
    same_inputs,
)
from kernels.errors import UnsupportedCase
from kernels.protocol import NOT_REPORTED, KernelOutput, Support
from kernels.torch_flex import BACKEND as FLEX
from kernels.torch_flex import FLEX_EAGER_MAX_SCORES, _call, dynamo_settings, eager, flex_function, make_score_mod
from scenarios.case import Case
from scenarios.dtypes import to_torch
from scenarios.poison import poison
from scenarios.tensors import Inputs

BACKEND = "flex-padded"


def make_padded_mask_mod(case: Case, look: dict[str, torch.Tensor]) -> Callable[..., torch.Tensor]:
    """The batch's mask_mod over (request b, query row, key position); only the case's features appear."""
    qo_len, kv_len = look["qo_len"], look["kv_len"]
    causal, window = case.causal, case.window_left
    custom = look.get("custom")
    mask_off = look.get("mask_off")

    def mask_mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        kv = kv_len[b]
        keep = (q_idx < qo_len[b]) & (kv_idx < kv)
        if causal or window >= 0:
            aligned = q_idx + kv - qo_len[b]
            if causal:
                keep = keep & (kv_idx <= aligned)
            if window >= 0:
                keep = keep & (kv_idx >= aligned - window)
        if custom is not None:
            assert mask_off is not None
            flat = (mask_off[b] + q_idx * kv + kv_idx).clamp(0, custom.numel() - 1)
            keep = keep & custom[flat]
        return keep

    return mask_mod


def _lookups(inputs: Inputs) -> dict[str, torch.Tensor]:
    c = inputs.case
    dev = inputs.device
    look = dict(
        qo_len=torch.tensor(c.qo_lens, dtype=torch.int64, device=dev),
        kv_len=torch.tensor(c.kv_lens, dtype=torch.int64, device=dev),
    )
    if c.mask == "custom":
        assert inputs.custom_mask is not None and inputs.mask_indptr is not None
        # one trailing False so a clamped index is always in range, even for an empty mask
        look["custom"] = torch.cat(
            [inputs.custom_mask.to(torch.bool).reshape(-1), torch.zeros(1, dtype=torch.bool, device=dev)]
        )
        look["mask_off"] = inputs.mask_indptr[:-1].to(torch.int64)
    return look


@dataclass
class _Plan:
    inputs: Inputs
    slots: KVSlots
    block_mask: Any  # BlockMask, or None when there is no query row
    score_mod: Optional[Callable[..., torch.Tensor]]


class FlexPaddedKernel:
    """FlexAttention on a padded batch: eager on the CPU, compiled once per adapter on CUDA."""

    target = TARGET
    backend = BACKEND

    def __init__(self, device: str) -> None:
        self.device = device
        self._plan: Optional[_Plan] = None
        self._compiled: Optional[Callable[..., Any]] = None

    def __repr__(self) -> str:
        return f"FlexPaddedKernel(device={self.device!r})"

    def fresh(self) -> "FlexPaddedKernel":
        return FlexPaddedKernel(self.device)

    def supports(self, case: Case) -> Support:
        dev = device_decline(self.device)
        if dev is not None:
            return dev
        dt = dtype_decline(case, BACKEND)
        if dt is not None:
            return dt
        small = batch_decline(case, FLEX)
        if small is not None:
            return small
        if eager(self.device):
            lq, lk = max_lengths(case.qo_lens, case.kv_lens)
            scores = case.batch_size * lq * lk * case.num_qo_heads
            if scores > FLEX_EAGER_MAX_SCORES:
                return Support.no(
                    skips.detail(
                        skips.TOO_LARGE,
                        f"eager flex would materialise {scores} scores "
                        f"(B x Lq x Lk x heads) > FLEX_EAGER_MAX_SCORES={FLEX_EAGER_MAX_SCORES}",
                    )
                )
        return Support.yes()

    def _flex(self) -> Callable[..., Any]:
        if eager(self.device):
            return flex_function(self.device)
        if self._compiled is None:
            self._compiled = flex_function(self.device)
        return self._compiled

    def plan(self, inputs: Inputs) -> None:
        """Validate; build the lookups, the mask_mod and its block mask."""
        from torch.nn.attention.flex_attention import create_block_mask

        check_inputs(inputs, self.device)
        c = inputs.case
        sup = self.supports(c)
        if not sup.ok:
            raise UnsupportedCase(TARGET, BACKEND, c.id, sup.reason)
        lq, lk = max_lengths(c.qo_lens, c.kv_lens)
        block_mask = None
        if c.batch_size and lq > 0:
            mask_mod = make_padded_mask_mod(c, _lookups(inputs))
            block_mask = create_block_mask(mask_mod, c.batch_size, None, lq, max(1, lk), device=inputs.device)
        score_mod = make_score_mod(c.logits_soft_cap) if c.logits_soft_cap > 0 else None
        self._plan = _Plan(inputs=inputs, slots=kv_slots(inputs), block_mask=block_mask, score_mod=score_mod)

    def run(self, inputs: Inputs) -> KernelOutput:
        if self._plan is None or not same_inputs(self._plan.inputs, inputs):
            self.plan(inputs)
        p = self._plan
        assert p is not None
        c = inputs.case
        dev = inputs.device
        out = poison(torch.empty((c.total_qo, c.num_qo_heads, c.head_dim_vo), dtype=to_torch(c.o_dtype), device=dev))
        lse = poison(torch.empty((c.total_qo, c.num_qo_heads), dtype=torch.float32, device=dev))
        if p.block_mask is not None:
            t = pad_batch(inputs, p.slots)
            k, v = t.k, t.v
            if k.shape[-2] == 0:  # no key in the batch: one masked-out zero key
                k = torch.zeros(k.shape[:2] + (1, k.shape[3]), dtype=k.dtype, device=dev)
                v = torch.zeros(v.shape[:2] + (1, v.shape[3]), dtype=v.dtype, device=dev)
            hand_back_poisoned(dev, t.q.dtype, t.q.numel() // t.q.shape[-1] * v.shape[-1])
            with dynamo_settings(self.device):
                o, o_lse = _call(self._flex(), t.q, k, v, p.score_mod, p.block_mask, c.scale)
            store_padded(out, c.qo_lens, o)
            store_padded(lse, c.qo_lens, o_lse.to(torch.float32))
        return KernelOutput(out=out, lse=lse, lse_base=math.e, resolved_backend=BACKEND, fallback_reason=NOT_REPORTED)
