#!/usr/bin/env python3
"""FlashInfer paged prefill with a custom mask, eager: a request after one with queries and no KV pages reads
its mask bits shifted.

The root is the one of repro_flashinfer_paged_mask_zero_pages.py: plan() sizes a request's mask as
qo_len * ((pages - 1) * page_size + last_page_len) (_compute_page_mask_indptr, prefill.py:1607-1614 in
0.7.2.post1, :1743-1750 in 0.7.4), which is -qo_len * page_size for a request with queries and no pages, and
segment_packbits() packs the mask from those offsets. Where every later segment still starts at a bit >= 0
plan() returns and nothing is read outside the buffers (unlike repro_flashinfer_paged_mask_segment_before_
buffer.py); the requests after the empty one start qo_len * page_size bits too early, in the packed mask and in
the flat mask it packs, so they get the tail of the request before's mask in place of the head of their own.
Seen through attncheck's standard matrix on the H200 (2026-12-03), eager fa2: the worst row of two masked
cases was the first row after the request with no pages. The batch here:

  control       qo [8, 8] over kv [40, 40]         no empty request
  no queries    qo [8, 0, 8] over kv [40, 0, 40]   an empty request with no queries (a mask of 0 bits)
  judged        qo [8, 2, 8] over kv [40, 0, 40]   the defect: request 2's mask starts at bit 320 - 2 * 16

page 16, 8/2 heads, head dim 128, bf16, no causal (FlashInfer ignores it under a custom mask), a random mask
with key 0 kept in every row. The reference is fp32 attention under FlashInfer's documented mask layout (each
request's qo_len x kv_len block, row-major, one after another). The mechanism line compares the judged batch's
request 2 with the reference under its mask read 2 * 16 bits early from the flat mask.

    python3 repro_flashinfer_paged_mask_zero_pages_shifted.py   # exit 1 when the judged batch is wrong

Exit 2 when a control is wrong or a call raises. Only torch and flashinfer; no attncheck code.
"""
import sys

import torch

PAGE, HQ, HKV, D, TOL = 16, 8, 2, 128, 0.05
BATCHES = [  # (name, qo, kv, role)
    ("control", [8, 8], [40, 40], "control"),
    ("no queries", [8, 0, 8], [40, 0, 40], "control"),
    ("judged", [8, 2, 8], [40, 0, 40], "judged"),
]


def attention(q, k, v, keep):
    """fp32 attention of one request, `keep` [qo, kv] its mask."""
    k, v = k.float().repeat_interleave(HQ // HKV, 1), v.float().repeat_interleave(HQ // HKV, 1)
    s = torch.einsum("qhd,khd->hqk", q.float(), k) / D**0.5
    s = s.masked_fill(~keep[None], float("-inf"))
    return torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), v)


def fa2(qo, kv, q, kc, vc, mask):
    import flashinfer

    dev, dt = "cuda", torch.bfloat16
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    pages = [(k + PAGE - 1) // PAGE for k in kv]
    w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(
        torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev), "NHD", backend="fa2"
    )
    w.plan(i32([0] + torch.tensor(qo).cumsum(0).tolist()), i32([0] + torch.tensor(pages).cumsum(0).tolist()),
           i32(list(range(sum(pages)))), i32([k - (p - 1) * PAGE if p else 0 for k, p in zip(kv, pages)]),
           HQ, HKV, D, PAGE, custom_mask=mask, q_data_type=dt, kv_data_type=dt)
    return w.run(q, (kc, vc))


def main():
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"fa2 eager, paged page {PAGE} NHD, {HQ}/{HKV} heads, head dim {D}, bf16, custom mask; tolerance {TOL}")
    wrong = {}
    for name, qo, kv, role in BATCHES:
        g = torch.Generator(device="cuda").manual_seed(0)
        pages = [(k + PAGE - 1) // PAGE for k in kv]
        q = torch.randn(sum(qo), HQ, D, device="cuda", generator=g).to(torch.bfloat16)
        kc = torch.randn(sum(pages), PAGE, HKV, D, device="cuda", generator=g).to(torch.bfloat16)
        vc = torch.randn(sum(pages), PAGE, HKV, D, device="cuda", generator=g).to(torch.bfloat16)
        masks = []
        for n, m in zip(qo, kv):
            keep = torch.rand(n, m, device="cuda", generator=g) < 0.6
            keep[:, :1] = True
            masks.append(keep)
        flat = torch.cat([m.reshape(-1) for m in masks])
        try:
            out = fa2(qo, kv, q, kc, vc, flat)
            torch.cuda.synchronize()
        except Exception as ex:  # noqa: BLE001 - a raise is an observation
            print(f"{name} [{role}] qo {qo} over kv {kv}: raised {type(ex).__name__}: {str(ex).splitlines()[0][:160]}")
            wrong[name] = (role, None)
            continue
        errs, notes, row, page, bit, shift = [], [], 0, 0, 0, 0
        for i, (n, m, p, keep) in enumerate(zip(qo, kv, pages, masks)):
            if n and m:
                kk = kc[page:page + p].reshape(-1, HKV, D)[:m]
                vv = vc[page:page + p].reshape(-1, HKV, D)[:m]
                err = (out[row:row + n].float() - attention(q[row:row + n], kk, vv, keep)).abs().max().item()
                errs.append(f"request {i} {err:.4f}")
                wrong[name] = (role, wrong.get(name, (role, 0))[1] + (err > TOL))
                if shift and err > TOL:
                    early = flat[bit - shift:bit - shift + n * m].view(n, m)
                    diff = (out[row:row + n].float() - attention(q[row:row + n], kk, vv, early)).abs().max().item()
                    notes.append(f"    mechanism: request {i} against its mask read {shift} bits early: "
                                 f"max diff {diff:.4f}")
            elif n:
                shift += n * PAGE
            row, page, bit = row + n, page + p, bit + n * m
        wrong.setdefault(name, (role, 0))
        print(f"{name} [{role}] qo {qo} over kv {kv}: max |out - ref| {', '.join(errs)}")
        for note in notes:
            print(note)
    controls_bad = [n for n, (r, w) in wrong.items() if r == "control" and (w is None or w)]
    judged = [w for r, w in wrong.values() if r == "judged"]
    if controls_bad or None in judged:
        print("a control is wrong or a call raised: the set-up, not the defect: " + ", ".join(controls_bad))
        return 2
    if any(judged):
        print("DEFECT REPRODUCED: a request after one with queries and no pages reads its mask shifted (eager)")
        return 1
    print("not reproduced: every request within the tolerance")
    return 0


if __name__ == "__main__":
    if sys.argv[1:]:
        print(f"usage: {sys.argv[0]}", file=sys.stderr)
        sys.exit(2)
    sys.exit(main())
