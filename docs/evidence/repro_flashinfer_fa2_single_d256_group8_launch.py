#!/usr/bin/env python3
"""Repro: fa2 single prefill, head dim 256, 64 query heads over 8 KV heads: the kernel launch fails.

Seen through attncheck on the H200 (2026-12-03, docs/evidence/2026-12-03-h200-4/call3/), 0.7.2.post1 and 0.7.4
alike, each case in a fresh process: single_prefill_with_kv_cache(backend="fa2") of 64 (and 16) query rows over 300
keys, 64/8 heads, head dim 256, bf16, HND and NHD, no mask, raises "SinglePrefillWithKVCache kernel launch failed,
error: invalid argument" and leaves that CUDA error pending for the next call; the same call with 32/8 heads at
head dim 256, or 64/8 heads at head dim 128, returns the right output. The batch prefill wrappers take 64/8 heads
at head dim 256 (the standard matrix's ragged-b3-h64x8-d256-bf16 passed). Each variant runs in a child process
(a pending error would reach the next one):

  judged    64/8 heads, head dim 256, qo 64 over kv 300
  control   32/8 heads, head dim 256, the same lengths
  control   64/8 heads, head dim 128, the same lengths

    python3 repro_flashinfer_fa2_single_d256_group8_launch.py

Exit 1 when the judged call raises (or is wrong) while both controls are right, 0 when it is right too, 2 when
a control is wrong or raises. The reference is fp32 attention (query head h reads KV head h // 8). Only torch and
flashinfer; no attncheck code.
"""
import json
import subprocess
import sys

QO, KV, TOL = 64, 300, 0.05
VARIANTS = [  # (name, num_qo_heads, num_kv_heads, head_dim, role)
    ("64/8 heads, head dim 256", 64, 8, 256, "judged"),
    ("32/8 heads, head dim 256", 32, 8, 256, "control"),
    ("64/8 heads, head dim 128", 64, 8, 128, "control"),
]


def child(hq, hkv, d):
    import flashinfer
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(QO, hq, d, device="cuda", generator=g).to(torch.bfloat16)
    k = torch.randn(KV, hkv, d, device="cuda", generator=g).to(torch.bfloat16)
    v = torch.randn(KV, hkv, d, device="cuda", generator=g).to(torch.bfloat16)
    out = flashinfer.single_prefill_with_kv_cache(q, k, v, backend="fa2")
    torch.cuda.synchronize()
    kk, vv = k.float().repeat_interleave(hq // hkv, 1), v.float().repeat_interleave(hq // hkv, 1)
    s = torch.einsum("qhd,khd->hqk", q.float(), kk) / d**0.5
    ref = torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), vv)
    print(json.dumps({"err": (out.float() - ref).abs().max().item()}))


def run(hq, hkv, d):
    p = subprocess.run([sys.executable, __file__, "--child", json.dumps([hq, hkv, d])], capture_output=True, text=True)
    if p.returncode:
        lines = p.stderr.strip().splitlines() or ["?"]
        why = next((x for x in reversed(lines) if "Error" in x or "failed" in x), lines[-1])
        return None, f"raised (exit {p.returncode}): {why.strip()[:220]}"
    err = json.loads(p.stdout.strip().splitlines()[-1])["err"]
    return err < TOL, f"max |out - ref| = {err:.4g}"


def main():
    import flashinfer
    import torch

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"single_prefill_with_kv_cache, backend fa2, bf16, NHD, qo {QO} over kv {KV}, no mask; tolerance {TOL}")
    right = {}
    for name, hq, hkv, d, role in VARIANTS:
        ok, what = run(hq, hkv, d)
        right[name] = (role, ok)
        print(f"{name} [{role}]: {what}")
    if not all(ok for role, ok in right.values() if role == "control"):
        print("a control is wrong or raised: the set-up, not the defect")
        return 2
    if not all(ok for role, ok in right.values() if role == "judged"):
        print("DEFECT REPRODUCED: fa2 single prefill cannot launch 64/8 heads at head dim 256")
        return 1
    print("not reproduced: every variant right")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(*json.loads(sys.argv[2]))
    elif sys.argv[1:]:
        print(f"usage: {sys.argv[0]}", file=sys.stderr)
        sys.exit(2)
    else:
        sys.exit(main())
