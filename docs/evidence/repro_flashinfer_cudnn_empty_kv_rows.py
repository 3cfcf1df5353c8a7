#!/usr/bin/env python3
"""FlashInfer's cuDNN backend, paged and ragged prefill and paged decode: a request with query rows and no keys.

The convention every other FlashInfer backend keeps (and FlashInfer's own fa2/fa3 kernels on the same
batches, through attncheck's quick matrix on the H200): a row that attends to nothing is written as 0
with LSE -inf. Seen through attncheck on the H200 (2026-12-01, fourth sitting, `--backend cudnn`): the
cuDNN backend leaves such rows unwritten (the output buffer's previous contents stay, LSE NaN) in every
batch that mixes them with a request that has keys, and raises CUDNN_STATUS_BAD_PARAM_NULL_POINTER when
no request has keys. This script runs those batches on out=/lse= buffers filled with NaN, against an
fp32 reference, with each batch's non-empty request alone as the control. The decode batches are the
paged decode wrapper's (seen 2026-12-03 on 0.7.4: one request without keys, window 64, HND page 1).

    python3 repro_flashinfer_cudnn_empty_kv_rows.py [unwritten|raises]   # exit 1 when the defect shows

`unwritten` runs the mixed batches, `raises` the batches with no keys at all (the ledger's two
entries), each with every control; neither: every batch. Exit 2 when a control fails.

Only torch and flashinfer; no attncheck code.
"""
import math
import sys

import torch

D = 128
# (name, layout, page size, q heads, kv heads, qo_lens, kv_lens, causal, kv layout, window_left): the matrix's
# failing batches
BATCHES = [
    ("paged p4, kv [0, 9]", "paged", 4, 4, 2, [3, 2], [0, 9], True, "NHD", -1),
    ("paged p4, request 1 alone (control)", "paged", 4, 4, 2, [2], [9], True, "NHD", -1),
    ("ragged, kv [7, 0, 0]", "ragged", 1, 4, 2, [0, 5, 0], [7, 0, 0], False, "NHD", -1),
    ("ragged, request 0 with rows (control)", "ragged", 1, 4, 2, [5], [7], False, "NHD", -1),
    ("paged p1, every kv empty", "paged", 1, 4, 1, [300, 1, 127], [0, 0, 0], True, "NHD", -1),
    ("decode HND p1 window 64, kv [0]", "decode", 1, 64, 8, [1], [0], False, "HND", 64),
    ("decode HND p1, kv [0]", "decode", 1, 64, 8, [1], [0], False, "HND", -1),
    ("decode NHD p4, kv [0, 0]", "decode", 4, 4, 2, [1, 1], [0, 0], False, "NHD", -1),
    ("decode HND p1, kv [0, 9]", "decode", 1, 64, 8, [1, 1], [0, 9], False, "HND", -1),
    ("decode HND p1 window 64, request 1 alone (control)", "decode", 1, 64, 8, [1], [9], False, "HND", 64),
    ("decode NHD p4, kv [9] (control)", "decode", 4, 4, 2, [1], [9], False, "NHD", -1),
]


def reference(q, k, v, qo, kv, hq, hkv, causal, window):
    """fp32 attention per request, bottom-right causal and window; no keys: out 0 and LSE (natural) -inf."""
    outs, lses, q0, k0 = [], [], 0, 0
    for n, m in zip(qo, kv):
        if m == 0:
            outs.append(torch.zeros(n, hq, D, device=q.device))
            lses.append(torch.full((n, hq), -math.inf, device=q.device))
            q0 += n
            continue
        qi = q[q0:q0 + n].float()
        ki = k[k0:k0 + m].float().repeat_interleave(hq // hkv, 1)
        vi = v[k0:k0 + m].float().repeat_interleave(hq // hkv, 1)
        s = torch.einsum("qhd,khd->hqk", qi, ki) / D ** 0.5
        i = torch.arange(n, device=q.device)[:, None] + (m - n)
        j = torch.arange(m, device=q.device)[None, :]
        if causal:
            s = s.masked_fill(j > i, -math.inf)
        if window >= 0:
            s = s.masked_fill(j < i - window, -math.inf)
        lses.append(torch.logsumexp(s, -1).transpose(0, 1))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, -1).nan_to_num(0.0), vi))
        q0, k0 = q0 + n, k0 + m
    return torch.cat(outs), torch.cat(lses)


def one(flashinfer, layout, page, hq, hkv, qo, kv, causal, kv_layout, window):
    dev, bf = "cuda", torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(sum(qo), hq, D, device=dev, generator=g).to(bf)
    k = torch.randn(sum(kv), hkv, D, device=dev, generator=g).to(bf)
    v = torch.randn(sum(kv), hkv, D, device=dev, generator=g).to(bf)
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    cum = lambda xs: i32([sum(xs[:j]) for j in range(len(xs) + 1)])  # noqa: E731
    ws = torch.zeros(256 * 2**20, dtype=torch.uint8, device=dev)
    if layout in ("paged", "decode"):
        pages = [(m + page - 1) // page for m in kv]
        kc = torch.zeros(max(sum(pages), 1), page, hkv, D, device=dev, dtype=bf)
        vc = torch.zeros_like(kc)
        p0, t0 = 0, 0
        for m, np_ in zip(kv, pages):
            for t in range(m):
                kc[p0 + t // page, t % page], vc[p0 + t // page, t % page] = k[t0 + t], v[t0 + t]
            p0, t0 = p0 + np_, t0 + m
        if kv_layout == "HND":  # [pages, kv heads, page, D]
            kc, vc = kc.transpose(1, 2).contiguous(), vc.transpose(1, 2).contiguous()
        last = i32([m - (p - 1) * page if p else 0 for m, p in zip(kv, pages)])
        paging = (cum(pages), i32(list(range(sum(pages)))), last)
        if layout == "decode":
            w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, kv_layout, backend="cudnn")
            w.plan(*paging, hq, hkv, D, page, window_left=window, q_data_type=bf, kv_data_type=bf)
        else:
            w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws, kv_layout, backend="cudnn")
            w.plan(cum(qo), *paging, hq, hkv, D, page, causal=causal, window_left=window,
                   q_data_type=bf, kv_data_type=bf)
        args = (q, (kc, vc))
    else:
        w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(ws, kv_layout, backend="cudnn")
        w.plan(cum(qo), cum(kv), hq, hkv, D, causal=causal, window_left=window, q_data_type=bf, kv_data_type=bf)
        args = (q, k, v)
    out = torch.full_like(q, math.nan)
    lse = torch.full((sum(qo), hq), math.nan, device=dev, dtype=torch.float32)
    w.run(*args, out=out, lse=lse, return_lse=True)
    torch.cuda.synchronize()
    ref_out, ref_lse = reference(q, k, v, qo, kv, hq, hkv, causal, window)
    rows = torch.tensor([m == 0 for n, m in zip(qo, kv) for _ in range(n)], device=dev)
    written = ~out.isnan().any(-1).any(-1)
    err = (out.float() - ref_out)[written & ~rows].abs().max().item() if (written & ~rows).any() else 0.0
    return {"rows without keys": int(rows.sum()), "of them unwritten": int((rows & ~written).sum()),
            "LSE NaN there": int(lse[rows].isnan().any(-1).sum()),
            "of them written not 0": int((rows & written & (out != 0).flatten(1).any(-1)).sum()),
            "max err elsewhere": round(err, 4)}


def main(defect=None):
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}")
    bad = []
    for name, *batch in BATCHES:
        kv = batch[5]
        if defect is not None and "control" not in name and (defect == "raises") != (not any(kv)):
            continue
        try:
            r = one(flashinfer, *batch)
            wrong = (r["of them unwritten"] > 0 or r["LSE NaN there"] > 0 or r["of them written not 0"] > 0
                     or r["max err elsewhere"] > 0.05)
        except Exception as e:  # noqa: BLE001 - the raise is the observation
            r, wrong = f"raised {type(e).__name__}: {str(e).splitlines()[0][:200]}", True
        print(f"{'FAIL' if wrong else 'ok  '} {name:40s} {r}", flush=True)
        if wrong and "control" not in name:
            bad.append(name)
        elif wrong:
            print("     the control failed: the reference or the set-up is wrong, not the defect")
            return 2
    print("DEFECT REPRODUCED: " + "; ".join(bad) if bad else "not reproduced")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["unwritten"], ["raises"]):
        print(f"usage: {sys.argv[0]} [unwritten|raises]", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
