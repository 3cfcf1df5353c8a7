#!/usr/bin/env python3
"""FlashInfer paged plan() with a custom mask fails when a request has no KV pages.

The kernels read a request's KV length as 0 when it has no pages, whatever its
paged_kv_last_page_len (paged_kv_t::get_length, include/flashinfer/page.cuh:185-190 in
0.7.2.post1). plan()'s Python side computes the mask offsets with (pages - 1) * page_size +
last_page_len and no such case (_compute_page_mask_indptr, prefill.py:1595-1615), so a request
with queries and no pages gets a negative mask length and plan() fails creating a tensor of
negative size. Seen through attncheck on an H200 (a batch with kv_lens [300, 128, 0], qo_lens
[3, 0, 64], page size 16). This script plans that batch alone, with last_page_len 0 for the
empty request, and checks the same batch without the empty request plans fine.

    python3 repro_flashinfer_paged_mask_zero_pages.py    # exit 1 when the plan with the empty request raises

Only torch and flashinfer; no attncheck code.
"""
import sys

import flashinfer
import torch

dev = "cuda"
PAGE, HQ, HKV, D = 16, 8, 1, 64


def plan(qo, kv):
    pages = [(k + PAGE - 1) // PAGE for k in kv]
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    qo_indptr = i32([0] + list(torch.tensor(qo).cumsum(0).tolist()))
    kv_indptr = i32([0] + list(torch.tensor(pages).cumsum(0).tolist()))
    last = i32([k - (p - 1) * PAGE if p else 0 for k, p in zip(kv, pages)])
    mask = torch.cat([torch.ones(q * k, dtype=torch.bool, device=dev) for q, k in zip(qo, kv)])
    w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev),
                                                       "HND", backend="fa2")
    w.plan(qo_indptr, kv_indptr, torch.arange(sum(pages), dtype=torch.int32, device=dev), last, HQ, HKV, D, PAGE,
           custom_mask=mask, q_data_type=torch.float16, kv_data_type=torch.float16)


print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
plan([3, 0], [300, 128])
print("without the empty request: plan() returned")
try:
    plan([3, 0, 64], [300, 128, 0])
    print("with a 64-query request over 0 pages: plan() returned")
    bad = False
except Exception as e:
    print(f"with a 64-query request over 0 pages: plan() raised {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    bad = True
print("DEFECT REPRODUCED: a request with no pages breaks the custom-mask offsets" if bad else "not reproduced")
sys.exit(1 if bad else 0)
