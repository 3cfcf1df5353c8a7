"""A fixed list of small cases covering every axis of a Case by name.

Written out (not sampled) so that every layout, KV layout, page size (1, one that divides
nothing, one larger than some requests), head grouping, head-dim pair, mask feature, dtype and
degenerate shape is exercised on every run. Shared by the textbook and SDPA comparisons.
"""
from __future__ import annotations

import re

from scenarios.case import Case

F32 = dict(q_dtype="fp32", kv_dtype="fp32", o_dtype="fp32")
F16 = dict(q_dtype="fp16", kv_dtype="fp16", o_dtype="fp16")
B16 = dict(q_dtype="bf16", kv_dtype="bf16", o_dtype="bf16")

CASES: tuple[Case, ...] = (
    # ragged: zero-length requests of every kind between ordinary ones; causal q<kv, q==kv, q>kv.
    Case(layout="ragged", qo_lens=(3, 0, 4, 2, 0, 5), kv_lens=(5, 4, 4, 0, 0, 2), num_qo_heads=2,
         num_kv_heads=2, head_dim_qk=8, head_dim_vo=8, causal=True, **F16, label="ragged MHA causal zero-len"),
    Case(layout="ragged", qo_lens=(4, 6), kv_lens=(9, 6), num_qo_heads=4, num_kv_heads=2, head_dim_qk=12,
         head_dim_vo=5, kv_layout="HND", **B16, label="ragged GQA HND qk12 vo5"),
    Case(layout="ragged", qo_lens=(5, 3), kv_lens=(8, 3), num_qo_heads=3, num_kv_heads=1, head_dim_qk=4,
         head_dim_vo=4, mask="custom", causal=True, window_left=2, **F32, label="ragged MQA custom+causal+window"),
    Case(layout="ragged", qo_lens=(), kv_lens=(), num_qo_heads=2, num_kv_heads=1, head_dim_qk=4,
         head_dim_vo=4, **F32, label="ragged empty batch"),
    # paged: page 1, a page size dividing none of the lengths, a page larger than a request.
    Case(layout="paged", qo_lens=(2, 3, 1), kv_lens=(3, 7, 1), num_qo_heads=2, num_kv_heads=1, head_dim_qk=6,
         head_dim_vo=6, page_size=1, **F32, label="paged page 1 MQA"),
    Case(layout="paged", qo_lens=(3, 4), kv_lens=(11, 4), num_qo_heads=4, num_kv_heads=2, head_dim_qk=8,
         head_dim_vo=3, page_size=5, kv_layout="HND", causal=True, window_left=3, **F16,
         label="paged page 5 HND GQA causal window"),
    Case(layout="paged", qo_lens=(4, 2, 0), kv_lens=(9, 3, 5), num_qo_heads=2, num_kv_heads=2, head_dim_qk=4,
         head_dim_vo=7, page_size=16, mask="custom", **B16, label="paged page 16 custom mask"),
    Case(layout="paged", qo_lens=(6,), kv_lens=(4,), num_qo_heads=2, num_kv_heads=2, head_dim_qk=4,
         head_dim_vo=4, page_size=3, causal=True, logits_soft_cap=1.0, mask="custom", **F32,
         label="paged causal qo over kv soft cap custom mask"),
    Case(layout="paged", qo_lens=(), kv_lens=(), num_qo_heads=2, num_kv_heads=2, head_dim_qk=4,
         head_dim_vo=4, page_size=4, **F16, label="paged empty batch"),
    # decode: one row per request, zero-length KV among them.
    Case(layout="decode", qo_lens=(1, 1, 1), kv_lens=(6, 0, 13), num_qo_heads=6, num_kv_heads=2,
         head_dim_qk=8, head_dim_vo=8, page_size=3, logits_soft_cap=2.0, sm_scale=0.7, **F16,
         label="decode soft cap sm_scale"),
    Case(layout="decode", qo_lens=(1, 1), kv_lens=(5, 9), num_qo_heads=4, num_kv_heads=4, head_dim_qk=5,
         head_dim_vo=5, page_size=2, kv_layout="HND", window_left=0, **B16, label="decode HND window 0"),
    Case(layout="decode", qo_lens=(), kv_lens=(), num_qo_heads=4, num_kv_heads=1, head_dim_qk=4,
         head_dim_vo=4, page_size=2, **F32, label="decode empty batch"),
    # single: both KV layouts, window without causal, large logits.
    Case(layout="single", qo_lens=(5,), kv_lens=(5,), num_qo_heads=2, num_kv_heads=1, head_dim_qk=8,
         head_dim_vo=8, window_left=1, **F32, label="single window 1 without causal"),
    Case(layout="single", qo_lens=(4,), kv_lens=(7,), num_qo_heads=4, num_kv_heads=2, head_dim_qk=6,
         head_dim_vo=4, kv_layout="HND", causal=True, window_left=0, logits_soft_cap=3.0, **F32,
         label="single HND causal window 0 soft cap"),
    Case(layout="single", qo_lens=(3,), kv_lens=(10,), num_qo_heads=2, num_kv_heads=2, head_dim_qk=16,
         head_dim_vo=16, input_scale=16.0, **F32, label="single large logits"),
    Case(layout="single", qo_lens=(3,), kv_lens=(0,), num_qo_heads=2, num_kv_heads=1, head_dim_qk=4,
         head_dim_vo=4, **F16, label="single kv 0"),
    # fp8, every format, with non-unit descales; fp8 KV under a 16-bit query.
    Case(layout="ragged", qo_lens=(3, 2), kv_lens=(6, 4), num_qo_heads=4, num_kv_heads=2, head_dim_qk=8,
         head_dim_vo=8, q_dtype="e4m3fn", kv_dtype="e4m3fn", o_dtype="bf16", q_scale=0.5, k_scale=2.0,
         v_scale=0.25, causal=True, label="ragged e4m3fn descales"),
    Case(layout="paged", qo_lens=(2, 3), kv_lens=(7, 3), num_qo_heads=2, num_kv_heads=1, head_dim_qk=4,
         head_dim_vo=4, q_dtype="e5m2", kv_dtype="e5m2", o_dtype="fp16", q_scale=1.5, k_scale=0.75,
         v_scale=3.0, page_size=3, kv_layout="HND", label="paged e5m2 descales"),
    Case(layout="decode", qo_lens=(1, 1), kv_lens=(5, 8), num_qo_heads=2, num_kv_heads=2, head_dim_qk=4,
         head_dim_vo=4, q_dtype="e4m3fnuz", kv_dtype="e4m3fnuz", o_dtype="bf16", q_scale=0.25, k_scale=4.0,
         v_scale=0.5, page_size=5, label="decode e4m3fnuz descales"),
    Case(layout="paged", qo_lens=(3,), kv_lens=(9,), num_qo_heads=4, num_kv_heads=2, head_dim_qk=8,
         head_dim_vo=8, q_dtype="bf16", kv_dtype="e4m3fn", o_dtype="bf16", k_scale=0.5, v_scale=2.0,
         page_size=4, causal=True, label="paged bf16 q over e4m3fn KV"),
)

# Shell-safe ids, so a node id can be pasted into a command line (and named by a mutant).
CASE_IDS = [re.sub(r"[^A-Za-z0-9]+", "-", c.label) for c in CASES]
