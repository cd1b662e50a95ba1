#!/usr/bin/env python
"""A P1 Poisson solve to rtol 1e-8: relsim's cg with and without ``linalg.Multigrid`` against
SciPy's cg and pyamg's smoothed-aggregation solver, on the same matrix.

The matrix and right-hand side are bench/cg_iteration.py's (the P1 stiffness matrix of
``tetmesh.box(n)``, zero values on the sides; (n+1)^3 rows). Each solve starts from x = 0 and
stops at ``||r|| <= 1e-8 ||b||``; timed whole, the variants interleaved (``--repeats``), per
size n (``--n``) and relsim thread count t (``--threads``):

* relsim cg: ``linalg.cg(K, V.b, V.x, rtol=1e-8, config=cfg)``, ``cfg = rs.Config(target="cpu",
  threads=t)`` (exact dot products);
* relsim mg: the same with ``M=mg``, ``mg = linalg.Multigrid(K)`` (its defaults: 1 Jacobi sweep
  before and after, coarsening to 300 rows); its set-up timed apart;
* relsim mg-gs: ``M=linalg.Multigrid(K, smoother="gauss-seidel")`` (a symmetric Gauss-Seidel
  sweep over each level's colours before and after);
* relsim ssor, relsim cheb: ``M=linalg.SSOR(K)`` (symmetric Gauss-Seidel over the colours),
  ``M=linalg.Chebyshev(K, 3)`` (a degree-3 polynomial of the Jacobi-scaled K);
* scipy cg: ``scipy.sparse.linalg.cg(A, b, rtol=1e-8)`` (OpenBLAS on 1 thread: its sparse
  product is serial anyway);
* pyamg: ``ml = pyamg.smoothed_aggregation_solver(A)`` (its defaults: symmetric Gauss-Seidel
  smoothing) then ``ml.solve(b, tol=1e-8, accel="cg")``, its set-up timed apart (skipped when
  pyamg is not installed: ``pip install pyamg``).

Checked first: every solution agrees with SciPy's to 1e-6 relative. Printed: the iterations,
the solve's minimum and median milliseconds, and each preconditioned relsim solve's time over the
peers' (medians of the per-repeat ratios).

Usage::

    python bench/poisson_solvers.py [--n 28 48] [--threads 1 2] [--repeats 5]
                                    [--markdown docs/benchmarks/history.md]
"""
from __future__ import annotations

import argparse
import inspect
import time

import _blas
import _common as C
import numpy as np
import scipy.sparse.linalg as spla
from cg_iteration import system

import relsim as rs
from relsim import linalg

TITLE = "A P1 Poisson solve: relsim cg and multigrid vs scipy and pyamg"
RTOL = 1e-8


def _pyamg():
    try:
        import pyamg
    except ImportError:
        return None
    return pyamg


def measure(n: int, args, pyamg, tol: str) -> list:
    """The table rows of size n (and its lines printed)."""
    rows = []
    V, K, _, A, b = system(n)
    want, _ = spla.cg(A, b, **{tol: RTOL, "atol": 0.0})
    setups, pre = {}, {}
    for label, make in (("mg", lambda: linalg.Multigrid(K)),
                        ("mg-gs", lambda: linalg.Multigrid(K, smoother="gauss-seidel",
                                                           name="mggs")),
                        ("ssor", lambda: linalg.SSOR(K)),
                        ("cheb", lambda: linalg.Chebyshev(K, 3))):
        t0 = time.perf_counter()
        pre[label] = make()
        setups[label] = time.perf_counter() - t0
    mg = pre["mg"]
    ml, amg_setup = None, None
    if pyamg is not None:
        t0 = time.perf_counter()
        ml = pyamg.smoothed_aggregation_solver(A)
        amg_setup = time.perf_counter() - t0
    iters = {}

    def relsim_solve(cfg, M, label):
        def run():
            V.x.fill(0.0)
            info = linalg.cg(K, V.b, V.x, rtol=RTOL, M=M, config=cfg)
            iters[label] = info.iterations
        return run

    def scipy_solve():
        count = []
        spla.cg(A, b, callback=lambda xk: count.append(1), **{tol: RTOL, "atol": 0.0})
        iters["scipy cg"] = len(count)

    def pyamg_solve():
        res = []
        ml.solve(b, tol=RTOL, accel="cg", residuals=res)
        iters["pyamg"] = len(res) - 1

    variants = {"scipy cg": scipy_solve}
    if ml is not None:
        variants["pyamg"] = pyamg_solve
    for t in args.threads:
        cfg = rs.Config(target="cpu", threads=t)
        variants[f"relsim cg, {t} thr"] = relsim_solve(cfg, None, f"relsim cg, {t} thr")
        for label, M in pre.items():
            name = f"relsim {label}, {t} thr"
            variants[name] = relsim_solve(cfg, M, name)
    for name, fn in variants.items():  # (compiles; then the check)
        fn()
        x = V.x.numpy() if name.startswith("relsim") else None
        if x is not None and not np.allclose(x, want, rtol=0, atol=1e-6 * abs(want).max()):
            raise SystemExit(f"{name}: the solution differs from SciPy's")
    times = C.interleaved(variants, args.repeats, 1)
    print(f"n = {n}: {V.size} rows; relsim mg levels {mg.levels}, set-ups "
          + ", ".join(f"{k} {C.ms(v)} ms" for k, v in setups.items())
          + (f"; pyamg set-up {C.ms(amg_setup)} ms, levels "
                                    f"{[lev.A.shape[0] for lev in ml.levels]}" if ml else ""))
    for name, samples in times.items():
        lo, med = C.summary(samples)
        ratios = []
        if name.startswith("relsim") and not name.startswith("relsim cg"):
            for peer in ("scipy cg", "pyamg"):
                if peer in times:
                    ratios.append(f"{C.paired_ratio(samples, times[peer]):.2f}x {peer}")
        rows.append([f"{V.size:,}", name, str(iters[name]), C.ms(lo), C.ms(med),
                     ", ".join(ratios)])
        print(f"  {name:21s} {iters[name]:4d} it  {C.ms(lo):>9s} ms (median "
              f"{C.ms(med)})  {', '.join(ratios)}")
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[28, 48], help="cubes per side")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    args = ap.parse_args(argv)
    _blas.set_threads(1)
    pyamg = _pyamg()
    tol = "rtol" if "rtol" in inspect.signature(spla.cg).parameters else "tol"
    rows = []
    for n in args.n:
        rows += measure(n, args, pyamg, tol)
    headers = ["rows", "solver", "iterations", "min ms", "median ms", "against the peers"]
    text = C.table(headers, rows)
    print()
    print(text)
    if args.markdown:
        C.update_markdown(args.markdown, TITLE, text + "\n\n" + C.machine_line())


if __name__ == "__main__":
    main()
