#!/usr/bin/env python3
"""Repro: fa2 batch prefill, causal, a request with more query rows than keys: its first query tiles run unmasked.

In the fa2 paged and ragged prefill kernels (include/flashinfer/attention/prefill.cuh, 0.7.2.post1 :3141-3160
and the paged kernel alike) the causal mask's first masked KV tile is

    mask_iteration = min(chunk_size, sub_if_greater_or_zero(kv_len + ceil_div(tile * CTA_TILE_Q, group) - qo_len,
                                                            chunk_start)) / CTA_TILE_KV

in uint32 arithmetic (utils.cuh:518 sub_if_greater_or_zero(uint32_t, uint32_t)). For a query tile whose first
row sees no key (qo_len > kv_len + its first row), kv_len + ... - qo_len wraps to about 2^32, so mask_iteration
is chunk_size / CTA_TILE_KV: the first whole KV tiles are computed without the causal mask, and num_iterations
(the same wrap) runs them even for a tile none of whose rows sees a key. Rows without a key then attend to
keys they must not (a non-zero output, a finite LSE), and the rows of that query tile that do see keys see keys
right of their diagonal too. A KV length under one KV tile (CTA_TILE_KV) gives mask_iteration 0 and
is right. single_prefill_with_kv_cache refuses qo_len > kv_len under causal (prefill.cuh:2735); the batch
wrappers take it.

    python3 repro_flashinfer_fa2_causal_keyless_tile.py

Exit 1 when the defect shows (a judged batch wrong while both controls are right), 0 when it does not, 2 when a
control is wrong or a call raises (the set-up, not the defect). The reference is FlashInfer's documented causal
rule (row i of qo_len rows over kv_len keys sees key j when j <= i + kv_len - qo_len), in fp32; a row without a
key is 0 with LSE -inf. The mechanism lines are observations, not judged: for the wrong rows without a key, which
span of keys [a, b) (a and b multiples of 16) unmasked attention over it comes closest to, counted per row and
head. On the H200 (2026-12-03, both versions, 300 over 128, 16/2 heads: a query tile is 16 rows of 8 heads): the
rows of the tiles where no row sees a key are unmasked attention over all 128 keys (2560 (row, head) pairs within
0.0024), and those of the tile that holds rows with and without keys (160-175) over the first KV tile of 64 keys
(192 pairs within 0.0037): num_iterations taken from that tile's last row, mask_iteration wrapped from its first.
"""
import sys

import torch

HQ, HKV, D, PAGE = 16, 2, 128, 16
OUT_TOL, LSE_TOL = 0.1, 0.05
CASES = [  # (name, api, qo, kv, role)
    ("paged, qo 300 over kv 128", "paged", 300, 128, "judged"),
    ("ragged, qo 300 over kv 128", "ragged", 300, 128, "judged"),
    ("paged, qo 300 over kv 33 (under one KV tile)", "paged", 300, 33, "control"),
    ("paged, qo 128 over kv 128 (every row sees a key)", "paged", 128, 128, "control"),
]


def attention(q, k, v, qo, kv, causal):
    k, v = k.float().repeat_interleave(HQ // HKV, 1), v.float().repeat_interleave(HQ // HKV, 1)
    s = torch.einsum("qhd,khd->hqk", q.float(), k) / D**0.5
    if causal:
        i = torch.arange(qo, device=q.device)[:, None] + (kv - qo)
        s = s.masked_fill(torch.arange(kv, device=q.device)[None, :] > i, float("-inf"))
    return torch.einsum("hqk,khd->qhd", torch.softmax(s, -1).nan_to_num(0.0), v), torch.logsumexp(s, -1).T


def spans(q, k, v, out, rows, kv):
    """Print, for the rows `rows` of `out`, the key span [a, b) whose unmasked attention each row and head is
    closest to."""
    got, best, diff = out.float()[rows], None, None
    for a in range(0, kv, 16):
        for b in range(a + 16, kv + 1, 16):
            plain, _ = attention(q[rows], k[a:b], v[a:b], int(rows.sum()), b - a, causal=False)
            d = (got - plain).abs().amax(-1)  # per row and head
            if best is None:
                best, diff = torch.full_like(d, a * 10000 + b, dtype=torch.long), d
            else:
                better = d < diff
                best, diff = torch.where(better, a * 10000 + b, best), torch.minimum(d, diff)
    counts: dict[int, list] = {}
    for code, d in zip(best.flatten().tolist(), diff.flatten().tolist()):
        counts.setdefault(code, []).append(d)
    plain, _ = attention(q[rows], k, v, int(rows.sum()), kv, causal=False)
    print(f"    mechanism: the wrong rows without a key against unmasked attention over all {kv} keys: max diff "
          f"{(got - plain).abs().max().item():.4f}; closest spans ((row, head) pairs, max diff): "
          + ", ".join(f"[{c // 10000}, {c % 10000}) {len(ds)} ({max(ds):.4f})"
                      for c, ds in sorted(counts.items(), key=lambda x: -len(x[1]))[:6]))


def fa2(api, q, k, v, qo, kv):
    import flashinfer

    dev, dt = "cuda", torch.bfloat16
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    ws = torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev)
    kw = dict(causal=True, q_data_type=dt, kv_data_type=dt)
    if api == "ragged":
        w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", backend="fa2")
        w.plan(i32([0, qo]), i32([0, kv]), HQ, HKV, D, **kw)
        return w.run(q, k, v, return_lse=True, lse_base="ln")
    pages = (kv + PAGE - 1) // PAGE
    kc = torch.zeros(pages * PAGE, HKV, D, device=dev, dtype=dt)
    vc = torch.zeros_like(kc)
    kc[:kv], vc[:kv] = k, v
    w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", backend="fa2")
    w.plan(i32([0, qo]), i32([0, pages]), i32(list(range(pages))), i32([kv - (pages - 1) * PAGE]), HQ, HKV, D,
           PAGE, **kw)
    return w.run(q, (kc.view(pages, PAGE, HKV, D), vc.view(pages, PAGE, HKV, D)), return_lse=True, lse_base="ln")


def main():
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"fa2, causal, bf16, {HQ}/{HKV} heads, head dim {D}, page {PAGE} NHD; one request; tolerances out "
          f"{OUT_TOL}, LSE {LSE_TOL}")
    wrong = {}
    for name, api, qo, kv, role in CASES:
        g = torch.Generator(device="cuda").manual_seed(qo * 7919 + kv)
        q = torch.randn(qo, HQ, D, device="cuda", generator=g).to(torch.bfloat16)
        k = torch.randn(kv, HKV, D, device="cuda", generator=g).to(torch.bfloat16)
        v = torch.randn(kv, HKV, D, device="cuda", generator=g).to(torch.bfloat16)
        try:
            out, lse = fa2(api, q, k, v, qo, kv)
            torch.cuda.synchronize()
        except Exception as ex:  # noqa: BLE001 - a raise is an observation
            print(f"{name} [{role}]: raised {type(ex).__name__}: {str(ex).splitlines()[0][:160]}")
            wrong[name] = (role, None)
            continue
        ref_out, ref_lse = attention(q, k, v, qo, kv, causal=True)
        keyless = ~torch.isfinite(ref_lse).any(-1)
        err = (out.float() - ref_out).abs().amax(-1).amax(-1)
        lse_err = torch.where(torch.isfinite(ref_lse), (lse.float() - ref_lse).abs(), torch.zeros_like(ref_lse))
        bad_keyless = keyless & ((err > 0) | torch.isfinite(lse.float()).any(-1))
        bad_keyed = ~keyless & ((err > OUT_TOL) | (lse_err.nan_to_num(float("inf")).amax(-1) > LSE_TOL))
        rows = lambda m: m.nonzero()[:, 0].tolist()  # noqa: E731
        kl, kd = rows(bad_keyless), rows(bad_keyed)
        print(f"{name} [{role}]: rows without a key {int(keyless.sum())}, of them wrong {len(kl)}"
              f"{f' ({kl[0]}-{kl[-1]})' if kl else ''}; rows with keys wrong {len(kd)}"
              f"{f' ({kd[0]}-{kd[-1]})' if kd else ''}; max err {err.max().item():.4f}")
        if kl:
            spans(q, k, v, out, bad_keyless, kv)
        wrong[name] = (role, len(kl) + len(kd))
    controls_bad = [n for n, (r, w) in wrong.items() if r == "control" and (w is None or w)]
    judged = [w for r, w in wrong.values() if r == "judged"]
    if controls_bad or None in judged:
        print("a control is wrong or a call raised: the set-up, not the defect: " + ", ".join(controls_bad))
        return 2
    if any(judged):
        print("DEFECT REPRODUCED: fa2 computes the first query tiles of a request with more query rows than keys "
              "without the causal mask")
        return 1
    print("not reproduced: every row as the causal rule says")
    return 0


if __name__ == "__main__":
    if sys.argv[1:]:
        print(f"usage: {sys.argv[0]}", file=sys.stderr)
        sys.exit(2)
    sys.exit(main())
