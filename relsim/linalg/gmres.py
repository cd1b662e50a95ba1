"""Restarted GMRES as a relsim program: a Python loop of kernel launches, like `krylov.py`.

A cycle's Krylov basis is restart + 1 scalar fields of the relation (`_linalg_gmres_b<i>`), and
a new direction w = A v_j is orthogonalised by modified Gram-Schmidt, as SciPy's gmres does:
for each basis vector in turn, h_i = w.v_i (an exact sum), then w -= h_i v_i. A kernel names
fields by name, so the kernels read the basis vector of the moment from one stand-in field
(`_linalg_gmres_vi`) that the basis vector is copied into (`Field.copy_from`): the same
five kernels serve every basis vector. Measured: a copy and two launches per basis vector (the
sum's kernel writes nothing, so it keeps no slots for its exact path) cost less than one
fused launch reading the basis vector in place, and much less than the alternatives (one
vector field for the basis: a vec(31) exact sum compiled in 13-19 s per kernel and every launch
read each row's whole vector, 11x SciPy's time per iteration; swapping the basis fields into
the stand-ins made every kernel on the relation bind its arrays again at each launch). The
small least-squares problem (Givens rotations of the Hessenberg matrix, the back substitution)
runs on the host in Python floats, the same on every process. The sums are exact (or
`dots="ordered"`), so every iterate is the same, bit for bit, on every target, thread count
and rank count.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import relsim as rs

from . import adjoint as _adjoint
from . import kernels as _kernels
from .common import (
    SolveInfo,
    SolverError,
    _check_arguments,
    _maxiter,
    _operator,
    _start,
    _Workspace,
)

TEMPLATES = {
    "start": _kernels.CG["start"],
    "init": _kernels.RESIDUAL,
    "first": """
    @rs.kernel
    def first(v):
        v.{VI} = inv * v.{R}
        v.{OPX} = v.{VI}
""",
    "dot": """
    @rs.kernel
    def dot(v):
        hw += v.{OPY} * v.{VI}
""",
    "axpy": """
    @rs.kernel
    def axpy(v):
        v.{OPY} -= h * v.{VI}
""",
    "norm": """
    @rs.kernel
    def norm(v):
        ww += v.{OPY} * v.{OPY}
""",
    "advance": """
    @rs.kernel
    def advance(v):
        v.{VI} = inv * v.{OPY}
        v.{OPX} = v.{VI}
""",
    "update": """
    @rs.kernel
    def update(v):
        v.{X} += h * v.{VI}
""",
}

_SUMMED = ("rr", "bb", "hw", "ww")
_workspaces: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def gmres(A, b, x, rtol: float = 1e-8, atol: float = 0.0, restart: int = 30,
          maxiter: int | None = None, callback=None, config=None,
          dots: str = "exact") -> SolveInfo:
    """Solve ``A x = b`` by GMRES restarted every `restart` iterations (any nonsingular A: an
    `Operator` or a `SparseMatrix`), with the arguments, stopping rule and `dots` of `cg`.
    ``info.residuals``: the residual norm before the first iteration, then GMRES's own
    estimate after each iteration, replaced by the true norm ``||b - A x||`` at the end of each
    cycle (where x is updated); convergence is decided on the true norm. A cycle that does not
    reduce the residual at all, or a NaN, raises a `SolverError` naming the iteration."""
    if not isinstance(restart, int) or restart < 1:
        raise ValueError(f"gmres: restart must be an int >= 1, got {restart!r}")
    if rs.Tape.recording() or rs.Tangents.running():  # (one step, differentiated implicitly: as cg)
        return _adjoint.record(gmres, "gmres", A, b, x, dict(
            rtol=rtol, atol=atol, restart=restart, maxiter=maxiter, callback=callback,
            config=config, dots=dots))
    A = _operator(A)
    ws = _workspace(A, b, x, restart, dots)
    g, k = ws.globals, ws.kernels
    basis, vi = ws.fields["basis"], ws.fields["vi"]
    R = A.relation

    info = _start(ws, A, b, config, ("rr", "bb"), rtol, atol)
    maxiter = _maxiter(maxiter, A)
    beta = info.residuals[0]
    while not info.converged and info.iterations < maxiter:
        g["inv"].value = 1.0 / beta
        R.foreach(k["first"], config)
        basis[0].copy_from(vi)
        cols, cs, sn = [], [], []  # R's columns (after the rotations), the rotations
        gv = [beta] + [0.0] * restart  # the rotated right-hand side beta e_1
        for j in range(restart):
            it = info.iterations + 1
            A(config)  # w = A v_j, in the operator's y
            col = []
            for i in range(j + 1):  # modified Gram-Schmidt
                if j > 0:  # (v_0 is in the stand-in already at j = 0)
                    vi.copy_from(basis[i])
                g["hw"].value = 0.0
                R.foreach(k["dot"], config)
                col.append(g["hw"].value)
                g["h"].value = col[i]
                R.foreach(k["axpy"], config)
            g["ww"].value = 0.0
            R.foreach(k["norm"], config)
            h_next = math.sqrt(g["ww"].value)
            if not all(math.isfinite(c) for c in col + [h_next]):
                raise SolverError(f"gmres: the Hessenberg column of iteration {it} holds NaN or "
                                  f"infinity (A v or the operator produced it)")
            for i in range(j):  # the earlier rotations
                col[i], col[i + 1] = cs[i] * col[i] + sn[i] * col[i + 1], \
                    -sn[i] * col[i] + cs[i] * col[i + 1]
            d = math.sqrt(col[j] * col[j] + h_next * h_next)
            if d == 0.0:
                raise SolverError(f"gmres: breakdown at iteration {it}: A v = 0 for the basis "
                                  f"vector v_{j} (A is singular)")
            cs.append(col[j] / d)
            sn.append(h_next / d)
            col[j] = d
            cols.append(col)
            gv[j + 1], gv[j] = -sn[j] * gv[j], cs[j] * gv[j]
            _progress(info, it, abs(gv[j + 1]), callback)
            if info.converged or info.iterations >= maxiter or h_next == 0.0:
                break  # (h_next = 0: the solution lies in this basis)
            g["inv"].value = 1.0 / h_next
            R.foreach(k["advance"], config)  # v_{j+1} = w / h_next
            basis[j + 1].copy_from(vi)
        for i, y_i in enumerate(_back_substitute(cols, gv)):  # x += y_i v_i
            vi.copy_from(basis[i])
            g["h"].value = y_i
            R.foreach(k["update"], config)
        R.foreach(k["start"], config)  # the true residual r = b - A x
        A(config)
        g["rr"].value = g["bb"].value = 0.0
        R.foreach(k["init"], config)
        true = math.sqrt(g["rr"].value)
        if not math.isfinite(true):
            raise SolverError(f"gmres: the residual norm is {true!r} at iteration "
                              f"{info.iterations}")
        info.residuals[-1] = true
        info.converged = true <= info.tolerance
        if not info.converged and true >= beta:
            raise SolverError(f"gmres: the residual norm {true!r} did not fall in the cycle "
                              f"ending at iteration {info.iterations} (stagnation above the "
                              f"tolerance {info.tolerance!r}; a larger restart may help)")
        beta = true
    return info


def _progress(info, it, norm, callback) -> None:
    info.iterations = it
    info.residuals.append(norm)
    info.converged = norm <= info.tolerance
    if callback is not None:
        callback(it, norm)


def _back_substitute(cols, gv) -> list:
    """y solving R y = gv[:n] (R upper triangular: column l is cols[l])."""
    n = len(cols)
    y = [0.0] * n
    for i in reversed(range(n)):
        s = gv[i]
        for col_l, y_l in zip(cols[i + 1:], y[i + 1:]):
            s -= col_l[i] * y_l
        y[i] = s / cols[i][i]
    return y


def _workspace(A, b, x, restart, dots) -> _Workspace:
    _check_arguments("gmres", A, b, x, None, dots)
    R = A.relation
    key = (A.x.name, A.y.name, b.name, x.name, restart, dots)
    per_relation = _workspaces.setdefault(R, {})
    ws = per_relation.get(key)
    if ws is None:
        fields = {w: _work_field(R, f"_linalg_gmres_{w}") for w in ("r", "vi")}
        fields["basis"] = [_work_field(R, f"_linalg_gmres_b{i}") for i in range(restart + 1)]
        names = {"OPX": A.x.name, "OPY": A.y.name, "B": b.name, "X": x.name,
                 "R": fields["r"].name, "VI": fields["vi"].name}
        globals_ = {n: rs.Global(rs.f64, 0.0, name=f"gmres_{n}",
                                 **({"sum": dots} if n in _SUMMED else {}))
                    for n in ("rr", "bb", "hw", "ww", "h", "inv")}
        text = _kernels.module_text(TEMPLATES, names, list(globals_))
        module = _kernels.load(text, rs.config.current().cache_path())
        ws = per_relation[key] = _GmresWorkspace(module.make(**globals_), globals_, fields)
    return ws


@dataclass
class _GmresWorkspace(_Workspace):
    fields: dict  # the work fields: r, the stand-in vi, and the basis (a list)


def _work_field(R, name):
    return R.field(name) if R.has_field(name) else R.new_field(name, rs.f64)
