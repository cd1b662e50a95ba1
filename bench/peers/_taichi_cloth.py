"""Taichi peer of the cloth step (bench/peers/cloth_sheet.py), in the style of Taichi's
mass-spring examples (``examples/simulation/mass_spring_game.py``, the quickstart's cloth):
vector fields, one parallel loop over the springs with atomic ``+=`` into the forces, one over
the vertices with the ball as a velocity constraint. CPU backend, f64. `Sheet(threads, ...)`
calls ``ti.init``. No `from __future__ import annotations`: Taichi reads the annotations."""

import numpy as np
import taichi as ti

VERSION = ti.__version__ if isinstance(ti.__version__, str) else ".".join(map(str, ti.__version__))


class Sheet:
    def __init__(self, threads, pairs, rest, w, k, dashpot, dt, drag, g, centre, radius):
        ti.init(arch=ti.cpu, cpu_max_num_threads=threads, default_fp=ti.f64,
                log_level=ti.WARN)
        ns, nv = len(pairs), len(w)
        x = ti.Vector.field(3, ti.f64, nv)
        v = ti.Vector.field(3, ti.f64, nv)
        f = ti.Vector.field(3, ti.f64, nv)
        inv_mass = ti.field(ti.f64, nv)
        spring = ti.Vector.field(2, ti.i32, ns)
        rest_length = ti.field(ti.f64, ns)
        spring.from_numpy(np.asarray(pairs, dtype=np.int32))
        rest_length.from_numpy(np.ascontiguousarray(rest, dtype=np.float64))
        inv_mass.from_numpy(np.ascontiguousarray(w, dtype=np.float64))
        k_, dashpot_, drag_, radius_ = float(k), float(dashpot), float(drag), float(radius)
        gravity = ti.Vector([float(c) for c in g])
        ball = ti.Vector([float(c) for c in centre])

        @ti.kernel
        def springs():
            for s in spring:
                i, j = spring[s]
                d = x[j] - x[i]
                length = d.norm()
                u = d / length
                pull = k_ * (length / rest_length[s] - 1.0) + dashpot_ * (v[j] - v[i]).dot(u)
                f[i] += pull * u  # atomic in a parallel loop
                f[j] -= pull * u

        @ti.kernel
        def advance(dt: ti.f64):
            for i in x:
                vel = (v[i] + dt * (inv_mass[i] * f[i] + gravity)) * drag_
                if inv_mass[i] == 0.0:
                    vel = ti.Vector([0.0, 0.0, 0.0])
                off = x[i] - ball
                dist = off.norm()
                if dist <= radius_:
                    normal = off / dist
                    vel -= ti.min(vel.dot(normal), 0.0) * normal
                v[i] = vel
                x[i] += dt * vel
                f[i] = ti.Vector([0.0, 0.0, 0.0])

        self._springs, self._advance = springs, advance
        self.dt = float(dt)
        self.x, self.v, self.f = x, v, f

    def load(self, x, v) -> None:
        self.x.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
        self.v.from_numpy(np.ascontiguousarray(v, dtype=np.float64))
        self.f.fill(0.0)

    def step(self) -> None:
        self._springs()
        self._advance(self.dt)
        ti.sync()

    def state(self):
        return self.x.to_numpy(), self.v.to_numpy()
