"""What the torch adapters (SDPA and FlexAttention) share: declines, KV addressing, row stores.

Kept apart from kernels/torch_sdpa.py and kernels/torch_flex.py because both read the KV cache
the same way: as a *physical store* [Hkv, N, D] (the packed KV of a ragged batch, or the whole
page pool flattened to N = pages x page_size slots) addressed by per-request *slot indices*
derived from the page table. This is the adapters' own code, written independently of
oracle/reference.py, so that a page-table bug in one cannot hide the same bug in the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from kernels import _env, skips
from kernels.protocol import Support
from scenarios.case import Case
from scenarios.errors import InvalidInputs
from scenarios.poison import poison
from scenarios.tensors import Inputs, validate_inputs

TARGET = "torch"
# Blocks handed back to the CUDA caching allocator before a torch call that allocates its own output: the small
# pool (allocations up to 1 MiB) cuts from 2 MiB segments, so 16 of 512 KiB fill 4 segments; the large pool gets
# two blocks larger than the call's output.
POISONED_SMALL_BLOCKS = 16
SMALL_BLOCK_BYTES = 2**19
POISONED_LARGE_BLOCKS = 2


def device_decline(device: str) -> Optional[Support]:
    """A decline when the adapter's device does not exist here (a CUDA adapter on a CPU host)."""
    if _env.device_type(device) == "cuda" and not _env.cuda_available():
        return Support.no(skips.detail(skips.DEVICE_BACKEND, f"{device} requested but torch sees no CUDA device"))
    return None


def dtype_decline(case: Case, backend: str) -> Optional[Support]:
    """Declines shared by every torch backend: torch attention takes one dtype for q, k, v and o."""
    if case.is_fp8:
        return Support.no(skips.detail(skips.NO_FP8, f"torch {backend} takes fp16/bf16/fp32 q, k, v only"))
    if case.q_dtype != case.kv_dtype:
        return Support.no(skips.detail(skips.MIXED_QKV_DTYPE, f"q {case.q_dtype}, kv {case.kv_dtype}"))
    if case.o_dtype != case.q_dtype:
        return Support.no(skips.detail(skips.OUTPUT_DTYPE, f"o {case.o_dtype}, q {case.q_dtype}"))
    return None


def sdpa_decline(case: Case, backend: str, sdpa: str, device: str, offered: tuple[str, ...]) -> Optional[Support]:
    """What every SDPA adapter (per request, padded, nested) declines before asking torch: its device absent, its
    `backend` not among those `offered` on `device`, cuDNN (`sdpa`, the SDPA kernel it forces) not in this build,
    a soft cap, or dtypes torch takes no call with."""
    dev = device_decline(device)
    if dev is not None:
        return dev
    if backend not in offered:
        return Support.no(skips.detail(skips.DEVICE_BACKEND, f"SDPA {backend} on {device}"))
    if sdpa == "cudnn" and (_env.is_rocm() or not torch.backends.cudnn.is_available()):
        return Support.no(skips.detail(skips.DEVICE_BACKEND, "cuDNN is not available in this torch build"))
    if case.logits_soft_cap > 0:
        return Support.no(skips.detail(skips.NO_SOFT_CAP, "SDPA has no score modification"))
    return dtype_decline(case, backend)


def check_inputs(inputs: Inputs, device: str) -> None:
    """Refuse inputs that contradict their case, or that live on another device than the adapter."""
    want = torch.device(device)
    got = inputs.device
    if got.type != want.type or (want.index is not None and got.index != want.index):
        raise InvalidInputs(
            "inputs.device",
            str(got),
            f"tensors on {device}, the adapter's device",
            f"materialise the case with device={device!r} or make the adapter for {got}",
        )
    validate_inputs(inputs)


def store_rows(out: torch.Tensor, lo: int, rows: torch.Tensor) -> None:
    """Write `rows` into out[lo:lo + len(rows)]: the one place adapters write their output.

    A row an adapter never stores keeps the poison written before the run, and the comparison
    counts it as unwritten (tests patch this function to prove it).
    """
    out[lo : lo + rows.shape[0]].copy_(rows)


def poisoned_blocks(device: torch.device, dtype: torch.dtype, out_elements: int) -> list[torch.Tensor]:
    """Tensors filled with `dtype`'s poison NaN: small-pool blocks, and large ones of more than `out_elements`."""
    small = SMALL_BLOCK_BYTES // dtype.itemsize
    large = max(out_elements + 1, small * 2 + 1)  # past 1 MiB: the large pool
    sizes = [small] * POISONED_SMALL_BLOCKS + [large] * POISONED_LARGE_BLOCKS
    return [poison(torch.empty(n, dtype=dtype, device=device)) for n in sizes]


def hand_back_poisoned(device: torch.device, dtype: torch.dtype, out_elements: int) -> None:
    """On CUDA, before a call whose output torch allocates: free poisoned blocks to the caching allocator, so the
    output is likely cut from memory that reads as unwritten until the call writes it.

    A fresh process's device memory reads 0, which hides a row the library never writes where 0 is the right
    answer (a request without keys: docs/evidence/2026-12-05-h200/). Elsewhere nothing: the CPU allocator's reuse
    is not the harness's to arrange, and an output it hands out unwritten reads what it held.
    """
    if device.type == "cuda":
        poisoned_blocks(device, dtype, out_elements)  # dropped at once: freed to the allocator, still poisoned


def physical_kv(inputs: Inputs) -> tuple[torch.Tensor, torch.Tensor]:
    """K and V as physical stores [Hkv, N, D]: packed KV (ragged, single) or the flattened pool.

    NHD tensors come back as views; an HND page pool is copied once ([P, H, page, D] cannot be
    flattened to [H, P * page, D] without one).
    """
    c = inputs.case

    def flat(x: torch.Tensor) -> torch.Tensor:
        if c.is_paged:
            if c.kv_layout == "NHD":  # [P, page, H, D]
                return x.reshape(-1, x.shape[2], x.shape[3]).transpose(0, 1)
            return x.transpose(0, 1).reshape(x.shape[1], -1, x.shape[3])  # [P, H, page, D]
        return x.transpose(0, 1) if c.kv_layout == "NHD" else x  # [N, H, D] or [H, N, D]

    return flat(inputs.k), flat(inputs.v)


@dataclass(frozen=True)
class KVSlots:
    """Where each request's keys live in the physical store, in key order."""

    per_request: tuple[torch.Tensor, ...]  # int64 [kv_len_i] on the inputs' device
    num_slots: int  # N, the physical store's length

    def shared(self) -> bool:
        """Whether any slot is read by two requests (pages shared between requests)."""
        if not self.per_request:
            return False
        allslots = torch.cat(self.per_request)
        return bool(allslots.numel() != torch.unique(allslots).numel())


def kv_slots(inputs: Inputs) -> KVSlots:
    """Slot indices of every request's keys, from kv_indptr or through the page table."""
    c = inputs.case
    dev = inputs.device
    out = []
    if c.is_paged:
        assert inputs.kv_page_indptr is not None and inputs.kv_page_indices is not None
        ps = c.page_size
        indptr = inputs.kv_page_indptr.cpu().tolist()
        pages = inputs.kv_page_indices.cpu().to(torch.int64)
        within = torch.arange(ps, dtype=torch.int64)
        for i, kv in enumerate(c.kv_lens):
            mine = pages[indptr[i] : indptr[i + 1]]
            slots = (mine.view(-1, 1) * ps + within.view(1, -1)).reshape(-1)[:kv]
            out.append(slots.to(dev))
        n = int(inputs.k.shape[0]) * ps
    else:
        assert inputs.kv_indptr is not None
        starts = inputs.kv_indptr.cpu().tolist()
        for i, kv in enumerate(c.kv_lens):
            out.append(torch.arange(starts[i], starts[i] + kv, dtype=torch.int64, device=dev))
        n = c.total_kv
    return KVSlots(per_request=tuple(out), num_slots=n)


def same_inputs(a: Optional[Inputs], b: Inputs) -> bool:
    """Whether a plan made for `a` serves `b`: the same case and the very same index tensors."""
    if a is None or a.case != b.case:
        return False
    names = ("qo_indptr", "kv_indptr", "kv_page_indptr", "kv_page_indices", "custom_mask", "mask_indptr")
    return all(getattr(a, n) is getattr(b, n) for n in names)
