#!/usr/bin/env python3
"""FlashInfer paged wrapper, backend="auto": the first plan's resolution sticks to later plans.

BatchPrefillWithPagedKVCacheWrapper.plan() resolves "auto" only while self._backend == "auto"
and overwrites self._backend with the answer (prefill.py:3669-3670 in 0.7.2.post1), so on an
sm90 GPU an unmasked first plan fixes "fa3" for the wrapper's life. A later plan with a custom
mask -- which determine_attention_backend would send to fa2, since fa3 takes no custom mask --
then runs fa3 (seen on an H200: run() raises "BatchPrefillWithPagedKVCacheSM90Run failed with
error: operation not supported"). This script plans a fresh wrapper for the masked batch, then
one wrapper unmasked and masked, and compares both with a plain-torch reference.

    python3 repro_flashinfer_sticky_paged_auto.py      # exit 1 when the reused wrapper is wrong

Exit 2 when the fresh wrapper (the control) is wrong too: the set-up is wrong, not the defect.

Only torch and flashinfer; no attncheck code.
"""
import sys

import flashinfer
import torch

torch.manual_seed(0)
dev = "cuda"
HQ, HKV, D, PAGE = 8, 2, 128, 16
qo, kv = [7, 12], [40, 25]


def batch(mask: bool):
    pages = [(k + PAGE - 1) // PAGE for k in kv]
    kv_indptr = torch.tensor([0, pages[0], sum(pages)], dtype=torch.int32, device=dev)
    indices = torch.arange(sum(pages), dtype=torch.int32, device=dev)
    last = torch.tensor([k - (p - 1) * PAGE for k, p in zip(kv, pages)], dtype=torch.int32, device=dev)
    qo_indptr = torch.tensor([0, qo[0], sum(qo)], dtype=torch.int32, device=dev)
    masks = [torch.rand(q, k, device=dev) > 0.5 for q, k in zip(qo, kv)] if mask else None
    return qo_indptr, kv_indptr, indices, last, masks


q = torch.randn(sum(qo), HQ, D, device=dev, dtype=torch.bfloat16)
npages = sum((k + PAGE - 1) // PAGE for k in kv)
k_cache = torch.randn(npages, PAGE, HKV, D, device=dev, dtype=torch.bfloat16)
v_cache = torch.randn(npages, PAGE, HKV, D, device=dev, dtype=torch.bfloat16)


def reference(masks):
    outs, r0, page0 = [], 0, 0
    for i, (nq, nk) in enumerate(zip(qo, kv)):
        np_ = (nk + PAGE - 1) // PAGE
        k = k_cache[page0:page0 + np_].reshape(-1, HKV, D)[:nk].float().repeat_interleave(HQ // HKV, 1)
        v = v_cache[page0:page0 + np_].reshape(-1, HKV, D)[:nk].float().repeat_interleave(HQ // HKV, 1)
        s = torch.einsum("qhd,khd->hqk", q[r0:r0 + nq].float(), k) / D ** 0.5
        if masks is not None:
            s = s.masked_fill(~masks[i], float("-inf"))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), v))
        r0, page0 = r0 + nq, page0 + np_
    return torch.cat(outs)


def plan(w, masks):
    qo_indptr, kv_indptr, indices, last, _ = batch(False)
    extra = {"custom_mask": torch.cat([m.reshape(-1) for m in masks])} if masks is not None else {}
    w.plan(qo_indptr, kv_indptr, indices, last, HQ, HKV, D, PAGE, q_data_type=torch.bfloat16,
           kv_data_type=torch.bfloat16, **extra)


ws = lambda: torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev)  # noqa: E731
masks = batch(True)[4]
ref = reference(masks)
print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
fresh = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws(), "NHD", backend="auto")
plan(fresh, masks)
err_fresh = (fresh.run(q, (k_cache, v_cache)).float() - ref).abs().max().item()
print(f"fresh wrapper : masked plan resolves {fresh._backend!r}; max |out - ref| = {err_fresh:.4g}")
reused = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws(), "NHD", backend="auto")
plan(reused, None)
first = reused._backend
reused.run(q, (k_cache, v_cache))
plan(reused, masks)
try:
    err_reused = (reused.run(q, (k_cache, v_cache)).float() - ref).abs().max().item()
    outcome = f"max |out - ref| = {err_reused:.4g}"
except Exception as e:  # the defect may show as a kernel refusing the mask instead of a wrong output
    err_reused, outcome = float("inf"), f"run() raised {type(e).__name__}: {str(e).splitlines()[0][:200]}"
print(f"reused wrapper: first plan (no mask) resolved {first!r}; masked plan runs {reused._backend!r}; {outcome}")
bad = err_reused > 0.05 and err_fresh <= 0.05
print("DEFECT REPRODUCED: the reused auto wrapper keeps its first backend under a custom mask" if bad
      else "not reproduced" if err_fresh <= 0.05 else "the control failed: the fresh wrapper is wrong too")
sys.exit(1 if bad else 0 if err_fresh <= 0.05 else 2)
