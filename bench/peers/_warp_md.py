"""NVIDIA Warp peer of the Lennard-Jones step (bench/peers/md_fluid.py): cell lists of a fixed
capacity filled with ``wp.atomic_add`` (Warp's ``HashGrid`` is not periodic), one thread per
atom reading its 27 neighbour cells, f64 on the ``cpu`` device; the step's launches captured once
as a graph and replayed. Warp runs a CPU launch on one thread. Importing this module imports
warp."""

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING
wp.config.enable_backward = False
VERSION = wp.__version__
DEVICE = "cpu"
CAPACITY = 64  # atoms a cell can list


@wp.kernel
def kick_drift(dt: wp.float64, box: wp.float64, f: wp.array(dtype=wp.vec3d),
               v: wp.array(dtype=wp.vec3d), x: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    v[i] = v[i] + wp.float64(0.5) * dt * f[i]
    y = x[i] + dt * v[i]
    x[i] = wp.vec3d(y[0] - box * wp.floor(y[0] / box), y[1] - box * wp.floor(y[1] / box),
                    y[2] - box * wp.floor(y[2] / box))


@wp.kernel
def clear(count: wp.array(dtype=wp.int32)):
    count[wp.tid()] = 0


@wp.func
def cell_of(p: wp.vec3d, width: wp.float64, nc: int):
    a = wp.min(int(p[0] / width), nc - 1)
    b = wp.min(int(p[1] / width), nc - 1)
    c = wp.min(int(p[2] / width), nc - 1)
    return wp.vec3i(a, b, c)


@wp.kernel
def bin_atoms(x: wp.array(dtype=wp.vec3d), width: wp.float64, nc: int,
              count: wp.array(dtype=wp.int32), members: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    c = cell_of(x[i], width, nc)
    k = c[0] + nc * (c[1] + nc * c[2])
    slot = wp.atomic_add(count, k, 1)
    members[k, slot] = i


@wp.kernel
def forces(x: wp.array(dtype=wp.vec3d), box: wp.float64, width: wp.float64, nc: int,
           rc2: wp.float64, count: wp.array(dtype=wp.int32),
           members: wp.array2d(dtype=wp.int32), f: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    c = cell_of(x[i], width, nc)
    acc = wp.vec3d()
    for dz in range(-1, 2):
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                k = (c[0] + dx + nc) % nc + nc * ((c[1] + dy + nc) % nc + nc *
                                                  ((c[2] + dz + nc) % nc))
                for s in range(count[k]):
                    j = members[k, s]
                    d = x[i] - x[j]
                    d = wp.vec3d(d[0] - box * wp.round(d[0] / box),
                                 d[1] - box * wp.round(d[1] / box),
                                 d[2] - box * wp.round(d[2] / box))
                    r2 = wp.dot(d, d)
                    if r2 < rc2 and r2 > wp.float64(0.0):
                        i2 = wp.float64(1.0) / r2
                        i6 = i2 * i2 * i2
                        acc = acc + wp.float64(24.0) * i2 * i6 * (wp.float64(2.0) * i6 -
                                                                  wp.float64(1.0)) * d
    f[i] = acc


@wp.kernel
def kick(dt: wp.float64, f: wp.array(dtype=wp.vec3d), v: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    v[i] = v[i] + wp.float64(0.5) * dt * f[i]


class Fluid:
    def __init__(self, n, box, nc, dt, rc2, device=DEVICE):
        wp.init()
        self.device = device
        self.n, self.nc = int(n), int(nc)
        self.box, self.width = wp.float64(box), wp.float64(box / nc)
        self.dt, self.rc2 = wp.float64(dt), wp.float64(rc2)
        self.x, self.v, self.f = (wp.zeros(n, dtype=wp.vec3d, device=device) for _ in range(3))
        self.count = wp.zeros(nc ** 3, dtype=wp.int32, device=device)
        self.members = wp.zeros((nc ** 3, CAPACITY), dtype=wp.int32, device=device)
        self.graph = None

    def rebin_and_forces(self) -> None:
        wp.launch(clear, dim=self.nc ** 3, inputs=[self.count], device=self.device)
        wp.launch(bin_atoms, dim=self.n, inputs=[self.x, self.width, self.nc, self.count,
                                                 self.members], device=self.device)
        wp.launch(forces, dim=self.n, inputs=[self.x, self.box, self.width, self.nc, self.rc2,
                                              self.count, self.members, self.f],
                  device=self.device)

    def load(self, x, v) -> None:
        self.x.assign(np.ascontiguousarray(x, dtype=np.float64))
        self.v.assign(np.ascontiguousarray(v, dtype=np.float64))
        self.rebin_and_forces()

    def launches(self) -> None:
        wp.launch(kick_drift, dim=self.n, inputs=[self.dt, self.box, self.f, self.v, self.x],
                  device=self.device)
        self.rebin_and_forces()
        wp.launch(kick, dim=self.n, inputs=[self.dt, self.f, self.v], device=self.device)

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
