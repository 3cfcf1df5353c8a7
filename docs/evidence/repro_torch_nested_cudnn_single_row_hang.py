#!/usr/bin/env python3
"""torch: jagged (nested) SDPA forced to cuDNN on CUDA, a batch whose requests each have one query row: the call hangs.

Plain torch, nothing of attncheck. Seen 2026-12-04 on the H200 (attncheck's torch standard matrix, backend
nested-cudnn): a decode batch (one query row per request) held the run for 7 minutes until its time limit, and
with --case-timeout two more decode batches were killed at 150 s. A first version of this script blamed a
request with no keys; its control (no empty request) hung too, while two-row batches with an empty request
ran: the query rows are what matter. Each batch below runs in its own child process (a hung kernel cannot be
interrupted from Python), under sdpa_kernel(CUDNN_ATTENTION), against an fp32 reference per request (a
request without keys: rows of 0); the controls (two query rows a request) run first. Exit 1 when a batch
hangs or is wrong, 2 when a control fails or there is no CUDA, 0 otherwise.

    python docs/evidence/repro_torch_nested_cudnn_single_row_hang.py [SECONDS]   # per batch, default 30
"""

from __future__ import annotations

import json
import subprocess
import sys

# (name, q lens, kv lens, heads, head dim): controls first, then one query row a request (the matrix's case
# as recorded, smaller ones, one request alone), and batches that mix one row with more or none
BATCHES = [
    ("control: q [2, 2], kv [3, 5], 8 heads, d128", [2, 2], [3, 5], 8, 128),
    ("control: q [2, 2], kv [0, 3]: a request without keys", [2, 2], [0, 3], 8, 128),
    ("q [1, 1], kv [3, 5], 8 heads, d128", [1, 1], [3, 5], 8, 128),
    ("as recorded: q [1] x 7, kv [1031, 7, 0, 33, 128, 7, 1031], 1 head, d256", [1] * 7,
     [1031, 7, 0, 33, 128, 7, 1031], 1, 256),
    ("q [1], kv [5]: one request", [1], [5], 8, 128),
    ("q [1, 2], kv [3, 5]: one row and two", [1, 2], [3, 5], 8, 128),
    ("q [1, 0], kv [3, 5]: one row and none", [1, 0], [3, 5], 8, 128),
]


def child(qo: list[int], kv: list[int], heads: int, d: int) -> None:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    g = torch.Generator(device="cuda").manual_seed(0)

    def jagged(lens: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        values = torch.randn(sum(lens), heads, d, device="cuda", dtype=torch.float16, generator=g)
        offsets = torch.tensor([0] + [sum(lens[: i + 1]) for i in range(len(lens))], device="cuda")
        return values, torch.nested.nested_tensor_from_jagged(values, offsets).transpose(1, 2)

    (qv, q), (kvv, k), (vv, v) = jagged(qo), jagged(kv), jagged(kv)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
    got = out.transpose(1, 2).values().float()
    err, q0, k0 = 0.0, 0, 0
    for n, m in zip(qo, kv):
        if m:
            s = torch.einsum("qhd,khd->hqk", qv[q0 : q0 + n].float(), kvv[k0 : k0 + m].float()) / d**0.5
            ref = torch.einsum("hqk,khd->qhd", s.softmax(-1), vv[k0 : k0 + m].float())
        else:
            ref = torch.zeros(n, heads, d, device="cuda")
        err = max(err, (got[q0 : q0 + n] - ref).abs().max().item() if n else 0.0)
        q0, k0 = q0 + n, k0 + m
    print(json.dumps({"max_err": round(err, 4), "nan": bool(got.isnan().any())}))


def main(seconds: float) -> int:
    import torch

    if not torch.cuda.is_available():
        print("needs CUDA")
        return 2
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    bad = []
    for name, qo, kv, heads, d in BATCHES:
        cmd = [sys.executable, __file__, "--child", json.dumps([qo, kv, heads, d])]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds)
            if p.returncode:
                r = f"raised: {(p.stderr.strip().splitlines() or ['exit ' + str(p.returncode)])[-1][:200]}"
                wrong = True
            else:
                got = json.loads(p.stdout.strip().splitlines()[-1])
                wrong = got["nan"] or got["max_err"] > 0.02
                r = f"max err {got['max_err']}, NaN {got['nan']}"
        except subprocess.TimeoutExpired:
            r, wrong = f"HUNG: no return within {seconds:g} s (the child was killed)", True
        print(f"{'FAIL' if wrong else 'ok  '} {name:75s} {r}", flush=True)
        if wrong and name.startswith("control"):
            print("     a control failed: the set-up is wrong, not the defect")
            return 2
        if wrong:
            bad.append(name.split(":")[0])
    print("DEFECT REPRODUCED: " + "; ".join(bad) if bad else "not reproduced")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*json.loads(sys.argv[2]))
        sys.exit(0)
    sys.exit(main(float(sys.argv[1]) if len(sys.argv) > 1 else 30.0))
