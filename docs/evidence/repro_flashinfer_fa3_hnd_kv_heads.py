#!/usr/bin/env python3
"""FlashInfer fa3 (SM90) ragged and single prefill read the KV head count from the wrong axis under HND.

BatchPrefillWithRaggedKVCacheSM90Run sets `params.nnz_kv = k.size(0)` and `params.num_kv_heads =
k.size(1)` whatever the layout (flashinfer/data/csrc/batch_prefill_sm90.cu:131-134 in 0.7.2.post1;
the fp8 file alike, batch_prefill_fp8_sm90.cu:134-136); single_prefill_sm90.cu:75-79 does the same
with kv_len and num_kv_heads. Under kv_layout="HND" K is [num_kv_heads, kv_len, head_dim], so the
kernel gets num_kv_heads = kv_len and group_size = num_qo_heads / kv_len: zero when kv_len >
num_qo_heads, and the host process dies of SIGFPE (integer division by zero); otherwise the heads
are mapped wrongly and the output is wrong. The paged SM90 path reads the layout (:185-191), and
the fa2 paths do too (batch_prefill.cu:121), so NHD and fa2 give the right answer on the same data.

Each variant runs in a child process (a SIGFPE ends the process), on the same tensors, against a
plain fp32 reference.

    python3 repro_flashinfer_fa3_hnd_kv_heads.py [sigfpe|wrong]   # exit 1 when HND on fa3 fails where NHD passes

`sigfpe` judges the shapes whose group size is 0 and counts only a child killed by SIGFPE (the ledger's
crash entry); `wrong` judges the others and counts only a wrong output; neither: every shape, any failure.
Exit 2 when no judged shape shows the defect and a control (fa3 NHD, fa2 NHD or HND) failed.

Only torch and flashinfer; no attncheck code.
"""
import json
import signal
import subprocess
import sys

# (api, num_qo_heads, num_kv_heads, qo_len, kv_len): the H200 runs' shapes (docs/evidence/2026-12-01-*), single
# prefill first: its docstring documents K under HND as [num_kv_heads, kv_len, head_dim] (prefill.py:1323-1326 in
# 0.7.2.post1), where the ragged run() docstring shows NHD only
SHAPES = [("single", 8, 8, 127, 7),   # 8 // 7 = 1: the kernel runs, with the wrong heads
          ("single", 32, 8, 17, 33),  # 32 // 33 = 0: SIGFPE
          ("ragged", 8, 8, 127, 7),   # 8 // 7 = 1: wrong heads
          ("ragged", 8, 1, 300, 128)]  # 8 // 128 = 0: SIGFPE
D = 128


def child(api, hq, hkv, qo, kv, backend, layout):
    import flashinfer
    import torch

    torch.manual_seed(0)
    dev = "cuda"
    q = torch.randn(qo, hq, D, device=dev, dtype=torch.bfloat16)
    k = torch.randn(kv, hkv, D, device=dev, dtype=torch.bfloat16)
    v = torch.randn(kv, hkv, D, device=dev, dtype=torch.bfloat16)
    ks, vs = k.float().repeat_interleave(hq // hkv, 1), v.float().repeat_interleave(hq // hkv, 1)
    ref = torch.einsum("hqk,khd->qhd", torch.softmax(torch.einsum("qhd,khd->hqk", q.float(), ks) / D ** 0.5, -1), vs)
    kl, vl = (k.transpose(0, 1).contiguous(), v.transpose(0, 1).contiguous()) if layout == "HND" else (k, v)
    if api == "single":
        out = flashinfer.single_prefill_with_kv_cache(q, kl, vl, kv_layout=layout, backend=backend)
    else:
        w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev),
                                                            layout, backend=backend)
        w.plan(torch.tensor([0, qo], dtype=torch.int32, device=dev), torch.tensor([0, kv], dtype=torch.int32,
                                                                                  device=dev), hq, hkv, D,
               q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16)
        out = w.run(q, kl, vl)
    torch.cuda.synchronize()
    print(json.dumps({"err": (out.float() - ref).abs().max().item()}))


def run(shape, backend, layout):
    p = subprocess.run([sys.executable, __file__, "--child", json.dumps([*shape, backend, layout])],
                       capture_output=True, text=True)
    if p.returncode < 0:
        return (None, -p.returncode), f"killed by signal {-p.returncode}"
    if p.returncode:
        return (None, None), "raised: " + (p.stderr.strip().splitlines() or ["?"])[-1][:200]
    err = json.loads(p.stdout.strip().splitlines()[-1])["err"]
    return (err, None), f"max |out - ref| = {err:.4g}"


def main(defect=None):
    import flashinfer
    import torch

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    reproduced = control_failed = False
    for shape in SHAPES:
        api, hq, hkv, qo, kv = shape
        if defect is not None and (defect == "sigfpe") != (hq // kv == 0):
            continue
        results = {(b, lay): run(shape, b, lay) for b in ("fa3", "fa2") for lay in ("NHD", "HND")}
        for (b, lay), (_, text) in results.items():
            print(f"{api:6} heads {hq}/{hkv} qo {qo:3} kv {kv:3}  {b} {lay}: {text}")
        good = lambda r: r[0][0] is not None and r[0][0] < 0.05  # noqa: E731
        (err, sig), _ = results[("fa3", "HND")]
        shows = {None: not good(results[("fa3", "HND")]), "sigfpe": sig == signal.SIGFPE,
                 "wrong": err is not None and err >= 0.05}[defect]
        if not all(good(results[k]) for k in (("fa3", "NHD"), ("fa2", "NHD"), ("fa2", "HND"))):
            control_failed = True
        elif shows:
            reproduced = True
    if control_failed and not reproduced:
        print("a control failed: the set-up is wrong, not the defect")
        return 2
    print("DEFECT REPRODUCED: fa3 under HND fails where NHD and fa2 pass on the same data" if reproduced
          else "not reproduced")
    return 1 if reproduced else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(*json.loads(sys.argv[2]))
    elif sys.argv[1:] in ([], ["sigfpe"], ["wrong"]):
        sys.exit(main(*sys.argv[1:]))
    else:
        print(f"usage: {sys.argv[0]} [sigfpe|wrong]", file=sys.stderr)
        sys.exit(2)
