#!/usr/bin/env python3
"""torch: compiled flex_attention on CUDA raises NoValidChoicesError for valid inputs that eager runs.

Plain torch, nothing of attncheck. One flex_attention call as attncheck's flex backend makes it (batch 1, GQA,
a block mask from a mask_mod, static shapes) is compiled afresh for each query length and head layout of a
small sweep; each is also run eagerly and with kernel_options of 32x32 tiles (the controls: the library
running the same call). Exit 1 when a compiled call raises where eager runs (the defect shows), 0 when
none does, 2 without CUDA.

    python docs/evidence/repro_torch_flex_compiled_no_valid_choices.py
"""

from __future__ import annotations

import sys

import torch
import torch._dynamo
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

# (dtype, heads q/kv, head dim qk/vo): the layouts of the three cases that raised (2026-12-03 H200), and two
# that did not, for contrast
LAYOUTS = [
    (torch.bfloat16, 8, 2, 64, 64),
    (torch.float32, 8, 1, 192, 128),
    (torch.bfloat16, 8, 2, 128, 128),
    (torch.float32, 8, 1, 256, 256),
]
Q_LENS = (31, 64, 65, 98, 127, 128, 129)
KV_LEN = 136


def outcome(fn) -> str:
    try:
        fn()
        return "ok"
    except Exception as e:  # noqa: BLE001 - every outcome is reported
        return type(e).__name__ + (": NoValidChoicesError" if "NoValidChoicesError" in str(e) else "")


def main() -> int:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'dtype':9} {'heads':6} {'dims':8} {'q':>4} {'kv':>4}  {'compiled':30} {'eager':6} 32x32")
    shown = []
    g = torch.Generator(device="cuda").manual_seed(0)
    for dtype, hq, hkv, dqk, dvo in LAYOUTS:
        for q_len in Q_LENS:
            q = torch.randn(1, hq, q_len, dqk, device="cuda", dtype=dtype, generator=g)
            k = torch.randn(1, hkv, KV_LEN, dqk, device="cuda", dtype=dtype, generator=g)
            v = torch.randn(1, hkv, KV_LEN, dvo, device="cuda", dtype=dtype, generator=g)
            bm = create_block_mask(lambda b, h, qi, ki: ki <= qi + (KV_LEN - q_len), None, None, q_len, KV_LEN)

            def compiled(**kw):
                torch._dynamo.reset()
                return torch.compile(flex_attention, dynamic=False)(q, k, v, block_mask=bm, enable_gqa=True, **kw)

            c = outcome(compiled)
            e = outcome(lambda: flex_attention(q, k, v, block_mask=bm, enable_gqa=True))
            t = outcome(lambda: compiled(kernel_options={"BLOCK_M": 32, "BLOCK_N": 32}))
            dims = f"{dqk}/{dvo}"
            print(f"{str(dtype)[6:]:9} {hq}/{hkv:<4} {dims:8} {q_len:4} {KV_LEN:4}  {c:30} {e:6} {t}", flush=True)
            if c != "ok" and e == "ok":
                shown.append(f"{str(dtype)[6:]} {dims} q {q_len}")
    if shown:
        print(f"DEFECT SHOWN: compiled flex_attention raised where eager ran: {'; '.join(shown)}")
        return 1
    print("not shown: every compiled call ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
