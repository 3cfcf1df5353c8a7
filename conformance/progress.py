"""Progress of a long run: lines with the time spent and an estimate of the time left, and a heartbeat
while one item runs long, so that a run on a single large case does not sit silent for minutes.

    pace(done, total, elapsed_s) -> "31 s elapsed, about 6 min 40 s left"
    Pace().line(done, total, "records written") -> "[50/372] records written, 31 s elapsed, ..." when due
    with Heartbeat(30.0) as beat:   # "  still on case X on math, 95 s" every 30 s while one item runs
        beat.begin("case X on math"); ...; beat.end()
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

HEARTBEAT_S = 30.0  # default interval of the heartbeat and of time-driven progress lines
EVERY = 50  # a progress line at least every this many items


def duration(seconds: float) -> str:
    """4.5 s, 45 s, 2 min 05 s, 1 h 02 min."""
    if seconds < 10:
        return f"{max(0.0, seconds):.1f} s"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def pace(done: int, total: int, elapsed_s: float) -> str:
    """The time spent and the time left, estimated as the mean time per item done so far times the items left."""
    if done >= total:
        return f"{duration(elapsed_s)} elapsed"
    if done <= 0:
        return f"{duration(elapsed_s)} elapsed, time left not yet known"
    return f"{duration(elapsed_s)} elapsed, about {duration(elapsed_s / done * (total - done))} left"


class Pace:
    """When a progress line is due (every EVERY items, every `interval_s` seconds, the last item) and its text."""

    def __init__(self, interval_s: float = HEARTBEAT_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s, self.clock = interval_s, clock
        self.started = self.last = clock()

    def line(self, done: int, total: int, what: str) -> Optional[str]:
        """`[done/total] WHAT, <pace>` when a line is due, else None."""
        now = self.clock()
        due = done >= total or done % EVERY == 0 or (self.interval_s > 0 and now - self.last >= self.interval_s)
        if not due:
            return None
        self.last = now
        return f"[{done}/{total}] {what}, {pace(done, total, now - self.started)}"


def _say(line: str) -> None:
    print(line, flush=True)


class Heartbeat:
    """Says `still on LABEL, 95 s` every `interval_s` seconds while one item runs; 0 switches it off.

    A daemon thread waits on a condition: `begin(label)` starts an item's clock, `end()` stops it, `close()`
    ends the thread (a `with` block does).
    """

    def __init__(self, interval_s: float = HEARTBEAT_S, say: Callable[[str], None] = _say) -> None:
        self.interval_s, self._say = interval_s, say
        self._cond = threading.Condition()
        self._label: Optional[str] = None
        self._since, self._beats, self._closed = 0.0, 0, False
        self._thread: Optional[threading.Thread] = None

    def begin(self, label: str, since: Optional[float] = None) -> None:
        """LABEL runs from now (or from `since`, a time.monotonic() reading) until end() or the next begin()."""
        if self.interval_s <= 0:
            return
        with self._cond:
            self._label, self._since = label, time.monotonic() if since is None else since
            self._beats = int((time.monotonic() - self._since) // self.interval_s)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="attncheck-heartbeat", daemon=True)
                self._thread.start()
            self._cond.notify()

    def end(self) -> None:
        with self._cond:
            self._label = None
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed, self._label = True, None
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "Heartbeat":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _loop(self) -> None:
        with self._cond:
            while not self._closed:
                if self._label is None:
                    self._cond.wait()
                    continue
                wait = self._since + (self._beats + 1) * self.interval_s - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)  # woken early by begin/end/close: the loop looks again
                    continue
                self._beats += 1
                self._say(f"  still on {self._label}, {duration(time.monotonic() - self._since)}")


class Tally:
    """Items that start and end, several at once maybe: the heartbeat names the oldest still running, and each
    end prints `[done/total] WHAT, <pace>`."""

    def __init__(self, total: int, what: str, beat: Heartbeat, say: Callable[[str], None] = _say) -> None:
        self.total, self.what, self.beat, self.say = total, what, beat, say
        self.done, self.started = 0, time.monotonic()
        self.running: dict[str, float] = {}

    def start(self, name: str) -> None:
        self.running[name] = time.monotonic()
        self._beat()

    def end(self, name: str) -> None:
        self.running.pop(name, None)
        self.done += 1
        self._beat()
        elapsed = time.monotonic() - self.started
        self.say(f"[{self.done}/{self.total}] {self.what}, {pace(self.done, self.total, elapsed)}")

    def _beat(self) -> None:
        if not self.running:
            self.beat.end()
            return
        name, since = next(iter(self.running.items()))
        more = len(self.running) - 1
        self.beat.begin(name + (f" (and {more} more)" if more else ""), since)
