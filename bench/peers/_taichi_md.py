"""Taichi peer of the Lennard-Jones step (bench/peers/md_fluid.py), with the cell lists of
Taichi's ``pbf2d.py`` example: a fixed capacity per cell, filled with ``ti.atomic_add``, then a
parallel loop over the atoms reading their 27 neighbour cells. CPU backend, f64. No `from
__future__ import annotations`: Taichi reads the kernels' annotations."""

import numpy as np
import taichi as ti

VERSION = ti.__version__ if isinstance(ti.__version__, str) else ".".join(map(str, ti.__version__))
CAPACITY = 64  # atoms a cell can list (a liquid's cell holds ~20-40)


class Fluid:
    def __init__(self, threads, n, box, nc, dt, rc2):
        ti.init(arch=ti.cpu, cpu_max_num_threads=threads, default_fp=ti.f64,
                log_level=ti.WARN)
        x = ti.Vector.field(3, ti.f64, n)
        v = ti.Vector.field(3, ti.f64, n)
        f = ti.Vector.field(3, ti.f64, n)
        count = ti.field(ti.i32, (nc, nc, nc))
        members = ti.field(ti.i32, (nc, nc, nc, CAPACITY))
        box_, width, rc2_ = float(box), float(box) / nc, float(rc2)

        @ti.kernel
        def kick_drift(dt: ti.f64):
            for i in x:
                v[i] += 0.5 * dt * f[i]
                y = x[i] + dt * v[i]
                x[i] = y - box_ * ti.floor(y / box_)

        @ti.kernel
        def bin_atoms():
            for c in ti.grouped(count):
                count[c] = 0
            for i in x:
                c = ti.min(ti.cast(x[i] / width, ti.i32), nc - 1)
                slot = ti.atomic_add(count[c], 1)
                members[c, slot] = i

        @ti.kernel
        def forces():
            for i in x:
                c = ti.min(ti.cast(x[i] / width, ti.i32), nc - 1)
                acc = ti.Vector([0.0, 0.0, 0.0])
                for off in ti.static(ti.grouped(ti.ndrange((-1, 2), (-1, 2), (-1, 2)))):
                    k = (c + off) % nc
                    for s in range(count[k]):
                        j = members[k, s]
                        d = x[i] - x[j]
                        d -= box_ * ti.round(d / box_)
                        r2 = d.dot(d)
                        if r2 < rc2_ and r2 > 0.0:
                            i2 = 1.0 / r2
                            i6 = i2 * i2 * i2
                            acc += 24.0 * i2 * i6 * (2.0 * i6 - 1.0) * d
                f[i] = acc

        @ti.kernel
        def kick(dt: ti.f64):
            for i in v:
                v[i] += 0.5 * dt * f[i]

        self.kick_drift, self.bin_atoms, self.forces, self.kick = kick_drift, bin_atoms, \
            forces, kick
        self.dt = float(dt)
        self.x, self.v, self.f = x, v, f

    def load(self, x, v) -> None:
        self.x.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
        self.v.from_numpy(np.ascontiguousarray(v, dtype=np.float64))
        self.bin_atoms()
        self.forces()

    def step(self) -> None:
        self.kick_drift(self.dt)
        self.bin_atoms()
        self.forces()
        self.kick(self.dt)
        ti.sync()

    def state(self):
        return self.x.to_numpy(), self.v.to_numpy()
