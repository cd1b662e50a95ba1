"""The normal equations of a sparse least-squares step, assembled and solved by relsim:
(J^T J + diag(damp)) d = -g as a `linalg.SparseMatrix` over a relation with one row per unknown
value, by `linalg.cg` (its kernels, its exactly rounded dot products: the same bits everywhere)
preconditioned by the diagonal (Jacobi) or by `linalg.Multigrid` (symmetric Gauss-Seidel
smoothing).

The matrix's pattern is J's structure squared (J^T J of J with every stored entry 1, plus the
diagonal), fixed for a problem (the Jacobian kernels store the same entries at every point), so
the relation and the matrix are made once and each step loads new values; a value of J^T J
outside the pattern is impossible by construction.
"""
from __future__ import annotations

import numpy as np

import relsim as rs
from relsim import linalg

PRECONDITIONERS = ("jacobi", "multigrid")


class NormalEquations:
    """The matrix, its relation and work fields for J's structure (SciPy CSR `J`)."""

    def __init__(self, J, name: str = "lsq"):
        import scipy.sparse as sp
        n = J.shape[1]
        P = sp.csr_matrix((np.ones(J.nnz), J.indices, J.indptr), shape=J.shape)
        S = (P.T @ P + sp.identity(n, format="csr")).tocoo()
        self.n, self.name = n, name
        self.R = rs.Relation(f"{name}_unknowns", n)
        for f in ("b", "x", "diag"):
            self.R.new_field(f, rs.f64)
        self.K = linalg.SparseMatrix(self.R, S.row, S.col, name=f"{name}_A")
        E = self.K.entries
        self.codes = E.row.numpy().astype(np.int64) * n + E.col.numpy().astype(np.int64)

    def solve(self, J, damp, g, rtol: float, maxiter: int, precondition: str) -> tuple:
        """(d, cg iterations) for (J^T J + diag(damp)) d = -g to ||residual|| <= rtol ||g||."""
        import scipy.sparse as sp
        A = (J.T @ J + sp.diags(damp)).tocoo()
        A.sum_duplicates()
        at = np.searchsorted(self.codes, A.row.astype(np.int64) * self.n + A.col)
        values = np.zeros(len(self.codes))
        values[at] = A.data
        self.K.entries.a.load(values)
        self.R.b.load(-g)
        self.R.x.fill(0.0)
        if precondition == "multigrid":
            M = linalg.Multigrid(self.K, smoother="gauss-seidel", name=f"{self.name}_mg")
        else:
            self.K.diagonal(self.R.diag)
            M = self.R.diag
        info = linalg.cg(self.K, self.R.b, self.R.x, rtol=rtol, maxiter=maxiter, M=M)
        return self.R.x.numpy(copy=True), info.iterations
