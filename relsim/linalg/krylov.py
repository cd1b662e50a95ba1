"""Krylov solvers written as relsim programs: conjugate gradients here (BiCGSTAB in
`bicgstab.py`, GMRES in `gmres.py`), and the workspace of generated kernels they share.

The operator is the user's kernels (`Operator`); the vector updates and dot products are
kernels generated for the fields of the solve (`kernels.py`), the dot products exact Global sums.
So every iterate is the same, bit for bit, on every target, any thread count and any number of
MPI ranks, and the solvers know nothing of backends. The scalars of the recurrences (alpha, beta,
omega) are computed on the host in Python floats, or inside captured steps by `rs.assign` with
the same IEEE operations: the same on every process.
"""
from __future__ import annotations

import math
import weakref

import numpy as np

import relsim as rs

from . import adjoint as _adjoint
from . import kernels as _kernels
from .common import (
    SolveInfo,
    _check_arguments,
    _Clock,
    _curvature,
    _maxiter,
    _operator,
    _positive_curvature,
    _positive_rz,
    _record,
    _stalled,
    _start,
    _Workspace,
    kept_step,
)
from .preconditioned import pcg


def cg(A, b, x, rtol: float = 1e-8, atol: float = 0.0, maxiter: int | None = None,
       M=None, callback=None, config=None, timers: dict | None = None,
       dots: str = "exact") -> SolveInfo:
    """Solve ``A x = b`` by conjugate gradients (A symmetric positive definite: an `Operator` or a
    `SparseMatrix`). `b` and `x` are scalar f64 fields of A's relation; `x` holds the
    initial guess and receives the solution. `M`: None, a field holding A's diagonal
    (Jacobi preconditioning), or a preconditioner (an object whose ``apply(r, z, config)``
    computes z = M r: `linalg.Multigrid`). Stops when the residual norm is <= max(rtol *
    ||b||, atol) or after `maxiter` iterations (default 10 * the rows); `callback(iteration,
    residual_norm)`
    is called after each; `timers`, a dict, receives the seconds spent in each part of the
    iterations: "operator" (A p), "dot" (p.Ap), "update" (x, r and their fused sums r.r,
    r.z), "direction" (p). `dots`: how the dot products add their terms, the `sum` of their
    Globals: "exact" (default: the exact sum rounded once, independent of the rows' order) or
    "ordered" (term by term in row order, as a serial loop does: to follow another code's
    rounding; slower). Either way every target, thread count and rank count gives the same
    bits. A non-positive or non-finite curvature p.Ap (an operator that is not positive
    definite), a NaN or infinite residual, or a residual that stops changing raises a
    `SolverError`.

    The loop runs as one captured step (`rs.capture`, `rs.while_loop`: on the cpu one compiled
    call), its checks and residual history made after it from each iteration's r.r; with a
    `callback`, each iteration is one replay; with `timers`, launch by launch. The same bits
    every way; where a check fails, x holds what the loop computed until it stopped.

    On an `rs.Tape` a solve with a `SparseMatrix` is one step, differentiated implicitly with
    respect to b and A's entries (one more solve, with A^T: `linalg/adjoint.py`)."""
    if rs.Tape.recording() or rs.Tangents.running():
        return _adjoint.record(cg, "cg", A, b, x, dict(
            rtol=rtol, atol=atol, maxiter=maxiter, M=M, callback=callback, config=config,
            timers=timers, dots=dots))
    A = _operator(A)
    if M is not None and callable(getattr(M, "apply", None)):  # a preconditioner's kernels
        return pcg(A, b, x, M, rtol, atol, maxiter, callback, config, timers, dots)
    ws = _workspace("cg", A, b, x, M, dots)
    g, k = ws.globals, ws.kernels
    info = _start(ws, A, b, config, ("rr", "rz", "bb"), rtol, atol)
    rz_sum = g["rz"] if M is not None else g["rr"]  # r.z (without M: r.r)
    rz = rz_sum.value
    maxiter = _maxiter(maxiter, A)
    stuck = 0
    clock = _Clock(timers)
    if timers is None:  # (parts timed apart: launch by launch)
        # each iteration one captured step (recorded at the first solve); once it is compiled
        # (until then, and on a target that compiles none: launch by launch), each iteration
        # one compiled call, and the whole loop one step (recorded at the next solve), one
        # call once that is compiled too
        rz_sum = g["rz"] if M is not None else g["rr"]
        each = _cg_step(A, ws, config, rz_sum)
        if each.step is None:
            return _cg_captured(A, ws, info, rz, maxiter, callback, rz_sum, each)
        if each.step.compiled():
            if callback is None:
                whole, history = _cg_loop(A, ws, config, rz_sum, maxiter)
                if whole.step is None or whole.step.compiled():
                    return _cg_solve(A, ws, config, info, rz, maxiter, rz_sum, whole, history)
            return _cg_captured(A, ws, info, rz, maxiter, callback, rz_sum, each)
    while not info.converged and info.iterations < maxiter:
        it = info.iterations + 1
        pq = _curvature(A, ws, config, it, clock)
        g["alpha"].value = rz / pq
        g["rr"].value = g["rz"].value = 0.0
        A.relation.foreach(k["update"], config)
        rz_new, rr = rz_sum.value, g["rr"].value
        clock.stop("update")
        _record(info, "cg", rr, it, callback)
        stuck = _stalled(info, stuck, it)
        if info.converged:
            break
        _positive_rz(rz_new, it)
        g["beta"].value = rz_new / rz
        rz = rz_new
        clock.start()
        A.relation.foreach(k["direction"], config)
        clock.stop("direction")
    return info


def cg_launches(A, b, x, M=None, dots: str = "exact") -> list:
    """The launches ``cg(A, b, x, M=M, dots=dots)`` makes, as ``(kernel, relation)`` pairs
    for `rs.precompile`: its generated kernels (updates, dot products) and the operator's, when
    it is one kernel (a `SparseMatrix`'s product is). With a cold cache a program can so
    compile them on every core, beside its own kernels, before its first solve (miniFE 80³:
    ~1.3 s sooner). `M`: None or a field holding A's diagonal, as `cg` takes it."""
    A = _operator(A)
    if M is not None and callable(getattr(M, "apply", None)):
        raise TypeError("cg_launches lists the launches of cg without a preconditioner or with "
                        "a diagonal field as M; a preconditioner object's kernels are its own")
    ws = _workspace("cg", A, b, x, M, dots)
    launches = [(k, A.relation) for k in ws.kernels.values()]
    if isinstance(A._apply, rs.Kernel):
        launches.append((A._apply, A.relation))
    return launches


def _cg_captured(A, ws, info, rz, maxiter, callback, rz_sum, step) -> SolveInfo:
    """cg's iterations, each one replay of the captured step `step` (`_cg_step`): the
    launches and the recurrence's scalars (alpha = rz / pq, beta = rz' / rz, as Python floats
    would give them) with no host work between them (on the cpu one compiled call), the checks
    and the history on the host after each. The same iterates, bit for bit; where an
    iteration fails a check (a curvature or r.z not positive) it has already updated x. (What
    `cg` runs with a callback, and until the whole loop's step is compiled.)"""
    g = ws.globals
    rs.assign(g["rz_old"], rz)
    stuck = 0
    while not info.converged and info.iterations < maxiter:
        it = info.iterations + 1
        step()
        _positive_curvature(g["pq"].value, it)
        rz_new, rr = rz_sum.value, g["rr"].value
        _record(info, "cg", rr, it, callback)
        stuck = _stalled(info, stuck, it)
        if info.converged:
            break
        _positive_rz(rz_new, it)
    return info


def _cg_solve(A, ws, config, info, rz, maxiter, rz_sum, step, history) -> SolveInfo:
    """cg's whole loop as one replay of a captured step (`_cg_loop`: the iteration inside
    `rs.while_loop`:
    on the cpu one compiled call), while the residual norm is above the tolerance, the
    curvature and r.z positive, and below `maxiter` iterations, each iteration's r.r recorded;
    then the checks and history on the host, iteration by iteration, as the loop of `cg` makes
    them. The same iterates, bit for bit; where an iteration fails a check, x holds that
    iteration's update (a stagnation is found after the loop: x holds the last iteration's)."""
    g = ws.globals
    rs.assign(g["rz_old"], rz)
    rs.assign(g["pq"], 1.0)  # (the loop's test of the last curvature and r.z: none yet)
    rs.assign(g["rz_now"], 1.0)
    rs.assign(g["norm"], info.residuals[-1])
    rs.assign(g["tol"], info.tolerance)
    step()
    n = int(g["count"].value)
    stuck = 0
    for it in range(1, n + 1):
        if it == n:
            _positive_curvature(g["pq"].value, it)
        _record(info, "cg", float(history[it - 1]), it, None)
        stuck = _stalled(info, stuck, it)
        if info.converged:
            break
        if it == n:
            _positive_rz(rz_sum.value, it)
    return info


def _cg_step(A, ws, config, rz_sum):
    """One cg iteration as a captured step, made once per workspace, operator and
    configuration (`kept_step`): A p, p.Ap, alpha, x and r with their sums, beta, p (the loop
    of `cg`, without its checks)."""
    return kept_step(ws, A, config, None, lambda cfg: (
        cfg, rs.capture(_cg_iteration(A, ws, config, rz_sum))))[1]


def _cg_loop(A, ws, config, rz_sum, maxiter):
    """cg's whole loop as a captured step (`_cg_solve`: the iteration in `rs.while_loop`) and
    the array each iteration's r.r is recorded in, made once per workspace, operator,
    configuration and `maxiter` (`kept_step`)."""
    return kept_step(ws, A, config, maxiter,
                     lambda cfg: _cg_loop_step(A, ws, config, rz_sum, maxiter, cfg))[1:]


def _cg_loop_step(A, ws, config, rz_sum, maxiter, cfg) -> tuple:
    g = ws.globals
    iteration = _cg_iteration(A, ws, config, rz_sum)
    history = np.empty(maxiter)

    def checked():  # (what the loop tests: the norm, the last curvature and r.z)
        iteration()
        rs.assign(g["norm"], g["rr"].sqrt())
        rs.assign(g["rz_now"], rz_sum)

    # (the checks of `cg`: not above the tolerance, or an infinite or NaN norm, curvature
    # or r.z, ends the loop; NaN fails every comparison)
    go = (g["norm"] > g["tol"]) & (g["norm"] < math.inf) & (g["pq"] > 0.0) & \
        (g["pq"] < math.inf) & (g["rz_now"] > 0.0) & (g["rz_now"] < math.inf)
    step = rs.capture(lambda: rs.while_loop(go, checked, maxiter, count=g["count"],
                                            record=(g["rr"], history)))
    return cfg, step, history


def _cg_iteration(A, ws, config, rz_sum):
    """The function launching one cg iteration, its scalars by `rs.assign` (and the Globals
    the captured loops use, made on first use)."""
    g, k = ws.globals, ws.kernels
    for name in ("rz_old", "rz_now", "norm", "tol", "count"):
        if name not in g:
            g[name] = rs.Global(rs.f64, 0.0, name=f"cg_{name}")
    rzo = g["rz_old"]

    def iteration():
        A(config)
        rs.assign(g["pq"], 0.0)
        A.relation.foreach(k["curvature"], config)
        rs.assign(g["alpha"], rzo / g["pq"])
        rs.assign(g["rr"], 0.0)
        rs.assign(g["rz"], 0.0)
        A.relation.foreach(k["update"], config)
        rs.assign(g["beta"], rz_sum / rzo)
        rs.assign(rzo, rz_sum)
        A.relation.foreach(k["direction"], config)
    return iteration


_workspaces: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

# the solvers' work fields (scalar f64), made on the relation at its first solve
_WORK = {"cg": ("r", "z"), "bicgstab": ("r", "rh", "p", "vv", "s")}
_GLOBALS = {"cg": ("alpha", "beta", "rr", "rz", "pq", "bb"),
            "bicgstab": ("alpha", "beta", "omega", "rr", "rho", "bb", "rv", "ss", "ts", "tt")}


def _workspace(solver: str, A, b, x, M, dots: str) -> _Workspace:
    _check_arguments(solver, A, b, x, M, dots)
    R = A.relation
    key = (solver, A.x.name, A.y.name, b.name, x.name, None if M is None else M.name, dots)
    per_relation = _workspaces.setdefault(R, {})
    ws = per_relation.get(key)
    if ws is None:
        work = {}
        for w in _WORK[solver]:
            name = f"_linalg_{solver}_{w}"
            work[w] = R.field(name) if R.has_field(name) else R.new_field(name, rs.f64)
        names = {"OPX": A.x.name, "OPY": A.y.name, "B": b.name, "X": x.name}
        names.update({w.upper(): f.name for w, f in work.items()})
        if solver == "cg":
            z = work["z"].name
            names["PRECOND"] = "" if M is None else f"v.{z} = v.{names['R']} / v.{M.name}"
            names["Z"] = f"v.{names['R']}" if M is None else f"v.{z}"
            # without M, r.z is r.r: summed once
            names["RZ"] = "" if M is None else f"rz += v.{names['R']} * v.{z}"
        templates = _kernels.CG if solver == "cg" else _kernels.BICGSTAB
        text = _kernels.module_text(templates, names, list(_GLOBALS[solver]))
        module = _kernels.load(text, rs.config.current().cache_path())
        globals_ = {n: rs.Global(rs.f64, 0.0, name=f"{solver}_{n}", sum=dots)
                    for n in _GLOBALS[solver]}
        ws = per_relation[key] = _Workspace(module.make(**globals_), globals_)
    return ws
