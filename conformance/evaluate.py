"""One (case, backend) evaluated: supports -> plan -> run -> judge, as a record, with the fresh-adapter
control of a failing record and the CUDA-context probe after an error.

The in-process run (conformance/parity_run.py), its isolated child (conformance/isolate.py) and the
pytest grid (conformance/test_parity_grid.py) all evaluate through here.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import replace
from typing import Any, Callable, Optional

from kernels._env import context_after_error
from kernels.errors import LibraryRefused
from kernels.protocol import AttentionKernel, reason_to_json, route_of_failed_run, wrapper_of_last_plan
from oracle.judge import Truth, judge, truth
from reports.records import FAILING, ParityRecord, is_crash
from scenarios.case import Case
from scenarios.errors import InvalidValue
from scenarios.tensors import Inputs, materialize

CONTEXT_LOST = "the CUDA context was lost after this case; the next case ran in a fresh process"
PENDING_CLEARED = "it left a pending CUDA error, read and cleared before the next case"
CONTEXT_LOST_IN_PROCESS = (
    "the CUDA context is lost after this case; every later case of the run is evaluated "
    "in a child process (as --isolate)"
)


def note_context(rec: ParityRecord, device: str, lost_text: Optional[str]) -> tuple[ParityRecord, bool]:
    """After a record's error on `device`: the record, naming what the probe met (a pending error,
    cleared, or the loss as `lost_text`; None: the caller names it), and whether the context still serves."""
    alive, met = context_after_error(device)
    if met and (alive or lost_text is not None):
        rec = replace(rec, reason=f"{rec.reason}; {PENDING_CLEARED if alive else lost_text}: {met}")
    return rec, alive


def evaluate(
    adapter: AttentionKernel, case: Case, inputs: Inputs, get_truth: Callable[[], Truth], base: dict
) -> ParityRecord:
    """One (case, backend): supports -> plan -> run -> judge, as a record; never raises for the library.

    `base` holds the record fields fixed for a run (run_id, target, device, seed). When the adapter
    reports per-variant timing (`last_timing`, FlashInfer), a variant's first use is recorded as
    compile time apart from run time. The record is built once, from what happened.
    """
    made: dict[str, Any] = dict(
        backend=adapter.backend, case_id=case.id, case=case.to_json(), features=list(case.features), **base
    )
    try:
        sup = adapter.supports(case)
    except Exception as e:  # a probe that calls the library met its defect: a record, not the run's end
        return ParityRecord(status="error", reason=f"supports() raised {type(e).__name__}: {e}"[:2000], **made)
    if not sup.ok:
        return ParityRecord(status="skip", reason=sup.reason, **made)
    raised: Optional[Exception] = None
    try:
        t0 = time.perf_counter()
        adapter.plan(inputs)
        t1 = time.perf_counter()
        res = adapter.run(inputs)
        t2 = time.perf_counter()
    except Exception as e:  # the library raised (or refused): recorded below, never raised
        raised = e
    # planned, whether or not the library then raised: the record names the wrapper it used
    made["wrapper"] = wrapper_of_last_plan(adapter)
    if isinstance(raised, LibraryRefused):
        return ParityRecord(status="refused", reason=f"{raised.message}", **made)
    if raised is not None:  # an error, reported with its type and text
        planned = route_of_failed_run(adapter, inputs)
        if planned is not None:  # plan() returned and said which backend: the record keeps it
            made.update(resolved_backend=planned[0], fallback_reason=reason_to_json(planned[1]))
        return ParityRecord(status="error", reason=f"{type(raised).__name__}: {raised}"[:2000], **made)
    timing = getattr(adapter, "last_timing", None)
    want_lse = case.return_lse and res.lse is not None
    out_cmp, lse_cmp = judge(
        get_truth(),
        res.out,
        res.lse if want_lse else None,
        lse_base=res.lse_base,
        adapter=adapter.target,
        backend=adapter.backend,
    )
    return ParityRecord(
        status="pass" if out_cmp.passed and (lse_cmp is None or lse_cmp.passed) else "fail",
        resolved_backend=res.resolved_backend,
        fallback_reason=reason_to_json(res.fallback_reason),
        out=out_cmp.to_json(),
        lse=lse_cmp.to_json() if lse_cmp is not None else None,
        lse_provided=res.lse is not None,
        plan_s=t1 - t0,
        run_s=t2 - t1,
        compile_s=timing.compile_s if timing is not None and timing.first_use else 0.0,
        **made,
    )


def fresh_control(
    adapter: AttentionKernel, case: Case, inputs: Inputs, get_truth: Callable[[], Truth], rec: ParityRecord
) -> ParityRecord:
    """For a failing record: the record with the same case's status on a fresh adapter in `fresh`.

    The run keeps one long-lived adapter per backend, as a server keeps its wrappers, so a record can
    fail because of an earlier plan (a stale mask, a sticky backend). A fresh adapter that passes
    says so: the case alone is fine, the history is not. A crash is not repeated.
    """
    if rec.status not in FAILING or is_crash(rec) or not callable(getattr(adapter, "fresh", None)):
        return rec
    base = {k: getattr(rec, k) for k in ("run_id", "target", "device", "seed", "standin")}
    return replace(rec, fresh=evaluate(adapter.fresh(), case, inputs, get_truth, base).status)


def evaluate_with_control(
    adapter: AttentionKernel,
    case: Case,
    inputs: Inputs,
    get_truth: Callable[[], Truth],
    base: dict,
    device: str,
    lost_text: Optional[str],
) -> tuple[ParityRecord, bool]:
    """evaluate(), then fresh_control() of a failing record, probing the CUDA context after each error:
    a pending error is read, cleared and named on the record (the next case would meet it otherwise),
    a loss is named as `lost_text` (None: the caller names it). Returns (record, whether the context
    still serves). The in-process run, the isolated child and the pytest grid evaluate through here."""
    rec, alive = evaluate(adapter, case, inputs, get_truth, base), True
    if rec.status == "error":
        rec, alive = note_context(rec, device, lost_text)
    if alive:
        rec = fresh_control(adapter, case, inputs, get_truth, rec)
        if rec.fresh == "error":
            rec, alive = note_context(rec, device, lost_text)
    return rec, alive


def make_adapter(target: Any, backend: str, device: str, options: dict) -> AttentionKernel:
    """A new adapter of `backend`, given the run's adapter options (a bad option is a usage error)."""
    if not options:
        return target.make(backend, device)
    try:
        return target.make(backend, device, **options)
    except (TypeError, ValueError) as e:
        raise InvalidValue(
            "--adapter-option",
            ",".join(f"{k}={v}" for k, v in options.items()),
            f"options the {target.name} target's adapters take",
            f"drop or correct it ({e})",
        ) from None


class CaseTruth:
    """A case's inputs, materialised once, and the oracle's truth for them, computed on first use (a case
    whose backends all decline never runs the oracle)."""

    def __init__(self, inputs: Inputs) -> None:
        self.inputs = inputs
        self._truth: Optional[Truth] = None

    def truth(self) -> Truth:
        if self._truth is None:
            self._truth = truth(self.inputs)
        return self._truth


class TruthCache:
    """The one cache of "this case's truth": per (case, seed, device), the least recently used dropped past
    `size`. The parity run and the pytest grid keep one case (its backends share it; cases arrive grouped,
    so memory stays flat); the scenario machines keep many (shrinking replays the same plans)."""

    def __init__(self, size: int = 1) -> None:
        self.size = size
        self._items: OrderedDict[tuple[Case, int, str], CaseTruth] = OrderedDict()

    def of(self, case: Case, seed: int, device: str, inputs: Optional[Inputs] = None) -> CaseTruth:
        """The entry of (case, seed, device); `inputs` (a captured batch) instead of materialising them."""
        key = (case, seed, device)
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        entry = self._items[key] = CaseTruth(inputs if inputs is not None else materialize(case, seed, device))
        while len(self._items) > self.size:
            self._items.popitem(last=False)
        return entry
