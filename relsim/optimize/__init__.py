"""Optimisation written as relsim programs: nonlinear least squares whose residuals are the
user's kernels, differentiated by relsim (forward mode for J v, the tape for J^T w), and the
minimisation of an energy the kernels sum (L-BFGS, gradients by the tape).

    info = optimize.least_squares(run, residuals=O.r, unknowns=[P.b], method="lm")
    info.cost, info.iterations, info.converged, info.reason
    info = optimize.minimize(run, energy, unknowns=V.x)

Built on the public API only (like `relsim.linalg`)."""
from .least_squares import LeastSquaresInfo, least_squares
from .minimize import MinimizeInfo, minimize

__all__ = ["least_squares", "LeastSquaresInfo", "minimize", "MinimizeInfo"]
