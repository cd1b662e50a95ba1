"""Solves on a tape, differentiated implicitly.

A solve recorded on an `rs.Tape` is one step (`rs.AdjointStep`), not the hundreds of launches
and host scalars of its iterations: the solution x of ``A x = b`` depends on b and on A's
entries, not on how the iterations reached it (nor on the initial guess). With ``x̄`` the
derivative of the loss with respect to x, the adjoint is one more solve,

    A^T λ = x̄,    b̄ += λ,    ā_ij -= λ_i x_j,    x̄ (the initial guess) = 0,

by the same solver to the same tolerance (cg: A^T = A; bicgstab and gmres: the transposed
product, a gather over each column's entries; `direct`: the transposed LU factors). λ and the
entries' derivatives are computed by kernels, so the gradients are the same bits on every
target, thread count and rank count, as the solves are. Only an assembled `SparseMatrix` is
differentiated: a matrix-free `Operator` is the user's kernels, whose transpose and parameters
relsim does not know (a `GradientError` when such a solve is recorded).
"""
from __future__ import annotations

import relsim as rs

from . import kernels as _kernels

ADJOINT = {
    "inputs": """
    @rs.kernel
    def inputs(v):
        v.{BG} += v.{LAM}
        v.{XG} = 0.0
""",
    "entries": """
    @rs.kernel
    def entries(e):
        e.{AG} -= e.row.{ROWV} * e.col.{COLV}
""",
}


def record(solver, name: str, A, b, x, options: dict):
    """Run ``solver(A, b, x, **options)`` as one step of the recording tape; its SolveInfo."""
    if getattr(A, "entries", None) is None:  # (a SparseMatrix; sparse.py imports the solvers)
        raise rs.GradientError(
            f"linalg.{name} is recorded on an rs.Tape with a matrix-free Operator: a solve is "
            f"differentiated implicitly, through A^T and A's entries, which relsim knows for an "
            f"assembled linalg.SparseMatrix only; assemble A (SparseMatrix.from_elements) or "
            f"solve outside the tape")
    step = SolveStep(solver, name, A, b, x, options)
    rs.record_step(step)
    return step.info


class SolveStep(rs.AdjointStep):
    """``x = A^-1 b`` as a tape step (see the module's docstring)."""

    def __init__(self, solver, name, A, b, x, options):
        self.solver, self.name, self.A, self.b, self.x = solver, f"linalg.{name}", A, b, x
        self.options = options
        self.reads = (b, A.entries.a)
        self.writes = (x,)
        self.info = None
        self.solution = None

    def run(self) -> None:
        self.info = self.solver(self.A, self.b, self.x, **self.options)
        self.solution = self.x.numpy(copy=True)  # (for the entries' derivatives)

    def reverse(self) -> None:
        A, V = self.A, self.A.vertices
        lam, xs = (_scratch(V, f"_linalg_{A.name}_{w}") for w in ("adjoint", "solution"))
        lam.fill(0.0)
        xs.load(self.solution)
        opts = dict(self.options)
        flipped = bool(opts.get("transpose", False))  # (direct's: the step solved A^T x = b)
        if self.solver.__name__ == "direct":  # the other factors: A^T, or A if it was A^T
            opts["transpose"] = not flipped
            transposed = A
        else:
            transposed = A if self.solver.__name__ == "cg" else A.transposed()
        info = self.solver(transposed, self.x.grad, lam, **opts)
        if not info.converged:
            raise rs.GradientError(
                f"{self.name}'s adjoint solve (A^T λ = the derivative with respect to "
                f"{self.x.qualname}) did not converge in {info.iterations} iterations "
                f"(residual {info.residuals[-1]:.3g}, tolerance {info.tolerance:.3g}): raise "
                f"maxiter or loosen rtol")
        rowv, colv = (xs, lam) if flipped else (lam, xs)  # d/da_ij: -lam_i x_j (A^T: -x_i lam_j)
        names = {"BG": self.b.grad.name, "XG": self.x.grad.name, "LAM": lam.name,
                 "AG": A.entries.a.grad.name, "ROWV": rowv.name, "COLV": colv.name}
        text = _kernels.module_text(ADJOINT, names, [])
        k = _kernels.load(text, rs.config.current().cache_path()).make()
        config = self.options.get("config")  # (direct has none: the current one)
        V.foreach(k["inputs"], config)
        A.entries.foreach(k["entries"], config)


def _scratch(R, name):
    return R.field(name) if R.has_field(name) else R.new_field(name, rs.f64)
