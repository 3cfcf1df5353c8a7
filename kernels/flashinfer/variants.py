"""JIT awareness: which compiled FlashInfer kernel a case selects, grouping by it, compile-vs-run timing.

FlashInfer compiles one module per variant on first use (seen on an H200: ~25 s for an fa2 batch
prefill module, ~90 s for fa3). What selects the module, read from 0.7.2.post1:

  batch prefill (paged AND ragged share one module: get_batch_prefill_module(backend, q, kv, o,
      idx dtype, head_dim_qk, head_dim_vo, pos_encoding, window_left >= 0, soft_cap > 0,
      fp16_qk_reduction), prefill.py plan(); the URI is jit/attention/modules.py:407)
  batch decode, CUDA cores (get_batch_decode_module(q, kv, o, idx, head_dim, head_dim, pos_encoding,
      window_left != -1, soft_cap > 0), decode.py _plan_impl) -- with tensor cores the decode
      wrapper takes the batch prefill module instead
  single prefill (get_single_prefill_module(backend, q, kv, o, head_dim_qk, head_dim_vo,
      pos_encoding, window_left >= 0, soft_cap > 0, fp16_qk_reduction), prefill.py)

The mask mode (none / causal / custom) and the KV layout are runtime arguments of one module, so
they do not cause a compile; they are still part of the key (separate kernel instantiations and
separate CUDA graphs), AFTER the fields that pick the module, so sorting by the key keeps every
case of one module together.

    variant_key(case, "fa2")              -> VariantKey(...)
    order_by_variant(cases, "fa3")        -> cases, grouped so each module compiles once, first-seen order
    RunTiming.first_use / .compile_s      -> the first plan+run of a variant in this process (compile
                                             or cache load) apart from later runs
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NamedTuple

from scenarios.case import Case

GRAPH_SUFFIX = "+graph"
POS_ENCODING = "NONE"  # the harness never asks for RoPE/ALiBi inside the kernel


class VariantKey(NamedTuple):
    backend: str  # the library backend asked for ("auto" stays "auto": resolution happens in plan())
    module: str  # "batch_prefill" | "batch_decode" | "single_prefill"
    q_dtype: str
    kv_dtype: str
    o_dtype: str
    head_dim_qk: int
    head_dim_vo: int
    pos_encoding: str
    soft_cap: bool
    window: bool
    # --- below: runtime choices of one compiled module ---
    api: str  # the case's layout
    mask: str  # "custom" | "causal" | "none"
    kv_layout: str
    graph: bool

    @property
    def module_key(self) -> tuple:
        """The fields that pick the compiled module (what a compile is paid for)."""
        return tuple(self[:10])


def split_backend(backend: str) -> tuple[str, bool]:
    """ "fa2+graph" -> ("fa2", True); "fa2" -> ("fa2", False)."""
    if backend.endswith(GRAPH_SUFFIX):
        return backend[: -len(GRAPH_SUFFIX)], True
    return backend, False


def module_of(api: str, *, decode_tensor_cores: bool = False, backend: str = "fa2") -> str:
    if api == "single":
        return "single_prefill"
    if api == "decode" and not (decode_tensor_cores or backend == "fa3"):
        return "batch_decode"
    return "batch_prefill"


def variant_key(case: Case, backend: str, *, decode_tensor_cores: bool = False) -> VariantKey:
    """Everything that selects a compiled FlashInfer kernel for `case` under `backend`."""
    lib_backend, graph = split_backend(backend)
    mask = "custom" if case.mask == "custom" else ("causal" if case.causal else "none")
    return VariantKey(
        backend=lib_backend,
        module=module_of(case.layout, decode_tensor_cores=decode_tensor_cores, backend=lib_backend),
        q_dtype=case.q_dtype,
        kv_dtype=case.kv_dtype,
        o_dtype=case.o_dtype,
        head_dim_qk=case.head_dim_qk,
        head_dim_vo=case.head_dim_vo,
        pos_encoding=POS_ENCODING,
        soft_cap=case.logits_soft_cap > 0,
        window=case.window_left >= 0,
        api=case.layout,
        mask=mask,
        kv_layout=case.kv_layout,
        graph=graph,
    )


def order_by_variant(cases: Iterable[Case], backend: str, *, decode_tensor_cores: bool = False) -> list[Case]:
    """`cases` regrouped so all cases of one compiled module (then of one full key) are adjacent.

    Groups keep the order in which their first case appeared (so a budgeted run still meets the
    matrix's early cases first); cases keep their order within a group.
    """
    cases = list(cases)
    keys = [variant_key(c, backend, decode_tensor_cores=decode_tensor_cores) for c in cases]
    first_module: dict[tuple, int] = {}
    first_key: dict[VariantKey, int] = {}
    for i, k in enumerate(keys):
        first_module.setdefault(k.module_key, i)
        first_key.setdefault(k, i)
    order = sorted(range(len(cases)), key=lambda i: (first_module[keys[i].module_key], first_key[keys[i]], i))
    return [cases[i] for i in order]


def group_by_variant(
    cases: Iterable[Case], backend: str, *, decode_tensor_cores: bool = False
) -> dict[VariantKey, list[Case]]:
    out: dict[VariantKey, list[Case]] = {}
    for c in order_by_variant(cases, backend, decode_tensor_cores=decode_tensor_cores):
        out.setdefault(variant_key(c, backend, decode_tensor_cores=decode_tensor_cores), []).append(c)
    return out


# Variants (module keys) that have completed a plan+run in this process. FlashInfer caches built
# modules per process (functools.cache on get_*_module) and on disk (the JIT cache), so the first
# use in a process pays a compile or a cache load, and later uses pay neither.
_SEEN_MODULES: set = set()


def first_use(key: VariantKey) -> bool:
    return key.module_key not in _SEEN_MODULES


def mark_used(key: VariantKey) -> None:
    _SEEN_MODULES.add(key.module_key)


def reset_seen() -> None:
    """Forget every variant (tests; or a runner that wants to re-measure compile cost)."""
    _SEEN_MODULES.clear()


@dataclass(frozen=True)
class RunTiming:
    """Timing of one plan()+run() of an adapter; GPU time synchronised, in seconds.

    first_use: the first plan+run of this variant's module in this process, so plan_s + run_s
    (+ capture_s) includes the JIT compile (or the JIT cache load) -- report it as compile time.
    Later runs of the same module are pure run time.
    """

    variant: VariantKey
    first_use: bool
    plan_s: float
    run_s: float  # eager run(), or the graph replay
    capture_s: float = 0.0  # graph mode: warm-up run + capture, when this run captured a graph
    captured: bool = False
    replayed: bool = False

    @property
    def compile_s(self) -> float:
        return self.plan_s + self.run_s + self.capture_s if self.first_use else 0.0

    def to_json(self) -> dict:
        return {
            "variant": list(self.variant),
            "first_use": self.first_use,
            "plan_s": self.plan_s,
            "run_s": self.run_s,
            "capture_s": self.capture_s,
            "captured": self.captured,
            "replayed": self.replayed,
            "compile_s": self.compile_s,
        }
