"""Taichi peer of the smoke step (bench/peers/smoke_plume.py), in the style of Taichi's
``examples/simulation/stable_fluid.py``: ``ti.field`` arrays indexed ``[i, j]``, ``ti.kernel``
loops over them, ``ti.func`` helpers, here on a periodic MAC grid. The pressure: conjugate
gradients in kernels, ``ti.linalg.MatrixFreeCG``'s algorithm and its ``LinearOperator``'s
matvec kernel, with the update of x, r and r.r fused into one kernel, as Taichi's
``examples/algorithm/mgpcg.py`` writes its CG. Not ``MatrixFreeCG`` itself: it defines its
kernels and fields anew at every call, so each call compiles them again (here ~150 ms a call
with no iteration at all, n = 40), which a solve every time step cannot afford. Reductions
return their sums (a sync each). CPU backend, f64. No `from __future__ import annotations`:
Taichi reads the kernels' annotations."""

import math

import numpy as np
import taichi as ti

VERSION = ti.__version__ if isinstance(ti.__version__, str) else ".".join(map(str, ti.__version__))


class Plume:
    def __init__(self, threads, n, source, dt, beta, inflow, rtol):
        ti.init(arch=ti.cpu, cpu_max_num_threads=threads, default_fp=ti.f64,
                log_level=ti.WARN)
        ux, uy, d, p, uxn, uyn, dn, div, b, r, s, q = (ti.field(ti.f64, (n, n))
                                                       for _ in range(12))
        src = ti.field(ti.i32, (n, n))
        src.from_numpy(np.asarray(source, dtype=np.int32))
        total = ti.field(ti.f64, ())
        h = 1.0 / n
        self.n, self.dt, self.beta, self.speed, self.rtol = n, float(dt), float(beta), \
            float(inflow), float(rtol)

        @ti.func
        def sample(q: ti.template(), i, j, x, y):
            """q (on its own grid) at (i + x, j + y), bilinear, periodic."""
            a, c = int(ti.floor(x)), int(ti.floor(y))
            fx, fy = x - a, y - c
            i0, i1, j0, j1 = (i + a) % n, (i + a + 1) % n, (j + c) % n, (j + c + 1) % n
            return (1.0 - fx) * ((1.0 - fy) * q[i0, j0] + fy * q[i0, j1]) \
                + fx * ((1.0 - fy) * q[i1, j0] + fy * q[i1, j1])

        @ti.kernel
        def inflow(speed: ti.f64):
            for i, j in src:
                if src[i, j] != 0:
                    d[i, j] = 1.0
                    uy[i, j] = speed

        @ti.kernel
        def buoyancy(dt: ti.f64, beta: ti.f64):
            for i, j in uy:
                uy[i, j] += dt * beta * 0.5 * (d[i, j] + d[i, (j - 1) % n])

        @ti.kernel
        def advect(dt: ti.f64):
            for i, j in d:
                im, ip, jm, jp = (i - 1) % n, (i + 1) % n, (j - 1) % n, (j + 1) % n
                vbar = 0.25 * (uy[i, j] + uy[im, j] + uy[i, jp] + uy[im, jp])
                uxn[i, j] = sample(ux, i, j, -dt * ux[i, j] / h, -dt * vbar / h)
                ubar = 0.25 * (ux[i, j] + ux[ip, j] + ux[i, jm] + ux[ip, jm])
                uyn[i, j] = sample(uy, i, j, -dt * ubar / h, -dt * uy[i, j] / h)
                dn[i, j] = sample(d, i, j, -dt * (0.5 * (ux[i, j] + ux[ip, j])) / h,
                                  -dt * (0.5 * (uy[i, j] + uy[i, jp])) / h)

        @ti.kernel
        def divergence():
            total[None] = 0.0
            for i, j in div:
                div[i, j] = (uxn[(i + 1) % n, j] - uxn[i, j] + uyn[i, (j + 1) % n]
                             - uyn[i, j]) / h
                total[None] += div[i, j]

        @ti.kernel
        def rhs(dt: ti.f64):
            for i, j in b:
                b[i, j] = (total[None] / (n * n) - div[i, j]) / dt

        @ti.kernel
        def laplacian(x: ti.template(), Ax: ti.template()):
            for i, j in x:
                Ax[i, j] = (4.0 * x[i, j] - x[(i + 1) % n, j] - x[(i - 1) % n, j]
                            - x[i, (j + 1) % n] - x[i, (j - 1) % n]) / (h * h)

        @ti.kernel
        def residual() -> ti.types.vector(2, ti.f64):
            """r = s = b - A p (A p in q); (r.r, b.b)."""
            rr, bb = 0.0, 0.0
            for i, j in r:
                r[i, j] = b[i, j] - q[i, j]
                s[i, j] = r[i, j]
                rr += r[i, j] * r[i, j]
                bb += b[i, j] * b[i, j]
            return ti.Vector([rr, bb])

        @ti.kernel
        def dot(x: ti.template(), y: ti.template()) -> ti.f64:
            t = 0.0
            for i, j in x:
                t += x[i, j] * y[i, j]
            return t

        @ti.kernel
        def update(alpha: ti.f64) -> ti.f64:
            t = 0.0
            for i, j in p:
                p[i, j] += alpha * s[i, j]
                r[i, j] -= alpha * q[i, j]
                t += r[i, j] * r[i, j]
            return t

        @ti.kernel
        def direction(beta: ti.f64):
            for i, j in s:
                s[i, j] = r[i, j] + beta * s[i, j]

        @ti.kernel
        def project(dt: ti.f64):
            for i, j in d:
                ux[i, j] = uxn[i, j] - dt * (p[i, j] - p[(i - 1) % n, j]) / h
                uy[i, j] = uyn[i, j] - dt * (p[i, j] - p[i, (j - 1) % n]) / h
                d[i, j] = dn[i, j]

        self.inflow, self.buoyancy, self.advect, self.divergence = inflow, buoyancy, advect, \
            divergence
        self.rhs, self.project = rhs, project
        self.cg_kernels = (laplacian, residual, dot, update, direction)
        self.fields = dict(d=d, ux=ux, uy=uy, p=p, s=s, q=q)

    def load(self, d, ux, uy, p) -> None:
        for name, values in (("d", d), ("ux", ux), ("uy", uy), ("p", p)):
            self.fields[name].from_numpy(np.ascontiguousarray(values.reshape(self.n, self.n).T))

    def step(self) -> None:
        self.inflow(self.speed)
        self.buoyancy(self.dt, self.beta)
        self.advect(self.dt)
        self.divergence()
        self.rhs(self.dt)
        self.cg()
        self.project(self.dt)
        ti.sync()

    def cg(self) -> int:
        """p: the solution of A p = b by conjugate gradients, from the last p (relsim's
        stopping rule); the iterations."""
        laplacian, residual, dot, update, direction = self.cg_kernels
        p, s, q = self.fields["p"], self.fields["s"], self.fields["q"]
        laplacian(p, q)
        rr, bb = residual()
        tol = self.rtol * math.sqrt(bb)
        it = 0
        while math.sqrt(rr) > tol and it < 10 * self.n * self.n:
            it += 1
            laplacian(s, q)
            alpha = rr / dot(s, q)
            rr_new = update(alpha)
            if math.sqrt(rr_new) <= tol:
                break
            direction(rr_new / rr)
            rr = rr_new
        return it

    def state(self):
        return tuple(self.fields[k].to_numpy().T.ravel() for k in ("d", "ux", "uy", "p"))
