#!/usr/bin/env python3
"""torch: how long compiled flex_attention on CUDA takes to compile fp32 calls of large head dims, few query rows.

Plain torch, nothing of attncheck. Seen 2026-12-04 on the H200 (attncheck's torch standard matrix): compiled
flex calls in fp32 at head dims 192 and 256 with fewer than 128 query rows (torch's decoding template) held a
run for over 5 minutes each, and with --case-timeout 150 five were killed. Here each call is compiled afresh
in its own child process, the children side by side, timed, with a limit; bf16 of the same shape is the
control (the same template). A line per call: seconds to the first result, or that the limit passed.

    python docs/evidence/probe_torch_flex_fp32_large_head_compile.py [SECONDS]   # per call, default 240
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

KV_LEN = 136
# (dtype, heads q/kv, head dim qk/vo, q rows, soft cap)
CALLS = [
    ("bfloat16", 8, 8, 256, 256, 17, True),
    ("float32", 8, 8, 256, 256, 17, True),
    ("float32", 8, 8, 256, 256, 17, False),
    ("float32", 8, 8, 192, 128, 17, False),
]


def child(dtype: str, hq: int, hkv: int, dqk: int, dvo: int, q_len: int, cap: bool) -> None:
    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(1, hq, q_len, dqk, device="cuda", dtype=dt, generator=g)
    k = torch.randn(1, hkv, KV_LEN, dqk, device="cuda", dtype=dt, generator=g)
    v = torch.randn(1, hkv, KV_LEN, dvo, device="cuda", dtype=dt, generator=g)
    bm = create_block_mask(lambda b, h, qi, ki: ki <= qi + (KV_LEN - q_len), None, None, q_len, KV_LEN)
    score = (lambda s, b, h, qi, ki: 50.0 * torch.tanh(s / 50.0)) if cap else None
    out = torch.compile(flex_attention, dynamic=False)(q, k, v, score_mod=score, block_mask=bm, enable_gqa=hq != hkv)
    torch.cuda.synchronize()
    ref = flex_attention(q.float(), k.float(), v.float(), score_mod=score, block_mask=bm, enable_gqa=hq != hkv)
    print(json.dumps({"max_err": round((out.float() - ref).abs().max().item(), 5)}))


def main(seconds: float) -> int:
    import torch

    if not torch.cuda.is_available():
        print("needs CUDA")
        return 2
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}; limit {seconds:g} s a call, the calls "
          "side by side", flush=True)
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, __file__, "--child", json.dumps(c)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for c in CALLS]
    done: dict[int, float] = {}
    while len(done) < len(procs) and time.perf_counter() - t0 < seconds:
        for i, p in enumerate(procs):
            if i not in done and p.poll() is not None:
                done[i] = time.perf_counter() - t0
        time.sleep(1)
    slow = []
    for i, (call, p) in enumerate(zip(CALLS, procs)):
        dtype, hq, hkv, dqk, dvo, q_len, cap = call
        what = f"{dtype:8} {hq}/{hkv} {dqk}/{dvo} q {q_len} kv {KV_LEN}{' soft cap' if cap else ''}"
        if i in done:
            out, err = p.communicate()
            tail = (out.strip().splitlines() or err.strip().splitlines() or ["?"])[-1][:120]
            r = f"{done[i]:.0f} s: " + (tail if p.returncode == 0 else f"exit {p.returncode}: {tail}")
        else:
            p.kill()
            p.wait()
            r = f"not done within {seconds:g} s (the child was killed)"
            slow.append(what)
        print(f"{what:45} {r}", flush=True)
    print("SLOW: " + "; ".join(slow) if slow else "every call compiled within the limit")
    return 1 if slow else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*json.loads(sys.argv[2]))
        sys.exit(0)
    sys.exit(main(float(sys.argv[1]) if len(sys.argv) > 1 else 240.0))
