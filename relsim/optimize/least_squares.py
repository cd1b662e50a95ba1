"""Nonlinear least squares: minimise 0.5 sum r(x)^2 over the unknowns x, the residuals r computed
by the user's kernels, by Gauss-Newton or Levenberg-Marquardt.

Each iteration linearises at x (J the Jacobian of r, `problem.Problem`'s products) and takes the
step d solving

    (J^T J + lambda D^T D) d = -J^T r        (lambda = 0: Gauss-Newton)

with D Marquardt's scaling, the running maximum of J's column norms (MINPACK's choice: the step
is invariant to the unknowns' units). Three ways to solve it:

* ``inner="dense"`` (the default up to 64 unknowns): J column by column, one forward-mode run
  per unknown, and the step from the augmented least-squares system ``[J; sqrt(lambda) D] d =
  [-r; 0]`` by NumPy's SVD-based solver, which never squares J's condition number (the NIST
  problems need this);
* ``inner="sparse"`` (the default above 64 unknowns, where the program allows): J assembled
  on the host from kernels generated from the residual kernels (`rs.Tangents.jacobian`: per
  place a kernel reads an unknown, the derivative of each residual stored beside it), then
  J^T J + lambda D^T D assembled into a `linalg.SparseMatrix` and solved by `linalg.cg`,
  preconditioned by its diagonal (Jacobi) or `linalg.Multigrid` (``precondition=``), D from
  J's column norms (`normal.py`);
* ``inner="cg"``: matrix-free conjugate gradients on the normal equations, each product J v
  one forward run and J^T (J v) one backward of the tape recorded at x, preconditioned by the
  diagonal of J^T J + lambda D^T D (Jacobi, as Opt does), diag(J^T J) computed by kernels
  generated from the residual kernels (`rs.Tangents.jacobian_diagonal`; D from it too). Where
  the program is not of the form those kernels need (an unknown read inside a loop or through
  a key held in a local, residuals computed from intermediate fields), cg goes without: D the
  identity, no preconditioner (``info.preconditioned`` says which).

The cg steps stop at an inexact Newton method's forcing term (``cg_rtol=None``): relative
tolerance min(0.1, sqrt(|g| / |g0|)), loose far from the minimum, tight near it.

Levenberg-Marquardt adapts lambda by the ratio rho of the actual to the predicted cost reduction
(Nielsen's rule: on success lambda *= max(1/3, 1 - (2 rho - 1)^3), on failure lambda *= nu, nu
doubling); Gauss-Newton halves a step that does not reduce the cost (up to 30 times). Stopping
(the first that holds): the gradient ``max |J^T r| <= gtol``, the relative cost reduction of an
accepted step ``<= ftol``, the step ``||d|| <= xtol (||x|| + xtol)``, `max_iterations`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

import relsim as rs

from .normal import PRECONDITIONERS, NormalEquations
from .problem import Problem, dot, norm

DENSE_UP_TO = 64  # unknowns: the default inner solve is "dense" up to this many


@dataclass
class LeastSquaresInfo:
    """What a solve did: `iterations` (accepted or not), `cost` (0.5 sum r^2 at the result),
    `costs` (the cost at the start and after each accepted step), `converged` and `reason`
    (which stopping rule held, or why it stopped), `gradient` (max |J^T r| at the result),
    `evaluations` (program runs for residuals), `jacobian_products` and `transpose_products`
    (forward and reverse runs), `inner_iterations` (cg iterations in all), `preconditioned`
    (whether the cg inner solve had the diagonal of J^T J)."""
    iterations: int = 0
    cost: float = math.inf
    costs: list = field(default_factory=list)
    converged: bool = False
    reason: str = ""
    gradient: float = math.inf
    evaluations: int = 0
    jacobian_products: int = 0
    transpose_products: int = 0
    inner_iterations: int = 0
    preconditioned: bool = False


def least_squares(program, residuals, unknowns, *, method: str = "lm", inner: str = "auto",
                  weights: dict | None = None, max_iterations: int = 100, ftol: float = 1e-12,
                  xtol: float = 1e-12, gtol: float = 1e-12, cg_rtol: float | None = None,
                  cg_maxiter: int | None = None, damping: float = 1e-3,
                  precondition: str = "jacobi") -> LeastSquaresInfo:
    """Minimise ``0.5 * sum(w * r**2)`` over `unknowns`. `program`: a callable (no arguments)
    running the launches that compute the `residuals` (f64 fields: one or a list; scalar or
    vector values) from the `unknowns` (f64 fields and Globals: one or a list), which are
    changed in place to the result. `method`: ``"lm"`` (Levenberg-Marquardt) or ``"gn"``
    (Gauss-Newton); `inner`: ``"dense"``, ``"sparse"``, ``"cg"`` or ``"auto"`` (dense up to
    64 unknowns, else sparse where the program allows, else cg);
    `weights`: per residual field, one number or one per value; `damping`: LM's first lambda
    (the damping is lambda D^T D, D Marquardt's scaling: relative to J^T J's diagonal);
    `cg_rtol`: the inner cg's relative tolerance (None: the inexact-Newton forcing term
    min(0.1, sqrt(|g| / |g0|))); `precondition`: the sparse step's cg preconditioner,
    ``"jacobi"`` or ``"multigrid"`` (smoothed aggregation of J^T J, Gauss-Seidel smoothing;
    one process). See the module for the stopping rules."""
    if method not in ("lm", "gn"):
        raise ValueError(f"least_squares: method must be 'lm' or 'gn', got {method!r}")
    if inner not in ("auto", "dense", "sparse", "cg"):
        raise ValueError(f"least_squares: inner must be 'auto', 'dense', 'sparse' or 'cg', got "
                         f"{inner!r}")
    if precondition not in PRECONDITIONERS:
        raise ValueError(f"least_squares: precondition must be 'jacobi' or 'multigrid', got "
                         f"{precondition!r}")
    if precondition == "multigrid" and inner in ("dense", "cg"):
        raise ValueError(f"least_squares: precondition='multigrid' needs the assembled step "
                         f"(inner='sparse' or 'auto'), not inner={inner!r}")
    if not isinstance(max_iterations, int) or max_iterations < 0:
        raise ValueError(f"least_squares: max_iterations must be an int >= 0, got "
                         f"{max_iterations!r}")
    p = Problem(program, residuals, unknowns, weights)
    if p.n == 0:
        raise rs.DataError("least_squares: there are no unknowns")
    dense = inner == "dense" or inner == "auto" and p.n <= DENSE_UP_TO
    maxiter = cg_maxiter or max(10, 2 * p.n)
    info = LeastSquaresInfo()
    x = p.get()
    r = _checked(p, x, 0)
    cost = 0.5 * dot(r, r)
    info.costs.append(cost)
    scale = np.zeros(p.n)
    lam, nu = None, 2.0
    if dense:
        step = _Dense(p)
    else:
        first = p.jacobian(x) if inner in ("auto", "sparse") else None
        if inner == "sparse" and first is None:
            raise rs.DataError("least_squares: inner='sparse' needs residual kernels that read "
                               "the unknowns directly (not inside a loop, not through a key "
                               "held in a local) and store the residuals at their own rows")
        step = _Sparse(p, cg_rtol, maxiter, first, precondition) if first is not None else \
            _Matrixfree(p, cg_rtol, maxiter)
    try:
        _refuse_unread(p, x)
        while True:
            g = step.linearise(x, r)  # J^T r
            info.gradient = float(np.abs(g).max())
            if info.gradient <= gtol:
                info.converged, info.reason = True, "gradient"
                break
            if info.iterations >= max_iterations:
                info.reason = "max_iterations"
                break
            info.iterations += 1
            scale = np.maximum(scale, step.column_norms())
            if method == "lm":
                if lam is None:  # (relative: the damping is lam D^T D, D ~ J's column norms)
                    lam = damping
                d, predicted = step.solve(x, r, g, lam, scale)
                x_new = x + d
                r_new = _checked(p, x_new, info.iterations)
                cost_new = 0.5 * dot(r_new, r_new)
                actual = cost - cost_new
                rho = actual / predicted if predicted > 0.0 else -1.0
                accepted = actual > 0.0 and rho > 0.0
                if accepted:
                    lam *= max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
                    nu = 2.0
                else:
                    lam *= nu
                    nu *= 2.0
            else:  # Gauss-Newton: the full step, halved until the cost goes down
                d, _ = step.solve(x, r, g, 0.0, scale)
                accepted = False
                for _ in range(30):
                    x_new = x + d
                    r_new = _checked(p, x_new, info.iterations)
                    cost_new = 0.5 * dot(r_new, r_new)
                    actual = cost - cost_new
                    if actual > 0.0:
                        accepted = True
                        break
                    d = 0.5 * d
            small_step = norm(x_new - x) <= xtol * (norm(x) + xtol)
            if accepted:
                reduced = actual <= ftol * cost
                x, r, cost = x_new, r_new, cost_new
                info.costs.append(cost)
                if reduced or small_step:
                    info.converged, info.reason = True, "ftol" if reduced else "xtol"
                    break
            elif small_step:  # no step big enough to count reduces the cost: a minimum
                info.converged, info.reason = True, "xtol"
                break
            elif method == "gn":
                info.reason = "no descent"
                break
    finally:
        p.set(x)
    info.cost = cost
    info.evaluations, info.jacobian_products, info.transpose_products = \
        p.evaluations, p.jv, p.jtw
    info.inner_iterations = getattr(step, "inner", 0)
    info.preconditioned = getattr(step, "preconditioned", False)
    p.program()  # (the residual fields at the result)
    return info


def _checked(p: Problem, x, iteration: int) -> np.ndarray:
    """r(x), refusing non-finite residuals: the program runs once more with debug checks,
    whose error names the kernel, line and row that made the value."""
    r = p.residual(x)
    if np.all(np.isfinite(r)):
        return r
    at = int(np.flatnonzero(~np.isfinite(r))[0])
    for t in p.residuals:
        size = int(np.prod((t.relation.size,) + t.type.shape))
        if at < size:
            row = at // max(1, int(np.prod(t.type.shape, dtype=np.int64)))
            break
        at -= size
    where = (f"least_squares: residual {t.qualname} is {r[np.flatnonzero(~np.isfinite(r))[0]]}"
             f" at row {row} (iteration {iteration})")
    before = rs.configure()
    try:
        rs.configure(debug=True)
        p.program()
    except rs.KernelCheckError as exc:
        raise rs.DataError(f"{where}; the program run with debug checks says:\n{exc}") from exc
    finally:
        rs.configure(debug=before.debug)
    raise rs.DataError(f"{where}; no kernel made it from finite values (with debug checks): "
                       f"an unknown or an input holds it")


def _refuse_unread(p: Problem, x) -> None:
    """An unknown no residual depends on (its Jacobian columns all 0 along a random
    direction of it alone) is an error naming it."""
    rng = np.random.default_rng(0)
    at = 0
    for t, size in zip(p.unknowns, p.sizes):
        v = np.zeros(p.n)
        v[at:at + size] = rng.standard_normal(size)
        at += size
        if not np.any(p.jacobian_times(x, v)):
            name = t.qualname if isinstance(t, rs.Field) else f"Global {t.name!r}"
            raise rs.DataError(f"least_squares: no residual depends on the unknown {name} (at "
                               f"the start): the program never reads it, or only where its "
                               f"derivative is 0")


class _Dense:
    """The step from J itself, one forward run per unknown."""

    def __init__(self, p: Problem):
        self.p = p
        self.J = self.x = self.g = None

    def linearise(self, x, r):
        if self.J is not None and np.array_equal(self.x, x):
            return self.g  # (a rejected step: the same point)
        self.x = np.array(x, copy=True)
        eye = np.zeros(self.p.n)
        cols = []
        for j in range(self.p.n):
            eye[:] = 0.0
            eye[j] = 1.0
            cols.append(self.p.jacobian_times(x, eye))
        self.J = np.stack(cols, axis=1)
        self.g = np.array([dot(self.J[:, j], r) for j in range(self.p.n)])
        return self.g

    def column_norms(self):
        return np.array([norm(self.J[:, j]) for j in range(self.p.n)])

    def solve(self, x, r, g, lam, scale):
        A = self.J
        rhs = -r
        if lam:
            A = np.vstack([A, np.diag(math.sqrt(lam) * np.where(scale > 0, scale, 1.0))])
            rhs = np.concatenate([rhs, np.zeros(self.p.n)])
        d = np.linalg.lstsq(A, rhs, rcond=None)[0]
        Jd = self.J @ d
        predicted = -(dot(g, d) + 0.5 * dot(Jd, Jd))
        return d, predicted


class _Matrixfree:
    """The step by conjugate gradients on the normal equations, J's products by the program's
    forward and reverse runs."""

    def __init__(self, p: Problem, rtol: float, maxiter: int):
        self.p, self.rtol, self.maxiter = p, rtol, maxiter
        self.inner = 0
        self.x = self.g = self.diag = None
        self.preconditioned = False

    def linearise(self, x, r):
        if self.g is not None and np.array_equal(self.x, x):
            return self.g  # (a rejected step: the same point)
        self.x = np.array(x, copy=True)
        self.diag = self.p.diagonal(x)
        self.preconditioned = self.diag is not None
        self.g = self.p.transpose_times(x, r)
        return self.g

    def column_norms(self):
        return np.zeros(self.p.n) if self.diag is None else np.sqrt(self.diag)

    def tolerance(self, g) -> float:
        return _forcing(self, g)

    def solve(self, x, r, g, lam, scale):
        p = self.p
        damp = lam * np.where(scale > 0, scale, 1.0) ** 2
        precond = damp + (self.diag if self.diag is not None else 0.0)
        d, used = _cg(lambda v: p.transpose_times(x, p.jacobian_times(x, v)) + damp * v, g,
                      np.where(precond > 0, precond, 1.0), self.tolerance(g), self.maxiter)
        self.inner += used
        Jd = p.jacobian_times(x, d)
        return d, -(dot(g, d) + 0.5 * dot(Jd, Jd))


class _Sparse:
    """The step by conjugate gradients on the normal equations with J assembled (sparse, on
    the host) from kernels generated from the residual kernels (`rs.Tangents.jacobian`):
    one program run for J per point, then products at a sparse matrix's cost."""

    preconditioned = True

    def __init__(self, p: Problem, rtol: float, maxiter: int, first=None,
                 precondition: str = "jacobi"):
        self.p, self.rtol, self.maxiter = p, rtol, maxiter
        self.inner = 0
        self.x = self.g = self.J = None
        self.first = first  # (J at the start, assembled already)
        self.precondition = precondition
        self.normal = None  # the assembled normal equations (made at the first step)

    def linearise(self, x, r):
        if self.g is not None and np.array_equal(self.x, x):
            return self.g
        self.x = np.array(x, copy=True)
        self.J = self.first if self.first is not None else self.p.jacobian(x)
        self.first = None
        self.Jt = self.J.T.tocsr()
        self.diag = np.asarray(self.J.multiply(self.J).sum(axis=0)).ravel()
        self.g = self.Jt @ r
        return self.g

    def column_norms(self):
        return np.sqrt(self.diag)

    def tolerance(self, g) -> float:
        return _forcing(self, g)

    def solve(self, x, r, g, lam, scale):
        J = self.J
        damp = lam * np.where(scale > 0, scale, 1.0) ** 2
        if self.normal is None:
            self.normal = NormalEquations(J)
        d, used = self.normal.solve(J, damp, g, self.tolerance(g), self.maxiter,
                                    self.precondition)
        self.inner += used
        Jd = J @ d
        return d, -(dot(g, d) + 0.5 * dot(Jd, Jd))


def _forcing(step, g) -> float:
    """The inner cg's relative tolerance: the user's `cg_rtol`, else the forcing term of an
    inexact Newton method, min(0.1, sqrt(|g| / |g0|)) (g0 the first gradient): loose far from
    the solution, tight near it."""
    if step.rtol is not None:
        return step.rtol
    if getattr(step, "g0", None) is None:
        step.g0 = norm(g)
    return min(0.1, math.sqrt(norm(g) / step.g0)) if step.g0 > 0 else 0.1


def _cg(normal, g, precond, rtol: float, maxiter: int) -> tuple:
    """(d, iterations): preconditioned conjugate gradients for normal(d) = -g, from d = 0, to
    ||residual|| <= rtol ||g|| (exactly rounded dot products)."""
    d = np.zeros(len(g))
    res = -g
    z = res / precond
    q = z.copy()
    rz = dot(res, z)
    stop = rtol * norm(g)
    used = 0
    for _ in range(maxiter):
        if norm(res) <= stop:
            break
        Aq = normal(q)
        qAq = dot(q, Aq)
        if qAq <= 0.0:
            break
        alpha = rz / qAq
        d = d + alpha * q
        res = res - alpha * Aq
        z = res / precond
        rz_new = dot(res, z)
        q = z + (rz_new / rz) * q
        rz = rz_new
        used += 1
    return d, used
