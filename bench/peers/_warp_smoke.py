"""NVIDIA Warp peer of the smoke step (bench/peers/smoke_plume.py), written as Warp's
``example_fluid.py``: 2-D arrays indexed ``[i, j]``, ``wp.launch`` over ``dim=(n, n)``, f64 on
the ``cpu`` device, here on a periodic MAC grid. The pressure: ``warp.optim.linear.cg`` (its
state allocated once, ``run=False``) with a ``LinearOperator`` whose matvec is a kernel on the
flattened arrays.

The operator declares one batch (``batch_offsets=[0, n^2]``): its dot products then take Warp's
direct CPU path ("CPU tiles contain one thread"); without it they are 512-wide tiled tree
reductions, which on a CPU device cost ~35 times more per step (measured: one solve of 260
iterations at n = 128, 5.5 s against 0.15 s; the same iterates).

The launches before the solve and after it are captured as two graphs and replayed; ``cg``
itself is not captured: on a CPU device it checks convergence on the host every
``check_every`` iterations (10, the default; iterations past convergence change nothing), and
its capturable form (``check_every=0``) runs ``maxiter`` iterations on a CPU device. Warp runs
a CPU launch on one thread. Importing this module imports warp."""

import numpy as np
import warp as wp
from warp.optim.linear import LinearOperator, cg

wp.config.log_level = wp.LOG_WARNING
wp.config.enable_backward = False
VERSION = wp.__version__
DEVICE = "cpu"
f64 = wp.float64
grid = wp.array2d(dtype=f64)


@wp.func
def wrap(k: int, n: int):
    return (k % n + n) % n


@wp.func
def sample(q: grid, i: int, j: int, x: f64, y: f64):
    """q (on its own grid) at (i + x, j + y), bilinear, periodic."""
    n = q.shape[0]
    a = int(wp.floor(x))
    b = int(wp.floor(y))
    fx = x - f64(a)
    fy = y - f64(b)
    i0, i1 = wrap(i + a, n), wrap(i + a + 1, n)
    j0, j1 = wrap(j + b, n), wrap(j + b + 1, n)
    one = f64(1.0)
    return (one - fx) * ((one - fy) * q[i0, j0] + fy * q[i0, j1]) \
        + fx * ((one - fy) * q[i1, j0] + fy * q[i1, j1])


@wp.kernel
def inflow(source: wp.array2d(dtype=wp.int32), speed: f64, d: grid, uy: grid):
    i, j = wp.tid()
    if source[i, j] != 0:
        d[i, j] = f64(1.0)
        uy[i, j] = speed


@wp.kernel
def buoyancy(d: grid, dt: f64, beta: f64, uy: grid):
    i, j = wp.tid()
    uy[i, j] = uy[i, j] + dt * beta * f64(0.5) * (d[i, j] + d[i, wrap(j - 1, d.shape[1])])


@wp.kernel
def advect(ux: grid, uy: grid, d: grid, dt: f64, h: f64, uxn: grid, uyn: grid, dn: grid):
    i, j = wp.tid()
    n = d.shape[0]
    im, ip, jm, jp = wrap(i - 1, n), wrap(i + 1, n), wrap(j - 1, n), wrap(j + 1, n)
    vbar = f64(0.25) * (uy[i, j] + uy[im, j] + uy[i, jp] + uy[im, jp])
    uxn[i, j] = sample(ux, i, j, -dt * ux[i, j] / h, -dt * vbar / h)
    ubar = f64(0.25) * (ux[i, j] + ux[ip, j] + ux[i, jm] + ux[ip, jm])
    uyn[i, j] = sample(uy, i, j, -dt * ubar / h, -dt * uy[i, j] / h)
    dn[i, j] = sample(d, i, j, -dt * (f64(0.5) * (ux[i, j] + ux[ip, j])) / h,
                      -dt * (f64(0.5) * (uy[i, j] + uy[i, jp])) / h)


@wp.kernel
def divergence(uxn: grid, uyn: grid, h: f64, div: grid, total: wp.array(dtype=f64)):
    i, j = wp.tid()
    n = div.shape[0]
    div[i, j] = (uxn[wrap(i + 1, n), j] - uxn[i, j] + uyn[i, wrap(j + 1, n)] - uyn[i, j]) / h
    wp.atomic_add(total, 0, div[i, j])


@wp.kernel
def rhs(div: grid, total: wp.array(dtype=f64), dt: f64, b: grid):
    i, j = wp.tid()
    n = div.shape[0]
    b[i, j] = (total[0] / f64(n * n) - div[i, j]) / dt


@wp.kernel
def laplacian(x: wp.array(dtype=f64), y: wp.array(dtype=f64), z: wp.array(dtype=f64),
              alpha: f64, beta: f64, n: int, h: f64):
    """z = alpha A x + beta y, A minus the 5-point Laplacian; arrays flattened from [i, j]."""
    i, j = wp.tid()
    ax = (f64(4.0) * x[i * n + j] - x[wrap(i + 1, n) * n + j] - x[wrap(i - 1, n) * n + j]
          - x[i * n + wrap(j + 1, n)] - x[i * n + wrap(j - 1, n)]) / (h * h)
    z[i * n + j] = alpha * ax + beta * y[i * n + j]


@wp.kernel
def project(uxn: grid, uyn: grid, dn: grid, p: grid, dt: f64, h: f64, ux: grid, uy: grid,
            d: grid):
    i, j = wp.tid()
    n = d.shape[0]
    ux[i, j] = uxn[i, j] - dt * (p[i, j] - p[wrap(i - 1, n), j]) / h
    uy[i, j] = uyn[i, j] - dt * (p[i, j] - p[i, wrap(j - 1, n)]) / h
    d[i, j] = dn[i, j]


class Plume:
    def __init__(self, n, source, dt, beta, inflow, rtol, device=DEVICE):
        wp.init()
        self.device, self.n = device, int(n)
        self.dt, self.h = f64(dt), f64(1.0 / n)
        self.beta, self.speed = f64(beta), f64(inflow)
        shape = (self.n, self.n)
        self.source = wp.array(np.asarray(source, dtype=np.int32), device=device)
        (self.ux, self.uy, self.d, self.p, self.uxn, self.uyn, self.dn, self.div,
         self.b) = (wp.zeros(shape, dtype=f64, device=device) for _ in range(9))
        self.total = wp.zeros(1, dtype=f64, device=device)
        N = self.n * self.n

        def matvec(x, y, z, alpha, beta):
            wp.launch(laplacian, dim=shape, inputs=[x, y, z, f64(alpha), f64(beta), self.n,
                                                    self.h], device=device)

        one_batch = wp.array([0, N], dtype=int, device=device)  # the direct CPU dot products
        A = LinearOperator((N, N), f64, wp.get_device(device), matvec, batch_offsets=one_batch)
        self.solver = cg(A, self.b.flatten(), self.p.flatten(), tol=float(rtol), run=False)
        self.graphs = None

    def before_solve(self) -> None:
        shape, dev = (self.n, self.n), self.device
        wp.launch(inflow, dim=shape, inputs=[self.source, self.speed, self.d, self.uy],
                  device=dev)
        wp.launch(buoyancy, dim=shape, inputs=[self.d, self.dt, self.beta, self.uy], device=dev)
        wp.launch(advect, dim=shape, inputs=[self.ux, self.uy, self.d, self.dt, self.h,
                                             self.uxn, self.uyn, self.dn], device=dev)
        self.total.zero_()
        wp.launch(divergence, dim=shape, inputs=[self.uxn, self.uyn, self.h, self.div,
                                                 self.total], device=dev)
        wp.launch(rhs, dim=shape, inputs=[self.div, self.total, self.dt, self.b], device=dev)

    def after_solve(self) -> None:
        wp.launch(project, dim=(self.n, self.n), inputs=[
            self.uxn, self.uyn, self.dn, self.p, self.dt, self.h, self.ux, self.uy, self.d],
            device=self.device)

    def load(self, d, ux, uy, p) -> None:
        for a, values in ((self.d, d), (self.ux, ux), (self.uy, uy), (self.p, p)):
            a.assign(np.ascontiguousarray(values.reshape(self.n, self.n).T))

    def step(self) -> None:
        if self.graphs is None:
            wp.load_module(device=self.device)
            self.graphs = []
            for part in (self.before_solve, self.after_solve):
                with wp.ScopedCapture(device=self.device) as capture:
                    part()
                self.graphs.append(capture.graph)
        wp.capture_launch(self.graphs[0])
        self.solver()
        wp.capture_launch(self.graphs[1])

    def state(self):
        wp.synchronize_device(self.device)
        return tuple(a.numpy().T.ravel() for a in (self.d, self.ux, self.uy, self.p))
