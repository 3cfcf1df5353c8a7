"""torch FlexAttention: the whole batch in one call, masks and paging expressed as a mask_mod.

Document-masking style: the queries of every request are packed into one sequence
Q [1, Hq, total_qo, Dqk]; K and V are the PHYSICAL store [1, Hkv, N, D] (ragged/single: the
packed KV; paged/decode: the whole page pool flattened to N = pages x page_size slots, unused
pages and page tails included). The mask_mod reads the page table through lookup tensors:

    q_req[t], q_pos[t]          request and row of packed query t
    kv_req[s], kv_pos[s]        request and key position held by slot s (-1: no request's key)
    keep = kv_req[s] == q_req[t]
           & (causal:  kv_pos <= q_pos + kv_len - qo_len)            bottom-right aligned
           & (window:  kv_pos >= q_pos + kv_len - qo_len - window_left)
           & (custom:  custom_mask[mask_off[req] + q_pos * kv_len + kv_pos])

so unused pages, page tails and other requests' keys are masked out, and a reader that walks the
pool in order instead of through the table would attend garbage (scenarios/tensors.py fills it).
Soft cap is a score_mod, cap * tanh(score / cap), applied to the scaled score before masking.
LSE comes from flex (return_aux / return_lse) and is the natural log (tests check it).

CPU runs eager: flex's unfused path materialises [Hq, total_qo, N] scores, so supports()
declines (TOO_LARGE) a case whose total_qo * N * Hq exceeds FLEX_EAGER_MAX_SCORES. Eager flex
still traces its call through dynamo, once per shape, dtype and mods; the adapters trace with
static shapes, as the compiled call does (dynamic tracing computes the same and costs more). On CUDA,
flex_attention is compiled once per adapter (torch.compile) and reused; dynamo keeps its
compiled variants on flex_attention's code, shared by all adapters, and the call raises the
recompile limit (COMPILED_RECOMPILE_LIMIT) so no case silently falls back to the eager path.
Edges: total_qo == 0 returns empty tensors without a call (flex has nothing to compute and
nothing it could be asked); a batch with no KV slot at all gets one masked-out zero slot so
flex still computes (and is asked for) the empty rows' 0 output and -inf LSE.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from kernels import _env, skips
from kernels._torch_common import (
    TARGET,
    KVSlots,
    check_inputs,
    device_decline,
    dtype_decline,
    hand_back_poisoned,
    kv_slots,
    physical_kv,
    same_inputs,
    store_rows,
)
from kernels.errors import UnsupportedCase
from kernels.protocol import NOT_REPORTED, KernelOutput, Support
from scenarios.poison import poison
from scenarios.case import Case
from scenarios.dtypes import to_torch
from scenarios.tensors import Inputs

BACKEND = "flex"
# Scores the eager (unfused) path may materialise: total_qo * kv_slots * num_qo_heads. Eager flex
# builds the fp32 scores and several int64 temporaries of that size for the mask_mod lookups, so
# 2**22 keeps one case under ~0.5 GiB and ~1 s on a CI core. kv_slots counts the slots the case
# references; a page pool adds its unused pages (at most a quarter more, plus two pages).
FLEX_EAGER_MAX_SCORES = 2**22
# Compiled flex specialises on dtype, head dims and the mods' constants, so a matrix needs many
# compilations of one function; past dynamo's default limit (8) it would silently fall back to
# the unfused eager path. The compiled call raises the limit and makes reaching it an error.
COMPILED_RECOMPILE_LIMIT = 4096


def eager(device: str) -> bool:
    """Flex runs uncompiled on the CPU (compiling there costs more than the cases it serves)."""
    return _env.device_type(device) != "cuda"


def referenced_slots(case: Case) -> int:
    return sum(case.pages_per_request) * case.page_size if case.is_paged else case.total_kv


@dataclass
class _Plan:
    inputs: Inputs
    slots: KVSlots
    block_mask: Any  # torch.nn.attention.flex_attention.BlockMask, or None when total_qo == 0
    score_mod: Optional[Callable[..., torch.Tensor]]
    pad: bool  # the store had no slot: one masked-out zero slot is appended


def _lookups(inputs: Inputs, slots: KVSlots, n: int) -> dict[str, torch.Tensor]:
    c = inputs.case
    dev = inputs.device
    qo = torch.tensor(c.qo_lens, dtype=torch.int64)
    reqs = torch.arange(c.batch_size, dtype=torch.int64)
    q_req = torch.repeat_interleave(reqs, qo)
    starts = torch.cumsum(qo, 0) - qo
    q_pos = torch.arange(c.total_qo, dtype=torch.int64) - torch.repeat_interleave(starts, qo)
    kv_req = torch.full((n,), -1, dtype=torch.int64, device=dev)
    kv_pos = torch.full((n,), -1, dtype=torch.int64, device=dev)
    for i, s in enumerate(slots.per_request):
        kv_req[s] = i
        kv_pos[s] = torch.arange(s.numel(), dtype=torch.int64, device=dev)
    look = dict(
        q_req=q_req.to(dev),
        q_pos=q_pos.to(dev),
        kv_req=kv_req,
        kv_pos=kv_pos,
        qo_len=qo.to(dev),
        kv_len=torch.tensor(c.kv_lens, dtype=torch.int64).to(dev),
    )
    if c.mask == "custom":
        assert inputs.custom_mask is not None and inputs.mask_indptr is not None
        # one trailing False so a clamped index is always in range, even for an empty mask
        look["custom"] = torch.cat(
            [inputs.custom_mask.to(torch.bool).reshape(-1), torch.zeros(1, dtype=torch.bool, device=dev)]
        )
        look["mask_off"] = inputs.mask_indptr[:-1].to(torch.int64)
    return look


def make_mask_mod(case: Case, look: dict[str, torch.Tensor]) -> Callable[..., torch.Tensor]:
    """The batch's mask_mod over (packed query, physical slot); only the case's features appear.

    Feature switches are Python constants, so a compiled kernel carries no dead lookups. (Eager
    flex traces its mods through dynamo and so recompiles per feature combination until dynamo's
    recompile limit; tensor-valued switches were tried and were slower overall on the CPU.)
    """
    q_req, q_pos, kv_req, kv_pos = look["q_req"], look["q_pos"], look["kv_req"], look["kv_pos"]
    qo_len, kv_len = look["qo_len"], look["kv_len"]
    causal, window = case.causal, case.window_left
    custom = look.get("custom")
    mask_off = look.get("mask_off")

    def mask_mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        r = q_req[q_idx]
        i = q_pos[q_idx]
        j = kv_pos[kv_idx]
        keep = kv_req[kv_idx] == r
        if causal or window >= 0 or custom is not None:
            kv = kv_len[r]
            aligned = i + kv - qo_len[r]
            if causal:
                keep = keep & (j <= aligned)
            if window >= 0:
                keep = keep & (j >= aligned - window)
            if custom is not None:
                assert mask_off is not None
                flat = (mask_off[r] + i * kv + j).clamp(0, custom.numel() - 1)
                keep = keep & custom[flat]
        return keep

    return mask_mod


def make_score_mod(cap: float) -> Callable[..., torch.Tensor]:
    """Soft cap on the scaled score, before masking: cap * tanh(score / cap)."""

    def soft_cap(
        score: torch.Tensor, b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor
    ) -> torch.Tensor:
        return cap * torch.tanh(score / cap)

    return soft_cap


class FlexKernel:
    """FlexAttention on one device: eager on the CPU, compiled once per adapter on CUDA."""

    target = TARGET
    backend = BACKEND

    def __init__(self, device: str) -> None:
        self.device = device
        self._plan: Optional[_Plan] = None
        self._compiled: Optional[Callable[..., Any]] = None

    def __repr__(self) -> str:
        return f"FlexKernel(device={self.device!r})"

    def fresh(self) -> "FlexKernel":
        return FlexKernel(self.device)

    def supports(self, case: Case) -> Support:
        dev = device_decline(self.device)
        if dev is not None:
            return dev
        dt = dtype_decline(case, BACKEND)
        if dt is not None:
            return dt
        if eager(self.device):
            scores = case.total_qo * referenced_slots(case) * case.num_qo_heads
            if scores > FLEX_EAGER_MAX_SCORES:
                return Support.no(
                    skips.detail(
                        skips.TOO_LARGE,
                        f"eager flex would materialise {scores} scores "
                        f"(total_qo x kv slots x heads) > FLEX_EAGER_MAX_SCORES={FLEX_EAGER_MAX_SCORES}",
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
        slots = kv_slots(inputs)
        if slots.shared():
            raise UnsupportedCase(
                TARGET,
                BACKEND,
                c.id,
                skips.detail(skips.LAYOUT, "pages shared between requests: one slot cannot name two requests"),
            )
        pad = slots.num_slots == 0
        n = max(1, slots.num_slots)
        block_mask = None
        if c.total_qo > 0:
            mask_mod = make_mask_mod(c, _lookups(inputs, slots, n))
            block_mask = create_block_mask(mask_mod, None, None, c.total_qo, n, device=inputs.device)
        score_mod = make_score_mod(c.logits_soft_cap) if c.logits_soft_cap > 0 else None
        self._plan = _Plan(inputs=inputs, slots=slots, block_mask=block_mask, score_mod=score_mod, pad=pad)

    def run(self, inputs: Inputs) -> KernelOutput:
        if self._plan is None or not same_inputs(self._plan.inputs, inputs):
            self.plan(inputs)
        p = self._plan
        assert p is not None
        c = inputs.case
        dev = inputs.device
        out = poison(torch.empty((c.total_qo, c.num_qo_heads, c.head_dim_vo), dtype=to_torch(c.o_dtype), device=dev))
        lse = poison(torch.empty((c.total_qo, c.num_qo_heads), dtype=torch.float32, device=dev))
        if c.total_qo > 0:
            k, v = physical_kv(inputs)
            if p.pad:
                k = torch.zeros((k.shape[0], 1, k.shape[2]), dtype=k.dtype, device=dev)
                v = torch.zeros((v.shape[0], 1, v.shape[2]), dtype=v.dtype, device=dev)
            q = inputs.q.transpose(0, 1)[None]
            hand_back_poisoned(dev, q.dtype, out.numel())
            with dynamo_settings(self.device):
                o, o_lse = _call(self._flex(), q, k[None], v[None], p.score_mod, p.block_mask, c.scale)
            store_rows(out, 0, o[0].transpose(0, 1))
            store_rows(lse, 0, o_lse[0].transpose(0, 1).to(torch.float32))
        return KernelOutput(out=out, lse=lse, lse_base=math.e, resolved_backend=BACKEND, fallback_reason=NOT_REPORTED)


def flex_function(device: str) -> Callable[..., Any]:
    """flex_attention as the adapters call it on `device`: eager on the CPU, a new compiled one on CUDA.

    Looked up at every call on the CPU, so a fault injected into torch's module is what runs.
    """
    from torch.nn.attention.flex_attention import flex_attention

    if eager(device):
        # Eager on the CPU is a choice (supports() bounds its cost), so torch's advice to
        # compile is noise in every run's output; only that one message is silenced.
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile", category=UserWarning)
        return flex_attention
    # Static shapes and constant floats (scale, soft cap): each case is the kernel a model
    # with those fixed values would get. (torch 2.11's automatic-dynamic recompiles of flex
    # failed to lower: "unbacked_bindings" for a soft cap, "No choices to select".)
    return torch.compile(flex_attention, dynamic=False)


def dynamo_settings(device: str) -> Any:
    """dynamo config for a flex call on `device`.

    Compiled: a high recompile limit, and an error on reaching it. Eager: static shapes, so a new
    length is retraced plainly, not symbolically (cheaper); the dense path that runs is the same.
    """
    import torch._dynamo.config as dynamo_config

    if eager(device):
        wanted: dict[str, Any] = {"automatic_dynamic_shapes": False}
    else:
        wanted = {
            "recompile_limit": COMPILED_RECOMPILE_LIMIT,
            "accumulated_recompile_limit": COMPILED_RECOMPILE_LIMIT,
            "fail_on_recompile_limit_hit": True,
            "specialize_float": True,
        }
    return dynamo_config.patch(**{k: v for k, v in wanted.items() if hasattr(dynamo_config, k)})


def _call(
    fn: Callable[..., Any],
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    score_mod: Optional[Callable[..., torch.Tensor]],
    block_mask: Any,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """flex_attention with its LSE: return_aux where torch has it (2.9+), return_lse before."""
    try:
        from torch.nn.attention.flex_attention import AuxRequest
    except ImportError:
        o, lse = fn(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale, enable_gqa=True, return_lse=True)
        return o, lse
    o, aux = fn(
        q,
        k,
        v,
        score_mod=score_mod,
        block_mask=block_mask,
        scale=scale,
        enable_gqa=True,
        return_aux=AuxRequest(lse=True),
    )
    return o, aux.lse
