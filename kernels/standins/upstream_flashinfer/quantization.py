"""flashinfer.quantization of the upstream model (a CPU stand-in): packbits, segment_packbits (logged per segment)."""

from __future__ import annotations

from typing import Tuple

import torch

from kernels.standins import _kernels as K
from kernels.standins.upstream_flashinfer._state import log as _log

__attncheck_standin__ = "flashinfer-upstream"


def packbits(x: torch.Tensor, bitorder: str = "big") -> torch.Tensor:
    _log("quantization", "packbits", None, (x,), {"bitorder": bitorder})
    return K.pack_bits(x, bitorder)


def segment_packbits(x: torch.Tensor, indptr: torch.Tensor, bitorder: str = "big") -> Tuple[torch.Tensor, torch.Tensor]:
    _log("quantization", "segment_packbits", None, (x, indptr), {"bitorder": bitorder})
    ip = indptr.cpu().tolist()
    for i in range(len(ip) - 1):  # logged per segment, as the packbits calls of the original were
        _log("quantization", "packbits", None, (x[ip[i] : ip[i + 1]],), {"bitorder": bitorder})
    return K.segment_pack_bits(x, indptr, bitorder)
