#!/usr/bin/env python3
"""Probe: FlashInfer batch prefill on batches whose requests have no query rows (or no keys).

Two observations of 2026-12-01 on the H200 (docs/evidence/2026-12-01-flashinfer-h200-session.md)
that a standalone script has not yet pinned to one call:
  * the scenario machine's paged `auto` subject (fa3 on sm90) printed "Failed to initialize the TMA
    descriptor" with globalDim (128, 0, 1) -- a tensor with zero rows -- and the next CUDA call in
    the process failed with "an illegal memory access was encountered";
  * fa2 in CUDA-graph mode, paged, head dim 256, HND, causal + custom mask, one request with
    qo_len 0 and kv_len 0: run() raised "BatchPrefillWithPagedKVCache failed with error invalid
    argument", and the next torch call in the process failed with the same error (left pending).
Each shape below runs in a child process and reports: the call's outcome, anything it printed
about TMA, and whether a plain torch kernel still runs afterwards in that process.

    python3 probe_flashinfer_zero_query_rows.py      # exit 1 when an fa2 graph-mode shape fails or poisons the process

The exit status judges the ledger's entry (flashinfer-graph-no-query-rows): fa2 in CUDA-graph mode, with
the same batch eager on fa2 as the control (exit 2 when it fails); the fa3 shapes are printed, not judged.

Only torch and flashinfer; no attncheck code.
"""
import json
import subprocess
import sys

# (api, backend, graph, head_dim, layout, masked, qo_lens, kv_lens, page_size)
SHAPES = [
    ("paged", "fa3", False, 128, "NHD", False, [0], [0], 16),
    ("paged", "fa3", False, 128, "NHD", False, [0], [5], 16),
    ("paged", "fa3", False, 128, "NHD", False, [0, 3], [4, 4], 16),
    ("ragged", "fa3", False, 128, "NHD", False, [0], [0], 1),
    ("ragged", "fa3", False, 128, "NHD", False, [0], [5], 1),
    ("paged", "fa2", True, 256, "HND", True, [0], [0], 5),
    ("paged", "fa2", True, 128, "HND", True, [0], [0], 5),
    ("paged", "fa2", True, 256, "HND", False, [0], [0], 5),
    ("paged", "fa2", False, 256, "HND", True, [0], [0], 5),
]
HQ, HKV = 4, 1


def child(api, backend, graph, d, layout, masked, qo, kv, ps):
    import flashinfer
    import torch

    dev, bf = "cuda", torch.bfloat16
    torch.manual_seed(0)
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    qo_indptr = i32([0] + [sum(qo[:i + 1]) for i in range(len(qo))])
    q = torch.randn(sum(qo), HQ, d, device=dev, dtype=bf)
    mask = torch.ones(sum(a * b for a, b in zip(qo, kv)), dtype=torch.bool, device=dev) if masked else None
    ws = torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev)
    if api == "paged":
        pages = [(n + ps - 1) // ps for n in kv]
        pool = max(sum(pages), 1) + 2
        shape = (pool, HKV, ps, d) if layout == "HND" else (pool, ps, HKV, d)
        k, v = torch.randn(shape, device=dev, dtype=bf), torch.randn(shape, device=dev, dtype=bf)
        kv_indptr, indices = i32([0] + [sum(pages[:i + 1]) for i in range(len(pages))]), i32(list(range(sum(pages))))
        last = i32([(n - (p - 1) * ps) if p else 0 for n, p in zip(kv, pages)])
        kw = {}
        if graph:
            b = len(qo)
            kw = dict(use_cuda_graph=True, qo_indptr_buf=i32([0] * (b + 1)), paged_kv_indptr_buf=i32([0] * (b + 1)),
                      paged_kv_indices_buf=i32([0] * 64), paged_kv_last_page_len_buf=i32([0] * b),
                      custom_mask_buf=torch.zeros(1 << 16, dtype=torch.uint8, device=dev) if masked else None,
                      mask_indptr_buf=i32([0] * (b + 1)) if masked else None)
        w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws, layout, backend=backend, **kw)
        w.plan(qo_indptr, kv_indptr, indices, last, HQ, HKV, d, ps, causal=True, custom_mask=mask,
               q_data_type=bf, kv_data_type=bf)
        kv_arg = (k, v)
    else:
        n = sum(kv)
        k, v = torch.randn(n, HKV, d, device=dev, dtype=bf), torch.randn(n, HKV, d, device=dev, dtype=bf)
        w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(ws, layout, backend=backend)
        w.plan(qo_indptr, i32([0] + [sum(kv[:i + 1]) for i in range(len(kv))]), HQ, HKV, d, causal=True,
               custom_mask=mask, q_data_type=bf, kv_data_type=bf)
        kv_arg = None
    out = torch.empty(sum(qo), HQ, d, device=dev, dtype=bf)
    call = (lambda: w.run(q, kv_arg, out=out)) if api == "paged" else (lambda: w.run(q, k, v, out=out))
    outcome = "ok"
    try:
        if graph:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                call()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                call()
            g.replay()
        else:
            call()
        torch.cuda.synchronize()
    except Exception as e:
        outcome = f"raised {type(e).__name__}: {str(e).splitlines()[0][:160]}"
    after = "a torch kernel still runs"
    try:
        torch.ones(4, device=dev).add_(1).sum().item()
    except Exception as e:
        after = f"the next torch call failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
    print(json.dumps({"outcome": outcome, "after": after}))


def main():
    import flashinfer
    import torch

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    bad = control_failed = False
    for shape in SHAPES:
        p = subprocess.run([sys.executable, __file__, "--child", json.dumps(shape)], capture_output=True, text=True)
        tma = "TMA" in p.stdout + p.stderr
        if p.returncode < 0:
            text = f"killed by signal {-p.returncode}"
        elif not p.stdout.strip().splitlines() or not p.stdout.strip().splitlines()[-1].startswith("{"):
            text = "no answer: " + ((p.stderr.strip().splitlines() or ["?"])[-1][:200])
        else:
            r = json.loads(p.stdout.strip().splitlines()[-1])
            text = f"{r['outcome']}; {r['after']}"
        failed = tma or not text.startswith("ok; a torch kernel still runs")
        if shape[1] == "fa2":  # the entry's kernel: graph mode is the defect, eager its control
            bad |= failed and shape[2]
            control_failed |= failed and not shape[2]
        print(f"{'FAIL' if failed else 'ok  '} {shape}: {text}{' [printed a TMA descriptor error]' if tma else ''}")
    if control_failed:
        print("the eager fa2 control failed: the set-up is wrong, not the defect")
        return 2
    print("an fa2 graph-mode shape failed or poisoned its process" if bad else "every fa2 graph-mode shape held")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(*json.loads(sys.argv[2]))
    else:
        sys.exit(main())
