#!/usr/bin/env python3
"""Probe: FlashInfer fa3 paged prefill, fp16 with a logits soft cap — an infinite LSE where the
reference is finite.

Seen in the 2026-12-01 H200 quick matrix (third sitting): the case paged, HND, page 1, 64/8 heads,
head dim 128, fp16, causal, logits_soft_cap 50, inputs N(0, 16^2), qo [300, 64] over kv [33, 1031]
fails on fa3, fa3+graph and auto+graph (fa3), fresh wrappers too, with the output within its bound
and the LSE infinite at [267, 49] where the reference is finite: row 267 of request 0 is the first
row that sees a key (causal, 300 rows over 33 keys: row i sees keys j <= i - 267). fa2 passes the
same case. This script rebuilds the batch with plain flashinfer calls, changes one thing at a time,
and counts the LSE entries that are infinite where the fp32 reference is finite.

    python3 probe_flashinfer_fa3_softcap_lse.py      # exit 1 when the matrix case gives such an LSE

Exit 1 when the matrix case gives such an LSE and fa2 and each request alone do not; 2 when one of
those controls does (the set-up is wrong, not the defect).

Only torch and flashinfer; no attncheck code. The reference is FlashInfer's documented soft cap
(score = cap * tanh(q.k * sm_scale / cap)) and causal rule (row i of qo_len rows over kv_len keys
sees key j when j <= i + kv_len - qo_len), in fp32; LSE asked for in natural log (lse_base="ln").
"""
import sys

import torch

HQ, HKV, D = 64, 8, 128
BASE = dict(backend="fa3", layout="HND", page=1, scale=16.0, cap=50.0, qo=[300, 64], kv=[33, 1031])
VARIANTS = [
    ("the matrix case", {}),
    ("fa2 (control)", dict(backend="fa2")),
    ("NHD", dict(layout="NHD")),
    ("page size 16", dict(page=16)),
    ("inputs N(0, 1)", dict(scale=1.0)),
    ("soft cap 1e4", dict(cap=1e4)),
    ("request 0 alone", dict(qo=[300], kv=[33])),
    ("request 0, qo 40 kv 33", dict(qo=[40], kv=[33])),
    ("request 1 alone", dict(qo=[64], kv=[1031])),
]
# variants that must agree with the reference for a failure of the matrix case to be the defect
CONTROLS = ("fa2 (control)", "request 0 alone", "request 0, qo 40 kv 33", "request 1 alone")


def reference(q, k, v, qo, kv, cap):
    """fp32 output [tokens, HQ, D] and natural-log LSE [tokens, HQ]."""
    outs, lses, q0, k0 = [], [], 0, 0
    for n, m in zip(qo, kv):
        qi, ki, vi = q[q0:q0 + n].float(), k[k0:k0 + m].float(), v[k0:k0 + m].float()
        ki, vi = ki.repeat_interleave(HQ // HKV, 1), vi.repeat_interleave(HQ // HKV, 1)
        s = torch.einsum("qhd,khd->hqk", qi, ki) / D ** 0.5
        s = cap * torch.tanh(s / cap)
        i = torch.arange(n, device=q.device)[:, None] + (m - n)
        j = torch.arange(m, device=q.device)[None, :]
        s = s.masked_fill(j > i, float("-inf"))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, -1).nan_to_num(0.0), vi))
        lses.append(torch.logsumexp(s, -1).transpose(0, 1))
        q0, k0 = q0 + n, k0 + m
    return torch.cat(outs), torch.cat(lses)


def run(backend, layout, page, scale, cap, qo, kv):
    import flashinfer

    dev, h = "cuda", torch.float16
    g = torch.Generator(device=dev).manual_seed(0)
    q = (torch.randn(sum(qo), HQ, D, device=dev, generator=g) * scale).to(h)
    k = (torch.randn(sum(kv), HKV, D, device=dev, generator=g) * scale).to(h)
    v = (torch.randn(sum(kv), HKV, D, device=dev, generator=g) * scale).to(h)
    pages = [(m + page - 1) // page for m in kv]
    pool = sum(pages)
    kc = torch.zeros(pool, page, HKV, D, device=dev, dtype=h)
    vc = torch.zeros_like(kc)
    k0, p0 = 0, 0
    for m, npg in zip(kv, pages):
        pad = npg * page - m
        kc[p0:p0 + npg] = torch.cat([k[k0:k0 + m], k.new_zeros(pad, HKV, D)]).view(npg, page, HKV, D)
        vc[p0:p0 + npg] = torch.cat([v[k0:k0 + m], v.new_zeros(pad, HKV, D)]).view(npg, page, HKV, D)
        k0, p0 = k0 + m, p0 + npg
    if layout == "HND":
        kc, vc = kc.transpose(1, 2).contiguous(), vc.transpose(1, 2).contiguous()
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    cum = lambda xs: [0] + [sum(xs[:i + 1]) for i in range(len(xs))]  # noqa: E731
    w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(torch.zeros(256 * 2**20, dtype=torch.uint8, device=dev),
                                                       layout, backend=backend)
    w.plan(i32(cum(qo)), i32(cum(pages)), i32(list(range(pool))), i32([m - (n - 1) * page for m, n in zip(kv, pages)]),
           HQ, HKV, D, page, causal=True, logits_soft_cap=cap, q_data_type=h, kv_data_type=h)
    out, lse = w.run(q, (kc, vc), return_lse=True, lse_base="ln")
    torch.cuda.synchronize()
    ref_out, ref_lse = reference(q, k, v, qo, kv, cap)
    fin = torch.isfinite(ref_lse)
    bad = fin & ~torch.isfinite(lse)
    lse_err = (lse.float() - ref_lse).abs()[fin & torch.isfinite(lse)]
    rows = sorted({int(r) for r in bad.nonzero()[:, 0].tolist()})
    return {"bad": int(bad.sum()), "rows": rows[:6], "values": sorted({float(x) for x in lse[bad].tolist()})[:3],
            "lse_err": lse_err.max().item() if lse_err.numel() else 0.0,
            "out_err": (out.float() - ref_out).abs().max().item()}


def main():
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    bad = []
    for name, change in VARIANTS:
        cfg = {**BASE, **change}
        try:
            r = run(**cfg)
            ok = r["bad"] == 0
            print(f"{'ok  ' if ok else 'FAIL'} {name:24} LSE infinite where the reference is finite: {r['bad']}"
                  f" (rows {r['rows']}, values {r['values']}); finite LSE max err {r['lse_err']:.4g}, out max err"
                  f" {r['out_err']:.4g}   {cfg}", flush=True)
        except Exception as e:
            ok = False
            print(f"FAIL {name:24} raised {type(e).__name__}: {str(e).splitlines()[0][:160]}   {cfg}", flush=True)
        if not ok:
            bad.append(name)
    print("failing variants: " + ", ".join(bad) if bad else "every variant agrees with the reference")
    if any(name in bad for name in CONTROLS):
        print("a control failed: the set-up is wrong, not the defect")
        return 2
    return 1 if "the matrix case" in bad else 0


if __name__ == "__main__":
    sys.exit(main())
