"""`rs.while_loop`: a loop whose condition is a comparison of Globals, which a captured step
(`rs.capture`) records and replays, on the cpu inside one compiled call.

    rs.while_loop(rr > tol2, iteration, max_iterations=500, count=iterations)

runs ``iteration()`` (launches, `rs.assign`s, other loops) while ``rr > tol2`` holds (tested
before each iteration, on the Globals' values then) and at most `max_iterations` times, and
returns how many times it ran; `count`, a scalar f64 or i64 Global, receives that number too
(what a replay's caller reads). Inside `rs.capture` the body's first iteration is recorded
(a loop that does not run while recording records its body the first time a replay runs it;
in a side of `rs.cond` that a capture traces, the body runs once, traced).
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError
from . import global_expr
from . import launch as _launch


class Loop:
    """What a while_loop is: its condition (a `global_expr.Condition` or `AllOf`, or None: only
    the count stops it), body, iteration limit, count Global and record ((Global, array) or
    None)."""

    __slots__ = ("condition", "body", "max_iterations", "count", "record")

    def __init__(self, condition, body, max_iterations, count, record=None):
        self.condition, self.body = condition, body
        self.max_iterations, self.count, self.record = max_iterations, count, record

    def holds(self, it: int) -> bool:
        return it < self.max_iterations and (self.condition is None or self.condition.holds())

    def recorded(self, it: int) -> None:
        """After iteration `it` (from 0): the recorded Global's value into its array."""
        if self.record is not None:
            g, values = self.record
            values[it] = g.data[0]

    def set_count(self, it: int) -> None:
        if self.count is not None:
            global_expr.set_value(self.count, it)


def while_loop(condition, body, max_iterations: int, count=None, record=None) -> int:
    """Run ``body()`` while `condition` (a comparison of Globals and numbers, ``rr > tol2``,
    or several joined by `&`, tested before each iteration; None: always) holds, at most
    `max_iterations` times; the number of iterations run (also stored in the Global `count`,
    if given). `record` = (g, values): after iteration i, ``values[i]`` = g's value (g a scalar
    f64 Global, values a float64 array of at least `max_iterations`)."""
    limit = _limit(max_iterations)
    loop = Loop(_condition(condition), body, limit, _count(count), _record(record, limit))
    if not callable(body):
        raise DataError(f"rs.while_loop: body must be a function of no arguments, got {body!r}")
    return run(loop)


def run(loop: Loop) -> int:
    """Run `loop` (checked), telling the recorders; the number of iterations run."""
    recorders = list(_launch.recorders)
    for r in recorders:
        r.before_loop(loop)
    it = 0
    try:
        if not _launch.effects():  # (a side a capture traces: the body once, recorded only)
            for r in recorders:
                r.loop_iteration(loop, 0)
            loop.body()
            return 0
        while loop.holds(it):
            for r in recorders:
                r.loop_iteration(loop, it)
            loop.body()
            loop.recorded(it)
            it += 1
    finally:
        for r in recorders:
            r.after_loop(loop)
    loop.set_count(it)
    return it


def _condition(c):
    if c is None or isinstance(c, (global_expr.Condition, global_expr.AllOf)):
        return c
    raise DataError(f"rs.while_loop: the condition must compare Globals (e.g. `rr > tol2`: "
                    f"< <= > >= of scalar f64 Globals, their expressions and numbers), or be "
                    f"None, got {c!r}")


def _limit(n) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise DataError(f"rs.while_loop: max_iterations must be an int >= 0, got {n!r}")
    return int(n)


def _record(record, limit: int):
    if record is None:
        return None
    try:
        g, values = record
    except (TypeError, ValueError):
        raise DataError(f"rs.while_loop: record must be (a Global, an array), got "
                        f"{record!r}") from None
    global_expr.operand(g, "rs.while_loop record")
    if not isinstance(values, np.ndarray) or values.dtype != np.float64 or values.ndim != 1 \
            or len(values) < limit or not values.flags.writeable:
        raise DataError(f"rs.while_loop: record's array must be a writable 1-D float64 array "
                        f"of at least max_iterations = {limit} values")
    return g, values


def _count(g):
    if g is None:
        return None
    if not isinstance(g, global_expr.GLOBAL) or g.type.shape or \
            g._data.dtype not in (np.float64, np.int64):
        raise DataError(f"rs.while_loop: count must be a scalar f64 or i64 Global, got {g!r}")
    return g
