"""Library mutants: the library under test broken on purpose, per target.

* The ROCm fork of FlashInfer, through its CPU stand-in (kernels/standins/rocm_flashinfer/): the
  fork's own A/B list for its ragged short-query gate (AMD-Ecosystem/flashinfer #373): disarm
  the table row, drop the `ragged_q_len` argument, remove the late re-check.
* FlashInfer (flashinfer-python 0.7.2.post1) as installed on a CUDA runner: the module is served
  from edited text inside the run's process. Each edit is one the library could plausibly make:
  the custom mask ignored when `auto` chooses, a paged mask buffer not cleared by an unmasked
  plan, ragged `auto` resolved once per wrapper instead of every plan. On a CPU they are listed
  and skipped, with the reason.
* torch, through faulty wrappers of its functions (torch_faults.py): causal_lower_right built
  upper-left, GQA heads tiled, flex's LSE in base 2, SDPA's own choice misreported.
"""

from __future__ import annotations

from conformance.mutations.kinds import Mutant, PackageMutant, TorchPatch, check_unique

_CAPS = "kernels/standins/rocm_flashinfer/rocm/arch_caps.py"
_PREFILL = "kernels/standins/rocm_flashinfer/rocm/prefill.py"
_T_STANDIN = "tests/kernels/test_rocm_standin.py::"
_T_SPEC_STANDIN = "tests/routing/test_rocm_spec_vs_standin.py::"
_T_TORCH = "tests/kernels/test_torch_target.py::"
_T_TORCH_SPEC = "tests/routing/test_torch_spec.py::"
_T_FI_LIB = "tests/kernels/test_flashinfer_library.py::"
_STANDIN_ROUTES = _T_SPEC_STANDIN + "test_every_observation_passes_and_is_explained[stand-in]"


def _matches(backend: str, name: str) -> str:
    return f"{_T_TORCH}test_backend_matches_oracle_or_declines_as_expected[{backend}-{name}]"


ROCM_STANDIN_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "rocm-fork-ragged-table-disarmed",
        _CAPS,
        '_AITER_RAGGED_GATED_Q_LEN: dict[str, Optional[int]] = {"gfx942": 16, "gfx950": None}\n',
        '_AITER_RAGGED_GATED_Q_LEN: dict[str, Optional[int]] = {"gfx942": None, "gfx950": None}\n',
        "#373 A/B 1: the gfx942 ragged row disarmed, so short ragged queries keep AITER",
        (_T_STANDIN + "test_arch_tables_and_pins_equal_the_documents", _STANDIN_ROUTES),
        kind="library",
    ),
    Mutant(
        "rocm-fork-ragged-q-len-dropped",
        _PREFILL,
        "                ragged_q_len=self._ragged_gate_len(),\n",
        "",
        "#373 A/B 2: the ragged wrapper stops passing ragged_q_len, so its gate never sees a length",
        (_STANDIN_ROUTES,),
        kind="library",
    ),
    Mutant(
        "rocm-fork-late-recheck-removed",
        _PREFILL,
        '        return from_auto and (self._backend == "auto" or not self._use_cuda_graph)\n',
        '        return from_auto and self._backend == "auto"\n',
        "#373 A/B 3: no late re-check, so a wrapper resolved to AITER on a long plan keeps it for a "
        "short one (long-then-short)",
        (_STANDIN_ROUTES,),
        kind="library",
    ),
    Mutant(
        "rocm-fork-graph-reresolves",
        _PREFILL,
        '        return from_auto and (self._backend == "auto" or not self._use_cuda_graph)\n',
        "        return from_auto\n",
        "#367/#373: the correct stand-in re-selects on a captured wrapper's re-plan, as the graph_repromote "
        "fault does: the control the faults are measured against is itself faulty",
        (
            "tests/kernels/test_standin_faults.py::test_the_correct_standin_follows_the_spec_lifecycle_on_the_seed_"
            "sequences[True]",
            "tests/explore/test_scenario_machines.py::test_the_correct_standin_holds[standin-gfx942-graph]",
        ),
        kind="library",
    ),
)

FLASHINFER_PACKAGE_MUTANTS: tuple[PackageMutant, ...] = (
    PackageMutant(
        "flashinfer-mask-ignored-by-auto",
        "flashinfer",
        "prefill.py",
        '            if self._backend == "auto":\n'
        "                self._backend = determine_attention_backend(\n"
        "                    self.device,\n"
        "                    PosEncodingMode[pos_encoding_mode].value,\n"
        "                    use_fp16_qk_reduction,\n"
        "                    self._custom_mask_buf is not None,  # use_custom_mask\n",
        '            if self._backend == "auto":\n'
        "                self._backend = determine_attention_backend(\n"
        "                    self.device,\n"
        "                    PosEncodingMode[pos_encoding_mode].value,\n"
        "                    use_fp16_qk_reduction,\n"
        "                    False,  # use_custom_mask\n",
        "paged auto chooses its backend as if no custom mask were given (fa3 for a masked plan on sm90)",
        (_T_FI_LIB + "test_paged_auto_takes_fa2_for_a_custom_mask_on_sm90",),
    ),
    PackageMutant(
        "flashinfer-paged-mask-buffer-kept",
        "flashinfer",
        "prefill.py",
        "            else:\n                self._custom_mask_buf = None\n"
        "                self._mask_indptr_buf = None\n\n"
        "        self._cached_q_data_type = q_data_type\n",
        "            else:\n                pass\n\n        self._cached_q_data_type = q_data_type\n",
        "an unmasked paged plan keeps the previous plan's mask buffer, and run() applies it",
        (_T_FI_LIB + "test_paged_unmasked_plan_after_a_masked_one_runs_unmasked",),
    ),
    PackageMutant(
        "flashinfer-ragged-auto-resolved-once",
        "flashinfer",
        "prefill.py",
        '            if self._requested_backend == "auto":\n'
        "                self._backend = determine_attention_backend(\n",
        '            if self._backend == "auto":\n                self._backend = determine_attention_backend(\n',
        "ragged auto resolved once per wrapper: its first plan's backend sticks",
        (_T_FI_LIB + "test_ragged_auto_re_resolves_on_every_plan",),
    ),
)

_SDPA = "kernels/torch_sdpa.py"
_SDPA_CALL = "o = torch.nn.functional.scaled_dot_product_attention("

TORCH_PATCHES: tuple[TorchPatch, ...] = (
    TorchPatch(
        "torch-causal-lower-right-is-upper-left",
        "torch.nn.attention.bias:causal_lower_right",
        "conformance.mutations.torch_faults:lower_right_as_upper_left",
        ((_SDPA, "        return causal_lower_right(qo, kv)\n"),),
        "causal_lower_right builds an upper-left mask: causal rows align to the first key",
        (_matches("math", "ragged-mqa-fp16-causal-qo<kv"),),
    ),
    TorchPatch(
        "torch-sdpa-gqa-heads-tiled",
        "torch.nn.functional:scaled_dot_product_attention",
        "conformance.mutations.torch_faults:gqa_heads_tiled",
        ((_SDPA, _SDPA_CALL),),
        "SDPA's enable_gqa tiles KV heads (h % Hkv) instead of grouping them (h // group)",
        (_matches("math", "ragged-gqa-bf16"),),
    ),
    TorchPatch(
        "torch-flex-lse-base-2",
        "torch.nn.attention.flex_attention:flex_attention",
        "conformance.mutations.torch_faults:flex_lse_base_2",
        (("kernels/torch_flex.py", "o, aux = fn("),),
        "FlexAttention returns its LSE in base 2 while documenting the natural log",
        (_T_TORCH + "test_flex_lse_is_natural_log",),
    ),
    TorchPatch(
        "torch-sdpa-choice-misreported",
        "torch:_fused_sdp_choice",
        "conformance.mutations.torch_faults:fused_choice_always_math",
        ((_SDPA, "    choice = torch._fused_sdp_choice("),),
        "SDPA's own selector reports math whatever it runs",
        (
            _T_TORCH + "test_auto_reports_the_backend_sdpa_chose",
            _T_TORCH_SPEC + "test_cpu_rule_agrees_with_fused_sdp_choice[fp32]",
        ),
    ),
)

check_unique(ROCM_STANDIN_MUTANTS + FLASHINFER_PACKAGE_MUTANTS + TORCH_PATCHES)  # type: ignore[operator]
