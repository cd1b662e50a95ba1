"""Smoothing ``A x = b`` on one relation's rows: damped Jacobi, Chebyshev and symmetric
Gauss-Seidel (SOR), as kernels. Multigrid smooths every level with one (`multigrid.py`); the
`SSOR` and `Chebyshev` preconditioners are one alone (`relaxation.py`).

Each smoother has a *pre* step, which computes x from b starting at x = 0, and a *post* step,
which improves the x it finds; post is pre's adjoint, so pre, a symmetric correction, then post
is a symmetric operator, as cg needs:

* ``"jacobi"``: `sweeps` damped Jacobi sweeps ``x += omega D^-1 (b - A x)`` (omega
  ``4 / (3 rho)``, rho Gershgorin's bound of D^-1 A's spectral radius) before and after.
* ``"chebyshev"``: the Chebyshev polynomial in D^-1 A of degree `sweeps` damping the
  eigenvalues in [rho / 30, rho] (the upper part, which a coarse level cannot correct), before
  and after; the polynomial's coefficients are host scalars (Globals) set before each step.
* ``"gauss-seidel"``: `sweeps` forward SOR sweeps (weight `omega`) over the colours of A's graph
  (`rs.colour` of the off-diagonal pattern: a colour's rows never read each other, so a launch
  over one colour is race-free, proven at launch), colour 0 first; after, the same sweeps
  backwards (the last colour first). The off-diagonal entries are a relation of their own
  (``<name>_offdiag``, grouped by row): a row must not read its own x through a key while a
  launch over its colour writes it.

Every sum is a gather in ascending entry order, so a smoother gives the same bits on every
target and thread count.
"""
from __future__ import annotations

import numpy as np

import relsim as rs

KINDS = ("jacobi", "chebyshev", "gauss-seidel")

# `{X}`-style names: the level's work fields (B, X, XN, R, D = omega / diagonal, DI = 1 /
# diagonal), A's row grouping (ROWS) and the off-diagonal grouping (OFF); Globals c1, c2, w
KERNELS = {
    "first": """
    @rs.kernel
    def first(v):
        v.{X} = v.{D} * v.{B}
""",
    "sweep": """
    @rs.kernel
    def sweep(v):
        s = 0.0
        for e in v.{ROWS}:
            s += e.a * e.col.{X}
        v.{XN} = v.{X} + v.{D} * (v.{B} - s)
""",
    "residual": """
    @rs.kernel
    def residual(v):
        s = 0.0
        for e in v.{ROWS}:
            s += e.a * e.col.{X}
        v.{R} = v.{B} - s
""",
    "chebyshev_first": """
    @rs.kernel
    def chebyshev_first(v):
        v.{XN} = c2 * v.{D} * v.{B}
        v.{X} = v.{XN}
""",
    "chebyshev_step": """
    @rs.kernel
    def chebyshev_step(v):
        v.{XN} = c1 * v.{XN} + c2 * v.{D} * v.{R}
        v.{X} += v.{XN}
""",
    "gauss_seidel": """
    @rs.kernel
    def gauss_seidel(v):
        s = v.{B}
        for e in v.{OFF}:
            s -= e.a * e.col.{X}
        v.{X} += w * (v.{DI} * s - v.{X})
""",
}
GLOBALS = ("c1", "c2", "w")
FIELDS = ("b", "x", "xn", "r", "d", "di")


def check(kind, sweeps, omega, who: str) -> None:
    """Refuse a smoother's options that are not one of `KINDS`, sweeps >= 1, 0 < omega < 2."""
    if kind not in KINDS:
        raise ValueError(f"{who}: smoother must be one of {', '.join(map(repr, KINDS))}, got "
                         f"{kind!r}")
    if not isinstance(sweeps, int) or isinstance(sweeps, bool) or sweeps < 1:
        raise ValueError(f"{who}: sweeps must be an int >= 1, got {sweeps!r}")
    if not (isinstance(omega, (int, float)) and 0.0 < omega < 2.0):
        raise ValueError(f"{who}: omega must be a number in (0, 2), got {omega!r}")


def chebyshev_coefficients(rho: float, omega: float, degree: int) -> list:
    """(c1, c2) of each step of the Chebyshev smoother on [rho / 30, rho] (Saad's three-term
    recurrence ``d = c1 d + c2 D^-1 r; x += d``), c2 divided by `omega` because the kernels'
    diagonal field holds ``omega / a_ii``."""
    lo, hi = rho / 30.0, rho
    theta, delta = 0.5 * (hi + lo), 0.5 * (hi - lo)
    sigma = theta / delta
    steps, r = [(0.0, 1.0 / theta / omega)], 1.0 / sigma
    for _ in range(degree - 1):
        r_new = 1.0 / (2.0 * sigma - r)
        steps.append((r_new * r, 2.0 * r_new / delta / omega))
        r = r_new
    return steps


def make_fields(R, prefix: str, M, omega: float) -> None:
    """The work fields of `R` (``<prefix><field>``; kept if there), D = omega / diagonal and
    DI = 1 / diagonal of M (0 where the diagonal is)."""
    d = M.diagonal()
    inv = np.where(d != 0.0, 1.0 / np.where(d != 0.0, d, 1.0), 0.0)
    for k in FIELDS:
        f = R.field(prefix + k) if R.has_field(prefix + k) else R.new_field(prefix + k, rs.f64)
        if k == "d":
            f.load(np.where(d != 0.0, omega / np.where(d != 0.0, d, 1.0), 0.0))
        elif k == "di":
            f.load(inv)


def names(prefix: str, rows: str) -> dict:
    """The template names of the work fields `make_fields` makes and of the groupings."""
    out = {k.upper(): prefix + k for k in FIELDS}
    out.update(ROWS=rows, OFF=prefix + "off")
    return out


class Smoother:
    """One level's smoother (see the module): ``pre(config)`` sets x from b, ``post(config)``
    improves x. `R`: the level's relation, `M`: its matrix (SciPy CSR, as A's entries are),
    `rho`: the Gershgorin bound of D^-1 M (`aggregation.spectral_radius`), `omega`: Jacobi's
    weight (in the D field), `gs_omega`: SOR's weight, `kernels`/`globals_`: the module
    `KERNELS` made, `prefix`: the fields'."""

    def __init__(self, kind, sweeps, R, M, rho, omega, gs_omega, kernels, globals_, prefix):
        self.kind, self.sweeps, self.R, self.k, self.g = kind, sweeps, R, kernels, globals_
        self.gs_omega = float(gs_omega)
        self.x, self.xn = R.field(prefix + "x"), R.field(prefix + "xn")
        if kind == "chebyshev":
            self.steps = chebyshev_coefficients(rho, omega, sweeps)
        if kind == "gauss-seidel":
            self.colours = _colours(R, M, prefix)

    def pre(self, config) -> None:
        k = self.k
        if self.kind == "jacobi":
            self.R.foreach(k["first"], config)
            for _ in range(self.sweeps - 1):
                self._jacobi(config)
        elif self.kind == "chebyshev":
            self._coefficients(0)
            self.R.foreach(k["chebyshev_first"], config)
            self._chebyshev(1, config)
        else:
            self.x.fill(0.0)
            self._gauss_seidel(self.colours, config)

    def post(self, config) -> None:
        if self.kind == "jacobi":
            for _ in range(self.sweeps):
                self._jacobi(config)
        elif self.kind == "chebyshev":
            self._chebyshev(0, config)
        else:
            self._gauss_seidel(self.colours[::-1], config)

    def _jacobi(self, config) -> None:
        self.R.foreach(self.k["sweep"], config)
        self.x.swap(self.xn)

    def _coefficients(self, step: int) -> None:
        c1, c2 = self.steps[step]
        self.g["c1"].value, self.g["c2"].value = c1, c2

    def _chebyshev(self, first: int, config) -> None:
        for step in range(first, len(self.steps)):
            self.R.foreach(self.k["residual"], config)
            self._coefficients(step)
            self.R.foreach(self.k["chebyshev_step"], config)

    def _gauss_seidel(self, colours, config) -> None:
        self.g["w"].value = self.gs_omega
        for _ in range(self.sweeps):
            for colour in colours:
                colour.foreach(self.k["gauss_seidel"], config)


def _colours(R, M, prefix: str) -> list:
    """The off-diagonal entries of M as a relation grouped by row (``<prefix>off`` of R, an
    earlier one replaced) and the colours of their graph (subsets ``<prefix>colour<c>`` of R,
    earlier ones of that name replaced)."""
    off = M.tocoo()
    keep = (off.row != off.col) & (off.data != 0.0)
    rows, cols = off.row[keep].astype(np.int64), off.col[keep].astype(np.int64)
    order = np.lexsort((cols, rows))
    E = rs.Relation(f"{prefix.strip('_')}_offdiag", len(order))
    E.new_key_field("row", R, values=rows[order])
    E.new_key_field("col", R, values=cols[order])
    E.new_field("a", rs.f64).load(off.data[keep][order])
    group = prefix + "off"
    if group in R.groupings:
        R.drop_grouping(group)
    E.group_by(E.row, group)
    for name in [s for s in R.subsets if s.startswith(prefix + "colour")]:
        R.drop_subset(name)
    return rs.colour(R, E.row, E.col, name=prefix + "colour")
