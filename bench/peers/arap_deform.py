#!/usr/bin/env python
"""As-rigid-as-possible deformation (`relsim run arap`): relsim.optimize.least_squares
(Levenberg-Marquardt, each step by cg on the normal equations with J assembled from generated
kernels) against SciPy's least_squares with an analytic sparse Jacobian and the settings of
the SciPy Cookbook's large sparse example (large-scale bundle adjustment: ``method="trf"``,
``x_scale="jac"``; ``tr_solver="lsmr"`` for the steps), on the same mesh, residuals, weights
and start (the rest shape), both stopping at ftol = xtol = gtol = 1e-12.

Per size (``--sizes NXxNY``, default the gallery's 40x20 and 448x224: 101,025 vertices, 303,075
unknowns) and thread count, relsim's whole solve is timed once after a warm-up at the smallest
size (compilation), with its iterations, cg iterations and final cost. SciPy runs on one thread
(its sparse products and lsmr are serial; BLAS pinned to 1 thread); above ``--scipy-full``
vertices (default 10,000; unscaled, SciPy took 117 s at 7,381) it stops after
``--scipy-iterations`` iterations, which times its iteration but not its solve. The table
gives each solver's seconds per outer iteration (Levenberg-Marquardt's or trf's: each solves one
linearised system inexactly, relsim's by Jacobi-preconditioned cg, SciPy's by lsmr) and, where
SciPy ran to its end, the two final costs' relative difference.

Ceres (the `pyceres` wheel) is not a peer here: its Python API states cost functions as Python
callbacks, one call per residual block and evaluation, which would time the interpreter rather
than Ceres's solver.

Usage::

    relsim bench arap [--sizes 40x20 448x224] [--threads 1 2] [--markdown PATH]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: _common, _blas
import _blas  # noqa: E402
import _common as C  # noqa: E402
import numpy as np  # noqa: E402,F401
import scipy.optimize  # noqa: E402,F401 (its OpenBLAS mapped before _blas pins it)

import relsim as rs  # noqa: E402
from relsim import optimize  # noqa: E402

TITLE = "As-rigid-as-possible deformation against SciPy (relsim bench arap)"
WEIGHT = 100.0  # the handles' weight (`relsim run arap`'s default)


def _size(text: str) -> tuple:
    try:
        nx, ny = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a size is NXxNY (e.g. 448x224), got {text!r}") from None
    if nx < 2 or ny < 2:
        raise argparse.ArgumentTypeError(f"a size needs at least 2 cells a side, got {text!r}")
    return nx, ny


def relsim_solve(arap, nx: int, ny: int, threads: int, iterations=None) -> dict:
    """One relsim solve from the rest shape on `threads` threads (at most `iterations`
    iterations when given): its figures."""
    rs.configure(target="cpu", threads=threads)
    mesh, run, residuals, unknowns, rest, ht = arap.build(nx, ny)
    limit = {} if iterations is None else {"max_iterations": iterations}
    t0 = time.perf_counter()
    info = optimize.least_squares(run, residuals, unknowns, weights={residuals[1]: WEIGHT},
                                  **limit)
    seconds = time.perf_counter() - t0
    return dict(vertices=mesh.vertices.size, seconds=seconds, iterations=info.iterations,
                inner=info.inner_iterations, cost=info.cost, converged=info.converged,
                reason=info.reason)


def scipy_run(arap, nx: int, ny: int, iterations) -> dict:
    """SciPy's solve from the rest shape (at most `iterations` iterations when given)."""
    mesh, _, _, _, rest, ht = arap.build(nx, ny)
    t0 = time.perf_counter()
    sol = arap.scipy_solve(mesh, rest, ht, WEIGHT, max_nfev=iterations)
    seconds = time.perf_counter() - t0
    return dict(seconds=seconds, iterations=int(sol.njev), cost=0.5 * float(sol.fun @ sol.fun),
                finished=sol.status > 0, status=int(sol.status))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="relsim bench arap", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=_size, nargs="+", default=[(40, 20), (448, 224)],
                    help="meshes as NXxNY cells (default: 40x20 448x224)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--scipy-full", type=int, default=10_000,
                    help="vertices up to which SciPy runs to its end (default 10000)")
    ap.add_argument("--scipy-iterations", type=int, default=5,
                    help="SciPy's iterations above --scipy-full (default 5)")
    ap.add_argument("--markdown", metavar="PATH",
                    help="update this benchmark's section of a markdown file")
    args = ap.parse_args(argv)
    from relsim_simulations import arap
    _blas.set_threads(1)
    relsim_solve(arap, 4, 2, args.threads[0])  # (compiles the kernels: the same at any size)
    rows = []
    for nx, ny in args.sizes:
        vertices = (nx + 1) * (ny + 1)
        limit = None if vertices <= args.scipy_full else args.scipy_iterations
        sci = scipy_run(arap, nx, ny, limit)
        print(f"{nx}x{ny}: {vertices:,} vertices; scipy {sci['iterations']} iterations, "
              f"{sci['seconds']:.2f} s, cost {sci['cost']:.10g}"
              f"{'' if sci['finished'] else ' (stopped: iteration limit)'}", flush=True)
        sci_per = sci["seconds"] / max(sci["iterations"], 1)
        rows.append([f"{nx}x{ny}", f"{vertices:,}", "scipy trf+lsmr", "1",
                     str(sci["iterations"]) + ("" if sci["finished"] else " (limit)"),
                     f"{sci['seconds']:.2f}", f"{sci_per:.3f}", f"{sci['cost']:.10g}", ""])
        for t in args.threads:  # (as many iterations as SciPy took, then to the end)
            for cap in ((limit, None) if limit else (None,)):
                r = relsim_solve(arap, nx, ny, t, cap)
                per = r["seconds"] / max(r["iterations"], 1)
                diff = f"{(r['cost'] - sci['cost']) / sci['cost']:+.1e}" \
                    if sci["finished"] or cap else "(scipy stopped early)"
                print(f"  relsim, {t} thread(s){'' if cap is None else f', {cap} iterations'}:"
                      f" {r['iterations']} iterations ({r['inner']} cg), {r['seconds']:.2f} s, "
                      f"{per:.3f} s/iteration ({sci_per / per:.2f}x scipy's speed an "
                      f"iteration), cost {r['cost']:.10g}, {r['reason']}; against scipy's cost "
                      f"{diff}", flush=True)
                rows.append([f"{nx}x{ny}", f"{vertices:,}", "relsim lm+cg", str(t),
                             f"{r['iterations']}{'' if cap is None else ' (limit)'} "
                             f"({r['inner']} cg)", f"{r['seconds']:.2f}", f"{per:.3f}",
                             f"{r['cost']:.10g}", diff])
                if cap is None and not r["converged"]:
                    print(f"  relsim did not converge: {r['reason']}")
    rs.configure(threads=None)
    text = C.table(["mesh", "vertices", "solver", "threads", "iterations", "s", "s/iteration",
                    "final cost", "cost vs scipy"], rows)
    print()
    print(text)
    print(C.machine_line())
    if args.markdown:
        C.update_markdown(args.markdown, TITLE, text + "\n\n" + C.machine_line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
