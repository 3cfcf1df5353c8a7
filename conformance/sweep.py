"""`attncheck sweep`: A/B timing of two backends over a grid of shapes, in the seeds' layout.

The grid is the seeds' (rows batch x kv_len, columns q_len; seed 001 measured paged prefill,
page_size 16, GQA 32/8, head dim 128, causal bf16): SEED_GRID, changeable from the command line.
Per configuration, both backends are planned once on the same inputs, warmed up, then timed
`reps` times with the order alternating (A B, B A, A B, ...), so a slow drift of the machine
(clocks, temperature) falls on both and each repetition gives one paired sample. What is timed
is the adapter's `bench_call` where it has one (FlashInfer: the library's run() alone, on buffers
allocated once), else its run().

Timers: on CUDA, CUDA events around the call, and before each timed call a write over a buffer
larger than L2 (cold L2: each call reads its KV from memory, as a serving step does), then a
synchronisation, so the start event fires on an idle GPU as the host begins the call. The interval
is therefore one eager call's latency: the host's launch work inside run() and the kernels, never
a part of either hidden behind the flush (seen on the H200: without that synchronisation a call
whose host part is shorter than the flush looked faster than it is). On the CPU
a wall clock (time.perf_counter; CPU calls are synchronous) and no flush, on purpose: CPU ratios
are warm-cache ratios, good for exercising the sweep and its statistics, not for routing a GPU.

Configurations are materialised `chunk` at a time (inputs freed before the next chunk), so a
grid of large shapes never holds all its tensors at once. Each configuration's TimingRecord is
written to timing.jsonl as soon as it is measured, and one progress line is printed.
"""

from __future__ import annotations

import datetime as _dt
import gc
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol

import numpy as np

from conformance.markers import arch_here
from conformance.parity_run import HARNESS_VERSION
from kernels import get_target
from kernels.errors import KernelUnavailable, UnknownBackend
from kernels.protocol import AttentionKernel
from reports.records import RunFooter, RunHeader, TimingRecord
from reports.sink import JsonlSink
from reports.stats import MIN_SAMPLES, paired_ratio
from scenarios.case import Case
from scenarios.errors import InvalidValue
from scenarios.tensors import materialize

TIMING_FILE = "timing.jsonl"
CUDA_EVENTS, WALL = "cuda-events", "wall"
# When torch does not report the L2 size, flush this much (larger than any current GPU's L2).
FALLBACK_FLUSH_BYTES = 256 << 20


@dataclass(frozen=True)
class Grid:
    """Shapes to time: rows (batch, kv_len) x columns q_len, the rest fixed."""

    rows: tuple[tuple[int, int], ...]
    q_lens: tuple[int, ...]
    layout: str = "paged"
    num_qo_heads: int = 32
    num_kv_heads: int = 8
    head_dim: int = 128
    dtype: str = "bf16"
    page_size: int = 16
    causal: bool = True

    def case(self, batch: int, kv_len: int, q_len: int) -> Case:
        return Case(
            self.layout,
            (q_len,) * batch,
            (kv_len,) * batch,
            self.num_qo_heads,
            self.num_kv_heads,
            head_dim_qk=self.head_dim,
            head_dim_vo=self.head_dim,
            q_dtype=self.dtype,
            kv_dtype=self.dtype,
            o_dtype=self.dtype,
            page_size=self.page_size if self.layout in ("paged", "decode") else 1,
            causal=self.causal,
            return_lse=False,
            label=f"sweep {config_id(self.layout, batch, kv_len, q_len)}",
        )

    def configs(self) -> list[tuple[int, int, int]]:
        """(batch, kv_len, q_len) row by row, columns in order: the table's reading order."""
        return [(b, k, q) for b, k in self.rows for q in self.q_lens]


# Seed 001 (lines 152-159): the paged short-query sweep behind the gfx942/gfx950 threshold.
SEED_GRID = Grid(rows=((1, 1024), (1, 8192), (8, 1024), (8, 8192), (32, 2048)), q_lens=(16, 24, 32, 64, 128, 256))


def config_id(layout: str, batch: int, kv_len: int, q_len: int) -> str:
    return f"{layout}/bs{batch}/kv{kv_len}/q{q_len}"


def parse_rows(text: str) -> tuple[tuple[int, int], ...]:
    """ "1x1024,8x8192" -> ((1, 1024), (8, 8192))."""
    out = []
    for item in text.split(","):
        b, sep, k = item.strip().partition("x")
        if not (sep and b.isdigit() and k.isdigit() and int(b) > 0 and int(k) > 0):
            raise InvalidValue("--rows", text, "BATCHxKV pairs separated by commas", "pass e.g. --rows 1x1024,8x8192")
        out.append((int(b), int(k)))
    if len(set(out)) != len(out):
        raise InvalidValue("--rows", text, "each shape once", "drop the repeated shape")
    return tuple(out)


def parse_ints(flag: str, text: str) -> tuple[int, ...]:
    """ "16,24,32" -> (16, 24, 32), strictly increasing and positive."""
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() and int(p) > 0 for p in parts):
        raise InvalidValue(flag, text, "positive integers separated by commas", f"pass e.g. {flag} 16,24,32")
    vals = tuple(int(p) for p in parts)
    if any(b <= a for a, b in zip(vals, vals[1:])):
        fixed = ",".join(map(str, sorted(set(vals))))
        raise InvalidValue(flag, text, "increasing values, each once", f"sort them, e.g. {flag} {fixed}")
    return vals


def parse_heads(text: str) -> tuple[int, int]:
    """ "32/8" -> (32, 8)."""
    q, sep, k = text.partition("/")
    if not (sep and q.isdigit() and k.isdigit() and int(q) > 0 and int(k) > 0):
        raise InvalidValue("--heads", text, "QO/KV head counts", "pass e.g. --heads 32/8")
    return int(q), int(k)


class Timer(Protocol):
    name: str
    cold_l2: bool

    def __call__(self, fn: Callable[[], Any]) -> float: ...


class WallTimer:
    """CPU: wall clock around a synchronous call; no cache flush (see the module docstring)."""

    name, cold_l2 = WALL, False

    def __call__(self, fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0


class CudaEventTimer:
    """CUDA: events around the call, after writing a buffer larger than L2 (cold L2)."""

    name, cold_l2 = CUDA_EVENTS, True

    def __init__(self, device: str) -> None:
        import torch

        self._torch = torch
        l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
        size = 2 * l2 if l2 > 0 else FALLBACK_FLUSH_BYTES
        self._flush = torch.empty(size, dtype=torch.uint8, device=device)

    def __call__(self, fn: Callable[[], Any]) -> float:
        torch = self._torch
        self._flush.zero_()
        torch.cuda.synchronize()  # the flush done: the interval starts on an idle GPU (module docstring)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3


def timer_for(device: str) -> Timer:
    return CudaEventTimer(device) if device.split(":")[0] == "cuda" else WallTimer()


def timed_call(adapter: AttentionKernel, inputs: Any) -> Callable[[], Any]:
    """What one timed repetition calls: the adapter's `bench_call` (the library's run alone, on buffers
    allocated once, no poisoning and no synchronisation, which would sit inside the timed interval),
    or, for an adapter without one, plan() then run() through the adapter."""
    bench = getattr(adapter, "bench_call", None)
    if callable(bench):
        return bench(inputs)
    adapter.plan(inputs)
    return lambda: adapter.run(inputs)


def time_interleaved(
    adapters: dict[str, AttentionKernel], inputs: Any, reps: int, warmup: int, timer: Timer
) -> dict[str, list[float]]:
    """Seconds per repetition for each backend, the order reversing between repetitions (A B, B A, ...)."""
    names = list(adapters)
    calls = {n: timed_call(adapters[n], inputs) for n in names}
    for _ in range(warmup):
        for n in names:
            calls[n]()
    samples: dict[str, list[float]] = {n: [] for n in names}
    for i in range(reps):
        for n in names if i % 2 == 0 else names[::-1]:
            samples[n].append(timer(calls[n]))
    return samples


@dataclass
class SweepOutcome:
    run_id: str
    out_dir: str
    records: list[TimingRecord] = field(default_factory=list)

    @property
    def path(self) -> str:
        return os.path.join(self.out_dir, TIMING_FILE)


def check_sweep(
    target_name: str, device: str, backends: list[str], grid: Grid, reps: int, warmup: int, chunk: int
) -> list[Case]:
    """Every usage error of a sweep, raised before anything runs or is written; the grid's cases."""
    if len(backends) != len(set(backends)) or not backends:
        raise InvalidValue("backends", backends, "distinct backends (A and B differ)", "pass two different backends")
    if reps < MIN_SAMPLES:
        raise InvalidValue("--reps", reps, f">= {MIN_SAMPLES} (an interval needs that many pairs)", "pass --reps 20")
    if warmup < 0:
        raise InvalidValue("--warmup", warmup, ">= 0", "pass --warmup 3")
    if chunk < 1:
        raise InvalidValue("--chunk", chunk, ">= 1 configurations at a time", "pass --chunk 4")
    cases = [grid.case(*c) for c in grid.configs()]  # an impossible shape is refused here
    target = get_target(target_name)
    avail = target.available(device)
    if not avail.ok:
        raise KernelUnavailable(target_name, avail.reason)
    offered = target.backends(device)
    for name in backends:
        if name not in offered:
            raise UnknownBackend(target_name, name, offered, device)
    return cases


def run_sweep(
    target_name: str,
    device: str,
    backends: list[str],
    grid: Grid,
    out_dir: str,
    reps: int = 20,
    warmup: int = 3,
    chunk: int = 4,
    seed: int = 0,
    argv: Optional[list[str]] = None,
    progress: Callable[[TimingRecord, int, int], None] = lambda r, i, n: None,
    timer: Optional[Timer] = None,
    on_config: Callable[[str], None] = lambda config_id: None,
) -> SweepOutcome:
    """Time `backends` (A and B for an A/B table) over `grid`; usage errors raise before anything is written.
    `on_config(config_id)` is called as a configuration starts, `progress(record, done, total)` as it ends."""
    cases = check_sweep(target_name, device, backends, grid, reps, warmup, chunk)
    configs = grid.configs()
    target = get_target(target_name)
    adapters = {n: target.make(n, device) for n in backends}
    timer = timer or timer_for(device)
    arch = arch_here(device)
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
    os.makedirs(out_dir, exist_ok=True)
    outcome = SweepOutcome(run_id, out_dir)
    if os.path.exists(outcome.path):
        os.replace(outcome.path, outcome.path + ".previous")
    started = time.perf_counter()
    with JsonlSink(outcome.path) as sink:
        sink.write(
            RunHeader(
                run_id=run_id,
                target=target_name,
                device=device,
                budget="sweep",
                seed=seed,
                versions=target.versions(),
                argv=list(argv or []),
                arch=arch,
                started=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                harness_version=HARNESS_VERSION,
            )
        )
        for lo in range(0, len(configs), chunk):
            batch_inputs = [materialize(c, seed, device) for c in cases[lo : lo + chunk]]
            for (bs, kv, q), case, inputs in zip(configs[lo : lo + chunk], cases[lo : lo + chunk], batch_inputs):
                rec = TimingRecord(
                    run_id=run_id,
                    target=target_name,
                    device=device,
                    arch=arch,
                    config_id=config_id(grid.layout, bs, kv, q),
                    layout=grid.layout,
                    batch=bs,
                    kv_len=kv,
                    q_len=q,
                    case=case.to_json(),
                    backends=list(backends),
                    samples={},
                    timer=timer.name,
                    cold_l2=timer.cold_l2,
                    warmup=warmup,
                )
                declined = [
                    f"{n}: {s.reason}" for n, s in ((n, ad.supports(case)) for n, ad in adapters.items()) if not s.ok
                ]
                if declined:
                    rec.status, rec.reason = "skip", "; ".join(declined)
                else:
                    on_config(rec.config_id)
                    try:
                        rec.samples = time_interleaved(adapters, inputs, reps, warmup, timer)
                    except Exception as e:  # the library raised: recorded, the sweep goes on
                        rec.status, rec.reason = "error", f"{type(e).__name__}: {e}"[:2000]
                sink.write(rec)
                outcome.records.append(rec)
                progress(rec, len(outcome.records), len(configs))
            del batch_inputs
            gc.collect()
            if device.split(":")[0] == "cuda":
                import torch

                torch.cuda.empty_cache()
        sink.write(
            RunFooter(
                run_id=run_id, counts=_counts(outcome.records), elapsed_s=time.perf_counter() - started, exit_status=0
            )
        )
    return outcome


def _counts(recs: list[TimingRecord]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in recs:
        out[r.status] = out.get(r.status, 0) + 1
    return out


def progress_line(rec: TimingRecord) -> str:
    """One line per configuration: each backend's median and, for two, the paired ratio with its interval."""
    if rec.status != "ok":
        return f"{rec.config_id}: {rec.status}: {rec.reason[:200]}"
    med = ", ".join(f"{n} {1e3 * float(np.median(s)):.3f} ms" for n, s in rec.samples.items())
    if len(rec.backends) != 2:
        return f"{rec.config_id}: {med}"
    a, b = rec.backends
    ci = paired_ratio(rec.samples[a], rec.samples[b])
    return f"{rec.config_id}: {med}, {a}/{b} {ci.ratio:.2f} [{ci.lo:.2f}, {ci.hi:.2f}]"
