#!/usr/bin/env python3
"""Probe: fa2 prefill, rows a causal mask leaves without keys: what the wrong rows depend on.

probe_flashinfer_fa2_d256_causal.py (2026-12-03-h200-3/probe_flashinfer_fa2_d256_causal.txt) found fa2 wrong on one paged request of 300 query rows
over 128 keys, causal, at head dims 128, 192/128 and 256, bf16 and fp16, paged and ragged, on 0.7.2.post1 and
0.7.4: the rows without a key get a non-zero output and a finite LSE, and the first rows with a key (those of
the query tile where keys begin) are wrong; 300 rows over 1 key, 300 over 300, and no causal mask are right.
This probe sweeps query and key lengths of one request and, for each, plans a fresh fa2 wrapper four ways:
split-KV as the scheduler picks it or disabled (plan()'s disable_split_kv), the float workspace zeros or
filled with NaN bytes before plan() (an output that changes with it reads workspace nobody wrote).

    python3 probe_flashinfer_fa2_split_kv_masked_rows.py

Prints a table per layout: for each (qo, kv) and way, `K/W`: K rows without a key whose output is not 0 or
whose LSE is not -inf, W rows with keys whose output is off by > 0.1 or LSE by > 0.05 ('.' when both are 0).
Exit 1 when the scheduler's split shows wrong rows that disable_split_kv does not; 0 when no way shows any;
2 otherwise (wrong rows without the split too: the split is not the cause, or a call raised).

Only torch and flashinfer; no attncheck code. The reference: FlashInfer's documented causal rule (row i of
qo_len rows over kv_len keys sees key j when j <= i + kv_len - qo_len), in fp32; a row without a key is 0 with
LSE -inf; LSE in natural log.
"""
import sys

import torch

PAIRS = [(qo, kv) for qo in (64, 100, 128, 129, 200, 300, 1000) for kv in (1, 7, 16, 33, 64, 100, 128, 200, 1031)
         if qo > kv]
LAYOUTS = [  # (name, heads qo/kv, head dim, api)
    ("paged NHD page 16, 16/2 heads, d128", 16, 2, 128, "paged"),
    ("ragged NHD, 8/8 heads, d128", 8, 8, 128, "ragged"),
]
WAYS = [("split, ws 0", False, 0.0), ("split, ws NaN", False, float("nan")),
        ("no split, ws 0", True, 0.0), ("no split, ws NaN", True, float("nan"))]
OUT_TOL, LSE_TOL, PAGE = 0.1, 0.05, 16


def reference(q, k, v, qo, kv, grp, d):
    ki, vi = k.float().repeat_interleave(grp, 1), v.float().repeat_interleave(grp, 1)
    s = torch.einsum("qhd,khd->hqk", q.float(), ki) / d ** 0.5
    i = torch.arange(qo, device=q.device)[:, None] + (kv - qo)
    s = s.masked_fill(torch.arange(kv, device=q.device)[None, :] > i, float("-inf"))
    return torch.einsum("hqk,khd->qhd", torch.softmax(s, -1).nan_to_num(0.0), vi), torch.logsumexp(s, -1).T


def run(api, hq, hkv, d, qo, kv, no_split, fill, q, k, v):
    import flashinfer

    dev, dt = "cuda", torch.bfloat16
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    ws = torch.empty(128 * 2**20, dtype=torch.uint8, device=dev)
    ws.view(torch.float32).fill_(fill)
    kw = dict(causal=True, q_data_type=dt, kv_data_type=dt, disable_split_kv=no_split)
    if api == "ragged":
        w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", backend="fa2")
        w.plan(i32([0, qo]), i32([0, kv]), hq, hkv, d, **kw)
        return w.run(q, k, v, return_lse=True, lse_base="ln")
    pages = (kv + PAGE - 1) // PAGE
    kc = torch.zeros(pages * PAGE, hkv, d, device=dev, dtype=dt)
    vc = torch.zeros_like(kc)
    kc[:kv], vc[:kv] = k, v
    w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", backend="fa2")
    w.plan(i32([0, qo]), i32([0, pages]), i32(list(range(pages))), i32([kv - (pages - 1) * PAGE]), hq, hkv, d,
           PAGE, **kw)
    return w.run(q, (kc.view(pages, PAGE, hkv, d), vc.view(pages, PAGE, hkv, d)), return_lse=True, lse_base="ln")


def wrong_rows(out, lse, ref_out, ref_lse):
    keyless = ~torch.isfinite(ref_lse).any(-1)
    err = (out.float() - ref_out).abs().amax(-1).nan_to_num(float("inf"))
    lse = lse.float()
    lse_err = torch.where(torch.isfinite(ref_lse), (lse - ref_lse).abs(), torch.zeros_like(ref_lse))
    lse_err = lse_err.nan_to_num(float("inf")).amax(-1)
    k_bad = keyless & ((err > 0).any(-1) | torch.isfinite(lse).any(-1))
    w_bad = ~keyless & ((err > OUT_TOL).any(-1) | (lse_err > LSE_TOL))
    return int(k_bad.sum()), int(w_bad.sum())


def main():
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print("fa2, causal, bf16, one request; cells K/W: K keyless rows wrong, W rows with keys wrong ('.' = 0/0)")
    split_only, without_split, raised = 0, 0, 0
    for name, hq, hkv, d, api in LAYOUTS:
        print(f"\n{name} ({api})")
        print(f"{'qo':>5} {'kv':>5} " + " ".join(f"{w:>17}" for w, _, _ in WAYS))
        for qo, kv in PAIRS:
            g = torch.Generator(device="cuda").manual_seed(qo * 10007 + kv)
            q = torch.randn(qo, hq, d, device="cuda", generator=g).to(torch.bfloat16)
            k = torch.randn(kv, hkv, d, device="cuda", generator=g).to(torch.bfloat16)
            v = torch.randn(kv, hkv, d, device="cuda", generator=g).to(torch.bfloat16)
            ref = reference(q, k, v, qo, kv, hq // hkv, d)
            cells = []
            for _, no_split, fill in WAYS:
                try:
                    out, lse = run(api, hq, hkv, d, qo, kv, no_split, fill, q, k, v)
                    torch.cuda.synchronize()
                    cells.append(wrong_rows(out, lse, *ref))
                except Exception as ex:  # noqa: BLE001 - a raise is an observation
                    cells.append(None)
                    raised += 1
                    print(f"  raised: {type(ex).__name__}: {str(ex).splitlines()[0][:120]}")
            text = ["raised" if c is None else "." if c == (0, 0) else f"{c[0]}/{c[1]}" for c in cells]
            print(f"{qo:>5} {kv:>5} " + " ".join(f"{t:>17}" for t in text))
            split_bad = any(c and c != (0, 0) for c in cells[:2])
            nosplit_bad = any(c and c != (0, 0) for c in cells[2:])
            split_only += split_bad and not nosplit_bad
            without_split += nosplit_bad
    print(f"\npairs wrong only with the split: {split_only}; wrong without it: {without_split}; raised: {raised}")
    if raised or without_split:
        return 2
    return 1 if split_only else 0


if __name__ == "__main__":
    if sys.argv[1:]:
        print(f"usage: {sys.argv[0]}", file=sys.stderr)
        sys.exit(2)
    sys.exit(main())
