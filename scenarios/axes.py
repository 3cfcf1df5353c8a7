"""Sole home of axis values: the regression matrix and the Hypothesis strategies both draw here.

A new head dim, page size or GQA ratio is added here and nowhere else.
"""

from __future__ import annotations

from typing import Literal

# The value types of Case.layout, Case.kv_layout and Case.mask (scenarios/case.py re-exports them).
Layout = Literal["ragged", "paged", "decode", "single"]
KVLayout = Literal["NHD", "HND"]
MaskKind = Literal["none", "custom"]

LAYOUTS: tuple[Layout, ...] = ("ragged", "paged", "decode", "single")
KV_LAYOUTS: tuple[KVLayout, ...] = ("NHD", "HND")
MASK_KINDS: tuple[MaskKind, ...] = ("none", "custom")
HEAD_DIMS = (64, 128, 256)
# (qk, vo) pairs where they differ (MLA-style prefill).
HEAD_DIM_PAIRS = ((64, 64), (128, 128), (256, 256), (192, 128))
PAGE_SIZES = (1, 5, 16)
# qo heads per kv head: MHA, GQA 4, GQA 8, and MQA (all qo heads share one kv head).
GQA_RATIOS = (1, 4, 8)
NUM_KV_HEADS = (1, 2, 4, 8)
WINDOWS = (-1, 0, 7, 64)
SOFT_CAPS = (0.0, 30.0, 50.0)
INPUT_DTYPES = ("fp16", "bf16", "fp32")
FP8_DTYPES = ("e4m3fn", "e4m3fnuz", "e5m2")
# Per-request lengths the matrix combines; 0 is a real request with nothing in it.
QO_LENS = (0, 1, 3, 17, 64, 127)
KV_LENS = (0, 1, 7, 33, 128, 300, 1031)
BATCH_SIZES = (1, 2, 3, 7)
# Long contexts (scenarios/matrix.py long_cases): key counts on every device, and on CUDA only. A case
# with a request of at least LONG_CONTEXT_KV keys has the feature "long_context".
LONG_KV = (8192,)
CUDA_LONG_KV = (32768, 131072)
LONG_CONTEXT_KV = min(LONG_KV)
# Standard deviation of generated input values: unit scale, large logits, and near fp16's reach.
INPUT_SCALES = (1.0, 4.0, 16.0)

# Stateful scenario machines (scenarios/strategies.py). Small batches whose query lengths sit on
# both sides of the routing gates' thresholds (8 and 16 in the ROCm fork's tables), so a machine
# crosses a gate in a few steps and a shrunk failure stays readable. Ranges are inclusive.
SCENARIO_BATCH_SIZES = (1, 2, 3)
SCENARIO_SHORT_QO = (1, 16)  # a "short" plan: every query length in here (at least one >= 1)
SCENARIO_LONG_QO = (17, 40)  # a "long" plan: at least one query length in here
SCENARIO_KV = (0, 48)
SCENARIO_NUM_KV_HEADS = (1, 2)
SCENARIO_GQA_RATIOS = (1, 4)
# Head dims the machines draw: equal dims, the soft-cap defect's 128, and qk != vo (MLA-style).
SCENARIO_HEAD_DIM_PAIRS = ((64, 64), (128, 128), (192, 128))
# Explicit sm_scale values a plan draws one time in four (else None: 1/sqrt(head_dim_qk)): smaller and
# larger than the default of every head dim above.
SCENARIO_SM_SCALES = (0.05, 0.3)
# A long context now and then: one plan in SCENARIO_LONG_ODDS gives its first request a key count in
# this range (accumulation error grows with the keys; the short range above stops at 48).
SCENARIO_LONG_KV = (1024, 8192)
SCENARIO_LONG_ODDS = 32
