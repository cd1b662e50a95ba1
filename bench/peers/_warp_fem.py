"""NVIDIA Warp peer of the Neo-Hookean beam step (bench/peers/fem_beam.py), written as Warp's
own FEM code writes an explicit step (warp.sim's ``eval_tetrahedra`` and semi-implicit
integrator): one kernel over tets scattering nodal forces with ``wp.atomic_add`` /
``wp.atomic_sub``, one over the free vertices integrating. f64 types (``wp.vec3d``,
``wp.mat33d``) on the ``cpu`` device; Warp runs a CPU launch on one thread. The step's two
launches are captured once as a graph (``wp.ScopedCapture``) and replayed
(``wp.capture_launch``): Warp's fastest way to repeat a step, on the CPU too (measured: about a
third less per small step than two plain launches). Importing this module imports warp."""

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING
wp.config.enable_backward = False  # no adjoint kernels: only the forward step is timed
VERSION = wp.__version__
DEVICE = "cpu"


@wp.kernel
def forces(x: wp.array(dtype=wp.vec3d), tets: wp.array2d(dtype=wp.int32),
           Dm_inv: wp.array(dtype=wp.mat33d), W: wp.array(dtype=wp.float64),
           mu: wp.float64, lam: wp.float64, f: wp.array(dtype=wp.vec3d)):
    t = wp.tid()
    i = tets[t, 0]
    j = tets[t, 1]
    k = tets[t, 2]
    q3 = tets[t, 3]
    x0 = x[i]
    Ds = wp.matrix_from_cols(x[j] - x0, x[k] - x0, x[q3] - x0)
    F = Ds @ Dm_inv[t]
    F_inv_T = wp.transpose(wp.inverse(F))
    P = mu * (F - F_inv_T) + lam * wp.log(wp.determinant(F)) * F_inv_T
    H = -W[t] * (Dm_inv[t] @ wp.transpose(P))  # row r: the force on vertex r + 1
    f1 = H[0]
    f2 = H[1]
    f3 = H[2]
    wp.atomic_add(f, j, f1)
    wp.atomic_add(f, k, f2)
    wp.atomic_add(f, q3, f3)
    wp.atomic_sub(f, i, f1 + f2 + f3)


@wp.kernel
def advance(free: wp.array(dtype=wp.int32), dt: wp.float64, g: wp.vec3d,
            m: wp.array(dtype=wp.float64), f: wp.array(dtype=wp.vec3d),
            v: wp.array(dtype=wp.vec3d), x: wp.array(dtype=wp.vec3d)):
    i = free[wp.tid()]
    vel = v[i] + dt * (f[i] / m[i] + g)
    v[i] = vel
    x[i] = x[i] + dt * vel
    f[i] = wp.vec3d()


class Beam:
    """The mesh and the state as Warp arrays on `device` (default the CPU)."""

    def __init__(self, tets, free, Dm_inv, W, m, mu, lam, dt, g, device=DEVICE):
        wp.init()
        self.device = device

        def arr(a, dtype):
            return wp.array(np.ascontiguousarray(a), dtype=dtype, device=device)

        self.tets = arr(np.asarray(tets, dtype=np.int32), wp.int32)
        self.free = arr(np.asarray(free, dtype=np.int32), wp.int32)
        self.Dm_inv = arr(np.asarray(Dm_inv, dtype=np.float64), wp.mat33d)
        self.W = arr(np.asarray(W, dtype=np.float64), wp.float64)
        self.m = arr(np.asarray(m, dtype=np.float64), wp.float64)
        self.mu, self.lam, self.dt = wp.float64(mu), wp.float64(lam), wp.float64(dt)
        self.g = wp.vec3d(*map(float, g))
        nv = len(m)
        self.x, self.v, self.f = (wp.zeros(nv, dtype=wp.vec3d, device=device)
                                  for _ in range(3))
        self.graph = None

    def load(self, x, v) -> None:
        self.x.assign(np.ascontiguousarray(x, dtype=np.float64))
        self.v.assign(np.ascontiguousarray(v, dtype=np.float64))
        self.f.zero_()

    def launches(self) -> None:
        wp.launch(forces, dim=self.tets.shape[0],
                  inputs=[self.x, self.tets, self.Dm_inv, self.W, self.mu, self.lam, self.f],
                  device=self.device)
        wp.launch(advance, dim=self.free.shape[0],
                  inputs=[self.free, self.dt, self.g, self.m, self.f, self.v, self.x],
                  device=self.device)

    def step(self) -> None:
        if self.graph is None:  # (compiles the module first: capture needs it loaded)
            wp.load_module(device=self.device)
            with wp.ScopedCapture(device=self.device) as capture:
                self.launches()
            self.graph = capture.graph
        wp.capture_launch(self.graph)

    def state(self):
        wp.synchronize_device(self.device)
        return self.x.numpy().copy(), self.v.numpy().copy()
