"""Stand-in for the ROCm FlashInfer fork's top-level `flashinfer` package (AMD-Ecosystem/flashinfer).

A CPU STAND-IN, NEVER THE LIBRARY, built from tests/data/sources/rocm_fork.md (MAIN @10f72434;
decode @05005763). It reproduces the fork's documented API surface -- the names of section 1,
their parameters, `backend="aiter"`, `backend_fallback_reason`, `scale_q/scale_k/scale_v`, the
routing chain of section 2 with its exact reason texts, the per-architecture tables of section 3,
the wrapper lifecycle and errors of section 4 -- with plain-torch numerics for every backend. Its
results are never conformance results: every module carries `__attncheck_standin__`, and the
harness labels whatever ran against it (kernels/standins/__init__.py).

`kernels.standins.rocm_fork.install()` puts this package into sys.modules as `flashinfer` (with
`flashinfer.rocm.*` and `flashinfer.quantization`) and patches the architecture and AITER probes
the way the fork's own GPU-free tests do; importing this package alone changes nothing.
"""

from __future__ import annotations

from kernels.standins.rocm_flashinfer import quantization, rocm
from kernels.standins.rocm_flashinfer.quantization import packbits, segment_packbits
from kernels.standins.rocm_flashinfer.rocm.decode import (
    BatchDecodeWithPagedKVCacheWrapper,
    CUDAGraphBatchDecodeWithPagedKVCacheWrapper,
)
from kernels.standins.rocm_flashinfer.rocm.prefill import (
    BatchPrefillWithPagedKVCacheWrapper,
    BatchPrefillWithRaggedKVCacheWrapper,
    single_prefill_with_kv_cache,
)

__attncheck_standin__ = "flashinfer-rocm-fork"
__version__ = "0.0.0+standin.rocm-fork"

__all__ = [
    "BatchDecodeWithPagedKVCacheWrapper",
    "BatchPrefillWithPagedKVCacheWrapper",
    "BatchPrefillWithRaggedKVCacheWrapper",
    "CUDAGraphBatchDecodeWithPagedKVCacheWrapper",
    "packbits",
    "quantization",
    "rocm",
    "segment_packbits",
    "single_prefill_with_kv_cache",
]
