"""Stand-in for `flashinfer.quantization` of the ROCm fork: packbits / segment_packbits.

A CPU stand-in, never the library. rocm_fork.md does not describe these; they keep upstream
FlashInfer's signatures (bitorder defaults to "big"; the wrappers pack with "little"), which the
fork inherits, so the adapter's packed mask forms run against the stand-in too.
"""
from __future__ import annotations

from typing import Tuple

import torch

from kernels.standins.rocm_flashinfer import _kernels as K

__attncheck_standin__ = "flashinfer-rocm-fork"


def packbits(x: torch.Tensor, bitorder: str = "big") -> torch.Tensor:
    return K.pack_bits(x, bitorder)


def segment_packbits(x: torch.Tensor, indptr: torch.Tensor, bitorder: str = "big"
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
    return K.segment_pack_bits(x, indptr, bitorder)
