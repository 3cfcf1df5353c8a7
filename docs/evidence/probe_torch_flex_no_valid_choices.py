#!/usr/bin/env python3
"""Probe: compiled FlexAttention on CUDA raising "NoValidChoicesError: No choices exist for backend".

On the H200 (torch 2.11.0+cu130) the torch target's flex backend raised it, a fresh adapter too, on three
quick-matrix cases (2026-12-03 call A, `attncheck run --target torch --device cuda --backend flex --budget
quick`). Is it the case (its shapes, strides, block mask) or the process's history (dynamo's caches after
earlier compiles)? Each case runs in a fresh process: the adapter as the run calls it, then the captured
flex_attention call replayed on a fresh compile (dynamo reset) as captured, with q made contiguous, with
kernel_options of 32x32 tiles, and eager. Prints the captured call and a table.

    python docs/evidence/probe_torch_flex_no_valid_choices.py            # all cases, a process each
    python docs/evidence/probe_torch_flex_no_valid_choices.py --one N    # case N here
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

BASE = {
    "input_scale": 1.0,
    "k_scale": None,
    "label": "sampled",
    "logits_soft_cap": 0.0,
    "mask": "none",
    "q_scale": None,
    "return_lse": True,
    "sm_scale": None,
    "v_scale": None,
    "window_left": -1,
}
CASES = [
    dict(
        BASE,
        layout="ragged",
        causal=False,
        head_dim_qk=192,
        head_dim_vo=128,
        q_dtype="fp32",
        kv_dtype="fp32",
        o_dtype="fp32",
        kv_layout="NHD",
        qo_lens=[64],
        kv_lens=[0],
        num_qo_heads=8,
        num_kv_heads=1,
        page_size=1,
    ),
    dict(
        BASE,
        layout="paged",
        causal=True,
        head_dim_qk=192,
        head_dim_vo=128,
        q_dtype="fp32",
        kv_dtype="fp32",
        o_dtype="fp32",
        kv_layout="HND",
        qo_lens=[17, 64],
        kv_lens=[300, 300],
        num_qo_heads=8,
        num_kv_heads=1,
        page_size=5,
    ),
    dict(
        BASE,
        layout="ragged",
        causal=True,
        head_dim_qk=64,
        head_dim_vo=64,
        q_dtype="bf16",
        kv_dtype="bf16",
        o_dtype="bf16",
        kv_layout="NHD",
        qo_lens=[17, 17, 64],
        kv_lens=[1, 7, 128],
        num_qo_heads=8,
        num_kv_heads=2,
        page_size=1,
    ),
    # a control the same run passed: bf16, head dim 64, ragged, not causal
    dict(
        BASE,
        layout="ragged",
        causal=False,
        head_dim_qk=64,
        head_dim_vo=64,
        q_dtype="bf16",
        kv_dtype="bf16",
        o_dtype="bf16",
        kv_layout="NHD",
        qo_lens=[17, 17, 64],
        kv_lens=[1, 7, 128],
        num_qo_heads=8,
        num_kv_heads=2,
        page_size=1,
    ),
]


def outcome(fn) -> str:
    try:
        fn()
        return "ok"
    except Exception as e:  # noqa: BLE001 - the probe reports whatever it meets
        return f"{type(e).__name__}: {str(e).splitlines()[0][:90]}"


def one(n: int) -> list[tuple[str, str]]:
    import torch
    import torch._dynamo
    from torch.nn.attention.flex_attention import flex_attention

    import kernels.torch_flex as tf
    from scenarios.case import Case
    from scenarios.tensors import materialize

    torch.backends.cuda.matmul.allow_tf32 = False
    case = Case.from_json(CASES[n])
    inputs = materialize(case, seed=0, device="cuda")
    captured: dict = {}
    real_call = tf._call

    def spy(fn, q, k, v, score_mod, block_mask, scale):
        captured.update(q=q, k=k, v=v, score_mod=score_mod, block_mask=block_mask, scale=scale)
        return real_call(fn, q, k, v, score_mod, block_mask, scale)

    tf._call = spy
    rows = [("adapter, as the run calls it", outcome(lambda: tf.FlexKernel("cuda").run(inputs)))]
    tf._call = real_call
    if not captured:
        return rows + [("(no flex call captured)", "-")]
    q, k, v, bm = captured["q"], captured["k"], captured["v"], captured["block_mask"]
    print(f"case {n}: {case.id}")
    print(
        f"  q {tuple(q.shape)} stride {q.stride()} {q.dtype}; k {tuple(k.shape)} stride {k.stride()}; "
        f"v {tuple(v.shape)} stride {v.stride()}"
    )
    print(
        f"  block_mask seq_lengths {bm.seq_lengths} BLOCK_SIZE {bm.BLOCK_SIZE} kv_num_blocks "
        f"{tuple(bm.kv_num_blocks.shape)}; scale {captured['scale']}"
    )

    def compiled(qq, **kw):
        torch._dynamo.reset()
        f = torch.compile(flex_attention, dynamic=False)
        return f(qq, k, v, block_mask=bm, scale=captured["scale"], enable_gqa=True, **kw)

    rows += [
        ("replayed on a fresh compile", outcome(lambda: compiled(q))),
        ("q contiguous", outcome(lambda: compiled(q.contiguous()))),
        ("kernel_options 32x32 tiles", outcome(lambda: compiled(q, kernel_options={"BLOCK_M": 32, "BLOCK_N": 32}))),
        ("eager", outcome(lambda: flex_attention(q, k, v, block_mask=bm, scale=captured["scale"], enable_gqa=True))),
    ]
    return rows


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        for what, got in one(int(argv[1])):
            print(f"  {what:32} {got}")
        return 0
    import torch

    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU'}")
    for n in range(len(CASES)):
        done = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, timeout=600)
        print(done.stdout, end="")
        if done.returncode:
            print(f"  exit {done.returncode}: {done.stderr.strip().splitlines()[-1:] if done.stderr else ''}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
