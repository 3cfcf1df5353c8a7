#!/usr/bin/env python3
"""FlashInfer paged plan() with a custom mask: requests over no pages that empty the packed buffer.

The same root cause as repro_flashinfer_paged_mask_zero_pages.py: plan() computes a request's mask
length as qo_len * ((pages - 1) * page_size + last_page_len) (_compute_page_mask_indptr,
prefill.py:1595-1615 in 0.7.2.post1), negative for a request with queries and no pages.
segment_packbits (packbits.py:128-137 in 0.7.2.post1, :128-138 in 0.7.4) then sizes its output as
the sum of (len + 7) // 8 over the requests: where the negative lengths bring that sum to exactly 0
it allocates an empty tensor (no storage), and still writes the earlier requests' packed bits into
it. Seen by attncheck's scenario machines on an H200, both 0.7.2.post1 and 0.7.4 (lifecycle-clean-
paged, no fault injected): plan of qo [2, 1, 2] over kv [2, 0, 0], page size 5 (bytes 1 + 0 - 1 = 0)
raised an illegal memory access and the CUDA context was lost
(docs/evidence/2026-12-02-h200-lifecycle/). Each variant runs in a child process (a lost context ends it), on the same requests:

  control     qo [2] over kv [2]               plan and run, output against a plain reference
  one empty   qo [2, 1] over kv [2, 0]         bytes 1 + 0 = 1: the buffer holds request 0's byte
  two empty   qo [2, 1, 2] over kv [2, 0, 0]   the defect: bytes 1 + 0 - 1 = 0, an empty buffer

    python3 repro_flashinfer_paged_mask_empty_buffer.py   # exit 1 when only the two-empty plan fails

Exit 2 when a control fails. Only torch and flashinfer; no attncheck code.
"""
import json
import subprocess
import sys

PAGE, HQ, HKV, D = 5, 1, 1, 128
VARIANTS = {"control": ([2], [2]), "one empty": ([2, 1], [2, 0]), "two empty": ([2, 1, 2], [2, 0, 0])}


def child(qo, kv):
    import flashinfer
    import torch

    dev = "cuda"
    torch.manual_seed(0)
    pages = [(k + PAGE - 1) // PAGE for k in kv]
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    qo_indptr = i32([0] + torch.tensor(qo).cumsum(0).tolist())
    kv_indptr = i32([0] + torch.tensor(pages).cumsum(0).tolist())
    last = i32([k - (p - 1) * PAGE if p else 0 for k, p in zip(kv, pages)])
    mask = torch.cat([torch.ones(q * k, dtype=torch.bool, device=dev) for q, k in zip(qo, kv)])
    q = torch.randn(sum(qo), HQ, D, dtype=torch.bfloat16, device=dev)
    k_cache = torch.randn(max(sum(pages), 1), PAGE, HKV, D, dtype=torch.bfloat16, device=dev)
    v_cache = torch.randn_like(k_cache)
    w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(
        torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev), "NHD", backend="fa2"
    )
    w.plan(qo_indptr, kv_indptr, torch.arange(sum(pages), dtype=torch.int32, device=dev), last, HQ, HKV, D, PAGE,
           custom_mask=mask, q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16)
    out = w.run(q, (k_cache, v_cache))
    torch.cuda.synchronize()
    err, row, page = 0.0, 0, 0
    for qn, kn, pn in zip(qo, kv, pages):  # a plain fp32 reference per request (rows over no keys: zeros)
        if qn and kn:
            kk = k_cache[page:page + pn].reshape(-1, HKV, D)[:kn].float().repeat_interleave(HQ // HKV, 1)
            vv = v_cache[page:page + pn].reshape(-1, HKV, D)[:kn].float().repeat_interleave(HQ // HKV, 1)
            s = torch.einsum("qhd,khd->hqk", q[row:row + qn].float(), kk) / D ** 0.5
            ref = torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), vv)
            err = max(err, (out[row:row + qn].float() - ref).abs().max().item())
        row, page = row + qn, page + pn
    print(json.dumps({"err": err}))


def run(name):
    qo, kv = VARIANTS[name]
    p = subprocess.run([sys.executable, __file__, "--child", json.dumps([qo, kv])], capture_output=True, text=True)
    if p.returncode:
        last = (p.stderr.strip().splitlines() or ["?"])
        why = next((x for x in reversed(last) if "Error" in x), last[-1])
        return False, f"failed (exit {p.returncode}): {why[:200]}"
    err = json.loads(p.stdout.strip().splitlines()[-1])["err"]
    return err < 0.05, f"max |out - ref| = {err:.4g}"


def main():
    import flashinfer
    import torch

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    ok = {}
    for name in VARIANTS:
        ok[name], what = run(name)
        print(f"{name:10s} qo {VARIANTS[name][0]} over kv {VARIANTS[name][1]}: {what}")
    if not (ok["control"] and ok["one empty"]):
        print("a control failed: not judged")
        return 2
    if not ok["two empty"]:
        print("DEFECT REPRODUCED: requests over no pages that empty the packed mask break the plan of a masked batch")
        return 1
    print("not reproduced")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(*json.loads(sys.argv[2]))
    else:
        sys.exit(main())
