#!/usr/bin/env python3
"""FlashInfer ragged wrapper: a custom mask from one plan survives an unmasked re-plan.

BatchPrefillWithRaggedKVCacheWrapper.plan() (eager mode) stores a given mask in
self._custom_mask_buf but has no `else` that clears it (prefill.py:5295-5301 in 0.7.2.post1,
unlike the paged wrapper's plan, which sets it to None); run() picks MaskMode.CUSTOM whenever
that buffer is set (prefill.py:6405). So plan(masked) -> run -> plan(unmasked) -> run applies
the OLD mask to the new batch. This script compares that output with a fresh wrapper planned
only unmasked and with a plain-torch reference.

    python3 repro_flashinfer_ragged_stale_mask.py [fa2|auto]   # exit 1 when the reused wrapper is wrong

Exit 2 when the fresh wrapper (the control) is wrong too: the set-up is wrong, not the defect.

Only torch and flashinfer; no attncheck code.
"""
import sys

import flashinfer
import torch

backend = sys.argv[1] if len(sys.argv) > 1 else "fa2"
torch.manual_seed(0)
dev = "cuda"
HQ, HKV, D = 8, 2, 128
qo, kv = [9, 6], [30, 14]
qo_indptr = torch.tensor([0, qo[0], sum(qo)], dtype=torch.int32, device=dev)
kv_indptr = torch.tensor([0, kv[0], sum(kv)], dtype=torch.int32, device=dev)
q = torch.randn(sum(qo), HQ, D, device=dev, dtype=torch.bfloat16)
k = torch.randn(sum(kv), HKV, D, device=dev, dtype=torch.bfloat16)
v = torch.randn(sum(kv), HKV, D, device=dev, dtype=torch.bfloat16)
mask = torch.cat([(torch.rand(a, b, device=dev) > 0.5).reshape(-1) for a, b in zip(qo, kv)])


def reference():
    outs = []
    for i in range(2):
        qs, ks, vs = (q[qo_indptr[i]:qo_indptr[i + 1]].float(), k[kv_indptr[i]:kv_indptr[i + 1]].float(),
                      v[kv_indptr[i]:kv_indptr[i + 1]].float())
        ks, vs = ks.repeat_interleave(HQ // HKV, 1), vs.repeat_interleave(HQ // HKV, 1)
        s = torch.einsum("qhd,khd->hqk", qs, ks) / D ** 0.5
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), vs))
    return torch.cat(outs)


def plan(w, masked):
    extra = {"custom_mask": mask} if masked else {}
    w.plan(qo_indptr, kv_indptr, HQ, HKV, D, q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16, **extra)


ws = lambda: torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev)  # noqa: E731
reused = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(ws(), "NHD", backend=backend)
plan(reused, True)
reused.run(q, k, v)
plan(reused, False)
stale = reused._custom_mask_buf is not None
out_reused = reused.run(q, k, v)
fresh = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(ws(), "NHD", backend=backend)
plan(fresh, False)
out_fresh = fresh.run(q, k, v)
ref = reference()
e_r = (out_reused.float() - ref).abs().max().item()
e_f = (out_fresh.float() - ref).abs().max().item()
print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}, "
      f"backend={backend}")
print(f"reused wrapper: after the unmasked re-plan _custom_mask_buf is "
      f"{'still set' if stale else 'None'}; runs {reused._backend!r}; max |out - ref| = {e_r:.4g}")
print(f"fresh wrapper : runs {fresh._backend!r}; max |out - ref| = {e_f:.4g}")
bad = e_r > 0.05 and e_f <= 0.05
print("DEFECT REPRODUCED: the unmasked re-plan still applies the previous mask" if bad else "not reproduced")
if e_f > 0.05:
    print("the control failed: the fresh wrapper is wrong too")
sys.exit(1 if bad else 2 if e_f > 0.05 else 0)
