"""The known-failure ledger: library defects attncheck has confirmed, as data.

An entry exists only for a defect shown by a standalone script of plain library calls in
docs/evidence/ (the `evidence` path, run with `evidence_args`), never for a tolerance question. The
script exits 1 when the defect shows and 0 when it does not (anything else: it could not judge);
`attncheck ledger verify` runs them against the installed library (docs/ledger.md). `confirmed` says whether
that script has reproduced it on the hardware named in `seen`; an entry observed through the
harness whose script has not yet run there says so. `applies(case, backend)` picks out the
records a defect explains when the case alone shows it. A lifecycle defect, one that needs a
sequence of plans on one wrapper, has `history(plans, backend)`: a predicate over the wrapper's
plans (case records, the failing plan last), with which a scenario machine recognises the defect at
the step where it shows, logs it as known, and goes on (`history_entry_for`). `upstream` is the
library's issue URL once filed (None: not filed yet).

A `crash` entry is a case that kills the process or its CUDA context: it is never launched (the
run records it as skipped, naming the entry), because launching it would take the run down.

Runs annotate matching failing records with the entry id (`ParityRecord.known`); whether a
known failure still fails the gate is the gate's decision (conformance/gate.py), not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable, Collection, Optional, Sequence

from kernels.flashinfer.adapter import AdapterOptions
from kernels.standin_label import FAULT_SUFFIX
from routing.spec import RoutingQuery, expected_route
from routing.specs.flashinfer_cuda import SPEC_072, SPEC_074

Applies = Optional[Callable[[dict[str, Any], str], bool]]
# Over one wrapper's plans (case records in order, the failing plan last) and the backend asked for.
History = Optional[Callable[[list[dict[str, Any]], str], bool]]
# What a record of the defect shows; "crash": the process or its CUDA context dies (never launched).
ENTRY_STATUSES: tuple[str, ...] = ("error", "fail", "crash")
NOT_FILED = "not filed upstream yet"
# The adapter options a run has when it names none, for `options` rules.
DEFAULT_OPTIONS: dict[str, Any] = {f.name: f.default for f in fields(AdapterOptions)}
# Keys per request from which jagged SDPA's bf16 scores show in a record (_torch_nested_scores_in_half).
NESTED_LONG_KV = 300
# Keys per request from which every fa2 causal request with more query rows than keys was wrong on the H200
# (_fa2_causal_keyless_tile): one KV tile (CTA_TILE_KV, a tiling choice) or more; under 128 it depends on the tile.
FA2_KEYLESS_TILE_KV = 128
# The fa2 single prefill's split-KV merge (_fa2_single_merge_launch): CUDA's threads per block; the fewest keys per
# chunk; the H200's SMs, with one block of the prefill kernel per SM (the least occupancy: fewer chunks than any
# real one, so a split this predicts is one the kernel makes).
CUDA_MAX_THREADS_PER_BLOCK = 1024
FA2_SINGLE_MIN_CHUNK_KV = 256
FA2_SINGLE_SMS = 132


@dataclass(frozen=True)
class KnownFailure:
    id: str
    target: str
    versions: tuple[str, ...]  # library versions the defect was seen in
    summary: str
    status: str  # what a record shows: one of ENTRY_STATUSES
    evidence: str  # standalone reproduction, relative to the repo root
    confirmed: bool  # the script reproduced it on the hardware in `seen`
    seen: str
    applies: Applies = None
    history: History = None
    upstream: Optional[str] = None
    archs: tuple[str, ...] = ()  # architectures it exists on (conformance.markers arch names); () = every one
    modes: tuple[str, ...] = ()  # "eager" and/or "graph" (a "+graph" backend); () = both
    # adapter options the run must use (e.g. {"mask_form": ("packed", "packed_flat")}); {} = any
    options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # arguments the evidence script takes to judge this entry's defect alone (a script shared by entries)
    evidence_args: tuple[str, ...] = ()
    # why a record's wrong output is not a function of its case (a race, rows never written, reads past a buffer);
    # "" = the same case gives the same output from any wrapper in any process, so a control from untouched
    # state that answers otherwise shows history this entry does not explain (conformance/explore/machines.py)
    unrepeatable: str = ""
    # how this lifecycle can end the CUDA context (an illegal address), as its evidence showed; "" = it does not.
    # A record whose fresh control could not run because the context was lost is then named by the history rule
    # alone (conformance/gate.py Ledger.verdict); otherwise only a record a fresh adapter passed is.
    loses_context: str = ""


def _empty_batch(c: dict[str, Any], backend: str) -> bool:
    return c["layout"] in ("paged", "ragged") and len(c["qo_lens"]) == 0


def _page_mask_bytes(c: dict[str, Any]) -> list[int]:
    """The bytes plan() packs each request's mask into: (len + 7) // 8 of len = qo_len * ((pages - 1) *
    page_size + last_page_len) (_compute_page_mask_indptr, prefill.py:1595-1615; segment_packbits,
    packbits.py:128-132), which is -qo_len * page_size for a request with no pages."""
    ps = c["page_size"]
    return [(q * (k if k > 0 else -ps) + 7) // 8 for q, k in zip(c["qo_lens"], c["kv_lens"])]


def _mask_over_zero_pages(c: dict[str, Any], backend: str) -> bool:
    """A request with queries and no pages drives the packed mask's size below zero: plan() raises."""
    return (
        c["layout"] == "paged"
        and c["mask"] == "custom"
        and any(q > 0 and k == 0 for q, k in zip(c["qo_lens"], c["kv_lens"]))
        and sum(_page_mask_bytes(c)) < 0
    )


def _mask_short_of_zero_pages(c: dict[str, Any], backend: str) -> bool:
    """A request with queries and no pages shortens the packed mask without making its size negative:
    plan() returns, and the requests before it read bits the buffer does not hold."""
    return (
        c["layout"] == "paged"
        and c["mask"] == "custom"
        and any(q > 0 and k == 0 for q, k in zip(c["qo_lens"], c["kv_lens"]))
        and sum(_page_mask_bytes(c)) >= 0
        and not _mask_segment_before_buffer(c, backend)
        and not _mask_into_empty_buffer(c, backend)
    )


def _mask_after_zero_pages(c: dict[str, Any], backend: str) -> bool:
    """A request with mask bits after one with queries and no pages, where plan() returns (_mask_short_of_zero_pages):
    its mask segment starts qo_len * page_size bits early per such request before it, and it reads the tail of
    the request before's mask in place of the head of its own."""
    if not _mask_short_of_zero_pages(c, backend):
        return False
    seen_empty = False
    for q, k in zip(c["qo_lens"], c["kv_lens"]):
        if q * k > 0 and seen_empty:
            return True
        seen_empty = seen_empty or (q > 0 and k == 0)
    return False


def _mask_segment_before_buffer(c: dict[str, Any], backend: str) -> bool:
    """The same negative length in a request before others, the total still >= 0: a later request with mask
    bits starts its segment at a negative bit offset, and plan()'s segment_packbits reads and writes before
    the buffers (the CUDA context is lost)."""
    if c["layout"] != "paged" or c["mask"] != "custom":
        return False
    if not any(q > 0 and k == 0 for q, k in zip(c["qo_lens"], c["kv_lens"])) or sum(_page_mask_bytes(c)) < 0:
        return False
    start = 0
    for q, k in zip(c["qo_lens"], c["kv_lens"]):
        bits = q * (k if k > 0 else -c["page_size"])
        if bits > 0 and start < 0:
            return True
        start += bits
    return False


def _mask_into_empty_buffer(c: dict[str, Any], backend: str) -> bool:
    """The same negative lengths bringing the packed total to exactly 0 while an earlier request has bits:
    segment_packbits allocates an empty output (no storage) and still writes those bits into it (the CUDA
    context is lost). Where a segment also starts before the buffer, that entry names it."""
    if c["layout"] != "paged" or c["mask"] != "custom":
        return False
    if not any(q > 0 and k == 0 for q, k in zip(c["qo_lens"], c["kv_lens"])):
        return False
    sizes = _page_mask_bytes(c)
    return sum(sizes) == 0 and any(b > 0 for b in sizes) and not _mask_segment_before_buffer(c, backend)


def _mask_after_mask_bits(c: dict[str, Any], backend: str) -> bool:
    """A masked batch with a request whose mask bits start after some other request's (offset > 0)."""
    if c["layout"] not in ("paged", "ragged") or c["mask"] != "custom":
        return False
    offset = 0
    for q, k in zip(c["qo_lens"], c["kv_lens"]):
        if q * k > 0 and offset > 0:
            return True
        offset += q * k
    return False


def _window_wider_than_split(c: dict[str, Any], backend: str) -> bool:
    """fa2 paged, sliding window without causal, a request whose rows see more keys than the split-KV
    scheduler budgets for a window (window_left + CTA_TILE_Q, CTA_TILE_Q at most 128; scheduler.cuh:627-633)."""
    return (
        backend == "fa2"
        and c["layout"] == "paged"
        and not c["causal"]
        and c["window_left"] >= 0
        and c["mask"] == "none"
        and any(q > 128 and k > c["window_left"] + 128 for q, k in zip(c["qo_lens"], c["kv_lens"]))
    )


def _no_query_rows(c: dict[str, Any], backend: str) -> bool:
    """fa2 (asked for, or auto's pick on sm90): a batch of one or more requests with no query rows at all
    (an empty batch is its own entry)."""
    return (
        c["layout"] in ("paged", "ragged")
        and len(c["qo_lens"]) > 0
        and sum(c["qo_lens"]) == 0
        and _runs_on_in_both(c, backend, "fa2")
    )


def _prefill_query(c: dict[str, Any]) -> RoutingQuery:
    """The record's fields the selector reads, as a routing query on sm90."""
    qo, kv = tuple(c["qo_lens"]), tuple(c["kv_lens"])
    return RoutingQuery(
        api=c["layout"],
        arch="sm90",
        q_dtype=c["q_dtype"],
        kv_dtype=c["kv_dtype"],
        custom_mask=c["mask"] == "custom",
        head_dim_qk=c["head_dim_qk"],
        head_dim_vo=c["head_dim_vo"],
        qo_lens=qo,
        kv_lens=kv,
        max_q_len=max(qo, default=0),
        max_kv_len=max(kv, default=0),
    )


def _sm90_auto_picks_fa3(c: dict[str, Any]) -> bool:
    """What a fresh wrapper's auto resolves a prefill case to on sm90 is fa3, asked of the FlashInfer CUDA
    routing spec (its rows read the library's selector, utils.py:616-628: no custom mask, fa3's head dims,
    not an fp8 KV under a 16-bit query) with the record's fields the selector reads. The rows are
    0.7.2.post1's: every entry whose rule (case or history) asks this names that version alone (0.7.4
    picks otherwise, fa2 for a short paged batch), which tests/harness/test_known_failures.py holds."""
    return expected_route(SPEC_072, _prefill_query(c)).backend == "fa3"


def _runs_on(c: dict[str, Any], backend: str, kernel: str) -> bool:
    """`backend` runs `kernel` (fa2 or fa3) for this prefill case on sm90: asked for, or auto's fresh pick."""
    if backend == kernel:
        return True
    return backend == "auto" and _sm90_auto_picks_fa3(c) == (kernel == "fa3")


def _runs_on_in_both(c: dict[str, Any], backend: str, kernel: str) -> bool:
    """`backend` runs `kernel` for this prefill case on sm90 in 0.7.2.post1 and 0.7.4 alike: asked for, or a
    fresh auto wrapper's pick where both versions' rows agree on it (a short paged batch: they do not), for
    the entries seen in both versions."""
    if backend == kernel:
        return True
    q = _prefill_query(c)
    return backend == "auto" and expected_route(SPEC_072, q).backend == kernel == expected_route(SPEC_074, q).backend


def _fa3_hnd(c: dict[str, Any], backend: str) -> bool:
    """fa3 ragged or single prefill over an HND cache, asked for or what sm90's auto resolves to there."""
    return c["layout"] in ("ragged", "single") and c["kv_layout"] == "HND" and _runs_on_in_both(c, backend, "fa3")


def _fa3_paged_192_128(c: dict[str, Any], backend: str) -> bool:
    """fa3 paged prefill at head dims (192, 128): what sm90's auto resolves to there. fa3 asked for is refused by a
    deliberate check, which supports() declines (kernels/flashinfer/support.py), so a record that ran fa3 on such a
    plan came through auto (entry_for asks about the kernel an auto record ran)."""
    return (
        c["layout"] == "paged"
        and (c["head_dim_qk"], c["head_dim_vo"]) == (192, 128)
        and _runs_on_in_both(c, backend, "fa3")
    )


FA3_CTA_Q = 128  # fa3's query tile at head dim 128 (hopper/kernel_traits.cuh); 2 * CTA_Q MMA threads


def _fa3_lse_after_empty_tile(c: dict[str, Any], backend: str) -> bool:
    """fa3 paged or ragged, fp16 or bf16, head dim 128, causal, LSE asked for, any soft cap: a request with a
    query tile that sees no key (store_zero's LSE loop then reaches the next tile's rows) whose next tile has
    rows that do, followed by another request (alone, the probe never saw it)."""
    if not (
        c["layout"] in ("paged", "ragged")
        and c["q_dtype"] in ("fp16", "bf16")
        and (c.get("head_dim_qk"), c.get("head_dim_vo")) == (128, 128)  # where fa3's CTA_Q is 128
        and c.get("causal")
        and c.get("return_lse")
        and c.get("mask", "none") == "none"
        and _runs_on_in_both(c, backend, "fa3")
    ):
        return False
    q, k = c["qo_lens"], c["kv_lens"]
    return any(_rows_past_an_empty_tile(q[i], k[i]) and sum(q[i + 1 :]) > 0 for i in range(len(q)))


def _rows_past_an_empty_tile(qo: int, kv: int) -> bool:
    """Whether a tile of `qo` query rows over `kv` keys sees no key (causal, bottom-right: its last row r has
    r + kv - qo < 0) and the tile after it, in the same request, has a row that sees one."""
    for t in range((qo + FA3_CTA_Q - 1) // FA3_CTA_Q):
        last = min(qo, (t + 1) * FA3_CTA_Q) - 1
        nxt_last = min(qo, (t + 2) * FA3_CTA_Q) - 1
        if last + kv - qo < 0 and nxt_last > last and nxt_last + kv - qo >= 0:
            return True
    return False


# torch's batched backends: one SDPA call on the batch padded, or on jagged nested tensors.
PADDED, NESTED = "padded-", "nested-"
BATCHED_AUTO = (PADDED + "auto", NESTED + "auto")


def _torch_rows_without_keys(c: dict[str, Any], backend: str) -> bool:
    """A torch SDPA kernel that writes non-zero rows where no key is allowed, on a case that has such rows:
    cuDNN for a custom mask (materialize gives every masked request a fully masked row,
    scenarios/tensors.py `_custom_mask`) or causal with more queries than keys; memory-efficient for the
    latter where it takes causal_lower_right itself (no custom mask, no window: with either the adapter
    passes a materialised mask, whose empty rows it writes as 0). `backend` may be an auto record's
    kernels joined with '+' (requests routed apart), or a padded batch's "padded-<kernel>": one call on the
    batch padded, whose mask is materialised wherever a request is padded (kernels/torch_padded.py)."""
    padded = backend.startswith(PADDED)
    kernels = set(backend.removeprefix(PADDED).split("+"))
    if not kernels & {"cudnn", "efficient"}:
        return False
    pairs = list(zip(c["qo_lens"], c["kv_lens"]))
    masked_rows = c["mask"] == "custom" and any(q > 0 and k > 0 for q, k in pairs)
    causal_short = c["causal"] and any(q > k > 0 for q, k in pairs)
    lower_right = causal_short and c["mask"] == "none" and c["window_left"] < 0
    if padded:  # causal_lower_right reaches SDPA only for a batch with nothing padded
        lower_right = lower_right and len(set(c["qo_lens"])) == 1 and len(set(c["kv_lens"])) == 1
    return ("cudnn" in kernels and (masked_rows or causal_short)) or ("efficient" in kernels and lower_right)


def _torch_nested_causal_no_query_rows(c: dict[str, Any], backend: str) -> bool:
    """Jagged SDPA on cuDNN (nested-auto picks it, nested-cudnn forces it), causal, a batch of requests none of
    which has a query row: what the H200 raised on (one request of 0 rows over 7 keys); a batch mixing empty and
    non-empty requests was not seen."""
    return (
        backend in (NESTED + "auto", NESTED + "cudnn")
        and c["causal"]
        and len(c["qo_lens"]) > 0
        and not any(c["qo_lens"])
    )


# torch's flex decoding template (torch/_inductor/kernel/flex/flex_decoding.py) takes calls of fewer query rows
# than this, packs q_len * group rows into one M tile, and keeps no config whose tile exceeds the block mask's
# SPARSE_Q_BLOCK_SIZE (128): (_torch_flex_compiled_no_choices).
FLEX_DECODING_ROWS = 128


def _torch_flex_compiled_no_choices(c: dict[str, Any], backend: str) -> bool:
    """Compiled FlexAttention on CUDA raising NoValidChoicesError where eager runs: a GQA call of fewer than 128
    query rows (flex: the batch's rows as one sequence; flex-padded: the longest request, every request padded to
    it) takes the decoding template, whose tile next_power_of_2(q_len * group) exceeds 128 when q_len * group
    does, and then no config is left. Read in torch's source; every record of the H200 runs fits it (2026-12-03
    and 2026-12-04: the raises and the passes)."""
    if backend not in ("flex", "flex-padded"):
        return False
    group = c["num_qo_heads"] // c["num_kv_heads"]
    rows = sum(c["qo_lens"]) if backend == "flex" else max(c["qo_lens"], default=0)
    return 0 < rows < FLEX_DECODING_ROWS and rows * group > FLEX_DECODING_ROWS  # group > 1 follows


def _torch_nested_cudnn_single_rows(c: dict[str, Any], backend: str) -> bool:
    """Jagged SDPA forced to cuDNN on a batch of two or more requests with at most one query row each (a decode
    step), heads equal (where they differ the call is refused): the call does not return."""
    return (
        backend == NESTED + "cudnn"
        and c["num_qo_heads"] == c["num_kv_heads"]
        and len(c["qo_lens"]) > 1
        and max(c["qo_lens"]) == 1
    )


def _torch_nested_cudnn_keyless_request(c: dict[str, Any], backend: str) -> bool:
    """Jagged SDPA forced to cuDNN on a batch of two or more requests, one of which has query rows and no key
    (first, middle or last alike), not a decode batch (that one hangs): that request's rows should be 0 and are
    never written, so they read whatever the memory held (0 in a fresh process)."""
    if backend != NESTED + "cudnn":
        return False
    qo, kv = c["qo_lens"], c["kv_lens"]
    return len(qo) > 1 and max(qo) > 1 and any(q > 0 and k == 0 for q, k in zip(qo, kv))


def _torch_flex_compiled_fp32_d192(c: dict[str, Any], backend: str) -> bool:
    """Compiled FlexAttention on CUDA, fp32 at head dim 192 through the main template (128 query rows or more):
    every config needs more shared memory than the H200 has, so none is left."""
    if backend not in ("flex", "flex-padded") or c["q_dtype"] != "fp32" or c["head_dim_qk"] != 192:
        return False
    return (sum(c["qo_lens"]) if backend == "flex" else max(c["qo_lens"], default=0)) >= FLEX_DECODING_ROWS


def _torch_nested_scores_in_half(c: dict[str, Any], backend: str) -> bool:
    """Jagged SDPA math in bf16 where its bf16 scores move the softmax past the bound: input_scale >= 4, head
    dims up to 128, and a request with at least NESTED_LONG_KV keys and either 3 query rows or logits below
    input_scale 16 (at 16 a single row's softmax is one-hot, exact whatever the rounding). Value-dependent:
    this is the failing records of the seed-0 quick and standard matrices, measured
    (docs/evidence/2026-12-02-batch-axis-faults.md), not a law."""
    scale = c.get("input_scale", 1.0)
    return (
        backend in ("nested-math", "nested-auto")
        and c["q_dtype"] == "bf16"
        and scale >= 4
        and c["head_dim_qk"] <= 128
        and any(k >= NESTED_LONG_KV and (q >= 3 or 0 < q and scale < 16) for q, k in zip(c["qo_lens"], c["kv_lens"]))
    )


def _fa3_hnd_group(c: dict[str, Any]) -> int:
    """The group size the kernel computes: num_qo_heads // (K's token count, read as its head count)."""
    kv = sum(c["kv_lens"]) if c["layout"] == "ragged" else c["kv_lens"][0]
    return c["num_qo_heads"] // kv if kv else 0


def _unmasked_after_masked(plans: list[dict[str, Any]], backend: str) -> bool:
    """A ragged wrapper re-planned without a custom mask after a plan with one (the old mask is never cleared)."""
    now = plans[-1]
    return now["layout"] == "ragged" and now["mask"] == "none" and any(p["mask"] == "custom" for p in plans[:-1])


def _fa2_causal_keyless_tile(c: dict[str, Any], backend: str) -> bool:
    """fa2 paged or ragged prefill, causal (no custom mask: that one masks every tile), a request with more query
    rows than keys and at least FA2_KEYLESS_TILE_KV keys: its first query tiles run without the causal mask."""
    return (
        backend == "fa2"
        and c["layout"] in ("paged", "ragged")
        and c.get("causal", False)
        and c.get("mask", "none") == "none"
        and any(q > k >= FA2_KEYLESS_TILE_KV for q, k in zip(c["qo_lens"], c["kv_lens"]))
    )


def _fa2_single_cta_tile_q(packed_qo: int, head_dim_vo: int) -> int:
    """FA2DetermineCtaTileQ (include/flashinfer/utils.cuh) for head dims under 512 on sm80+: query rows x group per
    CTA tile."""
    if packed_qo > 64 and head_dim_vo < 256:
        return 128
    return 64 if packed_qo > 16 else 16


def _fa2_single_merge_launch(c: dict[str, Any], backend: str) -> bool:
    """fa2 single prefill whose split-KV merge (MergeStates' small-set branch) would launch a block of
    bdx x num_qo_heads threads over CUDA's 1024, bdx = head_dim_vo / max(8, head_dim_vo / 32) for a 16-bit output:
    where the kernel surely splits the keys (two chunks even at one block per SM) into fewer chunks than query
    rows (at most ceil(kv / 256) chunks). Conservative both ways: a split that needs more occupancy is not
    claimed (136/8 heads at d64 raised on the H200 and is not claimed here)."""
    if backend != "fa2" or c["layout"] != "single" or c["o_dtype"] not in ("fp16", "bf16"):
        return False
    qo, kv, d = c["qo_lens"][0], c["kv_lens"][0], c["head_dim_vo"]
    bdx = d // max(8, d // 32)
    if bdx * c["num_qo_heads"] <= CUDA_MAX_THREADS_PER_BLOCK or kv <= FA2_SINGLE_MIN_CHUNK_KV:
        return False
    packed = qo * (c["num_qo_heads"] // c["num_kv_heads"])
    tiles = -(-packed // _fa2_single_cta_tile_q(packed, d))
    max_chunks = FA2_SINGLE_SMS // (c["num_kv_heads"] * tiles) if tiles else 0
    if max_chunks == 0:
        return False
    chunk = max(-(-kv // max_chunks), FA2_SINGLE_MIN_CHUNK_KV)
    fewest, most = -(-kv // chunk), -(-kv // FA2_SINGLE_MIN_CHUNK_KV)
    return fewest >= 2 and most < qo


def _auto_pick_changed(plans: list[dict[str, Any]], backend: str) -> bool:
    """A paged `auto` wrapper whose first plan resolved otherwise than a fresh wrapper resolves this plan
    (fa3 held for a plan fa3 cannot serve, or fa2 held where a fresh wrapper would pick fa3)."""
    if backend != "auto" or len(plans) < 2 or plans[-1]["layout"] != "paged":
        return False
    return _sm90_auto_picks_fa3(plans[0]) != _sm90_auto_picks_fa3(plans[-1])


LEDGER: tuple[KnownFailure, ...] = (
    KnownFailure(
        "flashinfer-empty-batch-plan",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "paged and ragged plan() raise torch's max() error on a batch with no requests",
        "error",
        "docs/evidence/repro_flashinfer_empty_batch_plan.py",
        confirmed=True,
        seen="2026-12-01 H200, the script (repro_flashinfer_empty_batch_plan.h200.txt); 0.7.4 alike through the "
        "adapter (fa2, fa2+graph)",
        applies=_empty_batch,
    ),
    KnownFailure(
        "flashinfer-paged-mask-zero-pages",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "paged plan() with a custom mask: a request with queries and no KV pages gets a negative mask "
        "length (_compute_page_mask_indptr ignores the kernels' zero-page rule); where that takes the packed "
        "mask's size below zero, plan() raises",
        "error",
        "docs/evidence/repro_flashinfer_paged_mask_zero_pages.py",
        confirmed=True,
        seen="2026-12-01 H200, the script (repro_flashinfer_paged_mask_zero_pages.h200.txt); 0.7.4 alike through "
        "the adapter",
        applies=_mask_over_zero_pages,
        options={"mask_form": ("bool",)},
    ),
    KnownFailure(
        "flashinfer-paged-mask-zero-pages-shifted",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "the same negative mask length where plan() returns: a request with mask bits after one with queries and no "
        "pages starts its mask qo_len * page_size bits early (in the packed mask and in the flat mask it is packed "
        "from), and reads the tail of the request before's mask in place of the head of its own, eager and graph",
        "fail",
        "docs/evidence/repro_flashinfer_paged_mask_zero_pages_shifted.py",
        confirmed=True,
        seen="2026-12-03 H200, the standard matrix on 0.7.4, eager fa2 (docs/evidence/2026-12-03-h200-2/, "
        "docs/evidence/2026-12-03-h200-3/README.md): paged-b7-h32x8-d256-bf16-p16NHD-custom_mask+zero_len and "
        "paged-b7-h1x1-d256-bf16-p16NHD-causal+custom_mask+zero_len, each worst at the first row after the "
        "requests with queries and no pages; the script on 0.7.2.post1 and 0.7.4 "
        "(docs/evidence/2026-12-03-h200-4/call1/): qo [8, 2, 8] over kv [40, 0, 40]: request 2 off by 1.6093, "
        "within 0.0042 of the reference under its mask read 32 bits early; the controls (no empty request; an "
        "empty request with no queries) within 0.0037; `attncheck ledger verify`: reproduces on both; the script "
        "as it reads now on 0.7.2.post1 (repro_flashinfer_paged_mask_zero_pages_shifted.h200.txt, "
        "docs/evidence/2026-12-03-h200-4/call2/)",
        applies=lambda c, b: _mask_after_zero_pages(c, b) and _runs_on_in_both(c, b, "fa2"),
        options={"mask_form": ("bool",)},
    ),
    KnownFailure(
        "flashinfer-paged-mask-zero-pages-graph-wrong",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "the same negative mask length where the packed size stays >= 0: plan() returns with a packed mask "
        "shorter than the requests before the empty one need; in CUDA-graph mode the output is wrong (eager "
        "passed)",
        "fail",
        "docs/evidence/repro_flashinfer_paged_mask_zero_pages_graph.py",
        confirmed=True,
        seen="2026-12-01 H200, through the adapter: paged page 5 NHD, bf16 q over e4m3 KV, qo [3, 3] over kv "
        "[128, 0]: fa2+graph and auto+graph (fa2) output error 0.479 against 0.041, fresh wrappers too; "
        "eager fa2 passes (docs/evidence/2026-12-01-flashinfer-h200-session-2.md and "
        "docs/evidence/2026-12-01-flashinfer-h200-session-3.md). The script "
        "(docs/evidence/2026-12-01-flashinfer-h200-session-4.md, "
        "repro_flashinfer_paged_mask_zero_pages_graph.h200.txt): eager 0.0034, graph run as is and replayed "
        "0.4205, request 0 alone 0.0034, against 0.05; its first two versions failed their own control (they "
        "did not fold causal into the custom mask, under which FlashInfer ignores `causal`: "
        "2026-12-01-h200-4/zero_pages_graph_script_v*.txt)"
        "; 2026-12-02 H200, `attncheck ledger verify` on 0.7.4: the script reproduces "
        "(docs/evidence/2026-12-02-h200-explore/)",
        applies=lambda c, b: _mask_short_of_zero_pages(c, b) and _runs_on_in_both(c, b, "fa2"),
        archs=("sm90",),
        modes=("graph",),
        options={"mask_form": ("bool",)},
        unrepeatable="the requests before the empty one read mask bits past the packed buffer's end",
    ),
    KnownFailure(
        "flashinfer-paged-mask-zero-pages-segment-before-buffer",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "the same negative mask length in a request before others, the packed total still >= 0: the later "
        "requests' mask segments start at a negative offset and plan()'s segment_packbits reads and writes before "
        "its buffers; the plan raises cudaErrorInvalidAddressSpace and the CUDA context is lost",
        "crash",
        "docs/evidence/repro_flashinfer_paged_mask_segment_before_buffer.py",
        confirmed=True,
        seen="2026-12-02 H200, the scenario machines (docs/evidence/2026-12-02-h200-explore-2/): "
        "lifecycle-clean-paged on 0.7.2.post1 and "
        "0.7.4, `plan fa2` of qo [24, 26] over kv [0, 6], page 1, 8/2 heads, bf16 head dim 128, causal, a custom "
        "mask: the plan raised cudaErrorInvalidAddressSpace and the context was lost; on 0.7.4 the graph subject "
        "met it too (qo [36, 8, 38] over kv [0, 1, 42], page 16); the standalone script reproduces on both "
        "versions (`attncheck ledger verify`, docs/evidence/2026-12-02-h200-explore-2/probe-sitting/): "
        "the empty request last and the other alone "
        "within 0.0095 of the reference, first: cudaErrorInvalidAddressSpace",
        applies=_mask_segment_before_buffer,
        options={"mask_form": ("bool",)},
    ),
    KnownFailure(
        "flashinfer-paged-mask-zero-pages-empty-buffer",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "the same negative mask lengths bringing the packed total to exactly 0 while an earlier request has mask "
        "bits: segment_packbits allocates an empty output and writes those bits into it; the plan raises an "
        "illegal memory access and the CUDA context is lost",
        "crash",
        "docs/evidence/repro_flashinfer_paged_mask_empty_buffer.py",
        confirmed=True,
        seen="2026-12-02 H200, the scenario machines with no fault injected (lifecycle-clean-paged, "
        "docs/evidence/2026-12-02-h200-lifecycle/) on 0.7.2.post1 and 0.7.4: `plan fa2` of qo [2, 1, 2] over kv "
        "[2, 0, 0], page 5, 1/1 heads, bf16 head dim 128, a custom mask (packed bytes 1 + 0 - 1 = 0): illegal "
        "memory access, the context lost; the standalone script reproduces on both versions "
        "(repro_flashinfer_paged_mask_empty_buffer.h200.txt): qo [2] over kv [2] and qo [2, 1] over kv [2, 0] "
        "within 0.0066 of the reference, qo [2, 1, 2] over kv [2, 0, 0]: cudaErrorIllegalAddress",
        applies=_mask_into_empty_buffer,
        options={"mask_form": ("bool",)},
    ),
    KnownFailure(
        "flashinfer-ragged-stale-mask",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "eager ragged plan() never clears a previous custom mask: an unmasked re-plan runs the old mask "
        "(and auto resolves as if masked)",
        "fail",
        "docs/evidence/repro_flashinfer_ragged_stale_mask.py",
        confirmed=True,
        seen="2026-11-29 H200 (fa2: max error 1.956 against 0.0042 fresh; auto: 1.956 against 0.0057); 2026-12-01 "
        "through the parity run on 0.7.2.post1 and 0.7.4 alike (unmasked ragged HND cases after a masked one); "
        "when the old mask is shorter than the new batch needs, an illegal memory access instead "
        "(repro_flashinfer_ragged_stale_mask_crash.h200.txt: masked [1]/[1031], then unmasked [1,300,300]/"
        "[33,33,128]; fresh and re-masked controls pass); 2026-12-01 "
        "(docs/evidence/2026-12-01-flashinfer-h200-session-5.md): after a masked plan whose "
        "one request has no query rows (an empty mask, a null buffer) the unmasked re-plan's kernel "
        "(MaskMode 2) reads mask bytes at 0x26-0x2b (compute-sanitizer memcheck), an illegal memory access "
        "in a fresh process too (2026-12-01-h200-5/followup-3)",
        history=_unmasked_after_masked,
        modes=("eager",),
        loses_context="an illegal memory access where the old mask is shorter than the new batch needs "
        "(repro_flashinfer_ragged_stale_mask_crash.h200.txt), and after a masked plan whose request has no query "
        "rows (2026-12-01-h200-5/followup-3)",
    ),
    KnownFailure(
        "flashinfer-packed-mask-indptr",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "packed_custom_mask: plan() keeps mask_indptr in elements while the kernel reads it as bytes, so "
        "every request after the first reads the wrong bits (both packbits and segment_packbits forms)",
        "fail",
        "docs/evidence/repro_flashinfer_packed_mask_indptr.py",
        confirmed=True,
        seen="2026-11-29 H200 (request 1 error 2.112 segment-packed, 2.933 packed whole; bool 0.005); 2026-12-01 "
        "through the matrix with mask_form packed and packed_flat: every failing record has mask bits after "
        "another request's, every case without passes (one packed_flat record, qo [300, 3] over kv [1031, 7], "
        "made an illegal memory access: the misread offset left the buffer)"
        "; 2026-12-02 H200, `attncheck ledger verify` on 0.7.4: the script reproduces "
        "(docs/evidence/2026-12-02-h200-explore/)",
        applies=_mask_after_mask_bits,
        options={"mask_form": ("packed", "packed_flat")},
        unrepeatable="the misread offsets read past the mask buffer (one record an illegal memory access)",
    ),
    KnownFailure(
        "flashinfer-sticky-paged-auto",
        "flashinfer",
        ("0.7.2.post1",),
        "paged auto resolves once per wrapper: after an unmasked plan picks fa3, a masked plan runs the "
        "SM90 kernel, which fails with 'operation not supported'",
        "error",
        "docs/evidence/repro_flashinfer_sticky_paged_auto.py",
        confirmed=True,
        seen="2026-11-30 H200 (BatchPrefillWithPagedKVCacheSM90Run failed with error: operation not supported)",
        # Case-level where the record says what ran: a masked paged plan that ran fa3 came through a held auto
        # wrapper (an explicit fa3 is never given a custom mask: supports() declines it).
        applies=lambda c, b: c["layout"] == "paged" and c["mask"] == "custom" and b == "fa3",
        history=_auto_pick_changed,
        archs=("sm90",),
    ),
    KnownFailure(
        "flashinfer-fa3-hnd-kv-heads-sigfpe",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "fa3 ragged/single prefill under kv_layout HND take num_kv_heads from K's token axis "
        "(batch_prefill_sm90.cu:131-134, single_prefill_sm90.cu:75-79): group_size = num_qo_heads // kv_len is 0 "
        "and the process dies of SIGFPE",
        "crash",
        "docs/evidence/repro_flashinfer_fa3_hnd_kv_heads.py",
        confirmed=True,
        seen="2026-12-01 H200, the script (repro_flashinfer_fa3_hnd_kv_heads.h200.txt): ragged 8/1 heads qo 300 "
        "kv 128 and single 32/8 heads qo 17 kv 33 on fa3 HND killed by SIGFPE; NHD and fa2 of the same "
        "tensors within 0.005 of the reference"
        "; 2026-12-02 H200, 0.7.4 through `attncheck explore` (docs/evidence/2026-12-02-h200-explore/): the "
        "ragged and ragged-graph subject processes were killed by signal 8 at an auto run of a ragged HND "
        "plan with num_qo_heads // KV tokens == 0 (flight records); its script timed out at verify's 120 s on"
        " both versions",
        applies=lambda c, b: _fa3_hnd(c, b) and _fa3_hnd_group(c) == 0,
        archs=("sm90",),
        evidence_args=("sigfpe",),
    ),
    KnownFailure(
        "flashinfer-fa3-hnd-kv-heads-wrong",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "fa3 ragged/single prefill under kv_layout HND take num_kv_heads from K's token axis: with kv_len <= "
        "num_qo_heads the kernel runs with the wrong head mapping and the output is wrong",
        "fail",
        "docs/evidence/repro_flashinfer_fa3_hnd_kv_heads.py",
        confirmed=True,
        seen="2026-12-01 H200, the script (repro_flashinfer_fa3_hnd_kv_heads.h200.txt): ragged 8/8 heads qo 127 "
        "kv 7, fa3 HND max error 2.941 where fa3 NHD gives 0.0078 and fa2 HND 0.0081"
        "; 2026-12-02 H200, `attncheck ledger verify` on 0.7.4: the script reproduces "
        "(docs/evidence/2026-12-02-h200-explore/)",
        applies=lambda c, b: _fa3_hnd(c, b) and _fa3_hnd_group(c) > 0 and sum(c["qo_lens"]) > 0,  # rows to be wrong
        archs=("sm90",),
        evidence_args=("wrong",),
        unrepeatable="the head mapping is read from K's token axis: which memory the kernel reads was not established",
    ),
    KnownFailure(
        "flashinfer-fa2-window-noncausal-split-kv",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "fa2 paged prefill with a sliding window and no causal mask: the split-KV scheduler budgets "
        "window_left + CTA_TILE_Q keys per query tile (scheduler.cuh:629-633, 'pad CTA_TILE_Q to consider the "
        "causal kv-len'; prefill.cuh:4293-4294 in the paged kernel), but a non-causal row sees every key right of "
        "its window start, so rows of a long query over a long KV lose keys and the output is wrong",
        "fail",
        "docs/evidence/probe_flashinfer_paged_window_noncausal.py",
        confirmed=True,
        seen="2026-12-01 H200, the script (probe_flashinfer_paged_window_noncausal.h200.txt): qo 300 over kv 4099 "
        "or 1031, window 64, error 0.52-0.58 against bf16 rounding 0.004-0.007, in HND and NHD, page 5 and "
        "16; causal, no window, or qo 17 within rounding; through the adapter on 0.7.4 alike",
        applies=_window_wider_than_split,
        archs=("sm90",),
    ),
    KnownFailure(
        "flashinfer-fa2-causal-keyless-tile-unmasked",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "fa2 paged and ragged prefill, causal, a request with more query rows than keys: the first masked KV tile "
        "is computed in uint32 (prefill.cuh mask_iteration, sub_if_greater_or_zero), which wraps for a query tile "
        "whose first row sees no key, so the KV tiles it runs take no causal mask: the rows of a tile where no row "
        "sees a key get attention over every key, those of the tile with rows both with and without keys over its "
        "first KV tile, the latter's rows with keys seeing keys right of their diagonal (non-zero output and finite "
        "LSE where there should be none)",
        "fail",
        "docs/evidence/repro_flashinfer_fa2_causal_keyless_tile.py",
        confirmed=True,
        seen="2026-12-03 H200, the standard matrix on 0.7.4 (docs/evidence/2026-12-03-h200-2/: three of its five "
        "unexplained fa2 records, head dims 256 and 192/128, a request of 300 query rows over 128 keys); on "
        "0.7.2.post1 and 0.7.4 alike through the adapter and the probes (docs/evidence/2026-12-03-h200-3/): "
        "probe_flashinfer_fa2_d256_causal.py (head dims 128, 192/128, 256; bf16, fp16; paged and ragged) and "
        "probe_flashinfer_fa2_split_kv_masked_rows.py (every qo > kv >= 128 wrong, kv <= 33 right, split-KV on or "
        "off and the workspace's contents change nothing); the script on both versions "
        "(docs/evidence/2026-12-03-h200-4/call1/): 300 over 128, paged and ragged, all 172 rows without a key and "
        "rows 172-175 wrong (max 3.4689), both controls within 0.0088; the keyless rows are unmasked attention over "
        "all 128 keys (2560 (row, head) pairs within 0.0024) or, in the mixed tile, over keys 0-63 (192 within "
        "0.0037); `attncheck ledger verify`: reproduces on both; the script as it reads now on 0.7.2.post1 "
        "(repro_flashinfer_fa2_causal_keyless_tile.h200.txt, docs/evidence/2026-12-03-h200-4/call2/)",
        applies=_fa2_causal_keyless_tile,
    ),
    KnownFailure(
        "flashinfer-fa2-single-merge-launch",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "fa2 single_prefill_with_kv_cache that splits the keys into fewer chunks than query rows, with "
        "head_dim / 8 x num_qo_heads over 1024 (more than 32 query heads at head dim 256, 64 at 128, 128 at 64): "
        "the split-KV merge's block is over CUDA's 1024 threads, the launch fails ('SinglePrefillWithKVCache "
        "kernel launch failed, error: invalid argument') and the CUDA error stays pending for the next call",
        "error",
        "docs/evidence/repro_flashinfer_fa2_single_d256_group8_launch.py",
        confirmed=True,
        seen="2026-12-03 H200, the standard matrix on 0.7.4 (docs/evidence/2026-12-03-h200-2/call3/: "
        "single-b1-h64x8-d256-bf16, qo 64 over kv 300, HND); each case in a fresh process through the adapter on "
        "0.7.2.post1 and 0.7.4 (docs/evidence/2026-12-03-h200-4/call3/); the script on both versions, and 17 shapes "
        "the merge's block predicts, 17 as predicted on both (docs/evidence/2026-12-03-h200-5/call1/: 40, 48 and "
        "64 query heads at d256, 64/64 heads, causal, kv 257, qo 4 over kv 600, 72/8 and 128/16 at d128, 136/8 at "
        "d64 raise; 32/8 at d256, kv 256, qo 1 and 2 over kv 600, qo 4096 over kv 8192, 64/8 at d128, 128/8 at "
        "d64 run)",
        applies=_fa2_single_merge_launch,
    ),
    KnownFailure(
        "flashinfer-graph-no-query-rows",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "fa2 paged and ragged prefill in CUDA-graph mode (use_cuda_graph=True) on a batch whose requests have "
        "no query rows: run() fails with 'invalid argument' and leaves that error pending for the next CUDA "
        "call; the same plan eager runs",
        "error",
        "docs/evidence/probe_flashinfer_zero_query_rows.py",
        confirmed=True,
        seen="2026-12-01 H200, the script (probe_flashinfer_zero_query_rows.h200.txt): paged qo [0] kv [0], head "
        "dims 128 and 256, masked or not, graph mode raises and the next torch call fails; eager runs; "
        "through the adapter paged and ragged"
        "; 2026-12-02 H200, `attncheck ledger verify` on 0.7.4: the script reproduces "
        "(docs/evidence/2026-12-02-h200-explore/)",
        applies=_no_query_rows,
        archs=("sm90",),
        modes=("graph",),
        options={"mask_form": ("bool", "packed")},
    ),
    KnownFailure(
        "flashinfer-packbits-empty",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "flashinfer.packbits of an empty bool tensor fails ('PackBits failed with error code invalid argument') "
        "and leaves the error pending: a masked batch whose requests have no mask bits cannot be packed whole",
        "error",
        "docs/evidence/repro_flashinfer_packbits_empty.py",
        confirmed=True,
        seen="2026-12-01 H200, the script (repro_flashinfer_packbits_empty.h200.txt): packbits of 0 bits fails, of 13 "
        "bits and segment_packbits of 0 bits work; through the adapter (mask_form=packed_flat, paged qo [0] kv "
        "[0], fa2 and fa2+graph)"
        "; 2026-12-02 H200, `attncheck ledger verify` on 0.7.4: the script reproduces "
        "(docs/evidence/2026-12-02-h200-explore/)",
        applies=lambda c, b: c["mask"] == "custom" and sum(q * k for q, k in zip(c["qo_lens"], c["kv_lens"])) == 0,
        options={"mask_form": ("packed_flat",)},
    ),
    KnownFailure(
        "flashinfer-fa3-paged-192-128",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "paged prefill at head dims (192, 128) on sm90: auto picks fa3 (utils.py:616-628 counts (192, 128) as an "
        "fa3 prefill shape, for paged as for ragged), whose paged kernel instantiates equal head dims only: the run "
        "rejects separate K and V caches ('K and V must have same page stride', batch_prefill_sm90.cu:234-237) and, "
        "given views of one buffer with equal strides, fails with 'operation not supported'; fa2 runs the same "
        "caches. fa3 asked for explicitly refuses them by design: supports() declines it",
        "error",
        "docs/evidence/repro_flashinfer_fa3_paged_unequal_head_dims.py",
        confirmed=True,
        seen="2026-12-01 H200, the script (repro_flashinfer_fa3_paged_unequal_head_dims.h200.txt): fa3 and auto "
        "raise the stride check, fa3 over one shared buffer 'operation not supported', fa2 within 0.004 of "
        "the reference; through the quick matrix: every paged (192, 128) case on fa3, fa3+graph, auto and a "
        "fresh auto+graph wrapper (ragged and single (192, 128) pass on fa3); 2026-12-02 H200, `attncheck ledger "
        "verify` on 0.7.4 with the script's longer batch (0.7.4's auto sends paged batches of at most 64 query rows "
        "to fa2): auto resolved fa3 and raised the stride check, fa2 within 0.0046 "
        "(docs/evidence/2026-12-02-h200-lifecycle/0.7.4/verify/)",
        applies=_fa3_paged_192_128,
        archs=("sm90",),
    ),
    KnownFailure(
        "flashinfer-fa3-lse-after-empty-tile",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "fa3 prefill (paged or ragged), causal, LSE asked for: where a request's query tile of 128 rows sees no key "
        "(more query rows than keys), the LSE of rows of its next tile that do see keys is written as -inf (the "
        "epilogue's store_zero writes past its tile); bf16 or fp16, with a soft cap or without. The output is "
        "right, fa2 gives the right LSE, a request of one tile never shows it",
        "fail",
        "docs/evidence/probe_flashinfer_fa3_lse_store_zero.py",
        confirmed=True,
        seen="2026-12-01 H200, probe_flashinfer_fa3_softcap_lse.py (its .h200.txt): fp16, soft cap 50 or 1e4, qo "
        "[300, 64] over kv [33, 1031], 64/8 heads, head dim 128: 33 LSE entries -inf (rows 267-299) in HND and "
        "NHD, page 1 and 16; fa2 and either request alone give none. 2026-12-02 H200, "
        "probe_flashinfer_fa3_lse_store_zero.py on 0.7.2.post1 and 0.7.4: bf16 without a soft cap, the same 33 "
        "rows 3 of 3 runs (paged HND page 1, NHD page 16, ragged), rows 167-199 for qo [200, 64], 367-383 for "
        "[400, 64]: exactly the rows store_zero reaches; fa2 and a one-tile request give none, request 0 alone "
        "none in 3 runs (docs/evidence/2026-12-02-h200-sitting-5/). 2026-12-03 H200, `attncheck ledger verify` on "
        "0.7.2.post1 and 0.7.4: reproduces on both, the same rows, the controls clean "
        "(docs/evidence/2026-12-03-h200/callA/<version>/verify/)",
        applies=_fa3_lse_after_empty_tile,
        archs=("sm90",),
        unrepeatable="a race: the LSE rows stored differ from run to run",
    ),
    KnownFailure(
        "flashinfer-decode-empty-batch-run",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "BatchDecodeWithPagedKVCacheWrapper: plan() accepts a batch of no requests, then run() raises "
        "ZeroDivisionError (decode.py:2855 `q_len_per_req = q.size(0) // actual_batch_size`; 0.7.4 the same "
        "line, decode.py:3362)",
        "error",
        "docs/evidence/repro_flashinfer_decode_empty_batch_run.py",
        confirmed=True,
        seen="2026-12-01 H200, found by `attncheck explore` (decode and decode-graph subjects, shrunk to plan + "
        "run of an empty batch); its plain-flashinfer script (repro_flashinfer_decode_empty_batch_run.h200.txt); "
        "2026-12-02 H200, 0.7.4: `attncheck ledger verify` reproduces it, and the lifecycle-clean decode subjects' "
        "scripts reproduce it in a fresh process (docs/evidence/2026-12-02-h200-explore-2/)",
        applies=lambda c, b: c["layout"] == "decode" and len(c["qo_lens"]) == 0 and b in ("fa2", "auto"),
        options={"decode_tensor_cores": (False,)},
    ),  # with tensor cores plan() raises first (the routing spec's row)
    KnownFailure(
        "flashinfer-decode-tensor-cores-empty-batch-plan",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "BatchDecodeWithPagedKVCacheWrapper with tensor cores (use_tensor_cores=True; fa3 always): plan() of a "
        "batch with no requests raises torch's max() error (decode.py:2371 `kv_lens_arr_host.max()`)",
        "error",
        "docs/evidence/repro_flashinfer_decode_empty_batch_plan.py",
        confirmed=True,
        seen="2026-12-01 H200, through the adapter (docs/evidence/2026-12-01-flashinfer-h200-session-4.md): auto "
        "and auto+graph with --adapter-option decode_tensor_cores=true on the directed empty decode batch; the "
        "script "
        "(repro_flashinfer_decode_empty_batch_plan.h200.txt): tensor-core plan() raises, CUDA-core returns; "
        "2026-12-02 H200, `attncheck ledger verify` on 0.7.4: reproduces "
        "(docs/evidence/2026-12-02-h200-explore-2/probe-sitting/)",
        applies=lambda c, b: c["layout"] == "decode" and len(c["qo_lens"]) == 0 and b in ("fa2", "auto", "fa3"),
        options={"decode_tensor_cores": (True,)},
        evidence_args=("tensor-cores",),
    ),  # fa3 counts as tensor cores (entry_for)
    KnownFailure(
        "flashinfer-cudnn-decode-empty-batch-plan",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "BatchDecodeWithPagedKVCacheWrapper on the cudnn backend: plan() of a batch with no requests raises "
        "torch's max() error (decode.py:2547 `int(kv_lens_arr_host.max())`)",
        "error",
        "docs/evidence/repro_flashinfer_decode_empty_batch_plan.py",
        confirmed=True,
        seen="2026-12-01 H200, through the adapter (docs/evidence/2026-12-01-flashinfer-h200-session-4.md, "
        "--backend cudnn): the directed empty decode batch; the script "
        "(repro_flashinfer_decode_empty_batch_plan.h200.txt); "
        "2026-12-02 H200, `attncheck ledger verify` on 0.7.4: reproduces "
        "(docs/evidence/2026-12-02-h200-explore-2/probe-sitting/)",
        applies=lambda c, b: c["layout"] == "decode" and len(c["qo_lens"]) == 0 and b == "cudnn",
        evidence_args=("cudnn",),
    ),
    KnownFailure(
        "flashinfer-cudnn-empty-kv-rows-unwritten",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "the cudnn backend, paged and ragged prefill: rows of a request with queries and no keys are left "
        "unwritten (the output buffer keeps its contents, LSE NaN) where another request has keys; every other "
        "backend writes 0 and LSE -inf there",
        "fail",
        "docs/evidence/repro_flashinfer_cudnn_empty_kv_rows.py",
        confirmed=True,
        seen="2026-12-01 H200, through the adapter (docs/evidence/2026-12-01-flashinfer-h200-session-4.md, "
        "--backend cudnn): paged qo [3, 2] over kv [0, 9], ragged [0, 5, 0] over [7, 0, 0], ragged d256 "
        "[17, 64] over [33, 0], paged (192, 128) "
        "[1, 1, 300] over [4099, 4099, 0]: exactly the rows of the empty requests unwritten, the rest within "
        "bounds; fresh wrappers alike; the script (repro_flashinfer_cudnn_empty_kv_rows.h200.txt): paged "
        "[3, 2]/[0, 9] and ragged [0, 5, 0]/[7, 0, 0] leave exactly those rows unwritten with LSE NaN, the "
        "other rows within 0.005, each non-empty request alone clean; "
        "2026-12-02 H200, `attncheck ledger verify` with cuDNN's frontend on both versions: reproduces "
        "(docs/evidence/2026-12-02-h200-sitting-3/)",
        applies=lambda c, b: (
            b == "cudnn"
            and c["layout"] in ("paged", "ragged")
            and any(q > 0 and k == 0 for q, k in zip(c["qo_lens"], c["kv_lens"]))
            and any(k > 0 for k in c["kv_lens"])
        ),
        evidence_args=("unwritten",),
        unrepeatable="the rows are never written: they hold what the output buffer held",
    ),
    KnownFailure(
        "flashinfer-cudnn-paged-all-kv-empty-raises",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "the cudnn backend, paged prefill or paged decode of a batch with queries where no request has keys: run() "
        "raises CUDNN_STATUS_BAD_PARAM_NULL_POINTER (no KV page to bind) instead of writing 0 and LSE -inf",
        "error",
        "docs/evidence/repro_flashinfer_cudnn_empty_kv_rows.py",
        confirmed=True,
        seen="2026-12-01 H200, through the adapter (docs/evidence/2026-12-01-flashinfer-h200-session-4.md, "
        "--backend cudnn): paged page 1, qo [300, 1, 127] over kv [0, 0, 0], fresh wrapper alike; the script "
        "(repro_flashinfer_cudnn_empty_kv_rows.h200.txt); "
        "2026-12-02 H200, `attncheck ledger verify` on 0.7.4: reproduces "
        "(docs/evidence/2026-12-02-h200-explore-2/probe-sitting/); "
        "2026-12-03 H200, 0.7.4's standard run: decode, one request without keys, window 64, HND page 1, the same "
        "error (docs/evidence/2026-12-03-h200-4/README.md); 2026-12-04 H200, the script with decode batches and the "
        "cuDNN frontend 1.32.0 (docs/evidence/2026-12-04-h200/call1/cudnn-*.txt): on both versions decode kv [0] "
        "(window 64 or none, HND page 1) and kv [0, 0] (NHD page 4) raise it, decode kv [0, 9] writes 0 and LSE "
        "-inf, the decode controls within 0.0052",
        applies=lambda c, b: (
            b == "cudnn"
            and c["layout"] in ("paged", "decode")
            and sum(c["qo_lens"]) > 0
            and len(c["kv_lens"]) > 0
            and not any(c["kv_lens"])
        ),
        evidence_args=("raises",),
    ),
    KnownFailure(
        "flashinfer-graph-mask-buffer-unmasked",
        "flashinfer",
        ("0.7.2.post1", "0.7.4"),
        "paged and ragged prefill wrappers in CUDA-graph mode constructed with custom_mask_buf and "
        "mask_indptr_buf: an unmasked plan leaves the mask buffers as they are (prefill.py:3509 paged, :5267 "
        "ragged) and run() takes MaskMode.CUSTOM whenever a buffer is held (:4382, :6405), so it applies a zero "
        "mask (before any masked plan) or the last masked plan's bits, and ignores causal: the output is wrong. "
        "0.7.4 has the same lines (:4068/:5112 paged, :6099/:7423 ragged); open upstream PR "
        "flashinfer-ai/flashinfer#2690; SGLang refuses such a plan (flashinfer_backend.py, see "
        "docs/flashinfer-adapter.md)",
        "fail",
        "docs/evidence/probe_flashinfer_graph_mask_buffers_unmasked.py",
        confirmed=True,
        seen="2026-12-02 H200, the probe (probe_flashinfer_graph_mask_buffers_unmasked.h200.txt): fa2 bf16 head dim "
        "128, a graph wrapper with mask buffers: max error 3.12 (paged) and 3.38 (ragged) on an unmasked first plan, "
        "3.78 and 3.84 unmasked after a masked plan, 22 to 24 of 24 rows off; the same wrapper's masked plan and a "
        "wrapper without buffers within 0.009 of the reference; through "
        "`attncheck explore` the shared-graph subjects' oracle failures (docs/evidence/2026-12-02-h200-explore/); "
        "on 0.7.4 all 8 directed sequences of the paged shared-graph subject (out 1.57-2.36 against bounds of "
        "0.02-0.03, LSE inf), each script reproducing in a fresh process (docs/evidence/2026-12-02-h200-explore-2/)",
        applies=lambda c, b: c["layout"] in ("paged", "ragged") and c["mask"] == "none",
        modes=("graph",),
        options={"graph_wrappers": ("shared",)},
        unrepeatable="the graph's mask buffer holds an earlier plan's bits",
    ),
    KnownFailure(
        "torch-nested-math-scores-in-half",
        "torch",
        ("2.13.0+cpu", "2.11.0+cu130"),
        "jagged (nested) SDPA math computes q.k^T in bf16: large-logit bf16 batches miss the bound",
        "fail",
        "docs/evidence/repro_torch_nested_math_scores_in_half.py",
        confirmed=True,
        seen="2026-12-02 CPU, torch 2.13.0+cpu: the script exits 1 (its output: "
        "docs/evidence/repro_torch_nested_math_scores_in_half.cpu.txt); through the quick and standard matrices on "
        "the CPU (nested-math and nested-auto): every failing record; 2026-12-02 H200, torch 2.11.0+cu130, "
        "`attncheck ledger verify --target torch`: reproduces (docs/evidence/2026-12-02-h200-sitting-3/torch/)",
        applies=_torch_nested_scores_in_half,
    ),
    KnownFailure(
        "torch-flex-compiled-no-valid-choices",
        "torch",
        ("2.11.0+cu130",),
        "compiled flex_attention raises InductorError (NoValidChoicesError: no choices exist for backend) on "
        "GQA calls of fewer than 128 query rows where rows x group exceeds 128 (the decoding template's tile, "
        "next_power_of_2(rows x group), is then larger than the block mask's 128 and every config is skipped), "
        "which eager flex_attention, and the compiled one with 32x32 tiles or FORCE_USE_FLEX_ATTENTION, run",
        "error",
        "docs/evidence/repro_torch_flex_compiled_no_valid_choices.py",
        confirmed=True,
        seen="2026-12-03 H200, torch 2.11.0+cu130: the quick matrix's flex records on CUDA (3 errors, a fresh "
        "adapter too: docs/evidence/2026-12-03-h200/callA/torch/honest/); the probe (callB/torch/flex-probe.txt): "
        "each raised again in a fresh process on a fresh compile, ran eagerly and with 32x32 tiles; the script "
        "(its .h200.txt): bf16 (8/2 heads, dims 64 and 128) raised at 64, 65, 98 and 127 query rows, not at 31, "
        "128, 129; fp32 (8/1, dims 192/128) at every length tried, 31 to 129; 2026-12-03 H200: "
        "the standard matrix's three (flex-padded fp16 16/4 d192/128 and bf16 8/2 d64 padded to 64 rows, flex "
        "fp32 8/1 d64 at 127 rows), each again in a fresh process without the oracle, eager running it "
        "(docs/evidence/2026-12-03-h200-7/call4/torch/flex.log); 2026-12-04 H200: the standard matrix's "
        "flex records (docs/evidence/2026-12-04-h200/); over every CUDA flex record in docs/evidence/ the rule "
        "claims all 47 NoValidChoicesError records and none of the 495 others; the rule swept "
        "(probe_torch_flex_decoding_block_m.py part A, docs/evidence/2026-12-04-h200/call2/flex_probe.txt): "
        "rows x group 128 ran, 130, 132 and 136 raised, for groups 2, 4 and 8",
        applies=_torch_flex_compiled_no_choices,
        archs=("sm90",),
    ),
    KnownFailure(
        "torch-nested-cudnn-single-row-hangs",
        "torch",
        ("2.11.0+cu130",),
        "jagged (nested) SDPA forced to cuDNN, a batch of two or more requests with one query row at most each "
        "(a decode step): the call never returns",
        "crash",
        "docs/evidence/repro_torch_nested_cudnn_single_row_hang.py",
        confirmed=True,
        seen="2026-12-04 H200, the torch standard matrix on CUDA (docs/evidence/2026-12-04-h200/): nested-cudnn on "
        "decode-b7-h1x1-d256-fp16-p5HND-zero_len held the run for 7 min, until its time limit; with --case-timeout "
        "150, decode-b3-h1x1-d128-bf16 and decode-b4-h8x8-d64-bf16 were killed; the script's first version (call 2) "
        "hung on q [1, 1] over kv [3, 5] and ran q [2, 2] over kv [0, 3]; the script (its .h200.txt, call 3): "
        "q [1, 1], q [1] x 7 as recorded and q [1, 0] hung past 25 s, q [1] alone, q [1, 2] and the controls "
        "q [2, 2] returned within 0.001 of the reference",
        applies=_torch_nested_cudnn_single_rows,
        archs=("sm90",),
    ),
    KnownFailure(
        "torch-nested-cudnn-keyless-request-rows",
        "torch",
        ("2.11.0+cu130",),
        "jagged SDPA forced to cuDNN: a request of a batch with query rows and no key gets rows the call never "
        "writes (they read what the memory held: 0 in a fresh process, earlier tensors' values in a long-lived one; "
        "cuDNN 9.19, which torch 2.11.0+cu130 loads)",
        "fail",
        "docs/evidence/probe_torch_nested_cudnn_empty_kv_request.py",
        confirmed=True,
        seen="2026-12-04 H200, the torch standard matrix on CUDA (docs/evidence/2026-12-04-h200/): nested-cudnn on "
        "ragged-b6-h1x1-d256-bf16-zero_len, q [127, 127, 1, 64, 17, 64] over kv [128, 1, 1031, 1031, 33, 0]: the "
        "last request's rows up to 2.67 where they should be 0 (err/bound 286). 2026-12-05 H200 "
        "(docs/evidence/2026-12-05-h200/): the probe with each batch alone in a fresh process found every batch "
        "right; run again after the caching allocator took back blocks filled with 1024 "
        "(probe_torch_nested_cudnn_empty_kv_request.h200.txt), the empty request first, in the middle and last, "
        "at two shapes and as recorded, read 1024 in every row; the controls without one were right both ways",
        applies=_torch_nested_cudnn_keyless_request,
        archs=("sm90",),
        unrepeatable="the rows are never written: they hold what the output's memory held",
    ),
    KnownFailure(
        "torch-flex-compiled-fp32-d192-no-config",
        "torch",
        ("2.11.0+cu130",),
        "compiled flex_attention in fp32 at head dim 192 (value dim 128), 128 query rows or more: InductorError "
        "'No valid triton configs. OutOfMemoryError: out of resource ... Required: 278784 Hardware limit: 232448' "
        "(shared memory), where bf16 of the same shape and fp32 at head dims 128 and 256 compile",
        "error",
        "docs/evidence/probe_torch_flex_decoding_block_m.py",
        confirmed=True,
        seen="2026-12-04 H200, the torch standard matrix on CUDA (docs/evidence/2026-12-04-h200/): flex on four "
        "cases (8/8, 8/2, 8/1, 4/1 heads; 191 to 258 rows); the probe before its A|B argument (call2/flex_probe.txt "
        "there): fp32 192/128 at 128, 191 and 258 rows raised, FORCE_USE_FLEX_ATTENTION alike; bf16 192/128, fp32 "
        "128/128 and 256/256 ran. 2026-12-05 H200, `attncheck ledger verify` of the probe's part B "
        "(probe_torch_flex_decoding_block_m.h200.txt): the same three fp32 192/128 calls raised 'Required: 278784 "
        "Hardware limit: 232448', the three controls compiled",
        applies=_torch_flex_compiled_fp32_d192,
        archs=("sm90",),
        evidence_args=("B",),
    ),
    KnownFailure(
        "torch-sdpa-empty-rows",
        "torch",
        ("2.11.0+cu130",),
        "cuDNN and memory-efficient SDPA write non-zero rows where the mask allows no key",
        "fail",
        "docs/evidence/repro_torch_sdpa_empty_rows.py",
        confirmed=True,
        seen="2026-11-29 H200 (docs/evidence/repro_torch_sdpa_empty_rows.h200.txt: cuDNN on a fully masked row and "
        "on causal_lower_right with qo > kv, memory-efficient on the latter only); 2026-12-01 through the "
        "quick matrix on CUDA (2026-12-01-h200-4/matrix_torch_cuda.jsonl): every failing record",
        applies=_torch_rows_without_keys,
    ),
    KnownFailure(
        "torch-nested-causal-empty-query",
        "torch",
        ("2.11.0+cu130",),
        "jagged (nested) SDPA on CUDA, is_causal, a batch with no query rows: TypeError "
        "'_nested_view_from_jagged(): argument 'input' (position 1) must be Tensor, not NoneType' from inside "
        "torch, where the CPU refuses the call with a RuntimeError naming why",
        "error",
        "docs/evidence/repro_torch_nested_causal_empty_query.py",
        confirmed=True,
        seen="2026-12-03 H200, the standard matrix's batched backends (docs/evidence/2026-12-03-h200-4/call3/torch/"
        "batched-auto/: single-b1-h8x8-d256-fp16, causal, qo [0] over kv [7]: supports() raised it); the script "
        "(its .h200.txt, docs/evidence/2026-12-03-h200-5/call5/): the jagged selector picks cuDNN and the call "
        "raises; with cuDNN disabled the selector finds nothing and the call is refused cleanly; a causal batch "
        "with rows runs on flash",
        applies=_torch_nested_causal_no_query_rows,
        archs=("sm90",),
    ),
)


# Kernels an `auto` record may have resolved to; the rules are then asked about the kernel that ran (torch
# SDPA joins the kernels of requests routed apart with '+', e.g. "cudnn+math"). torch's batched auto backends
# ("padded-auto", "nested-auto") are asked as "padded-<kernel>", "nested-<kernel>" (PADDED, NESTED).
RESOLVED_KERNELS = frozenset({"fa2", "fa3", "cudnn", "trtllm-gen", "aiter", "math", "flash", "efficient"})


def entry_for(
    target: str,
    case: dict[str, Any],
    backend: str,
    version: Optional[str] = None,
    arch: Optional[str] = None,
    options: Optional[dict[str, Any]] = None,
    resolved: Optional[str] = None,
    among: Optional[Collection[str]] = None,
) -> Optional[KnownFailure]:
    """The ledger entry that predicts `case` on `backend` fails (or crashes) at `version` on `arch`, with the
    run's adapter `options` (None: the adapters' defaults), if any; `version` None: at any version, `among`:
    only the entries of these ids (the upgrade diff asks among those a verify run reproduced).

    `resolved`: the kernel an `auto` record ran, where it is known. A long-lived wrapper may hold another
    kernel than a fresh one would pick (sticky paged auto, graph mode's first plan), and the rules model the
    fresh pick; given what ran, they are asked about that instead (else an entry would claim a record that
    ran a kernel without the defect, and the gate would call its pass unexpected)."""
    base, mode = backend.split("+", 1)[0], "graph" if backend.endswith("+graph") else "eager"
    if base == "auto" and resolved and all(k in RESOLVED_KERNELS for k in resolved.split("+")):
        base = resolved
    elif base in BATCHED_AUTO and resolved in RESOLVED_KERNELS:
        base = base.removesuffix("auto") + str(resolved)
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    if base == "fa3":  # the adapter's decode on fa3 always takes tensor cores (FlashInferKernel._decode_tensor_cores)
        opts["decode_tensor_cores"] = True
    for e in LEDGER:
        if among is not None and e.id not in among:
            continue
        if e.applies is not None and _eligible(e, target, mode, opts, version, arch) and e.applies(case, base):
            return e
    return None


def _eligible(
    e: KnownFailure, target: str, mode: str, opts: dict[str, Any], version: Optional[str], arch: Optional[str]
) -> bool:
    """Whether `e` can explain a record of `target` in `mode` with adapter options `opts`, at `version` on `arch`.
    A version with one of attncheck's faults injected ("0.7.4+fault:NAME") is its library's: the fault changes
    what it names, not the library's known defects, and a failure the ledger explains is no catch of the fault."""
    return (
        e.target == target
        and (not e.modes or mode in e.modes)
        and all(opts.get(k) in allowed for k, allowed in e.options.items())
        and (version is None or version.split(FAULT_SUFFIX)[0] in e.versions)
        and (not e.archs or arch in e.archs)
    )


def history_entry_for(
    target: str,
    plans: list[dict[str, Any]],
    backend: str,
    version: Optional[str] = None,
    arch: Optional[str] = None,
    options: Optional[dict[str, Any]] = None,
) -> Optional[KnownFailure]:
    """The lifecycle entry whose `history` rule matches one wrapper's `plans` (the failing plan last) on
    `backend` ("<backend>+graph" in graph mode) at `version` on `arch`, if any."""
    if not plans:
        return None
    base, mode = backend.split("+", 1)[0], "graph" if backend.endswith("+graph") else "eager"
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    for e in LEDGER:
        if e.history is not None and _eligible(e, target, mode, opts, version, arch) and e.history(plans, base):
            return e
    return None


def known_for(
    target: str,
    case: dict[str, Any],
    backend: str,
    version: Optional[str] = None,
    arch: Optional[str] = None,
    options: Optional[dict[str, Any]] = None,
    resolved: Optional[str] = None,
) -> Optional[str]:
    """The id of the ledger entry that explains a failing record of `case` on `backend`, if any."""
    e = entry_for(target, case, backend, version, arch, options, resolved)
    return e.id if e is not None else None


def entries_by_id(ledger: Optional[Sequence[KnownFailure]] = None) -> dict[str, KnownFailure]:
    """The entries of `ledger` (None: LEDGER, read at call time, so a test's substitute counts) by id."""
    return {e.id: e for e in (LEDGER if ledger is None else ledger)}


def repeats(entry_id: str) -> bool:
    """Whether the entry's wrong output is a function of the case alone (KnownFailure.unrepeatable is "")."""
    entry = entries_by_id().get(entry_id)
    if entry is None:
        raise KeyError(f"no ledger entry {entry_id!r}")
    return not entry.unrepeatable


def upstream_of(entry: KnownFailure) -> str:
    """The entry's issue URL, or a statement that there is none yet (never an invented URL)."""
    return entry.upstream or NOT_FILED
