#!/usr/bin/env python
"""One GMRES iteration: ``relsim.linalg.gmres`` against ``scipy.sparse.linalg.gmres``.

The matrix and right-hand side are those of ``bench/cg_iteration.py`` (P1 stiffness of
-Laplace u = f on ``tetmesh.box(n)``, zero Dirichlet values on its sides; default n = 30:
29,791 rows). Both solvers restart every ``--restart`` iterations (default 30) and run with
``rtol = atol = 0`` from x = 0, so a solve of m iterations is m / restart whole cycles (SciPy's
``maxiter`` counts cycles, relsim's iterations). One iteration, averaged over whole cycles
(the Gram-Schmidt work grows within a cycle), is ``(t(m2) - t(m1)) / (m2 - m1)`` per repeat,
m1 = 1 and m2 = 3 cycles (``--cycles``). relsim: ``linalg.gmres(K, V.b, V.x, rtol=0.0, atol=0.0,
restart=r, maxiter=m, config=rs.Config(target="cpu", threads=t))`` (exact Global sums: CGS2
with the projections summed 8 basis vectors per launch); scipy: ``scipy.sparse.linalg.gmres(A,
b, x0=0, rtol=0, atol=0, restart=r, maxiter=m // r)`` with OpenBLAS on 1 thread (its modified
Gram-Schmidt is a Python loop of BLAS calls; its sparse product is serial). Checked first: the
two solutions after one cycle agree to 1e-9 relative.

Usage::

    python bench/gmres_iteration.py [--n 30] [--threads 1 2] [--restart 30] [--cycles 1 3]
                                    [--repeats 5] [--markdown docs/benchmarks/history.md]
                                    [--chart PATH]
"""
from __future__ import annotations

import argparse
import statistics
import time

import _blas
import _common as C
import numpy as np
import scipy.sparse.linalg as spla
from cg_iteration import ms3, per_iteration, system

import relsim as rs
from relsim import linalg

TITLE = "One GMRES iteration: relsim.linalg vs scipy"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=30, help="cubes per side of the box mesh")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--restart", type=int, default=30)
    ap.add_argument("--cycles", type=int, nargs=2, default=[1, 3], metavar=("C1", "C2"))
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats per variant")
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    C.add_chart_argument(ap, "gmres_iteration")
    args = ap.parse_args(argv)
    c1, c2 = args.cycles
    if not 0 < c1 < c2:
        raise SystemExit("--cycles C1 C2 needs 0 < C1 < C2")
    r = args.restart
    m1, m2 = c1 * r, c2 * r

    t0 = time.perf_counter()
    V, K, _, A, b = system(args.n)
    zeros = np.zeros(V.size)
    print(f"set-up {time.perf_counter() - t0:.1f} s: {K.n:,} rows, {A.nnz:,} nonzeros",
          flush=True)

    def rel(m, cfg):
        V.x.load(zeros)
        info = linalg.gmres(K, V.b, V.x, rtol=0.0, atol=0.0, restart=r, maxiter=m, config=cfg)
        if info.iterations != m:
            raise SystemExit(f"relsim gmres did {info.iterations} iterations, expected {m}")

    def sp(m):
        x, info = spla.gmres(A, b, x0=zeros, rtol=0.0, atol=0.0, restart=r, maxiter=m // r)
        return x

    rows, medians = [], {"relsim": [], "scipy (1 BLAS thread)": []}
    for t in args.threads:
        rs.configure(target="cpu", threads=t)
        cfg = rs.Config(target="cpu", threads=t)
        blas = _blas.set_threads(1)
        t_first = time.perf_counter()
        rel(m1, cfg)  # warm up: compile, bind
        first = time.perf_counter() - t_first
        err = np.abs(V.x.numpy() - sp(m1)).max() / np.abs(sp(m1)).max()
        if not err < 1e-9:
            raise SystemExit(f"relsim and scipy solutions differ after {m1} iterations: "
                             f"{err:.3g}")

        def one_blas():
            _blas.set_threads(1)

        variants = {}
        for m in (m1, m2):
            variants[f"relsim {m}"] = (None, lambda m=m, cfg=cfg: rel(m, cfg))
            variants[f"scipy {m}"] = (one_blas if blas else None, lambda m=m: sp(m))
        res = _blas.interleaved(variants, args.repeats)
        it = {k: per_iteration(res[f"{k} {m1}"], res[f"{k} {m2}"], m2 - m1)
              for k in ("relsim", "scipy")}
        ratio = statistics.median(a / c for a, c in zip(it["relsim"], it["scipy"]))
        medians["relsim"].append(statistics.median(it["relsim"]) * 1e3)
        medians["scipy (1 BLAS thread)"].append(statistics.median(it["scipy"]) * 1e3)
        rows.append([t, f"{ms3(statistics.median(it['relsim']))} ({ms3(min(it['relsim']))})",
                     f"{ms3(statistics.median(it['scipy']))} ({ms3(min(it['scipy']))})",
                     f"{ratio:.2f}", f"{first:.1f}", f"{err:.1e}"])
        print(f"  {t} thread(s): done", flush=True)
    text = "\n".join([
        f"Machine: {C.machine_line()}.",
        f"Command: `python bench/gmres_iteration.py --n {args.n} --restart {r} --cycles {c1} "
        f"{c2} --repeats {args.repeats}`. Matrix: bench/cg_iteration.py's ({K.n:,} rows, "
        f"{A.nnz:,} nonzeros). One iteration = (t({m2} iterations) - t({m1})) / {m2 - m1}, "
        f"whole cycles of {r}; median (min) over {args.repeats} interleaved repeats. The first "
        f"solve column: relsim's first {m1}-iteration solve in a fresh cache directory "
        f"(compiling its kernels).", "",
        C.table(["threads", "relsim ms/iter", "scipy ms/iter (1 BLAS thread)", "relsim / scipy",
                 "relsim first solve s", "relsim vs scipy x (rel. diff)"], rows)])
    print(text)
    C.chart(args.chart, f"One GMRES({r}) iteration ({K.n:,} rows)",
            [f"{t} thread{'s' if t > 1 else ''}" for t in args.threads], medians,
            "ms per iteration (median)")
    if args.markdown:
        C.update_markdown(args.markdown, TITLE, text)


if __name__ == "__main__":
    main()
