"""Stand-in for `flashinfer.quantization` of the ROCm fork: packbits / segment_packbits.

A CPU stand-in, never the library. rocm_fork.md does not describe these; they keep upstream
FlashInfer's signatures (bitorder defaults to "big"; the wrappers pack with "little"), which the
fork inherits: they are the upstream model's (kernels/standins/upstream_flashinfer/quantization.py), so the
adapter's packed mask forms run against the stand-in too.
"""

from __future__ import annotations

from kernels.standins.upstream_flashinfer.quantization import packbits, segment_packbits

__attncheck_standin__ = "flashinfer-rocm-fork"

__all__ = ["packbits", "segment_packbits"]
