"""How attncheck's processes use Python's cyclic garbage collector.

A process that has imported torch holds some 400,000 objects the collector tracks, and every full
collection walks all of them: the one Python runs at exit, and the ones a long pytest worker runs as
its heap grows. None of those objects become garbage, so walking them finds nothing.

- `skip_final_collection()`: at exit, the heap is frozen (`gc.freeze`) before the interpreter's last
  collection, which then has nothing to walk. atexit handlers and weakref finalizers still run; only
  cyclic garbage still alive at exit goes unfinalized, which Python never promises to finalize.
  attncheck writes and flushes every record as it is produced, so no result waits on a finalizer.
- `freeze_what_is_loaded()`: a pytest process, once its tests are collected, freezes what it has
  loaded (modules, torch, the collected items); on the CPU it also collects the oldest generation
  less often. On a GPU it keeps Python's rate: device memory held by cyclic garbage is only freed
  by a collection. The garbage of each test is collected as before.

docs/test-times.md gives what each saves.
"""

from __future__ import annotations

import atexit
import gc

from kernels._env import device_type

# gc.set_threshold's third value: a full collection is considered after this many collections of the
# middle generation (Python's default is 10). After a freeze the collector counts the frozen objects out
# of its "long-lived" total, so by its 25% growth rule it would run a full collection every 10.
FULL_COLLECTION_EVERY = 100

_registered = False


def skip_final_collection() -> None:
    """Freeze the heap at exit, once per process, so the interpreter's last collection walks nothing."""
    global _registered
    if not _registered:
        atexit.register(gc.freeze)
        _registered = True


def freeze_what_is_loaded(device: str) -> None:
    """Take everything alive now out of later collections; on the CPU, run full collections less often."""
    gc.collect()  # what is garbage now is collected, not frozen
    gc.freeze()
    if device_type(device) == "cpu":
        young, middle, _ = gc.get_threshold()
        gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
