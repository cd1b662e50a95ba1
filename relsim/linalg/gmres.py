"""Restarted GMRES as a relsim program: a Python loop of kernel launches, like `krylov.py`.

The Krylov basis of a cycle is one vector field of the relation (column i of each row's vector
the basis vector v_i; padded with zero columns to a multiple of `CHUNK`), so the kernels are the
same for every basis vector: a new direction is orthogonalised against all earlier ones by
classical Gram-Schmidt applied twice (CGS2: the projections summed, CHUNK basis vectors per
launch, into a vector Global; one launch subtracting them; the second projections; one launch
subtracting those and summing the norm), as stable as modified Gram-Schmidt for this use, with
a few launches per iteration instead of two per basis vector. (A sum into a vector Global of
restart + 1 components at once compiled 10x slower: 13-19 s per kernel at restart 30.) The
small least-squares problem (Givens rotations of the Hessenberg matrix, the back substitution)
runs on the host in Python floats, the same on every process. The sums are exact (or
`dots="ordered"`), so every iterate is the same, bit for bit, on every target, thread count
and rank count.
"""
from __future__ import annotations

import math
import weakref

import relsim as rs

from . import kernels as _kernels
from .krylov import (
    Operator,
    SolveInfo,
    SolverError,
    _maxiter,
    _operator,
    _scalar_f64,
    _start,
    _Workspace,
)

TEMPLATES = {
    "start": """
    @rs.kernel
    def start(v):
        v.{OPX} = v.{X}
""",
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
        v.{V} = rs.vec({M1})(0.0)
        v.{V}[0] = inv * v.{R}
        v.{OPX} = v.{V}[0]
""",
    "project": """
    @rs.kernel
    def project(v):
        V = v.{V}
        hc += v.{OPY} * rs.vec({CHUNK})({COLUMNS})
""",
    "subtract": """
    @rs.kernel
    def subtract(v):
        v.{OPY} -= rs.dot(h, v.{V})
""",
    "norm": """
    @rs.kernel
    def norm(v):
        v.{OPY} -= rs.dot(h, v.{V})
        ww += v.{OPY} * v.{OPY}
""",
    "advance": """
    @rs.kernel
    def advance(v):
        v.{V}[j] = inv * v.{OPY}
        v.{OPX} = v.{V}[j]
""",
    "update": """
    @rs.kernel
    def update(v):
        v.{X} += rs.dot(y, v.{V})
""",
}

_SUMMED = ("rr", "bb", "hc", "ww")
CHUNK = 8  # basis vectors projected on per launch
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
    A = _operator(A)
    ws = _workspace(A, b, x, restart, dots)
    g, k = ws.globals, ws.kernels
    info = _start(ws, A, b, config, ("rr", "bb"), rtol, atol)
    maxiter = _maxiter(maxiter, A)
    beta = info.residuals[0]
    width = ws.globals["h"].type.n  # (restart + 1, padded to a multiple of CHUNK)
    while not info.converged and info.iterations < maxiter:
        g["inv"].value = 1.0 / beta
        A.relation.foreach(k["first"], config)
        cols, cs, sn = [], [], []  # R's columns (after the rotations), the rotations
        gv = [beta] + [0.0] * restart  # the rotated right-hand side beta e_1
        for j in range(restart):
            it = info.iterations + 1
            A(config)
            first = _project(g, k, A.relation, j + 1, width, config)
            g["h"].value = first
            A.relation.foreach(k["subtract"], config)
            second = _project(g, k, A.relation, j + 1, width, config)
            g["h"].value = second
            g["ww"].value = 0.0
            A.relation.foreach(k["norm"], config)
            col = [first[i] + second[i] for i in range(j + 1)]
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
            g["j"].value = j + 1
            A.relation.foreach(k["advance"], config)
        y = _back_substitute(cols, gv)
        g["y"].value = y + [0.0] * (width - len(y))
        A.relation.foreach(k["update"], config)
        A.relation.foreach(k["start"], config)  # the true residual r = b - A x
        A(config)
        g["rr"].value = g["bb"].value = 0.0
        A.relation.foreach(k["init"], config)
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


def _project(g, k, relation, n, width, config) -> list:
    """The projections w.v_i of the operator's output w on the first n basis vectors (and
    zeros up to `width`), CHUNK per launch."""
    out = [0.0] * width
    for c in range(0, n, CHUNK):
        g["c"].value = c
        g["hc"].value = 0.0
        relation.foreach(k["project"], config)
        out[c:c + CHUNK] = [float(h) for h in g["hc"].value]
    return out[:n] + [0.0] * (width - n)


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
    if dots not in rs.Global.SUMS:
        raise ValueError(f"gmres: dots must be one of {', '.join(map(repr, rs.Global.SUMS))}, "
                         f"got {dots!r}")
    if not isinstance(A, Operator):
        raise TypeError(f"gmres: A must be a relsim.linalg.Operator (the kernels computing "
                        f"y = A x, and its fields x and y) or a SparseMatrix, got {A!r}")
    R = A.relation
    for f, what in ((b, "b"), (x, "x")):
        _scalar_f64(f, f"gmres: {what}")
        if f.relation is not R:
            raise rs.DataError(f"gmres: {what} ({f.qualname}) is not a field of the operator's "
                               f"relation {R.name}")
    named = [b, x, A.x, A.y]
    if len({id(f) for f in named}) < len(named):
        raise rs.DataError(f"gmres: b, x and the operator's x and y must be different fields, "
                           f"got {', '.join(f.qualname for f in named)}")
    key = (A.x.name, A.y.name, b.name, x.name, restart, dots)
    per_relation = _workspaces.setdefault(R, {})
    ws = per_relation.get(key)
    if ws is None:
        width = -(-(restart + 1) // CHUNK) * CHUNK
        r = _work_field(R, "_linalg_gmres_r", rs.f64)
        basis = _work_field(R, f"_linalg_gmres_v{width}", rs.vec(width))
        names = {"OPX": A.x.name, "OPY": A.y.name, "B": b.name, "X": x.name, "R": r.name,
                 "V": basis.name, "M1": str(width), "CHUNK": str(CHUNK),
                 "COLUMNS": ", ".join(f"V[c + {i}]" for i in range(CHUNK))}
        globals_ = {n: rs.Global(rs.f64, 0.0, name=f"gmres_{n}",
                                 **({"sum": dots} if n in _SUMMED else {}))
                    for n in ("rr", "bb", "ww", "inv")}
        globals_["hc"] = rs.Global(rs.vec(CHUNK), 0.0, name="gmres_hc", sum=dots)
        globals_.update({n: rs.Global(rs.vec(width), 0.0, name=f"gmres_{n}")
                         for n in ("h", "y")})
        globals_.update({n: rs.Global(rs.i64, 0, name=f"gmres_{n}") for n in ("j", "c")})
        text = _kernels.module_text(TEMPLATES, names, list(globals_))
        module = _kernels.load(text, rs.config.current().cache_path())
        ws = per_relation[key] = _Workspace(module.make(**globals_), globals_)
    return ws


def _work_field(R, name, type_):
    return R.field(name) if R.has_field(name) else R.new_field(name, type_)
