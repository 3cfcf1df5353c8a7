"""A small, correct CPU attention library with a ROCm-fork-style router: the machines' control.

Why it exists: the stateful machines must be shown to catch the lifecycle defects the seeds
describe, on the CPU, without the fork. This model has the fork's shape (a wrapper per API that is
planned and run again and again; `auto` choosing between a fast backend and a fallback; a fallback
reason; an eager mode that re-resolves every plan and a CUDA-graph mode where the first plan
decides) and plain torch numerics. conformance/explore/faults.py subclasses it once per seed defect class.

    make_model("auto", arch="gfx942")              eager adapter (AttentionKernel protocol)
    make_model("auto", arch="gfx942", graph=True)  "CUDA-graph" mode: first run captures, later runs replay

Router (precedence as the fork's selector): kv layout > custom mask > dtype > head dims > soft-cap
defect > the paged flat-gather length gate > the ragged length gate > the fast backend. A gate
fires iff 1 <= max query length <= T[arch]; tables and reason texts are conformance/explore/model_tables.py.
An explicit backend is never gated; an explicit fast backend refuses (ValueError) what it cannot
compute. The routing spec it agrees with is the fork's own (routing/specs/flashinfer_rocm.py).

Graph mode models what makes re-promotion dangerous: a capture keeps references to the module and
the plan info of the backend it captured, so plan() must update that plan info in place and never
swap the module; replays read the captured references.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Callable, Optional

import torch

from kernels import _env, skips
from kernels.errors import UnknownBackend, UnsupportedCase
from kernels.protocol import LSE_NATURAL, AttentionKernel, KernelOutput, Support
from scenarios.poison import poison
from routing import reasons as R
from conformance.explore import model_tables as T
from scenarios.case import Case
from scenarios.dtypes import to_torch
from scenarios.tensors import Inputs

TARGET = "model"


# ---- numerics ------------------------------------------------------------------------------------
@dataclass
class PlanInfo:
    """What a plan leaves for the kernel: lengths, index tables and the attention features."""

    layout: str
    kv_layout: str
    qo_lens: tuple[int, ...]
    kv_lens: tuple[int, ...]
    qo_indptr: tuple[int, ...]
    kv_indptr: tuple[int, ...]  # ragged: key offsets; paged: page offsets into page_indices
    page_indices: tuple[int, ...]
    page_size: int
    num_qo_heads: int
    num_kv_heads: int
    causal: bool
    window_left: int
    logits_soft_cap: float
    scale: float

    @classmethod
    def of(cls, inputs: Inputs) -> "PlanInfo":
        c = inputs.case
        kv_ptr = inputs.kv_page_indptr if c.is_paged else inputs.kv_indptr
        assert kv_ptr is not None
        pages = inputs.kv_page_indices if c.is_paged else None
        return cls(layout=c.layout, kv_layout=c.kv_layout, qo_lens=c.qo_lens, kv_lens=c.kv_lens,
                   qo_indptr=tuple(inputs.qo_indptr.tolist()), kv_indptr=tuple(kv_ptr.tolist()),
                   page_indices=tuple(pages.tolist()) if pages is not None else (), page_size=c.page_size,
                   num_qo_heads=c.num_qo_heads, num_kv_heads=c.num_kv_heads, causal=c.causal,
                   window_left=c.window_left, logits_soft_cap=c.logits_soft_cap, scale=c.scale)

    def update(self, other: "PlanInfo") -> None:
        """Overwrite in place, as a graph-mode plan writes into the buffers a capture reads."""
        for f in fields(self):
            setattr(self, f.name, getattr(other, f.name))


def _keys(info: PlanInfo, x: torch.Tensor, i: int) -> Optional[torch.Tensor]:
    """Request i's keys (or values) as [kv_len, Hkv, D]; None where the plan points outside x."""
    kv = info.kv_lens[i]
    if info.layout == "ragged":
        lo = info.kv_indptr[i]
        n = x.shape[0] if info.kv_layout == "NHD" else x.shape[1]
        if lo + kv > n:
            return None
        return x[lo:lo + kv] if info.kv_layout == "NHD" else x[:, lo:lo + kv].transpose(0, 1)
    pages = list(info.page_indices[info.kv_indptr[i]:info.kv_indptr[i + 1]])
    if any(p >= x.shape[0] for p in pages):
        return None
    pool = x[torch.tensor(pages, dtype=torch.long)] if pages else x[:0]
    if info.kv_layout == "HND":  # [P, H, page, D] -> [P, page, H, D]
        pool = pool.transpose(1, 2)
    flat = pool.reshape(-1, x.shape[2] if info.kv_layout == "NHD" else x.shape[1], x.shape[-1])
    return flat[:kv] if flat.shape[0] >= kv else None


def _mask_bits(mask: torch.Tensor, mask_indptr: torch.Tensor, i: int, qo: int, kv: int) -> torch.Tensor:
    """Request i's [qo, kv] mask read from the buffer; bits past its end read as False (garbage)."""
    ptr = mask_indptr.tolist()
    lo = ptr[i] if i < len(ptr) else ptr[-1]
    bits = mask[lo:lo + qo * kv].to(torch.bool)
    if bits.numel() < qo * kv:
        bits = torch.cat([bits, torch.zeros(qo * kv - bits.numel(), dtype=torch.bool)])
    return bits.view(qo, kv)


def attend(info: PlanInfo, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor],
           mask_indptr: Optional[torch.Tensor], out: torch.Tensor, lse: torch.Tensor) -> None:
    """Attention in fp32 for every request the plan names, written into out/lse (natural-log LSE).

    A request the plan places outside the given tensors is skipped, as a kernel reading a stale
    plan would write nothing useful there: its rows keep their poison.
    """
    group = info.num_qo_heads // info.num_kv_heads
    for i, (qo, kv) in enumerate(zip(info.qo_lens, info.kv_lens)):
        q0 = info.qo_indptr[i]
        if qo == 0 or q0 + qo > q.shape[0] or q0 + qo > out.shape[0]:
            continue
        keys, vals = _keys(info, k, i), _keys(info, v, i)
        if keys is None or vals is None:
            continue
        qi = q[q0:q0 + qo].float()
        s = torch.einsum("qhd,khd->hqk", qi, keys.float().repeat_interleave(group, dim=1)) * info.scale
        if info.logits_soft_cap > 0:
            s = info.logits_soft_cap * torch.tanh(s / info.logits_soft_cap)
        rows = torch.arange(qo).view(-1, 1) + (kv - qo)
        cols = torch.arange(kv).view(1, -1)
        allow = torch.ones((qo, kv), dtype=torch.bool)
        if info.causal:
            allow &= cols <= rows
        if info.window_left >= 0:
            allow &= cols >= rows - info.window_left
        if mask is not None and mask_indptr is not None:
            allow &= _mask_bits(mask, mask_indptr, i, qo, kv)
        s = s.masked_fill(~allow, -math.inf)
        m = s.amax(dim=-1, keepdim=True) if kv else torch.full((s.shape[0], qo, 1), -math.inf)
        m_safe = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        p = torch.exp(s - m_safe)
        denom = p.sum(dim=-1, keepdim=True)
        o = torch.einsum("hqk,khd->hqd", p, vals.float().repeat_interleave(group, dim=1))
        o = torch.where(denom > 0, o / denom.clamp_min(1e-30), torch.zeros_like(o))
        row_lse = torch.where(denom > 0, m_safe + torch.log(denom.clamp_min(1e-30)),
                              torch.full_like(denom, -math.inf))
        out[q0:q0 + qo] = o.transpose(0, 1).to(out.dtype)
        lse[q0:q0 + qo] = row_lse[..., 0].transpose(0, 1)


@dataclass(frozen=True)
class Module:
    """A backend's compiled kernel: what a capture keeps a reference to."""

    name: str
    fn: Callable[..., None] = field(default=attend, compare=False)


MODULES: dict[str, Module] = {T.FALLBACK: Module(T.FALLBACK), T.FAST: Module(T.FAST)}


# ---- the selector --------------------------------------------------------------------------------
@dataclass(frozen=True)
class SelectorArgs:
    """What a wrapper's plan() hands `auto`, as the fork's selector takes it (keyword arguments)."""

    arch: str
    dtype: str
    kv_layout: str
    has_custom_mask: bool
    head_dim_qk: int
    head_dim_vo: int
    causal: bool
    logits_soft_cap: float
    kv_len: Optional[int]
    allow_fp8: bool
    max_q_len: Optional[int] = None  # paged: armed
    ragged_q_len: Optional[int] = None  # ragged: armed


def reason_text(code: R.ReasonCode, **values: object) -> str:
    return T.REASON_TEXT[code].format(**values)


class Selector:
    """`auto`: the first check that declines the fast backend gives the fallback and its reason."""

    def select(self, a: SelectorArgs) -> tuple[str, Optional[str]]:
        reason = self.decline(a)
        return (T.FALLBACK, reason) if reason is not None else (T.FAST, None)

    def decline(self, a: SelectorArgs) -> Optional[str]:
        if a.kv_layout != "NHD":
            return reason_text(R.LAYOUT, kv_layout=a.kv_layout)
        if a.has_custom_mask:
            return reason_text(R.CUSTOM_MASK)
        if a.dtype not in T.HALF:
            return reason_text(R.DTYPE_FP8_ALLOWED if a.allow_fp8 else R.DTYPE, dtype=a.dtype)
        if a.head_dim_qk != a.head_dim_vo:
            return reason_text(R.HEAD_DIMS, qk=a.head_dim_qk, vo=a.head_dim_vo)
        if softcap_defect(a.arch, a.causal, a.logits_soft_cap, a.head_dim_qk) and a.kv_len is not None:
            return reason_text(R.SOFTCAP_DEFECT, cap=a.logits_soft_cap, hd=a.head_dim_qk)
        t = T.FLAT_GATHER_GATED_Q_LEN[a.arch]
        if self.short(a.max_q_len, t):
            return reason_text(R.PAGED_SHORT_QUERY, t=t)
        t = T.RAGGED_GATED_Q_LEN[a.arch]
        if self.short(a.ragged_q_len, t):
            return self.ragged_reason(t)
        return None

    def short(self, n: Optional[int], t: Optional[int]) -> bool:
        """A length gate: a real query (n >= 1) no longer than T; T None disarms it."""
        return n is not None and t is not None and 1 <= n <= t

    def ragged_reason(self, t: int) -> str:
        return reason_text(R.RAGGED_SHORT_QUERY, t=t)


def softcap_defect(arch: str, causal: bool, cap: float, head_dim: int) -> bool:
    return T.SOFTCAP_DEFECT_ARCHS[arch] and causal and cap > 0 and head_dim == T.SOFTCAP_DEFECT_HEAD_DIM


# ---- wrappers ------------------------------------------------------------------------------------
@dataclass
class Captured:
    """A captured graph: the module and plan info it was recorded against (references, not copies)."""

    module: Module
    plan_info: PlanInfo


class Wrapper:
    """One API's long-lived wrapper: plan() resolves and records, run() computes."""

    api = ""

    def __init__(self, requested: str, *, arch: str, graph: bool, selector: Selector) -> None:
        self.requested = requested
        self.arch = arch
        self.use_cuda_graph = graph
        self.selector = selector
        self._backend = requested
        self.backend_fallback_reason: Optional[str] = None
        self._custom_mask_buf: Optional[torch.Tensor] = None
        self._mask_indptr_buf: Optional[torch.Tensor] = None
        self._cached_module: Optional[Module] = None
        self._plan_info: Optional[PlanInfo] = None
        self._graph: Optional[Captured] = None
        self._max_q_len = 0
        self._max_kv_len = 0

    # -- plan ----------------------------------------------------------------------------------
    def plan(self, inputs: Inputs) -> None:
        c = inputs.case
        if self.requested == T.FAST:
            self._refuse_explicit_fast(c)
        self._max_q_len = max(c.qo_lens, default=0)
        self._max_kv_len = max(c.kv_lens, default=0)
        self._set_mask(inputs)
        if self._re_resolves():
            self._backend, self.backend_fallback_reason = self.selector.select(self._args(c))
        elif self.requested != T.AUTO:
            self._backend, self.backend_fallback_reason = self.requested, None
        self._install(PlanInfo.of(inputs))

    def _refuse_explicit_fast(self, c: Case) -> None:
        if c.kv_layout != "NHD":
            raise ValueError(T.EXPLICIT_FAST_REFUSALS["layout"].format(kv_layout=c.kv_layout))
        if softcap_defect(self.arch, c.causal, c.logits_soft_cap, c.head_dim_qk):
            raise ValueError(T.EXPLICIT_FAST_REFUSALS["softcap_defect"].format(
                cap=c.logits_soft_cap, hd=c.head_dim_qk, arch=self.arch))

    def _set_mask(self, inputs: Inputs) -> None:
        """The mask buffers follow every plan: set for a masked plan, cleared for an unmasked one."""
        self._custom_mask_buf = inputs.custom_mask
        self._mask_indptr_buf = inputs.mask_indptr

    def _re_resolves(self) -> bool:
        """`auto` re-resolves every eager plan; under graph mode only the first plan decides."""
        return self.requested == T.AUTO and (self._backend == T.AUTO or not self.use_cuda_graph)

    def _args(self, c: Case) -> SelectorArgs:
        return SelectorArgs(arch=self.arch, dtype=c.q_dtype, kv_layout=c.kv_layout,
                            has_custom_mask=self._custom_mask_buf is not None, head_dim_qk=c.head_dim_qk,
                            head_dim_vo=c.head_dim_vo, causal=c.causal, logits_soft_cap=c.logits_soft_cap,
                            kv_len=self._max_kv_len, allow_fp8=self.api == "paged", **self._gate_lengths())

    def _gate_lengths(self) -> dict[str, Optional[int]]:
        raise NotImplementedError

    def _install(self, info: PlanInfo) -> None:
        """Same module: update the plan info in place (a capture reads it). New module: swap both."""
        module = MODULES[self._backend]
        if self._cached_module is module and self._plan_info is not None:
            self._plan_info.update(info)
        else:
            self._cached_module, self._plan_info = module, info

    # -- run -----------------------------------------------------------------------------------
    def run(self, inputs: Inputs) -> tuple[torch.Tensor, torch.Tensor]:
        if self._plan_info is None or self._cached_module is None:
            raise RuntimeError("run() before plan()")
        c = inputs.case
        out = poison(torch.empty((c.total_qo, c.num_qo_heads, c.head_dim_vo), dtype=to_torch(c.o_dtype)))
        lse = poison(torch.empty((c.total_qo, c.num_qo_heads), dtype=torch.float32))
        if self.use_cuda_graph:
            if self._graph is None:
                self._graph = Captured(self._cached_module, self._plan_info)
            module, info = self._graph.module, self._graph.plan_info
        else:
            module, info = self._cached_module, self._plan_info
        module.fn(info, inputs.q, inputs.k, inputs.v, self._custom_mask_buf, self._mask_indptr_buf, out, lse)
        return out, lse


class RaggedWrapper(Wrapper):
    api = "ragged"

    def _gate_lengths(self) -> dict[str, Optional[int]]:
        """Ragged arms its own gate on every plan, whatever the wrapper resolved to before."""
        return {"ragged_q_len": self._max_q_len}


class PagedWrapper(Wrapper):
    api = "paged"

    def _gate_lengths(self) -> dict[str, Optional[int]]:
        """Paged arms the flat-gather gate (the model has no native paging: every page size gathers)."""
        return {"max_q_len": self._max_q_len}


@dataclass(frozen=True)
class Build:
    """The classes a model adapter is built from; conformance/explore/faults.py swaps one of them per defect."""

    name: str = "correct"
    ragged: type[Wrapper] = RaggedWrapper
    paged: type[Wrapper] = PagedWrapper
    selector: type[Selector] = Selector


CORRECT = Build()


# ---- the adapter ---------------------------------------------------------------------------------
class ModelKernel:
    """The model behind the AttentionKernel protocol: one wrapper per API (eager) or per graph shape."""

    target = TARGET

    def __init__(self, backend: str = T.AUTO, device: str = "cpu", *, arch: str = "gfx942", graph: bool = False,
                 build: Build = CORRECT) -> None:
        if backend not in T.BACKENDS:
            raise UnknownBackend(TARGET, backend, T.BACKENDS, device)
        if arch not in T.ARCHS:
            raise ValueError(f"arch={arch!r}: expected one of {T.ARCHS}")
        self.library_backend = backend
        self.backend = backend + (T.GRAPH_SUFFIX if graph else "")
        self.device = device
        self.arch = arch
        self.graph = graph
        self.build = build
        self._wrappers: dict[tuple, Wrapper] = {}
        self._planned: Optional[tuple[Wrapper, Inputs]] = None

    def __repr__(self) -> str:
        return (f"ModelKernel({self.library_backend!r}, arch={self.arch!r}, graph={self.graph}, "
                f"build={self.build.name!r})")

    def fresh(self) -> "ModelKernel":
        return ModelKernel(self.library_backend, self.device, arch=self.arch, graph=self.graph, build=self.build)

    def wrapper_key(self, case: Case) -> tuple:
        """Which wrapper serves a case: one per API and KV layout; graph mode fixes batch and mask too."""
        key: tuple = (case.layout, case.kv_layout)
        return key + (case.batch_size, case.mask) if self.graph else key

    def supports(self, case: Case) -> Support:
        if case.layout not in T.LAYOUTS:
            return Support.no(skips.detail(skips.LAYOUT, f"the model serves {', '.join(T.LAYOUTS)}"))
        if case.is_fp8:
            return Support.no(skips.detail(skips.NO_FP8, "the model takes fp16/bf16/fp32"))
        if case.q_dtype != case.kv_dtype:
            return Support.no(skips.detail(skips.MIXED_QKV_DTYPE, f"q {case.q_dtype}, kv {case.kv_dtype}"))
        if case.o_dtype != case.q_dtype:
            return Support.no(skips.detail(skips.OUTPUT_DTYPE, f"o {case.o_dtype}, q {case.q_dtype}"))
        return Support.yes()

    def _wrapper(self, case: Case) -> Wrapper:
        key = self.wrapper_key(case)
        if key not in self._wrappers:
            cls = self.build.ragged if case.layout == "ragged" else self.build.paged
            self._wrappers[key] = cls(self.library_backend, arch=self.arch, graph=self.graph,
                                      selector=self.build.selector())
        return self._wrappers[key]

    def plan(self, inputs: Inputs) -> None:
        sup = self.supports(inputs.case)
        if not sup.ok:
            raise UnsupportedCase(TARGET, self.backend, inputs.case.id, sup.reason)
        w = self._wrapper(inputs.case)
        self._planned = None
        w.plan(inputs)
        self._planned = (w, inputs)

    def run(self, inputs: Inputs) -> KernelOutput:
        if self._planned is None or self._planned[1] is not inputs:
            self.plan(inputs)
        assert self._planned is not None
        w = self._planned[0]
        out, lse = w.run(inputs)
        return KernelOutput(out=out, lse=lse, lse_base=LSE_NATURAL, resolved_backend=w._backend,
                            fallback_reason=w.backend_fallback_reason)


class ModelTarget:
    """The model as a Target: backends fa2, aiter and auto on the CPU."""

    name = TARGET

    def backends(self, device: str) -> tuple[str, ...]:
        return T.BACKENDS

    def available(self, device: str) -> Support:
        return Support.yes()

    def make(self, backend: str, device: str = "cpu", graph: bool = False, arch: str = "gfx942",
             build: Build = CORRECT) -> AttentionKernel:
        return ModelKernel(backend, device, arch=arch, graph=graph, build=build)

    def versions(self) -> dict[str, str]:
        return _env.library_versions()


MODEL = ModelTarget()


def make_model(backend: str = T.AUTO, device: str = "cpu", *, arch: str = "gfx942", graph: bool = False
               ) -> ModelKernel:
    """The correct model adapter."""
    return ModelKernel(backend, device, arch=arch, graph=graph)

