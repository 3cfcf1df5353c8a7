"""What the upstream model (a CPU stand-in) records of the calls made to it, for whoever drives it to read.

Part of the upstream FlashInfer model, not of FlashInfer's API: every call is logged in
STATE.calls as {"api", "method", "wrapper", "args", "kwargs"}; STATE.wrappers holds every wrapper
made, STATE.single_modules the backends get_single_prefill_module was asked for. install() clears it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__attncheck_standin__ = "flashinfer-upstream"


@dataclass
class State:
    calls: list = field(default_factory=list)
    wrappers: list = field(default_factory=list)
    single_modules: list = field(default_factory=list)

    def clear(self) -> None:
        self.calls.clear()
        self.wrappers.clear()
        self.single_modules.clear()


STATE = State()


def log(api: str, method: str, wrapper: Any, args: tuple, kwargs: dict) -> None:
    STATE.calls.append(
        {
            "api": api,
            "method": method,
            "wrapper": id(wrapper) if wrapper is not None else None,
            "args": args,
            "kwargs": dict(kwargs),
        }
    )
