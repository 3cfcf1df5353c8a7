#!/usr/bin/env python3
"""torch: where compiled flex_attention on CUDA has no kernel for a valid call, swept against torch's own rule.

Plain torch, nothing of attncheck. Read in torch/_inductor/kernel/flex/flex_decoding.py: a call with fewer
than 128 query rows takes the decoding template, which packs the GQA group's heads into the M tile,
BLOCK_M = next_power_of_2(q_len * group), and skips every config when SPARSE_Q_BLOCK_SIZE (128) % BLOCK_M != 0,
so q_len * group > 128 leaves no choice (NoValidChoicesError). Part A sweeps q_len * group across 128 for
groups 1, 2, 4, 8 (kernel_options FORCE_USE_FLEX_ATTENTION, the main template, as the control of a raise).
Part B: the main template (q_len >= 128) in fp32 for head dims 192/128 and others, where the H200 run of
2026-12-04 raised "No valid triton configs ... out of resource" (shared memory). Exit 1 when a compiled call
raises (what the sweep is for), 2 without CUDA. A or B runs that part alone (the ledger's two entries).

    python docs/evidence/probe_torch_flex_decoding_block_m.py [A|B]
"""

from __future__ import annotations

import sys
import time

import torch
import torch._dynamo
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

KV_LEN = 136
# (part, dtype, heads q/kv, head dim qk/vo, q_len)
A = [("A", torch.float16, 8, 8 // g, 64, 64, n) for g, ns in ((1, (127,)), (2, (64, 65)), (4, (32, 33)),
                                                           (8, (16, 17))) for n in ns]
B = [
    ("B", torch.float32, 8, 8, 192, 128, 128),
    ("B", torch.float32, 8, 8, 192, 128, 258),
    ("B", torch.float32, 8, 2, 192, 128, 191),
    ("B", torch.bfloat16, 8, 8, 192, 128, 128),
    ("B", torch.float32, 8, 8, 128, 128, 128),
    ("B", torch.float32, 8, 8, 256, 256, 128),
]


def outcome(fn) -> str:
    try:
        fn()
        torch.cuda.synchronize()
        return "ok"
    except Exception as e:  # noqa: BLE001 - every outcome is reported
        text = str(e)
        for key in ("NoValidChoicesError", "out of resource"):
            if key in text:
                return f"{type(e).__name__}: {key}" + (
                    " " + text[text.index("Required"):].split("\n")[0][:40] if "Required" in text else "")
        return type(e).__name__ + ": " + text.strip().splitlines()[0][:80]


def main(only: str = "") -> int:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'part':4} {'dtype':9} {'heads':6} {'dims':8} {'q':>4} {'q*group':>7}  {'compiled':56} {'main template':14} s")
    raised = []
    g = torch.Generator(device="cuda").manual_seed(0)
    for part, dtype, hq, hkv, dqk, dvo, q_len in {"A": A, "B": B}.get(only, A + B):
        q = torch.randn(1, hq, q_len, dqk, device="cuda", dtype=dtype, generator=g)
        k = torch.randn(1, hkv, KV_LEN, dqk, device="cuda", dtype=dtype, generator=g)
        v = torch.randn(1, hkv, KV_LEN, dvo, device="cuda", dtype=dtype, generator=g)
        bm = create_block_mask(lambda b, h, qi, ki: ki <= qi + (KV_LEN - q_len), None, None, q_len, KV_LEN)

        def compiled(**kw):
            torch._dynamo.reset()
            return torch.compile(flex_attention, dynamic=False)(
                q, k, v, block_mask=bm, enable_gqa=hq != hkv, **kw
            )

        t0 = time.perf_counter()
        c = outcome(compiled)
        m = "-" if c == "ok" else outcome(lambda: compiled(kernel_options={"FORCE_USE_FLEX_ATTENTION": True}))
        dims, prod = f"{dqk}/{dvo}", q_len * (hq // hkv)
        print(f"{part:4} {str(dtype)[6:]:9} {hq}/{hkv:<4} {dims:8} {q_len:4} {prod:7}  {c:56} {m:14} "
              f"{time.perf_counter() - t0:.0f}", flush=True)
        if c != "ok":
            raised.append(f"{str(dtype)[6:]} {hq}/{hkv} {dims} q {q_len}")
    print(f"RAISED: {'; '.join(raised)}" if raised else "every compiled call ran")
    return 1 if raised else 0


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["A"], ["B"]):
        print(f"usage: {sys.argv[0]} [A|B]", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
