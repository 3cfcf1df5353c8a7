"""Second probe (issue 20 item 3): the oracle's chunk pipeline on the H200, variant by variant.

    PYTHONPATH=$PWD python3 docs/evidence/2026-12-02-oracle-speed-probe2.py $OUT

A stand-alone copy of the oracle's per-chunk steps on issue 20's shape (32/8 heads, q 4096,
kv 8192, d 128, fp32, TF32 off, no mask), one chunk = one KV head's group x `rows` query rows,
timed whole (wall clock, synchronised, best of 3) for each combination of:
  rows per chunk (chunk size 64, 32 or 16 MiB of scores), K^T as a strided view or copied
  contiguous, P@V as one GEMM or split over S key blocks batched and summed, normalising P
  before P@V or the [rows, d] output after it. Then the real oracle at three budgets.
"""
import itertools
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.getcwd())
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")

from oracle.reference import attention  # noqa: E402
from scenarios.case import Case  # noqa: E402
from scenarios.tensors import materialize  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
SMOKE = bool(os.environ.get("PROBE_SMOKE"))
DEV = "cpu" if SMOKE else "cuda"
H, HKV, Q, KV, D = (8, 2, 256, 1024, 64) if SMOKE else (32, 8, 4096, 8192, 128)
G = H // HKV
FLOPS = 4 * H * Q * KV * D


def sync():
    if not SMOKE:
        torch.cuda.synchronize()


def wall(fn, reps=3):
    fn()
    best = float("inf")
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


gen = torch.Generator().manual_seed(0)
q_all = torch.randn(Q, H, D, generator=gen).to(DEV)
k_all = torch.randn(KV, HKV, D, generator=gen).to(DEV)
v_all = torch.randn(KV, HKV, D, generator=gen).to(DEV)
scale = D ** -0.5


def pipeline(rows, kt_contig, split, defer):
    out = torch.zeros(Q, H, D, device=DEV)
    lse = torch.full((Q, H), -float("inf"), device=DEV)
    for kvh in range(HKV):
        h0, h1 = kvh * G, (kvh + 1) * G
        for r0 in range(0, Q, rows):
            r1 = min(r0 + rows, Q)
            q = q_all[r0:r1, h0:h1].transpose(0, 1).reshape(1, -1, D)
            k = k_all[:, kvh:kvh + 1]
            kt = k.permute(1, 2, 0)
            if kt_contig:
                kt = kt.contiguous()
            s = torch.empty(G, r1 - r0, KV, device=DEV)
            sv = s.view(1, -1, KV)
            sv.baddbmm_(q, kt, beta=0.0, alpha=scale)
            m = s.amax(dim=-1, keepdim=True)
            empty = torch.isneginf(m)
            p = s.sub_(torch.where(empty, torch.zeros_like(m), m)).exp_()
            denom = p.sum(dim=-1, keepdim=True)
            lb = (m + torch.log(denom)).squeeze(-1)
            if not defer:
                p.div_(torch.where(empty, torch.ones_like(denom), denom))
            v = v_all[:, kvh:kvh + 1].transpose(0, 1)  # [1, KV, D]
            pv = p.view(1, -1, KV)
            if split == 1:
                o = torch.bmm(pv, v)
            else:
                o = torch.bmm(pv[0].view(-1, split, KV // split).transpose(0, 1),
                              v[0].view(split, KV // split, D)).sum(0, keepdim=True)
            o = o.view(G, r1 - r0, D)
            if defer:
                o = o / torch.where(empty, torch.ones_like(denom), denom)
            out[r0:r1, h0:h1] = o.transpose(0, 1)
            lse[r0:r1, h0:h1] = lb.transpose(0, 1)
    return out, lse


res = {"torch": torch.__version__, "shape": [H, HKV, Q, KV, D], "variants": []}
base = None
for rows, kt_contig, split, defer in itertools.product((512, 256, 128), (False, True), (1, 4, 16), (False, True)):
    o, l_ = pipeline(rows, kt_contig, split, defer)
    if base is None:
        base = o
    t = wall(lambda: pipeline(rows, kt_contig, split, defer))
    row = {"chunk_mib": G * rows * KV * 4 / 2**20, "kt_contig": kt_contig, "split": split, "defer": defer,
           "ms": round(t * 1e3, 2), "tflops": round(FLOPS / t / 1e12, 1),
           "diff": float((o - base).abs().max())}
    res["variants"].append(row)
    print(row, flush=True)
del q_all, k_all, v_all

case = Case("single", (Q,), (KV,), H, HKV, head_dim_qk=D, head_dim_vo=D, q_dtype="fp32", kv_dtype="fp32",
            o_dtype="fp32")
inp = materialize(case, 0, DEV)
res["oracle"] = {}
for mib in (256, 128, 64):
    t = wall(lambda: attention(inp, budget_bytes=mib * 2**20))
    res["oracle"][mib] = {"ms": round(t * 1e3, 2), "tflops": round(FLOPS / t / 1e12, 1)}
    print("oracle budget", mib, res["oracle"][mib], flush=True)
best = sorted(res["variants"], key=lambda r: r["ms"])[:8]
print("best:")
for r in best:
    print(r)
with open(os.path.join(OUT, "probe2.json"), "w") as f:
    json.dump(res, f, indent=1)
