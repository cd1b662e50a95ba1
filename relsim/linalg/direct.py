"""A direct solve through SciPy's sparse LU, for the small systems where a factorisation beats
any iteration (a few 10^4 rows in 2-D; in 3-D the fill grows fast).

The factorisation (SuperLU, `scipy.sparse.linalg.splu`) is kept with the matrix until its
entries change (their field's version), so a time loop with a constant matrix factorises once.
It runs on the host, serially, on the whole matrix: the same bits whatever the target, thread
count or rank count (every rank solves the whole system). On an `rs.Tape` it is one step,
differentiated as the Krylov solves are (`linalg/adjoint.py`), with the transposed factors.
"""
from __future__ import annotations

import math

import numpy as np

import relsim as rs

from . import adjoint as _adjoint
from .common import SolveInfo, SolverError, _scalar_f64


def direct(A, b, x, transpose: bool = False) -> SolveInfo:
    """Solve ``A x = b`` (``A^T x = b`` with `transpose`) by sparse LU; A a `SparseMatrix`, b
    and x scalar f64 fields of its rows' relation. ``info.residuals``: ||b|| and
    ||b - A x|| after the solve. A singular matrix raises a `SolverError`."""
    from .sparse import SparseMatrix
    if not isinstance(A, SparseMatrix):
        raise TypeError(f"direct: A must be a linalg.SparseMatrix (its entries are factorised), "
                        f"got {A!r}")
    for f, what in ((b, "b"), (x, "x")):
        _scalar_f64(f, f"direct: {what}")
        if f.relation is not A.vertices:
            raise rs.DataError(f"direct: {what} ({f.qualname}) is not a field of the matrix's "
                               f"relation {A.vertices.name}")
    if b is x:
        raise rs.DataError(f"direct: b and x must be different fields, got {b.qualname} twice")
    if rs.Tape.recording() or rs.Tangents.running():
        return _adjoint.record(direct, "direct", A, b, x, dict(transpose=transpose))
    lu = _factors(A)
    rhs = b.numpy(copy=True)
    sol = lu.solve(rhs, trans="T" if transpose else "N")
    x.load(sol)
    M = A.to_scipy()
    residual = float(np.linalg.norm(rhs - (M.T if transpose else M) @ sol))
    info = SolveInfo(iterations=1, residuals=[float(np.linalg.norm(rhs)), residual],
                     tolerance=0.0)
    info.converged = math.isfinite(residual)
    return info


def _factors(A):
    """A's LU factors, computed again when its entries changed."""
    import scipy.sparse.linalg as spla
    kept = A.__dict__.get("_lu")
    version = A.entries.a.version
    if kept is not None and kept[0] == version:
        return kept[1]
    try:
        lu = spla.splu(A.to_scipy().tocsc())
    except RuntimeError as exc:  # SuperLU: "Factor is exactly singular"
        raise SolverError(f"direct: {A.name} cannot be factorised: {exc}") from None
    A._lu = (version, lu)
    return lu
