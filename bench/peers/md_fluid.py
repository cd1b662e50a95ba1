#!/usr/bin/env python
"""Peers benchmark: the gallery's Lennard-Jones fluid (`relsim run md`), relsim against
hand-written Numba, Taichi and NVIDIA Warp, us per step on the CPU (`relsim bench md`).

The atoms, box and parameters come from `simulations/md.py` (``md.lattice(m)``). Every
implementation runs the same velocity-Verlet step, f64: a half kick and a drift (positions
wrapped into the box), cell lists rebuilt (cells at least r_c wide, periodic), the force on each
atom from the atoms of its 27 neighbour cells (the minimum image, the LJ force within r_c), the
second half kick. Each peer keeps its own cell lists, the way its own examples do:

* ``numba serial`` / ``numba prange``: a counting sort of the atoms by cell (ascending atom
  order within a cell), then one loop (or a ``prange``) over the atoms;
* ``taichi``: fixed-capacity cell lists filled with ``ti.atomic_add`` (as Taichi's
  ``pbf2d.py`` example), a parallel loop over the atoms;
* ``warp``: the same with ``wp.atomic_add``, on the ``cpu`` device, the step captured as a
  graph and replayed (one thread).

Answers: every peer's positions after ``--check-steps`` steps within ``--tolerance`` of relsim's,
relative to the largest displacement (atoms near a cell's list capacity or the order in which a
cell's atoms are summed change the last bits); timing and table as `_gallery.py`.
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
@njit(**_JIT)
def kick_drift(x, v, f, dt, box):
    for i in range(x.shape[0]):
        for c in range(3):
            v[i, c] += 0.5 * dt * f[i, c]
            y = x[i, c] + dt * v[i, c]
            x[i, c] = y - box * np.floor(y / box)


@njit(**_JIT)
def kick(v, f, dt):
    for i in range(v.shape[0]):
        for c in range(3):
            v[i, c] += 0.5 * dt * f[i, c]


@njit(**_JIT)
def bin_atoms(x, box, nc, cell, off, order):
    """cell[i]: atom i's cell; off/order: the atoms of each cell, ascending (counting sort)."""
    width = box / nc
    off[:] = 0
    for i in range(x.shape[0]):
        a = min(int(x[i, 0] / width), nc - 1)
        b = min(int(x[i, 1] / width), nc - 1)
        c = min(int(x[i, 2] / width), nc - 1)
        cell[i] = a + nc * (b + nc * c)
        off[cell[i] + 1] += 1
    for k in range(nc * nc * nc):
        off[k + 1] += off[k]
    fill = off[:-1].copy()
    for i in range(x.shape[0]):
        order[fill[cell[i]]] = i
        fill[cell[i]] += 1


@njit(inline="always")
def atom_force(i, x, box, nc, cell, off, order, rc2):
    ci = cell[i]
    a0, b0, c0 = ci % nc, (ci // nc) % nc, ci // (nc * nc)
    f0 = f1 = f2 = 0.0
    for dz in range(-1, 2):
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                k = (a0 + dx) % nc + nc * ((b0 + dy) % nc + nc * ((c0 + dz) % nc))
                for s in range(off[k], off[k + 1]):
                    j = order[s]
                    d0 = x[i, 0] - x[j, 0]
                    d1 = x[i, 1] - x[j, 1]
                    d2 = x[i, 2] - x[j, 2]
                    d0 -= box * np.round(d0 / box)
                    d1 -= box * np.round(d1 / box)
                    d2 -= box * np.round(d2 / box)
                    r2 = d0 * d0 + d1 * d1 + d2 * d2
                    if r2 < rc2 and r2 > 0.0:
                        i2 = 1.0 / r2
                        i6 = i2 * i2 * i2
                        s6 = 24.0 * i2 * i6 * (2.0 * i6 - 1.0)
                        f0 += s6 * d0
                        f1 += s6 * d1
                        f2 += s6 * d2
    return f0, f1, f2


@njit(**_JIT)
def forces_serial(x, box, nc, cell, off, order, rc2, f):
    for i in range(x.shape[0]):
        f[i, 0], f[i, 1], f[i, 2] = atom_force(i, x, box, nc, cell, off, order, rc2)


@njit(parallel=True, **_JIT)
def forces_prange(x, box, nc, cell, off, order, rc2, f):
    for i in prange(x.shape[0]):
        f[i, 0], f[i, 1], f[i, 2] = atom_force(i, x, box, nc, cell, off, order, rc2)


class NumbaSerial:
    forces = staticmethod(forces_serial)

    def __init__(self, n, box, nc, dt, rc2):
        self.box, self.nc, self.dt, self.rc2 = float(box), int(nc), float(dt), float(rc2)
        self.cell = np.zeros(n, dtype=np.int64)
        self.off = np.zeros(nc ** 3 + 1, dtype=np.int64)
        self.order = np.zeros(n, dtype=np.int64)
        self.x = self.v = None
        self.f = np.zeros((n, 3))

    def load(self, x, v):
        self.x, self.v = x.copy(), v.copy()
        bin_atoms(self.x, self.box, self.nc, self.cell, self.off, self.order)
        self.forces(self.x, self.box, self.nc, self.cell, self.off, self.order, self.rc2, self.f)

    def step(self):
        kick_drift(self.x, self.v, self.f, self.dt, self.box)
        bin_atoms(self.x, self.box, self.nc, self.cell, self.off, self.order)
        self.forces(self.x, self.box, self.nc, self.cell, self.off, self.order, self.rc2, self.f)
        kick(self.v, self.f, self.dt)

    def state(self):
        return self.x.copy(), self.v.copy()


class NumbaPrange(NumbaSerial):
    forces = staticmethod(forces_prange)


# -- relsim ---------------------------------------------------------------------------------
class Relsim:
    """md.py's atoms and step kernels."""

    def __init__(self, m):
        from relsim_simulations import md
        pos, vel, side = md.lattice(m)
        self.grid, self.atoms, self.setup, self.step_, _, self.kernels = md.build(pos, vel,
                                                                                    side)
        self.A = self.atoms.rel
        self.start = (pos, vel)
        nc = self.grid.cells.grid.shape[0]
        self.arrays = dict(n=len(pos), box=side, nc=nc, dt=md.DT, rc2=md.CUTOFF ** 2)

    def load(self, x, v):
        self.A.pos.load(x)
        self.A.vel.load(v)
        self.setup()

    def step(self):
        self.step_()

    def state(self):
        return self.A.pos.numpy(copy=True), self.A.vel.numpy(copy=True)


def case(m):
    rel = Relsim(m)
    a = rel.arrays
    header = (f"fluid m={m}: {a['n']:,} atoms, {a['nc']}^3 cells, box {a['box']:.4g}, "
              f"dt {a['dt']}")
    return G.Case(rel, a, rel.start, {"numba serial": NumbaSerial, "numba prange": NumbaPrange},
                  header, period=a["box"])


def gallery() -> G.Gallery:
    from relsim_simulations import md
    common = ["kick_drift", "kick", "bin_atoms", "atom_force"]
    return G.Gallery(
        name="md", title="Lennard-Jones fluid (relsim run md)", suffix="md", cls_name="Fluid",
        sizes=[8, 5], case=case, capturable=True,
        relsim_lines=lambda: G.kernel_lines(md.__file__, ["kick_drift", "forces", "kick"]),
        numba_lines={"numba serial": G.kernel_lines(__file__, common + ["forces_serial"]),
                     "numba prange": G.kernel_lines(__file__, common + ["forces_prange"])},
        peer_kernels=("kick_drift", "bin_atoms", "forces", "kick"),
        what="md.py's half kick and drift, re-binning, forces over 27 neighbour cells, half "
             "kick", number=5, check_steps=20,
        notes=["warp: Warp's CPU backend runs each launch on one thread; the step is a "
               "captured graph, replayed."])


def main(argv=None) -> int:
    return G.main(gallery(), argv)


if __name__ == "__main__":
    sys.exit(main())
