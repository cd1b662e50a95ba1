"""What every solver of `linalg` shares: the operator, the result and error types, the argument
checks, the start (r = b - A x, ||b||), the residual record, and the timers."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

import relsim as rs


class SolverError(rs.RelsimError, ArithmeticError):
    """A Krylov solver broke down: it names the solver, the iteration and the quantity."""


@dataclass
class SolveInfo:
    """What a solve did: `iterations` done, `residuals` (the residual 2-norm before the first
    iteration and after each), whether it `converged` (norm <= max(rtol * ||b||, atol)), and
    the `tolerance` that meant."""
    iterations: int = 0
    residuals: list = field(default_factory=list)
    converged: bool = False
    tolerance: float = 0.0


class Operator:
    """A linear operator given by the user's kernels: ``apply`` computes ``y = A x`` for the
    fields `x` and `y` (scalar f64 fields of one relation). `apply` is a kernel (launched over
    `x`'s relation) or a function of the configuration that launches them.

    A solver uses `x` as its search direction and `y` as A times it: both are the operator's
    scratch fields, overwritten by every solve."""

    def __init__(self, apply, x, y):
        _scalar_f64(x, "the operator's input x")
        _scalar_f64(y, "the operator's output y")
        if x.relation is not y.relation or x is y:
            raise rs.DataError(f"an Operator's x and y are two fields of one relation, got "
                               f"{x.qualname} and {y.qualname}")
        self.x, self.y, self.relation = x, y, x.relation
        self._apply = apply

    def __call__(self, config=None) -> None:
        """Launch the operator's kernels: y = A x."""
        if isinstance(self._apply, rs.Kernel):
            self.relation.foreach(self._apply, config)
        else:
            self._apply(config)


class _Clock:
    """Seconds per part of an iteration, added to `timers` (nothing is timed without one)."""

    def __init__(self, timers):
        self.timers, self.t = timers, 0.0

    def start(self) -> None:
        if self.timers is not None:
            self.t = time.perf_counter()

    def stop(self, part: str) -> None:
        if self.timers is not None:
            now = time.perf_counter()
            self.timers[part] = self.timers.get(part, 0.0) + now - self.t
            self.t = now


@dataclass
class _Workspace:
    kernels: dict
    globals: dict

    def __post_init__(self):
        # captured steps (`rs.capture`): (configuration, maxiter or None, the operator's
        # apply) -> (configuration, step, ...) (`kept_step`)
        self.steps = {}


STEPS_KEPT = 8  # captured steps kept per workspace (the oldest dropped)


def kept_step(ws: _Workspace, A, config, maxiter, make) -> tuple:
    """The captured step(s) a solve with operator `A` under `config` (None: the default) and
    `maxiter` (None: one iteration's step) replays, made by ``make(cfg)`` the first time: a
    captured step replays the launches it recorded, so it is kept per operator (its apply: the
    same kernels) and configuration (by value), never reused for another; at most
    `STEPS_KEPT` per workspace."""
    cfg = config if config is not None else rs.config.current()
    key = (cfg, maxiter, A._apply)
    kept = ws.steps.get(key)
    if kept is None:
        while len(ws.steps) >= STEPS_KEPT:
            ws.steps.pop(next(iter(ws.steps)))
        kept = ws.steps[key] = make(cfg)
    return kept


# (solver, operator fields, b, x, M) -> _Workspace, per relation
def _check_arguments(solver: str, A, b, x, M, dots: str) -> None:
    """Refuse a solve's bad arguments, naming the solver and the fields."""
    if dots not in rs.Global.SUMS:
        raise ValueError(f"{solver}: dots must be one of "
                         f"{', '.join(map(repr, rs.Global.SUMS))}, got {dots!r}")
    if not isinstance(A, Operator):
        raise TypeError(f"{solver}: A must be a relsim.linalg.Operator (the kernels computing "
                        f"y = A x, and its fields x and y) or a SparseMatrix, got {A!r}")
    R = A.relation
    for f, what in ((b, "b"), (x, "x")) + (((M, "M (the diagonal of A)"),) if M is not None
                                           else ()):
        _scalar_f64(f, f"{solver}: {what}")
        if f.relation is not R:
            raise rs.DataError(f"{solver}: {what} ({f.qualname}) is not a field of the "
                               f"operator's relation {R.name}")
    named = [b, x, A.x, A.y] + ([M] if M is not None else [])
    if len({id(f) for f in named}) < len(named):
        raise rs.DataError(f"{solver}: b, x, M and the operator's x and y must be different "
                           f"fields, got {', '.join(f.qualname for f in named)}")


def _operator(A):
    """`A` itself, or an assembled matrix's operator (`SparseMatrix.operator`)."""
    as_operator = getattr(A, "operator", None)
    return as_operator() if not isinstance(A, Operator) and callable(as_operator) else A


def _start(ws, A, b, config, sums, rtol, atol) -> SolveInfo:
    """r = b - A x and the first sums (`sums`, and ||b||^2 as "bb"); the SolveInfo."""
    if not (rtol >= 0.0 and atol >= 0.0):
        raise ValueError(f"rtol and atol must be >= 0, got {rtol!r}, {atol!r}")
    g, k = ws.globals, ws.kernels
    A.relation.foreach(k["start"], config)
    A(config)
    for name in sums:
        g[name].value = 0.0
    A.relation.foreach(k["init"], config)
    bnorm = math.sqrt(g["bb"].value)
    if not math.isfinite(bnorm):
        raise SolverError(f"the right-hand side {b.qualname} holds NaN or infinity")
    info = SolveInfo(tolerance=max(rtol * bnorm, atol))
    norm = math.sqrt(g["rr"].value)
    if not math.isfinite(norm):
        raise SolverError(f"the initial residual norm is {norm!r}: the initial guess or A x "
                          f"holds NaN or infinity")
    info.residuals.append(norm)
    info.converged = norm <= info.tolerance
    return info


def _record(info, solver, rr, it, callback) -> float:
    norm = math.sqrt(rr)
    if not math.isfinite(norm):
        raise SolverError(f"{solver}: the residual norm is {norm!r} at iteration {it}")
    info.iterations = it
    info.residuals.append(norm)
    info.converged = norm <= info.tolerance
    if callback is not None:
        callback(it, norm)
    return norm


def _nonzero(value, what, it) -> None:
    if value == 0.0 or not math.isfinite(value):
        raise SolverError(f"bicgstab: breakdown at iteration {it}: {what} = {value!r}")


def _maxiter(maxiter, A) -> int:
    if maxiter is None:
        return 10 * A.relation.size
    if not isinstance(maxiter, int) or maxiter < 0:
        raise ValueError(f"maxiter must be an int >= 0, got {maxiter!r}")
    return maxiter


def _scalar_f64(f, what) -> None:
    if isinstance(f, rs.Field):
        if f.type != rs.f64:
            raise rs.DataError(f"{what} must be a scalar f64 field, got {f.qualname!r} of type "
                               f"{f.type!r}")
        return
    if isinstance(f, np.ndarray):  # (never the whole array in the message)
        got = (f"a NumPy array of shape {f.shape} (load it into a field of the operator's "
               f"relation: R.new_field(name, rs.f64).load(array))")
    else:
        text = repr(f)
        got = f"{type(f).__name__} {text if len(text) <= 80 else text[:77] + '...'}"
    raise rs.DataError(f"{what} must be a scalar f64 field, got {got}")


def _curvature(A, ws, config, it, clock) -> float:
    """cg's q = A p and p.q (the operator's y and the curvature kernel), checked positive and
    finite."""
    g = ws.globals
    clock.start()
    A(config)
    clock.stop("operator")
    g["pq"].value = 0.0
    A.relation.foreach(ws.kernels["curvature"], config)
    pq = g["pq"].value
    clock.stop("dot")
    return _positive_curvature(pq, it)


def _positive_curvature(pq: float, it: int) -> float:
    if not (pq > 0.0 and math.isfinite(pq)):
        raise SolverError(f"cg: the curvature p.Ap = {pq!r} at iteration {it} is not "
                          f"positive and finite: the operator is not positive definite"
                          + ("" if math.isfinite(pq) else " (or produced NaN/inf)"))
    return pq


def _stalled(info, stuck: int, it: int) -> int:
    """How many iterations in a row cg's residual norm has not changed; a SolverError at 2."""
    stuck = stuck + 1 if info.residuals[-1] == info.residuals[-2] else 0
    if stuck >= 2:
        raise SolverError(f"cg: the residual norm {info.residuals[-1]!r} stopped changing at "
                          f"iteration {it} (stagnation above the tolerance "
                          f"{info.tolerance!r})")
    return stuck


def _positive_rz(rz: float, it: int) -> float:
    """cg's r.z after an update, checked positive and finite (M positive definite)."""
    if not (rz > 0.0 and math.isfinite(rz)):
        raise SolverError(f"cg: the preconditioned residual r.z = {rz!r} at iteration {it} is "
                          f"not positive and finite: the preconditioner M is not positive "
                          f"definite")
    return rz

