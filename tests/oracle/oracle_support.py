"""Shared pieces of the oracle's own tests: the one closeness bound, the Hypothesis profile and
strategies, and builders for hand-written inputs.

Kept apart from the test modules so that each bound and each setting is stated once: a test
says "within the rounding bound", never a number.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional, Sequence
from unittest.mock import patch

import torch
from hypothesis import settings
from hypothesis import strategies as st

from oracle import reference
from oracle.reference import attention
from scenarios import axes
from scenarios.case import Case
from scenarios.dtypes import finfo_max, is_fp8, to_torch
from scenarios.tensors import Inputs, materialize
from textbook import Textbook, textbook_attention

# ---- the closeness bound -----------------------------------------------------------------
# Unit roundoff of the two precisions the oracle computes in.
U32 = 2.0**-24
U64 = 2.0**-53
# How far a result computed with unit roundoff u may be from the exact (fp64 textbook) value.
# First-order rounding analysis of one (row, head) with n visible keys, head dim d and score
# magnitude S = sm_scale * max_j sum_d |q_d k_d| (Textbook.score_abs):
#   * every score is off by at most (d + 3) u S: the dot product (gamma_d), the sm_scale
#     product and the soft cap (a division, tanh and a product, each within u; tanh' <= 1);
#   * the LSE inherits the largest score error (softmax weights sum to 1), (n + 3) u from
#     exp / sum / log, and u |lse| from the final max + log(sum);
#   * the output is a weighted mean of the V rows: its error is at most twice the weight error
#     (numerator and denominator) plus n u from accumulating, times the largest |v| attended.
# ROUNDING_SLACK (a pure number, not an atol) covers the second-order terms. The bound is zero
# for an empty row: its out must be exactly 0 and its lse exactly -inf.
ROUNDING_SLACK = 4.0
# Hand-written cases keep d <= 4, at most 4 visible keys, |score| <= 4 and |v| <= 8; the same
# analysis then gives under 48 u relative to max(1, |expected|).
HAND_ULPS = 64.0


def row_bounds(tb: Textbook, unit: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(out bound [total_qo, Hq, 1], lse bound [total_qo, Hq]) for a result with roundoff `unit`."""
    n = tb.n_visible
    score_err = (tb.head_dim_qk + 3) * unit * tb.score_abs
    sum_err = (n + 3) * unit
    finite_lse = torch.where(torch.isfinite(tb.lse), tb.lse.abs(), torch.zeros_like(tb.lse))
    lse_bound = ROUNDING_SLACK * (score_err + sum_err + unit * finite_lse)
    vmax = _largest_v(tb)
    out_bound = ROUNDING_SLACK * (2 * score_err + 2 * sum_err + n * unit).unsqueeze(-1) * vmax
    empty = n == 0
    lse_bound = torch.where(empty, torch.zeros_like(lse_bound), lse_bound)
    out_bound = torch.where(empty.unsqueeze(-1), torch.zeros_like(out_bound), out_bound)
    return out_bound, lse_bound


def convex_bounds(tb: Textbook, unit: float) -> torch.Tensor:
    """How far outside [v_lo, v_hi] an output with roundoff `unit` may stray, [total_qo, Hq, 1].

    A weighted mean stays within the range of the rows it averages up to rounding: the normalised
    weights sum to 1 within (n + 1) u and accumulating adds n u, times max |v| (same slack).
    """
    return ROUNDING_SLACK * (2 * tb.n_visible + 3).unsqueeze(-1) * unit * _largest_v(tb)


def _largest_v(tb: Textbook) -> torch.Tensor:
    """max |v| over the V rows each (row, head) attends, [total_qo, Hq, 1]; 0 for empty rows."""
    vmax = torch.maximum(tb.v_lo.abs(), tb.v_hi.abs())
    vmax = torch.where(torch.isfinite(vmax), vmax, torch.zeros_like(vmax))
    return vmax.amax(dim=-1, keepdim=True) if vmax.shape[-1] else vmax.new_zeros((*tb.lse.shape, 1))


def _excess(actual: torch.Tensor, expected: torch.Tensor, bound: torch.Tensor) -> tuple[float, Any]:
    """Largest |actual - expected| / bound (inf where a nonzero error meets a zero bound), and where."""
    a, e = actual.double().cpu(), expected.double().cpu()
    diff = torch.where(a == e, torch.zeros_like(a), (a - e).abs())  # equal infinities are no error
    diff = torch.nan_to_num(diff, nan=math.inf)
    ratio = torch.where(diff == 0, torch.zeros_like(diff), diff / bound.expand_as(diff))
    if ratio.numel() == 0:
        return 0.0, None
    flat = int(torch.argmax(ratio))
    idx = tuple(int(x) for x in torch.unravel_index(torch.tensor(flat), ratio.shape))
    return float(ratio.reshape(-1)[flat]), idx


def assert_within_rounding(
    out: torch.Tensor,
    lse: torch.Tensor,
    tb: Textbook,
    unit: float,
    *,
    expected: Optional[tuple[torch.Tensor, torch.Tensor]] = None,
    factor: float = 1.0,
    what: str = "",
    quantities: Sequence[str] = ("out", "lse"),
) -> None:
    """out/lse are within `factor` rounding bounds (roundoff `unit`) of `expected` (default: tb)."""
    exp_out, exp_lse = expected if expected is not None else (tb.out, tb.lse)
    assert out.shape == exp_out.shape, f"{what} out shape {tuple(out.shape)} != {tuple(exp_out.shape)}"
    assert lse.shape == exp_lse.shape, f"{what} lse shape {tuple(lse.shape)} != {tuple(exp_lse.shape)}"
    out_b, lse_b = row_bounds(tb, unit)
    for name, a, e, b in (("out", out, exp_out, out_b * factor), ("lse", lse, exp_lse, lse_b * factor)):
        if name not in quantities:
            continue
        r, idx = _excess(a, e, b)
        if r > 1.0:
            raise AssertionError(
                f"{what} {name}: error is {r:.3g}x the rounding bound at {idx}: "
                f"got {a.double()[idx].item()!r}, expected {e.double()[idx].item()!r}, "
                f"bound {b.expand_as(a)[idx].item():.3g}"
            )


def assert_hand_close(actual: torch.Tensor, expected: Any, unit: float, what: str = "") -> None:
    """A hand-computed value holds within HAND_ULPS roundoffs of max(1, |expected|)."""
    a = actual.double().cpu()
    e = torch.as_tensor(expected, dtype=torch.float64).expand_as(a)
    same = a == e  # equal infinities included
    tol = HAND_ULPS * unit * e.abs().clamp_min(1.0)
    ok = same | ((a - e).abs() <= tol)
    assert bool(ok.all()), f"{what}: got {a.tolist()}, expected {e.tolist()} (tolerance {HAND_ULPS} ulps)"


# ---- implementations under test ------------------------------------------------------------
# Hand cases run against the oracle in both precisions and against the textbook itself, so the
# textbook is checked by the same written-out values it is later trusted to reproduce.
# "oracle-fused": the fp32 oracle's fused softmax (the GPU's path, oracle.reference.FUSED_DEVICES) on the CPU.
# "oracle-compiled": the softmax a large GPU chunk takes (_softmax_compiled), on every chunk, its function
# (_softmax_exact) run eagerly in place of torch.compile's build of it: what is compiled is what is checked here.
IMPLEMENTATIONS = ("oracle-fp32", "oracle-fused", "oracle-compiled", "oracle-fp64", "textbook")
UNIT = {"oracle-fp32": U32, "oracle-fused": U32, "oracle-compiled": U32, "oracle-fp64": U64, "textbook": U64}


@contextmanager
def compiled_softmax_run_eagerly() -> Iterator[None]:
    """attention(compiled=True) on every chunk, the compiled function replaced by _softmax_exact itself."""
    with (
        patch.object(reference, "_COMPILED", reference._Compiled(fn=reference._softmax_exact)),
        patch.object(reference, "COMPILED_MIN_SCORES", 0),
    ):
        yield


def run_impl(name: str, inputs: Inputs) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, lse) in float64 from the named implementation."""
    if name == "textbook":
        tb = textbook_attention(inputs)
        return tb.out, tb.lse
    if name == "oracle-fused":
        ref = attention(inputs, fused=True, compiled=False)
        return ref.out.double(), ref.lse.double()
    if name == "oracle-compiled":
        with compiled_softmax_run_eagerly():
            ref = attention(inputs, fused=True, compiled=True)
        return ref.out.double(), ref.lse.double()
    ref = attention(inputs, precision=name.split("-")[1], fused=False)  # type: ignore[arg-type]
    return ref.out.double(), ref.lse.double()


# ---- hand-written inputs -------------------------------------------------------------------
def hand_inputs(
    q: Any, k: Any, v: Any, *, mask: Optional[Any] = None, dtype: str = "fp32", **case_fields: Any
) -> Inputs:
    """Single-request inputs with the given values: q [qo, Hq, D], k [kv, Hkv, D], v [kv, Hkv, Dv].

    `mask` is the request's [qo, kv] boolean custom mask (True = attend).
    """
    qt, kt, vt = (torch.as_tensor(x, dtype=torch.float32) for x in (q, k, v))
    case = Case(
        layout="single",
        qo_lens=(qt.shape[0],),
        kv_lens=(kt.shape[0],),
        num_qo_heads=qt.shape[1],
        num_kv_heads=kt.shape[1],
        head_dim_qk=qt.shape[2],
        head_dim_vo=vt.shape[2],
        q_dtype=case_fields.pop("q_dtype", dtype),
        kv_dtype=case_fields.pop("kv_dtype", dtype),
        o_dtype="fp32",
        mask="custom" if mask is not None else "none",
        **case_fields,
    )
    inputs = materialize(case, seed=0)
    inputs.q = qt.to(to_torch(case.q_dtype))
    inputs.k = kt.to(to_torch(case.kv_dtype))
    inputs.v = vt.to(to_torch(case.kv_dtype))
    if mask is not None:
        m = torch.tensor(mask, dtype=torch.bool)
        inputs.custom_mask = m.reshape(-1)
        inputs.mask_indptr = torch.tensor([0, m.numel()], dtype=torch.int32)
    return inputs


def relabel_pages(inputs: Inputs, perm: torch.Tensor) -> Inputs:
    """The same paged inputs with pool page p moved to slot perm[p] and the table remapped."""
    assert inputs.kv_page_indices is not None
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(perm.numel(), dtype=perm.dtype)
    return dataclasses.replace(
        inputs,
        k=inputs.k[inverse],
        v=inputs.v[inverse],
        kv_page_indices=perm[inputs.kv_page_indices.long()].to(torch.int32),
    )


# ---- Hypothesis ----------------------------------------------------------------------------
# The profiles are registered in conftest.py. `pytest --hypothesis-profile=attncheck-oracle-thorough`
# selects the thorough one (ATTNCHECK_ORACLE_PROFILE=NAME too, an alias kept for older commands);
# any other loaded profile leaves the oracle tests on their own, derandomised one.
_LOADED = getattr(settings, "_current_profile", "")  # the profile --hypothesis-profile loaded
ORACLE_SETTINGS = settings.get_profile(
    os.environ.get("ATTNCHECK_ORACLE_PROFILE")
    or (_LOADED if _LOADED.startswith("attncheck-oracle") else "attncheck-oracle")
)

# Small on purpose: the textbook loops in Python. Shapes are kept small, so axis values that
# only matter at scale (head dims 64-256, GQA ratio 8, window 64) are replaced by small ones
# that still cross the same boundaries (window 0, 1 and wider than some requests, page sizes
# that do and do not divide the lengths).
MAX_BATCH = 3
MAX_QO = 6
MAX_KV = 12
MAX_HEAD_DIM = 16
SMALL_WINDOWS = (-1, 0, 1, 3, 7)
SMALL_SOFT_CAPS = (0.0, 1.0, 30.0)
KV_HEADS = (1, 2)
GROUPS = (1, 2, 3)
FP8_DESCALES = (None, 0.25, 2.0)
SM_SCALES = (0.05, 0.3, 1.5)
# Values near the fp16 limit: a standard deviation a quarter of fp16's largest finite value.
NEAR_FP16_LIMIT_SCALE = finfo_max("fp16") / 4


@st.composite
def small_cases(
    draw: st.DrawFn,
    *,
    dtypes: Sequence[str] = axes.INPUT_DTYPES + axes.FP8_DTYPES,
    input_scales: Sequence[float] = axes.INPUT_SCALES,
    layouts: Sequence[str] = axes.LAYOUTS,
) -> Case:
    """A small Case of any layout and feature mix, within the textbook's reach."""
    layout = draw(st.sampled_from(layouts))
    batch = 1 if layout == "single" else draw(st.integers(0, MAX_BATCH))
    if layout == "decode":
        qo_lens = (1,) * batch
    else:
        qo_lens = tuple(draw(st.lists(st.integers(0, MAX_QO), min_size=batch, max_size=batch)))
    kv_lens = tuple(draw(st.lists(st.integers(0, MAX_KV), min_size=batch, max_size=batch)))
    num_kv = draw(st.sampled_from(KV_HEADS))
    dqk = draw(st.integers(1, MAX_HEAD_DIM))
    dvo = draw(st.one_of(st.just(dqk), st.integers(1, MAX_HEAD_DIM)))
    q_dtype = draw(st.sampled_from(tuple(dtypes)))
    # fp8 KV under a 16-bit query is the common fp8 KV cache; otherwise q and kv share a dtype.
    kv_dtype = q_dtype
    if not is_fp8(q_dtype) and q_dtype != "fp32" and any(is_fp8(d) for d in dtypes):
        kv_dtype = draw(st.sampled_from((q_dtype,) + tuple(d for d in dtypes if is_fp8(d))))
    paged = layout in ("paged", "decode")
    fields: dict[str, Any] = dict(
        layout=layout,
        qo_lens=qo_lens,
        kv_lens=kv_lens,
        num_kv_heads=num_kv,
        num_qo_heads=num_kv * draw(st.sampled_from(GROUPS)),
        head_dim_qk=dqk,
        head_dim_vo=dvo,
        q_dtype=q_dtype,
        kv_dtype=kv_dtype,
        o_dtype="fp32",
        page_size=draw(st.sampled_from(axes.PAGE_SIZES)) if paged else 1,
        kv_layout=draw(st.sampled_from(axes.KV_LAYOUTS)),
        causal=draw(st.booleans()),
        mask=draw(st.sampled_from(axes.MASK_KINDS)),
        window_left=draw(st.sampled_from(SMALL_WINDOWS)),
        logits_soft_cap=draw(st.sampled_from(SMALL_SOFT_CAPS)),
        sm_scale=draw(st.one_of(st.none(), st.sampled_from(SM_SCALES))),
        input_scale=draw(st.sampled_from(tuple(input_scales))),
    )
    if is_fp8(q_dtype):
        fields["q_scale"] = draw(st.sampled_from(FP8_DESCALES))
    if is_fp8(kv_dtype):
        fields["k_scale"] = draw(st.sampled_from(FP8_DESCALES))
        fields["v_scale"] = draw(st.sampled_from(FP8_DESCALES))
    return Case(**fields)


seeds = st.integers(0, 2**16)
