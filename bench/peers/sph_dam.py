#!/usr/bin/env python
"""Peers benchmark: the gallery's SPH dam break (`relsim run sph`), relsim against hand-written
Numba, Taichi and NVIDIA Warp, us per step on the CPU (`relsim bench sph`).

The particles (fluid column, floor and end walls), the grid of cells and every constant come from
`simulations/sph.py` (``sph.build(n)``). Every implementation runs the same step, f64: the
particles binned into the cells (at least 2 h wide; periodic, the wrap matters across the
channel's depth), the summation density and Tait pressure of every particle from the particles
of its 27 neighbour cells (Wendland C2 kernel, the minimum image across the depth), the pressure
and viscous accelerations of the fluid particles, and the fluid's symplectic Euler update (the
wall particles stay). Each peer keeps its own cell lists, the way its own examples do:

* ``numba serial`` / ``numba prange``: a counting sort of the particles by cell (ascending
  particle order within a cell, as relsim's cell lists), then one loop (or a ``prange``) over
  the particles per pass;
* ``taichi``: fixed-capacity cell lists filled with ``ti.atomic_add`` (as Taichi's ``pbf2d.py``
  example), parallel loops over the particles;
* ``warp``: the same with ``wp.atomic_add`` on the ``cpu`` device (Warp's ``HashGrid`` has no
  periodic axis), the step captured as a graph and replayed (one thread).

Answers: every peer's positions after ``--check-steps`` steps within ``--tolerance`` of relsim's,
relative to the largest displacement (a cell's particles summed in another order change the last
bits); timing and table as `_gallery.py`.
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
RHO0, GRAVITY = 1000.0, 9.81


# -- hand-written Numba ---------------------------------------------------------------------
@njit(**_JIT)
def bin_particles(x, origin, width, nc, cell, off, order):
    """cell[i]: particle i's cell (periodic axes wrap); off/order: the particles of each cell,
    ascending (counting sort)."""
    off[:] = 0
    for i in range(x.shape[0]):
        k = 0
        for a in range(2, -1, -1):
            c = int(np.floor((x[i, a] - origin[a]) / width[a])) % nc[a]
            k = k * nc[a] + c
        cell[i] = k
        off[k + 1] += 1
    for k in range(off.shape[0] - 1):
        off[k + 1] += off[k]
    fill = off[:-1].copy()
    for i in range(x.shape[0]):
        order[fill[cell[i]]] = i
        fill[cell[i]] += 1


@njit(inline="always")
def neighbour_cell(ci, nc, dx, dy, dz):
    a, b, c = ci % nc[0], (ci // nc[0]) % nc[1], ci // (nc[0] * nc[1])
    return (a + dx) % nc[0] + nc[0] * ((b + dy) % nc[1] + nc[1] * ((c + dz) % nc[2]))


@njit(inline="always")
def particle_density(i, x, ly, h, reach2, nc, cell, off, order):
    s = 0.0
    for dz in range(-1, 2):
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                k = neighbour_cell(cell[i], nc, dx, dy, dz)
                for m in range(off[k], off[k + 1]):
                    j = order[m]
                    d0 = x[i, 0] - x[j, 0]
                    d1 = x[i, 1] - x[j, 1]
                    d1 = d1 - ly * np.round(d1 / ly)
                    d2 = x[i, 2] - x[j, 2]
                    r2 = d0 * d0 + d1 * d1 + d2 * d2
                    if r2 < reach2:
                        r = np.sqrt(r2) / h
                        s += (1.0 - 0.5 * r) ** 4 * (2.0 * r + 1.0)
    return s


@njit(inline="always")
def particle_acceleration(i, x, v, rho, p, ly, h, reach2, w, mass, visc, nc, cell, off, order):
    a0, a1, a2 = 0.0, 0.0, -GRAVITY
    for dz in range(-1, 2):
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                k = neighbour_cell(cell[i], nc, dx, dy, dz)
                for m in range(off[k], off[k + 1]):
                    j = order[m]
                    d0 = x[i, 0] - x[j, 0]
                    d1 = x[i, 1] - x[j, 1]
                    d1 = d1 - ly * np.round(d1 / ly)
                    d2 = x[i, 2] - x[j, 2]
                    r2 = d0 * d0 + d1 * d1 + d2 * d2
                    if r2 < reach2 and r2 > 0.0:
                        r = np.sqrt(r2) / h
                        dv = ((v[i, 0] - v[j, 0]) * d0 + (v[i, 1] - v[j, 1]) * d1
                              + (v[i, 2] - v[j, 2]) * d2)
                        pi = 0.0
                        if dv < 0.0:
                            pi = -2.0 * visc * dv / ((r2 + 0.01 * h * h) * (rho[i] + rho[j]))
                        grad = -5.0 * w / (h * h) * (1.0 - 0.5 * r) ** 3
                        c = mass * (p[i] / (rho[i] * rho[i]) + p[j] / (rho[j] * rho[j]) + pi) \
                            * grad
                        a0 -= c * d0
                        a1 -= c * d1
                        a2 -= c * d2
    return a0, a1, a2


@njit(**_JIT)
def density_serial(x, ly, h, reach2, w, mass, b, nc, cell, off, order, rho, p):
    for i in range(x.shape[0]):
        rho[i] = mass * w * particle_density(i, x, ly, h, reach2, nc, cell, off, order)
        p[i] = max(b * ((rho[i] / RHO0) ** 7 - 1.0), 0.0)


@njit(parallel=True, **_JIT)
def density_prange(x, ly, h, reach2, w, mass, b, nc, cell, off, order, rho, p):
    for i in prange(x.shape[0]):
        rho[i] = mass * w * particle_density(i, x, ly, h, reach2, nc, cell, off, order)
        p[i] = max(b * ((rho[i] / RHO0) ** 7 - 1.0), 0.0)


@njit(**_JIT)
def forces_serial(x, v, rho, p, fluid, ly, h, reach2, w, mass, visc, nc, cell, off, order,
                  acc):
    for i in range(x.shape[0]):
        if fluid[i]:
            acc[i, 0], acc[i, 1], acc[i, 2] = particle_acceleration(
                i, x, v, rho, p, ly, h, reach2, w, mass, visc, nc, cell, off, order)


@njit(parallel=True, **_JIT)
def forces_prange(x, v, rho, p, fluid, ly, h, reach2, w, mass, visc, nc, cell, off, order,
                  acc):
    for i in prange(x.shape[0]):
        if fluid[i]:
            acc[i, 0], acc[i, 1], acc[i, 2] = particle_acceleration(
                i, x, v, rho, p, ly, h, reach2, w, mass, visc, nc, cell, off, order)


@njit(**_JIT)
def move(x, v, acc, fluid, dt):
    for i in range(x.shape[0]):
        if fluid[i]:
            for c in range(3):
                v[i, c] += dt * acc[i, c]
                x[i, c] += dt * v[i, c]


class NumbaSerial:
    density = staticmethod(density_serial)
    forces = staticmethod(forces_serial)

    def __init__(self, fluid, origin, width, cells, h, sigma, mass, b, visc, dt, **_):
        n = len(fluid)
        self.fluid, self.origin, self.width = fluid, origin, width
        self.nc = np.asarray(cells, dtype=np.int64)
        self.ly, self.h, self.reach2 = float(width[1] * cells[1]), float(h), 4.0 * h * h
        self.w, self.mass, self.b, self.visc, self.dt = sigma, mass, b, visc, dt
        self.cell, self.order = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        self.off = np.zeros(int(np.prod(cells)) + 1, dtype=np.int64)
        self.rho, self.p, self.acc = np.zeros(n), np.zeros(n), np.zeros((n, 3))
        self.x = self.v = None

    def load(self, x, v):
        self.x, self.v = x.copy(), v.copy()

    def step(self):
        bin_particles(self.x, self.origin, self.width, self.nc, self.cell, self.off, self.order)
        self.density(self.x, self.ly, self.h, self.reach2, self.w, self.mass, self.b, self.nc,
                     self.cell, self.off, self.order, self.rho, self.p)
        self.forces(self.x, self.v, self.rho, self.p, self.fluid, self.ly, self.h, self.reach2,
                    self.w, self.mass, self.visc, self.nc, self.cell, self.off, self.order,
                    self.acc)
        move(self.x, self.v, self.acc, self.fluid, self.dt)

    def state(self):
        return self.x.copy(), self.v.copy()


class NumbaPrange(NumbaSerial):
    density = staticmethod(density_prange)
    forces = staticmethod(forces_prange)


# -- relsim ---------------------------------------------------------------------------------
class Relsim:
    """sph.py's particles and step kernels."""

    def __init__(self, n):
        from relsim_simulations import sph
        g, self.parts, self.step_, _, facts, self.kernels = sph.build(n)
        self.P = self.parts.rel
        self.start = (self.P.pos.numpy(copy=True), self.P.vel.numpy(copy=True))
        self.arrays = dict(
            fluid=self.P.fluid.numpy(copy=True), origin=np.array(g.origin),
            width=np.array(g.spacing), cells=tuple(g.shape), h=facts["h"],
            sigma=facts["sigma"], mass=facts["mass"], b=facts["b"], visc=facts["visc"],
            dt=facts["dt"], n=len(self.start[0]), fluid_count=facts["fluid"])

    def load(self, x, v):
        self.P.pos.load(x)
        self.P.vel.load(v)

    def step(self):
        self.step_()

    def state(self):
        return self.P.pos.numpy(copy=True), self.P.vel.numpy(copy=True)


def case(n):
    rel = Relsim(n)
    a = rel.arrays
    header = (f"dam break n={n}: {a['n']:,} particles ({a['fluid_count']:,} fluid), "
              f"{'x'.join(map(str, a['cells']))} cells, dt {a['dt']:.3g} s")
    return G.Case(rel, a, rel.start, {"numba serial": NumbaSerial, "numba prange": NumbaPrange},
                  header)


def gallery() -> G.Gallery:
    from relsim_simulations import sph
    common = ["bin_particles", "neighbour_cell", "particle_density", "particle_acceleration",
              "move"]
    return G.Gallery(
        name="sph", title="SPH dam break (relsim run sph)", suffix="sph", cls_name="DamBreak",
        sizes=[12, 4], case=case, capturable=True,
        relsim_lines=lambda: G.kernel_lines(sph.__file__, ["offset", "density", "forces",
                                                           "move"]),
        numba_lines={"numba serial": G.kernel_lines(__file__, common + ["density_serial",
                                                                        "forces_serial"]),
                     "numba prange": G.kernel_lines(__file__, common + ["density_prange",
                                                                        "forces_prange"])},
        peer_kernels=("clear", "cell_of", "offset", "bin_particles", "density", "forces",
                      "move"),
        what="sph.py's re-binning, density and pressure, accelerations, fluid update",
        number=5, check_steps=40,
        notes=["warp: Warp's CPU backend runs each launch on one thread; the step is a "
               "captured graph, replayed."])


def main(argv=None) -> int:
    return G.main(gallery(), argv)


if __name__ == "__main__":
    sys.exit(main())
