#!/usr/bin/env python3
"""Reproduction: paged prefill with head_dim_qk 192 and head_dim_vo 128 on sm90 — `auto` picks fa3, which
rejects the separate K and V caches such a model has; fa2 runs them.

Seen in the 2026-12-01 H200 quick matrix (third sitting): every paged (192, 128) case on fa3, fa3+graph,
auto and a fresh auto+graph wrapper raised "K and V must have same page stride for sparse attention"
(batch_prefill_sm90.cu:234-237: the sparse mainloop assumes equal page strides and equal stride_n for K
and V), while fa2 passed them. flashinfer.utils.determine_attention_backend (utils.py:616-628) returns
"fa3" for (192, 128) without looking at the caches, so a caller who asked for nothing gets the error.

fa3 asked for explicitly refusing these caches is a deliberate check (attncheck's adapter declines it); the
defect is auto sending the plan there. 0.7.4's selector sends a paged batch of at most 64 query rows to fa2
before it asks about head dims, so request 0 has 96 rows: on both versions auto resolves to fa3.

Variants, one batch (bf16, 8/2 heads, page 16 NHD, qo [96, 17] over kv [300, 33], causal):
  fa3, separate caches      (a deliberate check: expected to raise)
  auto, separate caches     (the defect: resolves to fa3 and raises)
  fa2, separate caches      (control: must match the reference)
  fa3, K and V as views of one [pages, 16, heads, 320] buffer (equal strides: what fa3's check asks for)

    python3 repro_flashinfer_fa3_paged_unequal_head_dims.py      # exit 1 when auto fails where fa2 runs

Exit 2 when fa2 (the control) fails too: the set-up is wrong, not the defect.

Only torch and flashinfer; no attncheck code. The reference is FlashInfer's documented causal rule
(row i of qo_len rows over kv_len keys sees key j when j <= i + kv_len - qo_len), in fp32.
"""
import sys

import torch

HQ, HKV, DQK, DVO, PAGE = 8, 2, 192, 128, 16
QO, KV = [96, 17], [300, 33]


def reference(q, k, v):
    outs, q0, k0 = [], 0, 0
    for n, m in zip(QO, KV):
        qi, ki, vi = q[q0:q0 + n].float(), k[k0:k0 + m].float(), v[k0:k0 + m].float()
        ki, vi = ki.repeat_interleave(HQ // HKV, 1), vi.repeat_interleave(HQ // HKV, 1)
        s = torch.einsum("qhd,khd->hqk", qi, ki) / DQK ** 0.5
        i = torch.arange(n, device=q.device)[:, None] + (m - n)
        j = torch.arange(m, device=q.device)[None, :]
        s = s.masked_fill(j > i, float("-inf"))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, -1).nan_to_num(0.0), vi))
        q0, k0 = q0 + n, k0 + m
    return torch.cat(outs)


def caches(k, v, shared):
    """NHD page caches [pages, PAGE, HKV, D] for K and V, separate tensors or views of one buffer."""
    pages = [(m + PAGE - 1) // PAGE for m in KV]
    pool = sum(pages)
    if shared:
        buf = torch.zeros(pool, PAGE, HKV, DQK + DVO, device=k.device, dtype=k.dtype)
        kc, vc = buf[..., :DQK], buf[..., DQK:]
    else:
        kc = torch.zeros(pool, PAGE, HKV, DQK, device=k.device, dtype=k.dtype)
        vc = torch.zeros(pool, PAGE, HKV, DVO, device=k.device, dtype=k.dtype)
    k0, p0 = 0, 0
    for m, npg in zip(KV, pages):
        for t in range(m):
            kc[p0 + t // PAGE, t % PAGE] = k[k0 + t]
            vc[p0 + t // PAGE, t % PAGE] = v[k0 + t]
        k0, p0 = k0 + m, p0 + npg
    return kc, vc, pages


def run(backend, shared):
    """(error against the reference, the backend the wrapper resolved to); raises what the library raises."""
    import flashinfer

    dev, bf = "cuda", torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(sum(QO), HQ, DQK, device=dev, dtype=bf, generator=g)
    k = torch.randn(sum(KV), HKV, DQK, device=dev, dtype=bf, generator=g)
    v = torch.randn(sum(KV), HKV, DVO, device=dev, dtype=bf, generator=g)
    kc, vc, pages = caches(k, v, shared)
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    cum = lambda xs: [0] + [sum(xs[:i + 1]) for i in range(len(xs))]  # noqa: E731
    w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev),
                                                       "NHD", backend=backend)
    w.plan(i32(cum(QO)), i32(cum(pages)), i32(list(range(sum(pages)))),
           i32([m - (n - 1) * PAGE for m, n in zip(KV, pages)]), HQ, HKV, DQK, PAGE, head_dim_vo=DVO,
           causal=True, q_data_type=bf, kv_data_type=bf)
    resolved = str(getattr(w, "_backend", "?"))
    try:
        out = w.run(q, (kc, vc))
        torch.cuda.synchronize()
    except Exception as e:
        raise RuntimeError(f"resolved {resolved}: {type(e).__name__}: {str(e).splitlines()[0][:160]}") from e
    return (out.float() - reference(q, k, v)).abs().max().item(), resolved


def main():
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    results = {}
    for name, backend, shared in (("fa3, separate caches (deliberate check)", "fa3", False),
                                  ("auto, separate caches (the defect)", "auto", False),
                                  ("fa2, separate caches (control)", "fa2", False),
                                  ("fa3, K and V views of one buffer", "fa3", True)):
        try:
            err, resolved = run(backend, shared)
            results[backend, shared] = err <= 0.05
            print(f"{'ok  ' if err <= 0.05 else 'FAIL'} {name:38} ran {resolved}: max |out - ref| = {err:.4f}",
                  flush=True)
        except Exception as e:
            results[backend, shared] = False
            print(f"FAIL {name:38} raised {e}", flush=True)
    if not results[("fa2", False)]:
        print("the control failed: fa2 does not run the separate caches either")
        return 2
    defect = not results[("auto", False)]
    print("DEFECT REPRODUCED: auto fails on separate (192, 128) caches that fa2 runs" if defect else
          "not reproduced: auto runs the separate caches (or fa2 fails too)")
    return 1 if defect else 0


if __name__ == "__main__":
    sys.exit(main())
