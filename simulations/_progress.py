"""The progress line of a long `relsim run`: how far it is, how fast it goes and when it will
end, redrawn in place on stderr.

Shown only where someone watches: stderr is a terminal, this is MPI rank 0, and the run has
lasted `delay` seconds (a short run prints nothing); redrawn at most every `every` seconds, and
erased by `close` so that the results printed afterwards start on a clean line. Logs, pipes and
tests therefore never see it.
"""
from __future__ import annotations

import sys
import time


class Progress:
    """`update(done)` after each step (`done` out of `total`, in `unit`s: steps, iterations, or
    simulated time); `close()` at the end (also as a context manager)."""

    def __init__(self, total: float, unit: str = "steps", stream=None, delay: float = 2.0,
                 every: float = 0.5, clock=time.monotonic, shown: bool | None = None):
        self.total, self.unit = float(total), unit
        self.stream = sys.stderr if stream is None else stream
        self.delay, self.every, self.clock = delay, every, clock
        self.start = clock()
        self.last = None
        self.drawn = False
        self.shown = _watched(self.stream) if shown is None else shown

    def update(self, done: float, note: str = "") -> None:
        if not self.shown:
            return
        now = self.clock()
        elapsed = now - self.start
        if elapsed < self.delay or (self.last is not None and now - self.last < self.every):
            return
        self.last = now
        self.stream.write("\r" + self.line(done, elapsed, note) + "\x1b[K")
        self.stream.flush()
        self.drawn = True

    def line(self, done: float, elapsed: float, note: str = "") -> str:
        """`37% 1,234/3,300 steps  412 steps/s  5 s left` (and `note`)."""
        frac = min(max(done / self.total, 0.0), 1.0) if self.total > 0 else 1.0
        whole = self.unit in ("steps", "iterations", "cycles")
        count = f"{int(done):,}/{int(self.total):,}" if whole else f"{done:.3g}/{self.total:.3g}"
        rate = done / elapsed if elapsed > 0 else 0.0
        left = elapsed * (1.0 - frac) / frac if frac > 0 else float("inf")
        speed = f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"
        parts = [f"{100 * frac:3.0f}% {count} {self.unit}", f"{speed} {self.unit}/s",
                 f"{_duration(left)} left"]
        return "  ".join(parts + ([note] if note else []))

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _watched(stream) -> bool:
    try:
        if not stream.isatty():
            return False
    except (AttributeError, ValueError):
        return False
    import relsim as rs
    return rs.ranks().rank == 0


def _duration(seconds: float) -> str:
    if seconds == float("inf"):
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
