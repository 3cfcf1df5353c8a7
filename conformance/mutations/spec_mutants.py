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
_T_ROCM = "tests/routing/test_rocm_spec.py::"
_T_STANDIN = "tests/routing/test_rocm_spec_vs_standin.py::"
_T_CUDA = "tests/routing/test_flashinfer_cuda_spec.py::"
_T_TORCH = "tests/routing/test_torch_spec.py::"


def _spec(name: str, path: str, old: str, new: str, description: str, kills: tuple[str, ...], **kw: object
          ) -> Mutant:
    return Mutant(name, path, old, new, description, kills, kind="routing-spec", **kw)  # type: ignore[arg-type]


FLASHINFER_SPEC_MUTANTS: tuple[Mutant, ...] = (
    _spec("rocm-ragged-row-disarmed", _ROCM,
          'RAGGED = ThresholdTable("ragged", {"gfx942": 16, "gfx950": None},\n',
          'RAGGED = ThresholdTable("ragged", {"gfx942": None, "gfx950": None},\n',
          "gfx942's ragged short-query row disarmed: the spec stops expecting fa2 at q <= 16",
          (_T_ROCM + "test_ragged_boundary_on_gfx942",
           _T_STANDIN + "test_every_observation_passes_and_is_explained[stand-in]")),
    _spec("rocm-flat-gather-threshold-shifted", _ROCM,
          'FLAT_GATHER = ThresholdTable("flat_gather", {"gfx942": 16, "gfx950": 8},\n',
          'FLAT_GATHER = ThresholdTable("flat_gather", {"gfx942": 17, "gfx950": 8},\n',
          "gfx942's paged threshold off by one (17): q = 17 expected on fa2",
          (_T_ROCM + "test_paged_flat_gather_boundary[gfx942-16]",)),
    _spec("rocm-paged-gate-reads-ragged-table", _ROCM,
          'gate=LengthGate("flat_gather", _sel_max_q_len)', 'gate=LengthGate("ragged", _sel_max_q_len)',
          "the paged short-query gate reads the ragged table: gfx950 paged is never gated",
          (_T_ROCM + "test_paged_flat_gather_boundary[gfx950-8]",)),
    _spec("rocm-explicit-none-deleted", _ROCM,
          '{"gfx942": 16, "gfx950": None},\n', '{"gfx942": 16},\n',
          "gfx950's explicit ragged None (a measured 'never') deleted, as if it were a gap",
          (_T_ROCM + "test_gfx950_ragged_row_is_present_not_merely_absent",), at_import=True),
    _spec("cuda-fa3-row-disarmed", _CUDA,
          'FA3_CAPABLE = ThresholdTable("fa3_capable", {"sm80": False, "sm90": True, "sm100": False, "sm120": False},\n',
          'FA3_CAPABLE = ThresholdTable("fa3_capable", {"sm80": False, "sm90": False, "sm100": False, "sm120": False},\n',
          "sm90's fa3 row disarmed: the spec expects fa2 where the library picks fa3",
          (_T_CUDA + "test_lifecycle_matches_the_library_on_a_long_lived_wrapper[paged sticky]",)),
    _spec("cuda-explicit-fa3-redirected", _CUDA,
          '    RouteRule("explicit_fa3", lambda q, c: q.requested == "fa3", "fa3", NOT_REPORTED,\n',
          '    RouteRule("explicit_fa3", lambda q, c: q.requested == "fa3", "fa2", NOT_REPORTED,\n',
          "an explicit fa3 request expected to run fa2, as if a gate redirected it",
          (_T_CUDA + "test_every_observed_decision_passes_and_is_explained",)),
    _spec("cuda-explicit-cudnn-redirected", _CUDA,
          '    RouteRule("explicit_cudnn", lambda q, c: q.requested == "cudnn", "cudnn", NOT_REPORTED,\n',
          '    RouteRule("explicit_cudnn", lambda q, c: q.requested == "cudnn", "fa2", NOT_REPORTED,\n',
          "an explicit cudnn request expected to run fa2, as if a gate redirected it",
          (_T_CUDA + "test_every_observed_decision_passes_and_is_explained",)),
    _spec("cuda-cutlass-capacity-shifted", _CUDA,
          "CUTLASS_WORK_CAPACITY = 131072  #", "CUTLASS_WORK_CAPACITY = 131136  #",
          "CUTLASS's ragged work capacity shifted past the largest shape the library refuses",
          (_T_CUDA + "test_ragged_agrees_with_the_library_upgrades[sm100]",), needs="cuda"),
)

TORCH_SPEC_MUTANTS: tuple[Mutant, ...] = (
    _spec("torch-head-dims-row-deleted", _TORCH,
          '    RouteRule("cpu_head_dims_differ", lambda q, c: q.head_dim_qk != q.head_dim_vo,\n'
          '              "math", NOT_REPORTED,\n'
          '              source="sdp_utils_cpp.cpp use_flash_attention_cpp: check_head_dim_size_cpp"),\n', "",
          "the row sending differing head dims to math deleted: the spec expects flash there",
          (_T_TORCH + "test_cpu_rule_agrees_with_fused_sdp_choice[fp32]",)),
    _spec("torch-flash-dtypes-shrunk", _TORCH,
          'CPU_FLASH_DTYPES = frozenset({"fp16", "bf16", "fp32", "fp64"})\n',
          'CPU_FLASH_DTYPES = frozenset({"fp16", "bf16", "fp64"})\n',
          "fp32 left out of the CPU flash dtypes: fp32 decisions fall to no row",
          (_T_TORCH + "test_every_observed_decision_passes_and_is_explained",)),
    _spec("torch-reason-none-not-not-reported", _TORCH,
          '              "flash", NOT_REPORTED,\n', '              "flash", None,\n',
          "the flash row claims None ('no fallback happened') where torch reports nothing",
          (_T_TORCH + "test_spec_is_registered_and_every_row_expects_not_reported",)),
)

check_unique(FLASHINFER_SPEC_MUTANTS + TORCH_SPEC_MUTANTS)
