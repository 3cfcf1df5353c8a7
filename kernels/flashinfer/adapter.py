"""The `flashinfer` target: FlashInfer's four attention APIs behind one adapter, eager or CUDA graph.

    TARGET.backends("cuda")  -> ("fa2", "fa3", "auto", "fa2+graph", "fa3+graph", "auto+graph")   on an H200
                                ("fa2", "aiter", "auto", "fa2+graph", ...)                       on the ROCm fork
    TARGET.make("fa2", "cuda") -> FlashInferKernel (eager);  TARGET.make("fa2+graph", "cuda") (CUDA graph)
    TARGET.make("fa2", "cuda", graph=True) is the same as "fa2+graph".

Case.layout picks the API. An adapter keeps ONE long-lived wrapper per API and KV layout (in graph
mode also per model config and batch size, and per mask kind unless AdapterOptions.graph_wrappers is
"shared") and plans it again for every case, since lifecycle defects only show under reuse; fresh() is the control.
Library facts: lib.py; declines: support.py; JIT variants and timing: variants.py. The lifecycle, what
the library chose, the arguments, poisoning and the LSE base: docs/flashinfer-adapter.md, section
"`kernels/flashinfer/adapter.py`: lifecycle, observation, arguments"; graph-wrapper keying: its section
"Graph wrappers as engines allocate them".
"""

from __future__ import annotations

import mmap
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

import torch

from kernels import _env, skips
from kernels.flashinfer import lib as fl
from kernels.flashinfer.calls import LibraryCall, as_poisoned, as_zeros, host_copy
from kernels.errors import KernelUnavailable, UnknownBackend, UnsupportedCase
from kernels.flashinfer.support import case_auto_pick, decide
from kernels.flashinfer.variants import (
    GRAPH_SUFFIX,
    RunTiming,
    VariantKey,
    first_use,
    mark_used,
    split_backend,
    variant_key,
)
from kernels.protocol import LSE_BASE2, LSE_NATURAL, NOT_REPORTED, AttentionKernel, KernelOutput, Reason, Stage, Support
from scenarios.poison import poison
from scenarios.case import Case
from scenarios.dtypes import is_fp8, to_torch
from scenarios.errors import InvalidInputs
from scenarios.tensors import Inputs, fp8_descales, validate_inputs

TARGET_NAME = fl.TARGET  # "flashinfer"; TARGET (below) is the Target object
AUTO = "auto"
UNOBSERVED = "unobserved"  # single prefill under auto, when the library's module lookup was not seen
GRAPH_BACKENDS = ("fa2", "fa3", "aiter", "auto")  # listed with "+graph" where the eager one is offered
MASK_FORMS = ("bool", "packed", "packed_flat")
LSE_BASES = ("log2", "ln")
# CUDA-graph wrapper keying (docs/flashinfer-adapter.md, "Graph wrappers as engines allocate them"):
# "per_mask": per (API, KV layout, model config, batch size, mask kind), mask buffers on the masked ones only,
#     as SGLang keys its target-verify and draft-extend wrappers; "shared": per (API, KV layout, model config,
#     batch size), every paged/ragged wrapper built with custom_mask_buf/mask_indptr_buf and re-planned masked
#     and unmasked; "any_model": "per_mask" without the model config (the library's own lifecycle across models).
GRAPH_WRAPPERS = ("per_mask", "shared", "any_model")
MASK_BUFFER_APIS = ("paged", "ragged")  # the graph wrappers that take custom_mask_buf/mask_indptr_buf
WORKSPACE_BYTES = 128 * 2**20  # the wrappers' recommended float workspace (their docstrings)


@dataclass(frozen=True)
class AdapterOptions:
    """Case-independent choices of one adapter (documented in docs/flashinfer-adapter.md).

    mask_form: "bool" | "packed" | "packed_flat" -- which custom-mask argument plan() gets.
    lse_base: "log2" | "ln" -- passed to run() where it takes lse_base (paged, ragged upstream).
    decode_tensor_cores: BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=...); forced on for fa3,
        whose decode path exists only with tensor cores (decode.py _plan_impl).
    graph_max_pages / graph_max_mask_bytes: initial size of the graph-mode fixed buffers
        paged_kv_indices_buf and custom_mask_buf; doubled (new wrapper) when a case needs more.
    graph_wrappers: "per_mask" | "shared" | "any_model" -- how graph-mode wrappers are keyed (GRAPH_WRAPPERS).
        "shared" drives what FlashInfer's docstring allows and engines avoid: FlashInfer runs MaskMode.CUSTOM on
        every plan of a wrapper holding custom_mask_buf (0.7.2 prefill.py:4382, :6405), unmasked ones included.
        "any_model" keys as "per_mask" without the model config: one wrapper re-planned across dtypes and head
        dims, which no engine does but the library's own graph lifecycle defines (routing spec tests).
    """

    mask_form: str = "bool"
    lse_base: str = "log2"
    decode_tensor_cores: bool = False
    workspace_bytes: int = WORKSPACE_BYTES
    graph_max_pages: int = 1 << 14
    graph_max_mask_bytes: int = 1 << 20
    graph_wrappers: str = "per_mask"

    def __post_init__(self) -> None:
        if self.mask_form not in MASK_FORMS:
            raise ValueError(f"mask_form={self.mask_form!r}: expected one of {MASK_FORMS}")
        if self.lse_base not in LSE_BASES:
            raise ValueError(f"lse_base={self.lse_base!r}: expected one of {LSE_BASES}")
        if self.graph_wrappers not in GRAPH_WRAPPERS:
            raise ValueError(f"graph_wrappers={self.graph_wrappers!r}: expected one of {GRAPH_WRAPPERS}")


def zeroed_workspace(nbytes: int, device: str) -> torch.Tensor:
    """A zeroed uint8 workspace. On the CPU (the stand-in libraries' device) a private anonymous mapping, which
    the kernel zero-fills page by page as it is touched (and copies on write after a fork, as it does malloc's
    memory): torch.zeros would write every page of the 128 MiB for each wrapper, which a stand-in never reads."""
    if nbytes > 0 and _env.device_type(device) == "cpu":
        pages = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        return torch.frombuffer(pages, dtype=torch.uint8)
    return torch.zeros(nbytes, dtype=torch.uint8, device=device)


def graph_wrapper_key(case: Case, graph: bool, options: AdapterOptions) -> tuple:
    """Which library wrapper of an adapter serves `case`: per API and KV layout; in graph mode also per
    model config (dtypes and head dims: an engine captures per model, and the first plan pins the backend;
    not with graph_wrappers="any_model"), per batch size (fixed at construction) and, unless
    graph_wrappers="shared", per mask kind."""
    key: tuple = (case.layout, case.kv_layout)
    if not graph:
        return key
    if options.graph_wrappers != "any_model":
        key += (case.q_dtype, case.kv_dtype, case.head_dim_qk, case.head_dim_vo)
    key += (case.batch_size,)
    return key if options.graph_wrappers == "shared" else key + (case.mask,)


def mask_buffer_held(case: Case, graph: bool, options: AdapterOptions) -> bool:
    """Whether the wrapper serving `case` was built with custom_mask_buf: then FlashInfer's selector sees
    use_custom_mask (0.7.2 prefill.py:3674, :5532; 0.7.4 :3827, :6394) and run() MaskMode.CUSTOM for every
    plan of it, masked or not."""
    if not graph or case.layout not in MASK_BUFFER_APIS:
        return False
    return options.graph_wrappers == "shared" or case.mask == "custom"


# ---- Inputs -> library arguments --------------------------------------------------------------


def folded_custom_mask(inputs: Inputs) -> torch.Tensor:
    """The case's custom mask ANDed with its causal (bottom-right) and window masks: flat bool.

    The adapter's own code (not oracle/masks.py): request i, query row r, key j keeps
    j <= r + kv - qo (causal) and j >= r + kv - qo - window_left (window).
    """
    c = inputs.case
    dev = inputs.device
    parts = []
    for i, (qo, kv) in enumerate(zip(c.qo_lens, c.kv_lens)):
        m = inputs.request_mask(i)
        assert m is not None
        m = m.to(torch.bool)
        if qo > 0 and kv > 0 and (c.causal or c.window_left >= 0):
            diag = torch.arange(qo, device=dev).view(-1, 1) + (kv - qo)
            key = torch.arange(kv, device=dev).view(1, -1)
            if c.causal:
                m = m & (key <= diag)
            if c.window_left >= 0:
                m = m & (key >= diag - c.window_left)
        parts.append(m.reshape(-1))
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.bool, device=dev)


def packed_mask_bytes(case: Case, form: str) -> int:
    """Bytes of the packed mask plan() will store (segment-packed, or packed as one flat array)."""
    if case.mask != "custom":
        return 0
    sizes = [q * k for q, k in zip(case.qo_lens, case.kv_lens)]
    if form == "packed_flat":
        return (sum(sizes) + 7) // 8
    return sum((s + 7) // 8 for s in sizes)


def mask_arguments(lib: Any, inputs: Inputs, form: str) -> dict[str, Any]:
    """{} or {"custom_mask": ...} or {"packed_custom_mask": ...} per `form` (docs/flashinfer-adapter.md)."""
    c = inputs.case
    if c.mask != "custom":
        return {}
    flat = folded_custom_mask(inputs)
    if form == "bool":
        return {"custom_mask": flat}
    if form == "packed" and c.layout != "single":
        assert inputs.mask_indptr is not None
        indptr = inputs.mask_indptr.to(device=flat.device, dtype=torch.int32)
        packed, _ = lib.segment_packbits(flat, indptr, "little")
        return {"packed_custom_mask": packed}
    return {"packed_custom_mask": lib.packbits(flat, "little")}


def _descales(case: Case) -> tuple[Optional[float], Optional[float], Optional[float]]:
    """(q, k, v) descales as run() takes them: None where the tensor is not fp8 or the Case gives none."""
    qs, ks, vs = fp8_descales(case)
    return (
        qs if is_fp8(case.q_dtype) else None,
        ks if is_fp8(case.kv_dtype) else None,
        vs if is_fp8(case.kv_dtype) else None,
    )


def fp8_arguments(
    case: Case, resolved: str, facts: fl.LibFacts, device: torch.device
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Positional extras and keyword arguments that carry Case.q_scale/k_scale/v_scale to run().

    paged, decode (upstream): q_scale/k_scale/v_scale floats. The library FOLDS q_scale*k_scale into
        sm_scale (prefill.py:4324-4326 for every backend but cudnn, which takes them itself;
        decode.py:2908-2910) and multiplies the output by v_scale after the kernel
        (prefill.py:4631, decode.py:3318; trtllm-gen decode applies it in-kernel as bmm2).
    ragged (upstream): an fp8 QUERY on fa2/fa3 takes the descales positionally (*args ->
        ragged_run's scale_q/scale_k/scale_v, prefill.py:6461; floats become the FP8 variant's
        scalar descales via _split_scale_param); the q_scale/k_scale/v_scale keywords are then
        ignored (apply_kv_scales is False, prefill.py:5999). A 16-bit query over fp8 KV takes
        k_scale (folded into sm_scale, :6006) and v_scale (output, :6469) as keywords; cudnn takes
        all three keywords.
    single (upstream): an fp8 query takes scale_q/scale_k/scale_v as per-head float32 tensors
        ([num_qo_heads], [num_kv_heads], [num_kv_heads], its docstring); 16-bit q over fp8 KV takes
        k_scale (folded into sm_scale, prefill.py:1520) and v_scale (output, :1570).
    ROCm fork paged run(): scale_q/scale_k/scale_v, one float32 element each on q's device, and
        never the float q/k/v_scale with an fp8 query (rocm_fork.md section 4: ValueError).
    """
    if not case.is_fp8:
        return (), {}
    qs, ks, vs = _descales(case)
    api = case.layout
    if facts.fork:
        if api == "paged" and facts.fork_scale_kw:
            one = lambda x: torch.tensor([1.0 if x is None else x], dtype=torch.float32, device=device)  # noqa: E731
            return (), {"scale_q": one(qs), "scale_k": one(ks), "scale_v": one(vs)}
        return (), {"q_scale": qs, "k_scale": ks, "v_scale": vs}
    if api in ("paged", "decode"):
        return (), {"q_scale": qs, "k_scale": ks, "v_scale": vs}
    if api == "ragged":
        if is_fp8(case.q_dtype) and resolved != "cudnn":
            return (1.0 if qs is None else qs, 1.0 if ks is None else ks, 1.0 if vs is None else vs), {}
        return (), {"q_scale": qs, "k_scale": ks, "v_scale": vs}
    # single
    if is_fp8(case.q_dtype):
        full = lambda n, x: torch.full((n,), 1.0 if x is None else x, dtype=torch.float32, device=device)  # noqa: E731
        return (), {
            "scale_q": full(case.num_qo_heads, qs),
            "scale_k": full(case.num_kv_heads, ks),
            "scale_v": full(case.num_kv_heads, vs),
        }
    return (), {"k_scale": ks, "v_scale": vs}


def resolved_backend_of(api: str, wrapper: Any) -> str:
    """The backend a wrapper says it resolved to (which attribute: docs/flashinfer-adapter.md, per API)."""
    if api == "decode" and isinstance(getattr(type(wrapper), "resolved_backend", None), property):
        return str(wrapper.resolved_backend)
    for attr in ("_backend", "backend"):
        if hasattr(wrapper, attr):
            return str(getattr(wrapper, attr))
    return "unknown"


def fallback_reason_of(wrapper: Any) -> Reason:
    """The fork's backend_fallback_reason (None = no fallback), or NOT_REPORTED where there is none."""
    if wrapper is not None and hasattr(wrapper, "backend_fallback_reason"):
        r = wrapper.backend_fallback_reason
        return None if r is None else str(r)
    return NOT_REPORTED


# ---- CUDA graphs (replaceable: the CPU tests substitute the fake's recorder) --------------------


class TorchGraphs:
    """Warm-up, capture and replay through torch.cuda.CUDAGraph."""

    def warmup(self, fn: Callable[[], Any]) -> None:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()

    def capture(self, fn: Callable[[], Any]) -> Any:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        return g

    def replay(self, graph: Any) -> None:
        graph.replay()
        torch.cuda.synchronize()


@dataclass
class _Capture:
    graph: Any
    signature: tuple
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    out: torch.Tensor
    lse: Optional[torch.Tensor]


@dataclass
class _GraphSlot:
    key: tuple  # graph_wrapper_key: (api, kv_layout, dtypes, head dims, batch_size[, mask kind])
    wrapper: Any
    name: str  # as records name it (FlashInferKernel.last_wrapper)
    max_pages: int
    max_mask_bytes: int
    captures: dict = field(default_factory=dict)


@dataclass
class _Planned:
    inputs: Inputs
    variant: VariantKey
    first_use: bool
    plan_s: float
    wrapper: Any = None  # None for single prefill
    slot: Optional[_GraphSlot] = None
    mask_kwargs: dict = field(default_factory=dict)
    resolved_after_plan: str = ""


def _kv_rows(t: torch.Tensor, case: Case) -> int:
    """Length of the KV storage along the axis static buffers grow on (pages, or tokens)."""
    if case.is_paged or case.kv_layout == "NHD":
        return int(t.shape[0])
    return int(t.shape[1])  # ragged/single HND: [H, N, D]


def _copy_kv(dst: torch.Tensor, src: torch.Tensor, case: Case) -> None:
    n = _kv_rows(src, case)
    if case.is_paged or case.kv_layout == "NHD":
        dst[:n].copy_(src)
    else:
        dst[:, :n].copy_(src)


def _widest_request_pages(inputs: Inputs) -> int:
    """The most KV pages one request of a paged batch holds (0 without a page table or requests)."""
    ip = inputs.kv_page_indptr
    if ip is None or ip.numel() < 2:
        return 0
    return int((ip[1:] - ip[:-1]).max())


class FlashInferKernel:
    """One FlashInfer backend on one device, eager or CUDA graph, serving all four layouts."""

    target = TARGET_NAME

    def __init__(
        self,
        backend: str,
        device: str,
        *,
        graph: bool = False,
        options: AdapterOptions = AdapterOptions(),
        graphs: Any = None,
    ) -> None:
        lib_backend, suffixed = split_backend(backend)
        self.library_backend = lib_backend
        self.graph = graph or suffixed
        self.backend = lib_backend + (GRAPH_SUFFIX if self.graph else "")
        self.device = device
        self.options = options
        self._graphs = graphs if graphs is not None else TorchGraphs()
        self._wrappers: dict[tuple, Any] = {}
        self._slots: dict[tuple, _GraphSlot] = {}
        self._graph_wrappers_made = 0
        # The wrapper the last plan() used, named for the records ("paged/NHD"; in graph mode with its
        # batch size, mask kind and a number that grows when the slot's wrapper is replaced).
        self.last_wrapper: Optional[str] = None
        self._workspaces: list[torch.Tensor] = []
        self._planned: Optional[_Planned] = None
        self._support: dict[Case, Support] = {}
        self.timings: list[RunTiming] = []
        self.graph_events: list[str] = []
        self.last_run: dict[str, Any] = {}
        # A list to log every library call into (kernels/flashinfer/calls.py); eager mode only.
        self.call_log: Optional[list[LibraryCall]] = None
        self._labels: dict[int, str] = {}

    def __repr__(self) -> str:
        return f"FlashInferKernel(backend={self.backend!r}, device={self.device!r}, options={self.options})"

    def fresh(self) -> "FlashInferKernel":
        """A control adapter: same backend, mode and options, brand-new wrappers, no history."""
        return FlashInferKernel(
            self.library_backend, self.device, graph=self.graph, options=self.options, graphs=self._graphs
        )

    def close(self) -> None:
        """Drop every library wrapper, captured graph and workspace at once (protocol.release); a later plan
        builds new ones, as a fresh adapter would."""
        self._wrappers.clear()
        self._slots.clear()
        self._workspaces.clear()
        self._planned = None

    @property
    def last_timing(self) -> Optional[RunTiming]:
        return self.timings[-1] if self.timings else None

    # ---- library facts ------------------------------------------------------------------------
    def _lib(self) -> Any:
        return fl.import_flashinfer()

    def _facts(self) -> fl.LibFacts:
        return fl.lib_facts(self.device)

    def _auto_pick(self, case: Case) -> Optional[str]:
        return case_auto_pick(self.device, case)

    def _decode_tensor_cores(self) -> bool:
        return self.options.decode_tensor_cores or self.library_backend == "fa3"

    # ---- which wrapper serves a case (read by the scenario machines) ---------------------------
    def wrapper_key(self, case: Case) -> tuple:
        """The key of the library wrapper that plans `case` (graph_wrapper_key); a "new graph wrapper" event
        in graph_events means the key's wrapper was replaced."""
        return graph_wrapper_key(case, self.graph, self.options)

    def mask_buffer_held(self, case: Case) -> bool:
        """Whether that wrapper holds custom_mask_buf, so the library sees a mask whatever `case` says."""
        return mask_buffer_held(case, self.graph, self.options)

    # ---- support ------------------------------------------------------------------------------
    def supports(self, case: Case) -> Support:
        if case not in self._support:
            self._support[case] = self._decide(case)
        return self._support[case]

    def _decide(self, case: Case) -> Support:
        if _env.device_type(self.device) == "cuda" and not _env.cuda_available():
            return Support.no(
                skips.detail(skips.DEVICE_BACKEND, f"{self.device} requested but torch sees no CUDA device")
            )
        try:
            facts = self._facts()
        except KernelUnavailable as e:
            return Support.no(skips.detail(skips.DEVICE_BACKEND, e.reason))
        if self.library_backend != AUTO and self.library_backend not in facts.eager_backends():
            return Support.no(
                skips.detail(
                    skips.DEVICE_BACKEND, f"flashinfer {facts.version} offers {facts.eager_backends()} on {self.device}"
                )
            )
        try:
            return decide(
                case,
                self.library_backend,
                graph=self.graph,
                facts=facts,
                auto_pick=self._auto_pick,
                decode_tensor_cores=self._decode_tensor_cores(),
                capability=_env.device_capability(self.device),
            )
        except Exception as e:  # supports() never raises
            return Support.no(skips.detail(skips.LIBRARY_REFUSED, f"support check failed: {type(e).__name__}: {e}"))

    # ---- the call log -------------------------------------------------------------------------
    def _logging(self) -> bool:
        return self.call_log is not None and not self.graph

    def _log_call(self, on: Any, method: str, args: tuple, kwargs: dict, result: Optional[str] = None) -> None:
        assert self.call_log is not None
        label = on if isinstance(on, str) else self._labels.get(id(on), "unlabelled")
        self.call_log.append(LibraryCall(label, method, host_copy(args), host_copy(kwargs), result))

    def _construct(self, cls: Any, workspace: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        w = cls(workspace, *args, **kwargs)
        if self._logging():
            self._labels[id(w)] = label = f"w{len(self._labels) + 1}"
            self._log_call("flashinfer", cls.__name__, (as_zeros(workspace), *args), kwargs, label)
        return w

    # ---- wrappers -----------------------------------------------------------------------------
    def _workspace(self) -> torch.Tensor:
        # Zero-initialised: BatchDecode's float workspace "Must be initialized to 0 for its first use".
        ws = zeroed_workspace(self.options.workspace_bytes, self.device)
        self._workspaces.append(ws)
        return ws

    def _wrapper_class(self, api: str) -> Any:
        name = {"paged": fl.PAGED_WRAPPER, "ragged": fl.RAGGED_WRAPPER, "decode": fl.DECODE_WRAPPER}[api]
        return getattr(self._lib(), name)

    def _eager_wrapper(self, api: str, kv_layout: str) -> Any:
        key = (api, kv_layout)
        if key not in self._wrappers:
            cls = self._wrapper_class(api)
            kw: dict[str, Any] = {"backend": self.library_backend}
            if api == "decode":
                kw["use_tensor_cores"] = self._decode_tensor_cores()
            self._wrappers[key] = self._construct(cls, self._workspace(), kv_layout, **kw)
        return self._wrappers[key]

    def _graph_wrapper(
        self, api: str, kv_layout: str, batch: int, mask_buffers: bool, max_pages: int, max_mask_bytes: int
    ) -> Any:
        cls = self._wrapper_class(api)
        dev = self.device

        def i32(n: int) -> torch.Tensor:
            return torch.zeros(n, dtype=torch.int32, device=dev)

        ws = self._workspace()
        if api == "paged":
            return cls(
                ws,
                kv_layout,
                use_cuda_graph=True,
                qo_indptr_buf=i32(batch + 1),
                paged_kv_indptr_buf=i32(batch + 1),
                paged_kv_indices_buf=i32(max_pages),
                paged_kv_last_page_len_buf=i32(batch),
                custom_mask_buf=torch.zeros(max_mask_bytes, dtype=torch.uint8, device=dev) if mask_buffers else None,
                mask_indptr_buf=i32(batch + 1) if mask_buffers else None,
                backend=self.library_backend,
            )
        if api == "ragged":
            return cls(
                ws,
                kv_layout,
                use_cuda_graph=True,
                qo_indptr_buf=i32(batch + 1),
                kv_indptr_buf=i32(batch + 1),
                custom_mask_buf=torch.zeros(max_mask_bytes, dtype=torch.uint8, device=dev) if mask_buffers else None,
                mask_indptr_buf=i32(batch + 1) if mask_buffers else None,
                backend=self.library_backend,
            )
        return cls(
            ws,
            kv_layout,
            use_cuda_graph=True,
            use_tensor_cores=self._decode_tensor_cores(),
            paged_kv_indptr_buffer=i32(batch + 1),
            paged_kv_indices_buffer=i32(max_pages),
            paged_kv_last_page_len_buffer=i32(batch),
            backend=self.library_backend,
        )

    def _graph_slot(self, inputs: Inputs) -> _GraphSlot:
        """The graph wrapper for this case; a new one (recorded) when the case outgrows the old."""
        c = inputs.case
        key = self.wrapper_key(c)
        buffers = self.mask_buffer_held(c)
        pages = int(inputs.kv_page_indices.numel()) if inputs.kv_page_indices is not None else 0
        # A wrapper holding mask buffers reads custom_mask_buf for every plan (MaskMode.CUSTOM), an unmasked
        # one too: size it for the bytes this batch's mask spans either way.
        mask_bytes = packed_mask_bytes(c.replace(mask="custom") if buffers else c, self.options.mask_form)
        slot = self._slots.get(key)
        why = []
        if slot is not None:
            if pages > slot.max_pages:
                why.append(f"{pages} page indices > paged_kv_indices_buf {slot.max_pages}")
            if buffers and mask_bytes > slot.max_mask_bytes:
                why.append(f"{mask_bytes} packed mask bytes > custom_mask_buf {slot.max_mask_bytes}")
            fixed = getattr(slot.wrapper, "_max_total_num_rows", None)
            if c.layout != "decode" and fixed is not None and c.total_qo > fixed:
                why.append(f"{c.total_qo} query rows > the {fixed} the wrapper's first plan fixed")
            # cuDNN paged prefill builds a [batch, widest request's pages] block table at the first plan and
            # raises when a later one needs it wider (prefill.py:3872-3890; seen on the H200:
            # docs/evidence/2026-12-01-flashinfer-h200-session-4.md)
            table = getattr(slot.wrapper, "_cudnn_block_tables", None) if c.layout == "paged" else None
            if table is not None and (widest := _widest_request_pages(inputs)) > table.shape[1]:
                why.append(
                    f"a request of {widest} pages > the cuDNN block table's {table.shape[1]} the first plan fixed"
                )
        if slot is None or why:
            max_pages = max(self.options.graph_max_pages, slot.max_pages if slot else 0)
            max_mask = max(self.options.graph_max_mask_bytes, slot.max_mask_bytes if slot else 0)
            while max_pages < pages:
                max_pages *= 2
            while max_mask < mask_bytes:
                max_mask *= 2
            wrapper = self._graph_wrapper(c.layout, c.kv_layout, c.batch_size, buffers, max_pages, max_mask)
            if slot is not None:
                self.graph_events.append(f"new graph wrapper for {key}: " + "; ".join(why))
            else:
                self.graph_events.append(f"graph wrapper for {key}: {max_pages} pages, {max_mask} mask bytes")
            self._graph_wrappers_made += 1
            shared = self.options.graph_wrappers == "shared"
            kind = "" if shared else ("/masked" if c.mask == "custom" else "/unmasked")
            name = f"graph:{c.layout}/{c.kv_layout}/b{c.batch_size}{kind}#{self._graph_wrappers_made}"
            slot = _GraphSlot(key=key, wrapper=wrapper, name=name, max_pages=max_pages, max_mask_bytes=max_mask)
            self._slots[key] = slot
        return slot

    # ---- plan ---------------------------------------------------------------------------------
    def _check_inputs(self, inputs: Inputs) -> None:
        want = torch.device(self.device)
        got = inputs.device
        if got.type != want.type or (want.index is not None and got.index != want.index):
            raise InvalidInputs(
                "inputs.device",
                str(got),
                f"tensors on {self.device}, the adapter's device",
                f"materialise the case with device={self.device!r} or make the adapter for {got}",
            )
        validate_inputs(inputs)

    def _i32(self, t: Optional[torch.Tensor]) -> torch.Tensor:
        assert t is not None
        return t.to(device=self.device, dtype=torch.int32)

    def _sync(self) -> None:
        if torch.device(self.device).type == "cuda":
            torch.cuda.synchronize(self.device)

    def plan(self, inputs: Inputs) -> None:
        self._check_inputs(inputs)
        c = inputs.case
        sup = self.supports(c)
        if not sup.ok:
            raise UnsupportedCase(TARGET_NAME, self.backend, c.id, sup.reason)
        variant = variant_key(c, self.backend, decode_tensor_cores=self._decode_tensor_cores())
        first = first_use(variant)
        lib = self._lib()
        self._planned = None
        self.last_wrapper = None
        mask_kw = mask_arguments(lib, inputs, self.options.mask_form)
        t0 = time.perf_counter()
        wrapper, slot = None, None
        if c.layout != "single":
            if self.graph:
                slot = self._graph_slot(inputs)
                wrapper, self.last_wrapper = slot.wrapper, slot.name
            else:
                wrapper, self.last_wrapper = self._eager_wrapper(c.layout, c.kv_layout), f"{c.layout}/{c.kv_layout}"
            self._plan_wrapper(wrapper, inputs, mask_kw)
        self._sync()
        plan_s = time.perf_counter() - t0
        self._planned = _Planned(
            inputs=inputs,
            variant=variant,
            first_use=first,
            plan_s=plan_s,
            wrapper=wrapper,
            slot=slot,
            mask_kwargs=mask_kw,
            resolved_after_plan=resolved_backend_of(c.layout, wrapper) if wrapper is not None else "",
        )

    def _plan_wrapper(self, w: Any, inputs: Inputs, mask_kw: dict[str, Any]) -> None:
        c = inputs.case

        def plan(*args: Any, **kwargs: Any) -> Any:
            if self._logging():
                self._log_call(w, "plan", args, kwargs)
            return w.plan(*args, **kwargs)

        dts = dict(q_data_type=to_torch(c.q_dtype), kv_data_type=to_torch(c.kv_dtype), o_data_type=to_torch(c.o_dtype))
        cap = c.logits_soft_cap if c.logits_soft_cap > 0 else None
        if c.layout == "paged":
            plan(
                self._i32(inputs.qo_indptr),
                self._i32(inputs.kv_page_indptr),
                self._i32(inputs.kv_page_indices),
                self._i32(inputs.kv_last_page_len),
                c.num_qo_heads,
                c.num_kv_heads,
                c.head_dim_qk,
                c.page_size,
                **fl.kwargs_for(
                    w.plan,
                    head_dim_vo=c.head_dim_vo,
                    causal=c.causal,
                    sm_scale=c.scale,
                    window_left=c.window_left,
                    logits_soft_cap=cap,
                    **mask_kw,
                    **dts,
                ),
            )
        elif c.layout == "ragged":
            plan(
                self._i32(inputs.qo_indptr),
                self._i32(inputs.kv_indptr),
                c.num_qo_heads,
                c.num_kv_heads,
                c.head_dim_qk,
                **fl.kwargs_for(
                    w.plan,
                    head_dim_vo=c.head_dim_vo,
                    causal=c.causal,
                    sm_scale=c.scale,
                    window_left=c.window_left,
                    logits_soft_cap=cap,
                    **mask_kw,
                    **dts,
                ),
            )
        else:  # decode: no causal (one query row: bottom-right causal is a no-op), no mask, one head_dim
            plan(
                self._i32(inputs.kv_page_indptr),
                self._i32(inputs.kv_page_indices),
                self._i32(inputs.kv_last_page_len),
                c.num_qo_heads,
                c.num_kv_heads,
                c.head_dim_qk,
                c.page_size,
                **fl.kwargs_for(w.plan, window_left=c.window_left, logits_soft_cap=cap, sm_scale=c.scale, **dts),
            )

    # ---- run ----------------------------------------------------------------------------------
    def _lse_base(self, api: str, facts: fl.LibFacts) -> tuple[Optional[str], float]:
        """(the lse_base argument to pass or None, the base the returned LSE is in)."""
        if facts.lse_base_kw.get(api, False):
            return self.options.lse_base, (LSE_NATURAL if self.options.lse_base == "ln" else LSE_BASE2)
        return None, LSE_BASE2

    def _want_lse(self, case: Case, facts: fl.LibFacts) -> bool:
        # The ROCm fork's fp8 prefill cannot produce LSE (NotImplementedError, rocm_fork.md section 4):
        # run without it and return lse=None, as an adapter without LSE does.
        return case.return_lse and not (facts.fork and case.is_fp8)

    def run(self, inputs: Inputs) -> KernelOutput:
        p = self._planned
        if p is None or not _same_inputs(p.inputs, inputs):
            self.plan(inputs)
            p = self._planned
        assert p is not None
        c = inputs.case
        facts = self._facts()
        want_lse = self._want_lse(c, facts)
        lse_arg, lse_base = self._lse_base(c.layout, facts)
        self.last_run = {"case_id": c.id, "poison_effective": True, "resolved_after_plan": p.resolved_after_plan}
        capture_s, captured, replayed = 0.0, False, False
        if c.layout == "single":
            out, lse, resolved, run_s = self._run_single(inputs, p, want_lse)
            reason: Reason = NOT_REPORTED
        else:
            resolved_now = resolved_backend_of(c.layout, p.wrapper)
            args, kw = fp8_arguments(c, resolved_now, facts, inputs.device)
            if lse_arg is not None:
                kw["lse_base"] = lse_arg
            if self.graph:
                out, lse, run_s, capture_s, captured = self._run_graph(inputs, p, args, kw, want_lse)
                replayed = True
            else:
                t0 = time.perf_counter()
                out, lse = self._run_eager(inputs, p.wrapper, args, kw, want_lse)
                self._sync()
                run_s = time.perf_counter() - t0
            resolved = resolved_backend_of(c.layout, p.wrapper)
            reason = fallback_reason_of(p.wrapper)
        mark_used(p.variant)
        self.timings.append(
            RunTiming(
                variant=p.variant,
                first_use=p.first_use,
                plan_s=p.plan_s,
                run_s=run_s,
                capture_s=capture_s,
                captured=captured,
                replayed=replayed,
            )
        )
        self.last_run.update(resolved=resolved, reason=reason, lse_base=lse_base)
        # The plan is used up for timing purposes: a second run() of the same plan is not a first use.
        self._planned = replace(p, first_use=False, plan_s=0.0)
        return KernelOutput(
            out=out, lse=lse if want_lse else None, lse_base=lse_base, resolved_backend=resolved, fallback_reason=reason
        )

    def route_after_failed_run(self, inputs: Inputs) -> Optional[tuple[str, Reason]]:
        """What plan() resolved `inputs` to, when plan() returned and run() then raised; None otherwise.

        Upstream resolves `auto` in plan() and run() uses it (prefill.py:3669-3678, decode.py:2375), so the
        backend read after plan is the one the failed run meant; a record of the failure can then still be
        checked against the routing spec. The ROCm fork re-checks in run() (rocm_fork.md section 7): what
        plan() chose there is not what run() would have used, and nothing is claimed.
        """
        p = self._planned
        if p is None or not p.resolved_after_plan or not _same_inputs(p.inputs, inputs) or self._facts().fork:
            return None
        return p.resolved_after_plan, NOT_REPORTED

    def bench_call(self, inputs: Inputs) -> Callable[[], Any]:
        """The library's run() alone, for timing (conformance/sweep.py): planned once, out= allocated once.

        Eager wrappers only (paged, ragged, decode) and no LSE: a timed interval then holds the kernels
        run() launches and nothing of the adapter's (no poisoning, no synchronisation, no copies).
        Graph mode and single prefill time through run().
        """
        c = inputs.case
        self.plan(inputs)
        if self.graph or c.layout == "single":
            return lambda: self.run(inputs)
        p = self._planned
        assert p is not None and p.wrapper is not None
        facts = self._facts()
        args, kw = fp8_arguments(c, resolved_backend_of(c.layout, p.wrapper), facts, inputs.device)
        out, _ = self._buffers(c, c.total_qo, False)
        w = p.wrapper
        return lambda: self._call_run(w, c, inputs.q, inputs.k, inputs.v, args, kw, out, None, False)

    def _buffers(self, case: Case, rows: int, want_lse: bool) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        out = poison(
            torch.empty((rows, case.num_qo_heads, case.head_dim_vo), dtype=to_torch(case.o_dtype), device=self.device)
        )
        lse = (
            poison(torch.empty((rows, case.num_qo_heads), dtype=torch.float32, device=self.device))
            if want_lse
            else None
        )
        return out, lse

    def _call_run(
        self,
        w: Any,
        case: Case,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        args: tuple,
        kw: dict[str, Any],
        out: torch.Tensor,
        lse: Optional[torch.Tensor],
        want_lse: bool,
    ) -> Any:
        kw = dict(kw, out=out, return_lse=want_lse)
        if want_lse:
            kw["lse"] = lse
        kw = fl.kwargs_for(w.run, **kw)
        pos = (q, k, v, *args) if case.layout == "ragged" else (q, (k, v), *args)
        if self._logging():
            self._log_call(
                w, "run", pos, dict(kw, out=as_poisoned(out), **({"lse": as_poisoned(lse)} if want_lse else {}))
            )
        return w.run(*pos, **kw)

    def _run_eager(
        self, inputs: Inputs, w: Any, args: tuple, kw: dict[str, Any], want_lse: bool
    ) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        c = inputs.case
        out, lse = self._buffers(c, c.total_qo, want_lse)
        res = self._call_run(w, c, inputs.q, inputs.k, inputs.v, args, kw, out, lse, want_lse)
        out_r, lse_r = (res[0], res[1]) if want_lse else (res, None)
        self.last_run["poison_effective"] = out_r is out and (lse_r is lse)
        return out_r, lse_r

    def _run_graph(
        self, inputs: Inputs, p: _Planned, args: tuple, kw: dict[str, Any], want_lse: bool
    ) -> tuple[torch.Tensor, Optional[torch.Tensor], float, float, bool]:
        c = inputs.case
        slot = p.slot
        assert slot is not None
        sig = (
            p.variant,
            c.causal,
            c.window_left,
            c.logits_soft_cap,
            c.scale,
            c.num_qo_heads,
            c.num_kv_heads,
            c.page_size,
            want_lse,
            kw.get("lse_base"),
            _descales(c),
            self.options.mask_form,
        )
        cap = slot.captures.get(sig)
        rows = c.total_qo
        fits = (
            cap is not None
            and rows <= cap.q.shape[0]
            and _kv_rows(inputs.k, c) <= _kv_rows(cap.k, c)
            and _kv_rows(inputs.v, c) <= _kv_rows(cap.v, c)
        )
        capture_s, captured = 0.0, False
        if not fits:
            if cap is not None:
                self.graph_events.append(f"re-capture for {slot.key}: inputs outgrow the static tensors")
            t0 = time.perf_counter()
            cap = self._capture(slot, inputs, sig, args, kw, want_lse)
            capture_s = time.perf_counter() - t0
            captured = True
        else:
            assert cap is not None
            cap.q[:rows].copy_(inputs.q)
            _copy_kv(cap.k, inputs.k, c)
            _copy_kv(cap.v, inputs.v, c)
        poison(cap.out)
        if cap.lse is not None:
            poison(cap.lse)
        t0 = time.perf_counter()
        self._graphs.replay(cap.graph)
        run_s = time.perf_counter() - t0
        out = cap.out[:rows].clone()
        lse = cap.lse[:rows].clone() if cap.lse is not None else None
        return out, lse, run_s, capture_s, captured

    def _capture(
        self, slot: _GraphSlot, inputs: Inputs, sig: tuple, args: tuple, kw: dict[str, Any], want_lse: bool
    ) -> _Capture:
        c = inputs.case
        q, k, v = inputs.q.clone(), inputs.k.clone(), inputs.v.clone()
        out, lse = self._buffers(c, c.total_qo, want_lse)
        w = slot.wrapper

        def launch() -> Any:
            return self._call_run(w, c, q, k, v, args, kw, out, lse, want_lse)

        self._graphs.warmup(launch)
        graph = self._graphs.capture(launch)
        cap = _Capture(graph=graph, signature=sig, q=q, k=k, v=v, out=out, lse=lse)
        slot.captures[sig] = cap
        self.graph_events.append(f"captured {slot.key} for {c.id}")
        return cap

    def _run_single(
        self, inputs: Inputs, p: _Planned, want_lse: bool
    ) -> tuple[torch.Tensor, Optional[torch.Tensor], str, float]:
        """single_prefill_with_kv_cache, observing the backend it resolves to; (out, lse, backend, call s).

        It allocates its own output (torch.empty, prefill.py single_prefill_with_kv_cache) and takes
        no out=/lse=. So, on CUDA, poisoned blocks of exactly the output's and LSE's size are
        allocated and freed just before the call; the caching allocator's best fit usually hands
        them back to the library, and when the returned tensors start at those addresses the
        unwritten-element check holds (last_run["poison_effective"] is True). Otherwise -- CPU, or
        the allocator chose other blocks -- it is False and unwritten elements cannot be told
        from written ones for this call.
        """
        c = inputs.case
        lib = self._lib()
        fn = getattr(lib, fl.SINGLE_FUNCTION)
        facts = self._facts()
        _, fp8_kw = fp8_arguments(c, self.library_backend, facts, inputs.device)
        kw = dict(
            p.mask_kwargs,
            causal=c.causal,
            kv_layout=c.kv_layout,
            sm_scale=c.scale,
            window_left=c.window_left,
            logits_soft_cap=c.logits_soft_cap if c.logits_soft_cap > 0 else None,
            backend=self.library_backend,
            return_lse=want_lse,
            o_dtype=to_torch(c.o_dtype),
            **fp8_kw,
        )
        if c.o_dtype == c.q_dtype and not fl.accepts(fn, "o_dtype"):
            kw.pop("o_dtype")
        kw = fl.kwargs_for(fn, **kw)
        seen: list[str] = []
        g, orig = fl.single_prefill_module_hook(fn)

        def observed(backend: Any, *a: Any, **k: Any) -> Any:
            seen.append(str(backend))
            return orig(backend, *a, **k)  # type: ignore[misc]

        on_cuda = inputs.device.type == "cuda"
        ptrs: list[int] = []
        if on_cuda:
            # Release cached free segments first, so that the decoys are the best fit left.
            torch.cuda.empty_cache()
            decoy_out, decoy_lse = self._buffers(c, c.total_qo, want_lse)
            ptrs = [decoy_out.data_ptr(), decoy_lse.data_ptr() if decoy_lse is not None else 0]
            del decoy_out, decoy_lse
        if orig is not None:
            g["get_single_prefill_module"] = observed
        try:
            if self._logging():
                self._log_call("flashinfer", fl.SINGLE_FUNCTION, (inputs.q, inputs.k, inputs.v), kw)
            t0 = time.perf_counter()  # the library call alone: the decoys above are not its cost
            res = fn(inputs.q, inputs.k, inputs.v, **kw)
            self._sync()
            call_s = time.perf_counter() - t0
        finally:
            if orig is not None:
                g["get_single_prefill_module"] = orig
        out, lse = (res[0], res[1]) if want_lse else (res, None)
        effective = on_cuda and out.data_ptr() == ptrs[0] and (lse is None or lse.data_ptr() == ptrs[1])
        self.last_run["poison_effective"] = bool(effective) or out.numel() == 0
        resolved = seen[-1] if seen else (self.library_backend if self.library_backend != AUTO else UNOBSERVED)
        return out, lse, resolved, call_s


def _same_inputs(a: Optional[Inputs], b: Inputs) -> bool:
    """Whether a plan made for `a` serves `b`: the same case and the very same index tensors."""
    if a is None or a.case != b.case:
        return False
    names = (
        "qo_indptr",
        "kv_indptr",
        "kv_page_indptr",
        "kv_page_indices",
        "kv_last_page_len",
        "custom_mask",
        "mask_indptr",
    )
    return all(getattr(a, n) is getattr(b, n) for n in names)


class FlashInferTarget:
    """The flashinfer target: backends offered on a device, adapters for them."""

    name = TARGET_NAME

    def available(self, device: str) -> Support:
        kind = _env.device_type(device)
        cpu_standin = kind == "cpu" and fl.loaded_standin() is not None  # kernels/standins/: runs on a CPU
        if kind != "cuda" and not cpu_standin:
            return Support.no(
                skips.detail(skips.DEVICE_BACKEND, f"{device}: flashinfer runs on CUDA (or ROCm) devices only")
            )
        if not fl.installed():
            return Support.no(skips.detail(skips.DEVICE_BACKEND, "the flashinfer package is not installed"))
        if kind == "cuda" and not _env.cuda_available():
            return Support.no(skips.detail(skips.DEVICE_BACKEND, f"{device}: torch sees no CUDA/ROCm device"))
        try:
            fl.import_flashinfer()
        except KernelUnavailable as e:
            return Support.no(skips.detail(skips.DEVICE_BACKEND, e.reason))
        return Support.yes()

    def backends(self, device: str) -> tuple[str, ...]:
        """Eager backends the library offers here, then "+graph" for fa2/fa3/aiter/auto among them."""
        if not self.available(device).ok:
            return ()
        eager = fl.lib_facts(device).eager_backends()
        return eager + tuple(b + GRAPH_SUFFIX for b in eager if b in GRAPH_BACKENDS)

    def make(self, backend: str, device: str, graph: bool = False, **options: Any) -> AttentionKernel:
        """An adapter; `backend` may carry "+graph" (or pass graph=True); options: AdapterOptions fields.

        Any offered eager backend may be asked for with "+graph", listed or not.
        """
        lib_backend, suffixed = split_backend(backend)
        offered = self.backends(device)
        if lib_backend not in offered:
            raise UnknownBackend(self.name, backend, offered, device)
        return FlashInferKernel(lib_backend, device, graph=graph or suffixed, options=AdapterOptions(**options))

    def versions(self) -> dict[str, str]:
        return fl.versions()

    def matrix(self, budget: str, seed: int = 0, device: str = "cpu") -> list[Case]:
        """The matrix designed around few JIT modules (kernels/flashinfer/matrix.py); `device`: its long cases."""
        from kernels.flashinfer import matrix as flashinfer_matrix

        return flashinfer_matrix.build(budget, seed, device)

    def stages(
        self, cases: list[Case], backends: list[str], device: str, options: Optional[dict] = None
    ) -> list[Stage]:
        """One stage per library backend family (fa2, fa3, auto, others), each with a parallel prebuild.

        fa2 first (cheapest modules, so results start early), then fa3, then auto (whose modules
        are mostly built by then); "+graph" joins its eager backend, sharing its modules. `options`
        are the run's adapter options: with decode_tensor_cores a decode case loads a prefill module.
        """
        from kernels.flashinfer import prebuild as pb

        order = {"fa2": 0, "fa3": 1, AUTO: 2}
        families: dict[str, list[str]] = {}
        for b in backends:
            families.setdefault(split_backend(b)[0], []).append(b)
        supports = pb.supports_fn(self, device, options)
        tc = bool((options or {}).get("decode_tensor_cores", False))
        jit = fl.loaded_standin() is None  # a stand-in compiles nothing
        out = []
        for fam in sorted(families, key=lambda f: (order.get(f, 3), f)):
            reqs = pb.requests_for(cases, families[fam], device, supports, decode_tensor_cores=tc) if jit else []
            out.append(
                Stage(fam, tuple(families[fam]), prepare=(lambda r=reqs: pb.prebuild(r).to_json()) if jit else None)
            )
        return out


TARGET = FlashInferTarget()
