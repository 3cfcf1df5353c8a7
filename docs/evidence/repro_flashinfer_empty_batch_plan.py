#!/usr/bin/env python3
"""FlashInfer paged and ragged plan() raise on an empty batch (no requests).

A serving engine's step can carry no prefill request; plan() in 0.7.2.post1 takes `max()` of an
empty length tensor and raises torch's "max(): Expected reduction dim to be specified for
input.numel() == 0" instead of planning nothing (or raising a ValueError that names the batch).
Seen through attncheck on an H200 for fa2 eager and graph mode (docs/evidence/
2026-11-30-flashinfer-h200-matrix.md). This script makes the two calls alone.

    python3 repro_flashinfer_empty_batch_plan.py    # exit 1 when either plan() raises

Only torch and flashinfer; no attncheck code.
"""
import sys

import flashinfer
import torch

dev = "cuda"
ws = lambda: torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev)  # noqa: E731
zero = torch.zeros(1, dtype=torch.int32, device=dev)
empty = torch.zeros(0, dtype=torch.int32, device=dev)
print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
raised = []
for name, call in {
    "paged": lambda: flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws(), "NHD", backend="fa2").plan(
        zero, zero, empty, empty, 4, 2, 128, 16, q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16),
    "ragged": lambda: flashinfer.BatchPrefillWithRaggedKVCacheWrapper(ws(), "NHD", backend="fa2").plan(
        zero, zero, 4, 2, 128, q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16),
}.items():
    try:
        call()
        print(f"{name:6s}: plan() of an empty batch returned")
    except Exception as e:
        raised.append(name)
        print(f"{name:6s}: plan() of an empty batch raised {type(e).__name__}: {str(e).splitlines()[0][:160]}")
print("DEFECT REPRODUCED: plan() raises on an empty batch" if raised else "not reproduced")
sys.exit(1 if raised else 0)
