#!/usr/bin/env python3
"""Probe: fa2 prefill at head dim 256 (and 192/128), bf16, causal, 300 query rows: wrong rows.

The standard matrix on FlashInfer 0.7.4 (docs/evidence/2026-12-03-h200-2/) failed fa2 on five bf16 cases outside
the ledger, head dim 256 or (192, 128), causal or custom-masked, each with a 300-row or long request; the simplest
is one paged request of 300 query rows over 128 keys, 16/2 heads, page 5 HND: output 122x its bound at row 172
(the first row that sees a key) and all 172 rows without a key with a finite LSE. This probe asks what the defect
depends on: each variant changes one thing of that case, runs a fresh wrapper twice on the same inputs, and prints
per request the rows whose output is off (|out - ref| > 0.1, bf16 rounding is ~0.01 on these inputs), the rows
without a key whose output is not 0 or whose LSE is not -inf, and the rows with keys whose LSE is off by > 0.05.

    python3 probe_flashinfer_fa2_d256_causal.py

Exit 1 when the matrix case shows wrong rows on fa2, 0 when it does not; 2 when the control (the same case at
head dim 128, which passes the matrix) shows them too or a variant raises (the set-up, not the defect).

Only torch and flashinfer; no attncheck code. The reference is FlashInfer's documented causal rule (row i of
qo_len rows over kv_len keys sees key j when j <= i + kv_len - qo_len), in fp32; a row without a key is 0 with
LSE -inf; LSE in natural log.
"""
import math
import sys

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
BASE = dict(
    backend="fa2", api="paged", layout="HND", page=5, hq=16, hkv=2, dqk=256, dvo=256, dtype="bf16", causal=True,
    qo=[300], kv=[128],
)
# (name, change, role): "judged" decides exit 1, "control" must be clean (else exit 2), "shown" is printed
VARIANTS = [
    ("matrix case: paged HND p5 16/2 d256", {}, "judged"),
    ("head dim 128 (control)", dict(dqk=128, dvo=128), "control"),
    ("NHD page 16", dict(layout="NHD", page=16), "shown"),
    ("8/8 heads", dict(hq=8, hkv=8), "shown"),
    ("fp16", dict(dtype="fp16"), "shown"),
    ("not causal", dict(causal=False), "shown"),
    ("qo 128 over kv 128", dict(qo=[128]), "shown"),
    ("qo 300 over kv 300", dict(kv=[300]), "shown"),
    ("qo 200 over kv 128", dict(qo=[200]), "shown"),
    ("qo 300 over kv 1", dict(kv=[1]), "shown"),
    ("ragged NHD", dict(api="ragged", layout="NHD"), "shown"),
    ("single prefill NHD", dict(api="single", layout="NHD"), "shown"),
    ("ragged 8/8 d192/128, 300/300 17/7 300/128", dict(
        api="ragged", layout="NHD", hq=8, hkv=8, dqk=192, dvo=128, qo=[300, 17, 300], kv=[300, 7, 128]), "shown"),
    ("ragged 8/8 d192/128, 300/300 alone", dict(
        api="ragged", layout="NHD", hq=8, hkv=8, dqk=192, dvo=128, qo=[300], kv=[300]), "shown"),
]
OUT_TOL, LSE_TOL = 0.1, 0.05


def make_inputs(cfg, seed):
    dev, dt = "cuda", DTYPES[cfg["dtype"]]
    g = torch.Generator(device=dev).manual_seed(seed)
    nq, nk = sum(cfg["qo"]), sum(cfg["kv"])
    q = torch.randn(nq, cfg["hq"], cfg["dqk"], device=dev, generator=g).to(dt)
    k = torch.randn(nk, cfg["hkv"], cfg["dqk"], device=dev, generator=g).to(dt)
    v = torch.randn(nk, cfg["hkv"], cfg["dvo"], device=dev, generator=g).to(dt)
    return q, k, v


def reference(cfg, q, k, v):
    outs, lses, q0, k0, grp = [], [], 0, 0, cfg["hq"] // cfg["hkv"]
    for n, m in zip(cfg["qo"], cfg["kv"]):
        qi, ki, vi = q[q0:q0 + n].float(), k[k0:k0 + m].float(), v[k0:k0 + m].float()
        ki, vi = ki.repeat_interleave(grp, 1), vi.repeat_interleave(grp, 1)
        s = torch.einsum("qhd,khd->hqk", qi, ki) / cfg["dqk"] ** 0.5
        if cfg["causal"]:
            i = torch.arange(n, device=q.device)[:, None] + (m - n)
            s = s.masked_fill(torch.arange(m, device=q.device)[None, :] > i, float("-inf"))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, -1).nan_to_num(0.0), vi))
        lses.append(torch.logsumexp(s, -1).transpose(0, 1))
        q0, k0 = q0 + n, k0 + m
    return torch.cat(outs), torch.cat(lses)


def run(cfg, q, k, v):
    import flashinfer

    dev, dt = "cuda", DTYPES[cfg["dtype"]]
    qo, kv, hq, hkv, dqk, dvo = cfg["qo"], cfg["kv"], cfg["hq"], cfg["hkv"], cfg["dqk"], cfg["dvo"]
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    cum = lambda xs: [0] + [sum(xs[:i + 1]) for i in range(len(xs))]  # noqa: E731
    ws = torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev)
    if cfg["api"] == "single":  # its LSE is in base 2 (no lse_base argument)
        out, lse = flashinfer.single_prefill_with_kv_cache(
            q, k, v, causal=cfg["causal"], kv_layout="NHD", backend=cfg["backend"], return_lse=True)
        return out, lse * math.log(2)
    extra = dict(causal=cfg["causal"], q_data_type=dt, kv_data_type=dt, head_dim_vo=dvo)
    if cfg["api"] == "ragged":
        w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(ws, cfg["layout"], backend=cfg["backend"])
        w.plan(i32(cum(qo)), i32(cum(kv)), hq, hkv, dqk, **extra)
        return w.run(q, k, v, return_lse=True, lse_base="ln")
    page = cfg["page"]
    pages = [(m + page - 1) // page for m in kv]
    kc = torch.zeros(sum(pages), page, hkv, dqk, device=dev, dtype=dt)
    vc = torch.zeros(sum(pages), page, hkv, dvo, device=dev, dtype=dt)
    k0, p0 = 0, 0
    for m, npg in zip(kv, pages):
        kc.view(-1, hkv, dqk)[p0 * page:p0 * page + m] = k[k0:k0 + m]
        vc.view(-1, hkv, dvo)[p0 * page:p0 * page + m] = v[k0:k0 + m]
        k0, p0 = k0 + m, p0 + npg
    if cfg["layout"] == "HND":
        kc, vc = kc.transpose(1, 2).contiguous(), vc.transpose(1, 2).contiguous()
    w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws, cfg["layout"], backend=cfg["backend"])
    w.plan(i32(cum(qo)), i32(cum(pages)), i32(list(range(sum(pages)))),
           i32([m - (n - 1) * page if n else 0 for m, n in zip(kv, pages)]), hq, hkv, dqk, page, **extra)
    return w.run(q, (kc, vc), return_lse=True, lse_base="ln")


def rows_text(rows):
    """Row indices (within a request) as ranges: '172-180,200'."""
    out, rows = [], sorted(rows)
    for r in rows:
        if out and r == out[-1][1] + 1:
            out[-1][1] = r
        else:
            out.append([r, r])
    text = ",".join(f"{a}-{b}" if a != b else f"{a}" for a, b in out)
    return text if len(text) < 60 else text[:57] + "..."


def judge(cfg, out, lse, ref_out, ref_lse):
    """Per request: (rows with keys whose output is off, rows without keys not 0 / not -inf, LSE-off rows, max err)."""
    lines, wrong, q0 = [], 0, 0
    err = (out.float() - ref_out).abs().amax(-1)  # [rows, heads]
    for n, m in zip(cfg["qo"], cfg["kv"]):
        e, lo, lr = err[q0:q0 + n], lse[q0:q0 + n].float(), ref_lse[q0:q0 + n]
        keyless = ~torch.isfinite(lr).any(-1)
        bad_out = [i for i in range(n) if not keyless[i] and e[i].max() > OUT_TOL]
        bad_empty = [i for i in range(n) if keyless[i] and (e[i].max() > 0 or torch.isfinite(lo[i]).any())]
        lse_err = torch.where(torch.isfinite(lr), (lo - lr).abs(), torch.zeros_like(lr)).nan_to_num(float("inf"))
        bad_lse = [i for i in range(n) if not keyless[i] and lse_err[i].max() > LSE_TOL]
        wrong += len(bad_out) + len(bad_empty) + len(bad_lse)
        mx = e.max().item() if n else 0.0
        lines.append(f"    qo {n:3} kv {m:4}: out off {rows_text(bad_out) or '-':14} keyless not 0/-inf "
                     f"{rows_text(bad_empty) or '-':10} LSE off {rows_text(bad_lse) or '-':14} max err {mx:.4f}")
        q0 += n
    return wrong, lines


def main():
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"tolerances: out {OUT_TOL}, LSE {LSE_TOL}; each variant twice on the same inputs (a fresh wrapper each)")
    verdict = {}
    for name, change, role in VARIANTS:
        cfg = {**BASE, **change}
        q, k, v = make_inputs(cfg, 0)
        ref_out, ref_lse = reference(cfg, q, k, v)
        try:
            results = [run(cfg, q, k, v) for _ in range(2)]
            torch.cuda.synchronize()
        except Exception as ex:  # noqa: BLE001 - a raise is an observation of the variant
            print(f"{name} [{role}]: raised {type(ex).__name__}: {str(ex).splitlines()[0][:160]}")
            verdict[name] = (role, None)
            continue
        same = torch.equal(results[0][0], results[1][0])
        wrong, lines = judge(cfg, *results[0], ref_out, ref_lse)
        print(f"{name} [{role}]: {'WRONG' if wrong else 'ok'} ({wrong} row findings; two runs "
              f"{'identical' if same else 'DIFFER'})")
        print("\n".join(lines))
        verdict[name] = (role, wrong)
    roles = {r: [(n, w) for n, (rr, w) in verdict.items() if rr == r] for r in ("judged", "control")}
    if any(w is None or w for _, w in roles["control"]) or any(w is None for _, w in roles["judged"]):
        print("a control failed or a judged variant raised: the set-up is wrong, not the defect")
        return 2
    if any(w for _, w in roles["judged"]):
        print("DEFECT REPRODUCED: fa2 writes wrong rows on the matrix case; head dim 128 is clean")
        return 1
    print("not reproduced: the matrix case is clean on fa2")
    return 0


if __name__ == "__main__":
    if sys.argv[1:]:
        print(f"usage: {sys.argv[0]}", file=sys.stderr)
        sys.exit(2)
    sys.exit(main())
