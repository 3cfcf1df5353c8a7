"""flashinfer.utils of the upstream model (a CPU stand-in): dtype helpers, the fa3 checks, backend determination."""

from __future__ import annotations

from typing import Optional, Union

import torch

from kernels.standins import _kernels as K

__attncheck_standin__ = "flashinfer-upstream"
FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
LN2 = K.LN2


class MaskMode:
    NON_CAUSAL, CAUSAL, CUSTOM = K.NON_CAUSAL, K.CAUSAL, K.CUSTOM


def canonicalize_torch_dtype(dtype: Union[torch.dtype, str]) -> torch.dtype:
    if isinstance(dtype, str):
        return getattr(torch, dtype)
    return dtype


def is_float8(x: torch.Tensor) -> bool:
    return x.dtype in FP8


def is_sm90a_supported(device: torch.device) -> bool:
    return True  # the model is an sm90 device; install(sm90=False) patches this probe


def is_fa3_prefill_head_dim_supported(head_dim_qk: int, head_dim_vo: int) -> bool:
    if head_dim_qk == head_dim_vo:
        return head_dim_qk in {64, 128, 256}
    return (head_dim_qk, head_dim_vo) == (192, 128)


def is_fa3_backend_supported(
    pos_encoding_mode: int,
    use_fp16_qk_reductions: bool,
    use_custom_mask: bool,
    dtype_q: torch.dtype,
    dtype_kv: torch.dtype,
) -> bool:
    if use_custom_mask or pos_encoding_mode != 0 or use_fp16_qk_reductions:
        return False
    if dtype_kv in FP8 and dtype_q not in FP8:
        return False
    return True


def determine_attention_backend(
    device: torch.device,
    pos_encoding_mode: int,
    use_fp16_qk_reductions: bool,
    use_custom_mask: bool,
    dtype_q: torch.dtype,
    dtype_kv: torch.dtype,
    *,
    head_dim_qk: Optional[int] = None,
    head_dim_vo: Optional[int] = None,
) -> str:
    if is_sm90a_supported(device) and is_fa3_backend_supported(
        pos_encoding_mode, use_fp16_qk_reductions, use_custom_mask, dtype_q, dtype_kv
    ):
        if head_dim_qk is None or head_dim_vo is None:
            return "fa3"
        if is_fa3_prefill_head_dim_supported(head_dim_qk, head_dim_vo):
            return "fa3"
    return "fa2"


def check_shape_dtype_device(
    x: torch.Tensor, shape: tuple, dtype: torch.dtype, device: torch.device, name: str
) -> None:
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"Invalid shape of {name}: expected {tuple(shape)}, got {tuple(x.shape)}")
    if x.dtype != dtype:
        raise ValueError(f"Invalid dtype of {name}: expected {dtype}, got {x.dtype}")


def _check_cached_qkv_data_type(q: torch.Tensor, k: torch.Tensor, dtype_q: torch.dtype, dtype_kv: torch.dtype) -> None:
    if q.dtype != dtype_q:
        raise ValueError(
            f"The dtype of q {q.dtype} does not match the q_data_type {dtype_q} specified in plan function."
        )
    if k.dtype != dtype_kv:
        raise ValueError(
            f"The dtype of k {k.dtype} does not match the kv_data_type {dtype_kv} specified in plan function."
        )


def _finish_lse(lse: torch.Tensor, lse_base: str) -> torch.Tensor:
    if lse_base == "ln":
        lse.mul_(LN2)
    return lse


def get_seq_lens(indptr: torch.Tensor, last_page_len: torch.Tensor, page_size: int) -> torch.Tensor:
    return K.seq_lens(indptr, last_page_len, page_size)
