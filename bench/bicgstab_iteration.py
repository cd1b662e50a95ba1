#!/usr/bin/env python
"""One BiCGSTAB iteration: ``relsim.linalg.bicgstab`` captured (its default: the whole solve one
captured step, on the cpu one compiled call) and launch by launch (``callback=``), against
``scipy.sparse.linalg.bicgstab`` on the same matrix.

The matrix and right-hand side are `cg_iteration.py`'s (the P1 stiffness matrix of -Laplace u =
f on ``tetmesh.box(n)``, zero Dirichlet values on its sides; BiCGSTAB does not need the
symmetry). A solve is timed with ``rtol = atol = 0`` from x = 0 at ``maxiter`` m1 and m2
(``--iters``); one iteration is ``(t(m2) - t(m1)) / (m2 - m1)`` within each repeat, variants
interleaved, SciPy's dots and norms on one OpenBLAS thread. Checked first: the captured and the
launch-by-launch solves give the same x bit for bit, and relsim's x agrees with SciPy's.

Usage::

    python bench/bicgstab_iteration.py [--n 10 30] [--threads 1 2] [--iters 10 60]
                                       [--repeats 7]
"""
from __future__ import annotations

import argparse
import inspect
import statistics
import time

import _blas
import numpy as np
import scipy.sparse.linalg as spla
from cg_iteration import ms3, per_iteration, system

import relsim as rs
from relsim import linalg


def scipy_bicgstab():
    """scipy.sparse.linalg.bicgstab as f(A, b, maxiter), from x0 = 0, zero tolerances."""
    tol = "rtol" if "rtol" in inspect.signature(spla.bicgstab).parameters else "tol"

    def run(A, b, maxiter):
        x, info = spla.bicgstab(A, b, x0=np.zeros_like(b), atol=0.0, maxiter=maxiter,
                                **{tol: 0.0})
        if info != maxiter:
            raise SystemExit(f"scipy bicgstab returned info={info}, expected {maxiter}")
        return x
    return run


def ratio(a: list, b: list) -> str:
    """The median over repeats of a / b."""
    return f"{statistics.median(x / y for x, y in zip(a, b)):.2f}"


def measure(n: int, threads: list, m1: int, m2: int, repeats: int, sp_run) -> list:
    """The table's rows for `tetmesh.box(n)`'s matrix, one per thread count."""
    t0 = time.perf_counter()
    V, K, _sides, A, b = system(n)
    zeros = np.zeros(V.size)
    print(f"n={n}: set-up {time.perf_counter() - t0:.1f} s, {K.n:,} rows", flush=True)

    def solve(m, cfg, captured):
        V.x.load(zeros)
        kw = {} if captured else {"callback": lambda it, norm: None}
        info = linalg.bicgstab(K, V.b, V.x, rtol=0.0, atol=0.0, maxiter=m, config=cfg, **kw)
        if info.iterations != m:
            raise SystemExit(f"relsim bicgstab did {info.iterations} iterations, not {m}")
        return V.x.numpy(copy=True)

    rows = []
    for t in threads:
        rs.configure(target="cpu", threads=t)
        cfg = rs.Config(target="cpu", threads=t, segments="now")
        _blas.set_threads(1)
        for m in (m1, m2, m1, m2):  # (compile, record, compile the captured solves)
            solve(m, cfg, True)
            solve(m, cfg, False)
        same = np.array_equal(solve(m2, cfg, True), solve(m2, cfg, False))
        sx = sp_run(A, b, m1)
        err = np.abs(solve(m1, cfg, True) - sx).max() / np.abs(sx).max()
        if not same or not err < 1e-8:
            raise SystemExit(f"n={n}, {t} thread(s): captured = launched: {same}; relsim vs "
                             f"scipy after {m1} iterations: {err:.3g}")
        variants = {}
        for m in (m1, m2):
            variants[f"captured {m}"] = (None, lambda m=m, cfg=cfg: solve(m, cfg, True))
            variants[f"launched {m}"] = (None, lambda m=m, cfg=cfg: solve(m, cfg, False))
            variants[f"scipy {m}"] = (None, lambda m=m: sp_run(A, b, m))
        r = _blas.interleaved(variants, repeats)
        it = {k: per_iteration(r[f"{k} {m1}"], r[f"{k} {m2}"], m2 - m1)
              for k in ("captured", "launched", "scipy")}
        med = {k: statistics.median(v) for k, v in it.items()}
        rows.append([f"{K.n:,}", t, ms3(med["captured"]), ms3(med["launched"]),
                     ms3(med["scipy"]), ratio(it["captured"], it["scipy"]),
                     ratio(it["launched"], it["captured"]), "yes", f"{err:.1e}"])
        print(f"  {t} thread(s): done", flush=True)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10, 30],
                    help="cubes per side of the box mesh (one table row per size)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--iters", type=int, nargs=2, default=[10, 60], metavar=("M1", "M2"))
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    m1, m2 = args.iters
    sp_run = scipy_bicgstab()
    rows = [row for n in args.n
            for row in measure(n, args.threads, m1, m2, args.repeats, sp_run)]
    headers = ["rows", "threads", "captured ms/iter", "launch by launch ms/iter",
               "scipy ms/iter", "captured / scipy", "launched / captured",
               "captured x = launched x", "relsim vs scipy x (rel. diff)"]
    print(f"\nOne BiCGSTAB iteration (median of {args.repeats} repeats, (t({m2}) - t({m1})) / "
          f"{m2 - m1}); {_blas.describe()}\n")
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for row in rows:
        print("| " + " | ".join(map(str, row)) + " |")


if __name__ == "__main__":
    main()
