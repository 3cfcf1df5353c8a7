"""Hypothesis strategies for valid batches: Case objects of every layout, drawn within a Profile.

A strategy draws only a Case: scenarios/tensors.materialize turns it into tensors (from a seed)
with a shuffled page pool, unused pages and garbage in every slot no request owns, so page tables
need no strategy of their own. Values come from scenarios/axes.py.

Shrinking goes toward small readable cases: one request, the first head count and head dims of
the machines' axes, NHD, no mask, window or cap, the default sm_scale, the profile's first dtype,
lengths toward 0 (a long plan's long request toward the first long length). Zero-length requests
and empty batches are drawn on purpose (`lengths="empty"`, and zeros anywhere else); so is, rarely
(`rarely`), a long context: a first request of 1k-8k keys where the rest stop at 48.

A Profile says what an adapter serves; `probe_profile(adapter)` finds it by asking supports()
about one small probe case per layout, dtype and feature, so a machine draws what the adapter
claims and a decline is the adapter's own word.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional, Protocol, Sequence, TypedDict

from hypothesis import strategies as st

from scenarios import axes
from scenarios.case import Case, KVLayout, Layout, MaskKind
from scenarios.dtypes import is_fp8

Lengths = Literal["any", "short", "long", "empty"]

SHORT_LO, SHORT_HI = axes.SCENARIO_SHORT_QO
LONG_LO, LONG_HI = axes.SCENARIO_LONG_QO
KV_LO, KV_HI = axes.SCENARIO_KV
MAX_BATCH = max(axes.SCENARIO_BATCH_SIZES)

seeds = st.integers(0, 2**16 - 1)


def mostly(common: object, *rare: object) -> st.SearchStrategy:
    """`common` three times in four, else one of `rare`; shrinks to `common`.

    Routing gates only show on plain plans (a custom mask, HND or unequal head dims decline the fast
    backend before any gate), so free features are drawn rarely and plain states come often.
    """
    return st.sampled_from((common,) * (3 * len(rare)) + tuple(rare)) if rare else st.just(common)


def rarely(odds: int) -> st.SearchStrategy[bool]:
    """True one time in `odds`, else False; shrinks to False (a long context is drawn, never kept for free)."""
    return st.sampled_from((False,) * (odds - 1) + (True,))


@dataclass(frozen=True)
class Profile:
    """What an adapter serves: the machines draw inside it."""

    layouts: tuple[Layout, ...]
    dtypes: tuple[str, ...]
    mask: bool = True
    window: bool = True
    soft_cap: bool = True
    head_dims_differ: bool = True
    hnd: bool = True
    # Whether a plan's first request may, rarely, be a long context (axes.SCENARIO_LONG_KV).
    long_kv: bool = True
    # Whether a plan may carry an explicit sm_scale (axes.SCENARIO_SM_SCALES), else the default.
    sm_scale: bool = True
    # The (qk, vo) head-dim pairs drawn; a JIT library narrows them to the modules a run has built.
    head_dim_pairs: tuple[tuple[int, int], ...] = axes.SCENARIO_HEAD_DIM_PAIRS

    def head_dims(self) -> list[tuple[int, int]]:
        """The pairs drawn: head_dim_pairs, without unequal pairs where the adapter takes none."""
        return [p for p in self.head_dim_pairs if self.head_dims_differ or p[0] == p[1]]

    def probe(self, layout: Layout) -> Case:
        """probe_case in the profile's first dtype and head dims: a warm-up that loads no other module."""
        qk, vo = self.head_dims()[0]
        return probe_case(layout, self.dtypes[0]).replace(head_dim_qk=qk, head_dim_vo=vo)

    def layouts_for(self, lengths: Lengths) -> tuple[Layout, ...]:
        """A long plan needs a multi-row query: decode (one row per request) cannot be long."""
        out = tuple(x for x in self.layouts if not (lengths == "long" and x == "decode"))
        return out or self.layouts


def probe_case(layout: Layout, dtype: str = "bf16") -> Case:
    """The smallest real case of a layout and dtype: what profiles are probed and adapters warmed with."""
    o = "bf16" if is_fp8(dtype) else dtype
    return Case(
        layout,
        (1,),
        (3,),
        1,
        1,
        head_dim_qk=64,
        head_dim_vo=64,
        q_dtype=dtype,
        kv_dtype=dtype,
        o_dtype=o,
        page_size=2 if layout in ("paged", "decode") else 1,
    )


class _Support(Protocol):
    ok: bool


class Declines(Protocol):
    """What a profile is probed from: anything that says whether it serves a case (an adapter)."""

    def supports(self, case: Case) -> _Support: ...


def probe_profile(adapter: Declines) -> Profile:
    """Ask the adapter's supports() about one small case per layout, dtype and feature."""
    dtypes = tuple(
        d
        for d in axes.INPUT_DTYPES + axes.FP8_DTYPES
        if any(adapter.supports(probe_case(x, d)).ok for x in axes.LAYOUTS)
    )
    layouts = tuple(x for x in axes.LAYOUTS if any(adapter.supports(probe_case(x, d)).ok for d in dtypes))
    if not layouts or not dtypes:
        raise ValueError(f"{adapter!r} supports none of the probe cases: no profile to draw from")
    base = probe_case(layouts[0], dtypes[0])

    def ok(**changes: object) -> bool:
        return adapter.supports(base.replace(**changes)).ok

    qk, vo = next(p for p in axes.SCENARIO_HEAD_DIM_PAIRS if p[0] != p[1])
    return Profile(
        layouts=layouts,
        dtypes=dtypes,
        mask=ok(mask="custom"),
        window=ok(window_left=0),
        soft_cap=ok(logits_soft_cap=axes.SOFT_CAPS[-1]),
        head_dims_differ=ok(head_dim_qk=qk, head_dim_vo=vo),
        hnd=ok(kv_layout="HND"),
    )


def _qo_lens(draw: st.DrawFn, layout: str, lengths: Lengths) -> tuple[int, ...]:
    # Drawn for every layout (single ignores it), so no layout draws less than another: shrinking
    # then prefers the first layout listed, not the one that skips a draw.
    n = draw(st.sampled_from(axes.SCENARIO_BATCH_SIZES))
    if layout == "single":
        n = 1
    if lengths == "empty":
        if layout == "decode":
            return ()
        return () if layout != "single" and draw(st.booleans()) else (0,) * n
    if layout == "decode":
        return (1,) * n
    if lengths == "short":
        first = draw(st.integers(max(SHORT_LO, 1), SHORT_HI))
        rest = st.integers(0, SHORT_HI)
    elif lengths == "long":
        first = draw(st.integers(LONG_LO, LONG_HI))
        rest = st.integers(0, LONG_HI)
    else:
        first = draw(st.integers(0, LONG_HI))
        rest = st.integers(0, LONG_HI)
    return (first,) + tuple(draw(rest) for _ in range(n - 1))


class _CaseFields(TypedDict, total=False):
    """The Case keyword arguments `batches` draws beside layout, lengths and head counts."""

    head_dim_qk: int
    head_dim_vo: int
    q_dtype: str
    kv_dtype: str
    o_dtype: str
    page_size: int
    kv_layout: KVLayout
    causal: bool
    mask: MaskKind
    window_left: int
    logits_soft_cap: float
    sm_scale: Optional[float]


@st.composite
def batches(
    draw: st.DrawFn,
    profile: Profile,
    *,
    lengths: Lengths = "any",
    masked: Optional[bool] = None,
    windowed: Optional[bool] = None,
    capped: Optional[bool] = None,
) -> Case:
    """A valid Case inside `profile`. None leaves a feature free (shrinking to off); True/False fixes it."""
    layout = draw(st.sampled_from(profile.layouts_for(lengths)))
    qo = _qo_lens(draw, layout, lengths)
    kv = tuple(draw(st.integers(KV_LO, KV_HI)) for _ in qo)
    if kv and profile.long_kv and draw(rarely(axes.SCENARIO_LONG_ODDS)):
        kv = (draw(st.integers(*axes.SCENARIO_LONG_KV)),) + kv[1:]
    kv_heads = draw(st.sampled_from(axes.SCENARIO_NUM_KV_HEADS))
    ratio = draw(st.sampled_from(axes.SCENARIO_GQA_RATIOS))
    pairs = profile.head_dims()
    dqk, dvo = draw(mostly(pairs[0], *pairs[1:]))
    dtype = draw(st.sampled_from(profile.dtypes))
    paged = layout in ("paged", "decode")
    fields: _CaseFields = dict(
        head_dim_qk=dqk,
        head_dim_vo=dvo,
        q_dtype=dtype,
        kv_dtype=dtype,
        o_dtype="bf16" if is_fp8(dtype) else dtype,
        page_size=draw(st.sampled_from(axes.PAGE_SIZES)) if paged else 1,
        kv_layout=draw(mostly(*(axes.KV_LAYOUTS if profile.hnd else axes.KV_LAYOUTS[:1]))),
        causal=draw(st.booleans()),
        sm_scale=draw(mostly(None, *axes.SCENARIO_SM_SCALES)) if profile.sm_scale else None,
    )
    if masked if masked is not None else (profile.mask and draw(mostly(False, True))):
        fields["mask"] = "custom"
    windows = [w for w in axes.WINDOWS if w >= 0]
    if windowed if windowed is not None else (profile.window and draw(mostly(False, True))):
        fields["window_left"] = draw(st.sampled_from(windows))
    caps = [c for c in axes.SOFT_CAPS if c > 0]
    if capped if capped is not None else (profile.soft_cap and draw(mostly(False, True))):
        fields["logits_soft_cap"] = draw(st.sampled_from(caps))
    return Case(layout, qo, kv, kv_heads * ratio, kv_heads, **fields)


# ---- what a machine's rules draw ---------------------------------------------------------------------
def plans(profile: Profile) -> dict[str, st.SearchStrategy[Case]]:
    """One strategy per plan rule: any (features free), long, short, empty, masked, unmasked, windowed,
    capped. "any" is the rule shrinking prefers (see machines.py), so shrunk plans stay plain."""
    out = {
        "any": batches(profile),
        "long": batches(profile, lengths="long"),
        "short": batches(profile, lengths="short"),
        "empty": batches(profile, lengths="empty"),
        "unmasked": batches(profile, masked=False),
    }
    if profile.mask:
        out["masked"] = batches(profile, masked=True)
    if profile.window:
        out["windowed"] = batches(profile, windowed=True)
    if profile.soft_cap:
        out["capped"] = batches(profile, capped=True)
    return out


# New (qo_len, kv_len) for every request of a case, same batch size: a re-plan a graph capture serves.
relengths = st.lists(
    st.tuples(st.integers(0, LONG_HI), st.integers(KV_LO, KV_HI)), min_size=MAX_BATCH, max_size=MAX_BATCH
)


def with_lengths(case: Case, pairs: Sequence[tuple[int, int]]) -> Case:
    """`case` with the first batch_size pairs as its lengths (decode keeps one query row)."""
    pairs = list(pairs)[: case.batch_size]
    qo = tuple(1 if case.layout == "decode" else q for q, _ in pairs)
    return case.replace(qo_lens=qo, kv_lens=tuple(k for _, k in pairs))


def within_rows(case: Case, rows: int, fill: bool = False) -> Case:
    """`case` with its query lengths cut, first request kept longest, to at most `rows` query rows in all;
    with `fill` (not decode) the last request takes what is left, so the re-plan holds exactly `rows`.

    A CUDA-graph wrapper's buffers hold the rows of its first plan: a re-plan it serves fits in them, and an
    engine replaying a capture pads its batch to the captured size.
    """
    qo, left = [], rows
    for n in case.qo_lens:
        qo.append(min(n, left))
        left -= qo[-1]
    if fill and case.layout != "decode" and qo:
        qo[-1] += left
    return case.replace(qo_lens=tuple(qo))


def in_model(case: Case, model: Case) -> Case:
    """`case` as `model`'s engine serves it: the model's dtypes, fp8 descales, head dims and heads, and its KV
    cache's page size where both are paged (a serving engine captures its graphs for one model and cache).
    Every field copied is valid together, whatever the layout."""
    return case.replace(
        page_size=model.page_size if case.is_paged and model.is_paged else case.page_size,
        q_dtype=model.q_dtype,
        kv_dtype=model.kv_dtype,
        o_dtype=model.o_dtype,
        q_scale=model.q_scale,
        k_scale=model.k_scale,
        v_scale=model.v_scale,
        head_dim_qk=model.head_dim_qk,
        head_dim_vo=model.head_dim_vo,
        num_qo_heads=model.num_qo_heads,
        num_kv_heads=model.num_kv_heads,
    )


def with_dtype(case: Case, dtype: str) -> Case:
    return case.replace(q_dtype=dtype, kv_dtype=dtype, o_dtype="bf16" if is_fp8(dtype) else dtype)


def other_dtype(profile: Profile, current: str, drawn: str) -> str:
    """`drawn`, or the profile's next dtype when it equals the current one."""
    if drawn != current:
        return drawn
    i = profile.dtypes.index(current) if current in profile.dtypes else -1
    return profile.dtypes[(i + 1) % len(profile.dtypes)]


def toggled_mask(case: Case) -> Case:
    return case.replace(mask="none" if case.mask == "custom" else "custom")


# The windows a window toggle switches on (axes.WINDOWS without the "off" value).
windows_on = st.sampled_from([w for w in axes.WINDOWS if w >= 0])


def toggled_window(case: Case, window: int) -> Case:
    """`case` with its window off if on, else `window` (>= 0): a re-plan of the same wrapper."""
    return case.replace(window_left=-1 if case.window_left >= 0 else window)


def toggled_causal(case: Case) -> Case:
    return case.replace(causal=not case.causal)
