"""What a maintainer needs beside each ledger entry, as data: root cause, controls, related reports, family.

`conformance/known_failures.py` says which records a defect explains; this module says why it is a defect and
where it lives, for `attncheck ledger report` (conformance/ledger_report.py) to write up. Per entry (`FACTS`):
the root cause with source lines per library version studied (`Cause`; read in the unpacked wheels, never
guessed: a version whose code differs says how), the controls that show the library disagreeing with itself
or its documentation, what a caller may expect, the upstream issues and pull requests looked up (`Related`;
`NONE_FOUND` when the search found none), and the family: entries of one root cause or one kind of input,
written up as one report (`FAMILIES`). Whether a version reproduces is not stated here: it comes from the
recorded `attncheck ledger verify` runs.
"""

from __future__ import annotations

from dataclasses import dataclass

SEARCHED = "2026-12-02"
NONE_FOUND = f"none found (searched flashinfer-ai/flashinfer issues and pull requests, {SEARCHED})"
# The library versions whose sources were read for every entry of a target.
STUDIED: dict[str, tuple[str, ...]] = {"flashinfer": ("0.7.2.post1", "0.7.4"), "torch": ("2.11.0+cu130", "2.13.0+cpu")}
# How sure the root cause is.
LOCATED = "located: the lines below produce what the script shows"
PROBABLE = "probable: the lines below explain what the script shows; not yet confirmed on the device"
NOT_LOCATED = "not located: the code that decides it is not among the sources read"
CERTAINTIES = (LOCATED, PROBABLE, NOT_LOCATED)


@dataclass(frozen=True)
class Cause:
    """Where the defect lives in one version's source: `lines` as "path:line[-line] what"; `differs` says how this
    version's code differs from the path that shows the defect ("" when it is the same path)."""

    version: str
    lines: tuple[str, ...]
    differs: str = ""


@dataclass(frozen=True)
class Related:
    """An upstream report, looked up: `ref` "owner/repo#N", its kind, title and state as seen on `SEARCHED`."""

    ref: str
    kind: str  # "issue" or "pull request"
    title: str
    state: str
    relation: str  # what it has to do with the entry


@dataclass(frozen=True)
class Facts:
    id: str  # the ledger entry
    family: str  # a key of FAMILIES
    certainty: str  # one of CERTAINTIES
    cause: str  # the root cause in a few sentences
    causes: tuple[Cause, ...]  # one per studied version of the entry's target
    controls: tuple[str, ...]  # where the library disagrees with itself or its documentation
    expected: str  # what a caller may expect instead
    related: tuple[Related, ...] = ()  # () = NONE_FOUND


@dataclass(frozen=True)
class Family:
    id: str
    title: str  # the report's title, as a maintainer reads it
    summary: str


FAMILIES: dict[str, Family] = {
    f.id: f
    for f in (
        Family(
            "empty-input",
            "plan(), run() and packbits() raise on empty input instead of doing nothing",
            "A serving step can carry no request, and a masked batch can have no mask bits. Five calls raise on such "
            "input, each for want of one guard: torch's max() of an empty length tensor in three plan() paths, a "
            "division by the batch size in decode run(), a launch of no work in packbits(). Sibling paths of the "
            "same APIs (the kernels' own 'No request, skip', decode's CUDA-core plan(), segment_packbits) take the "
            "same input, so this is one missing convention, not misuse.",
        ),
        Family(
            "zero-page-mask",
            "Paged plan() with a custom mask miscounts a request that has no KV pages",
            "A request with query rows and no KV pages gets a mask length of (0 - 1) * page_size + last_page_len < 0. "
            "Where that takes the packed mask's size below zero plan() raises; where it takes it to exactly zero, or "
            "puts a later request's segment before the buffer's start, plan() writes outside its buffers and the "
            "CUDA context is lost; otherwise plan() returns a mask shorter than the requests before it need, and "
            "CUDA-graph mode computes a wrong output.",
        ),
        Family(
            "mask-state",
            "A custom mask outlives an unmasked plan",
            "Two wrappers keep a previous custom mask when planned without one: eager ragged plan() never clears "
            "it, and a CUDA-graph wrapper built with mask buffers never stops using them. run() takes "
            "MaskMode.CUSTOM whenever the buffer is held, so the unmasked plan runs a stale (or zeroed) mask.",
        ),
        Family(
            "packed-mask-offsets",
            "packed_custom_mask is read at element offsets as if they were bytes",
            "With a caller-packed mask, plan() keeps mask_indptr in elements, while the kernel adds it to a uint8 "
            "pointer: every request after the first reads the wrong bits. plan() converts the offsets only when it "
            "packs a bool mask itself.",
        ),
        Family(
            "auto-routing",
            "backend='auto' runs a kernel that cannot serve the plan",
            "auto's answer is the selector's, which knows less than the kernels: a paged wrapper keeps the first "
            "plan's answer for later plans (0.7.2.post1), and the selector counts (192, 128) as an fa3 prefill "
            "shape for paged prefill too, whose fa3 kernel instantiates equal head dims only. fa3 asked for "
            "explicitly refuses such plans by design; only auto sending them there is a defect.",
        ),
        Family(
            "fa3-hnd",
            "fa3 ragged and single prefill read the KV head count from the token axis under kv_layout='HND'",
            "The SM90 ragged and single prefill take num_kv_heads = k.size(1) whatever the layout. Under HND that is "
            "the KV length: group_size = num_qo_heads // kv_len is 0 (the process dies of SIGFPE) or a wrong "
            "mapping (wrong output). fa3 paged and every fa2 path read the layout.",
        ),
        Family(
            "window-split-kv",
            "fa2 paged prefill with a sliding window and no causal mask loses keys under split-KV",
            "The split-KV scheduler and kernel budget window_left + CTA_TILE_Q keys per query tile, a bound that holds "
            "for a causal window only; a non-causal row sees every key right of its window start.",
        ),
        Family(
            "fa2-causal-keyless-tile",
            "fa2 causal prefill runs a request's first query tiles unmasked when it has more query rows than keys",
            "The causal mask's first masked KV tile is computed in uint32 and wraps for a query tile whose first row "
            "sees no key; the tile's whole KV tiles then run without the mask.",
        ),
        Family(
            "fa2-single-launch",
            "fa2 single prefill cannot launch 64/8 heads at head dim 256 on sm90",
            "single_prefill_with_kv_cache with backend fa2 raises 'kernel launch failed: invalid argument' for 64 "
            "query heads over 8 KV heads at head dim 256 and leaves the error pending: its split-KV merge launches "
            "head_dim / 8 x num_heads threads per block, 2048 here, over CUDA's 1024.",
        ),
        Family(
            "graph-no-query-rows",
            "CUDA-graph prefill of a batch with no query rows fails with 'invalid argument' and poisons the process",
            "In CUDA-graph mode split-KV is always on, and the merge after the kernel launches num_sms * "
            "min(occupancy, ceil(rows * heads / num_sms)) blocks: none for a batch without query rows. The error "
            "stays pending for the next CUDA call. Eager mode skips the batch ('No request, skip').",
        ),
        Family(
            "fa3-lse-store-zero",
            "fa3 prefill writes -inf into LSE rows of the next query tile that see keys",
            "When a query tile has no key to attend to, the fa3 epilogue's store_zero writes -inf to the LSE of "
            "every row below it in the request that its 2 * CTA_Q MMA threads reach, not only its own CTA_Q rows; "
            "where the next tile has rows that see keys, their LSE is overwritten if the empty tile finishes "
            "later. The output is right.",
        ),
        Family(
            "cudnn-empty-kv",
            "The cudnn backend mishandles requests with query rows and no keys",
            "Every other FlashInfer backend writes 0 (LSE -inf) for a row with nothing to attend to. The cudnn "
            "prefill backend leaves such rows unwritten (LSE NaN) beside a request with keys, and raises when no "
            "request has keys.",
        ),
        Family(
            "torch-nested-math-precision",
            "jagged (nested) SDPA's math path computes q.k^T in the input dtype",
            "Dense SDPA math upcasts fp16/bf16 to fp32; the jagged nested path converts to strided nested tensors "
            "and calls the same math function, which then keeps the scores in the input dtype: with large logits "
            "the softmax of a bf16 batch is off by far more than dense math's own rounding.",
        ),
        Family(
            "torch-flex-compiled-no-valid-choices",
            "compiled flex_attention raises NoValidChoicesError on GQA calls of some query lengths",
            "torch.compile(flex_attention) on an H200 raises InductorError (LoweringException: NoValidChoicesError: "
            "No choices exist for backend) for GQA calls with, e.g., 64-127 query rows in bf16, where eager "
            "flex_attention runs the same call, and the compiled one runs it with kernel_options of 32x32 tiles.",
        ),
        Family(
            "torch-nested-cudnn-single-rows",
            "jagged SDPA on cuDNN never returns for a decode batch (one query row a request)",
            "A decode step hands attention one query row per request. Through jagged (nested) SDPA forced to cuDNN, "
            "such a batch of two or more requests never returns on an H200: the process must be killed. One "
            "request alone, or any request with two rows, returns.",
        ),
        Family(
            "torch-flex-compiled-fp32-d192",
            "compiled flex_attention finds no config for fp32 at head dim 192 on an H200",
            "torch.compile(flex_attention) in fp32 with head dim 192 (value dim 128) raises 'No valid triton "
            "configs ... out of resource' for 128 query rows or more: every config needs more shared memory than "
            "the device has. bf16 of the same shape, and fp32 at head dims 128 and 256, compile.",
        ),
        Family(
            "torch-nested-empty-query",
            "jagged SDPA on CUDA raises a TypeError from inside torch for a causal batch with no query rows",
            "A serving step can hand attention a batch whose requests have no new query rows. On the CPU jagged "
            "SDPA refuses such a causal call with a RuntimeError that names why; on CUDA the same call fails "
            "inside torch with a TypeError about a None tensor, which reads as a bug in the caller.",
        ),
        Family(
            "torch-sdpa-empty-rows",
            "cuDNN and memory-efficient SDPA write non-zero rows where the mask allows no key",
            "torch's math backend returns 0 for a query row whose mask allows no key (torch >= 2.5); the cuDNN "
            "backend (a fully masked row, and causal_lower_right with more queries than keys) and the "
            "memory-efficient backend (the latter) return a non-zero row instead. Jagged SDPA on cuDNN does the "
            "same for the last request of a batch when it has no key.",
        ),
    )
}

_TORCH_NOT_READ = (
    "torch's SDPA dispatch and the cuDNN and memory-efficient kernels were not read (only FlashInfer's sources "
    "are unpacked here; cuDNN is closed source)",
)


def _both(v072: tuple[str, ...], v074: tuple[str, ...], differs074: str = "") -> tuple[Cause, ...]:
    return (Cause("0.7.2.post1", v072), Cause("0.7.4", v074, differs074))


FACTS: dict[str, Facts] = {
    f.id: f
    for f in (
        Facts(
            "flashinfer-empty-batch-plan",
            "empty-input",
            LOCATED,
            "paged and ragged plan() take torch's max() of the per-request length tensor with no guard for a batch "
            "of no requests; max() of an empty tensor raises.",
            _both(
                (
                    "flashinfer/prefill.py:3449 paged plan(): `(qo_indptr_host[1:] - qo_indptr_host[:-1]).max()`",
                    "flashinfer/prefill.py:5335 ragged plan(): `int(kv_len_arr.max().item())`",
                ),
                (
                    "flashinfer/prefill.py:3936 paged plan(): the same max()",
                    "flashinfer/prefill.py:6184-6188 ragged plan(): `int(qo_len_arr.max().item())`",
                ),
            ),
            (
                "The fa2 kernels take an empty batch: the ragged and paged dispatch return cudaSuccess for "
                "padded_batch_size == 0 ('No request, skip', include/flashinfer/attention/prefill.cuh:4390-4394 "
                "and :4592-4596 in 0.7.2.post1, :4989 and :5227 in 0.7.4); only plan() stops it.",
                "Decode's CUDA-core plan() returns for the same empty batch "
                "(repro_flashinfer_decode_empty_batch_plan.py, its control).",
            ),
            "plan() of a batch with no requests returns (or raises a ValueError that names the empty batch); run() "
            "then writes nothing.",
        ),
        Facts(
            "flashinfer-decode-empty-batch-run",
            "empty-input",
            LOCATED,
            "BatchDecodeWithPagedKVCacheWrapper.plan() on the CUDA-core path accepts a batch of no requests; run() "
            "then infers the query rows per request by dividing by the batch size, 0.",
            _both(
                ("flashinfer/decode.py:2855 run(): `q_len_per_req = q.size(0) // actual_batch_size`",),
                ("flashinfer/decode.py:3362 run(): the same division (same code path; see the versions table)",),
            ),
            ("plan() accepts the batch that run() cannot serve: the wrapper disagrees with itself between two calls.",),
            "run() after a plan() of no requests returns an empty output; or plan() refuses the batch.",
        ),
        Facts(
            "flashinfer-decode-tensor-cores-empty-batch-plan",
            "empty-input",
            LOCATED,
            "The tensor-core decode plan() (use_tensor_cores=True; fa3 always) takes max() of the empty KV length "
            "tensor.",
            _both(
                ("flashinfer/decode.py:2371 plan(): `self._max_kv_len = kv_lens_arr_host.max().item()`",),
                ("flashinfer/decode.py:2791 plan(): the same max() (same code path)",),
            ),
            ("The CUDA-core decode plan() returns for the same empty batch (the script's control).",),
            "plan() of a batch with no requests returns, as the CUDA-core plan() does.",
        ),
        Facts(
            "flashinfer-cudnn-decode-empty-batch-plan",
            "empty-input",
            LOCATED,
            "The cudnn decode plan() takes max() of the empty KV length tensor.",
            _both(
                ("flashinfer/decode.py:2547 plan(): `max_kv_len = int(kv_lens_arr_host.max())`",),
                ("flashinfer/decode.py:2989 plan(): the same max() (same code path)",),
            ),
            ("The CUDA-core decode plan() returns for the same empty batch (the script's control).",),
            "plan() of a batch with no requests returns, as the CUDA-core plan() does.",
        ),
        Facts(
            "flashinfer-packbits-empty",
            "empty-input",
            LOCATED,
            "flashinfer.packbits() of 0 bits allocates a 0-byte output and still calls quantization::PackBits with "
            "num_elements 0, which fails with 'invalid argument' and leaves the error pending; the status check "
            "raises. (quantization.cuh, where the launch is configured, is not among the sources read.)",
            _both(
                (
                    "flashinfer/quantization/packbits.py:36-37 `_packbits`: y of (0 + 7) // 8 bytes, then the kernel",
                    "flashinfer/data/csrc/quantization.cu:27-34 packbits(): PackBits(num_elements = x.numel()) and "
                    "the status check",
                ),
                (
                    "flashinfer/quantization/packbits.py:36-37: the same",
                    "flashinfer/data/csrc/quantization.cu:27-34: the same",
                ),
            ),
            (
                "segment_packbits() of the same 0 bits returns (the script's control).",
                "In 0.7.4 the same file's per_token_group_quant_8bit returns early on empty input "
                "(flashinfer/data/csrc/quantization.cu:93-95 `if (num_groups == 0) return;`); packbits() has no "
                "such guard.",
            ),
            "packbits() of an empty bool tensor returns an empty uint8 tensor, as segment_packbits() does.",
        ),
        Facts(
            "flashinfer-paged-mask-zero-pages",
            "zero-page-mask",
            LOCATED,
            "plan() sizes each request's mask as qo_len * ((pages - 1) * page_size + last_page_len) with no case for "
            "0 pages, where the kernels read a length of 0; a request with query rows and no pages gets a negative "
            "length, segment_packbits() sizes its output from those lengths, and a negative total raises.",
            _both(
                (
                    "flashinfer/prefill.py:1607-1614 `_compute_page_mask_indptr`: (pages - 1) * page_size + "
                    "last_page_len, unclamped; called by paged plan() at :3413-3418",
                    "flashinfer/quantization/packbits.py:128-132 segment_packbits(): the packed size from those "
                    "lengths",
                ),
                (
                    "flashinfer/prefill.py:1743-1750 `_compute_page_mask_indptr`: the same; called at :3902",
                    "flashinfer/quantization/packbits.py:128-132: the same",
                ),
            ),
            (
                "flashinfer.page.get_seq_lens() computes the same length with `torch.clamp(pages - 1, min=0)` "
                "(flashinfer/page.py:405 in 0.7.2.post1, :412 in 0.7.4): the library counts a request with no pages "
                "as 0 keys there and as a negative mask here.",
                "The same batch without the empty request plans (the script's control).",
            ),
            "A request with query rows and no KV pages has a mask of 0 bits (its rows see no key), and plan() returns.",
        ),
        Facts(
            "flashinfer-paged-mask-zero-pages-graph-wrong",
            "zero-page-mask",
            LOCATED,
            "The same unclamped mask length where the packed size stays >= 0: plan() returns with mask offsets "
            "that start the requests before the empty one too early in a buffer that is too short; in CUDA-graph "
            "mode the output is wrong. Why eager mode is right on the same plan was not established.",
            _both(
                (
                    "flashinfer/prefill.py:1607-1614 `_compute_page_mask_indptr` (as for "
                    "flashinfer-paged-mask-zero-pages)",
                ),
                ("flashinfer/prefill.py:1743-1750 `_compute_page_mask_indptr`: the same",),
            ),
            (
                "Eager mode computes the same plan right, and request 0 alone passes (the script's controls).",
                "flashinfer.page.get_seq_lens() clamps the same expression at 0 (flashinfer/page.py:405 / :412).",
            ),
            "The output of a graph-mode run equals the eager run's for the same plan.",
        ),
        Facts(
            "flashinfer-paged-mask-zero-pages-shifted",
            "zero-page-mask",
            LOCATED,
            "The same unclamped mask length, -qo_len * page_size for a request with queries and no pages, where every "
            "later segment still starts at a bit >= 0: plan()'s mask offsets (the cumulative sum of those lengths) "
            "start each later request that many bits early, segment_packbits() packs the flat mask from those "
            "offsets, and the kernel reads the packed mask from them: the request gets the tail of the request "
            "before's mask bits in place of the head of its own, eager as well as graph.",
            _both(
                (
                    "flashinfer/prefill.py:1607-1614 `_compute_page_mask_indptr` (as for "
                    "flashinfer-paged-mask-zero-pages)",
                    "flashinfer/quantization/packbits.py:128-132 segment_packbits(): the segments from those offsets",
                ),
                (
                    "flashinfer/prefill.py:1743-1750 `_compute_page_mask_indptr`: the same",
                    "flashinfer/quantization/packbits.py:128-132: the same",
                ),
            ),
            (
                "The same batch with no empty request, and with an empty request that has no queries (0 mask bits), "
                "is right (the script's controls); the wrong request equals the reference under its mask read "
                "qo_len * page_size bits early (the script's mechanism line).",
                "flashinfer.page.get_seq_lens() clamps the same expression at 0 (flashinfer/page.py:405 / :412).",
            ),
            "A request with query rows and no KV pages has a mask of 0 bits, and every other request reads its own.",
        ),
        Facts(
            "flashinfer-paged-mask-zero-pages-segment-before-buffer",
            "zero-page-mask",
            PROBABLE,
            "The same unclamped mask length in a request before others, where the packed total stays >= 0: the "
            "requests after the empty one get mask segments that start at a negative bit (and byte) offset, and "
            "segment_packbits() reads its input and writes its output before the buffers' start; the plan fails "
            "with cudaErrorInvalidAddressSpace and the CUDA context is lost.",
            _both(
                (
                    "flashinfer/prefill.py:1607-1614 `_compute_page_mask_indptr` (as for "
                    "flashinfer-paged-mask-zero-pages)",
                    "flashinfer/quantization/packbits.py:128-132 segment_packbits(): the segments from those offsets",
                ),
                (
                    "flashinfer/prefill.py:1743-1750 `_compute_page_mask_indptr`: the same",
                    "flashinfer/quantization/packbits.py:128-132: the same",
                ),
            ),
            (
                "The same requests with the empty one last (its negative length after every other segment) plan and "
                "run right in eager mode, and the non-empty request alone does (the script's controls).",
                "flashinfer.page.get_seq_lens() clamps the same expression at 0 (flashinfer/page.py:405 / :412).",
            ),
            "A request with query rows and no KV pages has a mask of 0 bits wherever it stands in the batch, and "
            "plan() returns.",
        ),
        Facts(
            "flashinfer-paged-mask-zero-pages-empty-buffer",
            "zero-page-mask",
            LOCATED,
            "The same unclamped mask lengths, in requests after the others, bringing the packed total to exactly 0: "
            "segment_packbits() sizes its output as the sum of the segments' (len + 7) // 8, allocates an empty "
            "tensor (no storage) and still writes the earlier requests' packed bits into it; the plan fails with "
            "an illegal memory access and the CUDA context is lost.",
            _both(
                (
                    "flashinfer/prefill.py:1607-1614 `_compute_page_mask_indptr` (as for "
                    "flashinfer-paged-mask-zero-pages)",
                    "flashinfer/quantization/packbits.py:128-137 segment_packbits(): `output_nnzs = "
                    "indptr_new[-1].item()` (the sum, 0 here), `y = torch.empty(output_nnzs, ...)`, then the kernel "
                    "writes every segment",
                ),
                (
                    "flashinfer/prefill.py:1743-1750 `_compute_page_mask_indptr`: the same",
                    "flashinfer/quantization/packbits.py:128-138: the same",
                ),
            ),
            (
                "The same requests with one empty request fewer (packed bytes 1 + 0 = 1) plan and run right in eager "
                "mode, and the non-empty request alone does (the script's controls).",
                "flashinfer.page.get_seq_lens() clamps the same expression at 0 (flashinfer/page.py:405 / :412).",
            ),
            "A request with query rows and no KV pages has a mask of 0 bits wherever it stands in the batch, and "
            "plan() returns.",
        ),
        Facts(
            "flashinfer-ragged-stale-mask",
            "mask-state",
            LOCATED,
            "Eager ragged plan() stores a given mask in _custom_mask_buf and has no `else` that clears it; run() "
            "takes MaskMode.CUSTOM whenever the buffer is set, so an unmasked re-plan runs the previous mask (and "
            "an old mask shorter than the new batch reads past its end: an illegal memory access).",
            _both(
                (
                    "flashinfer/prefill.py:5295-5301 ragged plan(): `if packed_custom_mask is not None:` sets the "
                    "buffers, no else",
                    "flashinfer/prefill.py:6405-6406 ragged run(): CUSTOM when `self._custom_mask_buf is not None`",
                ),
                (
                    "flashinfer/prefill.py:6129-6135 ragged plan(): the same, no else",
                    "flashinfer/prefill.py:7423-7424 ragged run(): the same",
                ),
            ),
            (
                "The paged wrapper's eager plan() clears both buffers without a mask "
                "(flashinfer/prefill.py:3543-3545 in 0.7.2.post1, :4125-4127 in 0.7.4).",
                "A fresh ragged wrapper planned unmasked on the same batch is right (the script's control).",
            ),
            "An unmasked plan runs unmasked, as on a fresh wrapper.",
            (
                Related(
                    "flashinfer-ai/flashinfer#1028",
                    "pull request",
                    "bugfix: fix custom mask not be reseted after convert custom mask into causal or non-causal",
                    "merged 2025-04",
                    "the same kind of stale mask (kept after an unmasked plan), fixed in a plan() in 2025-04 (which "
                    "wrapper was not checked); in 0.7.2.post1 and 0.7.4 the paged plan() clears the mask and the "
                    "ragged plan() does not",
                ),
                Related(
                    "flashinfer-ai/flashinfer#2690",
                    "pull request",
                    "prefill: decouple custom-mask enablement from buffers and clear stale…",
                    "open",
                    "by its description clears the mask buffer in non-CUDA-graph mode: the fix this entry needs",
                ),
            ),
        ),
        Facts(
            "flashinfer-graph-mask-buffer-unmasked",
            "mask-state",
            LOCATED,
            "A CUDA-graph wrapper constructed with custom_mask_buf and mask_indptr_buf: an unmasked plan leaves the "
            "buffers as they are, and run() takes MaskMode.CUSTOM whenever a buffer is held, so it applies a zeroed "
            "mask (before any masked plan) or the last masked plan's bits, and ignores causal.",
            _both(
                (
                    "flashinfer/prefill.py:3509 paged plan() (graph mode): the buffers are written only under "
                    "`if packed_custom_mask is not None:`",
                    "flashinfer/prefill.py:5267 ragged plan() (graph mode): the same",
                    "flashinfer/prefill.py:4382-4383 paged run(), :6405-6406 ragged run(): CUSTOM whenever "
                    "`self._custom_mask_buf is not None`",
                ),
                (
                    "flashinfer/prefill.py:4068 paged plan(), :6099 ragged plan(): the same",
                    "flashinfer/prefill.py:5112-5113 paged run(), :7423-7424 ragged run(): the same",
                ),
            ),
            (
                "The same wrapper's masked plan and a graph wrapper built without mask buffers are right (the "
                "probe's controls).",
                "0.7.4's paged auto selector counts a held graph-mode mask buffer as a mask "
                "(flashinfer/prefill.py:3824-3828 `self.is_cuda_graph_enabled and self._custom_mask_buf is not "
                "None`): the library knows the buffer stands for a mask, and run() applies it to unmasked plans.",
            ),
            "An unmasked plan on a graph wrapper that holds mask buffers runs unmasked (causal as asked); or "
            "plan() refuses it.",
            (
                Related(
                    "flashinfer-ai/flashinfer#2690",
                    "pull request",
                    "prefill: decouple custom-mask enablement from buffers and clear stale…",
                    "open",
                    "by its description makes the mask explicit instead of inferred from the buffer and ignores the "
                    "buffer of an unmasked plan in CUDA-graph mode: the fix this entry needs",
                ),
            ),
        ),
        Facts(
            "flashinfer-packed-mask-indptr",
            "packed-mask-offsets",
            LOCATED,
            "plan() computes mask_indptr in elements (qo_len * kv_len per request) and converts it to byte offsets "
            "only in the branch where it packs a bool custom_mask itself (segment_packbits); a packed_custom_mask "
            "keeps element offsets, which the kernel adds to a uint8 pointer.",
            _both(
                (
                    "flashinfer/prefill.py:5211-5212 ragged plan(): `mask_indptr = _compute_mask_indptr(...)` "
                    "(elements, :4672-4683); converted only at :5213-5223 (segment_packbits of a bool mask)",
                    "flashinfer/prefill.py:3412-3418 paged plan(): the same (`_compute_page_mask_indptr`), "
                    "converted only at :3419-3429",
                    "flashinfer/data/include/flashinfer/attention/variants.cuh:59 "
                    "`params.maybe_custom_mask + params.maybe_mask_indptr[batch_idx]` (a uint8 pointer)",
                ),
                (
                    "flashinfer/prefill.py:6043-6044 ragged plan(): the same, converted only at :6045-6055",
                    "flashinfer/prefill.py:3901-3907 paged plan(): the same, converted only at :3908-3918",
                    "flashinfer/data/include/flashinfer/attention/variants.cuh:59: the same",
                ),
            ),
            (
                "plan()'s docstring says the packed mask 'is generated by flashinfer.quantization.packbits' "
                "(flashinfer/prefill.py:5092 ragged, :3293 paged in 0.7.2.post1; :5857, :3678 in 0.7.4): "
                "the documented form is read wrong for every request after the first.",
                "custom_mask (bool) on the same batch is right (the script's control).",
            ),
            "A packed_custom_mask made as the docstring says is read at each request's own bits.",
            (
                Related(
                    "flashinfer-ai/flashinfer#2201",
                    "pull request",
                    "Fix: Add mask_indptr conversion in BatchPrefillWithPagedKVCacheWrapper.plan()",
                    "open",
                    "the same defect (paged wrapper), with a fix: this entry adds the ragged wrapper and a "
                    "reproduction; file it as a comment there rather than a new issue",
                ),
            ),
        ),
        Facts(
            "flashinfer-sticky-paged-auto",
            "auto-routing",
            LOCATED,
            "0.7.2.post1's paged plan() resolves 'auto' only while self._backend is 'auto' and overwrites it with "
            "the answer: the first plan's backend holds for the wrapper's life. After an unmasked plan picks fa3, a "
            "masked plan runs fa3, which takes no custom mask ('operation not supported').",
            _both(
                (
                    'flashinfer/prefill.py:3669-3670 paged plan(): `if self._backend == "auto": self._backend = '
                    "determine_attention_backend(...)`",
                    "flashinfer/data/include/flashinfer/attention/hopper/prefill_sm90.cuh:573-574 "
                    "`MaskMode::kCustom` -> cudaErrorNotSupported",
                ),
                (
                    "flashinfer/prefill.py:3812-3833 paged plan(): auto resolves from self._requested_backend on "
                    "every plan",
                ),
                differs074="rewritten: 0.7.4 re-resolves auto on every eager plan",
            ),
            (
                "0.7.2.post1's ragged plan() re-resolves auto on every plan from self._requested_backend "
                "(flashinfer/prefill.py:5527-5528): one library, two rules for the same argument.",
                "A fresh auto wrapper planned with the mask resolves fa2 and is right (the script's control).",
            ),
            "Each plan of an auto wrapper runs the backend a fresh wrapper would pick for it (as ragged does).",
            (
                Related(
                    "flashinfer-ai/flashinfer#808",
                    "pull request",
                    "fix: Pass backend in BatchPrefillWith*KVCacheWrapper.plan()",
                    "merged 2025-02",
                    "made plan() able to reset the backend for wrappers planned many times; the paged wrapper of "
                    "0.7.2.post1 still keeps its first answer for auto",
                ),
            ),
        ),
        Facts(
            "flashinfer-fa3-paged-192-128",
            "auto-routing",
            LOCATED,
            "The selector counts (192, 128) as an fa3 prefill shape without asking the API: fa3's paged kernel "
            "instantiates equal head dims only (the dispatch returns cudaErrorNotSupported otherwise) and its run "
            "refuses separate K and V caches, so auto sends a paged (192, 128) plan to a kernel that refuses it. "
            "fa3 asked for explicitly refuses the same plan by a deliberate check (a decline, not this defect). "
            "0.7.4's selector sends a paged batch of at most 64 query rows to fa2 first, so the script's batch has "
            "a longer request.",
            _both(
                (
                    "flashinfer/utils.py:504-508 `is_fa3_prefill_head_dim_supported`: (192, 128) is an fa3 shape",
                    "flashinfer/utils.py:616-628 `determine_attention_backend`: fa3 for it, whatever the API",
                    "flashinfer/data/csrc/batch_prefill_sm90.cu:234-237 'K and V must have same page stride'",
                    "flashinfer/data/include/flashinfer/attention/hopper/prefill_sm90.cuh:578, :613-615 paged "
                    "dispatch: equal head dims only, else cudaErrorNotSupported",
                ),
                (
                    "flashinfer/utils.py:559-563 and :671-683: the same",
                    "flashinfer/data/csrc/batch_prefill_sm90.cu:234-237: the same",
                    "flashinfer/data/include/flashinfer/attention/hopper/prefill_sm90.cuh:578, :613-615: the same",
                ),
            ),
            (
                "determine_attention_backend's docstring says head_dim_qk/head_dim_vo are passed 'to avoid selecting "
                "FA3 for prefill dimensions that its Hopper kernels do not instantiate' (flashinfer/utils.py:606 in "
                "0.7.2.post1, :661 in 0.7.4), yet the paged Hopper kernel does not instantiate (192, 128).",
                "fa2 runs the same separate caches within bf16 rounding (the script's control).",
            ),
            "auto sends a plan to a backend whose kernel serves it: fa2 for paged (192, 128) on sm90.",
        ),
        Facts(
            "flashinfer-fa3-hnd-kv-heads-sigfpe",
            "fa3-hnd",
            LOCATED,
            "The SM90 ragged and single prefill set num_kv_heads = k.size(1) and the KV length from k.size(0) "
            "whatever the layout; under HND K is [num_kv_heads, kv_len, head_dim], so group_size = num_qo_heads / "
            "kv_len, which is 0 when kv_len > num_qo_heads: the host divides by it and the process dies of SIGFPE.",
            _both(
                (
                    "flashinfer/data/csrc/batch_prefill_sm90.cu:131-134 ragged: `params.nnz_kv = k.size(0)`, "
                    "`params.num_kv_heads = k.size(1)`, `group_size = num_qo_heads / num_kv_heads`",
                    "flashinfer/data/csrc/single_prefill_sm90.cu:75-79 single: `kv_len = k.size(0)`, "
                    "`num_kv_heads = k.size(1)`",
                ),
                (
                    "flashinfer/data/csrc/batch_prefill_sm90.cu:131-134: the same",
                    "flashinfer/data/csrc/single_prefill_sm90.cu:75-79: the same",
                ),
            ),
            (
                "single_prefill_with_kv_cache documents K under HND as [num_kv_heads, kv_len, head_dim_qk] "
                "(flashinfer/prefill.py:1323-1326 in 0.7.2.post1, :1368-1371 in 0.7.4): the documented call kills "
                "the process on fa3.",
                "fa3's paged path reads the layout (flashinfer/data/csrc/batch_prefill_sm90.cu:185-191), and so does "
                "fa2's ragged path (flashinfer/data/csrc/batch_prefill.cu:121 in 0.7.2.post1, :123 in 0.7.4); NHD "
                "and fa2 give the reference on the same tensors (the script's controls).",
            ),
            "fa3 ragged and single prefill under HND read num_kv_heads from K's axis 0, as fa2 and fa3 paged do, and "
            "give fa2's output.",
        ),
        Facts(
            "flashinfer-fa3-hnd-kv-heads-wrong",
            "fa3-hnd",
            LOCATED,
            "The same misread axis where kv_len <= num_qo_heads: group_size is positive and wrong, and the kernel "
            "maps query heads to the wrong KV heads.",
            _both(
                (
                    "flashinfer/data/csrc/batch_prefill_sm90.cu:131-134 (as for flashinfer-fa3-hnd-kv-heads-sigfpe)",
                    "flashinfer/data/csrc/single_prefill_sm90.cu:75-79",
                ),
                (
                    "flashinfer/data/csrc/batch_prefill_sm90.cu:131-134: the same",
                    "flashinfer/data/csrc/single_prefill_sm90.cu:75-79: the same",
                ),
            ),
            (
                "single_prefill_with_kv_cache documents the HND shape it misreads (flashinfer/prefill.py:1323-1326 / "
                ":1368-1371); the ragged run() docstring shows only [kv_indptr[-1], num_kv_heads, head_dim_qk] "
                "(flashinfer/prefill.py:5908-5909 in 0.7.2.post1), so the single prefill is the documented case.",
                "fa3 NHD and fa2 HND on the same tensors give the reference (the script's controls).",
            ),
            "fa3 under HND gives the output fa2 gives on the same tensors.",
        ),
        Facts(
            "flashinfer-fa2-causal-keyless-tile-unmasked",
            "fa2-causal-keyless-tile",
            LOCATED,
            "qo_len and kv_len are uint32_t, so kv_len + ceil_div(tile * CTA_TILE_Q, group_size) - qo_len wraps to "
            "about 2^32 for a query tile whose first row sees no key; sub_if_greater_or_zero(uint32_t, uint32_t) "
            "passes it on and mask_iteration becomes chunk_size / CTA_TILE_KV, so the whole KV tiles before it take "
            "no causal mask; num_iterations wraps alike and runs them even for a tile where no row sees a key. "
            "Under one KV tile of keys mask_iteration is 0 and every tile is masked, which is why kv <= 33 is right.",
            _both(
                (
                    "flashinfer/data/include/flashinfer/attention/prefill.cuh:3141-3160 ragged kernel "
                    "(num_iterations, mask_iteration), :4036-4076 paged kernel, :3031 `const uint32_t qo_len = "
                    "variant.qo_len, kv_len = variant.kv_len`",
                    "flashinfer/data/include/flashinfer/utils.cuh:518 `uint32_t sub_if_greater_or_zero(uint32_t x, "
                    "uint32_t y)`",
                ),
                (
                    "flashinfer/data/include/flashinfer/attention/prefill.cuh:3561-3571 ragged kernel, :4602-4638 "
                    "paged kernel: the same expressions",
                    "flashinfer/data/include/flashinfer/utils.cuh:518: the same",
                ),
            ),
            (
                "single_prefill_with_kv_cache refuses the same input ('When mask_mode is set to MaskMode::kCausal, "
                "kv_len must be greater than or equal to qo_len', prefill.cuh:2735-2740 / :3115), the batch wrappers "
                "take it and document the bottom-right causal rule.",
                "The same request with 33 keys, or with as many query rows as keys, is right (the script's controls); "
                "the wrong rows without a key are unmasked attention over all the keys in the tiles where no row sees "
                "one (num_iterations wrapped too), over the first KV tile in the tile with rows of both kinds "
                "(num_iterations from its last row, not wrapped): the script's mechanism line on both versions.",
            ),
            "Row i of qo_len rows over kv_len keys sees keys j <= i + kv_len - qo_len; a row with none is 0 with "
            "LSE -inf, as fa2 itself gives below one KV tile of keys.",
            (
                Related(
                    "flashinfer-ai/flashinfer#4452",
                    "issue",
                    "[Bug] Paged causal prefill returns finite LSE for fully masked rows when qo_len > kv_len",
                    "closed",
                    "the same inputs (fa2, causal, qo_len > kv_len), a finite LSE of the -5e4 sentinel on 0.6.16; "
                    "closed with the masked logit made IEEE -inf (math.cuh); the unmasked KV tiles this entry finds "
                    "are in 0.7.2.post1 and 0.7.4: a new report, citing it",
                ),
            ),
        ),
        Facts(
            "flashinfer-fa2-window-noncausal-split-kv",
            "window-split-kv",
            LOCATED,
            "The split-KV scheduler sizes a request's KV span as window_left + CTA_TILE_Q keys ('pad CTA_TILE_Q to "
            "consider the causal kv-len') and the paged kernel splits that span into chunks; a non-causal row sees "
            "every key right of its window start, so keys beyond the span are never visited.",
            _both(
                (
                    "flashinfer/data/include/flashinfer/attention/scheduler.cuh:629-633 `effective_kv_len = "
                    "min(ceil_div(window_left + cta_tile_q, page_size), kv_len)`",
                    "flashinfer/data/include/flashinfer/attention/prefill.cuh:4293-4294 paged kernel: "
                    "`num_kv_chunks = ceil_div(min(kv_len_safe, window_left + CTA_TILE_Q), kv_chunk_size)`",
                ),
                (
                    "flashinfer/data/include/flashinfer/attention/scheduler.cuh:629-633: the same",
                    "flashinfer/data/include/flashinfer/attention/prefill.cuh:4892-4893: the same",
                ),
            ),
            (
                "The same plan with disable_split_kv=True is right: the library gives two answers for one "
                "attention, depending on a scheduling flag (the probe's control).",
                "causal, no window, or a query short enough for one tile are right (the probe's controls).",
            ),
            "A non-causal windowed row attends to every key from its window start to the end, split or not.",
            (
                Related(
                    "flashinfer-ai/flashinfer#4972",
                    "issue",
                    "[Bug] fa2 paged prefill: non-causal sliding window is wrong on the first query tile when qo_len "
                    "< kv_len",
                    "open",
                    "the same defect, reported on GH200 with the same root cause; add this entry's shapes there",
                ),
                Related(
                    "flashinfer-ai/flashinfer#4992",
                    "pull request",
                    "fix(fa2): cover the full KV span of non-causal sliding-window tiles under split-KV",
                    "open",
                    "the fix for #4972 (scheduler.cuh and prefill.cuh, ragged and paged)",
                ),
            ),
        ),
        Facts(
            "flashinfer-graph-no-query-rows",
            "graph-no-query-rows",
            PROBABLE,
            "In CUDA-graph mode split-KV is always on, so run() merges the partial states after the kernel; the "
            "merge's grid is num_sms * min(occupancy, ceil_div(max_total_num_rows * num_heads, num_sms)), no block "
            "at all for a batch without query rows, and a launch of no block fails with 'invalid argument'. Eager "
            "mode returns before any launch for such a batch.",
            _both(
                (
                    "flashinfer/data/include/flashinfer/attention/scheduler.cuh:129 "
                    "`return std::make_tuple(enable_cuda_graph || low < max_kv_len, low)`: split-KV in graph mode",
                    "flashinfer/data/include/flashinfer/attention/prefill.cuh:4749-4751 paged run: "
                    "VariableLengthMergeStates(..., params.max_total_num_rows, ...)",
                    "flashinfer/data/include/flashinfer/attention/cascade.cuh:715-717 its grid: "
                    "`num_sms * min(num_blocks_per_sm, ceil_div(max_seq_len * num_heads, num_sms))`",
                ),
                (
                    "flashinfer/data/include/flashinfer/attention/scheduler.cuh:129: the same",
                    "flashinfer/data/include/flashinfer/attention/prefill.cuh:5420-5422: the same",
                    "flashinfer/data/include/flashinfer/attention/cascade.cuh:719-721: the same",
                ),
            ),
            (
                "The paged dispatch skips an empty batch with the comment 'this won't happen in CUDAGraph mode "
                "because we fixed the padded_batch_size' (flashinfer/data/include/flashinfer/attention/"
                "prefill.cuh:4592-4596 in 0.7.2.post1, :5227-5231 in 0.7.4): the code assumes graph mode never "
                "meets the batch it fails on.",
                "The same plan in eager mode runs (the probe's control).",
            ),
            "A graph-mode run of a batch whose requests have no query rows writes nothing and leaves no error.",
        ),
        Facts(
            "flashinfer-fa3-lse-after-empty-tile",
            "fa3-lse-store-zero",
            LOCATED,
            "A query tile with no key to attend to (causal, qo_len > kv_len) exits through the epilogue's "
            "store_zero, whose LSE loop lets every MMA thread with thread_idx < qo_len - tile * CTA_Q write "
            "gLSE(thread_idx) = -inf. There are 2 * CTA_Q MMA threads (two warpgroups at CTA_Q 128), so the "
            "threads past CTA_Q write -inf into the next tile's rows; where that tile has rows that see keys and "
            "finishes first, their LSE is lost (qo 300 over kv 33: tile 1 overwrites rows 256-299, of which rows "
            "267-299 see keys, the 33 rows the probe found). Nothing there is specific to the soft cap or fp16, and "
            "on the H200 (both versions) docs/evidence/probe_flashinfer_fa3_lse_store_zero.py lost exactly the rows "
            "it predicts in bf16 without a soft cap, for three query lengths, paged and ragged. The fp8 epilogue "
            "has the same loop (not run).",
            _both(
                (
                    "flashinfer/data/include/flashinfer/attention/hopper/epilogue.cuh:247-251 store_zero: "
                    "`static_assert(CTA_Q <= NUM_MMA_THREADS)`; `if (thread_idx < qo_len - qo_tile_idx * CTA_Q) "
                    "gLSE(thread_idx) = -math::inf`",
                    "flashinfer/data/include/flashinfer/attention/hopper/prefill_sm90.cuh:243-247 the consumer "
                    "calls store_zero when get_num_kv_tiles <= 0",
                    "flashinfer/data/include/flashinfer/attention/hopper/kernel_traits.cuh:74, :82 "
                    "NUM_MMA_THREADS = size(TiledMmaQK) over CTA_Q / 64 warpgroups: 256 at CTA_Q 128",
                    "flashinfer/data/include/flashinfer/attention/hopper/quantization/epilogue.cuh:205-208 the "
                    "fp8 store_zero: the same loop",
                ),
                (
                    "flashinfer/data/include/flashinfer/attention/hopper/epilogue.cuh:247-251: the same (the file "
                    "is unchanged)",
                    "flashinfer/data/include/flashinfer/attention/hopper/prefill_sm90.cuh:243-247: the same",
                    "flashinfer/data/include/flashinfer/attention/hopper/quantization/epilogue.cuh:205-208: the same",
                ),
            ),
            (
                "store_zero bounds its O copy to the tile (`valid_qo_tile_size = min(qo_len - qo_tile_idx * "
                "qo_tile_size, qo_tile_size)`, epilogue.cuh:236) but not its LSE store: the output is right, the "
                "LSE is not.",
                "fa2 on the same batch, and each request alone on fa3, give a finite LSE there (the probe's controls).",
            ),
            "The LSE of a row that sees keys is its log-sum-exp; -inf only for a row that sees none.",
        ),
        Facts(
            "flashinfer-fa2-single-merge-launch",
            "fa2-single-launch",
            LOCATED,
            "The kernel launch that fails is the split-KV merge after the prefill kernel: where the single prefill "
            "splits the KV (num_chunks >= 2, here kv 300 in two chunks of 256) into fewer chunks than query rows, "
            "MergeStates launches blocks of bdx x num_heads threads, bdx = head_dim / vec_size = 32 at head dim 256 "
            "(vec_size 8): 64 heads make 2048 threads, over CUDA's 1024 per block, and cudaLaunchKernel returns "
            "invalid argument, which the single-prefill launcher returns as its own. 32 heads at 256 (1024 threads) "
            "and 64 heads at 128 (bdx 16: 1024) launch. On the H200 the launch fails exactly where this predicts, "
            "17 shapes of 17 on both versions (docs/evidence/probe_fa2_single_merge_launch.py, "
            "docs/evidence/2026-12-03-h200-5/call1/): over 1024 threads at head dims 256, 128 and 64, group size 1 "
            "alike; kv 256 (one chunk) and qo 1 or 2 over 3 chunks (the merge's other branch) run; kv 257 and qo 4 "
            "over 3 chunks raise; qo 4096 over kv 8192 fills the GPU unsplit and runs.",
            _both(
                (
                    "flashinfer/data/include/flashinfer/attention/prefill.cuh:2883 SinglePrefillWithKVCacheDispatched "
                    "splits the KV into chunks of at least 256 keys; :2912 `MergeStates(tmp, tmp_lse, o, lse, "
                    "num_chunks, qo_len, num_qo_heads, HEAD_DIM_VO, stream)`",
                    "flashinfer/data/include/flashinfer/attention/cascade.cuh:644-670 MergeStates: `vec_size = "
                    "max(16 / sizeof(DTypeIn), HEAD_DIM / 32)`, `bdx = HEAD_DIM / vec_size`, for num_index_sets < "
                    "seq_len `bdy = num_heads`, `dim3 nthrs(bdx, bdy)`, then cudaLaunchKernel",
                ),
                (
                    "flashinfer/data/include/flashinfer/attention/prefill.cuh:3300 the same split; :3329 the same "
                    "MergeStates call",
                    "flashinfer/data/include/flashinfer/attention/cascade.cuh:648-674 MergeStates: the same shape",
                ),
            ),
            (
                "32 query heads over 8 at head dim 256, and 64 over 8 at head dim 128, run right (the script's "
                "controls): bdx x num_heads is 1024 for both; the ragged batch wrapper runs 64/8 heads at head dim "
                "256 (the standard matrix), its merge being another kernel.",
                "MergeStates' other branch (num_index_sets >= seq_len) launches a fixed 128 threads per block "
                "(cascade.cuh, the lines above): the block shape is bounded there and not here.",
            ),
            "single_prefill_with_kv_cache runs every head count its batch wrappers run, or refuses it with an error "
            "that names the limit, without a pending CUDA error.",
            (
                Related(
                    "flashinfer-ai/flashinfer#3620",
                    "issue",
                    '[Bug] BatchPrefillWithPagedKVCache fails on SM75 (Turing / Tesla T4) with CUDA "invalid argument"',
                    "closed",
                    "the same message from another launch (a shared-memory miscount on SM75): not this block shape",
                ),
            ),
        ),
        Facts(
            "flashinfer-cudnn-empty-kv-rows-unwritten",
            "cudnn-empty-kv",
            NOT_LOCATED,
            "The rows are left unwritten inside cuDNN's SDPA graph (closed source). FlashInfer passes the "
            "per-request KV lengths, zeros included, to cuDNN as the graph's seq_len_kv and does not write the "
            "rows of a request without keys itself.",
            _both(
                (
                    "flashinfer/cudnn/prefill.py:633-646 `actual_seq_lens_kv`, zeros included, handed to the cuDNN "
                    "graph as its seq_len_kv",
                ),
                ("flashinfer/cudnn/prefill.py:828-841: the same hand-over",),
            ),
            (
                "fa2 and fa3 write 0 and LSE -inf for the same rows (attncheck's quick matrix on the H200), and each "
                "non-empty request alone is right on cudnn (the script's controls).",
            ),
            "A row of a request with query rows and no keys is written as 0 with LSE -inf, as on fa2 and fa3.",
        ),
        Facts(
            "flashinfer-cudnn-paged-all-kv-empty-raises",
            "cudnn-empty-kv",
            NOT_LOCATED,
            "When no request has a KV page, cuDNN's paged graph gets no page to bind and execute() fails on a null "
            "pointer (CUDNN_STATUS_BAD_PARAM_NULL_POINTER, from cuDNN, closed source). FlashInfer hands cuDNN the "
            "block table as it is.",
            _both(
                (
                    "flashinfer/cudnn/prefill.py:589-597 the block table reshaped into the cuDNN graph's K and V "
                    "tables",
                    "flashinfer/cudnn/decode.py:504-508 decode: the block table bound as the graph's K and V tables, "
                    "then execute()",
                ),
                (
                    "flashinfer/cudnn/prefill.py:775-792 the block table cut to the graph's pages, then handed over "
                    "as in 0.7.2.post1 (the raise reproduces there: ledger verify 2026-12-02)",
                    "flashinfer/cudnn/decode.py:573-577 decode: the block table bound as in 0.7.2.post1 (the raise "
                    "reproduces there: the script's decode batches, 2026-12-04)",
                ),
            ),
            (
                "fa2 and fa3 write 0 and LSE -inf for such a batch (attncheck's quick matrix on the H200).",
                "cuDNN's own decode writes 0 and LSE -inf for a request without keys beside one with keys (kv [0, 9], "
                "the script): only a batch with no page at all fails.",
            ),
            "A batch in which no request has keys is written as 0 with LSE -inf, or refused at plan().",
        ),
        Facts(
            "torch-nested-math-scores-in-half",
            "torch-nested-math-precision",
            PROBABLE,
            "Jagged SDPA's math branch converts q, k, v to strided nested tensors and calls "
            "torch._scaled_dot_product_attention_math on them; on nested inputs that function does not upcast "
            "16-bit inputs, so q.k^T is rounded to bf16 (the script's bf16-scores model matches it exactly).",
            (
                Cause(
                    "2.11.0+cu130",
                    (
                        "torch/nested/_internal/sdpa.py:892-931 jagged_scaled_dot_product_attention, MATH branch, "
                        "line for line as in 2.13.0 (read in the 2.11.0 wheel: the function from line 714 on is "
                        "identical)",
                    ),
                ),
                Cause(
                    "2.13.0+cpu",
                    (
                        "torch/nested/_internal/sdpa.py:892-931 jagged_scaled_dot_product_attention, MATH branch: "
                        "`torch._scaled_dot_product_attention_math(query, key, value, ...)` on strided nested "
                        "tensors, no cast to fp32 (the C++ math function itself was not read: its behaviour on "
                        "nested against dense inputs was measured)",
                    ),
                ),
            ),
            (
                "Dense SDPA math on the same bf16 inputs is within 0.005 of the fp32 reference; the jagged call is "
                "0.69 off and equals, to the bit, attention with q.k^T rounded to bf16 (the script's control).",
                "The MATH backend's documented behaviour is to upcast fp16/bf16 to fp32 (pytorch/pytorch#163508).",
            ),
            "Jagged SDPA keeps the scores in fp32, as dense math does.",
            (
                Related(
                    "pytorch/pytorch#116445",
                    "pull request",
                    "[Nested Tensor]Support SDPA math fallback for jagged layout nested tensor",
                    "closed",
                    "introduced the jagged math fallback through strided nested tensors",
                ),
                Related(
                    "pytorch/pytorch#163508",
                    "pull request",
                    "Fix scaled_dot_product_attention reference implementation to match MATH backend",
                    "closed",
                    "documents that dense MATH upcasts fp16/bf16 to fp32",
                ),
            ),
        ),
        Facts(
            "torch-flex-compiled-no-valid-choices",
            "torch-flex-compiled-no-valid-choices",
            LOCATED,
            "A call of fewer than 128 query rows takes Inductor's flex decoding template (_use_flex_decoding), which "
            "folds the GQA group into the query tile: BLOCK_M = next_power_of_2(q_len * group). Every config is "
            "skipped when the block mask's SPARSE_Q_BLOCK_SIZE (128) is not a multiple of BLOCK_M, which is so "
            "whenever q_len * group exceeds 128; autotuning is then left with no choice and raises. The H200 sweep "
            "(probe_torch_flex_decoding_block_m.py part A) follows the rule to the row: 128 runs, 130 to 136 raise. "
            "2.11's lines are read in its macOS arm64 wheel (the same Python sources as the H200's build).",
            (
                Cause(
                    "2.11.0+cu130",
                    (
                        "torch/_inductor/kernel/flex/flex_decoding.py:39-60 _use_flex_decoding: q_len < 128 takes "
                        "the decoding template",
                        "torch/_inductor/kernel/flex/flex_decoding.py:277-287 BLOCK_M = "
                        "next_power_of_2(q_len * gqa_shared_heads)",
                        "torch/_inductor/kernel/flex/flex_decoding.py:321-325 `if SPARSE_Q_BLOCK_SIZE % "
                        'kernel_options["BLOCK_M"] != 0: continue` for every config',
                        "torch/_inductor/select_algorithm.py:2913-2914 `if len(choices) == 0: raise "
                        'self.create_no_valid_choices(name, "No choices exist for backend.")`',
                    ),
                ),
                Cause(
                    "2.13.0+cpu",
                    (
                        "torch/_inductor/kernel/flex/flex_decoding.py:40-61 _use_flex_decoding: q_len < 128",
                        "torch/_inductor/kernel/flex/flex_decoding.py:279-292 BLOCK_M = "
                        "next_power_of_2(q_len * gqa_shared_heads)",
                        "torch/_inductor/kernel/flex/flex_decoding.py:327-331 the same skip of every config",
                        "torch/_inductor/select_algorithm.py:3890-3891 `if len(choices) == 0: raise "
                        'self.create_no_valid_choices(name, "No choices exist for backend.")`',
                    ),
                    "a CPU build: flex runs eagerly here, the CUDA templates are not used",
                ),
            ),
            (
                "Eager flex_attention runs each failing call (the script's control), and so does the compiled one "
                "given kernel_options BLOCK_M = BLOCK_N = 32 or FORCE_USE_FLEX_ATTENTION (the main template): the "
                "library runs the call it refuses to compile.",
                "Without GQA the same query lengths compile (q_len * 1 < 128), and so do 128 rows or more.",
            ),
            "Compiled flex_attention runs every call eager flex_attention runs: the decoding template splits the "
            "folded rows over several M tiles, or _use_flex_decoding declines such a call to the main template.",
            (
                Related(
                    "pytorch/pytorch#133562",
                    "issue",
                    "FlexAttention with BLOCK_SIZE!=128",
                    "closed",
                    "the same NoValidChoicesError from flex_attention's lowering, for a block mask of another block "
                    "size",
                ),
                Related(
                    "pytorch/pytorch#146260",
                    "issue",
                    "flex attention NoValidChoicesError with torch 2.6",
                    "closed",
                    "the same error in the backward lowering, a regression in 2.6",
                ),
            ),
        ),
        Facts(
            "torch-nested-causal-empty-query",
            "torch-nested-empty-query",
            NOT_LOCATED,
            "The jagged selector's last resort: with a query of sequence length 0 both fused kernels refuse "
            "(_check_for_seq_len_0_nested) and math refuses is_causal, so _select_sdp_backend tries cuDNN last, "
            "and on the H200 can_use_cudnn_attention accepts (the script prints SDPBackend.CUDNN_ATTENTION; with "
            "cuDNN disabled it prints ERROR and the call is refused). The cuDNN branch then, probably, hands the "
            "output of _cudnn_attention_forward for no rows (None) to nested_view_from_values_offsets_lengths, "
            "whose argument check raises the TypeError; 2.11's lines are not read here.",
            (
                Cause(
                    "2.11.0+cu130",
                    (
                        "torch/nested/_internal/sdpa.py in the H200's build: not read (only torch 2.13.0+cpu is "
                        "unpacked here)",
                    ),
                ),
                Cause(
                    "2.13.0+cpu",
                    (
                        "torch/nested/_internal/sdpa.py:302-337 _select_sdp_backend: flash, efficient, math, then "
                        "cuDNN; :235-275 the jagged checks (seq len 0 refuses the fused kernels, is_causal math)",
                        "torch/nested/_internal/sdpa.py:852-891 the cuDNN branch: _cudnn_attention_forward, then "
                        "nested_view_from_values_offsets_lengths(attention, ...)",
                    ),
                    "a CPU build: cuDNN refuses CPU tensors, so the selector returns ERROR and the call is refused "
                    "('No viable backend for scaled_dot_product_attention was found')",
                ),
            ),
            (
                "The same call with cuDNN disabled is refused cleanly (the script's first control), and a causal "
                "batch with query rows runs (its second).",
            ),
            "A jagged SDPA call no backend takes is refused with the RuntimeError the CPU gives, on every device.",
        ),
        Facts(
            "torch-nested-cudnn-single-row-hangs",
            "torch-nested-cudnn-single-rows",
            NOT_LOCATED,
            "Jagged SDPA's cuDNN branch packs the batch (_sdpa_nested_preprocessing: cumulative lengths, the "
            "longest sequence) and calls _cudnn_attention_forward; with two or more requests and one query row "
            "at most in each (max_seqlen_q 1), the H200 call does not return, whatever the keys. One request "
            "of one row returns, and so does a batch where one request has two rows. The wait is inside cuDNN's "
            "ragged attention or torch's call of it (aten's C++ and cuDNN were not read; 2.11's Python lines are read "
            "in its macOS arm64 wheel, the same sources as the H200's build).",
            (
                Cause(
                    "2.11.0+cu130",
                    (
                        "torch/nested/_internal/sdpa.py:293-337 _select_sdp_backend: cuDNN is asked only "
                        "can_use_cudnn_attention, no jagged check",
                        "torch/nested/_internal/sdpa.py:549-620 _sdpa_nested_preprocessing; :852-891 the cuDNN "
                        "branch's _cudnn_attention_forward(query, key, value, ..., max_seqlen_batch_q, "
                        "max_seqlen_batch_kv)",
                    ),
                ),
                Cause(
                    "2.13.0+cpu",
                    (
                        "torch/nested/_internal/sdpa.py:293-337 _select_sdp_backend, the same",
                        "torch/nested/_internal/sdpa.py:852-891 the cuDNN branch: _cudnn_attention_forward",
                    ),
                    "a CPU build: cuDNN refuses CPU tensors, so the call is refused",
                ),
            ),
            (
                "The same cuDNN call returns for q [2, 2], q [1] alone and q [1, 2] (the script's controls and "
                "variants), and nested-math computes every such batch.",
            ),
            "A decode batch through jagged SDPA's cuDNN path returns its rows, or is refused by the selector.",
        ),
        Facts(
            "torch-nested-cudnn-keyless-request-rows",
            "torch-sdpa-empty-rows",
            NOT_LOCATED,
            "Jagged SDPA's cuDNN branch packs the batch (_sdpa_nested_preprocessing: cumulative lengths, the "
            "longest sequence) and calls _cudnn_attention_forward with a cumulative KV length that does not grow "
            "for a request without keys; nothing on the way refuses such a request or writes its rows, and the kernel "
            "does not write them either: on memory the allocator took back filled with 1024, every row of such a "
            "request read 1024 (first, middle or last in the batch), on fresh memory 0. The H200's torch "
            "2.11.0+cu130 loads cuDNN 9.19, and cuDNN's own frontend tests skip zero-length sequences below cuDNN "
            "9.25 (cudnn-frontend#943). Why cuDNN skips them was not read (closed source); aten's C++ check of the "
            "call was not read either.",
            (
                Cause(
                    "2.11.0+cu130",
                    (
                        "torch/nested/_internal/sdpa.py:293-337 _select_sdp_backend: cuDNN is asked only "
                        "can_use_cudnn_attention, no check of a request's lengths",
                        "torch/nested/_internal/sdpa.py:549-620 _sdpa_nested_preprocessing; :852-891 the cuDNN "
                        "branch's _cudnn_attention_forward(query, key, value, ..., cumulative_sequence_length_kv, "
                        "...)",
                    ),
                ),
                Cause(
                    "2.13.0+cpu",
                    (
                        "torch/nested/_internal/sdpa.py:293-337 _select_sdp_backend, the same",
                        "torch/nested/_internal/sdpa.py:852-891 the cuDNN branch: _cudnn_attention_forward",
                    ),
                    "a CPU build: cuDNN refuses CPU tensors, so the call is refused",
                ),
            ),
            (
                "nested-math and nested-auto write the same batch's rows 0 (the same H200 run); the probe's batches "
                "without a request of no keys are right on reused memory too, and those with one are right on fresh "
                "memory, which reads 0 (as the single-row hang script's q [2, 2] over kv [0, 3] was, in its own "
                "process).",
            ),
            "A request with no key gets rows of 0 from every jagged SDPA backend, as from math, or the call is "
            "refused.",
            (
                Related(
                    "NVIDIA/cudnn-frontend#943",
                    "issue",
                    "test(sdpa): random ragged sweeps lack the cuDNN >= 9.25 gate for zero-length sequences (NaN rows "
                    "on 9.22)",
                    "closed",
                    "cuDNN's frontend tests gate zero-length ragged sequences on cuDNN 9.25; below it a batch with no "
                    "keys got NaN rows there, rows never written here (cuDNN 9.19)",
                ),
            ),
        ),
        Facts(
            "torch-flex-compiled-fp32-d192-no-config",
            "torch-flex-compiled-fp32-d192",
            PROBABLE,
            "On compute capability 9.0 the forward template's tile comes from h100_default_flex_config, which has "
            "fp32 entries for head dims 64, 128 and 256 but none for 192; a 192 call falls through to FlexConfig(64, "
            "64, 3, 4), whose three stages of fp32 K and V tiles at head dim 192 need more shared memory (278784 "
            "bytes) than a block has (232448), so Triton refuses it and autotuning is left with no config. bf16 at "
            "192 takes the same fallback and fits (half the bytes); SM100's table has (float32, 192) = (32, 64, 2, "
            "4), and 2.13's H100 table adds (float32, 192) = (32, 64, 1, 8). That such a tile compiles on the H200 "
            "was not tried (the fix is read, not run).",
            (
                Cause(
                    "2.11.0+cu130",
                    (
                        "torch/_inductor/template_heuristics/triton.py:1195-1205 h100_default_flex_config: no "
                        "(torch.float32, 192)",
                        "torch/_inductor/template_heuristics/triton.py:1239-1255 the fallback FlexConfig(64, 64, 3, 4) "
                        "and the (9, 0) lookup",
                        "torch/_inductor/template_heuristics/triton.py:1180-1184 sm_100_default_flex_config: "
                        "(torch.float32, 192) = FlexConfig(32, 64, 2, 4)",
                    ),
                ),
                Cause(
                    "2.13.0+cpu",
                    (
                        "torch/_inductor/template_heuristics/triton.py:1345-1356 h100_default_flex_config with "
                        "(torch.float32, 192) = FlexConfig(32, 64, 1, 8)",
                        "torch/_inductor/template_heuristics/triton.py:1392-1408 the same fallback and lookup",
                    ),
                    "the H100 table has an fp32 192 entry here (one stage, 32x64 tiles): by these lines 2.13 would "
                    "compile the call; a CPU build, so not run",
                ),
            ),
            (
                "bf16 192/128, fp32 128/128 and fp32 256/256 compile at the same rows (the probe's part B), and "
                "eager flex_attention runs the fp32 192/128 calls.",
            ),
            "Compiled flex_attention picks a tile that fits the device's shared memory for every head dim it "
            "accepts, as the SM100 table does for fp32 at 192.",
            (
                Related(
                    "pytorch/pytorch#180278",
                    "issue",
                    "flex_attention with head_dim=192 fails on SM86 GPUs (Triton shared memory OOM)",
                    "open",
                    "the same fallthrough to (64, 64, 3, 4) for head dim 192, on SM86 in bf16; its fix adds bf16 and "
                    "fp16 entries, not fp32 on SM90",
                ),
            ),
        ),
        Facts(
            "torch-sdpa-empty-rows",
            "torch-sdpa-empty-rows",
            NOT_LOCATED,
            "The cuDNN and memory-efficient SDPA kernels do not zero a row whose mask allows no key.",
            (
                Cause("2.11.0+cu130", _TORCH_NOT_READ),
                Cause("2.13.0+cpu", _TORCH_NOT_READ, "a CPU build: no cuDNN or memory-efficient kernel to run"),
            ),
            (
                "The math backend writes 0 on the same inputs (the script's control), and the flash backend writes "
                "0 for causal_lower_right: torch's backends disagree on one call.",
            ),
            "Every SDPA backend returns 0 for a row whose mask allows no key, as math does.",
        ),
    )
}
