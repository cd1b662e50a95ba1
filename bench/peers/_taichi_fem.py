"""Taichi peer of the Neo-Hookean beam step (bench/peers/fem_beam.py), in the style of
Taichi's explicit FEM examples (``examples/simulation/fem128.py``): vector and matrix fields,
one parallel loop over the tets with atomic ``+=`` into the nodal forces, one over the free
vertices. CPU backend, f64. Importing this module imports taichi; `Beam(threads, ...)` calls
``ti.init`` (which resets any earlier Taichi program). No `from __future__ import
annotations` here: Taichi reads the kernels' annotations as objects."""

import numpy as np
import taichi as ti

VERSION = ti.__version__ if isinstance(ti.__version__, str) else ".".join(map(str, ti.__version__))


class Beam:
    """One Taichi program at `threads` CPU threads holding the mesh and the state."""

    def __init__(self, threads, tets, free, Dm_inv, W, m, mu, lam, dt, g):
        ti.init(arch=ti.cpu, cpu_max_num_threads=threads, default_fp=ti.f64,
                log_level=ti.WARN)
        nt, nv, nf = len(tets), len(m), len(free)
        x = ti.Vector.field(3, ti.f64, nv)
        v = ti.Vector.field(3, ti.f64, nv)
        f = ti.Vector.field(3, ti.f64, nv)
        mass = ti.field(ti.f64, nv)
        tet = ti.Vector.field(4, ti.i32, nt)
        B = ti.Matrix.field(3, 3, ti.f64, nt)  # Dm^-1
        vol = ti.field(ti.f64, nt)
        fixed_free = ti.field(ti.i32, nf)
        tet.from_numpy(np.asarray(tets, dtype=np.int32))
        fixed_free.from_numpy(np.asarray(free, dtype=np.int32))
        B.from_numpy(np.ascontiguousarray(Dm_inv, dtype=np.float64))
        vol.from_numpy(np.ascontiguousarray(W, dtype=np.float64))
        mass.from_numpy(np.ascontiguousarray(m, dtype=np.float64))
        gravity = ti.Vector([float(c) for c in g])
        mu_, lam_ = float(mu), float(lam)

        @ti.kernel
        def forces():
            for t in tet:
                a, b, c, d = tet[t]
                x0 = x[a]
                Ds = ti.Matrix.cols([x[b] - x0, x[c] - x0, x[d] - x0])
                F = Ds @ B[t]
                F_inv_T = F.inverse().transpose()
                P = mu_ * (F - F_inv_T) + lam_ * ti.log(F.determinant()) * F_inv_T
                H = -vol[t] * (B[t] @ P.transpose())  # row r: the force on vertex r + 1
                f1 = ti.Vector([H[0, 0], H[0, 1], H[0, 2]])
                f2 = ti.Vector([H[1, 0], H[1, 1], H[1, 2]])
                f3 = ti.Vector([H[2, 0], H[2, 1], H[2, 2]])
                f[b] += f1  # atomic in a parallel loop
                f[c] += f2
                f[d] += f3
                f[a] -= f1 + f2 + f3

        @ti.kernel
        def advance(dt: ti.f64):
            for q in fixed_free:
                i = fixed_free[q]
                vel = v[i] + dt * (f[i] / mass[i] + gravity)
                v[i] = vel
                x[i] += dt * vel
                f[i] = ti.Vector([0.0, 0.0, 0.0])

        self._forces, self._advance = forces, advance
        self.dt = float(dt)
        self.x, self.v, self.f = x, v, f

    def load(self, x, v) -> None:
        self.x.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
        self.v.from_numpy(np.ascontiguousarray(v, dtype=np.float64))
        self.f.fill(0.0)

    def step(self) -> None:
        self._forces()
        self._advance(self.dt)
        ti.sync()

    def state(self):
        return self.x.to_numpy(), self.v.to_numpy()
