"""Reasons an adapter declines a case, as named constants so skips are counted by reason.

A skip is a decision: each comes from supports() returning one of these (optionally with a
detail after ': '), and the run summary lists skips grouped by the constant.
"""

from __future__ import annotations

NO_SOFT_CAP = "backend has no logits soft cap"
NO_FP8 = "backend has no fp8 inputs"
MIXED_QKV_DTYPE = "backend needs q and kv in the same dtype"
OUTPUT_DTYPE = "backend writes the output in the query dtype only"
DEVICE_BACKEND = "backend does not exist on this device"
HEAD_DIM = "backend does not support this head dim"
LIBRARY_REFUSED = "library refused the configuration"
LAYOUT = "backend does not serve this layout"
MASK = "backend does not take this mask"
DTYPE = "backend does not support this dtype"
LSE = "backend cannot return LSE"
TOO_LARGE = "case exceeds the adapter's materialisation budget"


def detail(constant: str, text: str) -> str:
    """A reason constant with a case-specific detail; grouping keys on the constant."""
    return f"{constant}: {text}"


def constant_of(reason: str) -> str:
    return reason.split(": ", 1)[0]


# A layout the adapter cannot capture in a CUDA graph (single prefill: no plan(), no fixed buffers).
GRAPH_MODE = "adapter has no CUDA-graph mode for this layout"

# Not the case's fault: the run's --time-budget was spent before the case's turn came.
TIME_BUDGET = "not run, the time budget of the run was spent"

PAGE_SIZE = "backend does not support this page size"

# A causal case whose causal rule the backend states differently: SDPA's is_causal aligns the diagonal
# top-left, attncheck's causal (FlashInfer's) bottom-right; the two agree only where q and kv lengths do.
CAUSAL_ALIGNMENT = "backend's causal mask aligns top-left, the case's bottom-right"
