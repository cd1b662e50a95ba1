"""Semi-Lagrangian advection on a periodic 2-D grid (stable fluids' advection step): each cell
traces back along the velocity and samples the old field bilinearly, reading its neighbours at
offsets computed from the velocity when the kernel runs (`c(i0, j0)`). Shared by the
computed-offset tests and the MPI programs; `numpy_step` is the same arithmetic in NumPy, in the
same order, for a bit-for-bit reference."""
import math

import numpy as np

import relsim as rs

DT = 0.37


def build(nx: int = 12, ny: int = 9, seed: int = 0):
    """(C, advect, copy): the grid relation, the advection kernel (q -> qn) and the kernel
    copying qn back to q. Velocities up to ~2.5 cells a step, so offsets reach past neighbours."""
    rng = np.random.default_rng(seed)
    C = rs.Relation("advected", nx * ny)
    C.set_grid((nx, ny), True)
    C.new_field("q", rs.f64).load(rng.standard_normal(nx * ny))
    C.new_field("u", rs.f64).load(rng.uniform(-7.0, 7.0, nx * ny))
    C.new_field("v", rs.f64).load(rng.uniform(-7.0, 7.0, nx * ny))
    C.new_field("qn", rs.f64)

    @rs.kernel
    def advect(c):
        x = -DT * c.u  # the departure point, relative to the cell, in cells
        y = -DT * c.v
        i0 = int(math.floor(x))
        j0 = int(math.floor(y))
        fx = x - i0
        fy = y - j0
        c.qn = (1.0 - fx) * (1.0 - fy) * c(i0, j0).q + fx * (1.0 - fy) * c(i0 + 1, j0).q \
            + (1.0 - fx) * fy * c(i0, j0 + 1).q + fx * fy * c(i0 + 1, j0 + 1).q

    @rs.kernel
    def copy(c):
        c.q = c.qn

    return C, advect, copy


def numpy_step(q, u, v, nx: int, ny: int):
    """One advection step in NumPy (axis 0 of the grid is the fastest: row = i + nx * j)."""
    i = np.arange(nx * ny) % nx
    j = np.arange(nx * ny) // nx
    x = -DT * u
    y = -DT * v
    i0 = np.floor(x).astype(np.int64)
    j0 = np.floor(y).astype(np.int64)
    fx = x - i0
    fy = y - j0

    def at(di, dj):
        return q[(i + di) % nx + nx * ((j + dj) % ny)]
    return (1.0 - fx) * (1.0 - fy) * at(i0, j0) + fx * (1.0 - fy) * at(i0 + 1, j0) \
        + (1.0 - fx) * fy * at(i0, j0 + 1) + fx * fy * at(i0 + 1, j0 + 1)


def run(C, advect, copy, steps: int, config=None):
    for _ in range(steps):
        C.foreach(advect, config)
        C.foreach(copy, config)
    return C.q.numpy()
