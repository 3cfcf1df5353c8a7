#!/usr/bin/env python3
"""Repro: jagged SDPA on CUDA, causal, a batch whose query rows are all empty: TypeError inside torch.

Seen through attncheck on the H200 (2026-12-03, docs/evidence/2026-12-03-h200-4/call3/torch/batched-auto/):
torch.nn.functional.scaled_dot_product_attention on nested (jagged) tensors, is_causal=True, one request of 0
query rows over 7 keys, 8/8 heads, head dim 256, fp16, raised TypeError "_nested_view_from_jagged(): argument
'input' (position 1) must be Tensor, not NoneType" where the CPU refuses the same call with a RuntimeError that
names why (no fused kernel takes a sequence length 0; math refuses is_causal). The jagged selector
(torch/nested/_internal/sdpa.py _select_sdp_backend) tries flash, efficient, math, then cuDNN: this script
prints its choice. Each variant runs in a child process:

  judged    is_causal=True, query lengths [0], key lengths [7], every backend enabled: a clean refusal
            (RuntimeError/ValueError) or an empty output is right; any other exception is the defect
  control   the same call with cuDNN disabled (torch.backends.cuda.enable_cudnn_sdp(False)): a clean refusal
  control   is_causal=True, query lengths [3], key lengths [3]: a fused kernel, the reference's output

    python3 repro_torch_nested_causal_empty_query.py

Exit 1 when the judged call raises another exception (or is wrong) while both controls answer as above, 0 when
it refuses cleanly or returns, 2 when a control answers otherwise. Only torch; no attncheck code.
"""

import json
import subprocess
import sys

H, D = 8, 256
VARIANTS = [  # (name, qo_lens, kv_lens, causal, cuDNN enabled, role, what a right answer is)
    ("causal, query lengths [0] over [7]", [0], [7], True, True, "judged", ("refused", "right")),
    ("the same, cuDNN disabled", [0], [7], True, False, "control", ("refused",)),
    ("causal, query lengths [3] over [3]", [3], [3], True, True, "control", ("right",)),
]


def child(qo, kv, causal, cudnn):
    import torch
    import torch.nn.functional as F
    from torch.nested._internal.sdpa import _select_sdp_backend

    if not cudnn:  # for the rest of this child process
        torch.backends.cuda.enable_cudnn_sdp(False)

    def jagged(lens):
        offsets = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], device="cuda")
        values = torch.randn(sum(lens), H, D, device="cuda", dtype=torch.float16)
        return values, torch.nested.nested_tensor_from_jagged(values, offsets).transpose(1, 2)

    torch.manual_seed(0)
    (qv, q), (kv_, k), (vv, v) = jagged(qo), jagged(kv), jagged(kv)
    choice = _select_sdp_backend(q, k, v, None, 0.0, causal, False)
    print(json.dumps({"choice": str(choice)}), flush=True)
    try:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    except (RuntimeError, ValueError) as e:
        print(json.dumps({"refused": str(e).strip().splitlines()[0][:200]}))
        return
    torch.cuda.synchronize()
    got = out.transpose(1, 2).values().float()
    s = torch.einsum("qhd,khd->hqk", qv.float(), kv_.float()) / D**0.5
    if causal:
        s.masked_fill_(torch.ones(s.shape[1:], dtype=torch.bool, device="cuda").triu(1), float("-inf"))
    ref = torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), vv.float())
    err = (got - ref).abs().max().item() if got.numel() else 0.0
    print(json.dumps({"rows": got.shape[0], "err": err}))


def run(qo, kv, causal, cudnn):
    p = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps([qo, kv, causal, cudnn])], capture_output=True, text=True
    )
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    choice = next((x["choice"] for x in lines if "choice" in x), "?")
    if p.returncode:
        err = p.stderr.strip().splitlines() or ["?"]
        why = next((x for x in reversed(err) if "Error" in x), err[-1])
        return "raises", f"selector {choice}; raised: {why.strip()[:220]}"
    last = lines[-1]
    if "refused" in last:
        return "refused", f"selector {choice}; refused: {last['refused']}"
    ok = last["err"] < 0.05
    return ("right" if ok else "wrong"), f"selector {choice}; {last['rows']} rows, max |out - ref| = {last['err']:.4g}"


def main():
    import torch

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"jagged SDPA, {H}/{H} heads, head dim {D}, fp16, every backend enabled")
    good = {}
    for name, qo, kv, causal, cudnn, role, right in VARIANTS:
        what, detail = run(qo, kv, causal, cudnn)
        good[name] = (role, what in right)
        print(f"{name} [{role}]: {what} ({detail})")
    if not all(ok for role, ok in good.values() if role == "control"):
        print("a control answered otherwise: the set-up, not the defect")
        return 2
    if not all(ok for role, ok in good.values() if role == "judged"):
        print("DEFECT REPRODUCED: causal jagged SDPA with no query rows fails inside torch instead of refusing")
        return 1
    print("not reproduced: the judged call refused cleanly or returned")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(*json.loads(sys.argv[2]))
    else:
        sys.exit(main())
