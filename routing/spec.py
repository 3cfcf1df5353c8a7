"""The routing specification format: what `backend="auto"` should pick, and why, as data.

Separate from `routing/specs/` (the data, one module per library) and `routing/check.py` (the
comparison), so a spec module contains rows and tables only, and the matching engine is tested
once for every library.

A spec is:

* ``rules``: `RouteRule` rows in PRECEDENCE order. The first row whose `when` holds (and whose
  length gate, if any, fires) decides; the order of the tuple IS the library's precedence.
* ``thresholds``: per-architecture tables (``{"gfx942": 16, "gfx950": None}``). An explicit
  ``None`` is a measured verdict ("never gate"); an architecture absent from a table reads
  `MISSING`, which `expected_route` turns into a `SpecGap` (the checker reports it as a gap,
  never as None). Tables of other values (a bool, a dtype name) work the same way.
* ``lifecycle``: `Lifecycle` flags for what happens across plans of one wrapper.

`RoutingQuery` is the plain description the selector sees; build it from a `scenarios.Case` and
a `RoutingEnv` (facts about the machine and install) with `query_from_case`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Mapping, Optional, Sequence, Union

from kernels import _env
from kernels.protocol import NOT_REPORTED, _NotReported
from routing.reasons import ALL as ALL_REASONS, ReasonCode
from scenarios.case import Case

Api = Literal["paged", "ragged", "decode", "single"]
AiterInstall = Literal["importable", "not_installed", "below_abi_floor"]


class _Missing:
    """An architecture absent from a thresholds table: a gap in the spec, never a verdict."""

    _instance: Optional["_Missing"] = None

    def __new__(cls) -> "_Missing":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:  # a MISSING row must never read as a falsy "no gate"
        raise TypeError("MISSING has no truth value: a missing architecture is a spec gap, not None")


MISSING = _Missing()


class SpecError(ValueError):
    """A spec that contradicts itself (duplicate rows, unknown reason, uneven architectures)."""

    def __init__(self, spec: str, what: str, value: Any, expected: str, fix: str) -> None:
        self.spec, self.what, self.value, self.expected, self.fix = spec, what, value, expected, fix
        super().__init__(f"spec {spec}: {what}={value!r} is invalid: expected {expected}. Fix: {fix}")


@dataclass(frozen=True)
class ThresholdTable:
    """One per-architecture table. `lookup` returns the value (None included) or MISSING."""

    name: str
    rows: Mapping[str, Any]
    source: str = ""

    def lookup(self, arch: str) -> Any:
        return self.rows[arch] if arch in self.rows else MISSING

    def without(self, arch: str) -> "ThresholdTable":
        """A copy with `arch`'s row deleted (what a careless edit does; tests use it)."""
        return replace(self, rows={k: v for k, v in self.rows.items() if k != arch})

    def with_row(self, arch: str, value: Any) -> "ThresholdTable":
        return replace(self, rows={**self.rows, arch: value})


@dataclass(frozen=True)
class RoutingEnv:
    """Facts about the machine and the install that the selector consults."""

    arch: str  # normalised gcnArchName ("gfx942"); "unknown" for CPU or an unreadable name
    aiter_install: AiterInstall = "importable"
    graph_mode: bool = False  # use_cuda_graph=True on the wrapper
    bootstrap_ok: bool = True  # the AITER kernel bootstrap probe succeeds
    native_paging_ok: bool = True  # _aiter_native_paging_available at a routed page
    device: str = "cuda"  # torch device type of the inputs ("cpu", "cuda"; ROCm reads "cuda")
    # Upstream CUDA: cudnn.prefill._cudnn_supports_direct_seqlens for 16-bit queries (cuDNN
    # backend >= 9.24 with cudnn-frontend >= 1.25), an install fact the SM100 ragged auto reads.
    cudnn_direct_seqlens: bool = False
    # Upstream CUDA install facts the newer selectors read (flashinfer-python 0.7.4): cuDNN's
    # single-token GQA ragged-stats defect (backend < 9.27), the qualified paged prefill selection
    # (_cudnn_supports_paged_auto: frontend >= 1.32, backend >= 9.27) and decode's cuDNN auto
    # (the frontend serves its FROST decode tile and that runtime can run).
    cudnn_single_token_gqa_stats_broken: bool = False
    cudnn_paged_auto: bool = False
    cudnn_decode_auto: bool = False


@dataclass(frozen=True)
class RoutingQuery:
    """What one plan() hands the selector, as plain values (no tensors, no library objects)."""

    api: Api
    arch: str
    requested: str = "auto"  # "auto", "fa2", "aiter"
    q_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    o_dtype: str = "bf16"
    kv_layout: str = "NHD"
    custom_mask: bool = False
    head_dim_qk: int = 128
    head_dim_vo: int = 128
    pos_encoding: str = "NONE"
    logits_soft_cap: float = 0.0
    causal: bool = False
    max_q_len: int = 1  # largest query length in the batch; 0 for an empty batch
    max_kv_len: int = 1
    page_size: int = 1
    aiter_install: AiterInstall = "importable"
    graph_mode: bool = False
    bootstrap_ok: bool = True
    native_paging_ok: bool = True
    use_tensor_cores: bool = False  # decode only
    max_seq_len: Optional[int] = None  # decode only: declared graph capacity
    # A direct selector call arming both max_q_len and ragged_q_len; no wrapper does this.
    both_length_gates: bool = False
    device: str = "cuda"  # torch device type of the inputs: "cpu" or "cuda" (ROCm reads "cuda")
    # Every request has qo_len 0 or kv_len 0 (an empty batch too). max_q_len/max_kv_len cannot
    # say this: qo_lens (0, 5) with kv_lens (7, 0) has both maxima > 0 and no non-empty request.
    all_requests_empty: bool = False
    # Upstream CUDA selector inputs (flashinfer-python 0.7.2.post1). Per-request lengths, kept
    # consistent with max_q_len/max_kv_len by query_from_case: the SM100 ragged upgrade counts
    # CUTLASS work tiles per request and compares qo_indptr with kv_indptr.
    qo_lens: tuple[int, ...] = (1,)
    kv_lens: tuple[int, ...] = (1,)
    num_qo_heads: int = 1
    num_kv_heads: int = 1
    window_left: int = -1
    use_fp16_qk_reduction: bool = False  # plan()'s flag; is_fa3_backend_supported refuses it
    cudnn_direct_seqlens: bool = False  # RoutingEnv.cudnn_direct_seqlens
    cudnn_single_token_gqa_stats_broken: bool = False  # RoutingEnv's, likewise
    cudnn_paged_auto: bool = False
    cudnn_decode_auto: bool = False
    # The backend a wrapper holds from an earlier plan, where the lifecycle keeps it (set by
    # expected_sequence, never by query_from_case): only the rows named in Lifecycle.held_rules read it.
    held_backend: Optional[str] = None

    @property
    def batch_size(self) -> int:
        return len(self.qo_lens)

    @property
    def aiter_importable(self) -> bool:
        return self.aiter_install == "importable"

    def replace(self, **changes: Any) -> "RoutingQuery":
        return replace(self, **changes)


def query_from_case(
    case: Case,
    env: RoutingEnv,
    *,
    requested: str = "auto",
    pos_encoding: str = "NONE",
    use_tensor_cores: bool = False,
    max_seq_len: Optional[int] = None,
) -> RoutingQuery:
    """The query one plan() of `case` makes under `env`."""
    return RoutingQuery(
        api=case.layout,
        arch=env.arch,
        requested=requested,
        q_dtype=case.q_dtype,
        kv_dtype=case.kv_dtype,
        o_dtype=case.o_dtype,
        kv_layout=case.kv_layout,
        custom_mask=case.mask == "custom",
        head_dim_qk=case.head_dim_qk,
        head_dim_vo=case.head_dim_vo,
        pos_encoding=pos_encoding,
        logits_soft_cap=case.logits_soft_cap,
        causal=case.causal,
        max_q_len=max(case.qo_lens, default=0),
        max_kv_len=max(case.kv_lens, default=0),
        page_size=case.page_size,
        aiter_install=env.aiter_install,
        graph_mode=env.graph_mode,
        bootstrap_ok=env.bootstrap_ok,
        native_paging_ok=env.native_paging_ok,
        use_tensor_cores=use_tensor_cores,
        max_seq_len=max_seq_len,
        device=env.device,
        all_requests_empty=all(qo == 0 or kv == 0 for qo, kv in zip(case.qo_lens, case.kv_lens)),
        qo_lens=case.qo_lens,
        kv_lens=case.kv_lens,
        num_qo_heads=case.num_qo_heads,
        num_kv_heads=case.num_kv_heads,
        window_left=case.window_left,
        cudnn_direct_seqlens=env.cudnn_direct_seqlens,
        cudnn_single_token_gqa_stats_broken=env.cudnn_single_token_gqa_stats_broken,
        cudnn_paged_auto=env.cudnn_paged_auto,
        cudnn_decode_auto=env.cudnn_decode_auto,
    )


# gfx version as torch reports it on ROCm (device_capability) -> the arch name specs are keyed by.
_ROCM_CAPABILITY_ARCH = {(9, 4): "gfx942", (9, 5): "gfx950"}


def current_arch(device: _env.DeviceLike) -> str:
    """The arch of `device` via the patchable `_env.device_capability`; "unknown" off ROCm."""
    cap = _env.device_capability(device)
    if cap is None or not _env.is_rocm():
        return "unknown"
    return _ROCM_CAPABILITY_ARCH.get(cap, f"gfx{cap[0]}{cap[1]}?")


@dataclass(frozen=True)
class LengthGate:
    """A performance gate: fires iff 1 <= length(query) <= T, T = thresholds[table][arch].

    T None disarms the gate (a measured "never"); MISSING is a spec gap. A length of None or
    <= 0 never fires when `Lifecycle.nonpositive_length_never_short` holds.
    """

    table: str
    length: Callable[[RoutingQuery], Optional[int]]


@dataclass(frozen=True)
class RouteRule:
    """One row: when `when(query)` holds (and `gate` fires), expect this backend and reason.

    `expect_raises` names an exception type the plan is expected to raise instead of routing
    (then `expect_backend` is None). `expect_reason` may be `NOT_REPORTED` for a library that
    gives no reason at all (torch): the checker then passes NOT_REPORTED, and only it. `tables`
    names every thresholds table `when` reads through `Ctx.table`, so a missing arch row there is
    a gap too. `source` cites rocm_fork.md.
    """

    name: str
    when: Callable[[RoutingQuery, "Ctx"], bool]
    expect_backend: Optional[str]
    expect_reason: Union[ReasonCode, None, _NotReported]
    gate: Optional[LengthGate] = None
    expect_raises: Optional[str] = None
    tables: tuple[str, ...] = ()
    source: str = field(default="", compare=False)


@dataclass(frozen=True)
class Lifecycle:
    """What happens across plans of one wrapper, as flags the engine obeys (section 4)."""

    re_resolve_every_eager_plan: frozenset[str] = frozenset({"paged", "ragged", "single"})
    graph_mode_first_plan_decides: bool = True
    sticky_apis: frozenset[str] = frozenset()  # the first plan decides even in eager mode
    per_plan_rules: frozenset[str] = frozenset()  # re-checked every plan even when fixed
    explicit_backend_never_gated: bool = True
    nonpositive_length_never_short: bool = True
    before_plan: tuple[str, Union[ReasonCode, None, _NotReported]] = ("auto", None)
    # An eager wrapper of these apis keeps a custom mask of an earlier plan (upstream ragged: an
    # unmasked plan() does not clear _custom_mask_buf), so later plans resolve as masked.
    stale_mask_apis: frozenset[str] = frozenset()
    # A plan that raises leaves the wrapper unresolved: the next plan decides, not the raise.
    raised_plan_fixes_nothing: bool = False
    # A graph-mode wrapper of these apis keeps the backend of its first plan that fixes one, even
    # where eager plans of the api re-resolve (upstream 0.7.4 paged: `_cuda_graph_backend`).
    graph_held_apis: frozenset[str] = frozenset()
    # Rows whose decision fixes nothing: a wrapper they decide stays unresolved, and the next plan
    # decides afresh (as a raise does under raised_plan_fixes_nothing).
    unfixing_rules: frozenset[str] = frozenset()
    # Rows that read RoutingQuery.held_backend: on a held wrapper, a plan one of them matches is that
    # row's (a refusal of the held backend), not the held backend.
    held_rules: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RoutingSpec:
    library: str
    archs: tuple[str, ...]
    rules: tuple[RouteRule, ...]
    thresholds: Mapping[str, ThresholdTable]
    lifecycle: Lifecycle = Lifecycle()
    # The library version whose source the rows were read from, where a library has one spec per
    # version (routing.specs picks it by the installed version); "" for a spec of no one version.
    version: str = ""

    @property
    def title(self) -> str:
        """The spec's name as reports print it: the library, and the version where there is one."""
        return f"{self.library} {self.version}" if self.version else self.library

    def rule(self, name: str) -> RouteRule:
        for r in self.rules:
            if r.name == name:
                return r
        raise KeyError(name)

    def with_table(self, table: ThresholdTable) -> "RoutingSpec":
        return replace(self, thresholds={**self.thresholds, table.name: table})

    def without_rule(self, name: str) -> "RoutingSpec":
        return replace(self, rules=tuple(r for r in self.rules if r.name != name))


@dataclass(frozen=True)
class SpecGap:
    """The spec has no row for (table, arch): it cannot say what to expect."""

    table: str
    arch: str


@dataclass(frozen=True)
class ExpectedRoute:
    backend: Optional[str]
    reason: Union[ReasonCode, None, _NotReported]
    rule: Optional[str]
    raises: Optional[str] = None
    threshold: Optional[int] = None  # the T a short-query reason must embed
    gap: Optional[SpecGap] = None


class _GapFound(Exception):
    def __init__(self, gap: SpecGap) -> None:
        self.gap = gap


class Ctx:
    """What a rule's `when` may read besides the query: table values for the query's arch."""

    def __init__(self, spec: RoutingSpec, arch: str) -> None:
        self._spec, self._arch = spec, arch

    def table(self, name: str) -> Any:
        v = self._spec.thresholds[name].lookup(self._arch)
        if v is MISSING:
            raise _GapFound(SpecGap(name, self._arch))
        return v


def _gate_fires(spec: RoutingSpec, rule: RouteRule, q: RoutingQuery, ctx: Ctx) -> tuple[bool, Optional[int]]:
    assert rule.gate is not None
    if spec.lifecycle.explicit_backend_never_gated and q.requested != "auto":
        return False, None
    t = ctx.table(rule.gate.table)
    n = rule.gate.length(q)
    if t is None or n is None:
        return False, t
    if n <= 0 and spec.lifecycle.nonpositive_length_never_short:
        return False, t
    return n <= t, t


def expected_route(spec: RoutingSpec, query: RoutingQuery) -> ExpectedRoute:
    """The first matching row's expectation; a `SpecGap` where a table lacks the query's arch."""
    ctx = Ctx(spec, query.arch)
    try:
        for rule in spec.rules:
            if not rule.when(query, ctx):
                continue
            t: Optional[int] = None
            if rule.gate is not None:
                fires, t = _gate_fires(spec, rule, query, ctx)
                if not fires:
                    continue
            return ExpectedRoute(
                rule.expect_backend, rule.expect_reason, rule.name, raises=rule.expect_raises, threshold=t
            )
    except _GapFound as g:
        return ExpectedRoute(None, None, None, gap=g.gap)
    return ExpectedRoute(None, None, None, gap=SpecGap("<rules>", query.arch))


def expected_sequence(spec: RoutingSpec, queries: Sequence[RoutingQuery]) -> list[ExpectedRoute]:
    """Expectations for successive plans of ONE wrapper, applying the spec's lifecycle flags."""
    lc = spec.lifecycle
    out: list[ExpectedRoute] = []
    fixed: Optional[ExpectedRoute] = None
    masked = False
    for i, q in enumerate(queries):
        if q.api in lc.stale_mask_apis and not q.graph_mode:
            q = q.replace(custom_mask=q.custom_mask or masked)
            masked = q.custom_mask
        fresh = expected_route(spec, q)
        if q.requested != "auto" or i == 0 or fixed is None:
            fixed = fresh if q.requested == "auto" else None
            if fixed is not None and fixed.raises is not None and lc.raised_plan_fixes_nothing:
                fixed = None
            if fixed is not None and fixed.rule in lc.unfixing_rules:
                fixed = None
            out.append(fresh)
            continue
        stays = (
            (q.graph_mode and (lc.graph_mode_first_plan_decides or q.api in lc.graph_held_apis))
            or q.api in lc.sticky_apis
            or q.api not in lc.re_resolve_every_eager_plan
        )
        if stays and lc.held_rules and fixed.backend is not None:
            # A held wrapper may refuse a plan its held backend cannot serve (0.7.4 paged graphs).
            on_held = expected_route(spec, q.replace(held_backend=fixed.backend))
            if on_held.rule in lc.held_rules:
                out.append(on_held)
                continue
        if stays and fresh.rule not in lc.per_plan_rules:
            # A wrapper held on a backend refuses what an explicit request for that backend refuses
            # (the ROCm fork: held on fa2 by its first graph plan, an fp8 plan raises, rule 22).
            held = expected_route(spec, q.replace(requested=fixed.backend)) if fixed.backend else None
            out.append(held if held is not None and held.raises is not None else fixed)
        else:
            out.append(fresh)
    return out


def validate(spec: RoutingSpec) -> None:
    """Self-check (STYLE item 10): unique row names, known reasons, same axes for every arch."""
    names = [r.name for r in spec.rules]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SpecError(spec.library, "rule names", dupes, "unique names", "rename the duplicate rows")
    for r in spec.rules:
        if r.expect_reason is not None and r.expect_reason is not NOT_REPORTED and r.expect_reason not in ALL_REASONS:
            raise SpecError(
                spec.library,
                f"{r.name}.expect_reason",
                r.expect_reason,
                "a constant of routing.reasons.ALL or NOT_REPORTED",
                "add the reason to routing/reasons.py",
            )
        if (r.expect_raises is None) == (r.expect_backend is None):
            raise SpecError(
                spec.library,
                f"{r.name}.expect_backend",
                r.expect_backend,
                "exactly one of expect_backend / expect_raises",
                "set one, not both",
            )
        for t in r.tables + ((r.gate.table,) if r.gate else ()):
            if t not in spec.thresholds:
                raise SpecError(
                    spec.library,
                    f"{r.name} table",
                    t,
                    f"one of {sorted(spec.thresholds)}",
                    "add the table or fix the name",
                )
    for table in spec.thresholds.values():
        if set(table.rows) != set(spec.archs):
            raise SpecError(
                spec.library,
                f"thresholds[{table.name!r}] architectures",
                sorted(table.rows),
                f"exactly {sorted(spec.archs)} (None is a verdict; absent is a gap)",
                "add the missing architecture row, with None if measured as 'never'",
            )
    lc = spec.lifecycle
    for flag, rule_names in (
        ("per_plan_rules", lc.per_plan_rules),
        ("unfixing_rules", lc.unfixing_rules),
        ("held_rules", lc.held_rules),
    ):
        for n in sorted(rule_names):
            if n not in names:
                raise SpecError(spec.library, f"lifecycle.{flag}", n, "a rule name", "fix the name")
