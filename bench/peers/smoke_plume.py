#!/usr/bin/env python
"""Peers benchmark: the gallery's smoke plume (`relsim run smoke`, 2-D stable fluids), relsim
against hand-written Numba, Taichi and NVIDIA Warp, us per step on the CPU (`relsim bench smoke`).

The grid, source block and parameters come from `simulations/smoke.py`. Every implementation
runs the same step on a periodic n x n MAC grid, f64, from the same start (all zero): the source
(density 1, the inflow speed), buoyancy on the y-faces, semi-Lagrangian advection of both
velocity components and the density (bilinear, periodic), the divergence and the right-hand side
``-(div - mean div) / dt``, conjugate gradients on minus the 5-point Laplacian (warm-started
from the last pressure, stopping at ``||r|| <= rtol ||b||``, rtol = 1e-8), the pressure
gradient subtracted on the faces. Each peer as its own examples write it:

* ``numba serial`` / ``numba prange``: one ``@njit`` step per variant (a ``prange`` over the
  grid's rows in the second), per-row helpers inlined, the CG loop written out inside it;
* ``taichi``: ``ti.field`` arrays indexed ``[i, j]``, ``ti.kernel`` loops over them; the
  pressure by CG in kernels (``ti.linalg.MatrixFreeCG``'s algorithm with the updates fused;
  ``MatrixFreeCG`` itself compiles its kernels anew at every call, ~150 ms each: see
  `_taichi_smoke.py`);
* ``warp``: 2-D ``wp.array`` launched over ``dim=(n, n)`` as Warp's ``example_fluid.py``, the
  pressure by ``warp.optim.linear.cg`` with a ``LinearOperator`` around a matvec kernel (one
  batch declared, so that its dot products take Warp's direct CPU path: see `_warp_smoke.py`),
  on the ``cpu`` device. The launches before and after the solve are captured as two graphs and
  replayed; the solve itself is not: on the CPU ``cg`` tests convergence on the host (every
  ``check_every`` = 10 iterations, Warp's default; iterations past convergence do nothing), and
  its capturable form (``check_every=0``) would run ``maxiter`` iterations on a CPU device.

Answers: every peer's density after ``--check-steps`` steps within ``--tolerance`` (default
1e-7) of relsim's. Not bit for bit: relsim's dot products are exact sums, the peers' are
ordinary ones (in their own orders), so the CG iterates differ in the last bits and the pressure
agrees to about rtol, not to round-off. Timing and table as `_gallery.py`.
"""
from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench/_common.py
sys.path.insert(0, str(HERE))  # the peers' modules

import _gallery as G  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

_JIT = dict(cache=True, error_model="numpy", boundscheck=False)


# -- hand-written Numba: arrays indexed [j, i] (rows of the grid: relsim's row order) ---------
@njit(inline="always")
def sample(q, j, i, x, y):
    """q (on its own grid) at (i + x, j + y), bilinear, periodic."""
    n = q.shape[0]
    a, b = int(np.floor(x)), int(np.floor(y))
    fx, fy = x - a, y - b
    i0, i1, j0, j1 = (i + a) % n, (i + a + 1) % n, (j + b) % n, (j + b + 1) % n
    return (1.0 - fx) * ((1.0 - fy) * q[j0, i0] + fy * q[j1, i0]) \
        + fx * ((1.0 - fy) * q[j0, i1] + fy * q[j1, i1])


@njit(inline="always")
def advect_row(j, ux, uy, d, uxn, uyn, dn, dt, h):
    n = d.shape[0]
    jm, jp = j - 1, (j + 1) % n
    for i in range(n):
        im, ip = i - 1, (i + 1) % n
        vbar = 0.25 * (uy[j, i] + uy[j, im] + uy[jp, i] + uy[jp, im])
        uxn[j, i] = sample(ux, j, i, -dt * ux[j, i] / h, -dt * vbar / h)
        ubar = 0.25 * (ux[j, i] + ux[j, ip] + ux[jm, i] + ux[jm, ip])
        uyn[j, i] = sample(uy, j, i, -dt * ubar / h, -dt * uy[j, i] / h)
        dn[j, i] = sample(d, j, i, -dt * (0.5 * (ux[j, i] + ux[j, ip])) / h,
                          -dt * (0.5 * (uy[j, i] + uy[jp, i])) / h)


@njit(inline="always")
def divergence_row(j, uxn, uyn, h, div):
    n = div.shape[0]
    s = 0.0
    for i in range(n):
        div[j, i] = (uxn[j, (i + 1) % n] - uxn[j, i] + uyn[(j + 1) % n, i] - uyn[j, i]) / h
        s += div[j, i]
    return s


@njit(inline="always")
def laplacian(s, j, i, h):
    """Minus the 5-point Laplacian of s at (i, j), periodic."""
    n = s.shape[0]
    return (4.0 * s[j, i] - s[j, (i + 1) % n] - s[j, i - 1] - s[(j + 1) % n, i]
            - s[j - 1, i]) / (h * h)


@njit(inline="always")
def residual_row(j, x, b, h, r, p):
    """r = p = b - A x on row j; (r.r, b.b) of the row."""
    rr = bb = 0.0
    for i in range(x.shape[0]):
        r[j, i] = b[j, i] - laplacian(x, j, i, h)
        p[j, i] = r[j, i]
        rr += r[j, i] * r[j, i]
        bb += b[j, i] * b[j, i]
    return rr, bb


@njit(inline="always")
def matvec_row(j, p, h, q):
    """q = A p on row j; p.q of the row."""
    s = 0.0
    for i in range(p.shape[0]):
        q[j, i] = laplacian(p, j, i, h)
        s += p[j, i] * q[j, i]
    return s


@njit(inline="always")
def update_row(j, alpha, p, q, x, r):
    """x += alpha p, r -= alpha A p on row j; r.r of the row."""
    s = 0.0
    for i in range(x.shape[0]):
        x[j, i] += alpha * p[j, i]
        r[j, i] -= alpha * q[j, i]
        s += r[j, i] * r[j, i]
    return s


@njit(inline="always")
def project_row(j, uxn, uyn, dn, p, dt, h, ux, uy, d):
    for i in range(d.shape[0]):
        ux[j, i] = uxn[j, i] - dt * (p[j, i] - p[j, i - 1]) / h
        uy[j, i] = uyn[j, i] - dt * (p[j, i] - p[j - 1, i]) / h
        d[j, i] = dn[j, i]


@njit(**_JIT)
def step_serial(f, src, dt, h, beta, inflow, rtol):
    """One step; f: ux, uy, d, p, uxn, uyn, dn, div, b, r, s (direction), q (A s), stacked.
    Returns the CG iterations."""
    ux, uy, d, p, uxn, uyn, dn, div, b, r, s, q = f
    n = d.shape[0]
    for k in range(src.shape[0]):
        d[src[k, 0], src[k, 1]] = 1.0
        uy[src[k, 0], src[k, 1]] = inflow
    for j in range(n):
        for i in range(n):
            uy[j, i] += dt * beta * 0.5 * (d[j, i] + d[j - 1, i])
    for j in range(n):
        advect_row(j, ux, uy, d, uxn, uyn, dn, dt, h)
    total = 0.0
    for j in range(n):
        total += divergence_row(j, uxn, uyn, h, div)
    for j in range(n):
        for i in range(n):
            b[j, i] = (total / (n * n) - div[j, i]) / dt
    rr = bb = 0.0
    for j in range(n):
        a, c = residual_row(j, p, b, h, r, s)
        rr += a
        bb += c
    tol = rtol * np.sqrt(bb)
    it = 0
    while np.sqrt(rr) > tol and it < 10 * n * n:
        it += 1
        pq = 0.0
        for j in range(n):
            pq += matvec_row(j, s, h, q)
        alpha = rr / pq
        rr_new = 0.0
        for j in range(n):
            rr_new += update_row(j, alpha, s, q, p, r)
        if np.sqrt(rr_new) <= tol:
            break
        beta_ = rr_new / rr
        rr = rr_new
        for j in range(n):
            for i in range(n):
                s[j, i] = r[j, i] + beta_ * s[j, i]
    for j in range(n):
        project_row(j, uxn, uyn, dn, p, dt, h, ux, uy, d)
    return it


@njit(parallel=True, **_JIT)
def step_prange(f, src, dt, h, beta, inflow, rtol):
    """step_serial with a prange over the rows of each loop over the grid."""
    ux, uy, d, p, uxn, uyn, dn, div, b, r, s, q = f
    n = d.shape[0]
    for k in range(src.shape[0]):
        d[src[k, 0], src[k, 1]] = 1.0
        uy[src[k, 0], src[k, 1]] = inflow
    for j in prange(n):
        for i in range(n):
            uy[j, i] += dt * beta * 0.5 * (d[j, i] + d[j - 1, i])
    for j in prange(n):
        advect_row(j, ux, uy, d, uxn, uyn, dn, dt, h)
    total = 0.0
    for j in prange(n):
        total += divergence_row(j, uxn, uyn, h, div)
    for j in prange(n):
        for i in range(n):
            b[j, i] = (total / (n * n) - div[j, i]) / dt
    rr = bb = 0.0
    for j in prange(n):
        a, c = residual_row(j, p, b, h, r, s)
        rr += a
        bb += c
    tol = rtol * np.sqrt(bb)
    it = 0
    while np.sqrt(rr) > tol and it < 10 * n * n:
        it += 1
        pq = 0.0
        for j in prange(n):
            pq += matvec_row(j, s, h, q)
        alpha = rr / pq
        rr_new = 0.0
        for j in prange(n):
            rr_new += update_row(j, alpha, s, q, p, r)
        if np.sqrt(rr_new) <= tol:
            break
        beta_ = rr_new / rr
        rr = rr_new
        for j in prange(n):
            for i in range(n):
                s[j, i] = r[j, i] + beta_ * s[j, i]
    for j in prange(n):
        project_row(j, uxn, uyn, dn, p, dt, h, ux, uy, d)
    return it


class NumbaSerial:
    step_ = staticmethod(step_serial)

    def __init__(self, n, source, dt, beta, inflow, rtol):
        self.n, self.dt, self.h = int(n), float(dt), 1.0 / n
        self.beta, self.inflow, self.rtol = float(beta), float(inflow), float(rtol)
        self.src = np.argwhere(source.T).astype(np.int64)  # (j, i) of the source's cells
        self.f = np.zeros((12, n, n))

    def load(self, d, ux, uy, p):
        self.f[:] = 0.0
        for k, a in enumerate((ux, uy, d, p)):
            self.f[k] = a.reshape(self.n, self.n)

    def step(self):
        self.step_(self.f, self.src, self.dt, self.h, self.beta, self.inflow, self.rtol)

    def state(self):
        ux, uy, d, p = (self.f[k].ravel().copy() for k in range(4))
        return d, ux, uy, p


class NumbaPrange(NumbaSerial):
    step_ = staticmethod(step_prange)


# -- relsim ---------------------------------------------------------------------------------
class Relsim:
    """smoke.py's grid and step."""

    def __init__(self, n):
        from relsim_simulations import smoke
        self.grid, self.step_, _, self.kernels, _ = smoke.build(n)
        self.C = self.grid.cells
        source = np.zeros(n * n, dtype=bool)
        source[smoke.source_rows(self.C.center.numpy())] = True
        self.start = tuple(np.zeros(n * n) for _ in range(4))  # d, ux, uy, p
        self.arrays = dict(n=n, source=source.reshape(n, n).T.copy(), dt=smoke.DT,
                           beta=smoke.BETA, inflow=smoke.INFLOW, rtol=smoke.RTOL)

    def load(self, d, ux, uy, p):
        for name, a in (("d", d), ("ux", ux), ("uy", uy), ("p", p)):
            self.C.field(name).load(a)

    def step(self):
        self.step_()

    def state(self):
        return tuple(self.C.field(f).numpy(copy=True) for f in ("d", "ux", "uy", "p"))


def case(n):
    rel = Relsim(n)
    a = rel.arrays
    header = (f"plume n={n}: {n}x{n} cells, {int(a['source'].sum())} source cells, "
              f"dt {a['dt']}, CG rtol {a['rtol']:g}")
    return G.Case(rel, a, rel.start, {"numba serial": NumbaSerial, "numba prange": NumbaPrange},
                  header)


def gallery() -> G.Gallery:
    from relsim_simulations import smoke
    common = ["sample", "advect_row", "divergence_row", "laplacian", "residual_row",
              "matvec_row", "update_row", "project_row"]
    return G.Gallery(
        name="smoke", title="Smoke plume, 2-D stable fluids (relsim run smoke)", suffix="smoke",
        cls_name="Plume", sizes=[128, 40], case=case,
        relsim_lines=lambda: G.kernel_lines(smoke.__file__, [
            "inflow", "buoyancy", "back", "bilinear", "advect", "divergence", "rhs",
            "laplacian", "project"]),
        numba_lines={"numba serial": G.kernel_lines(__file__, common + ["step_serial"]),
                     "numba prange": G.kernel_lines(__file__, common + ["step_prange"])},
        peer_kernels=("inflow", "buoyancy", "wrap", "sample", "advect", "divergence", "rhs",
                      "laplacian", "matvec", "project", "residual", "dot", "update", "direction",
                      "cg"),
        what="smoke.py's source, buoyancy, advection, divergence, CG pressure solve (rtol "
             "1e-8, warm-started) and projection", number=2, check_steps=20,
        notes=["warp: Warp's CPU backend runs each launch on one thread; the launches around "
               "the pressure solve are two captured graphs, replayed; warp.optim.linear.cg "
               "itself runs uncaptured (on the CPU it checks convergence on the host), its "
               "operator declared as one batch (without it, Warp's tiled dot products make a "
               "solve ~35x slower on the CPU).",
               "taichi: CG in kernels (MatrixFreeCG's algorithm): MatrixFreeCG compiles its "
               "kernels anew at every call (~150 ms)."])


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a.startswith("--tolerance") for a in argv):
        argv += ["--tolerance", "1e-7"]  # CG to rtol 1e-8: the pressures agree to about that
    return G.main(gallery(), argv)


if __name__ == "__main__":
    sys.exit(main())
