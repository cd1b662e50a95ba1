"""NVIDIA Warp peer of the cloth step (bench/peers/cloth_sheet.py), written as warp.sim's
mass-spring code writes it (``eval_springs``: one thread per spring, ``wp.atomic_add`` /
``wp.atomic_sub`` into the particle forces; then an integrate kernel per particle), f64
(``wp.vec3d``) on the ``cpu`` device, the step's two launches captured once as a graph and
replayed. Warp runs a CPU launch on one thread. Importing this module imports warp."""

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING
wp.config.enable_backward = False
VERSION = wp.__version__
DEVICE = "cpu"


@wp.kernel
def springs(x: wp.array(dtype=wp.vec3d), v: wp.array(dtype=wp.vec3d),
            pairs: wp.array2d(dtype=wp.int32), rest: wp.array(dtype=wp.float64),
            k: wp.float64, dashpot: wp.float64, f: wp.array(dtype=wp.vec3d)):
    s = wp.tid()
    i = pairs[s, 0]
    j = pairs[s, 1]
    d = x[j] - x[i]
    length = wp.length(d)
    u = d / length
    pull = k * (length / rest[s] - wp.float64(1.0)) + dashpot * wp.dot(v[j] - v[i], u)
    wp.atomic_add(f, i, pull * u)
    wp.atomic_sub(f, j, pull * u)


@wp.kernel
def advance(dt: wp.float64, drag: wp.float64, g: wp.vec3d, w: wp.array(dtype=wp.float64),
            centre: wp.vec3d, radius: wp.float64, f: wp.array(dtype=wp.vec3d),
            v: wp.array(dtype=wp.vec3d), x: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    vel = (v[i] + dt * (w[i] * f[i] + g)) * drag
    if w[i] == wp.float64(0.0):
        vel = wp.vec3d()
    off = x[i] - centre
    dist = wp.length(off)
    if dist <= radius:
        normal = off / dist
        vel = vel - wp.min(wp.dot(vel, normal), wp.float64(0.0)) * normal
    v[i] = vel
    x[i] = x[i] + dt * vel
    f[i] = wp.vec3d()


class Sheet:
    def __init__(self, pairs, rest, w, k, dashpot, dt, drag, g, centre, radius, device=DEVICE):
        wp.init()
        self.device = device

        def arr(a, dtype):
            return wp.array(np.ascontiguousarray(a), dtype=dtype, device=device)

        self.pairs = arr(np.asarray(pairs, dtype=np.int32), wp.int32)
        self.rest = arr(np.asarray(rest, dtype=np.float64), wp.float64)
        self.w = arr(np.asarray(w, dtype=np.float64), wp.float64)
        self.k, self.dashpot = wp.float64(k), wp.float64(dashpot)
        self.dt, self.drag, self.radius = wp.float64(dt), wp.float64(drag), wp.float64(radius)
        self.g, self.centre = wp.vec3d(*map(float, g)), wp.vec3d(*map(float, centre))
        nv = len(w)
        self.x, self.v, self.f = (wp.zeros(nv, dtype=wp.vec3d, device=device)
                                  for _ in range(3))
        self.graph = None

    def load(self, x, v) -> None:
        self.x.assign(np.ascontiguousarray(x, dtype=np.float64))
        self.v.assign(np.ascontiguousarray(v, dtype=np.float64))
        self.f.zero_()

    def launches(self) -> None:
        wp.launch(springs, dim=self.pairs.shape[0],
                  inputs=[self.x, self.v, self.pairs, self.rest, self.k, self.dashpot, self.f],
                  device=self.device)
        wp.launch(advance, dim=self.w.shape[0],
                  inputs=[self.dt, self.drag, self.g, self.w, self.centre, self.radius, self.f,
                          self.v, self.x], device=self.device)

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
