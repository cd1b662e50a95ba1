"""NVIDIA Warp peer of the SPH dam break step (bench/peers/sph_dam.py), after Warp's
``example_sph.py`` (one thread per particle computing its density, then its acceleration, then
an integration kernel), with cell lists of a fixed capacity filled with ``wp.atomic_add``
instead of ``wp.HashGrid`` (which has no periodic axis), f64 on the ``cpu`` device; the step's
launches captured once as a graph and replayed. Warp runs a CPU launch on one thread. Importing
this module imports warp."""

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING
wp.config.enable_backward = False
VERSION = wp.__version__
DEVICE = "cpu"
CAPACITY = 64  # particles a cell can list (~20 at rest density)
RHO0, GRAVITY = 1000.0, 9.81


@wp.kernel
def clear(count: wp.array(dtype=wp.int32)):
    count[wp.tid()] = 0


@wp.func
def cell_of(x: wp.vec3d, origin: wp.vec3d, width: wp.vec3d, nc: wp.vec3i):
    a = int(wp.floor((x[0] - origin[0]) / width[0]))
    b = int(wp.floor((x[1] - origin[1]) / width[1]))
    c = int(wp.floor((x[2] - origin[2]) / width[2]))
    return wp.vec3i((a % nc[0] + nc[0]) % nc[0], (b % nc[1] + nc[1]) % nc[1],
                    (c % nc[2] + nc[2]) % nc[2])


@wp.kernel
def bin_particles(x: wp.array(dtype=wp.vec3d), origin: wp.vec3d, width: wp.vec3d,
                  nc: wp.vec3i, count: wp.array(dtype=wp.int32),
                  members: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    c = cell_of(x[i], origin, width, nc)
    k = c[0] + nc[0] * (c[1] + nc[1] * c[2])
    slot = wp.atomic_add(count, k, 1)
    if slot < CAPACITY:
        members[k, slot] = i


@wp.func
def offset(xi: wp.vec3d, xj: wp.vec3d, ly: wp.float64):
    d = xi - xj
    return wp.vec3d(d[0], d[1] - ly * wp.round(d[1] / ly), d[2])


@wp.kernel
def density(x: wp.array(dtype=wp.vec3d), origin: wp.vec3d, width: wp.vec3d, nc: wp.vec3i,
            count: wp.array(dtype=wp.int32), members: wp.array2d(dtype=wp.int32),
            ly: wp.float64, h: wp.float64, w: wp.float64, mass: wp.float64, b: wp.float64,
            rho: wp.array(dtype=wp.float64), p: wp.array(dtype=wp.float64)):
    i = wp.tid()
    c = cell_of(x[i], origin, width, nc)
    s = wp.float64(0.0)
    for dz in range(-1, 2):
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                k = (c[0] + dx + nc[0]) % nc[0] + nc[0] * (
                    (c[1] + dy + nc[1]) % nc[1] + nc[1] * ((c[2] + dz + nc[2]) % nc[2]))
                for m in range(wp.min(count[k], CAPACITY)):
                    d = offset(x[i], x[members[k, m]], ly)
                    r2 = wp.dot(d, d)
                    if r2 < wp.float64(4.0) * h * h:
                        r = wp.sqrt(r2) / h
                        q = wp.float64(1.0) - wp.float64(0.5) * r
                        s += q * q * q * q * (wp.float64(2.0) * r + wp.float64(1.0))
    rho[i] = mass * w * s
    ratio = rho[i] / wp.float64(RHO0)
    p[i] = wp.max(b * (ratio * ratio * ratio * ratio * ratio * ratio * ratio -
                       wp.float64(1.0)), wp.float64(0.0))


@wp.kernel
def forces(x: wp.array(dtype=wp.vec3d), v: wp.array(dtype=wp.vec3d),
           rho: wp.array(dtype=wp.float64), p: wp.array(dtype=wp.float64),
           fluid: wp.array(dtype=wp.int32), origin: wp.vec3d, width: wp.vec3d, nc: wp.vec3i,
           count: wp.array(dtype=wp.int32), members: wp.array2d(dtype=wp.int32),
           ly: wp.float64, h: wp.float64, w: wp.float64, mass: wp.float64, visc: wp.float64,
           acc: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    if fluid[i] == 0:
        return
    c = cell_of(x[i], origin, width, nc)
    a = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(-GRAVITY))
    for dz in range(-1, 2):
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                k = (c[0] + dx + nc[0]) % nc[0] + nc[0] * (
                    (c[1] + dy + nc[1]) % nc[1] + nc[1] * ((c[2] + dz + nc[2]) % nc[2]))
                for m in range(wp.min(count[k], CAPACITY)):
                    j = members[k, m]
                    d = offset(x[i], x[j], ly)
                    r2 = wp.dot(d, d)
                    if r2 < wp.float64(4.0) * h * h and r2 > wp.float64(0.0):
                        r = wp.sqrt(r2) / h
                        dv = wp.dot(v[i] - v[j], d)
                        pi = wp.float64(0.0)
                        if dv < wp.float64(0.0):
                            pi = wp.float64(-2.0) * visc * dv / (
                                (r2 + wp.float64(0.01) * h * h) * (rho[i] + rho[j]))
                        q = wp.float64(1.0) - wp.float64(0.5) * r
                        grad = wp.float64(-5.0) * w / (h * h) * q * q * q
                        a = a - mass * (p[i] / (rho[i] * rho[i]) + p[j] / (rho[j] * rho[j])
                                        + pi) * grad * d
    acc[i] = a


@wp.kernel
def move(acc: wp.array(dtype=wp.vec3d), fluid: wp.array(dtype=wp.int32), dt: wp.float64,
         v: wp.array(dtype=wp.vec3d), x: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    if fluid[i] != 0:
        v[i] = v[i] + dt * acc[i]
        x[i] = x[i] + dt * v[i]


class DamBreak:
    def __init__(self, fluid, origin, width, cells, h, sigma, mass, b, visc, dt, device=DEVICE,
                 **_):
        wp.init()
        self.device, self.n = device, len(fluid)
        self.ncell = int(np.prod(cells))
        self.origin, self.width = wp.vec3d(*origin), wp.vec3d(*width)
        self.nc = wp.vec3i(*cells)
        self.ly, self.h = wp.float64(width[1] * cells[1]), wp.float64(h)
        self.w, self.mass, self.b = wp.float64(sigma), wp.float64(mass), wp.float64(b)
        self.visc, self.dt = wp.float64(visc), wp.float64(dt)
        self.fluid = wp.array(np.asarray(fluid, dtype=np.int32), dtype=wp.int32, device=device)
        self.x, self.v, self.acc = (wp.zeros(self.n, dtype=wp.vec3d, device=device)
                                    for _ in range(3))
        self.rho, self.p = (wp.zeros(self.n, dtype=wp.float64, device=device) for _ in range(2))
        self.count = wp.zeros(self.ncell, dtype=wp.int32, device=device)
        self.members = wp.zeros((self.ncell, CAPACITY), dtype=wp.int32, device=device)
        self.graph = None

    def load(self, x, v) -> None:
        self.x.assign(np.ascontiguousarray(x, dtype=np.float64))
        self.v.assign(np.ascontiguousarray(v, dtype=np.float64))

    def launches(self) -> None:
        grid = [self.origin, self.width, self.nc, self.count, self.members]
        wp.launch(clear, dim=self.ncell, inputs=[self.count], device=self.device)
        wp.launch(bin_particles, dim=self.n, inputs=[self.x, *grid], device=self.device)
        wp.launch(density, dim=self.n, inputs=[self.x, *grid, self.ly, self.h, self.w,
                                               self.mass, self.b, self.rho, self.p],
                  device=self.device)
        wp.launch(forces, dim=self.n,
                  inputs=[self.x, self.v, self.rho, self.p, self.fluid, *grid, self.ly, self.h,
                          self.w, self.mass, self.visc, self.acc], device=self.device)
        wp.launch(move, dim=self.n, inputs=[self.acc, self.fluid, self.dt, self.v, self.x],
                  device=self.device)

    def step(self) -> None:
        if self.graph is None:
            wp.load_module(device=self.device)
            with wp.ScopedCapture(device=self.device) as capture:
                self.launches()
            self.graph = capture.graph
        wp.capture_launch(self.graph)

    def state(self):
        wp.synchronize_device(self.device)
        return self.x.numpy().copy(), self.v.numpy().copy()
