"""Adapter fault injections: mistakes in the code that calls a library (kernels/*.py).

An adapter sits between the oracle and the library, so its faults are the ones that make a
correct library look wrong or a wrong one look right: a mask built with the wrong alignment,
rows stored at the wrong offset, KV read around the page table, a decline dropped, a resolved
backend or a fallback reason misreported. Each is killed by tests/kernels/ (the torch adapters
against the oracle, the FlashInfer adapter against the CPU fake of the library).
"""

from __future__ import annotations

from conformance.mutations.kinds import Mutant, check_unique

_SDPA = "kernels/torch_sdpa.py"
_FLEX = "kernels/torch_flex.py"
_COMMON = "kernels/_torch_common.py"
_FI = "kernels/flashinfer/adapter.py"
_T_TORCH = "tests/kernels/test_torch_target.py::"
_BATCH = "kernels/_torch_batch.py"
_T_BATCHED = "tests/kernels/test_torch_batched.py::"
_T_BATCHED_ROUTES = "tests/routing/test_torch_batched_spec.py::"
_FLEX_BATCH = _T_BATCHED + "test_flex_padded_matches_the_oracle_with_each_requests_lse"
_T_FI = "tests/kernels/test_flashinfer_adapter.py::"


def _matches(backend: str, name: str) -> str:
    return f"{_T_TORCH}test_backend_matches_oracle_or_declines_as_expected[{backend}-{name}]"


def _agrees(backend: str) -> str:
    return f"{_T_BATCHED}test_batched_backend_agrees_with_the_oracle_on_the_quick_matrix[{backend}]"


def _adapter(name: str, path: str, old: str, new: str, description: str, kills: tuple[str, ...]) -> Mutant:
    return Mutant(name, path, old, new, description, kills, kind="adapter")


TORCH_ADAPTER_MUTANTS: tuple[Mutant, ...] = (
    _adapter(
        "sdpa-mask-aligned-top-left",
        _SDPA,
        "    aligned = torch.arange(qo, device=device).view(-1, 1) + (kv - qo)\n",
        "    aligned = torch.arange(qo, device=device).view(-1, 1)\n",
        "the explicit mask (window, custom) aligns causal and window top-left, not bottom-right",
        (_matches("math", "paged-p5-HND-causal-window"),),
    ),
    _adapter(
        "sdpa-soft-cap-not-declined",
        "kernels/_torch_common.py",
        (
            "    if case.logits_soft_cap > 0:\n"
            '        return Support.no(skips.detail(skips.NO_SOFT_CAP, "SDPA has no score modification"))\n'
        ),
        "",
        "SDPA claims soft-cap cases it cannot compute, and runs them without the cap",
        (_T_TORCH + "test_sdpa_declines_soft_cap[math]",),
    ),
    _adapter(
        "sdpa-rows-stored-at-batch-start",
        _SDPA,
        "                store_rows(out, r.q0, o[0].transpose(0, 1))\n",
        "                store_rows(out, 0, o[0].transpose(0, 1))\n",
        "every request's rows written at the start of the batch's output",
        (_matches("math", "ragged-gqa-bf16"),),
    ),
    _adapter(
        "sdpa-auto-choices-unsorted",
        _SDPA,
        '            resolved = "+".join(sorted(set(chosen))) if chosen else EMPTY_PATH\n',
        '            resolved = "+".join(dict.fromkeys(chosen)) if chosen else EMPTY_PATH\n',
        "auto's resolved name joins the choices in request order, so one batch reads two ways",
        (_T_TORCH + "test_auto_joins_differing_choices_sorted",),
    ),
    _adapter(
        "flex-mask-aligned-top-left",
        _FLEX,
        "            aligned = i + kv - qo_len[r]\n",
        "            aligned = i\n",
        "flex's mask_mod aligns causal and window top-left, not bottom-right",
        (_matches("flex", "ragged-mqa-fp16-causal-qo<kv"),),
    ),
    _adapter(
        "flex-soft-cap-dropped",
        _FLEX,
        "        score_mod = make_score_mod(c.logits_soft_cap) if c.logits_soft_cap > 0 else None\n",
        "        score_mod = None\n",
        "flex accepts a soft cap and never applies it",
        (_matches("flex", "single-soft-cap"),),
    ),
    _adapter(
        "flex-called-without-queries",
        _FLEX,
        (
            "        lse = poison(torch.empty((c.total_qo, c.num_qo_heads), dtype=torch.float32, device=dev))\n"
            "        if c.total_qo > 0:\n"
        ),
        (
            "        lse = poison(torch.empty((c.total_qo, c.num_qo_heads), dtype=torch.float32, device=dev))\n"
            "        if True:\n"
        ),
        "flex called for a batch with no query rows, and no block mask to give it",
        (_T_TORCH + "test_flex_returns_empty_tensors_without_a_call_when_there_are_no_queries",),
    ),
    _adapter(
        "pages-read-in-pool-order",
        _COMMON,
        "            mine = pages[indptr[i] : indptr[i + 1]]\n",
        "            mine = torch.arange(indptr[i], indptr[i + 1], dtype=torch.int64)\n",
        "paged KV read in pool order, not through kv_page_indices",
        (_matches("math", "paged-p1-NHD-causal"),),
    ),
    _adapter(
        "hnd-pool-flattened-as-nhd",
        _COMMON,
        "            return x.transpose(0, 1).reshape(x.shape[1], -1, x.shape[3])  # [P, H, page, D]\n",
        "            return x.reshape(-1, x.shape[1], x.shape[3]).transpose(0, 1)  # [P, H, page, D]\n",
        "an HND page pool flattened as if it were NHD, mixing heads and tokens",
        (_matches("math", "paged-p5-HND-causal-window"),),
    ),
    _adapter(
        "fp8-not-declined",
        _COMMON,
        "    if case.is_fp8:\n",
        "    if False:\n",
        "fp8 cases not declined by the torch adapters",
        (_T_TORCH + "test_supports_declines_dtypes_no_torch_backend_takes[fp8-math]",),
    ),
    _adapter(
        "padded-rows-stored-at-batch-start",
        _BATCH,
        "        store_rows(out, q0, o[i, :, :qo].transpose(0, 1))\n        q0 += qo\n",
        "        store_rows(out, q0, o[i, :, :qo].transpose(0, 1))\n",
        "every request of a padded batch written at the start of the output",
        (_agrees("padded-math"), _FLEX_BATCH + "[ragged-gqa-plain]"),
    ),
    _adapter(
        "flex-padded-keys-past-length-visible",
        "kernels/torch_flex_padded.py",
        "        keep = (q_idx < qo_len[b]) & (kv_idx < kv)\n",
        "        keep = q_idx < qo_len[b]\n",
        "flex's padded mask_mod lets a request attend the padding past its own keys",
        (_FLEX_BATCH + "[ragged-gqa-plain]",),
    ),
    _adapter(
        "nested-kv-packed-in-reverse",
        _BATCH,
        "    allslots = torch.cat(slots.per_request) if",
        "    allslots = torch.cat(slots.per_request[::-1]) if",
        "the jagged KV packed in reverse request order: each request reads another's keys",
        (_agrees("nested-math"), _agrees("nested-auto")),
    ),
    _adapter(
        "nested-support-not-asked",
        "kernels/torch_nested.py",
        "        return self._probe(case)\n",
        "        return Support.yes()\n",
        "jagged SDPA claims every case: causal, masks and GQA are run, not declined with torch's words",
        (_T_BATCHED + "test_nested_declines_what_jagged_sdpa_refuses_in_torchs_words[causal]",),
    ),
    _adapter(
        "padded-batch-of-one-served",
        _BATCH,
        "MIN_PADDED_BATCH = 2\n",
        "MIN_PADDED_BATCH = 1\n",
        "the padded backends serve a batch of one, the very call their per-request backend makes",
        (
            _T_BATCHED
            + "test_a_padded_backend_declines_a_batch_of_one_naming_its_per_request_backend[padded-auto-auto]",
        ),
    ),
    _adapter(
        "padded-flash-not-asked",
        "kernels/torch_padded.py",
        '        if not empty and self.sdpa in (AUTO, "math"):\n',
        "        if not empty:\n",
        "the forced padded backends never ask SDPA's selector: a refusal comes at run time, unexplained",
        (_T_BATCHED + "test_padded_flash_quotes_torch_when_it_refuses_the_batch",),
    ),
    _adapter(
        "flex-padded-soft-cap-dropped",
        "kernels/torch_flex_padded.py",
        "        score_mod = make_score_mod(c.logits_soft_cap) if c.logits_soft_cap > 0 else None\n",
        "        score_mod = None\n",
        "flex on a padded batch accepts a soft cap and never applies it",
        (_FLEX_BATCH + "[paged-causal-custom-soft-cap]",),
    ),
    _adapter(
        "nested-backends-not-offered",
        "kernels/torch_target.py",
        "    return padded + nested_backends_for(device) + (FLEX_PADDED,) if padded else ()\n",
        "    return padded + (FLEX_PADDED,) if padded else ()\n",
        "the torch target stops offering the nested backends: a quick run never calls jagged SDPA",
        (
            _T_BATCHED + "test_the_cpu_offers_these_batched_backends",
            _T_TORCH + "test_backends_per_device",
            _T_BATCHED_ROUTES + "test_every_forced_batched_backend_has_its_row",
        ),
    ),
)

FLASHINFER_ADAPTER_MUTANTS: tuple[Mutant, ...] = (
    _adapter(
        "fi-mask-not-folded",
        _FI,
        "        if qo > 0 and kv > 0 and (c.causal or c.window_left >= 0):\n",
        "        if False:\n",
        "the custom mask passed without the case's causal and window masks (FlashInfer ignores "
        "causal under a custom mask)",
        (_T_FI + "test_the_bool_mask_form_matches_the_oracle_through_causal_and_window",),
    ),
    _adapter(
        "fi-upstream-reason-none",
        _FI,
        "    return NOT_REPORTED\n",
        "    return None\n",
        "upstream FlashInfer's silence reported as None, i.e. as 'no fallback happened'",
        (_T_FI + "test_upstream_reports_no_reason_which_is_not_none",),
    ),
    _adapter(
        "fi-lse-base-declared-natural",
        _FI,
        '            return self.options.lse_base, (LSE_NATURAL if self.options.lse_base == "ln" else LSE_BASE2)\n',
        "            return self.options.lse_base, LSE_NATURAL\n",
        "the LSE declared natural whatever base the library was asked for",
        (_T_FI + "test_lse_is_declared_in_the_base_the_library_returns[paged]",),
    ),
    _adapter(
        "fi-prebuild-wrong-generator",
        "kernels/flashinfer/prebuild.py",
        '    gen = "batch_prefill_fa2" if resolved == "fa2" else "batch_prefill"\n',
        '    gen = "batch_prefill"\n',
        "the prebuild builds fa2's batch prefill with the public generator, not the primary module plan() loads",
        ("tests/kernels/test_flashinfer_prebuild.py::test_module_requests_follow_the_generators_plan_calls",),
    ),
    _adapter(
        "fi-matrix-directed-cases-dropped",
        "kernels/flashinfer/matrix.py",
        "    cases = [rehome(c) for c in directed_cases() + long]\n",
        "    cases = [rehome(c) for c in long]\n",
        "the FlashInfer matrix loses the directed cases (empty batch, zero lengths, fully masked rows ...)",
        ("tests/kernels/test_flashinfer_matrix.py::test_directed_cases_keep_their_shape_on_a_profile",),
    ),
    _adapter(
        "fi-fork-graph-decode-lse-claimed",
        "kernels/flashinfer/support.py",
        '        if graph and api == "decode" and case.return_lse:\n',
        "        if False:\n",
        "aiter+graph decode claims LSE, which the fork refuses under capture (rule 32)",
        (_T_FI + "test_fork_aiter_graph_decode_declines_lse_which_capture_refuses",),
    ),
    _adapter(
        "fi-call-log-drops-plan",
        "kernels/flashinfer/adapter.py",
        '                self._log_call(w, "plan", args, kwargs)\n',
        "                pass\n",
        "the adapter's call log omits plan(): a plain script would run an unplanned wrapper",
        ("tests/kernels/test_flashinfer_adapter.py::test_the_call_log_holds_each_library_call_as_made",),
    ),
    _adapter(
        "fi-bench-call-through-run",
        "kernels/flashinfer/adapter.py",
        "        return lambda: self._call_run(w, c, inputs.q, inputs.k, inputs.v, args, kw, out, None, False)\n",
        "        return lambda: self.run(inputs)\n",
        "a sweep times the adapter's run() (poisoning, allocation, synchronisation) as the library's",
        ("tests/kernels/test_flashinfer_adapter.py::test_bench_call_is_the_librarys_run_alone_on_one_plan[paged]",),
    ),
    _adapter(
        "fi-cudnn-fp8-on-sm90-claimed",
        "kernels/flashinfer/support.py",
        "            if fp8_q and capability is not None and capability < CUDNN_FP8_FROM:\n",
        "            if False:\n",
        "cuDNN claims fp8 SDPA on sm90, where the H200 raised cudnnGraphNotSupportedError (Blackwell only)",
        (
            _T_FI + "test_cudnn_declines_fp8_on_sm90_and_page_sizes_not_a_power_of_two",
            "tests/harness/test_known_failures.py::"
            "test_every_failure_of_the_recorded_cudnn_and_decode_tc_matrices_is_an_entry_or_declined_now",
        ),
    ),
    _adapter(
        "fi-cudnn-odd-page-size-claimed",
        "kernels/flashinfer/support.py",
        "            if case.page_size & (case.page_size - 1):\n",
        "            if False:\n",
        "cuDNN decode claims pages of 5, which the H200 refused (a power-of-2 block size)",
        (
            _T_FI + "test_cudnn_declines_fp8_on_sm90_and_page_sizes_not_a_power_of_two",
            "tests/harness/test_known_failures.py::"
            "test_every_failure_of_the_recorded_cudnn_and_decode_tc_matrices_is_an_entry_or_declined_now",
        ),
    ),
    _adapter(
        "fi-fa2-odd-head-dim-claimed",
        "kernels/flashinfer/support.py",
        '        if api != "decode" and odd:\n',
        "        if False:\n",
        "fa2 prefill claims head dim 96, whose missing validation upstream (#4299) ends in an illegal memory access",
        tuple(
            _T_FI + f"test_a_missing_validation_upstream_is_declined_and_a_defect_is_not[{i}]"
            for i in ("ragged-96-fa2", "ragged-96-auto", "paged-96-fa2", "single-vo-96-fa2")
        ),
    ),
    _adapter(
        "fi-fa3-paged-unequal-head-dims-claimed",
        "kernels/flashinfer/support.py",
        '    elif backend == "fa3" and api == "paged" and case.head_dim_qk != case.head_dim_vo:\n',
        "    elif False:\n",
        "fa3 asked for paged (192, 128) is claimed: the library's deliberate refusal is run and filed as a defect",
        (
            _T_FI + "test_a_missing_validation_upstream_is_declined_and_a_defect_is_not[paged-192-fa3]",
            "tests/harness/test_known_failures.py::"
            "test_every_failure_of_the_recorded_fa3_and_auto_matrix_is_an_entry_or_a_lifecycle_defect",
        ),
    ),
    _adapter(
        "fi-fa3-paged-unequal-head-dims-declined-under-auto",
        "kernels/flashinfer/support.py",
        "        resolved = auto_resolution(case, auto_pick, decode_tensor_cores)\n",
        "        resolved = auto_resolution(case, auto_pick, decode_tensor_cores)\n"
        '        if resolved == "fa3" and api == "paged" and case.head_dim_qk != case.head_dim_vo:\n'
        "            return _no(skips.HEAD_DIM, FA3_PAGED_UNEQUAL_HEAD_DIMS)\n",
        "auto's routing of paged (192, 128) to fa3 is declined too: the defect it is never runs, never shows",
        (_T_FI + "test_a_missing_validation_upstream_is_declined_and_a_defect_is_not[paged-192-auto]",),
    ),
    _adapter(
        "fi-graph-wrapper-name-kept-on-replacement",
        "kernels/flashinfer/adapter.py",
        '            name = f"graph:{c.layout}/{c.kv_layout}/b{c.batch_size}{kind}#{self._graph_wrappers_made}"\n',
        '            name = f"graph:{c.layout}/{c.kv_layout}/b{c.batch_size}{kind}#1"\n',
        "a graph wrapper replaced for a larger case keeps its predecessor's name: the routing check reads "
        "two wrappers' plans as one history",
        ("tests/gate/test_route_records.py::test_records_name_the_wrapper_each_plan_used_and_the_check_groups_by_it",),
    ),
    _adapter(
        "fi-graph-shared-keyed-per-mask",
        "kernels/flashinfer/adapter.py",
        '    return key if options.graph_wrappers == "shared" else key + (case.mask,)\n',
        "    return key + (case.mask,)\n",
        'graph_wrappers="shared" still keys graph wrappers per mask kind: masked and unmasked plans never share one',
        (_T_FI + "test_shared_graph_wrappers_are_one_per_batch_size_with_mask_buffers_up_front",),
    ),
    _adapter(
        "fi-graph-wrapper-shared-across-model-configs",
        "kernels/flashinfer/adapter.py",
        '    if options.graph_wrappers != "any_model":\n',
        "    if False:\n",
        "one graph wrapper per batch size whatever the dtypes and head dims: an fp16 d64 capture is re-planned "
        "with fp8 d192, which no engine does (the first plan pinned the backend)",
        (_T_FI + "test_shared_graph_wrappers_are_one_per_batch_size_with_mask_buffers_up_front",),
    ),
    _adapter(
        "fi-graph-any-model-keyed-per-model",
        "kernels/flashinfer/adapter.py",
        '    if options.graph_wrappers != "any_model":\n',
        "    if True:\n",
        'graph_wrappers="any_model" still keys per model config: the library\'s own graph lifecycle across dtypes '
        "and head dims (its holds and refusals) is never driven",
        (
            "tests/routing/test_flashinfer_cuda_spec.py::test_lifecycle_matches_the_library_on_a_long_lived_wrapper"
            "[0.7.4-paged graph held on fa2]",
            "tests/routing/test_flashinfer_cuda_spec.py::test_lifecycle_matches_the_library_on_a_long_lived_wrapper"
            "[0.7.4-paged graph held on fa3]",
        ),
    ),
    _adapter(
        "fi-shared-mask-buffer-sized-for-masked-only",
        "kernels/flashinfer/adapter.py",
        '        mask_bytes = packed_mask_bytes(c.replace(mask="custom") if buffers else c, self.options.mask_form)\n',
        "        mask_bytes = packed_mask_bytes(c, self.options.mask_form)\n",
        "a shared graph wrapper's custom_mask_buf is sized for masked plans only, though run() reads it for every plan",
        (_T_FI + "test_shared_graph_wrappers_are_one_per_batch_size_with_mask_buffers_up_front",),
    ),
    _adapter(
        "fi-shared-wrapper-without-mask-buffers",
        "kernels/flashinfer/adapter.py",
        '    return options.graph_wrappers == "shared" or case.mask == "custom"\n',
        '    return case.mask == "custom"\n',
        "a shared graph wrapper first planned unmasked is built without mask buffers: it is not the shared wrapper",
        (
            _T_FI + "test_shared_graph_wrappers_are_one_per_batch_size_with_mask_buffers_up_front",
            _T_FI + "test_an_unmasked_plan_on_a_shared_graph_wrapper_reads_its_mask_buffer[paged]",
            _T_FI + "test_an_unmasked_plan_on_a_shared_graph_wrapper_reads_its_mask_buffer[ragged]",
        ),
    ),
    _adapter(
        "fi-cudnn-block-table-regrowth-missed",
        "kernels/flashinfer/adapter.py",
        "            if table is not None and (widest := _widest_request_pages(inputs)) > table.shape[1]:\n",
        "            if False:\n",
        "a cudnn+graph wrapper is reused for a request wider than its captured block table, which raises",
        (_T_FI + "test_a_cudnn_graph_wrapper_is_replaced_when_a_request_outgrows_its_block_table",),
    ),
    _adapter(
        "fi-single-causal-long-queries-claimed",
        "kernels/flashinfer/support.py",
        '        if api == "single" and case.causal and not custom and case.qo_lens[0] > case.kv_lens[0]:\n',
        "        if False:\n",
        "fa2 single prefill claims causal cases with more queries than keys, which it refuses",
        (
            "tests/kernels/test_flashinfer_adapter.py::"
            "test_fa2_single_prefill_declines_causal_with_more_queries_than_keys",
        ),
    ),
)

check_unique(TORCH_ADAPTER_MUTANTS + FLASHINFER_ADAPTER_MUTANTS)
