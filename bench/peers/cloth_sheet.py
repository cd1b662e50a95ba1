#!/usr/bin/env python
"""Peers benchmark: the gallery's cloth (`relsim run cloth`), relsim against hand-written
Numba, Taichi and NVIDIA Warp, us per step on the CPU (`relsim bench cloth`).

The sheet, its springs (mesh edges and bending pairs) and parameters come from
`simulations/cloth.py` (``cloth.sheet(n)``, ``cloth.build``). Every implementation gets the
same NumPy arrays, f64, and runs the same step::

    per spring:  d = x[j] - x[i];  u = d / |d|;  p = k (|d| / L0 - 1) + c (v[j] - v[i]).u;
                 f[i] += p u;  f[j] -= p u
    per vertex:  v = (v + dt (w f + g)) drag  (0 if pinned);  the ball: v -= min(v.n, 0) n;
                 x += dt v;  f = 0

Variants, timed interleaved in one process at each ``--threads`` count: ``relsim`` (cloth.py's
``springs`` and ``advance`` kernels, target cpu); ``numba serial`` (one ``@njit`` loop over the
springs, one over the vertices); ``numba prange`` (deterministic: a ``prange`` over springs
writing each spring's pull, then a ``prange`` over vertices adding theirs in ascending spring
order through a CSR built once, and integrating); ``taichi`` (atomic ``+=``); ``warp`` (atomics,
the step captured as a graph and replayed, one thread). Answers and timing as in
`_gallery.py` (the peers within ``--tolerance`` of relsim's positions, relative to the largest
displacement).
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


# -- hand-written Numba ---------------------------------------------------------------------
@njit(inline="always")
def pull(x, v, i, j, rest, k, dashpot):
    """(pull, unit vector i -> j) of one spring."""
    d0, d1, d2 = x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2]
    length = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    u0, u1, u2 = d0 / length, d1 / length, d2 / length
    rv = (v[j, 0] - v[i, 0]) * u0 + (v[j, 1] - v[i, 1]) * u1 + (v[j, 2] - v[i, 2]) * u2
    return k * (length / rest - 1.0) + dashpot * rv, u0, u1, u2


@njit(inline="always")
def move(i, f0, f1, f2, x, v, w, dt, drag, g, centre, radius):
    """Vertex i's update with force (f0, f1, f2)."""
    wi = w[i]
    a0 = (v[i, 0] + dt * (wi * f0 + g[0])) * drag
    a1 = (v[i, 1] + dt * (wi * f1 + g[1])) * drag
    a2 = (v[i, 2] + dt * (wi * f2 + g[2])) * drag
    if wi == 0.0:  # pinned
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
    o0, o1, o2 = x[i, 0] - centre[0], x[i, 1] - centre[1], x[i, 2] - centre[2]
    dist = np.sqrt(o0 * o0 + o1 * o1 + o2 * o2)
    if dist <= radius:
        n0, n1, n2 = o0 / dist, o1 / dist, o2 / dist
        vn = a0 * n0 + a1 * n1 + a2 * n2
        if vn > 0.0:  # only the inward normal velocity is removed
            vn = 0.0
        a0, a1, a2 = a0 - vn * n0, a1 - vn * n1, a2 - vn * n2
    v[i, 0] = a0
    v[i, 1] = a1
    v[i, 2] = a2
    x[i, 0] += dt * a0
    x[i, 1] += dt * a1
    x[i, 2] += dt * a2


@njit(**_JIT)
def serial_step(x, v, f, pairs, rest, w, k, dashpot, dt, drag, g, centre, radius):
    for s in range(pairs.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        p, u0, u1, u2 = pull(x, v, i, j, rest[s], k, dashpot)
        f[i, 0] += p * u0
        f[i, 1] += p * u1
        f[i, 2] += p * u2
        f[j, 0] -= p * u0
        f[j, 1] -= p * u1
        f[j, 2] -= p * u2
    for i in range(x.shape[0]):
        move(i, f[i, 0], f[i, 1], f[i, 2], x, v, w, dt, drag, g, centre, radius)
        f[i, 0] = 0.0
        f[i, 1] = 0.0
        f[i, 2] = 0.0


@njit(parallel=True, **_JIT)
def spring_pass(x, v, pairs, rest, k, dashpot, out):
    for s in prange(pairs.shape[0]):
        p, u0, u1, u2 = pull(x, v, pairs[s, 0], pairs[s, 1], rest[s], k, dashpot)
        out[s, 0], out[s, 1], out[s, 2] = p * u0, p * u1, p * u2


@njit(parallel=True, **_JIT)
def vertex_pass(off, slot, out, x, v, w, dt, drag, g, centre, radius):
    for i in prange(x.shape[0]):
        f0 = f1 = f2 = 0.0
        for t in range(off[i], off[i + 1]):
            s = slot[t] >> 1
            if slot[t] & 1:  # the spring's second end
                f0, f1, f2 = f0 - out[s, 0], f1 - out[s, 1], f2 - out[s, 2]
            else:
                f0, f1, f2 = f0 + out[s, 0], f1 + out[s, 1], f2 + out[s, 2]
        move(i, f0, f1, f2, x, v, w, dt, drag, g, centre, radius)


def incidence(pairs, nv):
    """CSR of each vertex's spring-end slots (2s: first end, 2s + 1: second), ascending."""
    ends = pairs.reshape(-1)
    slots = np.arange(ends.size)
    order = np.lexsort((slots, ends))
    off = np.zeros(nv + 1, dtype=np.int64)
    np.cumsum(np.bincount(ends, minlength=nv), out=off[1:])
    return off, np.ascontiguousarray(slots[order])


class NumbaSerial:
    def __init__(self, pairs, rest, w, k, dashpot, dt, drag, g, centre, radius):
        self.pairs = np.ascontiguousarray(pairs, dtype=np.int64)
        self.a = (np.asarray(rest), np.asarray(w), float(k), float(dashpot), float(dt),
                  float(drag), np.asarray(g, dtype=np.float64),
                  np.asarray(centre, dtype=np.float64), float(radius))
        self.x = self.v = None
        self.f = np.zeros((len(w), 3))

    def load(self, x, v):
        self.x, self.v = x.copy(), v.copy()
        self.f[:] = 0.0

    def step(self):
        serial_step(self.x, self.v, self.f, self.pairs, *self.a)

    def state(self):
        return self.x.copy(), self.v.copy()


class NumbaPrange(NumbaSerial):
    def __init__(self, pairs, rest, w, k, dashpot, dt, drag, g, centre, radius):
        super().__init__(pairs, rest, w, k, dashpot, dt, drag, g, centre, radius)
        self.off, self.slot = incidence(self.pairs, len(w))
        self.out = np.empty((len(pairs), 3))

    def step(self):
        rest, w, k, dashpot, dt, drag, g, centre, radius = self.a
        spring_pass(self.x, self.v, self.pairs, rest, k, dashpot, self.out)
        vertex_pass(self.off, self.slot, self.out, self.x, self.v, w, dt, drag, g, centre,
                    radius)


# -- relsim ---------------------------------------------------------------------------------
class Relsim:
    """cloth.py's sheet, springs and step kernels."""

    def __init__(self, n):
        from relsim_simulations import cloth
        self.cloth = cloth
        self.mesh, pairs = cloth.sheet(n)
        self.dt = cloth.time_step(cloth.stable_substeps(n))
        self.S, self.step_, _, self.kernels = cloth.build(self.mesh, pairs, self.dt)
        self.V = self.mesh.vertices
        self.start = (self.V.x.numpy(copy=True), np.zeros((self.V.size, 3)))

    def arrays(self):
        c, S, V = self.cloth, self.S, self.V
        mass = c.MASS / V.size
        return dict(pairs=S.v.numpy(copy=True), rest=S.L0.numpy(copy=True),
                    w=V.w.numpy(copy=True), k=c.TENSION, dashpot=c.DAMPING * mass, dt=self.dt,
                    drag=np.exp(-c.DRAG * self.dt), g=(0.0, 0.0, -c.GRAVITY), centre=c.CENTRE,
                    radius=c.RADIUS)

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
    arrays = rel.arrays()
    header = (f"sheet n={n}: {rel.V.size:,} vertices, {rel.S.size:,} springs; "
              f"dt {arrays['dt']:.4g}")
    return G.Case(rel, arrays, rel.start, {"numba serial": NumbaSerial,
                                           "numba prange": NumbaPrange}, header)


def gallery() -> G.Gallery:
    from relsim_simulations import cloth
    common = ["pull", "move"]
    return G.Gallery(
        name="cloth", title="Cloth on a sphere (relsim run cloth)", suffix="cloth",
        cls_name="Sheet", sizes=[32, 10], case=case,
        relsim_lines=lambda: G.kernel_lines(cloth.__file__, ["springs", "advance"]),
        numba_lines={"numba serial": G.kernel_lines(__file__, common + ["serial_step"]),
                     "numba prange": G.kernel_lines(__file__, common + [
                         "spring_pass", "vertex_pass", "incidence"])},
        peer_kernels=("springs", "advance"),
        capturable=True,
        what="cloth.py's spring forces and vertex update",
        notes=["warp: Warp's CPU backend runs each launch on one thread; the step is a "
               "captured graph, replayed."])


def main(argv=None) -> int:
    return G.main(gallery(), argv)


if __name__ == "__main__":
    sys.exit(main())
