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
# Every parity-grid test that reaches the mutant (its ids come from the matrix at run time).
_PARITY = "conformance/test_parity_grid.py::test_backend_matches_the_oracle[*]"


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
        "    if not causal and window_left < 0 and custom is None:\n",
        "    if not causal and window_left < 0:\n",
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
    Mutant(
        "soft-cap-after-mask",
        "oracle/reference.py",
        (
            "    if cap > 0:\n"
            "        s.div_(cap).tanh_().mul_(cap)\n"
            "    if keep is not None:\n"
            "        s.masked_fill_(~keep.unsqueeze(0), -math.inf)\n"
        ),
        (
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
        "                    e, denom, l_blk = _softmax(s, keep, c.logits_soft_cap)\n",
        "                    e, denom, l_blk = _softmax(s, keep, c.logits_soft_cap * c.scale)\n",
        "soft cap applied to the raw q.k and sm_scale after it (sm_scale * cap * tanh(q.k / cap)), instead of "
        "capping the scaled score",
        (_hand("test_tiny_soft_cap_saturates_scaled_scores_to_plus_minus_cap"),),
    ),
    Mutant(
        "soft-cap-tanh-of-raw-score",
        "oracle/reference.py",
        "        s.div_(cap).tanh_().mul_(cap)\n",
        "        s.tanh_().mul_(cap)\n",
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
        "        s.baddbmm_(q, kt, beta=0.0, alpha=scale)  # one GEMM, the scale applied in its epilogue\n",
        "        s.baddbmm_(q, kt, beta=0.0)  # one GEMM, the scale applied in its epilogue\n",
        "the score GEMM's epilogue scale left out: fp32 and fp64 scores are raw q.k",
        (_hand("test_single_key_output_equals_v_and_lse_equals_scaled_score"),),
    ),
    Mutant(
        "value-blocks-overwritten",
        "oracle/reference.py",
        "        o.baddbmm_(p, v, beta=0.0 if first else 1.0)  # one GEMM; beta 0 ignores o's old contents\n",
        "        o.baddbmm_(p, v, beta=0.0)  # one GEMM; beta 0 ignores o's old contents\n",
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
    Mutant(
        "input-scores-scaled-in-the-input-dtype",
        "oracle/reference.py",
        "        s.copy_(torch.bmm(q, kt)).mul_(scale)\n",
        "        s.copy_(torch.bmm(q, kt) * scale)\n",
        'at "input" precision, q.k scaled in fp16/bf16 before being widened, instead of rounded and then '
        "scaled in fp32",
        (_HAND + "test_input_precision_rounds_q_dot_k_to_the_input_dtype_before_the_scale",),
    ),
    Mutant(
        "input-probabilities-rounded-unnormalised",
        "oracle/reference.py",
        (
            "                        e = e.div_(denom).to(p_dtype)\n"
            "                        denom = torch.ones_like(denom)\n"
        ),
        "                        e = e.to(p_dtype)\n",
        'at "input" precision, exp(s - max) rounded and the division left for the output, as in fp32: the '
        "rounded P is not the normalised one",
        (_HAND + "test_input_precision_rounds_the_probabilities_to_the_input_dtype",),
    ),
    Mutant(
        "input-probabilities-divided-twice",
        "oracle/reference.py",
        "                        denom = torch.ones_like(denom)\n",
        "",
        'at "input" precision, P normalised before rounding and the output divided by the row sum again',
        (_HAND + "test_input_precision_rounds_the_probabilities_to_the_input_dtype",),
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
        "bound-min-not-max",
        "oracle/tolerances.py",
        "    return max(factor * baseline_err, floor(dtype, quantity, ref_scale))\n",
        "    return min(factor * baseline_err, floor(dtype, quantity, ref_scale))\n",
        "bound = min(k * baseline, floor): an exact baseline collapses the bound to 0",
        (_COMPARE + "test_bound_is_max_of_factor_times_baseline_and_floor[fp32-out]",),
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
        '                        v = _dequant(_kv_rows(inputs, "v", span, kv0, kv1, k0, k1), vs, mm_dtype)\n',
        '                        v = _dequant(_kv_rows(inputs, "k", span, kv0, kv1, k0, k1), vs, mm_dtype)\n',
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
        "        s.div_(cap).tanh_().mul_(cap)\n",
        "        s = cap * math.tanh(s / cap)\n",
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
