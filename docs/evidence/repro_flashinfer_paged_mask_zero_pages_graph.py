#!/usr/bin/env python3
"""FlashInfer paged prefill with a custom mask and a last request with no KV pages: in CUDA-graph mode
the output is wrong where the eager wrapper's is right.

The root is the one of repro_flashinfer_paged_mask_zero_pages.py: plan() sizes a request's mask as
qo_len * ((pages - 1) * page_size + last_page_len) (_compute_page_mask_indptr, prefill.py:1595-1615),
negative for a request with queries and no pages, and packs the mask into sum((len + 7) // 8) bytes
(segment_packbits, quantization/packbits.py:121-125). When that sum stays >= 0 plan() does not raise,
but the packed mask is shorter than the requests before the empty one need. Seen through attncheck on
the H200 (2026-12-01, second and third sittings): paged, page 5, NHD, 32/8 heads, head dim 128, bf16
q over e4m3 KV, causal, qo [3, 3] over kv [128, 0]: eager fa2 passes, fa2+graph and auto+graph (fa2)
fail with output error 0.479 against 0.041, on fresh wrappers too. This script runs that batch eager
and on a use_cuda_graph=True wrapper (run as is, then captured and replayed) against an fp32 reference
of FlashInfer's documented rule (a request's mask is row-major qo_len x kv_len, AND causal), with request
0 planned alone as the control of that reference.

    python3 repro_flashinfer_paged_mask_zero_pages_graph.py      # exit 1 when a variant is wrong, 2 when the control is

On the H200 (2026-12-01, fourth sitting) its first version failed eager 0.1833 and graph 0.4205 against
0.05; request 0 alone, added as the control, failed the same 0.1833: the script ANDed causal into its
reference while FlashInfer ignores `causal` under a custom mask. Causal is folded into the masks since.

Only torch and flashinfer; no attncheck code.
"""
import sys

import torch

PAGE, HQ, HKV, D = 5, 32, 8, 128
QO, KV = [3, 3], [128, 0]


def reference(q, k, v, masks):
    outs, q0, k0 = [], 0, 0
    for n, m, keep in zip(QO, KV, masks):
        if m == 0:
            outs.append(q.new_zeros(n, HQ, D, dtype=torch.float32))
            q0 += n
            continue
        qi, ki, vi = q[q0:q0 + n].float(), k[k0:k0 + m].float(), v[k0:k0 + m].float()
        ki, vi = ki.repeat_interleave(HQ // HKV, 1), vi.repeat_interleave(HQ // HKV, 1)
        s = torch.einsum("qhd,khd->hqk", qi, ki) / D ** 0.5
        i = torch.arange(n, device=q.device)[:, None] + (m - n)
        j = torch.arange(m, device=q.device)[None, :]
        s = s.masked_fill(~(keep & (j <= i)), float("-inf"))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, -1).nan_to_num(0.0), vi))
        q0, k0 = q0 + n, k0 + m
    return torch.cat(outs)


def main():
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    dev, bf, f8 = "cuda", torch.bfloat16, torch.float8_e4m3fn
    g = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(sum(QO), HQ, D, device=dev, generator=g).to(bf)
    k = torch.randn(sum(KV), HKV, D, device=dev, generator=g).to(f8)
    v = torch.randn(sum(KV), HKV, D, device=dev, generator=g).to(f8)
    # FlashInfer ignores `causal` under a custom mask (plan() docstring): causal is folded into each mask here.
    masks = [(torch.rand(n, m, device=dev, generator=g) < 0.7)
             & (torch.arange(m, device=dev)[None, :] <= torch.arange(n, device=dev)[:, None] + (m - n))
             for n, m in zip(QO, KV)]
    pages = [(m + PAGE - 1) // PAGE for m in KV]
    kc = torch.zeros(sum(pages), PAGE, HKV, D, device=dev, dtype=f8)
    vc = torch.zeros_like(kc)
    for t in range(KV[0]):
        kc[t // PAGE, t % PAGE], vc[t // PAGE, t % PAGE] = k[t], v[t]
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    qo_indptr, kv_indptr = i32([0, QO[0], sum(QO)]), i32([0, pages[0], sum(pages)])
    indices = i32(list(range(sum(pages))))
    last = i32([m - (p - 1) * PAGE if p else 0 for m, p in zip(KV, pages)])
    mask = torch.cat([m.reshape(-1) for m in masks])
    ref = reference(q, k, v, masks)
    ws = lambda: torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev)  # noqa: E731
    plan_args = (qo_indptr, kv_indptr, indices, last, HQ, HKV, D, PAGE)
    plan_kw = dict(causal=True, custom_mask=mask, q_data_type=bf, kv_data_type=f8, o_data_type=bf)
    results = {}

    # Request 0 alone, eager: the control of the reference (its mask is whole, nothing follows it).
    alone = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws(), "NHD", backend="fa2")
    alone.plan(i32([0, QO[0]]), i32([0, pages[0]]), i32(list(range(pages[0]))), last[:1], HQ, HKV, D, PAGE,
               **dict(plan_kw, custom_mask=masks[0].reshape(-1)))
    err0 = (alone.run(q[:QO[0]], (kc, vc)).float() - ref[:QO[0]]).abs().max().item()
    print(f"{'ok  ' if err0 <= 0.05 else 'FAIL'} {'request 0 alone, eager (control)':40} max |out - ref| = {err0:.4f}")
    if err0 > 0.05:
        print("the control failed: the reference or the set-up is wrong, not the defect")
        return 2
    # The whole batch, eager: its packed mask is one byte short (47 of the 48 request 0 needs), so request 0's
    # last 8 bits are read from whatever follows the buffer; its result depends on that memory.
    eager = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws(), "NHD", backend="fa2")
    eager.plan(*plan_args, **plan_kw)
    results["eager"] = eager.run(q, (kc, vc))

    def graph_wrapper():
        return flashinfer.BatchPrefillWithPagedKVCacheWrapper(
            ws(), "NHD", use_cuda_graph=True, qo_indptr_buf=qo_indptr.clone(), paged_kv_indptr_buf=kv_indptr.clone(),
            paged_kv_indices_buf=torch.zeros(64, dtype=torch.int32, device=dev),
            paged_kv_last_page_len_buf=last.clone(), custom_mask_buf=torch.zeros(4096, dtype=torch.uint8, device=dev),
            mask_indptr_buf=torch.zeros(len(QO) + 1, dtype=torch.int32, device=dev), backend="fa2")

    gw = graph_wrapper()
    gw.plan(*plan_args, **plan_kw)
    results["use_cuda_graph, run as is"] = gw.run(q, (kc, vc))
    cw = graph_wrapper()
    cw.plan(*plan_args, **plan_kw)
    out = torch.empty_like(q)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        cw.run(q, (kc, vc), out=out)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        cw.run(q, (kc, vc), out=out)
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    results["use_cuda_graph, captured and replayed"] = out

    bad = []
    for name, o in results.items():
        err = (o.float() - ref).abs().max().item()
        ok = err <= 0.05
        print(f"{'ok  ' if ok else 'FAIL'} {name:40} max |out - ref| = {err:.4f}", flush=True)
        if not ok:
            bad.append(name)
    print("DEFECT REPRODUCED: " + ", ".join(bad) if bad else "not reproduced: every variant matches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
