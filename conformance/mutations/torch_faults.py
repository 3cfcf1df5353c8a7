"""Faulty stand-ins for torch functions: torch is the library under test of the `torch` target.

torch's kernels are compiled, so its library mutants are Python wrappers installed in a run's
process (conformance/mutations/child.py, `torch_patch`): each factory takes the original function
and returns one that makes a mistake a kernel library plausibly makes. library_mutants.py says
which function each replaces and which tests must notice.
"""

from __future__ import annotations

import math
from typing import Any, Callable

Fn = Callable[..., Any]


def lower_right_as_upper_left(original: Fn) -> Fn:
    """causal_lower_right(qo, kv) built as upper-left: causal aligned to the first key, not the last."""
    from torch.nn.attention.bias import causal_upper_left

    def causal_lower_right(*size: int) -> Any:
        return causal_upper_left(*size)

    return causal_lower_right


def gqa_heads_tiled(original: Fn) -> Fn:
    """SDPA's enable_gqa maps query head h to KV head h % Hkv (tiling) instead of h // group."""
    import torch
    from torch.nn.attention.bias import CausalBias

    def scaled_dot_product_attention(
        query: Any,
        key: Any,
        value: Any,
        attn_mask: Any = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: Any = None,
        enable_gqa: bool = False,
    ) -> Any:
        if isinstance(attn_mask, CausalBias):  # its dispatch calls back here with a plain mask
            return CausalBias._dispatch(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        if enable_gqa and query.shape[-3] != key.shape[-3]:
            reps = query.shape[-3] // key.shape[-3]
            key = torch.cat([key] * reps, dim=-3)
            value = torch.cat([value] * reps, dim=-3)
            enable_gqa = False
        return original(
            query,
            key,
            value,
            attn_mask=attn_mask,
            dropout_p=dropout_p,
            is_causal=is_causal,
            scale=scale,
            enable_gqa=enable_gqa,
        )

    return scaled_dot_product_attention


def flex_lse_base_2(original: Fn) -> Fn:
    """FlexAttention's LSE returned in base 2 (FlashInfer's convention) while torch documents natural log."""
    log2e = 1.0 / math.log(2.0)

    def flex_attention(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if kwargs.get("return_aux") is not None and getattr(result[1], "lse", None) is not None:
            result[1].lse.mul_(log2e)
        elif kwargs.get("return_lse"):
            result[1].mul_(log2e)
        return result

    return flex_attention


def fused_choice_always_math(original: Fn) -> Fn:
    """SDPA's own choice reports math whatever it would run (a selector that lies about itself)."""
    from torch.nn.attention import SDPBackend

    def _fused_sdp_choice(*args: Any, **kwargs: Any) -> int:
        original(*args, **kwargs)
        return int(SDPBackend.MATH.value)

    return _fused_sdp_choice
