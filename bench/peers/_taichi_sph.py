"""Taichi peer of the SPH dam break step (bench/peers/sph_dam.py), with the cell lists of
Taichi's ``pbf2d.py`` example (a fixed capacity per cell, filled with ``ti.atomic_add``) and its
``ti.static`` neighbour-cell offsets; parallel loops over the particles for the density, the
accelerations and the update. CPU backend, f64. No `from __future__ import annotations`: Taichi
reads the kernels' annotations."""

import numpy as np
import taichi as ti

VERSION = ti.__version__ if isinstance(ti.__version__, str) else ".".join(map(str, ti.__version__))
CAPACITY = 64  # particles a cell can list (~20 at rest density)
RHO0, GRAVITY = 1000.0, 9.81


class DamBreak:
    def __init__(self, threads, fluid, origin, width, cells, h, sigma, mass, b, visc, dt, **_):
        ti.init(arch=ti.cpu, cpu_max_num_threads=threads, default_fp=ti.f64,
                log_level=ti.WARN)
        n = len(fluid)
        x = ti.Vector.field(3, ti.f64, n)
        v = ti.Vector.field(3, ti.f64, n)
        acc = ti.Vector.field(3, ti.f64, n)
        rho = ti.field(ti.f64, n)
        p = ti.field(ti.f64, n)
        is_fluid = ti.field(ti.i32, n)
        is_fluid.from_numpy(np.asarray(fluid, dtype=np.int32))
        count = ti.field(ti.i32, tuple(cells))
        members = ti.field(ti.i32, (*cells, CAPACITY))
        o, wd = ti.Vector(list(origin)), ti.Vector(list(width))
        nc = ti.Vector(list(cells))
        ly, h_, w_, mass_ = float(width[1] * cells[1]), float(h), float(sigma), float(mass)
        b_, visc_, dt_ = float(b), float(visc), float(dt)

        @ti.func
        def cell_of(y):
            return ti.cast(ti.floor((y - o) / wd), ti.i32) % nc

        @ti.func
        def offset(i, j):
            d = x[i] - x[j]
            d[1] -= ly * ti.round(d[1] / ly)
            return d

        @ti.kernel
        def bin_particles():
            for c in ti.grouped(count):
                count[c] = 0
            for i in x:
                c = cell_of(x[i])
                slot = ti.atomic_add(count[c], 1)
                if slot < CAPACITY:
                    members[c, slot] = i

        @ti.kernel
        def density():
            for i in x:
                c = cell_of(x[i])
                s = 0.0
                for off in ti.static(ti.grouped(ti.ndrange((-1, 2), (-1, 2), (-1, 2)))):
                    k = (c + off) % nc
                    for m in range(ti.min(count[k], CAPACITY)):
                        d = offset(i, members[k, m])
                        r2 = d.dot(d)
                        if r2 < 4.0 * h_ * h_:
                            r = ti.sqrt(r2) / h_
                            s += (1.0 - 0.5 * r) ** 4 * (2.0 * r + 1.0)
                rho[i] = mass_ * w_ * s
                p[i] = ti.max(b_ * ((rho[i] / RHO0) ** 7 - 1.0), 0.0)

        @ti.kernel
        def forces():
            for i in x:
                if is_fluid[i]:
                    c = cell_of(x[i])
                    a = ti.Vector([0.0, 0.0, -GRAVITY])
                    for off in ti.static(ti.grouped(ti.ndrange((-1, 2), (-1, 2), (-1, 2)))):
                        k = (c + off) % nc
                        for m in range(ti.min(count[k], CAPACITY)):
                            j = members[k, m]
                            d = offset(i, j)
                            r2 = d.dot(d)
                            if r2 < 4.0 * h_ * h_ and r2 > 0.0:
                                r = ti.sqrt(r2) / h_
                                dv = (v[i] - v[j]).dot(d)
                                pi = 0.0
                                if dv < 0.0:
                                    pi = -2.0 * visc_ * dv / ((r2 + 0.01 * h_ * h_)
                                                              * (rho[i] + rho[j]))
                                grad = -5.0 * w_ / (h_ * h_) * (1.0 - 0.5 * r) ** 3
                                a -= mass_ * (p[i] / rho[i] ** 2 + p[j] / rho[j] ** 2 + pi) \
                                    * grad * d
                    acc[i] = a

        @ti.kernel
        def move():
            for i in x:
                if is_fluid[i]:
                    v[i] += dt_ * acc[i]
                    x[i] += dt_ * v[i]

        self.kernels = (bin_particles, density, forces, move)
        self.x, self.v = x, v

    def load(self, x, v) -> None:
        self.x.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
        self.v.from_numpy(np.ascontiguousarray(v, dtype=np.float64))

    def step(self) -> None:
        for kernel in self.kernels:
            kernel()
        ti.sync()

    def state(self):
        return self.x.to_numpy(), self.v.to_numpy()
