"""The regression matrix: a seeded, budgeted sample of the axis product, plus directed cases.

Like JAX's sample_product, the same (budget, seed) always yields the same cases, so two runs of
one budget compare cell by cell. Directed cases (empty batch, zero lengths, fully masked rows,
queries longer than keys under causal ...) are always included: they are where libraries break.

Long contexts are directed too (`long_cases`): a few cases per long key count, each with a feature
under which a kernel's accumulation error grows with the keys (16-bit inputs, a soft cap, GQA,
short causal queries over long KV as in decode, a window), instead of a longer draw for every
sampled case. A budget's `long_kv` lengths run on every device; its `cuda_long_kv` lengths only
where the device is CUDA (the CPU's torch backends would spend minutes on them).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Optional, TypedDict

from scenarios import axes
from scenarios.case import Case
from scenarios.errors import InvalidValue


@dataclass(frozen=True)
class Budget:
    name: str
    sampled: int  # cases drawn from the axis product, on top of the directed ones
    max_qo: int
    max_kv: int
    max_batch: int
    max_heads: int
    fp8_share: float  # fraction of sampled cases with fp8 inputs
    long_kv: tuple[int, ...] = ()  # key counts of the directed long cases (`long_cases`), on every device
    cuda_long_kv: tuple[int, ...] = ()  # key counts of more directed long cases, on CUDA only

    def long_lengths(self, device: str) -> tuple[int, ...]:
        """The key counts of this budget's long cases on `device` ("cpu", "cuda", "cuda:N")."""
        return self.long_kv + (self.cuda_long_kv if is_cuda(device) else ())


BUDGETS: dict[str, Budget] = {
    "quick": Budget("quick", sampled=80, max_qo=64, max_kv=300, max_batch=3, max_heads=8, fp8_share=0.1),
    "standard": Budget(
        "standard",
        sampled=160,
        max_qo=127,
        max_kv=1031,
        max_batch=7,
        max_heads=16,
        fp8_share=0.15,
        long_kv=axes.LONG_KV,
        cuda_long_kv=axes.CUDA_LONG_KV,
    ),
    "full": Budget(
        "full",
        sampled=600,
        max_qo=600,
        max_kv=5000,
        max_batch=16,
        max_heads=32,
        fp8_share=0.2,
        long_kv=axes.LONG_KV,
        cuda_long_kv=axes.CUDA_LONG_KV,
    ),
}


def is_cuda(device: str) -> bool:
    """Whether a device string names a CUDA device ("cuda", "cuda:1"); scenarios imports no kernels."""
    return device.split(":")[0] == "cuda"


class InvalidBudget(InvalidValue):
    """A --budget value that names no budget."""

    def __init__(self, value: str) -> None:
        super().__init__(
            "--budget",
            value,
            f"one of {', '.join(BUDGETS)}",
            "pass --budget quick (CI, under 2 minutes), standard or full",
        )


def parse_budget(value: str) -> Budget:
    if value not in BUDGETS:
        raise InvalidBudget(value)
    return BUDGETS[value]


class _Heads(TypedDict):
    """The head counts and dims most directed cases share (Case keyword arguments)."""

    num_qo_heads: int
    num_kv_heads: int
    head_dim_qk: int
    head_dim_vo: int


class _Descales(TypedDict, total=False):
    """fp8 descales of a sampled case (Case keyword arguments); none for a case without fp8."""

    q_scale: Optional[float]
    k_scale: Optional[float]
    v_scale: Optional[float]


def directed_cases() -> list[Case]:
    """Shapes every run includes: each is a known way for a kernel or a wrapper to go wrong."""
    base: _Heads = dict(num_qo_heads=4, num_kv_heads=2, head_dim_qk=64, head_dim_vo=64)
    return [
        Case("ragged", (), (), label="empty batch", **base),
        Case("paged", (), (), page_size=16, label="empty paged batch", **base),
        Case("decode", (), (), page_size=16, label="empty decode batch", **base),
        Case("ragged", (0, 5, 0), (7, 0, 0), label="zero-length requests", **base),
        Case("paged", (3, 2), (0, 9), page_size=4, causal=True, label="kv_len 0 beside a real request", **base),
        Case("ragged", (9,), (4,), causal=True, label="causal with qo > kv: top rows attend nothing", **base),
        Case("ragged", (5, 3), (20, 3), causal=True, window_left=0, label="window 0: only the diagonal", **base),
        Case(
            "paged",
            (6, 4),
            (40, 13),
            page_size=5,
            mask="custom",
            kv_layout="HND",
            label="custom mask with fully masked rows, HND pages",
            **base,
        ),
        Case(
            "single",
            (17,),
            (65,),
            causal=True,
            logits_soft_cap=5.0,
            input_scale=4.0,
            label="soft cap with large logits",
            **base,
        ),
        Case(
            "decode",
            (1, 1, 1),
            (1, 33, 130),
            num_qo_heads=8,
            num_kv_heads=1,
            head_dim_qk=128,
            head_dim_vo=128,
            page_size=16,
            label="MQA decode",
        ),
        Case(
            "ragged",
            (7, 12),
            (30, 12),
            num_qo_heads=4,
            num_kv_heads=4,
            head_dim_qk=192,
            head_dim_vo=128,
            causal=True,
            label="head_dim_qk != head_dim_vo",
        ),
        Case("paged", (31,), (31,), page_size=1, causal=True, sm_scale=0.05, label="page size 1, own sm_scale", **base),
        Case(
            "paged",
            (4, 1),
            (50, 17),
            page_size=16,
            q_dtype="e4m3fn",
            kv_dtype="e4m3fn",
            o_dtype="bf16",
            q_scale=0.5,
            k_scale=2.0,
            v_scale=0.25,
            causal=True,
            label="fp8 with per-tensor descales",
            **base,
        ),
    ]


def long_cases(kv: int) -> list[Case]:
    """Cases over `kv` keys where accumulation error grows with the keys a row attends.

    Each pairs the long context with one such feature: 16-bit inputs with GQA and short causal
    queries (the decode-like shape: every row attends nearly all keys), fp16 with a soft cap and
    large logits, an MQA decode batch beside a short request, and a window over half the keys.
    """
    short = kv // 8 + 3  # a second, shorter request: lengths differ inside the batch
    return [
        Case(
            "ragged",
            (16, 1),
            (kv, short),
            num_qo_heads=8,
            num_kv_heads=2,
            head_dim_qk=128,
            head_dim_vo=128,
            q_dtype="bf16",
            kv_dtype="bf16",
            o_dtype="bf16",
            causal=True,
            label=f"long context {kv}: bf16 GQA, short causal queries",
        ),
        Case(
            "single",
            (16,),
            (kv,),
            num_qo_heads=4,
            num_kv_heads=4,
            head_dim_qk=128,
            head_dim_vo=128,
            q_dtype="fp16",
            kv_dtype="fp16",
            o_dtype="fp16",
            causal=True,
            logits_soft_cap=30.0,
            input_scale=4.0,
            label=f"long context {kv}: fp16 soft cap, large logits",
        ),
        Case(
            "decode",
            (1, 1),
            (kv, short),
            num_qo_heads=8,
            num_kv_heads=1,
            head_dim_qk=128,
            head_dim_vo=128,
            q_dtype="bf16",
            kv_dtype="bf16",
            o_dtype="bf16",
            page_size=16,
            label=f"long context {kv}: bf16 MQA decode",
        ),
        Case(
            "paged",
            (8,),
            (kv,),
            num_qo_heads=4,
            num_kv_heads=2,
            head_dim_qk=64,
            head_dim_vo=64,
            q_dtype="fp16",
            kv_dtype="fp16",
            o_dtype="fp16",
            page_size=16,
            causal=True,
            window_left=kv // 2,
            label=f"long context {kv}: fp16 window over half the keys",
        ),
    ]


def _lengths(rng: random.Random, pool: tuple[int, ...], cap: int, n: int) -> tuple[int, ...]:
    usable = [x for x in pool if x <= cap] or [min(pool)]
    return tuple(rng.choice(usable) for _ in range(n))


def sample_case(rng: random.Random, b: Budget) -> Case:
    """One draw from the axis product within budget `b`."""
    layout = rng.choice(axes.LAYOUTS)
    bs = 1 if layout == "single" else rng.randint(1, b.max_batch)
    kv_heads = rng.choice([h for h in axes.NUM_KV_HEADS if h <= b.max_heads])
    ratio = rng.choice([r for r in axes.GQA_RATIOS if r * kv_heads <= max(b.max_heads, kv_heads)])
    dqk, dvo = rng.choice(
        axes.HEAD_DIM_PAIRS if layout != "decode" else [p for p in axes.HEAD_DIM_PAIRS if p[0] == p[1]]
    )
    kv_lens = _lengths(rng, axes.KV_LENS, b.max_kv, bs)
    qo_lens = (1,) * bs if layout == "decode" else _lengths(rng, axes.QO_LENS, b.max_qo, bs)
    if rng.random() < b.fp8_share:
        fp8 = rng.choice(axes.FP8_DTYPES)
        q_dtype = fp8 if rng.random() < 0.5 else rng.choice(("fp16", "bf16"))
        kv_dtype, o_dtype = fp8, (q_dtype if q_dtype in ("fp16", "bf16") else "bf16")
        scales: _Descales = dict(
            q_scale=rng.choice((0.5, 1.0, 2.0)) if q_dtype == fp8 else None,
            k_scale=rng.choice((0.5, 1.0, 2.0)),
            v_scale=rng.choice((0.5, 1.0, 2.0)),
        )
    else:
        q_dtype = kv_dtype = o_dtype = rng.choice(axes.INPUT_DTYPES)
        scales = {}
    paged = layout in ("paged", "decode")
    return Case(
        layout=layout,
        qo_lens=qo_lens,
        kv_lens=kv_lens,
        num_qo_heads=kv_heads * ratio,
        num_kv_heads=kv_heads,
        head_dim_qk=dqk,
        head_dim_vo=dvo,
        q_dtype=q_dtype,
        kv_dtype=kv_dtype,
        o_dtype=o_dtype,
        page_size=rng.choice(axes.PAGE_SIZES) if paged else 1,
        kv_layout=rng.choice(axes.KV_LAYOUTS),
        causal=rng.random() < 0.5,
        mask="custom" if (layout != "decode" and rng.random() < 0.2) else "none",
        window_left=rng.choice(axes.WINDOWS) if rng.random() < 0.25 else -1,
        logits_soft_cap=rng.choice(axes.SOFT_CAPS[1:]) if rng.random() < 0.2 else 0.0,
        sm_scale=0.1 if rng.random() < 0.1 else None,
        input_scale=rng.choice(axes.INPUT_SCALES) if rng.random() < 0.3 else 1.0,
        label="sampled",
        **scales,
    )


def build(budget: str | Budget, seed: int = 0, device: str = "cpu") -> list[Case]:
    """Directed cases, the long cases of `device`, then `sampled` draws; duplicates (by id) dropped, order stable."""
    b = parse_budget(budget) if isinstance(budget, str) else budget
    rng = random.Random(f"attncheck-matrix-{b.name}-{seed}")
    long = [c for kv in b.long_lengths(device) for c in long_cases(kv)]
    cases = directed_cases() + long + [sample_case(rng, b) for _ in range(b.sampled)]
    seen: set[str] = set()
    out = []
    for c in cases:
        if c.id not in seen:
            seen.add(c.id)
            out.append(c)
    return out
