"""`rs.cond`: a branch whose condition is a comparison of Globals, which a captured step
(`rs.capture`) records and replays, on the cpu inside one compiled call.

    rs.cond(ss <= tol2, finish_early, full_step)

runs ``then()`` when the condition holds (tested on the Globals' values now), else
``otherwise()`` (when given), and returns whether it held. Inside `rs.capture` both sides are
recorded: the side the condition picks runs as usual; the other is *traced*, its function
called with its launches, assignments, swaps and copies recorded but not performed
(`launch.tracing`; a loop there runs its body once, traced; both sides of a branch there are
traced).
"""
from __future__ import annotations

from ..errors import DataError
from . import global_expr
from . import launch as _launch


class Branch:
    """What an `rs.cond` is: its condition (a `global_expr.Condition` or `AllOf`) and its two
    sides (functions of no arguments; `otherwise` None: nothing)."""

    __slots__ = ("condition", "then", "otherwise")

    def __init__(self, condition, then, otherwise):
        self.condition, self.then, self.otherwise = condition, then, otherwise

    def side(self, taken: bool):
        """The function the branch runs when its condition is `taken` (None: nothing)."""
        return self.then if taken else self.otherwise


def cond(condition, then, otherwise=None) -> bool:
    """Run ``then()`` if `condition` (a comparison of Globals and numbers, ``ss <= tol2``, or
    several joined by `&`) holds on the Globals' values now, else ``otherwise()`` (if given);
    whether it held. Captured (`rs.capture`), a replay tests the condition again and runs the
    side it picks (on the cpu inside the step's compiled call)."""
    if not isinstance(condition, (global_expr.Condition, global_expr.AllOf)):
        raise DataError(f"rs.cond: the condition must compare Globals (e.g. `ss <= tol2`: "
                        f"< <= > >= of scalar f64 Globals, their expressions and numbers, "
                        f"joined by &), got {condition!r}")
    for what, fn in (("then", then), ("otherwise", otherwise)):
        if not callable(fn) and not (what == "otherwise" and fn is None):
            raise DataError(f"rs.cond: {what} must be a function of no arguments, got {fn!r}")
    return run(Branch(condition, then, otherwise))


def run(branch: Branch) -> bool:
    """Run `branch` (checked), telling the recorders; whether its condition held (True in a
    traced side, where nothing is tested)."""
    live = _launch.effects()
    taken = bool(branch.condition.holds()) if live else True
    recorders = list(_launch.recorders)
    traced = any(r.traces_branches for r in recorders)
    for r in recorders:
        r.before_branch(branch)
    try:
        for side in (taken, not taken) if traced else (taken,):
            for r in recorders:
                r.branch_side(branch, side)
            fn = branch.side(side)
            if fn is None:
                continue
            if live and side == taken:
                fn()
            else:
                with _launch.tracing():
                    fn()
    finally:
        for r in recorders:
            r.after_branch(branch)
    return taken
