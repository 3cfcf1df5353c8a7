"""Stand-in for upstream FlashInfer's `flashinfer` package (flashinfer-python 0.7.2.post1) on a CPU.

A CPU STAND-IN, NEVER THE LIBRARY. It copies the names, signatures and the Python-side behaviour the
adapter depends on of BatchPrefillWithPagedKVCacheWrapper, BatchPrefillWithRaggedKVCacheWrapper,
BatchDecodeWithPagedKVCacheWrapper, single_prefill_with_kv_cache and packbits/segment_packbits
(module by module: utils, prefill, decode, quantization, cudnn.prefill), with the plain-torch
numerics of kernels/standins/_kernels.py run under kernels/standins/_launch.py, so graph mode
records at capture and reads buffers at replay. kernels/standins/upstream.py installs it as
`flashinfer`; the ROCm fork's stand-in (kernels/standins/rocm_flashinfer/) is layered on it.
"""

from __future__ import annotations

from kernels.standins.upstream_flashinfer import cudnn, decode, prefill, quantization, utils
from kernels.standins.upstream_flashinfer.decode import BatchDecodeWithPagedKVCacheWrapper
from kernels.standins.upstream_flashinfer.prefill import (
    BatchPrefillWithPagedKVCacheWrapper,
    BatchPrefillWithRaggedKVCacheWrapper,
    single_prefill_with_kv_cache,
)
from kernels.standins.upstream_flashinfer.quantization import packbits, segment_packbits

__attncheck_standin__ = "flashinfer-upstream"
__version__ = "0.7.2.post1+standin"

__all__ = [
    "BatchDecodeWithPagedKVCacheWrapper",
    "BatchPrefillWithPagedKVCacheWrapper",
    "BatchPrefillWithRaggedKVCacheWrapper",
    "cudnn",
    "decode",
    "packbits",
    "prefill",
    "quantization",
    "segment_packbits",
    "single_prefill_with_kv_cache",
    "utils",
]
