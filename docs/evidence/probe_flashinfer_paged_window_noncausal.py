#!/usr/bin/env python3
"""Probe: FlashInfer fa2 paged prefill, sliding window without causal, against a plain fp32 reference.

Open discrepancy (7) of docs/evidence/2026-12-01-flashinfer-h200-session.md: the matrix case
paged, HND, page size 5, 32/8 heads, head dim 128, bf16, window_left 64, NOT causal, qo [300, 127,
1] over kv [4099, 33, 4099] gives out error 0.549 against a bound of 0.028 on fa2 and fa2+graph,
on a fresh wrapper too, while every other window case of the matrix passes. This script rebuilds
that batch with plain flashinfer calls and changes one thing at a time (layout, page size, causal,
window, the batch), so the variant that fails says where the defect lies; the reference is written
here from FlashInfer's documented mask (a key j of a request with qo_len rows and kv_len keys is
visible to row i when j >= i + kv_len - qo_len - window_left, and, if causal, j <= i + kv_len - qo_len).

    python3 probe_flashinfer_paged_window_noncausal.py      # exit 1 when the matrix case fails

Exit 1 when the matrix case fails and the controls pass: the same plan with disable_split_kv=True (the
library disagreeing with itself: one attention, two answers, by a scheduling flag), and the variants that
keep within the split's budget (causal, no window, qo 17); 2 when a control fails (the set-up is wrong, not
the defect).

Only torch and flashinfer; no attncheck code.
"""
import sys

import torch

HQ, HKV, D = 32, 8, 128
BASE = dict(layout="HND", page=5, causal=False, window=64, qo=[300, 127, 1], kv=[4099, 33, 4099], split=True)
VARIANTS = [
    ("the matrix case", {}),
    ("disable_split_kv=True", dict(split=False)),
    ("NHD", dict(layout="NHD")),
    ("page size 16", dict(page=16)),
    ("causal", dict(causal=True)),
    ("no window", dict(window=-1)),
    ("request 0 alone", dict(qo=[300], kv=[4099])),
    ("request 0 alone, NHD", dict(qo=[300], kv=[4099], layout="NHD")),
    ("request 0, kv 1031", dict(qo=[300], kv=[1031])),
    ("request 0, qo 17", dict(qo=[17], kv=[4099])),
]
# variants that must agree with the reference for a failure of the matrix case to be the defect
CONTROLS = ("disable_split_kv=True", "causal", "no window", "request 0, qo 17")


def reference(q, k, v, qo, kv, causal, window):
    """fp32 attention per request over contiguous K/V [tokens, HKV, D], FlashInfer's mask rules."""
    outs, q0, k0 = [], 0, 0
    for n, m in zip(qo, kv):
        qi, ki, vi = q[q0:q0 + n].float(), k[k0:k0 + m].float(), v[k0:k0 + m].float()
        ki, vi = ki.repeat_interleave(HQ // HKV, 1), vi.repeat_interleave(HQ // HKV, 1)
        s = torch.einsum("qhd,khd->hqk", qi, ki) / D ** 0.5
        i = torch.arange(n, device=q.device)[:, None] + (m - n)
        j = torch.arange(m, device=q.device)[None, :]
        keep = torch.ones(n, m, dtype=torch.bool, device=q.device)
        if causal:
            keep &= j <= i
        if window >= 0:
            keep &= j >= i - window
        s = s.masked_fill(~keep, float("-inf"))
        p = torch.softmax(s, -1).nan_to_num(0.0)
        outs.append(torch.einsum("hqk,khd->qhd", p, vi))
        q0, k0 = q0 + n, k0 + m
    return torch.cat(outs)


def run(layout, page, causal, window, qo, kv, split):
    import flashinfer

    dev, bf = "cuda", torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(sum(qo), HQ, D, device=dev, dtype=bf, generator=g)
    k = torch.randn(sum(kv), HKV, D, device=dev, dtype=bf, generator=g)
    v = torch.randn(sum(kv), HKV, D, device=dev, dtype=bf, generator=g)
    pages = [(m + page - 1) // page for m in kv]
    pool = sum(pages)
    kc = torch.zeros(pool, page, HKV, D, device=dev, dtype=bf)  # NHD pages; HND is its transpose below
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
                                                       layout, backend="fa2")
    w.plan(i32(cum(qo)), i32(cum(pages)), i32(list(range(pool))), i32([m - (n - 1) * page for m, n in zip(kv, pages)]),
           HQ, HKV, D, page, causal=causal, window_left=window, q_data_type=bf, kv_data_type=bf,
           disable_split_kv=not split)
    out = w.run(q, (kc, vc))
    torch.cuda.synchronize()
    ref = reference(q, k, v, qo, kv, causal, window)
    bf_ref = reference(q, k, v, qo, kv, causal, window).to(bf).float()  # what bf16 rounding alone costs
    err = (out.float() - ref).abs()
    return err.max().item(), (bf_ref - ref).abs().max().item(), [int(x) for x in divmod(err.argmax().item(), HQ * D)]


def main():
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    bad = []
    for name, change in VARIANTS:
        cfg = {**BASE, **change}
        try:
            err, rounding, (row, _) = run(**cfg)
            ok = err <= 0.05
            print(f"{'ok  ' if ok else 'FAIL'} {name:24} max |out - ref| = {err:.4f} (bf16 rounding {rounding:.4f}),"
                  f" worst row {row}   {cfg}", flush=True)
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
