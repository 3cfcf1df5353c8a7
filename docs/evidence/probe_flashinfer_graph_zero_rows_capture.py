#!/usr/bin/env python3
"""Probe: a CUDA-graph capture of ragged prefill on a batch with no query rows, fa3 and fa2 — does the
capture end, and does the process stay usable?

Seen on the H200 (2026-12-01, third sitting): `attncheck explore`'s ragged graph subject ended with
Hypothesis' "Flaky: inconsistent data generation", its flight recorder's last step the run of ragged
qo [0] over kv [0] on an auto+graph wrapper (auto picks fa3 for it), and at exit torch warned 18 times
"operation not permitted when stream is capturing": some capture never ended. fa3 on zero query rows
prints "Failed to initialize the TMA descriptor" and returns in eager mode (second sitting, harmless
there); fa2 in graph mode on zero rows raises "invalid argument" (ledger flashinfer-graph-no-query-rows).
Each variant runs in its own process: warm-up, capture, replay, then checks the stream is not left
capturing and a plain torch op works after it.

    python3 probe_flashinfer_graph_zero_rows_capture.py      # exit 1 when a variant leaves the process broken

Only torch and flashinfer; no attncheck code.
"""
import json
import subprocess
import sys

HQ, HKV, D = 8, 2, 128
VARIANTS = [("fa3, qo [0] kv [0]", "fa3", [0], [0]), ("fa3, qo [0] kv [5]", "fa3", [0], [5]),
            ("fa3, qo [3] kv [5] (control)", "fa3", [3], [5]), ("fa2, qo [0] kv [0]", "fa2", [0], [0])]


def child(backend, qo, kv):
    import flashinfer
    import torch

    dev, bf = "cuda", torch.bfloat16
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    qo_indptr, kv_indptr = i32([0, sum(qo)]), i32([0, sum(kv)])
    q = torch.randn(max(sum(qo), 1), HQ, D, device=dev, dtype=bf)[:sum(qo)]
    k = torch.randn(max(sum(kv), 1), HKV, D, device=dev, dtype=bf)[:sum(kv)]
    v = torch.randn_like(k)
    w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(
        torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev), "NHD", use_cuda_graph=True,
        qo_indptr_buf=qo_indptr.clone(), kv_indptr_buf=kv_indptr.clone(), backend=backend)
    w.plan(qo_indptr, kv_indptr, HQ, HKV, D, causal=False, q_data_type=bf, kv_data_type=bf)
    out = torch.empty_like(q)
    report = {"resolved": str(getattr(w, "_backend", "?"))}
    stage = "warm-up"
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            w.run(q, k, v, out=out)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        stage = "capture"
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            w.run(q, k, v, out=out)
        stage = "replay"
        g.replay()
        torch.cuda.synchronize()
        report["raised"] = None
    except Exception as e:
        report["raised"] = f"{stage}: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
    report["still_capturing"] = bool(torch.cuda.is_current_stream_capturing())
    try:
        torch.ones(4, device=dev).sum().item()
        report["after"] = "ok"
    except Exception as e:
        report["after"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    print("RESULT " + json.dumps(report), flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]))
        return 0
    import flashinfer
    import torch

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    broken = []
    for name, backend, qo, kv in VARIANTS:
        p = subprocess.run([sys.executable, __file__, "child", backend, json.dumps(qo), json.dumps(kv)],
                           capture_output=True, text=True, timeout=300)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        r = json.loads(lines[-1][7:]) if lines else {"exit": p.returncode, "stderr": p.stderr.strip()[-200:]}
        bad = not lines or r.get("still_capturing") or r.get("after") != "ok"
        print(f"{'FAIL' if bad else 'ok  '} {name:30} {r}", flush=True)
        if bad:
            broken.append(name)
    print("process left broken by: " + ", ".join(broken) if broken else "every variant left the process usable")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
