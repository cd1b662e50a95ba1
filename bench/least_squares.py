#!/usr/bin/env python
"""Nonlinear least squares on a grid: relsim.optimize.least_squares (Levenberg-Marquardt; the
step by cg on the normal equations with J assembled from generated kernels, ``inner="sparse"``,
or matrix-free, ``inner="cg"``; both Jacobi-preconditioned by generated kernels) against
SciPy's least_squares with an analytic sparse Jacobian (its best setting for a large sparse
problem: ``method="trf", tr_solver="lsmr"``).

The problem: a noisy image f on an n x n grid, the unknown u per pixel; residuals per pixel
``u - f + 0.1 sin(3 u)`` and, per pixel and axis, ``lam (u(+1) - u) + 0.05 sin(u(+1) - u)``
to the right and downwards (bounded: the last column's and row's are 0). Both solvers start
from u = 0 and stop on a relative cost reduction of 1e-10 (relsim's ftol; SciPy's ftol);
each is timed whole (set-up apart), interleaved (``--repeats``), and the final costs are
compared (their relative difference is printed: both reach the same minimum).

Usage::

    python bench/least_squares.py [--n 64 128] [--repeats 3] [--threads 1 2]
"""
from __future__ import annotations

import argparse
import math
import time

import _blas
import _common as C
import numpy as np
import scipy.optimize as so
import scipy.sparse as sp

import relsim as rs
from relsim import optimize

LAM = 2.0


def relsim_problem(n: int, f: np.ndarray):
    G = rs.Relation("img", n * n)
    G.set_grid((n, n), periodic=False)
    G.new_field("f", rs.f64).load(f.ravel())
    G.new_field("u", rs.f64)
    for name in ("rd", "rx", "ry"):
        G.new_field(name, rs.f64)
    i, j = np.arange(n * n) % n, np.arange(n * n) // n
    inner_x = G.subset("inner_x", i < n - 1)
    inner_y = G.subset("inner_y", j < n - 1)

    @rs.kernel
    def data(c):
        c.rd = c.u - c.f + 0.1 * math.sin(3.0 * c.u)

    @rs.kernel
    def along_x(c):
        c.rx = LAM * (c(1, 0).u - c.u) + 0.05 * math.sin(c(1, 0).u - c.u)

    @rs.kernel
    def along_y(c):
        c.ry = LAM * (c(0, 1).u - c.u) + 0.05 * math.sin(c(0, 1).u - c.u)

    def run(config=None):
        G.foreach(data, config)
        inner_x.foreach(along_x, config)
        inner_y.foreach(along_y, config)

    return G, run


def scipy_problem(n: int, f: np.ndarray):
    fr = f.ravel()
    idx = np.arange(n * n).reshape(n, n)  # [j, i]
    xa, xb = idx[:, :-1].ravel(), idx[:, 1:].ravel()
    ya, yb = idx[:-1, :].ravel(), idx[1:, :].ravel()
    m = n * n + 2 * n * n  # data, rx, ry (zeros where bounded, as relsim's fields are)

    def fun(u):
        r = np.zeros(m)
        r[:n * n] = u - fr + 0.1 * np.sin(3.0 * u)
        d = u[xb] - u[xa]
        r[n * n + xa] = LAM * d + 0.05 * np.sin(d)
        d = u[yb] - u[ya]
        r[2 * n * n + ya] = LAM * d + 0.05 * np.sin(d)
        return r

    def jac(u):
        rows, cols, vals = [np.arange(n * n)], [np.arange(n * n)], [1.0 + 0.3 * np.cos(3 * u)]
        for off, a, b in ((n * n, xa, xb), (2 * n * n, ya, yb)):
            d = u[b] - u[a]
            g = LAM + 0.05 * np.cos(d)
            rows += [off + a, off + a]
            cols += [b, a]
            vals += [g, -g]
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                     np.concatenate(cols))), shape=(m, n * n))

    return fun, jac


def _relsim_solver(G, run, threads: int, inner: str, name: str, infos: dict):
    cfg = rs.Config(target="cpu", threads=threads)

    def go():
        G.u.fill(0.0)
        infos[name] = optimize.least_squares(lambda: run(cfg), [G.rd, G.rx, G.ry], G.u,
                                             inner=inner, ftol=1e-10, xtol=1e-14, gtol=1e-14)
    return go


def _scipy_solver(fun, jac, n: int, sol: dict):
    def go():
        sol["x"] = so.least_squares(fun, np.zeros(n * n), jac=jac, method="trf",
                                    tr_solver="lsmr", ftol=1e-10, xtol=1e-14, gtol=1e-14)
    return go


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    _blas.set_threads(1)
    rows = []
    for n in args.n:
        f = np.sin(np.linspace(0, 6, n))[None, :] * np.cos(np.linspace(0, 4, n))[:, None]
        f = f + 0.2 * np.random.default_rng(0).standard_normal((n, n))
        G, run = relsim_problem(n, f)
        fun, jac = scipy_problem(n, f)
        infos, sol = {}, {}
        scipy_solve = _scipy_solver(fun, jac, n, sol)
        variants = {"scipy trf+lsmr": scipy_solve}
        for t in args.threads:
            for inner in ("sparse", "cg"):
                name = f"relsim lm+{inner}, {t} thr"
                variants[name] = _relsim_solver(G, run, t, inner, name, infos)
        for fn in variants.values():  # (compiles)
            fn()
        times = C.interleaved(variants, args.repeats, 1)
        want = 0.5 * float(np.sum(sol["x"].fun ** 2))
        print(f"n = {n}: {n * n} unknowns; scipy: {sol['x'].nfev} evaluations, cost {want:.12g}")
        for name, samples in times.items():
            lo, med = C.summary(samples)
            extra = ""
            if name.startswith("relsim"):
                info = infos[name]
                extra = (f"{info.iterations} it, {info.inner_iterations} cg it, cost rel. diff "
                         f"{(info.cost - want) / want:+.1e}, preconditioned "
                         f"{info.preconditioned}; "
                         f"{C.paired_ratio(samples, times['scipy trf+lsmr']):.2f}x scipy")
            rows.append([f"{n * n:,}", name, C.ms(lo), C.ms(med), extra])
            print(f"  {name:24s} {C.ms(lo):>10s} ms (median {C.ms(med)})  {extra}")
    print()
    print(C.table(["unknowns", "solver", "min ms", "median ms", "notes"], rows))
    print(C.machine_line())


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
