#!/usr/bin/env python3
"""Probe: which fa2 single-prefill shapes fail to launch, against what the split-KV merge predicts.

The entry flashinfer-fa2-single-d256-group8-launch was seen at 64/8 heads, head dim 256. Read in both wheels
(include/flashinfer/attention/prefill.cuh, SinglePrefillWithKVCacheDispatched; cascade.cuh, MergeStates): the
kernel splits KV into num_chunks = ceil(kv / max(ceil(kv / max_chunks), 256)) chunks when max_chunks (from
occupancy) allows, and merges them with MergeStates. When num_chunks < qo_len the merge launches a block of
bdx x num_qo_heads threads, bdx = head_dim / max(8, head_dim / 32) for 16-bit outputs (32 at d256, 16 at d128,
8 at d64): over 1024 threads is an invalid launch. So the prediction: the call raises exactly when
kv > 256 (two chunks or more), num_chunks < qo_len, and bdx * num_qo_heads > 1024, whatever the group size.
Each variant runs in its own process (a failed launch leaves an error pending). Prints one line per variant and
a table last; exit 0 when every observation matches the prediction, 1 otherwise. Only torch and flashinfer.

    python3 probe_fa2_single_merge_launch.py
"""

import json
import subprocess
import sys

# (num_qo_heads, num_kv_heads, head_dim, qo_len, kv_len, causal, predicted: "raises" | "right", why)
VARIANTS = [
    (64, 8, 256, 64, 300, False, "raises", "32 x 64 = 2048 threads, 2 chunks < 64 rows (the entry's case)"),
    (48, 8, 256, 64, 300, False, "raises", "32 x 48 = 1536"),
    (40, 8, 256, 64, 300, False, "raises", "32 x 40 = 1280"),
    (32, 8, 256, 64, 300, False, "right", "32 x 32 = 1024"),
    (64, 64, 256, 64, 300, False, "raises", "group 1: the thread count is the query heads'"),
    (64, 8, 256, 64, 300, True, "raises", "causal does not change the split"),
    (64, 8, 256, 64, 256, False, "right", "kv 256: one chunk, no merge"),
    (64, 8, 256, 64, 257, False, "raises", "kv 257: two chunks"),
    (64, 8, 256, 1, 600, False, "right", "3 chunks >= 1 row: the large-index-set merge, 128 threads"),
    (64, 8, 256, 2, 600, False, "right", "3 chunks >= 2 rows"),
    (64, 8, 256, 4, 600, False, "raises", "3 chunks < 4 rows"),
    (64, 8, 256, 4096, 8192, False, "right", "4096 x 8 rows fill the GPU: no split"),
    (72, 8, 128, 64, 300, False, "raises", "16 x 72 = 1152"),
    (64, 8, 128, 64, 300, False, "right", "16 x 64 = 1024"),
    (128, 16, 128, 64, 300, False, "raises", "16 x 128 = 2048"),
    (128, 8, 64, 64, 300, False, "right", "8 x 128 = 1024"),
    (136, 8, 64, 64, 300, False, "raises", "8 x 136 = 1088"),
]
TOL = 0.05


def child(hq, hkv, d, qo, kv, causal):
    import flashinfer
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(qo, hq, d, device="cuda", generator=g).to(torch.bfloat16)
    k = torch.randn(kv, hkv, d, device="cuda", generator=g).to(torch.bfloat16)
    v = torch.randn(kv, hkv, d, device="cuda", generator=g).to(torch.bfloat16)
    out = flashinfer.single_prefill_with_kv_cache(q, k, v, causal=causal, backend="fa2")
    torch.cuda.synchronize()
    errs = []
    for h0 in range(0, hq, 8):  # the reference a few heads at a time: 4096 x 8192 scores per head stay small
        hs = slice(h0, h0 + 8)
        kk = k.float().repeat_interleave(hq // hkv, 1)[:, hs]
        vv = v.float().repeat_interleave(hq // hkv, 1)[:, hs]
        s = torch.einsum("qhd,khd->hqk", q[:, hs].float(), kk) / d**0.5
        if causal:  # bottom-right aligned: row i sees keys up to i + kv - qo
            i = torch.arange(qo, device="cuda")[:, None]
            s.masked_fill_(torch.arange(kv, device="cuda")[None, :] > i + kv - qo, float("-inf"))
        ref = torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), vv)
        errs.append((out[:, hs].float() - ref).abs().max().item())
    print(json.dumps({"err": max(errs)}))


def run(variant):
    p = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(list(variant[:6]))], capture_output=True, text=True
    )
    if p.returncode:
        lines = p.stderr.strip().splitlines() or ["?"]
        why = next((x for x in reversed(lines) if "Error" in x or "failed" in x), lines[-1])
        return "raises", why.strip()[:160]
    err = json.loads(p.stdout.strip().splitlines()[-1])["err"]
    return ("right" if err < TOL else "wrong"), f"max |out - ref| = {err:.4g}"


def main():
    import flashinfer
    import torch

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"single_prefill_with_kv_cache, backend fa2, bf16, NHD; tolerance {TOL}")
    rows = []
    for v in VARIANTS:
        seen, what = run(v)
        hq, hkv, d, qo, kv, causal, predicted, why = v
        shape = f"{hq}/{hkv} d{d} qo {qo} kv {kv}{' causal' if causal else ''}"
        rows.append((shape, predicted, seen, why))
        print(f"{shape}: {seen} ({what}); predicted {predicted}: {why}", flush=True)
    print("\n| shape | predicted | seen | why |\n|---|---|---|---|")
    for shape, predicted, seen, why in rows:
        print(f"| {shape} | {predicted} | {seen}{'' if seen == predicted else ' (MISMATCH)'} | {why} |")
    bad = sum(seen != predicted for _, predicted, seen, _ in rows)
    print(f"{len(rows) - bad} of {len(rows)} as predicted")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(*json.loads(sys.argv[2]))
    else:
        sys.exit(main())
