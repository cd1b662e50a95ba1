"""In-process generator of the OP2 Airfoil NACA0012 mesh (Airfoil reference, section 4.2).

``naca_mesh(400, 600)`` is the standard 720 000-cell mesh; its ``format_op2`` rendering has
sha256 07dfaf5c2b7002992bc845c4c0a87bdda9cff5ce2e352ae7b76987bea9c9089c.

The node coordinates are rounded as printf("%f") then strtod would round them, so the mesh in
memory equals the mesh read back from its ASCII rendering.

The not-a-knot spline follows SciPy's ``CubicSpline`` operation for operation (the banded
system solved like LAPACK ``dgtsv``, the piecewise polynomial evaluated like ``PPoly``), so
no SciPy is needed.
"""

from __future__ import annotations

import numpy as np

from .reader import INDEX_DTYPE, Op2Mesh, round_f6

__all__ = ["airfoil_curve", "naca_mesh", "naca_sizes", "not_a_knot_spline"]

STANDARD_SHA256 = "07dfaf5c2b7002992bc845c4c0a87bdda9cff5ce2e352ae7b76987bea9c9089c"


def naca_sizes(I: int, J: int) -> dict:  # noqa: E741
    """Set sizes of ``naca_mesh(I, J)``."""
    return {
        "nnode": (3 * I + 1) * (J + 1),
        "ncell": 3 * I * J,
        "nedge": (3 * I - 1) * J + 3 * I * (J - 1) + I,
        "nbedge": 4 * I + 2 * J,
    }


def airfoil_curve(npts: int = 100):
    """The 2*npts-1 point square-root-mapped NACA0012 curve (step 1 and 2): (xi, eta) arrays."""
    theta = np.linspace(0.0, np.pi / 2, npts)
    x = np.sin(theta) ** 2
    y = 0.594689181 * (
        0.298222773 * np.sqrt(x)
        - 0.127125232 * x
        - 0.357907906 * x**2
        + 0.291984971 * x**3
        - 0.105174696 * x**4
    )
    y[-1] = 0.0  # closed trailing edge
    zeta = np.sqrt((x - 0.0077) + 1j * y)
    curve = np.concatenate((-np.conj(zeta)[::-1], zeta[1:]))
    return curve.real.copy(), curve.imag.copy()


def _gtsv(dl, d, du, b):
    """Solve a tridiagonal system like LAPACK dgtsv (partial pivoting, one right-hand side)."""
    dl = [float(v) for v in dl]
    d = [float(v) for v in d]
    du = [float(v) for v in du]
    b = [float(v) for v in b]
    n = len(d)
    for i in range(n - 1):
        if abs(d[i]) >= abs(dl[i]):
            if d[i] == 0.0:
                raise ZeroDivisionError("singular tridiagonal system")
            fact = dl[i] / d[i]
            d[i + 1] = d[i + 1] - fact * du[i]
            b[i + 1] = b[i + 1] - fact * b[i]
            dl[i] = 0.0
        else:
            fact = d[i] / dl[i]
            d[i] = dl[i]
            temp = d[i + 1]
            d[i + 1] = du[i] - fact * temp
            if i < n - 2:
                dl[i] = du[i + 1]
                du[i + 1] = -fact * dl[i]
            du[i] = temp
            temp = b[i]
            b[i] = b[i + 1]
            b[i + 1] = temp - fact * b[i + 1]
    if d[n - 1] == 0.0:
        raise ZeroDivisionError("singular tridiagonal system")
    b[n - 1] = b[n - 1] / d[n - 1]
    if n > 1:
        b[n - 2] = (b[n - 2] - du[n - 2] * b[n - 1]) / d[n - 2]
    for i in range(n - 3, -1, -1):
        b[i] = (b[i] - du[i] * b[i + 1] - dl[i] * b[i + 2]) / d[i]
    return np.array(b)


def not_a_knot_spline(x, y):
    """Coefficients (4, n-1) of the not-a-knot cubic spline through (x, y), n > 3, as SciPy's
    ``CubicSpline(x, y)`` computes them (highest power first, local to each interval)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = len(x)
    if n < 4:
        raise ValueError("need at least 4 points")
    dx = np.diff(x)
    if not (dx > 0).all():
        raise ValueError("x must be strictly increasing")
    slope = np.diff(y) / dx

    A = np.zeros((3, n))
    b = np.empty(n)
    A[1, 1:-1] = 2 * (dx[:-1] + dx[1:])
    A[0, 2:] = dx[:-1]
    A[-1, :-2] = dx[1:]
    b[1:-1] = 3 * (dx[1:] * slope[:-1] + dx[:-1] * slope[1:])

    A[1, 0] = dx[1]
    A[0, 1] = x[2] - x[0]
    d = x[2] - x[0]
    b[0] = ((dx[0] + 2 * d) * dx[1] * slope[0] + dx[0] ** 2 * slope[1]) / d

    A[1, -1] = dx[-2]
    A[-1, -2] = x[-1] - x[-3]
    d = x[-1] - x[-3]
    b[-1] = (dx[-1] ** 2 * slope[-2] + (2 * d + dx[-1]) * dx[-2] * slope[-1]) / d

    s = _gtsv(A[2, :-1], A[1, :], A[0, 1:], b)

    # CubicHermiteSpline coefficients.
    t = (s[:-1] + s[1:] - 2 * slope) / dx
    c = np.empty((4, n - 1))
    c[0] = t / dx
    c[1] = (slope - s[:-1]) / dx - t
    c[2] = s[:-1]
    c[3] = y[:-1]
    return c


def _ppoly_eval(xk, c, xv):
    """Evaluate like SciPy's PPoly: interval k with xk[k] <= xv < xk[k+1] (last one closed),
    then sum_m c[3-m] * s**m accumulated from m = 0 with s**m built by repeated products."""
    xv = np.asarray(xv, dtype=np.float64)
    k = np.searchsorted(xk, xv, side="right") - 1
    k = np.clip(k, 0, len(xk) - 2)
    s = xv - xk[k]
    res = np.zeros_like(xv)
    z = np.ones_like(xv)
    for m in range(4):
        res = res + c[3 - m, k] * z
        if m < 3:
            z = z * s
    return res


def naca_mesh(I: int = 400, J: int = 600) -> Op2Mesh:  # noqa: E741
    """The OP2 Airfoil NACA0012 C-type mesh with I panels per airfoil side and J layers."""
    I = int(I)  # noqa: E741
    J = int(J)
    if I < 1 or J < 2:
        raise ValueError(f"naca_mesh needs I >= 1 and J >= 2, got I={I}, J={J}")
    ni = 3 * I + 1  # nodes per row

    # Parameter plane.
    xi = np.linspace(-3.0, 3.0, ni)
    eta_b = np.zeros(ni)
    cx, cy = airfoil_curve()
    coef = not_a_knot_spline(cx, cy)
    inner = slice(I + 1, 2 * I)  # 1-based i = I+2 .. 2I
    eta_b[inner] = _ppoly_eval(cx, coef, xi[inner])
    eta = np.linspace(eta_b, 3.0, J + 1)  # (J+1, ni): row j-1 holds eta_j for every i
    XI = np.broadcast_to(xi, eta.shape)
    X = XI * XI - eta * eta
    Y = 2 * XI * eta
    coords = np.stack((X.ravel(), Y.ravel()), axis=1)  # node(i, j) = (i-1) + (j-1)*ni
    coords = round_f6(coords)

    # Cells: cell(i, j) = (i-1) + (j-1)*3I, corners counter-clockwise.
    ii, jj = np.meshgrid(np.arange(3 * I), np.arange(J))  # 0-based, i fastest
    n00 = ii + jj * ni
    cell = np.stack((n00, n00 + 1, n00 + 1 + ni, n00 + ni), axis=-1).reshape(-1, 4)

    def node(i, j):  # 1-based
        return (i - 1) + (j - 1) * ni

    def cid(i, j):  # 1-based
        return (i - 1) + (j - 1) * 3 * I

    # Edges: for j = 1..J, i = 1..3I, slots (a) wake cut, (b) upper side, (c) right side.
    i1 = ii + 1
    j1 = jj + 1
    slots = np.zeros((J, 3 * I, 3, 4), dtype=np.int64)
    mask = np.zeros((J, 3 * I, 3), dtype=bool)
    slots[..., 0, :] = np.stack(
        (node(i1, 1), node(i1 + 1, 1), cid(3 * I + 1 - i1, 1), cid(i1, 1)), axis=-1
    )
    mask[..., 0] = (j1 == 1) & (i1 <= I)
    slots[..., 1, :] = np.stack(
        (node(i1, j1 + 1), node(i1 + 1, j1 + 1), cid(i1, j1), cid(i1, j1 + 1)), axis=-1
    )
    mask[..., 1] = j1 < J
    slots[..., 2, :] = np.stack(
        (node(i1 + 1, j1), node(i1 + 1, j1 + 1), cid(i1 + 1, j1), cid(i1, j1)), axis=-1
    )
    mask[..., 2] = i1 < 3 * I
    edges = slots[mask]  # C order = (j, i, slot) order

    # Boundary edges: wall, right far field, top, left.
    iw = np.arange(I + 1, 2 * I + 1)
    jr = np.arange(1, J + 1)
    it = np.arange(3 * I, 0, -1)
    jl = np.arange(J, 0, -1)
    one = np.ones_like
    b = np.concatenate(
        [
            np.stack((node(iw + 1, 1), node(iw, 1), cid(iw, 1), one(iw)), axis=-1),
            np.stack(
                (
                    node(3 * I + 1, jr + 1),
                    node(3 * I + 1, jr),
                    cid(3 * I, jr),
                    2 * one(jr),
                ),
                axis=-1,
            ),
            np.stack((node(it, J + 1), node(it + 1, J + 1), cid(it, J), 2 * one(it)), axis=-1),
            np.stack((node(1, jl), node(1, jl + 1), cid(1, jl), 2 * one(jl)), axis=-1),
        ]
    )

    mesh = Op2Mesh(
        x=coords,
        cell=cell.astype(INDEX_DTYPE),
        edge=edges[:, 0:2].astype(INDEX_DTYPE),
        ecell=edges[:, 2:4].astype(INDEX_DTYPE),
        bedge=b[:, 0:2].astype(INDEX_DTYPE),
        becell=b[:, 2].astype(INDEX_DTYPE),
        bound=b[:, 3].astype(INDEX_DTYPE),
    )
    sizes = naca_sizes(I, J)
    assert (mesh.nnode, mesh.ncell, mesh.nedge, mesh.nbedge) == tuple(sizes.values())
    return mesh
