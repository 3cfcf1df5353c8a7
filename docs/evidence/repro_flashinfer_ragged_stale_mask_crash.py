#!/usr/bin/env python3
"""FlashInfer ragged wrapper, stale custom mask (repro_flashinfer_ragged_stale_mask.py), the crash variant.

When the masked plan before was a small one-request batch, the unmasked re-plan's later requests
read mask bits past the end of the kept mask buffer. Seen on the H200 (2026-12-01) in attncheck's
isolated upgrade records on 0.7.2.post1 and 0.7.4 alike: on one eager HND ragged fa2 wrapper, a
masked plan qo [1] kv [1031] (window 7), then an unmasked one qo [1, 300, 300] kv [33, 33, 128]
(window 7, not causal): "an illegal memory access was encountered". Here that pair with plain
calls, and as controls the unmasked plan on a fresh wrapper and the same pair with the mask given
again (so the wrapper is reused but nothing is stale). Each in a child process.

    python3 repro_flashinfer_ragged_stale_mask_crash.py    # exit 1 when only the stale sequence fails

Only torch and flashinfer; no attncheck code.
"""
import json
import subprocess
import sys

HQ16, HKV2, HQ4, HKV1, D = 16, 2, 4, 1, 128
SEQUENCES = {"masked [1]/[1031], then unmasked [1,300,300]/[33,33,128] (the defect)": ("stale",),
             "unmasked [1,300,300]/[33,33,128] on a fresh wrapper (control)": ("fresh",),
             "masked, then the second batch masked all-true (control)": ("remasked",)}


def child(kind):
    import flashinfer
    import torch

    dev, bf = "cuda", torch.bfloat16
    torch.manual_seed(0)
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    cum = lambda xs: [0] + [sum(xs[:i + 1]) for i in range(len(xs))]  # noqa: E731
    w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev),
                                                        "HND", backend="fa2")
    if kind in ("stale", "remasked"):
        qo, kv = [1], [1031]
        q = torch.randn(1, HQ16, D, device=dev, dtype=bf)
        k = torch.randn(HKV2, 1031, D, device=dev, dtype=bf)
        mask = torch.rand(1031, device=dev) > 0.5
        w.plan(i32(cum(qo)), i32(cum(kv)), HQ16, HKV2, D, custom_mask=mask, window_left=7, q_data_type=bf,
               kv_data_type=bf)
        w.run(q, k, k.clone())
        torch.cuda.synchronize()
        print(json.dumps({"reached": "the masked plan ran"}), flush=True)
    qo, kv = [1, 300, 300], [33, 33, 128]
    q = torch.randn(sum(qo), HQ4, D, device=dev, dtype=bf)
    k = torch.randn(HKV1, sum(kv), D, device=dev, dtype=bf)
    v = torch.randn(HKV1, sum(kv), D, device=dev, dtype=bf)
    again = {"custom_mask": torch.ones(sum(a * b for a, b in zip(qo, kv)), dtype=torch.bool, device=dev)} \
        if kind == "remasked" else {}
    w.plan(i32(cum(qo)), i32(cum(kv)), HQ4, HKV1, D, window_left=7, q_data_type=bf, kv_data_type=bf, **again)
    out = w.run(q, k, v)
    torch.cuda.synchronize()
    refs, q0, k0 = [], 0, 0
    for n, m in zip(qo, kv):
        s = torch.einsum("qhd,hkd->hqk", q[q0:q0 + n].float(), k[:, k0:k0 + m].float().expand(HQ4, -1, -1)) / D ** 0.5
        i = torch.arange(n, device=dev)[:, None] + (m - n)
        s = s.masked_fill(~(torch.arange(m, device=dev)[None, :] >= i - 7), float("-inf"))
        p = torch.softmax(s, -1).nan_to_num(0.0)
        refs.append(torch.einsum("hqk,hkd->qhd", p, v[:, k0:k0 + m].float().expand(HQ4, -1, -1)))
        q0, k0 = q0 + n, k0 + m
    print(json.dumps({"err": (out.float() - torch.cat(refs)).abs().max().item()}))


def main():
    import flashinfer
    import torch

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    ok = {}
    for name, (kind,) in SEQUENCES.items():
        p = subprocess.run([sys.executable, __file__, "--child", json.dumps([kind])], capture_output=True, text=True)
        lines = p.stdout.strip().splitlines()
        if p.returncode == 0 and lines and '"err"' in lines[-1]:
            err = json.loads(lines[-1])["err"]
            ok[name], text = err < 0.05, f"max |out - ref| = {err:.4g}"
        else:
            errs = [ln for ln in p.stderr.splitlines() if "rror" in ln]
            reached = [json.loads(ln)["reached"] for ln in lines if ln.startswith('{"reached"')]
            ok[name], text = False, (f"failed (exit {p.returncode}) after {(reached or ['nothing'])[-1]}: "
                                     f"{(errs or ['?'])[-1][:200]}")
        print(f"{'ok  ' if ok[name] else 'FAIL'} {name}: {text}", flush=True)
    names = list(SEQUENCES)
    reproduced = not ok[names[0]] and ok[names[1]] and ok[names[2]]
    print("DEFECT REPRODUCED: the stale mask fails the unmasked re-plan where a fresh or re-masked one works"
          if reproduced else "not reproduced")
    return 1 if reproduced else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(*json.loads(sys.argv[2]))
    else:
        sys.exit(main())
