"""FlashInfer's matrix: the issue's axes covered with few JIT modules, so one runner call builds them.

Every distinct (dtype triple, head dims, window on/off, soft cap on/off) is a separate compiled
module per backend and API family (kernels/flashinfer/variants.py), and a module costs 12-90 s of
compiler time. The generic matrix (scenarios/matrix.py) draws those axes independently and would
need dozens of modules; this one draws cases inside a fixed set of PROFILES, each one module key,
chosen so that every axis value the issue names appears (bf16, fp16, fp8 KV, fp8 Q+KV; head dims
64, 128, 256 and 192/128; window; soft cap; both together) while the module count stays fixed
whatever the budget. Inside a profile the cheap axes (GQA 1/4/8, lengths with zero-length
requests, page size, KV layout, none/causal/custom mask, window size, cap value, input scale)
are sampled freely: they are runtime arguments of one module.

The generic directed cases are included too, each moved onto the profile that shares its module
features (`rehome`), so the shapes that break libraries (empty batch, zero lengths, fully masked
rows, qo > kv under causal ...) run without adding modules; so are the budget's long cases
(scenarios/matrix.py `long_cases`: 8192 keys, and 32k and 128k where the device is CUDA).

    build("quick", seed=0) -> list[Case]     # same (budget, seed) -> same cases
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from scenarios import axes
from scenarios.case import Case
from scenarios.matrix import directed_cases, long_cases, parse_budget


@dataclass(frozen=True)
class Profile:
    """One module key: dtypes, head dims, window on/off, soft cap on/off; and the APIs drawn in it."""

    name: str
    q_dtype: str
    kv_dtype: str
    o_dtype: str
    head_dim_qk: int
    head_dim_vo: int
    window: bool
    soft_cap: bool
    layouts: tuple[str, ...]


ALL = ("paged", "ragged", "decode", "single")
BATCH = ("paged", "ragged", "decode")
PREFILL = ("paged", "ragged", "single")

# The issue's axes -> modules. fa2 takes every profile but "fp8" (fp8 queries are fa3's); fa3
# every one but "fp8-kv" (fa3 wants an fp8 query with fp8 KV); auto picks among them.
PROFILES: tuple[Profile, ...] = (
    Profile("bf16-128", "bf16", "bf16", "bf16", 128, 128, False, False, ALL),
    Profile("fp16-64", "fp16", "fp16", "fp16", 64, 64, False, False, ALL),
    Profile("bf16-256", "bf16", "bf16", "bf16", 256, 256, False, False, ALL),
    Profile("bf16-128-window", "bf16", "bf16", "bf16", 128, 128, True, False, BATCH),
    Profile("fp16-128-softcap", "fp16", "fp16", "fp16", 128, 128, False, True, ALL),
    Profile("bf16-64-window-softcap", "bf16", "bf16", "bf16", 64, 64, True, True, BATCH),
    Profile("fp8-kv", "bf16", "e4m3fn", "bf16", 128, 128, False, False, ALL),
    Profile("fp8", "e4m3fn", "e4m3fn", "bf16", 128, 128, False, False, PREFILL),
    Profile("bf16-192-128", "bf16", "bf16", "bf16", 192, 128, False, False, PREFILL),
)

# Cases drawn per (profile, layout) for each budget name of scenarios.matrix.
PER_LAYOUT = {"quick": 3, "standard": 6, "full": 16}
# Lengths longer than the generic quick matrix's: FlashInfer splits KV and tiles queries at these.
QO_LENS = (0, 1, 3, 17, 64, 127, 300)
KV_LENS = (0, 1, 7, 33, 128, 300, 1031, 4099)
MAX_BATCH = {"quick": 4, "standard": 7, "full": 16}


def profile_of(case: Case) -> Profile | None:
    """The profile whose module `case` selects, or None when it would need another module."""
    for p in PROFILES:
        if (
            case.q_dtype,
            case.kv_dtype,
            case.o_dtype,
            case.head_dim_qk,
            case.head_dim_vo,
            case.window_left >= 0,
            case.logits_soft_cap > 0,
        ) == (p.q_dtype, p.kv_dtype, p.o_dtype, p.head_dim_qk, p.head_dim_vo, p.window, p.soft_cap):
            return p if case.layout in p.layouts else None
    return None


def rehome(case: Case) -> Case:
    """A directed case moved onto the profile that keeps its point (fp8, window, cap, MLA dims)."""
    if profile_of(case) is not None:
        return case
    if case.is_fp8:
        name = "fp8" if case.q_dtype != "bf16" and case.layout != "decode" else "fp8-kv"
    elif case.head_dim_qk != case.head_dim_vo:
        name = "bf16-192-128"
    elif case.window_left >= 0 and case.logits_soft_cap > 0:
        name = "bf16-64-window-softcap"
    elif case.window_left >= 0:
        name = "bf16-128-window"
    elif case.logits_soft_cap > 0:
        name = "fp16-128-softcap"
    else:
        name = "bf16-128"
    p = next(p for p in PROFILES if p.name == name)
    fp8_scales = {} if p.q_dtype.startswith("e") or not case.is_fp8 else {"q_scale": None}
    moved = replace(
        case,
        q_dtype=p.q_dtype,
        kv_dtype=p.kv_dtype,
        o_dtype=p.o_dtype,
        head_dim_qk=p.head_dim_qk,
        head_dim_vo=p.head_dim_vo,
        **fp8_scales,
    )
    assert profile_of(moved) is not None, (case, p)
    return moved


def _draw(rng: random.Random, p: Profile, layout: str, max_batch: int) -> Case:
    """One case in profile `p`: cheap axes sampled, module axes fixed."""
    bs = 1 if layout == "single" else rng.randint(1, max_batch)
    kv_heads = rng.choice(axes.NUM_KV_HEADS)
    ratio = rng.choice(axes.GQA_RATIOS)
    kv_lens = tuple(rng.choice(KV_LENS) for _ in range(bs))
    if layout == "decode":
        qo_lens = (1,) * bs
    else:
        qo_lens = tuple(rng.choice(QO_LENS) for _ in range(bs))
    if layout == "single":  # one request: both lengths positive, the API has no empty request
        qo_lens, kv_lens = (max(qo_lens[0], 1),), (max(kv_lens[0], 1),)
    fp8_q, fp8_kv = p.q_dtype.startswith("e"), p.kv_dtype.startswith("e")
    scales = dict(
        q_scale=rng.choice((0.5, 1.0, 2.0)) if fp8_q else None,
        k_scale=rng.choice((0.5, 1.0, 2.0)) if fp8_kv else None,
        v_scale=rng.choice((0.5, 1.0, 2.0)) if fp8_kv else None,
    )
    return Case(
        layout=layout,
        qo_lens=qo_lens,
        kv_lens=kv_lens,
        num_qo_heads=kv_heads * ratio,
        num_kv_heads=kv_heads,
        head_dim_qk=p.head_dim_qk,
        head_dim_vo=p.head_dim_vo,
        q_dtype=p.q_dtype,
        kv_dtype=p.kv_dtype,
        o_dtype=p.o_dtype,
        page_size=rng.choice(axes.PAGE_SIZES) if layout in ("paged", "decode") else 1,
        kv_layout=rng.choice(axes.KV_LAYOUTS),
        causal=layout != "decode" and rng.random() < 0.5,
        mask="custom" if layout != "decode" and rng.random() < 0.3 else "none",
        window_left=rng.choice([w for w in axes.WINDOWS if w >= 0]) if p.window else -1,
        logits_soft_cap=rng.choice(axes.SOFT_CAPS[1:]) if p.soft_cap else 0.0,
        sm_scale=0.1 if rng.random() < 0.1 else None,
        input_scale=rng.choice(axes.INPUT_SCALES) if rng.random() < 0.3 else 1.0,
        label=f"profile {p.name}",
        **scales,
    )


def build(budget: str, seed: int = 0, device: str = "cpu") -> list[Case]:
    """Directed cases and the budget's long cases on `device` (rehomed), then PER_LAYOUT[budget] draws per
    (profile, layout); ids unique."""
    b = parse_budget(budget)
    rng = random.Random(f"attncheck-flashinfer-matrix-{b.name}-{seed}")
    long = [c for kv in b.long_lengths(device) for c in long_cases(kv)]
    cases = [rehome(c) for c in directed_cases() + long]
    for p in PROFILES:
        for layout in p.layouts:
            cases += [_draw(rng, p, layout, MAX_BATCH[b.name]) for _ in range(PER_LAYOUT[b.name])]
    seen: set[str] = set()
    out = []
    for c in cases:
        if c.id not in seen:
            seen.add(c.id)
            out.append(c)
    return out
