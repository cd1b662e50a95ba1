"""Linear algebra written as relsim programs: Krylov solvers over the fields of a relation.

    A = linalg.Operator(apply, x=V.u, y=V.Au)   # your kernel(s): V.Au = A V.u
    info = linalg.cg(A, b=V.rhs, x=V.T, rtol=1e-10)
    info.iterations, info.residuals, info.converged

The operator is the user's kernels; the vector updates and dot products are relsim kernels (the
dot products exact Global sums), so a solve runs on every target and under MPI unchanged, with
the same iterates, bit for bit, on any thread count, rank count and device. Built on the public
API only (like the domains)."""
from .bicgstab import bicgstab
from .common import Operator, SolveInfo, SolverError
from .direct import direct
from .gmres import gmres
from .krylov import cg, cg_launches
from .multigrid import Multigrid
from .relaxation import SSOR, Chebyshev
from .sparse import SparseMatrix

__all__ = ["Operator", "SparseMatrix", "SolveInfo", "SolverError", "cg", "cg_launches",
           "bicgstab", "gmres", "direct", "Multigrid", "SSOR", "Chebyshev"]
