"""Kernel launches of the stand-ins, and a CUDA-graph stand-in that records them.

Shared by both FlashInfer stand-ins; part of neither library's API. A CPU has no CUDA graphs, yet
the adapter's graph mode (kernels/flashinfer/adapter.py: warm-up, capture, replay after a re-plan)
is where wrapper lifecycles show (the fork's "the first plan decides", rocm_fork.md section 4,
rule 14; upstream's fixed buffers). So every stand-in run() hands its kernel to `launch()`: run
now, or, while a `RecordedGraphs.capture` is under way, recorded with the Python scalars bound at
capture and the wrapper's buffers read at replay -- which is what a captured graph does.
"""

from __future__ import annotations

from typing import Callable, Optional

__attncheck_standin__ = "flashinfer-standin-kernels"

_capturing: Optional[list] = None


def launch(kernel: Callable[[], None]) -> None:
    """Run `kernel` now, or record it when a capture is under way."""
    if _capturing is not None:
        _capturing.append(kernel)
    else:
        kernel()


def capturing() -> bool:
    """Whether a RecordedGraphs capture is under way (the fork checks stream capture in places)."""
    return _capturing is not None


class RecordedGraphs:
    """kernels.flashinfer.adapter.TorchGraphs' interface (warmup, capture, replay) over recorded launches."""

    def __init__(self) -> None:
        self.warmups = 0
        self.captures = 0
        self.replays = 0

    def warmup(self, fn: Callable[[], object]) -> None:
        self.warmups += 1
        fn()

    def capture(self, fn: Callable[[], object]) -> list:
        global _capturing
        _capturing = []
        try:
            fn()
            return _capturing
        finally:
            self.captures += 1
            _capturing = None

    def replay(self, launches: list) -> None:
        self.replays += 1
        for kernel in launches:
            kernel()
