#!/usr/bin/env python3
"""FlashInfer fa2 ragged prefill at head dim 96 makes an illegal memory access.

Seen on the H200 (2026-12-01): attncheck's test_ragged_auto_re_resolves_on_every_plan failed at its
first run() -- ragged, bf16, head dim 96, auto resolving to fa2 (fa3 has no 96) -- with "an illegal
memory access was encountered"; repro_flashinfer_ragged_auto_replan_fa2_to_fa3.py then showed plain
calls fail on every sequence that begins with a head-dim-96 plan, auto and fa2 alike. Here each plan
alone, each in a child process (an illegal access ends the CUDA context), the child naming the plan
it reached: head dim 96 on fa2 and on auto, and the controls head dim 128 on fa2 and 64 on fa2.

    python3 repro_flashinfer_ragged_head_dim_96.py   # exit 1 when head dim 96 fails where 64 and 128 pass

The ledger entry is a crash: "fails" means the child's CUDA context died (an illegal memory access, or
the child killed by a signal); a head-dim-96 plan that is refused cleanly is not the defect (exit 0).
Exit 2 when a control fails: the set-up is wrong, not the defect.

Only torch and flashinfer; no attncheck code.
"""
import json
import subprocess
import sys

SEQUENCES = {
    "fa2: d96 (the defect)": ("fa2", [96]),
    "auto: d96 (resolves to fa2)": ("auto", [96]),
    "fa2: d128 (control)": ("fa2", [128]),
    "fa2: d64 (control)": ("fa2", [64]),
}


def child(backend, dims):
    import flashinfer
    import torch

    dev, bf = "cuda", torch.bfloat16
    torch.manual_seed(0)
    qo, kv, hq, hkv = [5, 3], [9, 7], 4, 2
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev),
                                                        "NHD", backend=backend)
    errs = []
    for d in dims:
        print(json.dumps({"reached": f"plan and run at head dim {d}"}), flush=True)
        q = torch.randn(sum(qo), hq, d, device=dev, dtype=bf)
        k = torch.randn(sum(kv), hkv, d, device=dev, dtype=bf)
        v = torch.randn(sum(kv), hkv, d, device=dev, dtype=bf)
        w.plan(i32([0, 5, 8]), i32([0, 9, 16]), hq, hkv, d, q_data_type=bf, kv_data_type=bf)
        out = w.run(q, k, v)
        torch.cuda.synchronize()
        ref = []
        for (a, b), (c, e) in zip([(0, 5), (5, 8)], [(0, 9), (9, 16)]):
            ks, vs = k[c:e].float().repeat_interleave(hq // hkv, 1), v[c:e].float().repeat_interleave(hq // hkv, 1)
            p = torch.softmax(torch.einsum("qhd,khd->hqk", q[a:b].float(), ks) / d ** 0.5, -1)
            ref.append(torch.einsum("hqk,khd->qhd", p, vs))
        errs.append(round((out.float() - torch.cat(ref)).abs().max().item(), 5))
    print(json.dumps({"errs": errs, "backend_used": getattr(w, "_backend", None)}))


def main():
    import flashinfer
    import torch

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    outcome, died = {}, {}
    for name, (backend, dims) in SEQUENCES.items():
        p = subprocess.run([sys.executable, __file__, "--child", json.dumps([backend, dims])],
                           capture_output=True, text=True)
        lines = p.stdout.strip().splitlines()
        if p.returncode == 0 and lines and lines[-1].startswith("{"):
            r = json.loads(lines[-1])
            outcome[name] = all(e < 0.05 for e in r["errs"])
            text = f"max |out - ref| per plan {r['errs']}, last backend {r['backend_used']}"
        else:
            outcome[name] = False
            died[name] = p.returncode < 0 or "illegal memory access" in p.stderr
            err = [ln for ln in p.stderr.strip().splitlines() if "Error:" in ln or "error:" in ln]
            reached = [json.loads(ln)["reached"] for ln in lines if ln.startswith('{"reached"')]
            text = (f"failed (exit {p.returncode}) at {(reached or ['its start'])[-1]}: "
                    f"{(err or ['?'])[-1][:200]}")
        print(f"{'ok  ' if outcome[name] else 'FAIL'} {name}: {text}", flush=True)
    names = list(SEQUENCES)
    if not (outcome[names[2]] and outcome[names[3]]):
        print("a control failed: the set-up is wrong, not the defect")
        return 2
    reproduced = died.get(names[0], False)
    print("DEFECT REPRODUCED: fa2 ragged at head dim 96 fails where 64 and 128 pass" if reproduced
          else "not reproduced")
    return 1 if reproduced else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(*json.loads(sys.argv[2]))
    else:
        sys.exit(main())
