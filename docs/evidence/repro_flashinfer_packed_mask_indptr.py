#!/usr/bin/env python3
"""FlashInfer batch prefill with `packed_custom_mask`: which packing does plan() expect for batch > 1?

plan() computes mask_indptr in ELEMENTS (_compute_mask_indptr, prefill.py:4672) and converts it to
BYTE offsets only when it packs a boolean `custom_mask` itself (segment_packbits, prefill.py:
5219); the kernel adds mask_indptr[batch] to a uint8 pointer (include/flashinfer/attention/
variants.cuh:59). A caller-packed mask therefore seems to be read at the wrong offset for every
request after the first, whether packed per request (segment_packbits) or whole (packbits, the
form plan()'s docstring names). This script runs one ragged batch of two requests three ways:
custom_mask (bool), packed_custom_mask = segment_packbits(...)[0], packed_custom_mask =
packbits(flat), and compares each with a plain-torch reference.

    python3 repro_flashinfer_packed_mask_indptr.py    # exit 1 when a documented form is wrong

Exit 2 when the bool custom_mask (the control) is wrong too: the set-up is wrong, not the defect.

Only torch and flashinfer; no attncheck code.
"""
import sys

import flashinfer
import torch

torch.manual_seed(0)
dev = "cuda"
HQ, HKV, D = 8, 2, 128
qo, kv = [9, 6], [30, 14]
qo_indptr = torch.tensor([0, qo[0], sum(qo)], dtype=torch.int32, device=dev)
kv_indptr = torch.tensor([0, kv[0], sum(kv)], dtype=torch.int32, device=dev)
q = torch.randn(sum(qo), HQ, D, device=dev, dtype=torch.bfloat16)
k = torch.randn(sum(kv), HKV, D, device=dev, dtype=torch.bfloat16)
v = torch.randn(sum(kv), HKV, D, device=dev, dtype=torch.bfloat16)
masks = [torch.rand(a, b, device=dev) > 0.5 for a, b in zip(qo, kv)]
flat = torch.cat([m.reshape(-1) for m in masks])
elem_indptr = torch.tensor([0, qo[0] * kv[0], qo[0] * kv[0] + qo[1] * kv[1]], dtype=torch.int32, device=dev)


def reference():
    outs = []
    for i in range(2):
        qs, ks, vs = (q[qo_indptr[i]:qo_indptr[i + 1]].float(), k[kv_indptr[i]:kv_indptr[i + 1]].float(),
                      v[kv_indptr[i]:kv_indptr[i + 1]].float())
        ks, vs = ks.repeat_interleave(HQ // HKV, 1), vs.repeat_interleave(HQ // HKV, 1)
        s = torch.einsum("qhd,khd->hqk", qs, ks) / D ** 0.5
        s = s.masked_fill(~masks[i], float("-inf"))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), vs))
    return torch.cat(outs)


ref = reference()
forms = {
    "custom_mask (bool)": {"custom_mask": flat},
    "packed_custom_mask = segment_packbits(flat, indptr, 'little')[0]":
        {"packed_custom_mask": flashinfer.segment_packbits(flat, elem_indptr, bitorder="little")[0]},
    "packed_custom_mask = packbits(flat, 'little')": {"packed_custom_mask": flashinfer.packbits(flat, "little")},
}
print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
errors = {}
for name, kw in forms.items():
    w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev),
                                                        "NHD", backend="fa2")
    w.plan(qo_indptr, kv_indptr, HQ, HKV, D, q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16, **kw)
    out = w.run(q, k, v).float()
    e0 = (out[:qo[0]] - ref[:qo[0]]).abs().max().item()
    e1 = (out[qo[0]:] - ref[qo[0]:]).abs().max().item()
    errors[name] = max(e0, e1)
    print(f"{name:66s} request 0: {e0:.4g}   request 1: {e1:.4g}")
bad = errors["custom_mask (bool)"] <= 0.05 and any(e > 0.05 for e in errors.values())
control_ok = errors["custom_mask (bool)"] <= 0.05
print("DEFECT REPRODUCED: a caller-packed mask is misread for a request after the first" if bad
      else "not reproduced" if control_ok else "the control failed: the bool custom_mask is wrong too")
sys.exit(1 if bad else 0 if control_ok else 2)
