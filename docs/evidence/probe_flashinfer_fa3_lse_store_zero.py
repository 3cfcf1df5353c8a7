#!/usr/bin/env python3
"""Probe: fa3 (SM90) prefill, bf16, NO soft cap: -inf LSE on rows that see keys, after a tile that sees none.

The ledger's flashinfer-fa3-softcap-lse-after-empty-rows was seen with fp16 and a soft cap (probe_flashinfer_fa3_
softcap_lse.py: qo [300, 64] over kv [33, 1031], causal, 33 LSE entries -inf at rows 267-299). Its probable
cause is in neither: the fa3 epilogue's store_zero (include/flashinfer/attention/hopper/epilogue.cuh:247-251 in
0.7.2.post1 and 0.7.4), called for a query tile with no key to attend to (prefill_sm90.cuh:243-247), lets every
MMA thread with thread_idx < qo_len - tile * CTA_Q write gLSE(thread_idx) = -inf. There are 2 * CTA_Q MMA
threads (256 at CTA_Q 128), so it also writes -inf over the next tile's rows; the rows of that tile that see
keys lose their LSE whenever the empty tile's store lands after theirs. With qo 300 over kv 33, tile 1 (rows
128-255) sees nothing and reaches rows 256-299, of which 267-299 see keys: the 33 rows seen.

This probe runs fa3 in bf16 without a soft cap on batches whose empty tile is followed by rows with keys, each a
few times (which store lands last is a race), counts LSE entries that are -inf where the fp32 reference is
finite, and says whether they are exactly rows the store_zero overreach can reach. The output is compared too.

    python3 probe_flashinfer_fa3_lse_store_zero.py [--with-softcap]   # exit 1 when a judged batch shows it

Exit 1 when a judged variant (fa3, bf16, no soft cap) shows such an LSE; 0 when none does; 2 when a control
fails (fa2 on the matrix batch, or fa3 on a request of one query tile, which never calls store_zero: the set-up
is wrong, not the defect) or a judged variant raises instead. --with-softcap adds the ledger's fp16 soft-cap batch for comparison (printed, not
judged; it builds one more fa3 module).

Only torch and flashinfer; no attncheck code. The reference is FlashInfer's documented causal rule (row i of
qo_len rows over kv_len keys sees key j when j <= i + kv_len - qo_len), in fp32; LSE in natural log.
"""
import sys

import torch

HQ, HKV, D = 64, 8, 128
CTA_Q = 128  # fa3's query tile at head dim 128 (prefill_sm90.cuh getCTATileSize / the paged dispatch)
REPEATS = 3
BASE = dict(backend="fa3", api="paged", layout="HND", page=1, dtype="bf16", cap=0.0, qo=[300, 64], kv=[33, 1031])
# (name, change, role): role "judged" decides exit 1, "control" must show nothing (else exit 2), "shown" is printed
VARIANTS = [
    ("matrix batch, bf16", {}, "judged"),
    ("NHD, page 16", dict(layout="NHD", page=16), "judged"),
    ("qo [200, 64]", dict(qo=[200, 64]), "judged"),
    ("qo [400, 64]", dict(qo=[400, 64]), "judged"),
    ("ragged", dict(api="ragged", layout="NHD"), "shown"),
    ("request 0 alone", dict(qo=[300], kv=[33]), "shown"),
    ("fa2 (control)", dict(backend="fa2"), "control"),
    ("one tile: qo [100] (control)", dict(qo=[100], kv=[33]), "control"),
]
SOFTCAP = ("ledger batch, fp16, soft cap 50", dict(dtype="fp16", cap=50.0, qo=[300, 64], kv=[33, 1031]), "shown")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def reachable(qo, kv):
    """Token rows store_zero's overreach can hit and that see keys: for each empty tile t of a request, the rows of
    tile t + 1 (its threads CTA_Q .. 2 * CTA_Q - 1, within the request) with a key to attend to."""
    rows, start = set(), 0
    for n, m in zip(qo, kv):
        for t in range((n + CTA_Q - 1) // CTA_Q):
            if min(n, (t + 1) * CTA_Q) - 1 + m - n < 0:  # the tile's last row sees nothing: the whole tile is empty
                rows.update(start + r for r in range((t + 1) * CTA_Q, min(n, (t + 2) * CTA_Q)) if r + m - n >= 0)
        start += n
    return rows


def reference(q, k, v, qo, kv, cap):
    outs, lses, q0, k0 = [], [], 0, 0
    for n, m in zip(qo, kv):
        qi, ki, vi = q[q0:q0 + n].float(), k[k0:k0 + m].float(), v[k0:k0 + m].float()
        ki, vi = ki.repeat_interleave(HQ // HKV, 1), vi.repeat_interleave(HQ // HKV, 1)
        s = torch.einsum("qhd,khd->hqk", qi, ki) / D ** 0.5
        if cap > 0:
            s = cap * torch.tanh(s / cap)
        i = torch.arange(n, device=q.device)[:, None] + (m - n)
        j = torch.arange(m, device=q.device)[None, :]
        s = s.masked_fill(j > i, float("-inf"))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, -1).nan_to_num(0.0), vi))
        lses.append(torch.logsumexp(s, -1).transpose(0, 1))
        q0, k0 = q0 + n, k0 + m
    return torch.cat(outs), torch.cat(lses)


def run(backend, api, layout, page, dtype, cap, qo, kv, seed):
    """(rows with -inf LSE where the reference is finite, max |out - ref|) for one fresh wrapper's plan and run."""
    import flashinfer

    dev, dt = "cuda", DTYPES[dtype]
    g = torch.Generator(device=dev).manual_seed(seed)
    q = torch.randn(sum(qo), HQ, D, device=dev, generator=g).to(dt)
    k = torch.randn(sum(kv), HKV, D, device=dev, generator=g).to(dt)
    v = torch.randn(sum(kv), HKV, D, device=dev, generator=g).to(dt)
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    cum = lambda xs: [0] + [sum(xs[:i + 1]) for i in range(len(xs))]  # noqa: E731
    ws = torch.zeros(256 * 2**20, dtype=torch.uint8, device=dev)
    extra = dict(causal=True, q_data_type=dt, kv_data_type=dt)
    if cap > 0:
        extra["logits_soft_cap"] = cap
    if api == "ragged":
        w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(ws, layout, backend=backend)
        w.plan(i32(cum(qo)), i32(cum(kv)), HQ, HKV, D, **extra)
        out, lse = w.run(q, k, v, return_lse=True, lse_base="ln")
    else:
        pages = [(m + page - 1) // page for m in kv]
        kc = torch.zeros(sum(pages), page, HKV, D, device=dev, dtype=dt)
        vc = torch.zeros_like(kc)
        k0, p0 = 0, 0
        for m, npg in zip(kv, pages):
            pad = npg * page - m
            kc[p0:p0 + npg] = torch.cat([k[k0:k0 + m], k.new_zeros(pad, HKV, D)]).view(npg, page, HKV, D)
            vc[p0:p0 + npg] = torch.cat([v[k0:k0 + m], v.new_zeros(pad, HKV, D)]).view(npg, page, HKV, D)
            k0, p0 = k0 + m, p0 + npg
        if layout == "HND":
            kc, vc = kc.transpose(1, 2).contiguous(), vc.transpose(1, 2).contiguous()
        w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws, layout, backend=backend)
        w.plan(i32(cum(qo)), i32(cum(pages)), i32(list(range(sum(pages)))),
               i32([m - (n - 1) * page for m, n in zip(kv, pages)]), HQ, HKV, D, page, **extra)
        out, lse = w.run(q, (kc, vc), return_lse=True, lse_base="ln")
    torch.cuda.synchronize()
    ref_out, ref_lse = reference(q, k, v, qo, kv, cap)
    bad = torch.isfinite(ref_lse) & ~torch.isfinite(lse)
    return sorted({int(r) for r in bad.nonzero()[:, 0].tolist()}), int(bad.sum()), (out.float() - ref_out).abs().max().item()


def span(rows):
    return f"{rows[0]}-{rows[-1]}" if rows else "-"


def main(with_softcap):
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"fa3 prefill, causal, {HQ}/{HKV} heads, head dim {D}, LSE asked for; {REPEATS} runs per variant")
    print(f"{'variant':34} {'role':8} {'runs shown':>10} {'entries':>8} {'rows':>9}  {'as store_zero predicts':22} out err")
    shown, controls_failed, broken = [], [], []
    for name, change, role in VARIANTS + ([SOFTCAP] if with_softcap else []):
        cfg = {**BASE, **change}
        predicted = reachable(cfg["qo"], cfg["kv"])
        hits, entries, rows, err, raised = 0, 0, [], 0.0, None
        for seed in range(REPEATS):
            try:
                r, n, e = run(**cfg, seed=seed)
            except Exception as ex:  # noqa: BLE001 - a raise is an observation of the variant
                raised = f"{type(ex).__name__}: {str(ex).splitlines()[0][:120]}"
                break
            hits, entries, rows, err = hits + bool(r), max(entries, n), sorted(set(rows) | set(r)), max(err, e)
        if raised:
            print(f"{name:34} {role:8} raised {raised}")
            (controls_failed if role == "control" else broken if role == "judged" else []).append(name)
            continue
        fits = "-" if not rows else "yes" if set(rows) <= predicted else "NO: rows outside its reach"
        print(f"{name:34} {role:8} {hits:>6}/{REPEATS:<3} {entries:>8} {span(rows):>9}  {fits:22} {err:.4f}")
        if hits and role == "control":
            controls_failed.append(name)
        elif hits and role == "judged":
            shown.append(name)
    if controls_failed:
        print("a control failed: " + ", ".join(controls_failed) + " (the set-up is wrong, not the defect)")
        return 2
    if shown:
        print("DEFECT REPRODUCED without a soft cap, in bf16: " + ", ".join(shown))
        return 1
    if broken:
        print("could not judge: " + ", ".join(broken) + " raised")
        return 2
    print("not reproduced: no judged variant lost a finite LSE")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["--with-softcap"]):
        print(f"usage: {sys.argv[0]} [--with-softcap]", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:] == ["--with-softcap"]))
