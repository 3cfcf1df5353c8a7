#!/usr/bin/env python3
"""torch: jagged (nested) SDPA forced to cuDNN on CUDA, a request with query rows and no keys: are its rows 0?

Plain torch, nothing of attncheck. Seen 2026-12-04 on the H200 (attncheck's torch standard matrix, backend
nested-cudnn, ragged-b6-h1x1-d256-bf16-zero_len): q [127, 127, 1, 64, 17, 64] over kv [128, 1, 1031, 1031, 33,
0], bf16, one head, head dim 256: the last request's 64 rows, which have no key, were not 0 (max 2.67). This
script's first version, each batch alone in a fresh process, found every batch right (its run of 2026-12-05):
fresh device memory reads 0. So each batch runs twice, each time in its own child process: on fresh memory,
and after the caching allocator was handed blocks filled with SENTINEL and took them back (what a long-lived
process's allocator holds: memory earlier tensors wrote). Rows of a request without keys that read SENTINEL
were never written by the call. The empty request sits first, in the middle and last, at two shapes; every
batch has two or more query rows a request (one row a request hangs: repro_torch_nested_cudnn_single_row_hang.py)
but the recorded one. Under sdpa_kernel(CUDNN_ATTENTION), against an fp32 reference per request (no keys: rows
of 0); for a wrong empty request the script prints its rows' largest value and how many rows read SENTINEL.
Exit 1 when a batch is wrong, 2 when a control fails or there is no CUDA, 0 otherwise.

    python docs/evidence/probe_torch_nested_cudnn_empty_kv_request.py [SECONDS]   # per child, default 60
"""

from __future__ import annotations

import json
import subprocess
import sys

# (name, q lens, kv lens, heads, head dim, dtype): controls (no empty request) first
BATCHES = [
    ("control: q [2, 2], kv [3, 5], 8 heads, d128, fp16", [2, 2], [3, 5], 8, 128, "float16"),
    ("control: q [64, 64], kv [33, 40], 1 head, d256, bf16", [64, 64], [33, 40], 1, 256, "bfloat16"),
    ("first: q [2, 2], kv [0, 3], 8 heads, d128, fp16", [2, 2], [0, 3], 8, 128, "float16"),
    ("middle: q [2, 2, 2], kv [3, 0, 5], 8 heads, d128, fp16", [2, 2, 2], [3, 0, 5], 8, 128, "float16"),
    ("last: q [2, 2], kv [3, 0], 8 heads, d128, fp16", [2, 2], [3, 0], 8, 128, "float16"),
    ("first: q [64, 64], kv [0, 33], 1 head, d256, bf16", [64, 64], [0, 33], 1, 256, "bfloat16"),
    ("middle: q [64, 64, 17], kv [33, 0, 40], 1 head, d256, bf16", [64, 64, 17], [33, 0, 40], 1, 256, "bfloat16"),
    ("last: q [64, 64], kv [33, 0], 1 head, d256, bf16", [64, 64], [33, 0], 1, 256, "bfloat16"),
    (
        "as recorded: q [127, 127, 1, 64, 17, 64], kv [128, 1, 1031, 1031, 33, 0], 1 head, d256, bf16",
        [127, 127, 1, 64, 17, 64],
        [128, 1, 1031, 1031, 33, 0],
        1,
        256,
        "bfloat16",
    ),
]


SENTINEL = 1024.0  # exact in fp16 and bf16, and far from any attention output of these inputs
MEMORY = ("fresh", "reused")


def hand_back_written_blocks(dtype: object) -> None:
    """Fill blocks of the allocator's small pool (up to 1 MiB) and large pool with SENTINEL, then free them:
    the next allocations are cut from memory that reads SENTINEL until written."""
    import torch

    held = [torch.full((2**18,), SENTINEL, dtype=dtype, device="cuda") for _ in range(64)]  # 512 KiB each
    held += [torch.full((2**23,), SENTINEL, dtype=dtype, device="cuda") for _ in range(8)]  # 16 MiB each
    torch.cuda.synchronize()
    del held


def child(qo: list[int], kv: list[int], heads: int, d: int, dtype: str, memory: str) -> None:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    g = torch.Generator(device="cuda").manual_seed(0)

    def jagged(lens: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        values = torch.randn(sum(lens), heads, d, device="cuda", dtype=getattr(torch, dtype), generator=g)
        offsets = torch.tensor([0] + [sum(lens[: i + 1]) for i in range(len(lens))], device="cuda")
        return values, torch.nested.nested_tensor_from_jagged(values, offsets).transpose(1, 2)

    def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        s = torch.einsum("qhd,khd->hqk", q.float(), k.float()) / d**0.5
        return torch.einsum("hqk,khd->qhd", s.softmax(-1), v.float())

    (qv, q), (kvv, k), (vv, v) = jagged(qo), jagged(kv), jagged(kv)
    if memory == "reused":
        hand_back_written_blocks(getattr(torch, dtype))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
    got = out.transpose(1, 2).values().float()
    qs = [sum(qo[:i]) for i in range(len(qo) + 1)]
    ks = [sum(kv[:i]) for i in range(len(kv) + 1)]
    err, empty = 0.0, []
    for i, (n, m) in enumerate(zip(qo, kv)):
        rows, qi = got[qs[i] : qs[i + 1]], qv[qs[i] : qs[i + 1]]
        ref = attend(qi, kvv[ks[i] : ks[i + 1]], vv[ks[i] : ks[i + 1]]) if m else torch.zeros_like(rows)
        e = (rows - ref).abs().max().item() if n else 0.0
        err = max(err, e)
        if not m and n and e > 0.02:
            like = {}
            for side, j in (("previous", i - 1), ("next", i + 1)):
                if 0 <= j < len(kv) and kv[j]:
                    a = attend(qi, kvv[ks[j] : ks[j + 1]], vv[ks[j] : ks[j + 1]])
                    like[side] = round((rows - a).abs().max().item(), 4)
            unwritten = int((rows == SENTINEL).all(-1).all(-1).sum().item())
            empty.append(
                {
                    "request": i,
                    "max_abs": round(rows.abs().max().item(), 4),
                    f"rows_reading_{SENTINEL:g}": f"{unwritten} of {n}",
                    "dist_to_attention_over": like,
                }
            )
    print(json.dumps({"max_err": round(err, 4), "nan": bool(got.isnan().any()), "empty_requests": empty}))


def main(seconds: float) -> int:
    import torch

    if not torch.cuda.is_available():
        print("needs CUDA")
        return 2
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    bad = []
    for name, qo, kv, heads, d, dtype in BATCHES:
        for memory in MEMORY:
            cmd = [sys.executable, __file__, "--child", json.dumps([qo, kv, heads, d, dtype, memory])]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds)
                if p.returncode:
                    r = f"raised: {(p.stderr.strip().splitlines() or ['exit ' + str(p.returncode)])[-1][:200]}"
                    wrong = True
                else:
                    got = json.loads(p.stdout.strip().splitlines()[-1])
                    wrong = got["nan"] or got["max_err"] > 0.02
                    r = f"max err {got['max_err']}, NaN {got['nan']}"
                    r += "".join(f"; empty request {e['request']}: {e}" for e in got["empty_requests"])
            except subprocess.TimeoutExpired:
                r, wrong = f"HUNG: no return within {seconds:g} s (the child was killed)", True
            print(f"{'FAIL' if wrong else 'ok  '} {name:95s} {memory:6s} {r}", flush=True)
            if wrong and name.startswith("control"):
                print("     a control failed: the set-up is wrong, not the defect")
                return 2
            if wrong:
                where = name.split(":")[0] + ": " + name.split(": ")[1].split(", 1 head")[0].split(", 8 heads")[0]
                bad.append(f"{where} ({memory} memory)")
    print("DEFECT REPRODUCED: " + "; ".join(bad) if bad else "not reproduced")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*json.loads(sys.argv[2]))
        sys.exit(0)
    sys.exit(main(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0))
