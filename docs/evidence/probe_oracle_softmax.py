#!/usr/bin/env python3
"""Probe: the fused softmax's passes over one chunk of scores, one way at a time, on a GPU.

The oracle's chunk on issue 20's shape at the H200's 4 GiB budget is [8 heads, 4096 rows, 8192 keys] fp32 (1
GiB). For each way of taking the row max (with its key), the softmax and the reference passes (a copy: one read
and one write; a sum: one read), the best of 5 in ms and the bytes moved over the time as GB/s, counting one
read of the scores per reading pass. The two-level max: the maxima of blocks of B keys (one read at the
memory's speed, a write of 1/B), the max with its index over those, and the argmax inside the winning block.
Run from the repository root: python3 docs/evidence/probe_oracle_softmax.py [--device cuda] [--rows 4096]
"""

import argparse
import time

import torch


def best(fn, device, n=5):
    fn()
    times = []
    for _ in range(n):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return min(times)


def two_level(s, block):
    """(max, first key of it) per row of s [h, r, kv], kv a multiple of block."""
    h, r, kv = s.shape
    bm = s.view(h, r, kv // block, block).amax(dim=-1)
    m, bi = bm.max(dim=-1, keepdim=True)
    keys = bi * block + torch.arange(block, device=s.device)
    w = s.gather(-1, keys).argmax(dim=-1, keepdim=True)
    return m, bi * block + w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--kv", type=int, default=8192)
    a = ap.parse_args()
    dev = a.device
    torch.manual_seed(0)
    s = torch.randn(a.heads, a.rows, a.kv, device=dev) * 3
    p = torch.empty_like(s)
    gb = s.numel() * 4 / 1e9
    m_ref, at_ref = s.max(dim=-1, keepdim=True)
    ways = {
        "copy (1 read, 1 write)": (lambda: p.copy_(s), 2),
        "sum (1 read)": (lambda: s.sum(dim=-1, keepdim=True), 1),
        "max with index": (lambda: s.max(dim=-1, keepdim=True), 1),
        "amax": (lambda: s.amax(dim=-1, keepdim=True), 1),
        "argmax": (lambda: s.argmax(dim=-1, keepdim=True), 1),
        "torch.softmax": (lambda: torch.softmax(s, dim=-1), 2),
        "aten._softmax.out into p": (lambda: torch.ops.aten._softmax.out(s, -1, False, out=p), 2),
        "literal: amax, sub_, exp_, sum (on p)": (
            lambda: p.copy_(s).sub_(p.amax(dim=-1, keepdim=True)).exp_().sum(dim=-1),
            8,
        ),
    }
    for block in (8, 16, 32, 64, 128, 256):
        if a.kv % block == 0:
            m, at = two_level(s, block)
            assert torch.equal(m, m_ref) and torch.equal(at, at_ref), block
            ways[f"two-level max, blocks of {block}"] = (lambda block=block: two_level(s, block), 1)
    print(
        f"torch {torch.__version__}, {torch.cuda.get_device_name() if dev == 'cuda' else 'cpu'}, "
        f"scores {list(s.shape)} fp32 ({gb:.2f} GB)"
    )
    print("| way | ms | GB/s |\n|---|---|---|")
    for name, (fn, passes) in ways.items():
        t = best(fn, dev)
        print(f"| {name} | {t * 1e3:.3f} | {passes * gb / t:.0f} |", flush=True)


if __name__ == "__main__":
    main()
