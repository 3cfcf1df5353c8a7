"""The catalogue of oracle mutants: each one a plausible mistake, written as one exact edit.

A Mutant replaces `old` by `new` in one file. `old` must occur exactly once in that file (the
runner refuses otherwise), so a mutant made stale by a refactor fails loudly instead of
silently surviving as a no-op. `kills` names the pytest node ids that must fail under the
mutant, chosen small and fast (`<test>[*]`: every parametrization of a parity-grid test the
mutant reaches). The Mutant type is in kinds.py; the other classes' catalogues sit beside this one.

The catalogue checks itself at import: names are unique, kill ids are node ids under tests/ or
conformance/. docs/oracle-mutants.md renders the same list for people.
"""

from __future__ import annotations

from conformance.mutations.kinds import Mutant, check_unique

__all__ = ["ORACLE_MUTANTS", "Mutant"]


_HAND = "tests/oracle/test_oracle_hand.py::"
_MEMORY = "tests/oracle/test_oracle_memory.py::"
_COMPARE = "tests/oracle/test_oracle_compare.py::"
_MASKS = "tests/oracle/test_oracle_masks.py::"
_PRECISION = "tests/oracle/test_oracle_matmul_precision.py::"
_HONEST = "tests/oracle/test_oracle_honest.py::"
_COMPILED = "tests/oracle/test_oracle_compiled.py::"
_FAULTS = "tests/kernels/test_torch_precision_faults.py::"
# Every parity-grid test that reaches the mutant (its ids come from the matrix at run time).
_PARITY = "conformance/test_parity_grid.py::test_backend_matches_the_oracle[*]"


def _fused(test: str) -> str:
    """The fused-softmax oracle's instance of a hand-computed test."""
    return f"{_HAND}{test}[oracle-fused]"


def _compiled(test: str) -> str:
    """The compiled-softmax oracle's instance of a hand-computed test (its function run eagerly)."""
    return f"{_HAND}{test}[oracle-compiled]"


def _hand(test: str, *params: str) -> str:
    """The fp32 oracle's instance of a hand-computed test."""
    return f"{_HAND}{test}[{'-'.join(('oracle-fp32',) + params)}]"


ORACLE_MUTANTS: tuple[Mutant, ...] = (
    # ---- masks ---------------------------------------------------------------------------------
    Mutant(
        "causal-top-left",
        "oracle/masks.py",
        "        keep &= j <= diag\n",
        "        keep &= j <= i\n",
        "causal mask aligned top-left (j <= i) instead of bottom-right (j <= i + kv - qo)",
        (
            _hand("test_causal_with_fewer_queries_than_keys_aligns_bottom_right"),
            _MASKS + "test_allowed_follows_the_documented_conventions",
        ),
    ),
    Mutant(
        "window-excludes-diagonal",
        "oracle/masks.py",
        "        keep &= j >= diag - window_left\n",
        "        keep &= j > diag - window_left\n",
        "sliding window off by one: a window of w keeps w keys left of the diagonal but not the diagonal",
        (_hand("test_causal_window_zero_attends_only_the_diagonal_key"),),
    ),
    Mutant(
        "window-one-too-wide",
        "oracle/masks.py",
        "        keep &= j >= diag - window_left\n",
        "        keep &= j >= diag - window_left - 1\n",
        "sliding window off by one the other way: w + 1 keys left of the diagonal",
        (_hand("test_window_one_attends_the_diagonal_and_one_key_left"),),
    ),
    Mutant(
        "custom-mask-column-major",
        "oracle/masks.py",
        "        keep &= custom[rows]\n",
        "        keep &= custom.reshape(kv_len, qo_len).t()[rows]\n",
        "custom mask read column-major ([kv, qo] flattened), i.e. transposed",
        (_hand("test_custom_mask_is_row_major_per_request"),),
    ),
    Mutant(
        "custom-mask-ignored-alone",
        "oracle/masks.py",
        "    return causal or window_left >= 0 or custom is not None\n",
        "    return causal or window_left >= 0\n",
        "fast path returns 'attend everything' when neither causal nor window is on, dropping a custom mask",
        (_hand("test_fully_masked_row_gives_zero_output_and_neg_inf_lse"),),
    ),
    # ---- scores and softmax -------------------------------------------------------------------
    Mutant(
        "lse-base-2",
        "oracle/reference.py",
        "    lse = (m + torch.log(denom)).squeeze(-1)\n",
        "    lse = ((m + torch.log(denom)) * LOG2E).squeeze(-1)\n",
        "LSE returned in base 2 (FlashInfer's convention) instead of the natural log",
        (_hand("test_two_keys_weights_follow_softmax"),),
    ),
    Mutant(
        "lse-without-row-max",
        "oracle/reference.py",
        "    lse = (m + torch.log(denom)).squeeze(-1)\n",
        "    lse = torch.log(denom).squeeze(-1)\n",
        "LSE of the max-shifted scores: the row max subtracted for stability is not added back",
        (_hand("test_single_key_output_equals_v_and_lse_equals_scaled_score"),),
    ),
    # the fused softmax (the GPU's path), held by the hand tests' oracle-fused instances
    Mutant(
        "fused-empty-rows-nan",
        "oracle/reference.py",
        "        s[..., :1].masked_fill_(empty, 0.0)\n",
        "        pass\n",
        "the fused softmax leaves a row with nothing to attend all -inf: torch.softmax makes it NaN instead of 0",
        (_fused("test_fully_masked_row_gives_zero_output_and_neg_inf_lse"),),
    ),
    Mutant(
        "fused-empty-rows-not-divided-away",
        "oracle/reference.py",
        "    return p, torch.where(empty, math.inf, 1.0), lse.transpose(0, 1)\n",
        "    return p, torch.ones_like(m), lse.transpose(0, 1)\n",
        "a row with nothing to attend keeps the one-hot P its finite first score gives: its output is V's first key "
        "instead of 0",
        (_fused("test_fully_masked_row_gives_zero_output_and_neg_inf_lse"),),
    ),
    Mutant(
        "fused-lse-without-row-max",
        "oracle/reference.py",
        "    lse = (m - torch.log(p.gather(-1, at))).squeeze(-1)\n",
        "    lse = (-torch.log(p.gather(-1, at))).squeeze(-1)\n",
        "the fused LSE is log(denom) alone: the row max is not added back",
        (_fused("test_single_key_output_equals_v_and_lse_equals_scaled_score"),),
    ),
    Mutant(
        "fused-lse-at-the-first-key",
        "oracle/reference.py",
        "    m, at = s.max(dim=-1, keepdim=True)\n",
        "    m, at = s.amax(dim=-1, keepdim=True), torch.zeros_like(s[..., :1], dtype=torch.long)\n",
        "the fused LSE reads P at key 0, not at the row max: log(denom) is off wherever key 0 is not the largest",
        (
            "tests/oracle/test_oracle_textbook.py::test_fused_fp32_oracle_matches_fp64_textbook[ragged-GQA-HND-qk12-vo5]",
        ),
    ),
    Mutant(
        "fused-rounds-nothing",
        "oracle/reference.py",
        "    fused = fused and rounding.p is None\n",
        "    fused = bool(fused)\n",
        "the baseline on a fused device takes the fused softmax, which has no rounding points: P is never rounded",
        (_HONEST + "test_the_baseline_takes_the_literal_softmax_whatever_fused_says",),
    ),
    # the compiled softmax (a large GPU chunk's), held by the hand tests' oracle-compiled instances and
    # tests/oracle/test_oracle_compiled.py
    Mutant(
        "compiled-cap-not-multiplied-back",
        "oracle/reference.py",
        "        s = torch.tanh(s / cap) * cap\n",
        "        s = torch.tanh(s / cap)\n",
        "the compiled softmax's soft cap leaves tanh(s / cap): the scores squashed into (-1, 1)",
        (
            _compiled("test_tiny_soft_cap_saturates_scaled_scores_to_plus_minus_cap"),
            _COMPILED + "test_the_compiled_function_is_the_literal_softmax_to_the_bit[causal-cap-gqa]",
        ),
    ),
    Mutant(
        "compiled-cap-dropped",
        "oracle/reference.py",
        "        cap_t = torch.tensor(cap, dtype=s.dtype, device=s.device) if cap > 0 else None\n",
        "        cap_t = None\n",
        "the compiled softmax is handed no cap: a soft-capped case's large chunks are uncapped",
        (
            _compiled("test_tiny_soft_cap_saturates_scaled_scores_to_plus_minus_cap"),
            _COMPILED + "test_the_compiled_function_is_the_literal_softmax_to_the_bit[causal-cap-gqa]",
        ),
    ),
    Mutant(
        "compiled-mask-dropped",
        "oracle/reference.py",
        "        s = s.masked_fill(~keep.unsqueeze(0), -math.inf)\n",
        "        s = s.masked_fill(~keep.unsqueeze(0), -1e30)\n",
        "the compiled softmax masks with a large finite score: a row with nothing to attend averages every key",
        (
            _compiled("test_fully_masked_row_gives_zero_output_and_neg_inf_lse"),
            _COMPILED + "test_the_compiled_function_is_the_literal_softmax_to_the_bit[custom-window-empty-rows]",
        ),
    ),
    Mutant(
        "compiled-empty-rows-nan",
        "oracle/reference.py",
        "    e = torch.exp(s - torch.where(empty, 0.0, row_max))\n",
        "    e = torch.exp(s - row_max)\n",
        "the compiled softmax shifts a row with nothing to attend by its -inf max: -inf - -inf is NaN",
        (
            _compiled("test_fully_masked_row_gives_zero_output_and_neg_inf_lse"),
            _COMPILED + "test_the_compiled_function_is_the_literal_softmax_to_the_bit[custom-window-empty-rows]",
        ),
    ),
    Mutant(
        "compiled-graph-break",
        "oracle/reference.py",
        "    empty = torch.isneginf(row_max)\n",
        "    empty = torch.isneginf(row_max)\n    row_max = torch.where(empty, 0.0, row_max) if bool(empty.any()) else row_max\n",
        "a data-dependent branch in the compiled softmax: no single graph, so the GPU's build fails and every "
        "chunk falls back to the eager fused softmax",
        (_COMPILED + "test_the_exact_softmax_traces_as_one_graph_with_and_without_a_cap_and_a_mask",),
    ),
    Mutant(
        "compiled-any-chunk",
        "oracle/reference.py",
        "                    chunk_softmax = _softmax_compiled if compiled and s.numel() >= COMPILED_MIN_SCORES else softmax\n",
        "                    chunk_softmax = _softmax_compiled if compiled else softmax\n",
        "every chunk takes the compiled softmax: a small one pays a compiled call's fixed cost (decode 2x slower)",
        (_COMPILED + "test_only_chunks_of_compiled_min_scores_or_more_take_it",),
    ),
    Mutant(
        "compiled-on-every-device",
        "oracle/reference.py",
        "        compiled = inputs.device.type in COMPILED_DEVICES\n",
        "        compiled = True\n",
        "the CPU compiles too unless told: Inductor's C++ build on the first large chunk of every run",
        (_COMPILED + "test_only_chunks_of_compiled_min_scores_or_more_take_it",),
    ),
    Mutant(
        "compiled-rounds-nothing",
        "oracle/reference.py",
        '    compiled = compiled and fused and precision == "fp32"\n',
        "    compiled = bool(compiled)\n",
        "the baseline takes the compiled softmax when asked, which has no rounding points: P is never rounded",
        (_COMPILED + "test_the_honest_baseline_never_takes_the_compiled_softmax",),
    ),
    Mutant(
        "compiled-fp64-too",
        "oracle/reference.py",
        '    compiled = compiled and fused and precision == "fp32"\n',
        "    compiled = compiled and fused\n",
        "the fp64 oracle compiled too: a graph per dtype beside the fp32 ones, toward dynamo's recompile limit",
        (_COMPILED + "test_the_fp64_oracle_never_takes_the_compiled_softmax",),
    ),
    Mutant(
        "compiled-default-recompile-limit",
        "oracle/reference.py",
        "    stack.enter_context(dynamo_config.patch(recompile_limit=COMPILED_RECOMPILE_LIMIT))\n",
        "",
        "the compiled softmax under dynamo's default limit of 8 graphs: a long run's masks, caps and sizes exhaust "
        "it and every later chunk falls back to the eager softmax",
        (_COMPILED + "test_the_compiled_softmax_runs_with_a_raised_recompile_limit_and_one_compile_thread",),
    ),
    Mutant(
        "compiled-worker-pool",
        "oracle/reference.py",
        "    stack.enter_context(inductor_config.patch(compile_threads=1))\n",
        "",
        "Inductor compiles the softmax in a pool of worker processes: processes beside a harness that forks, "
        "taking the CPU from the calls timed after the first compile",
        (_COMPILED + "test_the_compiled_softmax_runs_with_a_raised_recompile_limit_and_one_compile_thread",),
    ),
    Mutant(
        "compiled-failure-retried",
        "oracle/reference.py",
        '            _COMPILED.failed = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]\n',
        "            pass\n",
        "a compiled softmax that failed is tried again on every chunk: a build error costs its time and prints "
        "again each time",
        (_COMPILED + "test_a_failed_build_falls_back_to_the_fused_softmax_once_and_says_why",),
    ),
    Mutant(
        "soft-cap-after-mask",
        "oracle/reference.py",
        ("        s.mul_(cap)\n    if keep is not None:\n        s.masked_fill_(~keep.unsqueeze(0), -math.inf)\n"),
        (
            "        s.mul_(cap)\n"
            "    if keep is not None:\n"
            "        s.masked_fill_(~keep.unsqueeze(0), -math.inf)\n"
            "    if cap > 0:\n"
            "        s.div_(cap).tanh_().mul_(cap)\n"
        ),
        "soft cap applied after masking, so a masked key's -inf becomes -cap and is attended",
        (_hand("test_soft_cap_applies_before_masking"),),
    ),
    Mutant(
        "soft-cap-before-scale",
        "oracle/reference.py",
        "                    e, denom, l_blk = chunk_softmax(s, keep, c.logits_soft_cap, rounding, size)\n",
        "                    e, denom, l_blk = chunk_softmax(s, keep, c.logits_soft_cap * c.scale, rounding, size)\n",
        "soft cap applied to the raw q.k and sm_scale after it (sm_scale * cap * tanh(q.k / cap)), instead of "
        "capping the scaled score",
        (_hand("test_tiny_soft_cap_saturates_scaled_scores_to_plus_minus_cap"),),
    ),
    Mutant(
        "soft-cap-tanh-of-raw-score",
        "oracle/reference.py",
        "        s.div_(cap).tanh_()\n",
        "        s.tanh_()\n",
        "soft cap written cap * tanh(s) instead of cap * tanh(s / cap)",
        (_hand("test_huge_soft_cap_equals_no_cap"),),
    ),
    Mutant(
        "sm-scale-ignored",
        "oracle/reference.py",
        "                        _scaled_scores(s.view(n, -1, kv)[:, :, k0:k1], q, k.permute(1, 2, 0), c.scale)\n",
        (
            "                        _scaled_scores(\n"
            "                            s.view(n, -1, kv)[:, :, k0:k1], q, k.permute(1, 2, 0), 1.0 / math.sqrt(c.head_dim_qk)\n"
            "                        )\n"
        ),
        "an explicit sm_scale ignored in favour of the default 1/sqrt(head_dim_qk)",
        (_hand("test_single_key_output_equals_v_and_lse_equals_scaled_score"),),
    ),
    Mutant(
        "empty-row-nan",
        "oracle/reference.py",
        "    return e, torch.where(empty, 1.0, denom), lse.transpose(0, 1)\n",
        "    return e, denom, lse.transpose(0, 1)\n",
        "a fully masked row divides 0 by 0: NaN output instead of 0",
        (_hand("test_fully_masked_row_gives_zero_output_and_neg_inf_lse"),),
    ),
    Mutant(
        "empty-request-lse-zero",
        "oracle/reference.py",
        "    lse = torch.full((c.total_qo, c.num_qo_heads), -math.inf, dtype=acc, device=dev)\n",
        "    lse = torch.zeros((c.total_qo, c.num_qo_heads), dtype=acc, device=dev)\n",
        "LSE initialised to 0, so rows of a request with no keys report 0 instead of -inf",
        (_hand("test_empty_kv_gives_zero_output_and_neg_inf_lse"),),
    ),
    # ---- heads, dtypes, KV reading ------------------------------------------------------------
    Mutant(
        "gqa-heads-by-modulo",
        "oracle/reference.py",
        "                    o = o.view(h1 - h0, r1 - r0, -1).div_(denom)\n",
        "                    o = o.view(n, -1, r1 - r0, c.head_dim_vo).transpose(0, 1).reshape(h1 - h0, r1 - r0, -1).div_(denom)\n",
        "GQA maps query head h to KV head h % num_kv_heads (interleaved) instead of h // group: the grouped "
        "result unpacked heads-minor",
        (_hand("test_gqa_query_head_reads_kv_head_by_division"),),
    ),
    Mutant(
        "fp8-descale-dropped",
        "oracle/reference.py",
        "        return (x.to(torch.float32) * descale).to(dtype)\n",
        "        return x.to(torch.float32).to(dtype)\n",
        "fp8 tensors used as stored, their per-tensor descale silently ignored",
        (_hand("test_fp8_inputs_are_scaled_by_their_descales", "e4m3fn"),),
    ),
    Mutant(
        "pages-in-pool-order",
        "oracle/reference.py",
        "        pages = inputs.kv_page_indices[lo:hi].long()\n",
        "        pages = torch.arange(lo, hi, device=src.device)\n",
        "paged KV read in pool order (page slot n is pool page indptr[i] + n), not through kv_page_indices",
        (_hand("test_paged_kv_is_read_through_the_page_table"),),
    ),
    Mutant(
        "hnd-pages-not-transposed",
        "oracle/reference.py",
        "            blk = src[pages, kv0:kv1].transpose(1, 2)\n",
        "            blk = src[pages, kv0:kv1]\n",
        "HND pages [n, H, page, D] flattened as if NHD, mixing heads and tokens",
        (_hand("test_hnd_layout_equals_nhd_layout", "paged"),),
    ),
    Mutant(
        "last-page-assumed-full",
        "oracle/reference.py",
        "        for i, (qo, kv) in enumerate(zip(c.qo_lens, c.kv_lens)):\n",
        "        for i, (qo, kv) in enumerate(zip(c.qo_lens, [n * c.page_size for n in c.pages_per_request])):\n",
        "KV length taken as pages * page_size, so the unused tail of the last page is attended",
        (_hand("test_partial_last_page_tail_is_ignored"),),
    ),
    # ---- chunking and memory ------------------------------------------------------------------
    Mutant(
        "row-block-offset-dropped",
        "oracle/reference.py",
        "                    r1 = min(r0 + rb, qo)\n",
        "                    r0, r1 = 0, min(rb, qo - r0)\n",
        "every query-row block computes (and overwrites) the request's first rows",
        (_MEMORY + "test_tiny_budget_equals_default_budget[ragged]",),
    ),
    Mutant(
        "head-block-offset-dropped",
        "oracle/reference.py",
        "                h1 = min(h0 + hb, c.num_qo_heads)\n",
        "                h0, h1 = 0, min(hb, c.num_qo_heads - h0)\n",
        "every query-head block computes the first heads again",
        (_MEMORY + "test_tiny_budget_equals_default_budget[ragged]",),
    ),
    Mutant(
        "key-block-page-offset-dropped",
        "oracle/reference.py",
        "        first = k0 % ps\n",
        "        first = 0\n",
        "a key block starting mid-page is read from the start of that page",
        (_MEMORY + "test_tiny_budget_equals_default_budget[paged]",),
    ),
    Mutant(
        "budget-ignored",
        "oracle/reference.py",
        "            hb, rb, kb = _plan_chunks(\n",
        "            hb, rb, kb = (c.num_qo_heads, qo, kv) or _plan_chunks(\n",
        "one chunk per request whatever budget_bytes says: [heads, q, kv] scores for the whole request",
        (_MEMORY + "test_score_chunks_stay_within_budget[single]",),
    ),
    Mutant(
        "gpu-budget-uncapped",
        "oracle/reference.py",
        "    return max(DEFAULT_BUDGET_BYTES, min(GPU_BUDGET_CAP_BYTES, total_memory // GPU_BUDGET_SHARE))\n",
        "    return max(DEFAULT_BUDGET_BYTES, total_memory // GPU_BUDGET_SHARE)\n",
        "a GPU's default budget without its cap: 4.3 GiB of score chunks on an H200, more on a larger GPU",
        (_MEMORY + "test_gpu_budget_is_a_share_of_memory_within_floor_and_cap[h200]",),
    ),
    Mutant(
        "cpu-takes-the-gpu-budget",
        "oracle/reference.py",
        '    if device.type != "cuda":\n        return DEFAULT_BUDGET_BYTES\n',
        '    if device.type != "cuda":\n        return GPU_BUDGET_CAP_BYTES\n',
        "the CPU's default budget is the GPU's cap: 4 GiB score chunks on a 2-core runner",
        (_MEMORY + "test_cpu_default_budget_is_256_mib",),
    ),
    # ---- batched GEMMs, host offsets, true fp32 ------------------------------------------------
    Mutant(
        "gqa-query-heads-interleaved",
        "oracle/reference.py",
        "                    q = q.transpose(0, 1).reshape(n, -1, c.head_dim_qk)\n",
        "                    q = q.reshape(r1 - r0, -1, n, c.head_dim_qk).permute(2, 1, 0, 3).reshape(n, -1, c.head_dim_qk)\n",
        "query heads grouped heads-minor (repeat for repeat_interleave): a group's results come from other "
        "heads' queries",
        (_hand("test_gqa_each_query_head_keeps_its_own_query"),),
    ),
    Mutant(
        "head-block-splits-a-group",
        "oracle/reference.py",
        "    hb = hb // group * group if hb >= group else max(d for d in range(1, hb + 1) if group % d == 0)\n",
        "",
        "head blocks not rounded to whole GQA groups: a block of 6 heads over groups of 4 reads the wrong KV head",
        (
            _MEMORY + "test_head_blocks_keep_gqa_groups_whole",
            _MEMORY + "test_head_blocks_are_whole_groups_or_divide_one",
        ),
    ),
    Mutant(
        "kv-head-range-one-too-many",
        "oracle/reference.py",
        "                kv0, kv1 = h0 // group, (h1 - 1) // group + 1  # the KV heads that query heads [h0, h1) read\n",
        "                kv0, kv1 = h0 // group, h1 // group + 1  # the KV heads that query heads [h0, h1) read\n",
        "a head block's KV head range ends one past its last group (off by one in the exclusive end)",
        (_hand("test_gqa_query_head_reads_kv_head_by_division"),),
    ),
    Mutant(
        "kv-offsets-from-qo-indptr",
        "oracle/reference.py",
        "            q0, span = q_starts[i], (kv_starts[i], kv_starts[i + 1])\n",
        "            q0, span = q_starts[i], (q_starts[i], q_starts[i + 1])\n",
        "request i's keys located through qo_indptr (a copy-paste slip when reading offsets to the host)",
        (
            "tests/oracle/test_oracle_sdpa.py::test_oracle_output_matches_sdpa_math_with_boolean_masks"
            "[ragged-GQA-HND-qk12-vo5]",
        ),
    ),
    Mutant(
        "fp32-gemm-scale-dropped",
        "oracle/reference.py",
        "    s.baddbmm_(q, kt, beta=0.0, alpha=scale)  # one GEMM, the scale applied in its epilogue\n",
        "    s.baddbmm_(q, kt, beta=0.0)  # one GEMM, the scale applied in its epilogue\n",
        "the score GEMM's epilogue scale left out: fp32 and fp64 scores are raw q.k",
        (_hand("test_single_key_output_equals_v_and_lse_equals_scaled_score"),),
    ),
    Mutant(
        "value-blocks-overwritten",
        "oracle/reference.py",
        "    o.baddbmm_(p, v, beta=0.0 if first else 1.0)  # one GEMM; beta 0 ignores o's old contents\n",
        "    o.baddbmm_(p, v, beta=0.0)  # one GEMM; beta 0 ignores o's old contents\n",
        "each key block's P @ V overwrites the output instead of adding to it: only the last block counts",
        (_MEMORY + "test_tiny_budget_equals_default_budget[ragged]",),
    ),
    Mutant(
        "output-not-normalised",
        "oracle/reference.py",
        "                    o = o.view(h1 - h0, r1 - r0, -1).div_(denom)\n",
        "                    o = o.view(h1 - h0, r1 - r0, -1)\n",
        "the softmax's division by the row sum forgotten where it is deferred to the [rows, D] output",
        (_hand("test_two_keys_weights_follow_softmax"),),
    ),
    # ---- the honest-kernel baseline (oracle/honest.py): each rounding point --------------------
    Mutant(
        "honest-p-left-unrounded",
        "oracle/reference.py",
        "        blk.div_(per_row[a : a + step]).copy_(blk.to(rounding.p))\n",
        "        blk.div_(per_row[a : a + step])\n",
        "the honest baseline leaves P in fp32: its error is the output's rounding alone, and honest kernels "
        "that round P fail",
        (_HONEST + "test_the_normalised_probabilities_are_rounded_before_p_dot_v",),
    ),
    Mutant(
        "honest-p-rounded-before-normalising",
        "oracle/reference.py",
        "        blk.div_(per_row[a : a + step]).copy_(blk.to(rounding.p))\n",
        "        blk.copy_(blk.to(rounding.p)).div_(per_row[a : a + step])\n",
        "the honest baseline rounds exp(s - m), whose largest entry is exactly 1 (the flash kernels' order), "
        "not the normalised P: two-pass kernels err more than it",
        (_HONEST + "test_the_normalised_probabilities_are_rounded_before_p_dot_v",),
    ),
    Mutant(
        "honest-row-slices-all-the-first",
        "oracle/reference.py",
        "        blk = flat[a : a + step]\n",
        "        blk = flat[:step]\n",
        "the honest P is rounded a slice of rows at a time, every slice the chunk's first: other rows keep exp(s - m)",
        (_HONEST + "test_the_chunked_baseline_equals_its_rounding_points_written_out",),
    ),
    Mutant(
        "honest-lse-rounding-left-out",
        "oracle/reference.py",
        "    lse = (m + torch.log(denom + drift.view_as(denom)) + slack).squeeze(-1)\n",
        "    lse = (m + torch.log(denom) + slack).squeeze(-1)\n",
        "the honest LSE leaves P's rounding out: it is the fp32 oracle's, and fa2's LSE (a row sum of the "
        "rounded P) fails",
        (_HONEST + "test_the_lse_carries_every_rounding_of_p_at_its_magnitude",),
    ),
    Mutant(
        "honest-lse-rounding-signed",
        "oracle/reference.py",
        "        drift[a : a + step] = blk.to(rounding.p).to(blk.dtype).sub_(blk).abs_().sum(dim=-1, keepdim=True)\n",
        "        drift[a : a + step] = blk.to(rounding.p).to(blk.dtype).sub_(blk).sum(dim=-1, keepdim=True)\n",
        "the honest LSE adds P's rounding errors with their signs: they cancel by chance, and on a single row "
        "the baseline can fall far below an honest kernel's",
        (_HONEST + "test_the_lse_carries_every_rounding_of_p_at_its_magnitude",),
    ),
    Mutant(
        "honest-score-order-left-out",
        "oracle/honest.py",
        "    return Rounding(p=p, out=out, tanh_bits=TANH_BITS, score_error=SCORE_ERROR_PER_ROOT_D * "
        "math.sqrt(case.head_dim_qk))\n",
        "    return Rounding(p=p, out=out, tanh_bits=TANH_BITS, score_error=0.0)\n",
        "the honest LSE allows no fp32 summation order of the scores: at large logits it is an ulp from the "
        "oracle, and kernels summing in their own order fail",
        (_HONEST + "test_the_lse_allows_the_scores_fp32_summation_order",),
    ),
    Mutant(
        "honest-score-size-from-the-score",
        "oracle/reference.py",
        "    slack = rounding.score_error * torch.where(empty, 0.0, size)\n",
        "    slack = rounding.score_error * torch.where(empty, 0.0, m).abs()\n",
        "the honest LSE scales the scores' fp32 error with the row max, not with the products summed: a row "
        "whose products cancel gets no allowance (FA3's fp8 LSE on the H200, 2.5x over)",
        (_HONEST + "test_the_lse_allows_the_scores_fp32_summation_order",),
    ),
    Mutant(
        "honest-tanh-exact",
        "oracle/honest.py",
        "    return Rounding(p=p, out=out, tanh_bits=TANH_BITS, score_error=SCORE_ERROR_PER_ROOT_D * "
        "math.sqrt(case.head_dim_qk))\n",
        "    return Rounding(p=p, out=out, tanh_bits=None, score_error=SCORE_ERROR_PER_ROOT_D * "
        "math.sqrt(case.head_dim_qk))\n",
        "the honest soft cap takes fp32's tanh: GPU kernels' tanh.approx (1.1e-5 relative) fails soft-capped LSEs",
        (_HONEST + "test_the_soft_caps_tanh_keeps_sixteen_significant_bits",),
    ),
    Mutant(
        "honest-output-unrounded",
        "oracle/reference.py",
        "    if rounding.out is not None:\n",
        "    if False:\n",
        "the honest output is never rounded to o_dtype: the baseline misses the one rounding every kernel makes",
        (_HONEST + "test_the_output_is_rounded_once_to_its_dtype",),
    ),
    Mutant(
        "honest-p-in-the-kv-dtype-always",
        "oracle/honest.py",
        "    widest = q_dtype if is_fp8(kv_dtype) and not is_fp8(q_dtype) else kv_dtype\n",
        "    widest = kv_dtype\n",
        "a 16-bit query over fp8 KV rounds P to fp8, which FlashInfer's mixed kernels never do: the bound "
        "loosens to fp8's",
        (_HONEST + "test_p_is_rounded_to_the_dtype_it_enters_p_dot_v_in[bf16-e4m3fn-bf16]",),
    ),
    Mutant(
        "tf32-left-on",
        "oracle/reference.py",
        "    torch.backends.cuda.matmul.allow_tf32 = False\n",
        "",
        "the caller's TF32 setting left on for the oracle's fp32 GEMMs (10-bit mantissas on a GPU)",
        (_PRECISION + "test_tf32_is_off_during_the_call_and_the_callers_setting_returns",),
    ),
    Mutant(
        "callers-tf32-setting-lost",
        "oracle/reference.py",
        "        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved\n",
        "        pass\n",
        "the oracle turns TF32 off and never gives the caller's setting back",
        (_PRECISION + "test_tf32_is_off_during_the_call_and_the_callers_setting_returns",),
    ),
    # ---- verdicts: judge, compare, tolerances -------------------------------------------------
    Mutant(
        "judge-base2-lse-not-converted",
        "oracle/judge.py",
        "        lse = lse_from_base2(lse.double())\n",
        "        lse = lse.double()\n",
        "an adapter's declared base-2 LSE compared as if natural",
        (_COMPARE + "test_judge_passes_the_reference_itself_in_either_lse_base",),
    ),
    Mutant(
        "judge-fp32-against-fp32",
        "oracle/judge.py",
        '    ref = attention(inputs, "fp64" if dtype == "fp32" else "fp32", budget_bytes)\n',
        '    ref = attention(inputs, "fp32", budget_bytes)\n',
        "fp32 cases judged against the fp32 oracle: the baseline error is 0 and the bound collapses to the floor",
        (_COMPARE + "test_fp32_cases_are_judged_against_fp64_with_the_fp32_oracle_error_as_baseline",),
    ),
    Mutant(
        "poison-counted-as-nan",
        "oracle/compare.py",
        "    nan = torch.isnan(a) & ~unwritten\n",
        "    nan = torch.isnan(a)\n",
        "unwritten (poisoned) elements also counted as computed NaNs",
        (_COMPARE + "test_unwritten_elements_fail_even_under_an_infinite_bound[fp32]",),
    ),
    Mutant(
        "lse-inf-mismatch-ignored",
        "oracle/compare.py",
        "    inf_mismatch = (~fin) & ~(a == r) & ~unwritten & ~nan\n",
        "    inf_mismatch = torch.zeros_like(fin)\n",
        "positions where the reference is infinite (empty-row LSE) are skipped instead of required to match",
        (_COMPARE + "test_lse_neg_inf_against_finite_is_an_inf_mismatch",),
    ),
    Mutant(
        "bound-exclusive",
        "oracle/compare.py",
        "    passed = n_bad == 0 and max_abs <= bound\n",
        "    passed = n_bad == 0 and max_abs < bound\n",
        "an error exactly equal to the bound fails",
        (_COMPARE + "test_error_equal_to_the_bound_passes_and_the_next_float_fails",),
    ),
    Mutant(
        "bound-floor-beside-the-baseline",
        "oracle/tolerances.py",
        "        return (FACTORS[dtype] if factor is None else factor) * baseline_err\n",
        "        return max((FACTORS[dtype] if factor is None else factor) * baseline_err, floor(dtype, quantity, "
        "ref_scale))\n",
        "bound = max(k * baseline, floor), the rule before issue 17: the floor hides defects wherever the honest "
        "error is small",
        (
            _COMPARE + "test_bound_is_factor_times_baseline_and_the_floor_only_where_the_baseline_is_zero[bf16-out]",
            _FAULTS + "test_a_defect_fails_where_its_run_caught_it_and_the_faultless_loop_passes[row_sum_in_half]",
        ),
    ),
    Mutant(
        "bound-zero-where-the-baseline-is",
        "oracle/tolerances.py",
        "    return floor(dtype, quantity, ref_scale)\n",
        "    return 0.0\n",
        "a zero honest error leaves a zero bound: a single-key row fails on its fp32 rounding",
        (_COMPARE + "test_bound_is_factor_times_baseline_and_the_floor_only_where_the_baseline_is_zero[fp32-out]",),
    ),
    Mutant(
        "factor-fp16-doubled",
        "oracle/tolerances.py",
        '    "fp16": 3.0,\n',
        '    "fp16": 6.0,\n',
        "the fp16 factor doubled: a row sum held in fp16 passes the standard run",
        (
            _COMPARE + "test_every_dtype_has_a_factor_and_fp32_the_largest",
            _FAULTS + "test_a_defect_fails_where_its_run_caught_it_and_the_faultless_loop_passes[row_sum_in_half]",
        ),
    ),
    Mutant(
        "judge-baseline-is-the-reference",
        "oracle/judge.py",
        '    base = attention(inputs, "honest", budget_bytes)\n',
        '    base = attention(inputs, "fp32", budget_bytes)\n',
        "the judge's baseline is the fp32 oracle itself: every 16-bit bound falls to the floor",
        (_COMPARE + "test_fp32_cases_are_judged_against_fp64_with_the_fp32_oracle_error_as_baseline",),
    ),
    Mutant(
        "governing-dtype-finest",
        "oracle/tolerances.py",
        "    return min((q_dtype, kv_dtype, o_dtype), key=_COARSENESS.index)\n",
        "    return max((q_dtype, kv_dtype, o_dtype), key=_COARSENESS.index)\n",
        "the floor of the most precise dtype governs a mixed-dtype case",
        (_COMPARE + "test_governing_dtype_is_the_coarsest_of_q_kv_and_o[bf16-bf16-fp32-is-bf16]",),
    ),
    # ---- mistakes that raise: the parity grid computes a case's truth before any backend may
    # decline it, so these prove that even a declined (skipped) parity test can fail ----------
    Mutant(
        "v-read-from-k-cache",
        "oracle/reference.py",
        '                        v = _dequant(_kv_rows(inputs, "v", span, kv0, kv1, k0, k1), vs, acc)\n',
        '                        v = _dequant(_kv_rows(inputs, "k", span, kv0, kv1, k0, k1), vs, acc)\n',
        "values read from the K cache (a copy-paste slip): every output with a key is wrong",
        (_hand("test_two_keys_weights_follow_softmax"), _PARITY),
    ),
    Mutant(
        "fp8-multiplied-as-stored",
        "oracle/reference.py",
        "        return (x.to(torch.float32) * descale).to(dtype)\n",
        "        return (x * descale).to(dtype)\n",
        "fp8 tensors multiplied by their descale before being widened: torch has no fp8 arithmetic",
        (_hand("test_fp8_inputs_are_scaled_by_their_descales", "e4m3fn"), _PARITY),
    ),
    Mutant(
        "soft-cap-with-math-tanh",
        "oracle/reference.py",
        "        s.div_(cap).tanh_()\n",
        "        s = math.tanh(s / cap)\n",
        "soft cap written with math.tanh, which takes one number, not a tensor of scores",
        (_hand("test_soft_cap_applies_before_masking"), _PARITY),
    ),
    Mutant(
        "output-sized-by-qk-head-dim",
        "oracle/reference.py",
        "    out = torch.zeros((c.total_qo, c.num_qo_heads, c.head_dim_vo), dtype=acc, device=dev)\n",
        "    out = torch.zeros((c.total_qo, c.num_qo_heads, c.head_dim_qk), dtype=acc, device=dev)\n",
        "reference output allocated with the q/k head dim: wrong shape whenever head_dim_vo differs",
        (_hand("test_empty_batch_gives_empty_result", "ragged"), _PARITY),
    ),
    Mutant(
        "max-error-over-nothing",
        "oracle/compare.py",
        ("    if not bool(fin.any()):\n        return 0.0\n"),
        "",
        "the baseline error of a result with no finite element (an empty batch) taken as max() of nothing",
        (_COMPARE + "test_truth_of_an_empty_batch_has_no_baseline_error[empty-batch]", _PARITY),
    ),
    Mutant(
        "override-without-tracker",
        "oracle/tolerances.py",
        '        if not self.issue.startswith(("http://", "https://", "#")):\n',
        "        if not self.issue:\n",
        "a tolerance override accepted with any non-empty text as its 'issue'",
        (_COMPARE + "test_override_without_a_tracker_reference_is_refused[prose]",),
    ),
)


check_unique(ORACLE_MUTANTS)
