"""Conjugate gradients with a preconditioner that is not a diagonal: an object whose
``apply(r, z, config)`` computes z = M r with kernels of its own (`Multigrid`). The iteration
is `cg`'s, with z computed between the launches that update r and sum r.z:

    r = b - A x, rr, bb;  z = M r;  p = z, rz
    repeat: q = A p, pq;  x += alpha p, r -= alpha q, rr;  z = M r;  rz;  p = z + beta p
"""
from __future__ import annotations

import weakref

import relsim as rs

from . import kernels as _kernels
from .common import (
    _check_arguments,
    _Clock,
    _curvature,
    _maxiter,
    _positive_rz,
    _record,
    _stalled,
    _start,
    _Workspace,
)

# CG's own kernels where they are the same (no in-kernel preconditioning: PRECOND and RZ empty,
# Z the preconditioner's output field)
TEMPLATES = {
    "start": _kernels.CG["start"],
    "init": _kernels.RESIDUAL,
    "first": """
    @rs.kernel
    def first(v):
        v.{OPX} = {Z}
        rz += v.{R} * {Z}
""",
    "curvature": _kernels.CG["curvature"],
    "update": _kernels.CG["update"],
    "rz": """
    @rs.kernel
    def rz(v):
        rz += v.{R} * {Z}
""",
    "direction": _kernels.CG["direction"],
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
        pq = _curvature(A, ws, config, it, clock)
        g["alpha"].value = rz / pq
        g["rr"].value = 0.0
        A.relation.foreach(k["update"], config)
        clock.stop("update")
        _record(info, "cg", g["rr"].value, it, callback)
        stuck = _stalled(info, stuck, it)
        if info.converged:
            break
        M.apply(r, z, config)
        clock.stop("preconditioner")
        g["rz"].value = 0.0
        A.relation.foreach(k["rz"], config)
        rz_new = _positive_rz(g["rz"].value, it)
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
                 "R": work["r"].name, "Z": f"v.{work['z'].name}", "PRECOND": "", "RZ": ""}
        text = _kernels.module_text(TEMPLATES, names, list(_GLOBALS))
        module = _kernels.load(text, rs.config.current().cache_path())
        globals_ = {n: rs.Global(rs.f64, 0.0, name=f"cg_{n}", sum=dots) for n in _GLOBALS}
        ws = per_relation[key] = _Workspace(module.make(**globals_), globals_)
    return ws
