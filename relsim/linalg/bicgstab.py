"""BiCGSTAB as a relsim program: the iteration's launches and scalars, run as one captured step
(`rs.capture`: on the cpu one compiled call for the whole solve), or launch by launch.

The captured loop (`_loop`) is the Python loop's iteration with its decisions as `rs.cond`s on
Globals: an r^.v, t.t or omega that is zero or not finite stops it (`why` names which), a half
step whose residual is within the tolerance finishes it (x += alpha p), and `rs.while_loop`'s
condition makes the loop's own tests (the residual norm above the tolerance and finite, rho
non-zero and finite). Each iteration's squared residual is recorded in an array; the host then
makes the Python loop's checks and residual history iteration by iteration from it, raising the
same `SolverError` at the same iteration. The scalars (beta, alpha, omega) are `rs.assign`s of
the same IEEE operations the Python loop makes in floats: the same iterates, bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

import relsim as rs

from . import adjoint as _adjoint
from .common import SolveInfo, _maxiter, _nonzero, _operator, _record, _start, kept_step
from .krylov import _workspace

# why the captured loop stopped before its tests failed (the Global `why`)
_HALF, _RV, _TT, _OMEGA = 1.0, 2.0, 3.0, 4.0
_BREAKDOWNS = {_RV: ("rv", "r^.v (v = A p)"), _TT: ("tt", "t.t (t = A s)"),
               _OMEGA: ("omega", "omega = t.s / t.t")}


def bicgstab(A, b, x, rtol: float = 1e-8, atol: float = 0.0,
             maxiter: int | None = None, callback=None, config=None,
             dots: str = "exact") -> SolveInfo:
    """Solve ``A x = b`` by BiCGSTAB (any nonsingular A), with the arguments, stopping rule and
    `dots` of `cg`. A breakdown (rho, r^.v or t.t zero, or a NaN) raises a `SolverError`
    naming the iteration and the quantity. On an `rs.Tape`: as `cg`.

    Without a `callback` the loop runs as one captured step (`rs.capture`, `rs.while_loop`,
    `rs.cond`: on the cpu one compiled call), its checks and residual history made after it;
    with one, launch by launch. The same bits either way; where a check fails, x holds what
    the loop computed until it stopped."""
    if rs.Tape.recording() or rs.Tangents.running():
        return _adjoint.record(bicgstab, "bicgstab", A, b, x, dict(
            rtol=rtol, atol=atol, maxiter=maxiter, callback=callback, config=config, dots=dots))
    A = _operator(A)
    ws = _workspace("bicgstab", A, b, x, None, dots)
    info = _start(ws, A, b, config, ("rr", "rho", "bb"), rtol, atol)
    maxiter = _maxiter(maxiter, A)
    if callback is None:
        return _captured(A, ws, config, info, maxiter)
    return _launched(A, ws, config, info, maxiter, callback)


def _launched(A, ws, config, info, maxiter, callback) -> SolveInfo:
    """The loop launch by launch, its scalars in Python floats."""
    g, k = ws.globals, ws.kernels
    rho_old, alpha, omega = 1.0, 1.0, 1.0
    rho = g["rho"].value
    while not info.converged and info.iterations < maxiter:
        it = info.iterations + 1
        _nonzero(rho, "rho = r^.r", it)
        g["beta"].value = (rho / rho_old) * (alpha / omega)
        g["omega"].value = omega
        A.relation.foreach(k["direction"], config)
        A(config)  # v = A p
        g["rv"].value = 0.0
        A.relation.foreach(k["half"], config)
        rv = g["rv"].value
        _nonzero(rv, "r^.v (v = A p)", it)
        alpha = rho / rv
        g["alpha"].value = alpha
        g["ss"].value = 0.0
        A.relation.foreach(k["s"], config)
        ss = g["ss"].value
        if math.sqrt(ss) <= info.tolerance:  # the half step is enough: x += alpha p
            A.relation.foreach(k["finish_half"], config)
            _record(info, "bicgstab", ss, it, callback)
            break
        A(config)  # t = A s
        g["ts"].value = g["tt"].value = 0.0
        A.relation.foreach(k["t"], config)
        tt = g["tt"].value
        _nonzero(tt, "t.t (t = A s)", it)
        omega = g["ts"].value / tt
        _nonzero(omega, "omega = t.s / t.t", it)
        g["omega"].value = omega
        g["rr"].value = g["rho"].value = 0.0
        A.relation.foreach(k["update"], config)
        rho_old, rho = rho, g["rho"].value
        _record(info, "bicgstab", g["rr"].value, it, callback)
    return info


def _captured(A, ws, config, info, maxiter) -> SolveInfo:
    """The loop as one replay of its captured step (recorded at the first solve, which it
    runs), then the Python loop's checks and history from the recorded residuals."""
    step, history = _loop(A, ws, config, maxiter)
    g = ws.globals
    for name, value in (("rho_old", 1.0), ("alpha", 1.0), ("omega", 1.0), ("why", 0.0),
                        ("norm", info.residuals[-1]), ("tol", info.tolerance)):
        rs.assign(g[name], value)
    step()
    n, why = int(g["count"].value), g["why"].value
    for it in range(1, n + 1):
        if it == n and why in _BREAKDOWNS:
            name, what = _BREAKDOWNS[why]
            _nonzero(g[name].value, what, it)
        _record(info, "bicgstab", float(history[it - 1]), it, None)
    if not info.converged and why == 0.0 and n < maxiter:  # (the loop's test of rho)
        _nonzero(g["rho"].value, "rho = r^.r", n + 1)
    return info


def _loop(A, ws, config, maxiter):
    """The captured step running bicgstab's loop (`rs.capture` of a function: its first call
    records, the later ones replay) and the array each iteration's squared residual is
    recorded in; made once per workspace, operator, configuration and `maxiter`
    (`kept_step`)."""
    return kept_step(ws, A, config, maxiter,
                     lambda cfg: _loop_step(A, ws, config, maxiter, cfg))[1:]


def _loop_step(A, ws, config, maxiter, cfg) -> tuple:
    g, k = ws.globals, ws.kernels
    for name in ("rho_old", "norm", "tol", "count", "res", "why"):
        if name not in g:
            g[name] = rs.Global(rs.f64, 0.0, name=f"bicgstab_{name}")
    rho, alpha, omega = g["rho"], g["alpha"], g["omega"]
    history = np.empty(maxiter)

    def usable(q):  # q non-zero and finite (NaN fails both comparisons)
        return (abs(q) > 0.0) & (abs(q) < math.inf)

    def stop(why):
        return lambda: rs.assign(g["why"], why)

    def update():  # x and r from s and t, with rho and r.r
        rs.assign(g["rho_old"], rho)
        rs.assign(g["rr"], 0.0)
        rs.assign(rho, 0.0)
        A.relation.foreach(k["update"], config)
        rs.assign(g["res"], g["rr"])

    def omega_step():
        rs.assign(omega, g["ts"] / g["tt"])
        rs.cond(usable(omega), update, stop(_OMEGA))

    def full_step():  # t = A s, omega, the update
        A(config)
        rs.assign(g["ts"], 0.0)
        rs.assign(g["tt"], 0.0)
        A.relation.foreach(k["t"], config)
        rs.cond(usable(g["tt"]), omega_step, stop(_TT))

    def half_step():  # the half step is enough: x += alpha p, and the loop ends
        A.relation.foreach(k["finish_half"], config)
        rs.assign(g["res"], g["ss"])
        rs.assign(g["why"], _HALF)

    def s_step():
        rs.assign(alpha, rho / g["rv"])
        rs.assign(g["ss"], 0.0)
        A.relation.foreach(k["s"], config)
        rs.cond(g["ss"].sqrt() <= g["tol"], half_step, full_step)

    def iteration():
        rs.assign(g["beta"], (rho / g["rho_old"]) * (alpha / omega))
        A.relation.foreach(k["direction"], config)
        A(config)  # v = A p
        rs.assign(g["rv"], 0.0)
        A.relation.foreach(k["half"], config)
        rs.cond(usable(g["rv"]), s_step, stop(_RV))
        rs.assign(g["norm"], g["res"].sqrt())

    # (the Python loop's tests: not converged, a finite norm (else `_record` raises), rho
    # non-zero and finite; and no stop inside the last iteration)
    go = (g["norm"] > g["tol"]) & (g["norm"] < math.inf) & (g["why"] < 0.5) & usable(rho)
    step = rs.capture(lambda: rs.while_loop(go, iteration, maxiter, count=g["count"],
                                            record=(g["res"], history)))
    return cfg, step, history
