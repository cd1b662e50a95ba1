"""--checkpoint PATH --checkpoint-every K|auto [--mttf HOURS] --restart PATH, for simulations.

`Checkpointer(path, every, mttf_hours, save)` is called after every step with the step number;
it calls ``save(path)`` every `every` steps. With ``every="auto"`` it writes one checkpoint after
the first step to measure its cost C, measures a step's time S over the next step, and then
writes every round(tau / S) steps, tau = Young/Daly's sqrt(2 C MTTF) (`relsim.checkpoint.
interval`), printing the interval and the expected fraction of time lost."""
from __future__ import annotations

import time

from relsim.checkpoint import interval


def add_arguments(p) -> None:
    """The options, on an argparse parser."""
    p.add_argument("--checkpoint", metavar="PATH", help="write the state to this HDF5 file")
    p.add_argument("--checkpoint-every", metavar="K", default="100",
                   help="every K steps, or 'auto' (from the checkpoint cost and --mttf)")
    p.add_argument("--mttf", type=float, default=24.0, metavar="HOURS",
                   help="mean time to failure for --checkpoint-every auto (default 24)")
    p.add_argument("--restart", metavar="PATH", help="start from this checkpoint")


def parse_every(text):
    """'auto' or a positive int (ValueError otherwise)."""
    if text == "auto":
        return text
    k = int(text)
    if k < 1:
        raise ValueError(f"--checkpoint-every must be positive or auto, got {text}")
    return k


class Checkpointer:
    def __init__(self, path: str, every, mttf_hours: float, save, say=print):
        self.path, self.every, self.mttf = path, every, mttf_hours * 3600.0
        self.save, self.say = save, say
        self.cost = self.t_after_first = None
        self.written = 0

    def write(self) -> float:
        t = time.perf_counter()
        self.save(self.path)
        self.written += 1
        return time.perf_counter() - t

    def __call__(self, step: int) -> None:
        if self.every != "auto":
            if step % self.every == 0:
                self.write()
            return
        if self.cost is None:  # the first step done: measure a checkpoint
            self.cost = self.write()
            self.first_step = step
            self.t_after_first = time.perf_counter()
            return
        if isinstance(self.t_after_first, float):  # one more step done: its time
            seconds = time.perf_counter() - self.t_after_first
            tau, lost = interval(self.cost, self.mttf)
            self.every = max(1, round(tau / max(seconds, 1e-9)))
            self.say(f"checkpoint every {self.every} steps: a checkpoint took {self.cost:.3g} s, "
                     f"a step {seconds:.3g} s; MTTF {self.mttf / 3600:g} h -> Young/Daly "
                     f"interval {tau:.3g} s, expected time lost {100 * lost:.3g}%")
            self.t_after_first = None
        if (step - self.first_step) % self.every == 0:
            self.write()
