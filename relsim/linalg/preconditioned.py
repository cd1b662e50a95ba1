"""Conjugate gradients with a preconditioner that is not a diagonal: an object whose
``apply(r, z, config)`` computes z = M r with kernels of its own (`Multigrid`). The iteration
is `cg`'s, with z computed between the launches that update r and sum r.z:

    r = b - A x, rr, bb;  z = M r;  p = z, rz
    repeat: q = A p, pq;  x += alpha p, r -= alpha q, rr;  z = M r;  rz;  p = z + beta p
"""
from __future__ import annotations

import math
import weakref

import relsim as rs

from . import kernels as _kernels
from .common import SolverError, _check_arguments, _Clock, _maxiter, _record, _start, _Workspace

TEMPLATES = {
    "start": _kernels.CG["start"],
    "init": """
    @rs.kernel
    def init(v):
        v.{R} = v.{B} - v.{OPY}
        rr += v.{R} * v.{R}
        bb += v.{B} * v.{B}
""",
    "first": """
    @rs.kernel
    def first(v):
        v.{OPX} = v.{Z}
        rz += v.{R} * v.{Z}
""",
    "curvature": _kernels.CG["curvature"],
    "update": """
    @rs.kernel
    def update(v):
        v.{X} += alpha * v.{OPX}
        v.{R} -= alpha * v.{OPY}
        rr += v.{R} * v.{R}
""",
    "rz": """
    @rs.kernel
    def rz(v):
        rz += v.{R} * v.{Z}
""",
    "direction": """
    @rs.kernel
    def direction(v):
        v.{OPX} = v.{Z} + beta * v.{OPX}
""",
}
_GLOBALS = ("alpha", "beta", "rr", "rz", "pq", "bb")
_workspaces: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pcg(A, b, x, M, rtol, atol, maxiter, callback, config, timers, dots):
    """`cg` with M a preconditioner object (A already an Operator); its SolveInfo."""
    _check_arguments("cg", A, b, x, None, dots)
    ws = _workspace(A, b, x, dots)
    g, k = ws.globals, ws.kernels
    r, z = A.relation.field("_linalg_cg_r"), A.relation.field("_linalg_cg_z")
    info = _start(ws, A, b, config, ("rr", "bb"), rtol, atol)
    maxiter = _maxiter(maxiter, A)
    clock = _Clock(timers)
    if info.converged:
        return info
    clock.start()
    M.apply(r, z, config)
    clock.stop("preconditioner")
    g["rz"].value = 0.0
    A.relation.foreach(k["first"], config)
    rz = g["rz"].value
    stuck = 0
    while not info.converged and info.iterations < maxiter:
        it = info.iterations + 1
        clock.start()
        A(config)
        clock.stop("operator")
        g["pq"].value = 0.0
        A.relation.foreach(k["curvature"], config)
        pq = g["pq"].value
        clock.stop("dot")
        if not (pq > 0.0 and math.isfinite(pq)):
            raise SolverError(f"cg: the curvature p.Ap = {pq!r} at iteration {it} is not "
                              f"positive and finite: the operator is not positive definite")
        g["alpha"].value = rz / pq
        g["rr"].value = 0.0
        A.relation.foreach(k["update"], config)
        clock.stop("update")
        norm = _record(info, "cg", g["rr"].value, it, callback)
        stuck = stuck + 1 if info.residuals[-1] == info.residuals[-2] else 0
        if stuck >= 2:
            raise SolverError(f"cg: the residual norm {norm!r} stopped changing at iteration "
                              f"{it} (stagnation above the tolerance {info.tolerance!r})")
        if info.converged:
            break
        M.apply(r, z, config)
        clock.stop("preconditioner")
        g["rz"].value = 0.0
        A.relation.foreach(k["rz"], config)
        rz_new = g["rz"].value
        if not (rz_new > 0.0 and math.isfinite(rz_new)):
            raise SolverError(f"cg: the preconditioned residual r.z = {rz_new!r} at iteration "
                              f"{it} is not positive and finite: the preconditioner is not "
                              f"positive definite")
        g["beta"].value = rz_new / rz
        rz = rz_new
        A.relation.foreach(k["direction"], config)
        clock.stop("direction")
    return info


def _workspace(A, b, x, dots) -> _Workspace:
    R = A.relation
    key = (A.x.name, A.y.name, b.name, x.name, dots)
    per_relation = _workspaces.setdefault(R, {})
    ws = per_relation.get(key)
    if ws is None:
        work = {w: R.field(f"_linalg_cg_{w}") if R.has_field(f"_linalg_cg_{w}") else
                R.new_field(f"_linalg_cg_{w}", rs.f64) for w in ("r", "z")}
        names = {"OPX": A.x.name, "OPY": A.y.name, "B": b.name, "X": x.name,
                 "R": work["r"].name, "Z": work["z"].name}
        text = _kernels.module_text(TEMPLATES, names, list(_GLOBALS))
        module = _kernels.load(text, rs.config.current().cache_path())
        globals_ = {n: rs.Global(rs.f64, 0.0, name=f"cg_{n}", sum=dots) for n in _GLOBALS}
        ws = per_relation[key] = _Workspace(module.make(**globals_), globals_)
    return ws
