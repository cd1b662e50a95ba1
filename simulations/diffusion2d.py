"""Explicit 2-D diffusion on a periodic grid (affine access); Fourier-mode decay checked.

u_t = k (u_xx + u_yy) on the unit square, u0 = sin(2 pi x) sin(2 pi y): the exact solution
decays as exp(-8 pi^2 k t). The 5-point stencil with forward Euler (dt = 0.2 h^2 / k) is second
order in h at fixed dt/h^2, so halving h must cut the error about 4x.
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import relsim as rs
from relsim.domains import grid

from ._checks import nonfinite
from ._progress import Progress


def run(n: int, t_end: float = 0.01, k: float = 1.0, output: str | None = None):
    g = grid.Grid((n, n), spacing=1.0 / n, periodic=True)
    C = g.cells
    xy = C.center.numpy()
    C.new_field("u", rs.f64).load(np.sin(2 * np.pi * xy[:, 0]) * np.sin(2 * np.pi * xy[:, 1]))
    C.new_field("un", rs.f64)
    h = 1.0 / n
    steps = max(1, math.ceil(t_end / (0.2 * h * h / k)))
    dt = t_end / steps
    r = rs.Global(rs.f64, k * dt / (h * h))

    @rs.kernel
    def stencil(c):
        c.un = c.u + r * (c(1, 0).u + c(-1, 0).u + c(0, 1).u + c(0, -1).u - 4.0 * c.u)

    series = None
    if output:
        from relsim.output import TimeSeries
        os.makedirs(output, exist_ok=True)
        series = TimeSeries(f"{output}/diffusion2d.pvd", C, ["u"])
    with Progress(steps) as bar:
        for step in range(steps):
            C.foreach(stencil)
            C.u.swap(C.un)
            if series is not None and step % max(1, steps // 10) == 0:
                series.write(step * dt)
            bar.update(step + 1, f"n = {n}")
    if series is not None:
        series.close()
    exact = math.exp(-8 * math.pi**2 * k * t_end) * \
        np.sin(2 * np.pi * xy[:, 0]) * np.sin(2 * np.pi * xy[:, 1])
    return float(np.max(np.abs(C.u.numpy() - exact))), steps


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run diffusion2d", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 128])
    p.add_argument("--t-end", type=float, default=0.01)
    p.add_argument("--output", default=None, help="directory for a ParaView .pvd time series")
    p.add_argument("--target", default=None)
    a = p.parse_args(argv)
    if a.target:
        rs.configure(target=a.target)
    print(f"{'n':>6} {'steps':>7} {'max error':>12} {'order':>6}")
    prev, ok = None, True
    t0 = time.perf_counter()
    for n in a.sizes:
        err, steps = run(n, a.t_end, output=a.output if n == a.sizes[-1] else None)
        order = math.log2(prev / err) if prev else float("nan")
        print(f"{n:6d} {steps:7d} {err:12.4e} {order:6.2f}")
        if prev and not 1.8 < order < 2.2 or nonfinite(error=[err]):
            ok = False
        prev = err
    print(f"{time.perf_counter() - t0:.2f} s; " +
          ("OK: second-order convergence" if ok else "FAILED: not second order"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
