"""Routing-spec mutants: edits of the specs' data (routing/specs/*.py), killed by tests/routing/.

A spec is data (rows, per-architecture tables, flags), so its mutants are the mistakes data
suffers: a row disarmed, a threshold shifted by one, a gate reading the wrong table, a reason
claimed where the library gives none, and an explicit `None` deleted. The last is refused when
the spec is imported (routing.spec.validate: None is a verdict, an absent row a gap), so it is
an `at_import` mutant: the modules that fail to collect are its kill.
"""

from __future__ import annotations

from conformance.mutations.kinds import Mutant, check_unique

_ROCM = "routing/specs/flashinfer_rocm.py"
_CUDA = "routing/specs/flashinfer_cuda.py"
_TORCH = "routing/specs/torch_sdpa.py"
_T_BATCHED_SPEC = "tests/routing/test_torch_batched_spec.py::"
_T_ROCM = "tests/routing/test_rocm_spec.py::"
_T_STANDIN = "tests/routing/test_rocm_spec_vs_standin.py::"
_T_CUDA = "tests/routing/test_flashinfer_cuda_spec.py::"
_T_TORCH = "tests/routing/test_torch_spec.py::"


def _spec(name: str, path: str, old: str, new: str, description: str, kills: tuple[str, ...], **kw: object) -> Mutant:
    return Mutant(name, path, old, new, description, kills, kind="routing-spec", **kw)  # type: ignore[arg-type]


FLASHINFER_SPEC_MUTANTS: tuple[Mutant, ...] = (
    _spec(
        "rocm-ragged-row-disarmed",
        _ROCM,
        'RAGGED = ThresholdTable("ragged", {"gfx942": 16, "gfx950": None}, "_AITER_RAGGED_GATED_Q_LEN; rule 6")\n',
        'RAGGED = ThresholdTable("ragged", {"gfx942": None, "gfx950": None}, "_AITER_RAGGED_GATED_Q_LEN; rule 6")\n',
        "gfx942's ragged short-query row disarmed: the spec stops expecting fa2 at q <= 16",
        (
            _T_ROCM + "test_ragged_boundary_on_gfx942",
            _T_STANDIN + "test_every_observation_passes_and_is_explained[stand-in]",
        ),
    ),
    _spec(
        "rocm-flat-gather-threshold-shifted",
        _ROCM,
        'FLAT_GATHER = ThresholdTable("flat_gather", {"gfx942": 16, "gfx950": 8}, "_AITER_FLAT_GATHER_GATED_Q_LEN; rule 5")\n',
        'FLAT_GATHER = ThresholdTable("flat_gather", {"gfx942": 17, "gfx950": 8}, "_AITER_FLAT_GATHER_GATED_Q_LEN; rule 5")\n',
        "gfx942's paged threshold off by one (17): q = 17 expected on fa2",
        (_T_ROCM + "test_paged_flat_gather_boundary[gfx942-16]",),
    ),
    _spec(
        "rocm-paged-gate-reads-ragged-table",
        _ROCM,
        '        gate=LengthGate("flat_gather", _sel_max_q_len),\n',
        '        gate=LengthGate("ragged", _sel_max_q_len),\n',
        "the paged short-query gate reads the ragged table: gfx950 paged is never gated",
        (_T_ROCM + "test_paged_flat_gather_boundary[gfx950-8]",),
    ),
    _spec(
        "rocm-explicit-none-deleted",
        _ROCM,
        'RAGGED = ThresholdTable("ragged", {"gfx942": 16, "gfx950": None}, "_AITER_RAGGED_GATED_Q_LEN; rule 6")\n',
        'RAGGED = ThresholdTable("ragged", {"gfx942": 16}, "_AITER_RAGGED_GATED_Q_LEN; rule 6")\n',
        "gfx950's explicit ragged None (a measured 'never') deleted, as if it were a gap",
        (_T_ROCM + "test_gfx950_ragged_row_is_present_not_merely_absent",),
        at_import=True,
    ),
    _spec(
        "cuda-fa3-row-disarmed",
        _CUDA,
        '    {"sm80": False, "sm90": True, "sm100": False, "sm120": False},\n',
        '    {"sm80": False, "sm90": False, "sm100": False, "sm120": False},\n',
        "sm90's fa3 row disarmed: the spec expects fa2 where the library picks fa3",
        (
            _T_CUDA + "test_lifecycle_matches_the_library_on_a_long_lived_wrapper[0.7.2.post1-paged sticky]",
            _T_CUDA + "test_lifecycle_matches_the_library_on_a_long_lived_wrapper[0.7.4-paged sticky]",
        ),
    ),
    _spec(
        "cuda-explicit-fa3-redirected",
        _CUDA,
        '        "fa3",\n',
        '        "fa2",\n',
        "an explicit fa3 request expected to run fa2, as if a gate redirected it",
        (
            _T_CUDA + "test_every_observed_decision_passes_and_is_explained[0.7.2.post1]",
            _T_CUDA + "test_every_observed_decision_passes_and_is_explained[0.7.4]",
        ),
    ),
    _spec(
        "cuda-explicit-cudnn-redirected",
        _CUDA,
        ('        lambda q, c: q.requested == "cudnn",\n        "cudnn",\n'),
        ('        lambda q, c: q.requested == "cudnn",\n        "fa2",\n'),
        "an explicit cudnn request expected to run fa2, as if a gate redirected it",
        (
            _T_CUDA + "test_every_observed_decision_passes_and_is_explained[0.7.2.post1]",
            _T_CUDA + "test_every_observed_decision_passes_and_is_explained[0.7.4]",
        ),
    ),
    _spec(
        "cuda-cutlass-capacity-shifted",
        _CUDA,
        "CUTLASS_WORK_CAPACITY = 131072  # prefill.py:2427, :2658 _CUTLASS_PLAN_WORK_CAPACITY\n",
        "CUTLASS_WORK_CAPACITY = 131136  # prefill.py:2427, :2658 _CUTLASS_PLAN_WORK_CAPACITY\n",
        "CUTLASS's ragged work capacity shifted past the largest shape the library refuses",
        (_T_CUDA + "test_ragged_agrees_with_the_library_upgrades[sm100]",),
        needs="cuda",
    ),
    _spec(
        "cuda-074-short-query-threshold-shifted",
        _CUDA,
        "PAGED_FA2_MAX_Q_ROWS = 64\n",
        "PAGED_FA2_MAX_Q_ROWS = 65\n",
        "0.7.4's paged short-query demotion off by one: a 65-row batch expected on fa2",
        (_T_CUDA + "test_every_observed_decision_passes_and_is_explained[0.7.4]",),
    ),
    _spec(
        "cuda-074-fp8-query-demoted",
        _CUDA,
        "        and not _selector_picks_fa2(q, c)\n        and q.q_dtype not in FP8\n",
        "        and not _selector_picks_fa2(q, c)\n",
        "0.7.4's demotion read as reaching an fp8 query, which the library leaves on fa3",
        (_T_CUDA + "test_every_observed_decision_passes_and_is_explained[0.7.4]",),
    ),
    _spec(
        "cuda-074-paged-sticky",
        _CUDA,
        '        sticky_apis=frozenset({"decode"}),\n',
        '        sticky_apis=frozenset({"paged", "decode"}),\n',
        "0.7.4's paged auto read as 0.7.2.post1's, resolved once per wrapper",
        (_T_CUDA + "test_lifecycle_matches_the_library_on_a_long_lived_wrapper[0.7.4-paged sticky]",),
    ),
    _spec(
        "cuda-074-paged-graph-not-held",
        _CUDA,
        '        graph_held_apis=frozenset({"paged"}),\n',
        "        graph_held_apis=frozenset(),\n",
        "0.7.4's paged graph wrapper read as re-resolving like an eager one",
        (
            _T_CUDA + "test_lifecycle_matches_the_library_on_a_long_lived_wrapper[0.7.4-paged graph held on fa2]",
            _T_CUDA + "test_lifecycle_matches_the_library_on_a_long_lived_wrapper[0.7.4-paged graph held on fa3]",
        ),
    ),
    _spec(
        "cuda-074-held-wrapper-refuses-nothing",
        _CUDA,
        '        held_rules=frozenset({"paged_graph_held_fa3_refused", "paged_graph_held_fa2_fp8_query"}),\n',
        "        held_rules=frozenset(),\n",
        "0.7.4's held paged graph wrapper expected to serve a plan its backend cannot (the library raises)",
        (
            _T_CUDA + "test_lifecycle_matches_the_library_on_a_long_lived_wrapper[0.7.4-paged graph held on fa2]",
            _T_CUDA + "test_lifecycle_matches_the_library_on_a_long_lived_wrapper[0.7.4-paged graph held on fa3]",
        ),
    ),
    _spec(
        "cuda-074-cudnn-pick-holds",
        _CUDA,
        '        unfixing_rules=frozenset({"paged_blackwell_cudnn", "decode_blackwell_cudnn"}),\n',
        "        unfixing_rules=frozenset(),\n",
        "a cuDNN pick read as holding the wrapper (0.7.4 holds only fa2/fa3 picks)",
        (_T_CUDA + "test_0_7_4_sm100_cudnn_picks_hold_nothing",),
    ),
    _spec(
        "cuda-074-ragged-cudnn-refuses-a-window",
        _CUDA,
        "    return _cudnn_leg(q, c) and not gqa_with_empty_rows\n",
        "    return _cudnn_leg(q, c) and q.window_left < 0 and not gqa_with_empty_rows\n",
        "0.7.4's ragged cudnn leg read as 0.7.2.post1's, refusing a window",
        (_T_CUDA + "test_ragged_agrees_with_the_library_upgrades[sm100]",),
        needs="cuda",
    ),
    _spec(
        "cuda-074-paged-cudnn-any-group",
        _CUDA,
        "PAGED_CUDNN_GROUPS = frozenset({1, 2, 4, 8, 16})\n",
        "PAGED_CUDNN_GROUPS = frozenset({1, 2, 3, 4, 8, 16})\n",
        "0.7.4's paged cuDNN pick read as taking a GQA group of 3",
        (_T_CUDA + "test_paged_blackwell_cudnn_agrees_with_the_library[sm100]",),
        needs="cuda",
    ),
    _spec(
        "cuda-074-decode-cudnn-band-widened",
        _CUDA,
        "DECODE_CUDNN_UNITS = (96, 256)\n",
        "DECODE_CUDNN_UNITS = (64, 256)\n",
        "0.7.4's decode cuDNN band read from its replay-hint floor (64 units), which eager plans never get",
        (_T_CUDA + "test_decode_cudnn_auto_agrees_with_the_library_at_one_query_row[sm100]",),
        needs="cuda",
    ),
    _spec(
        "cuda-version-prefix-picks-rows",
        "routing/specs/__init__.py",
        "        return VERSIONED[library].get(version) if version is not None else None\n",
        "        return next((s for v, s in VERSIONED[library].items() if str(version).startswith(v)), None)\n",
        "a version picks the rows of a measured version it begins with (a patch or local build judged by them)",
        (_T_CUDA + "test_a_version_picks_its_own_rows_and_one_without_rows_is_unmodelled",),
    ),
)

TORCH_SPEC_MUTANTS: tuple[Mutant, ...] = (
    _spec(
        "torch-head-dims-row-deleted",
        _TORCH,
        (
            '        "cpu_head_dims_differ",\n'
            "        lambda q, c: q.head_dim_qk != q.head_dim_vo,\n"
            '        "math",\n'
            "        NOT_REPORTED,\n"
            '        source="sdp_utils_cpp.cpp use_flash_attention_cpp: check_head_dim_size_cpp",\n'
            "    ),\n"
            "    RouteRule(\n"
        ),
        "",
        "the row sending differing head dims to math deleted: the spec expects flash there",
        (_T_TORCH + "test_cpu_rule_agrees_with_fused_sdp_choice[fp32]",),
    ),
    _spec(
        "torch-flash-dtypes-shrunk",
        _TORCH,
        'CPU_FLASH_DTYPES = frozenset({"fp16", "bf16", "fp32", "fp64"})\n',
        'CPU_FLASH_DTYPES = frozenset({"fp16", "bf16", "fp64"})\n',
        "fp32 left out of the CPU flash dtypes: fp32 decisions fall to no row",
        (_T_TORCH + "test_every_observed_decision_passes_and_is_explained",),
    ),
    _spec(
        "torch-reason-none-not-not-reported",
        _TORCH,
        (
            "        lambda q, c: q.q_dtype in CPU_FLASH_DTYPES and q.kv_dtype == q.q_dtype,\n"
            '        "flash",\n'
            "        NOT_REPORTED,\n"
        ),
        (
            "        lambda q, c: q.q_dtype in CPU_FLASH_DTYPES and q.kv_dtype == q.q_dtype,\n"
            '        "flash",\n'
            "        None,\n"
        ),
        "the flash row claims None ('no fallback happened') where torch reports nothing",
        (_T_TORCH + "test_spec_is_registered_and_every_row_expects_not_reported",),
    ),
    # The CUDA rows (torch 2.11.0+cu130 on sm90, cuDNN 9.19), killed on a CPU by the H200 records and the
    # precedence tests.
    _spec(
        "torch-cuda-cudnn-takes-kv-len-1",
        _TORCH,
        "        and kv != 1\n",
        "",
        "cuDNN's kv_len != 1 check left out: single-key requests expected on cudnn where torch runs flash",
        (
            _T_TORCH + "test_cuda_an_unmasked_16bit_request_goes_to_flash_only_where_cudnn_refuses",
            _T_TORCH + "test_a_batch_is_the_sorted_join_of_its_requests_rows",
        ),
    ),
    _spec(
        "torch-cuda-flash-before-cudnn",
        _TORCH,
        "        _cuda(_cudnn_takes),\n",
        "        _cuda(lambda q, c: _cudnn_takes(q, c) and not _flash_takes(q, masked=_masked(q))),\n",
        "flash ranked above cudnn (the order without the cuDNN > 9.15 preference on sm90)",
        (_T_TORCH + "test_cuda_an_unmasked_16bit_request_goes_to_flash_only_where_cudnn_refuses",),
    ),
    _spec(
        "torch-cuda-cudnn-refuses-masks",
        _TORCH,
        "        q.q_dtype in CUDA_SIXTEEN_BIT\n",
        ("        not _masked(q)\n        and q.q_dtype in CUDA_SIXTEEN_BIT\n"),
        "cudnn read as refusing an attn_mask: masked 16-bit requests expected on efficient or math",
        (
            _T_TORCH + "test_cuda_a_masked_16bit_request_goes_to_cudnn_not_efficient",
            _T_TORCH + "test_the_cuda_rows_explain_every_recorded_sm90_auto_record_and_are_all_reached",
        ),
    ),
    _spec(
        "torch-cuda-efficient-takes-gqa",
        _TORCH,
        "    return q.head_dim_qk % m == 0 and q.head_dim_vo % m == 0 and not _gqa(q)\n",
        "    return q.head_dim_qk % m == 0 and q.head_dim_vo % m == 0\n",
        "efficient read as taking GQA (newer upstream text): GQA requests cuDNN and flash refuse expected on "
        "efficient, not math",
        (_T_TORCH + "test_cuda_head_dims_differ_go_to_math_only_where_cudnn_and_efficient_refuse",),
    ),
    _spec(
        "torch-cuda-cudnn-head-dim-128",
        _TORCH,
        '    {"sm90": 256},\n',
        '    {"sm90": 128},\n',
        "cuDNN's sm90 head-dim limit read as 128 (cuDNN < 9.10): d192/128 and d256 expected off cudnn",
        (
            _T_TORCH + "test_cuda_head_dims_differ_go_to_math_only_where_cudnn_and_efficient_refuse",
            _T_TORCH + "test_the_cuda_rows_explain_every_recorded_sm90_auto_record_and_are_all_reached",
        ),
    ),
    _spec(
        "torch-cuda-zero-length-as-empty",
        _TORCH,
        ('        _cuda(lambda q, c: 0 in _request(q)),\n        "math",\n'),
        ("        _cuda(lambda q, c: 0 in _request(q)),\n        EMPTY,\n"),
        "zero-length CUDA requests expected to run no backend (torch 2.13's shortcut): 2.11 routes them to math",
        (
            _T_TORCH + "test_cuda_zero_length_requests_go_to_math_and_a_batch_of_none_is_empty",
            _T_TORCH + "test_the_cuda_rows_explain_every_recorded_sm90_auto_record_and_are_all_reached",
            _T_BATCHED_SPEC + "test_the_recorded_h200_padded_calls_meet_the_padded_rows_no_standard_run_reached",
        ),
    ),
    _spec(
        "torch-cuda-lower-right-read-as-is-causal",
        _TORCH,
        "    return q.causal and not q.custom_mask and q.window_left < 0 and qo != kv\n",
        "    return False\n",
        "causal with qo != kv read as SDPA's is_causal: the lower-right dispatch's flash and efficient never expected",
        (
            _T_TORCH + "test_cuda_causal_with_qo_neq_kv_follows_the_lower_right_dispatch",
            _T_BATCHED_SPEC + "test_the_recorded_h200_padded_calls_meet_the_padded_rows_no_standard_run_reached",
        ),
    ),
    _spec(
        "torch-cuda-rows-any-arch",
        _TORCH,
        '    return lambda q, c: q.device != "cpu" and bool(c.table("cuda_rows")) and p(q, c)\n',
        '    return lambda q, c: q.device != "cpu" and p(q, c)\n',
        "the CUDA rows answer any arch: an sm100 decision is expected from sm90's rows, not a gap",
        (_T_TORCH + "test_cuda_arch_without_rows_is_a_named_gap_and_its_decisions_are_unexplained",),
    ),
    _spec(
        "torch-cuda-batch-read-by-its-first-request",
        _TORCH,
        "    if q.batch_size != 1:\n",
        "    if q.batch_size < 1:\n",
        "a CUDA query of several requests answered by its first request, not refused",
        (_T_TORCH + "test_a_cuda_query_of_several_requests_is_refused_not_answered_by_its_maxima",),
    ),
    _spec(
        "torch-cuda-rows-read-on-cpu",
        _TORCH,
        '    return lambda q, c: q.device != "cpu" and bool(c.table("cuda_rows")) and p(q, c)\n',
        '    return lambda q, c: bool(c.table("cuda_rows")) and p(q, c)\n',
        "the CUDA rows not kept off the CPU: every CPU query reads cuda_rows and is a gap",
        (_T_TORCH + "test_only_the_cuda_rows_are_unreached_on_cpu",),
    ),
    # The batched backends' rows (tests/routing/test_torch_batched_spec.py).
    _spec(
        "torch-padded-cpu-flash-says-math",
        _TORCH,
        '        "padded_cpu_flash",\n'
        '        lambda q, c: q.requested == PADDED_AUTO and q.device == "cpu" and q.q_dtype in CPU_FLASH_DTYPES,\n'
        '        "flash",\n',
        '        "padded_cpu_flash",\n'
        '        lambda q, c: q.requested == PADDED_AUTO and q.device == "cpu" and q.q_dtype in CPU_FLASH_DTYPES,\n'
        '        "math",\n',
        "the padded call on the CPU expected on math: SDPA's own choice (flash, mask taken) contradicts it",
        (
            _T_BATCHED_SPEC + "test_every_batched_observation_passes_and_is_explained_by_a_row_of_its_backend",
            _T_BATCHED_SPEC + "test_the_batched_rows_a_cpu_leaves_unreached_are_exactly_the_cuda_ones",
        ),
    ),
    _spec(
        "torch-padded-cuda-padding-unmasked",
        _TORCH,
        "    masked = q.custom_mask or q.window_left >= 0 or len(set(zip(q.qo_lens, q.kv_lens))) > 1\n",
        "    masked = q.custom_mask or q.window_left >= 0\n",
        "the padded call read without its padding mask on CUDA: a padded batch expected on flash",
        (_T_BATCHED_SPEC + "test_cuda_padded_auto_reads_the_padded_call_through_the_cuda_rows",),
    ),
    _spec(
        "torch-nested-cuda-rows-every-arch",
        _TORCH,
        '        q.requested == NESTED_AUTO and q.device != "cpu" and bool(c.table("nested_cuda_rows")) and p(q, c)\n',
        '        q.requested == NESTED_AUTO and q.device != "cpu" and p(q, c)\n',
        "jagged SDPA's CUDA rows answer on every arch instead of a named gap where they were not written",
        (_T_BATCHED_SPEC + "test_cuda_nested_auto_reads_jagged_sdpas_own_order",),
    ),
    _spec(
        "torch-forced-flex-padded-row-missing",
        _TORCH,
        '    "flex-padded",\n',
        "",
        "flex on a padded batch has no row: its calls fall to the per-request rows",
        (
            _T_BATCHED_SPEC + "test_every_forced_batched_backend_has_its_row",
            _T_BATCHED_SPEC + "test_every_batched_observation_passes_and_is_explained_by_a_row_of_its_backend",
        ),
    ),
)

check_unique(FLASHINFER_SPEC_MUTANTS + TORCH_SPEC_MUTANTS)
