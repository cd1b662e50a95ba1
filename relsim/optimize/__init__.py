"""Optimisation written as relsim programs: nonlinear least squares whose residuals are the
user's kernels, differentiated by relsim (forward mode for J v, the tape for J^T w).

    info = optimize.least_squares(run, residuals=O.r, unknowns=[P.b], method="lm")
    info.cost, info.iterations, info.converged, info.reason

Built on the public API only (like `relsim.linalg`)."""
from .least_squares import LeastSquaresInfo, least_squares

__all__ = ["least_squares", "LeastSquaresInfo"]
