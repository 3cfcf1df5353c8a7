"""Build every FlashInfer module a run needs before it runs, many modules at once.

FlashInfer compiles a module on its first use, one module at a time: a matrix touching 30 modules
pays 30 sequential builds, each using only as many cores as that module has source files (4-13).
This module turns (cases, backends) into the JitSpecs the wrappers will ask for, with exactly
the arguments plan() passes (so the library's later `build_and_load()` finds them built), and
builds them concurrently (see `prebuild` for why not through the library's `build_jit_specs`).

Which generator the wrappers call, read from 0.7.2.post1:
  batch prefill, fa2: `_gen_batch_prefill_primary_module` (prefill.py:546; its paged-only
      independent-stride module is built lazily, only for K/V of different strides, which the
      adapter never passes -- not prebuilt)
  batch prefill, other backends: `gen_batch_prefill_module` (prefill.py:556)
      args (q, kv, o, idx=int32, head_dim_qk, head_dim_vo, pos=0, window_left >= 0, cap > 0,
      fp16_qk_reduction=False) (prefill.py:3680-3696 paged; ragged alike)
  decode on CUDA cores: `gen_batch_decode_module(q, kv, o, idx, hd, hd, pos, window, cap)`
      (decode.py:2441); with tensor cores (fa3, or decode_tensor_cores) the batch prefill module
      of the resolved backend with head_dim for both (decode.py:2397)
  single prefill: `gen_single_prefill_module(backend, q, kv, o, hd_qk, hd_vo, pos, window, cap,
      fp16_qk_reduction)` (prefill.py:1527)
`auto` is resolved as supports() resolves it (kernels/flashinfer/support `auto_resolution`, asking
the library's own `determine_attention_backend`); a paged wrapper's sticky resolution can differ
from it, and anything not prebuilt is simply compiled on first use (and timed as compile by the adapter).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from kernels.flashinfer import lib as fl
from kernels.flashinfer.support import auto_resolution, case_auto_pick
from kernels.flashinfer.variants import split_backend
from scenarios.case import Case
from scenarios.dtypes import to_torch

POS_ENCODING_NONE = 0  # PosEncodingMode.NONE.value
# nvcc jobs per concurrent module build: a module has 4-13 source files (fa2 batch prefill: 8
# mask-mode kernels plus bindings), so a handful of jobs each keeps every core busy.
JOBS_PER_BUILD = 4


@dataclass(frozen=True)
class ModuleRequest:
    """One module a case will load: which generator, and its arguments (hashable, printable)."""

    generator: str  # "batch_prefill_fa2" | "batch_prefill" | "batch_decode" | "single_prefill" | "quantization"
    backend: str  # the resolved library backend ("fa2", "fa3")
    args: tuple  # (q, kv, o, [idx,] hd_qk, hd_vo, window, cap) as dtype names and ints/bools

    @property
    def label(self) -> str:
        return f"{self.generator}:{self.backend}:" + ",".join(str(a) for a in self.args)


@dataclass
class BuildResult:
    """What one prebuild did: modules asked, built (or already cached), seconds, and any error."""

    requested: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: Optional[str] = None

    def to_json(self) -> dict:
        return {"requested": self.requested, "seconds": self.seconds, "error": self.error}


def module_request(
    case: Case, backend: str, device: str, *, decode_tensor_cores: bool = False
) -> Optional[ModuleRequest]:
    """The module `case` loads under `backend` ("+graph" allowed); None for backends without JIT."""
    lib_backend, _ = split_backend(backend)
    tc = decode_tensor_cores or lib_backend == "fa3"
    resolved = lib_backend if lib_backend != "auto" else auto_resolution(case, lambda c: case_auto_pick(device, c), tc)
    if resolved not in ("fa2", "fa3"):
        return None  # cudnn, trtllm-gen, aiter: no per-case JIT module of this kind
    window, cap = case.window_left >= 0, case.logits_soft_cap > 0
    dt = (case.q_dtype, case.kv_dtype, case.o_dtype)
    if case.layout == "single":
        return ModuleRequest("single_prefill", resolved, (*dt, case.head_dim_qk, case.head_dim_vo, window, cap))
    if case.layout == "decode" and not tc:
        return ModuleRequest("batch_decode", resolved, (*dt, "int32", case.head_dim_qk, case.head_dim_qk, window, cap))
    gen = "batch_prefill_fa2" if resolved == "fa2" else "batch_prefill"
    return ModuleRequest(gen, resolved, (*dt, "int32", case.head_dim_qk, case.head_dim_vo, window, cap))


# Build order, slowest first: on the H200 fa3 batch prefill modules took 60-150 s each, four at a time
# (docs/evidence/2026-12-01-flashinfer-h200-session-3.md), while every fa2 module of the quick matrix
# built in ~110 s together (2026-11-30-flashinfer-h200-matrix.md). Queued last, as the matrix's
# first-seen order put them, the fa3 modules alone decided when a prebuild ended, the other cores idle.
BUILD_ORDER: tuple[tuple[str, str], ...] = (
    ("batch_prefill", "fa3"),
    ("single_prefill", "fa3"),
    ("batch_prefill_fa2", "fa2"),
    ("single_prefill", "fa2"),
)


def build_rank(req: ModuleRequest) -> int:
    """Where `req` goes in the build queue (BUILD_ORDER; anything else after it)."""
    key = (req.generator, req.backend)
    return BUILD_ORDER.index(key) if key in BUILD_ORDER else len(BUILD_ORDER)


# packbits/segment_packbits, which the adapter and plan() call for custom masks, are a JIT module
# of their own (quantization/packbits.py:28); seen built on first use in the middle of a run.
QUANTIZATION = ModuleRequest("quantization", "", ())


def requests_for(
    cases: Iterable[Case],
    backends: Iterable[str],
    device: str,
    supports: Callable[[Case, str], bool],
    *,
    decode_tensor_cores: bool = False,
) -> list[ModuleRequest]:
    """Unique module requests of every (case, backend) the adapter supports, in first-seen order;
    `decode_tensor_cores` as the adapters' option of that name (decode then loads a prefill module)."""
    out: dict[ModuleRequest, None] = {}
    for b in backends:
        for c in cases:
            if not supports(c, b):
                continue
            if c.mask == "custom":
                out.setdefault(QUANTIZATION, None)
            r = module_request(c, b, device, decode_tensor_cores=decode_tensor_cores)
            if r is not None:
                out.setdefault(r, None)
    return list(out)


def _torch_args(args: tuple) -> list[Any]:
    return [to_torch(a) if isinstance(a, str) and a != "int32" else a for a in args]


def jit_spec(req: ModuleRequest) -> Any:
    """The library's JitSpec for `req`, built by the generator plan() itself uses."""
    import torch

    from flashinfer.jit.attention import modules as m  # type: ignore[import-not-found]

    if req.generator == "quantization":
        from flashinfer.jit.quantization import gen_quantization_module  # type: ignore[import-not-found]

        return gen_quantization_module()
    q, kv, o, *rest = _torch_args(req.args)
    if req.generator == "single_prefill":
        hd_qk, hd_vo, window, cap = rest
        return m.gen_single_prefill_module(req.backend, q, kv, o, hd_qk, hd_vo, POS_ENCODING_NONE, window, cap, False)
    _idx, hd_qk, hd_vo, window, cap = rest
    idx = torch.int32
    if req.generator == "batch_decode":
        return m.gen_batch_decode_module(q, kv, o, idx, hd_qk, hd_vo, POS_ENCODING_NONE, window, cap)
    gen = m._gen_batch_prefill_primary_module if req.generator == "batch_prefill_fa2" else m.gen_batch_prefill_module
    return gen(req.backend, q, kv, o, idx, hd_qk, hd_vo, POS_ENCODING_NONE, window, cap, False)


def prebuild(requests: list[ModuleRequest], *, cores: Optional[int] = None) -> BuildResult:
    """Build `requests` concurrently, each through its own `JitSpec.build()`, before any case runs.

    Each spec is built by the very call plan() makes on first use (ninja in the spec's own build
    directory, under the spec's file lock), several specs at a time with the cores shared among
    them (MAX_JOBS per build). Not `build_jit_specs`: its single ninja log sits in the JIT root,
    so the per-spec ninja that plan() runs later finds no log entry for the outputs and rebuilds
    every one of them (seen on the H200 runner: 22 modules prebuilt in 110 s, then each compiled
    again on first use). A request whose generator refuses its arguments, or whose build fails, is
    reported and skipped; nothing raises: what is not prebuilt compiles on first use.
    """
    res = BuildResult(requested=[r.label for r in requests])
    if not requests:
        return res
    t0 = time.perf_counter()
    errors: list[str] = []
    try:
        fl.import_flashinfer()
    except Exception as e:
        res.error, res.seconds = f"{type(e).__name__}: {e}", time.perf_counter() - t0
        return res
    cores = cores or os.cpu_count() or 1
    workers = max(1, min(len(requests), cores // JOBS_PER_BUILD))
    saved = os.environ.get("MAX_JOBS")
    os.environ["MAX_JOBS"] = str(max(1, (cores + workers - 1) // workers + 2))  # a little oversubscribed

    def one(r: ModuleRequest) -> Optional[str]:
        try:
            jit_spec(r).build(need_lock=True)
            return None
        except Exception as e:
            return f"{r.label}: {type(e).__name__}: {e}"[-2000:]

    # Daemon threads, not a ThreadPoolExecutor: the interpreter joins an executor's workers at exit, so
    # a run whose time budget ran out during a prebuild sat until the build ended (seen on the H200:
    # killed by its step's timeout 120 s after its records and report were written).
    todo = sorted(enumerate(requests), key=lambda ir: build_rank(ir[1]))  # longest first: the last to end sets the time
    answers, lock = [None] * len(requests), threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                i, r = todo.pop(0)
            answers[i] = one(r)

    threads = [threading.Thread(target=worker, name=f"attncheck-jit-{k}", daemon=True) for k in range(workers)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        errors = [e for e in answers if e]
    finally:
        if saved is None:
            os.environ.pop("MAX_JOBS", None)
        else:
            os.environ["MAX_JOBS"] = saved
    res.error = "; ".join(errors) or None
    res.seconds = time.perf_counter() - t0
    return res


def supports_fn(target: Any, device: str, options: Optional[dict] = None) -> Callable[[Case, str], bool]:
    """`supports(case, backend)` answered by the adapter's own decision (made with the run's adapter
    `options`), without making wrappers."""
    made: dict[str, Any] = {}

    def supports(case: Case, backend: str) -> bool:
        if backend not in made:
            made[backend] = target.make(backend, device, **(options or {}))
        return bool(made[backend].supports(case).ok)

    return supports
