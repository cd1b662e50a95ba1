"""NVIDIA Warp peer of the tet heat step (bench/peers/heat_tet.py): the ``cpu`` device (or
``Heat(device="cuda")``: bench/gpu_check.py), f64 arrays, the edge scatter with
``wp.atomic_add`` / ``wp.atomic_sub``, then the vertex update; the step's two launches are
captured once as a graph (``wp.ScopedCapture``) and replayed (``wp.capture_launch``), Warp's
fastest way to repeat a step, on the CPU too. Warp runs CPU kernels on one thread (its CPU
backend does not parallelise a launch), so on the cpu this peer is single-threaded at every
thread count. Importing this module imports warp."""

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING
wp.config.enable_backward = False  # no adjoint kernels: only the forward step is timed
VERSION = wp.__version__
DEVICE = "cpu"


@wp.kernel
def conduct(k: wp.array(dtype=wp.float64), head: wp.array(dtype=wp.int32),
            tail: wp.array(dtype=wp.int32), T: wp.array(dtype=wp.float64),
            flux: wp.array(dtype=wp.float64)):
    e = wp.tid()
    t = tail[e]
    h = head[e]
    d = k[e] * (T[h] - T[t])
    wp.atomic_add(flux, t, d)
    wp.atomic_sub(flux, h, d)


@wp.kernel
def update(dt: wp.float64, c: wp.array(dtype=wp.float64), T: wp.array(dtype=wp.float64),
           Q: wp.array(dtype=wp.float64), flux: wp.array(dtype=wp.float64)):
    v = wp.tid()
    q = Q[v] + dt * flux[v]
    Q[v] = q
    flux[v] = wp.float64(0.0)
    T[v] = q / c[v]


class Heat:
    """The mesh and the state as Warp arrays on `device` (default the CPU)."""

    def __init__(self, head, tail, k, c, dt, device=DEVICE):
        wp.init()
        self.device = device

        def arr(a, dtype):
            return wp.array(np.ascontiguousarray(a), dtype=dtype, device=self.device)

        self.k = arr(np.asarray(k, dtype=np.float64), wp.float64)
        self.head = arr(np.asarray(head, dtype=np.int32), wp.int32)
        self.tail = arr(np.asarray(tail, dtype=np.int32), wp.int32)
        self.c = arr(np.asarray(c, dtype=np.float64), wp.float64)
        self.T = wp.zeros(len(c), dtype=wp.float64, device=self.device)
        self.Q = wp.zeros(len(c), dtype=wp.float64, device=self.device)
        self.flux = wp.zeros(len(c), dtype=wp.float64, device=self.device)
        self.dt = wp.float64(float(dt))
        self.ne, self.nv = len(k), len(c)
        self.graph = None

    def load(self, T, Q) -> None:
        self.T.assign(np.ascontiguousarray(T, dtype=np.float64))
        self.Q.assign(np.ascontiguousarray(Q, dtype=np.float64))
        self.flux.zero_()

    def launches(self) -> None:
        wp.launch(conduct, dim=self.ne, inputs=[self.k, self.head, self.tail, self.T, self.flux],
                  device=self.device)
        wp.launch(update, dim=self.nv, inputs=[self.dt, self.c, self.T, self.Q, self.flux],
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
        return self.T.numpy().copy(), self.Q.numpy().copy()
