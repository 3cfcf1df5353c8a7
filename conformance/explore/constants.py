"""The same draws for the same arguments, whichever entry point runs the machines.

Hypothesis draws now and then a constant found in the source of any local module the process has
loaded (`_get_local_constants` in hypothesis/internal/conjecture/providers.py, hypothesis 6.155.2),
so one seed drew different sequences under `attncheck explore` (the command line imports every
subcommand's modules), `python -m conformance.explore.loop` (a GPU run's subject process) and pytest.
`pinned_constants()` replaces that pool, while an exploration runs, by the constants of a fixed list
of modules: those that say what a machine draws and which thresholds its routing gates test
(`PINNED_MODULES`), so a gate's boundary value stays likely without depending on what else is loaded.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from typing import Any, Iterator

from hypothesis.internal.conjecture import providers
from hypothesis.internal.constants_ast import constants_from_module

# The modules whose constants the machines draw from: the axes and strategies, and the routing specs
# whose thresholds (query lengths, page sizes) the machines' lengths straddle.
PINNED_MODULES = (
    "scenarios.axes",
    "scenarios.strategies",
    "routing.specs.torch_sdpa",
    "routing.specs.flashinfer_cuda",
    "routing.specs.flashinfer_rocm",
)


@functools.lru_cache(maxsize=1)
def pinned_pool() -> Any:
    """The constants of PINNED_MODULES, as Hypothesis's provider holds its local constants."""
    pool = providers.Constants()
    for name in PINNED_MODULES:
        pool |= constants_from_module(importlib.import_module(name))
    return pool


@contextlib.contextmanager
def pinned_constants() -> Iterator[None]:
    """Hypothesis's local constants fixed to `pinned_pool()` for the duration; the cache of allowed
    constants is cleared on entry and exit, so nothing drawn before leaks in or out."""
    pool = pinned_pool()
    saved = providers._get_local_constants
    providers._get_local_constants = lambda: pool
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = saved
        providers.CONSTANTS_CACHE.cache.clear()
