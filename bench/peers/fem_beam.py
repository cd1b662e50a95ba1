#!/usr/bin/env python
"""Peers benchmark: the gallery's Neo-Hookean beam (`relsim run fem`), relsim against
hand-written Numba, Taichi and NVIDIA Warp, us per step on the CPU (`relsim bench fem`).

The mesh and its rest state come from `simulations/fem.py` (``fem.beam(n)``: 4n x n x n cubes
of 6 tets, clamped at x = 0; its ``rest`` kernel gives every tet's ``Dm^-1`` and volume ``W``
and every vertex's lumped mass). Every implementation gets those same NumPy arrays, f64, and
runs the same symplectic Euler step::

    per tet:          F = Ds Dm^-1;  P = mu (F - F^-T) + lam log(det F) F^-T;
                      H = -W Dm^-1 P^T;  f[v1..v3] += rows of H;  f[v0] -= their sum
    per free vertex:  v += dt (f / m + g);  x += dt v;  f = 0

Variants, timed interleaved in one process at each ``--threads`` count:

* ``relsim``: fem.py's ``forces`` and ``advance`` kernels, ``T.foreach(forces);
  V.free.foreach(advance)``, target cpu, ``rs.configure(threads=t)``;
* ``numba serial``: one ``@njit`` loop over the tets (3x3 algebra written out on tuples), one
  over the free vertices;
* ``numba prange``: the deterministic parallel form: a ``prange`` over tets writing each tet's
  four nodal forces, then a ``prange`` over the free vertices adding theirs in ascending tet
  order (a CSR built once) and integrating in the same pass;
* ``taichi``: ``ti.init(arch=ti.cpu, cpu_max_num_threads=t)``, vector and matrix fields,
  atomic ``+=`` (Taichi's defaults otherwise, ``fast_math`` on);
* ``warp``: the ``cpu`` device, ``wp.mat33d`` algebra, ``wp.atomic_add``; the step's two
  launches captured once as a graph and replayed (Warp's fastest repeat; one thread).

Answers: each variant runs ``--check-steps`` steps from the same start; relsim at every thread
count must equal its own first answer bit for bit; the peers (other roundings: atomics, fast
math, other 3x3 formulas) are compared by ``max |x - x_relsim| / max |x_relsim - x_rest|``
(relative to the largest displacement) against ``--tolerance`` (1e-8). Printed besides the
times: the non-blank, non-comment lines of each version's step kernels. Time per step: min and
median over ``--repeats`` interleaved samples of ``--number`` steps; ratios are to relsim at
the same thread count (> 1: slower than relsim).

Usage::

    python bench/peers/fem_beam.py [--n 4 2] [--threads 1 2] [--repeats 15] [--number 50]
        [--peers numba taichi warp] [--chart PATH] [--markdown docs/benchmarks/history.md]
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


# -- hand-written Numba: 3x3 algebra on 9-tuples (row-major), no allocation per tet ---------
@njit(inline="always")
def matmul(a, b):
    return (a[0] * b[0] + a[1] * b[3] + a[2] * b[6], a[0] * b[1] + a[1] * b[4] + a[2] * b[7],
            a[0] * b[2] + a[1] * b[5] + a[2] * b[8],
            a[3] * b[0] + a[4] * b[3] + a[5] * b[6], a[3] * b[1] + a[4] * b[4] + a[5] * b[7],
            a[3] * b[2] + a[4] * b[5] + a[5] * b[8],
            a[6] * b[0] + a[7] * b[3] + a[8] * b[6], a[6] * b[1] + a[7] * b[4] + a[8] * b[7],
            a[6] * b[2] + a[7] * b[5] + a[8] * b[8])


@njit(inline="always")
def det(a):
    return a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) + \
        a[2] * (a[3] * a[7] - a[4] * a[6])


@njit(inline="always")
def inverse_transpose(a, d):
    """(a^-1)^T = cofactor matrix / det."""
    r = 1.0 / d
    return ((a[4] * a[8] - a[5] * a[7]) * r, (a[5] * a[6] - a[3] * a[8]) * r,
            (a[3] * a[7] - a[4] * a[6]) * r, (a[2] * a[7] - a[1] * a[8]) * r,
            (a[0] * a[8] - a[2] * a[6]) * r, (a[1] * a[6] - a[0] * a[7]) * r,
            (a[1] * a[5] - a[2] * a[4]) * r, (a[2] * a[3] - a[0] * a[5]) * r,
            (a[0] * a[4] - a[1] * a[3]) * r)


@njit(inline="always")
def tet_forces(x, tet, B, W, mu, lam):
    """Rows of H = -W B P^T: the forces on the tet's vertices 1, 2, 3 (row-major 9-tuple)."""
    i, j, k, q3 = tet[0], tet[1], tet[2], tet[3]
    Ds = (x[j, 0] - x[i, 0], x[k, 0] - x[i, 0], x[q3, 0] - x[i, 0],
          x[j, 1] - x[i, 1], x[k, 1] - x[i, 1], x[q3, 1] - x[i, 1],
          x[j, 2] - x[i, 2], x[k, 2] - x[i, 2], x[q3, 2] - x[i, 2])
    Bt = (B[0, 0], B[0, 1], B[0, 2], B[1, 0], B[1, 1], B[1, 2], B[2, 0], B[2, 1], B[2, 2])
    F = matmul(Ds, Bt)
    J = det(F)
    G = inverse_transpose(F, J)
    c = lam * np.log(J)
    Pt = (mu * (F[0] - G[0]) + c * G[0], mu * (F[3] - G[3]) + c * G[3],
          mu * (F[6] - G[6]) + c * G[6], mu * (F[1] - G[1]) + c * G[1],
          mu * (F[4] - G[4]) + c * G[4], mu * (F[7] - G[7]) + c * G[7],
          mu * (F[2] - G[2]) + c * G[2], mu * (F[5] - G[5]) + c * G[5],
          mu * (F[8] - G[8]) + c * G[8])  # P^T
    H = matmul(Bt, Pt)
    return (-W * H[0], -W * H[1], -W * H[2], -W * H[3], -W * H[4], -W * H[5], -W * H[6],
            -W * H[7], -W * H[8])


@njit(**_JIT)
def serial_step(x, v, f, tets, B, W, m, free, mu, lam, dt, g):
    for t in range(tets.shape[0]):
        H = tet_forces(x, tets[t], B[t], W[t], mu, lam)
        i, j, k, q3 = tets[t, 0], tets[t, 1], tets[t, 2], tets[t, 3]
        for c in range(3):
            f[j, c] += H[c]
            f[k, c] += H[3 + c]
            f[q3, c] += H[6 + c]
            f[i, c] -= H[c] + H[3 + c] + H[6 + c]
    for q in range(free.shape[0]):
        i = free[q]
        for c in range(3):
            v[i, c] += dt * (f[i, c] / m[i] + g[c])
            x[i, c] += dt * v[i, c]
            f[i, c] = 0.0


@njit(parallel=True, **_JIT)
def tet_pass(x, tets, B, W, mu, lam, out):
    for t in prange(tets.shape[0]):
        H = tet_forces(x, tets[t], B[t], W[t], mu, lam)
        for c in range(3):
            out[t, 1, c] = H[c]
            out[t, 2, c] = H[3 + c]
            out[t, 3, c] = H[6 + c]
            out[t, 0, c] = -(H[c] + H[3 + c] + H[6 + c])


@njit(parallel=True, **_JIT)
def vertex_pass(off, slot, out, x, v, m, free, dt, g):
    for q in prange(free.shape[0]):
        i = free[q]
        for c in range(3):
            acc = 0.0
            for s in range(off[q], off[q + 1]):
                acc += out[slot[s] >> 2, slot[s] & 3, c]
            v[i, c] += dt * (acc / m[i] + g[c])
            x[i, c] += dt * v[i, c]


def incidence(tets, free):
    """CSR, per free vertex, of its tet-corner slots 4t + corner, ascending."""
    corners = tets.reshape(-1)
    slots = np.arange(corners.size)
    where = np.full(tets.max() + 1, -1)
    where[free] = np.arange(len(free))
    q = where[corners]
    keep = q >= 0
    order = np.lexsort((slots[keep], q[keep]))
    off = np.zeros(len(free) + 1, dtype=np.int64)
    np.cumsum(np.bincount(q[keep], minlength=len(free)), out=off[1:])
    return off, np.ascontiguousarray(slots[keep][order])


class NumbaSerial:
    def __init__(self, tets, free, Dm_inv, W, m, mu, lam, dt, g):
        self.a = (np.asarray(tets, dtype=np.int64), np.asarray(Dm_inv), np.asarray(W),
                  np.asarray(m), np.asarray(free, dtype=np.int64), float(mu), float(lam),
                  float(dt), np.asarray(g, dtype=np.float64))
        self.x = self.v = None
        self.f = np.zeros((len(m), 3))

    def load(self, x, v):
        self.x, self.v = x.copy(), v.copy()
        self.f[:] = 0.0

    def step(self):
        serial_step(self.x, self.v, self.f, *self.a)

    def state(self):
        return self.x.copy(), self.v.copy()


class NumbaPrange(NumbaSerial):
    def __init__(self, tets, free, Dm_inv, W, m, mu, lam, dt, g):
        super().__init__(tets, free, Dm_inv, W, m, mu, lam, dt, g)
        self.off, self.slot = incidence(self.a[0], self.a[4])
        self.out = np.empty((len(tets), 4, 3))

    def step(self):
        tets, B, W, m, free, mu, lam, dt, g = self.a
        tet_pass(self.x, tets, B, W, mu, lam, self.out)
        vertex_pass(self.off, self.slot, self.out, self.x, self.v, m, free, dt, g)


# -- relsim ---------------------------------------------------------------------------------
class Relsim:
    """fem.py's mesh, rest state and step kernels."""

    def __init__(self, n):
        from relsim_simulations import fem
        self.mesh = fem.beam(n)
        self.dt = fem.time_step(n)
        setup, self.step_, _, self.kernels = fem.build(self.mesh, self.dt)
        setup()
        self.V = self.mesh.vertices

    def arrays(self):
        """What the peers get (copies: reading with copy=True leaves the fields unexposed)."""
        from relsim_simulations import fem
        T, V = self.mesh.tets, self.V
        mu, lam = fem.lame()
        return dict(tets=T.v.numpy(copy=True), free=np.asarray(V.free.rows),
                    Dm_inv=T.Dm_inv.numpy(copy=True), W=T.W.numpy(copy=True),
                    m=V.m.numpy(copy=True), mu=mu, lam=lam, dt=self.dt,
                    g=(0.0, 0.0, -fem.GRAVITY)), \
            (V.pos.numpy(copy=True), np.zeros((V.size, 3)))

    def load(self, x, v):
        self.V.x.load(x)
        self.V.vel.load(v)
        self.V.f.fill(0.0)

    def step(self):
        self.step_()

    def state(self):
        return self.V.x.numpy(copy=True), self.V.vel.numpy(copy=True)


def case(n):
    rel = Relsim(n)
    arrays, start = rel.arrays()
    header = (f"beam n={n}: {rel.V.size:,} vertices, {len(rel.mesh.tets):,} tets, "
              f"{len(arrays['free']):,} free; dt {arrays['dt']:.4g}")
    return G.Case(rel, arrays, start, {"numba serial": NumbaSerial, "numba prange": NumbaPrange},
                  header)


def gallery() -> G.Gallery:
    from relsim_simulations import fem
    common = ["matmul", "det", "inverse_transpose", "tet_forces"]
    return G.Gallery(
        name="fem", title="Neo-Hookean beam (relsim run fem)", suffix="fem", cls_name="Beam",
        sizes=[4, 2], case=case,
        relsim_lines=lambda: G.kernel_lines(fem.__file__, ["deformation", "forces", "advance"]),
        numba_lines={"numba serial": G.kernel_lines(__file__, common + ["serial_step"]),
                     "numba prange": G.kernel_lines(__file__, common + [
                         "tet_pass", "vertex_pass", "incidence"])},
        peer_kernels=("forces", "advance"),
        capturable=True,
        what="fem.py's tet forces and free-vertex update",
        notes=["warp: Warp's CPU backend runs each launch on one thread; the step is a "
               "captured graph, replayed."])


def main(argv=None) -> int:
    return G.main(gallery(), argv)


if __name__ == "__main__":
    sys.exit(main())
