"""Hand-written numba.cuda peer of the tet heat step (bench/peers/heat_tet.py) on the GPU
(bench/gpu_check.py): what a user writes without relsim, the way NVIDIA Warp's peer does it: one
thread per edge adding its flux into both vertices with ``cuda.atomic.add`` (in whatever order
the threads reach them: not reproducible bit for bit), then one thread per vertex for the
update. f64 arrays, 256 threads per block. Importing this module imports numba.cuda."""

import numpy as np
from numba import cuda

THREADS = 256


@cuda.jit
def conduct(k, head, tail, T, flux):
    e = cuda.grid(1)
    if e < k.shape[0]:
        t = tail[e]
        h = head[e]
        d = k[e] * (T[h] - T[t])
        cuda.atomic.add(flux, t, d)
        cuda.atomic.add(flux, h, -d)


@cuda.jit
def update(dt, c, T, Q, flux):
    v = cuda.grid(1)
    if v < c.shape[0]:
        q = Q[v] + dt * flux[v]
        Q[v] = q
        flux[v] = 0.0
        T[v] = q / c[v]


class Heat:
    """The mesh and the state as device arrays (`device` is accepted for the Warp peer's
    signature: always the current CUDA device)."""

    def __init__(self, head, tail, k, c, dt, device="cuda"):
        self.k = cuda.to_device(np.ascontiguousarray(k, dtype=np.float64))
        self.head = cuda.to_device(np.ascontiguousarray(head, dtype=np.int32))
        self.tail = cuda.to_device(np.ascontiguousarray(tail, dtype=np.int32))
        self.c = cuda.to_device(np.ascontiguousarray(c, dtype=np.float64))
        self.T = cuda.device_array(len(c), dtype=np.float64)
        self.Q = cuda.device_array(len(c), dtype=np.float64)
        self.flux = cuda.to_device(np.zeros(len(c)))
        self.dt = float(dt)
        self.ne, self.nv = len(k), len(c)

    def load(self, T, Q) -> None:
        self.T.copy_to_device(np.ascontiguousarray(T, dtype=np.float64))
        self.Q.copy_to_device(np.ascontiguousarray(Q, dtype=np.float64))
        self.flux.copy_to_device(np.zeros(self.nv))

    def step(self) -> None:
        conduct[-(-self.ne // THREADS), THREADS](self.k, self.head, self.tail, self.T, self.flux)
        update[-(-self.nv // THREADS), THREADS](self.dt, self.c, self.T, self.Q, self.flux)

    def state(self):
        cuda.synchronize()
        return self.T.copy_to_host(), self.Q.copy_to_host()
