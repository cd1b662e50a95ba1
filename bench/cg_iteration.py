#!/usr/bin/env python
"""One CG iteration: ``relsim.linalg.cg`` against ``scipy.sparse.linalg.cg`` on the same matrix.

The matrix: the P1 stiffness matrix of -Laplace u = f on ``tetmesh.box(n)`` ((n+1)^3 rows,
default n = 30: 29,791 rows), assembled by an element kernel into
``linalg.SparseMatrix.from_elements(T.v, name="K")`` (the kernel of tests/linalg/fem.py), with
zero Dirichlet values imposed on the box's six sides (``K.dirichlet(sides, b=V.b)``); SciPy
gets ``K.to_scipy()`` and a copy of ``V.b``.

A solve is timed with ``rtol = atol = 0`` (so it runs exactly ``maxiter`` iterations) from
x = 0, at ``maxiter`` m1 = 20 and m2 = 220 (``--iters``); the cost of one iteration, without the
set-up (r = b - A x, the first sums), is ``(t(m2) - t(m1)) / (m2 - m1)``, taken within each
repeat (the two solves of a repeat ran back to back). Variants, interleaved, at each thread count
t (``--threads``: 1 2):

* relsim: ``linalg.cg(K, V.b, V.x, rtol=0.0, atol=0.0, maxiter=m, config=cfg)`` with
  ``cfg = rs.Config(target="cpu", threads=t, segments="now")`` (defaults otherwise: the kernels
  over the 29,791 rows run their parallel variants, ``parallel_threshold`` 4096); its dot
  products are exact Global sums; each iteration is a captured step (one compiled call,
  compiled at the first solve, not in the background);
* captured solve: the same iterations written as a user writes a solver to run as one compiled
  call (`solve_step`: kernels for r, p, the dot products and updates, ``K.matvec``, the scalars
  by ``rs.assign``, the ``m`` iterations by ``rs.while_loop``, captured by ``rs.capture``);
  checked to give linalg.cg's x bit for bit;
* scipy: ``scipy.sparse.linalg.cg(A, b, x0=zeros, rtol=0.0, atol=0.0, maxiter=m)`` (SciPy >= 1.12
  spells the tolerance ``rtol``, older ones ``tol``: both handled) with OpenBLAS (numpy's dots and
  norms) on 1 thread; at t > 1 also on t threads (``scipy, t BLAS threads``). SciPy's sparse
  product is serial whatever t is. On a 2-core machine that other jobs load, a 2-thread OpenBLAS
  call often waits a scheduler tick for its worker: ``relsim / scipy`` divides by the faster of
  the two SciPy figures of each repeat.

Checked first: the iterates agree (x after m1 iterations, relsim against SciPy, to ~1e-12
relative). ``--no-breakdown`` skips the per-operation table (relsim's ``K.operator()`` alone,
a dot product ``g += v.x * v.y`` launched and read, against ``A @ x`` and ``numpy.dot``).

Usage::

    python bench/cg_iteration.py [--n 30] [--threads 1 2] [--iters 20 220] [--repeats 10]
                                 [--no-breakdown] [--markdown docs/benchmarks/history.md]
                                 [--chart PATH]
"""
from __future__ import annotations

import argparse
import inspect
import os
import statistics
import tempfile
import time

import _blas
import _common as C
import numba
import numpy as np
import scipy.sparse.linalg as spla

import relsim as rs
from relsim import linalg
from relsim.domains import tetmesh

TITLE = "One CG iteration: relsim.linalg vs scipy"
SIDES = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")

pq = rs.Global(rs.f64, 0.0)  # the breakdown's dot product


@rs.kernel
def assemble(t):
    p0 = t.v[0].pos
    J = rs.mat(3, 3)(t.v[1].pos - p0, t.v[2].pos - p0, t.v[3].pos - p0)
    vol = rs.det(J) / 6.0
    Ji = rs.inverse(J)
    g1 = Ji[:, 0]
    g2 = Ji[:, 1]
    g3 = Ji[:, 2]
    G = rs.mat(4, 3)(-(g1 + g2 + g3), g1, g2, g3)
    fsum = t.v[0].f + t.v[1].f + t.v[2].f + t.v[3].f
    for k in rs.static(range(16)):  # entry (i, j) = (k // 4, k % 4)
        t.K[k].a += vol * rs.dot(G[k // 4], G[k % 4])
    for i in rs.static(range(4)):
        t.v[i].b += vol / 20.0 * (t.v[i].f + fsum)


@rs.kernel
def dot(v):
    pq += v.x * v.b


# a whole solve captured as a user writes it (`solve_step`): rs.capture and rs.while_loop
rr, rr_new, curv, alpha, beta = (rs.Global(rs.f64, 0.0) for _ in range(5))


@rs.kernel
def cg_start(v):  # x = 0, r = p = b, rr = b.b
    v.x = 0.0
    v.r = v.b
    v.p = v.b
    rr += v.b * v.b


@rs.kernel
def cg_curvature(v):
    curv += v.p * v.Ap


@rs.kernel
def cg_update(v):
    v.x = v.x + alpha * v.p
    v.r = v.r - alpha * v.Ap
    rr_new += v.r * v.r


@rs.kernel
def cg_direction(v):
    v.p = v.r + beta * v.p


def solve_step(V, K, m, cfg):
    """`m` CG iterations from x = 0 as one captured step (the first call records them)."""
    matvec = linalg.Operator(K.matvec(V.p, V.Ap), x=V.p, y=V.Ap)

    def iteration():
        matvec(cfg)
        rs.assign(curv, 0.0)
        V.foreach(cg_curvature, cfg)
        rs.assign(alpha, rr / curv)
        rs.assign(rr_new, 0.0)
        V.foreach(cg_update, cfg)
        rs.assign(beta, rr_new / rr)
        rs.assign(rr, rr_new)
        V.foreach(cg_direction, cfg)

    def solve():
        rs.assign(rr, 0.0)
        V.foreach(cg_start, cfg)
        rs.while_loop(None, iteration, m)
    return rs.capture(solve)


def poisson(n: int):
    """(V, K, sides): the stiffness matrix and load vector (f = 1 + x y z) of tetmesh.box(n),
    zero values imposed on its sides."""
    mesh = tetmesh.box(n)
    V, T = mesh.vertices, mesh.tets
    for name in ("f", "b", "x", "r", "p", "Ap"):
        V.new_field(name, rs.f64)
    P = V.pos.numpy()
    V.f.load(1.0 + P[:, 0] * P[:, 1] * P[:, 2])
    K = linalg.SparseMatrix.from_elements(T.v, name="K")
    T.foreach(assemble)
    sides = np.unique(np.concatenate([V.subsets[s].rows for s in SIDES]))
    K.dirichlet(sides, b=V.b, values=0.0)
    return V, K, sides


def system(n: int):
    """(V, K, sides, A, b): `poisson(n)` (compiled into a fresh cache directory unless
    RELSIM_CACHE_DIR names one), SciPy's copy of K and of the right-hand side."""
    os.environ.setdefault("RELSIM_CACHE_DIR", tempfile.mkdtemp(prefix="relsim-bench-"))
    V, K, sides = poisson(n)
    return V, K, sides, K.to_scipy(), V.b.numpy(copy=True)


def scipy_cg():
    """scipy.sparse.linalg.cg as f(A, b, maxiter) from x0 = 0 with zero tolerances."""
    tol = "rtol" if "rtol" in inspect.signature(spla.cg).parameters else "tol"

    def run(A, b, maxiter):
        x, info = spla.cg(A, b, x0=np.zeros_like(b), atol=0.0, maxiter=maxiter, **{tol: 0.0})
        if info != maxiter:
            raise SystemExit(f"scipy cg returned info={info}, expected {maxiter} iterations")
        return x
    return run, tol


def ms3(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def per_iteration(short: list, long: list, iters: int) -> list:
    """Per repeat: (t(m2) - t(m1)) / (m2 - m1)."""
    return [(b - a) / iters for a, b in zip(short, long)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=30, help="cubes per side of the box mesh")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--iters", type=int, nargs=2, default=[20, 220], metavar=("M1", "M2"),
                    help="the two maxiter values; one iteration = (t(M2) - t(M1)) / (M2 - M1)")
    ap.add_argument("--repeats", type=int, default=10, help="timed repeats per variant")
    ap.add_argument("--no-breakdown", dest="breakdown", action="store_false",
                    help="skip the per-operation breakdown")
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    C.add_chart_argument(ap, "cg_iteration")
    args = ap.parse_args(argv)
    m1, m2 = args.iters
    if not 0 <= m1 < m2:
        raise SystemExit("--iters M1 M2 needs 0 <= M1 < M2")

    t0 = time.perf_counter()
    V, K, sides, A, b = system(args.n)
    zeros = np.zeros(V.size)
    sp_run, tol_name = scipy_cg()
    op = K.operator()
    print(f"set-up {time.perf_counter() - t0:.1f} s: {K.n:,} rows, {A.nnz:,} nonzeros "
          f"({K.entries.size:,} entries stored), {len(sides):,} Dirichlet rows", flush=True)

    def rel_cg(m, cfg):
        V.x.load(zeros)
        info = linalg.cg(K, V.b, V.x, rtol=0.0, atol=0.0, maxiter=m, config=cfg)
        if info.iterations != m:
            raise SystemExit(f"relsim cg did {info.iterations} iterations, expected {m}")

    rows, breakdown, res = [], [], {}
    for t in args.threads:
        if t > numba.config.NUMBA_NUM_THREADS:
            raise SystemExit(f"--threads {t} > NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS}")
        rs.configure(target="cpu", threads=t)  # Numba's pool: launches need not switch it
        cfg = rs.Config(target="cpu", threads=t, segments="now")  # (compiled when first replayed)
        blas = _blas.set_threads(1)
        for m in (m1, m2, m1, m2, m1):  # warm up: compile, bind, record (cg's captured steps:
            rel_cg(m, cfg)  # each iteration's, then the whole loop's, per maxiter)
        sp_x = sp_run(A, b, m1)
        err = np.abs(V.x.numpy() - sp_x).max() / np.abs(sp_x).max()
        if not err < 1e-9:
            raise SystemExit(f"relsim and scipy iterates differ after {m1} iterations: {err:.3g}")
        sp_run(A, b, m2)
        rel_cg(m2, cfg)
        x_cg = V.x.numpy(copy=True)
        solves = {m: solve_step(V, K, m, cfg) for m in (m1, m2)}
        for m in (m1, m2, m1, m2):  # record; replay (compiled at the first)
            solves[m]()
        same = "yes" if np.array_equal(V.x.numpy(), x_cg) else "NO"  # (m2 iterations each)

        def one_blas():
            _blas.set_threads(1)

        def t_blas(t=t):
            _blas.set_threads(t)

        # after a t-thread BLAS run, relsim's waits for OpenBLAS's spinning workers to sleep
        calm = _blas.quiet if t > 1 and blas else None
        variants = {}  # name -> (set-up or None, fn); a repeat runs each once, interleaved
        for m in (m1, m2):
            variants[f"relsim {m}"] = (calm, lambda m=m, cfg=cfg: rel_cg(m, cfg))
            variants[f"captured {m}"] = (calm, solves[m])
            variants[f"scipy {m}"] = (one_blas if blas else None, lambda m=m: sp_run(A, b, m))
            if t > 1 and blas:
                variants[f"scipy_t {m}"] = (t_blas, lambda m=m: sp_run(A, b, m))
        r = _blas.interleaved(variants, args.repeats)
        it = {k: per_iteration(r[f"{k} {m1}"], r[f"{k} {m2}"], m2 - m1)
              for k in ("relsim", "captured", "scipy", "scipy_t") if f"{k} {m1}" in r}
        best = [min(a, c) for a, c in zip(it["scipy"], it.get("scipy_t", it["scipy"]))]
        res[t] = it
        med = {k: statistics.median(v) for k, v in it.items()}
        ratio = statistics.median(a / c for a, c in zip(it["relsim"], best))
        rows.append([t, f"{ms3(med['relsim'])} ({ms3(min(it['relsim']))})",
                     f"{ms3(med['scipy'])} ({ms3(min(it['scipy']))})",
                     f"{ms3(med['scipy_t'])} ({ms3(min(it['scipy_t']))})" if "scipy_t" in med
                     else "(same)",
                     f"{ratio:.2f}",
                     f"{ms3(med['captured'])} ({ms3(min(it['captured']))})",
                     f"{statistics.median(a / c for a, c in zip(it['captured'], best)):.2f}",
                     same,
                     f"{C.ms(statistics.median(r[f'relsim {m1}']))}",
                     f"{C.ms(statistics.median(r[f'scipy {m1}']))}",
                     f"{err:.1e}"])
        print(f"  {t} thread(s): done", flush=True)

        if args.breakdown:
            x, y = V.x.numpy(), V.b.numpy()

            def rel_dot(cfg=cfg):
                pq.value = 0.0
                V.foreach(dot, cfg)
                return pq.value

            ops = {"relsim K.operator() (y = K x)": (None, lambda cfg=cfg: op(cfg)),
                   "scipy A @ x": (one_blas if blas else None, lambda x=x: A @ x),
                   "relsim dot (g += v.x * v.b; launch + read)": (None, rel_dot),
                   "numpy.dot(x, b), 1 BLAS thread": (one_blas if blas else None,
                                                      lambda x=x, y=y: np.dot(x, y))}
            for _, fn in ops.values():
                for _ in range(10):
                    fn()
            bres = _blas.interleaved(ops, max(args.repeats, 5), number=20)
            for name, v in bres.items():
                breakdown.append([t, name, C.us(statistics.median(v)), C.us(min(v))])

    variant = "parallel" if K.n >= cfg.parallel_threshold else "serial"
    headers = ["threads", "relsim ms/iter", "scipy ms/iter (1 BLAS thread)",
               "scipy ms/iter (t BLAS threads)", "relsim / scipy",
               "captured solve ms/iter", "captured / scipy", "captured x = linalg.cg's",
               f"relsim solve m={m1} ms",
               f"scipy solve m={m1} ms", "relsim vs scipy x (rel. diff)"]
    out = [f"Machine: {C.machine_line()}.",
           f"Matrix: P1 stiffness of -Laplace u = f on `tetmesh.box({args.n})`, zero Dirichlet "
           f"values on the six sides: {K.n:,} rows, {A.nnz:,} nonzeros ({len(sides):,} "
           f"Dirichlet rows, identity there). One iteration = (t(maxiter={m2}) - "
           f"t(maxiter={m1})) / {m2 - m1}, both solves from x = 0 with rtol = atol = 0, "
           f"taken per repeat; median (min) over {args.repeats} interleaved repeats. relsim: "
           f"`linalg.cg(K, V.b, V.x, rtol=0.0, atol=0.0, maxiter=m, config=rs.Config("
           f"target=\"cpu\", threads=t, segments=\"now\"))` (each iteration one compiled "
           f"call; {variant} variants: {K.n:,} rows "
           f"{'>=' if variant == 'parallel' else '<'} parallel_threshold "
           f"{cfg.parallel_threshold}; dot products are exact Global sums). scipy: "
           f"`scipy.sparse.linalg.cg(K.to_scipy(), b, x0=0, {tol_name}=0, atol=0, "
           f"maxiter=m)` (SciPy's sparse product is serial; "
           + ("OpenBLAS, for its dots and norms, on 1 thread, and at t = 2 also on 2; at t > 1 "
              "relsim's runs start once OpenBLAS's workers sleep, `_blas.quiet`, untimed). "
              if blas else "BLAS threads not controlled). ")
           + "`relsim / scipy`: median over repeats of relsim's per-iteration time over the "
           "faster of the SciPy figures of that repeat (`captured / scipy` likewise). Captured "
           "solve: the whole solve as one captured step (`rs.capture`, the iterations by "
           "`rs.while_loop`: one compiled call; `solve_step`), its x checked against "
           "linalg.cg's bit for bit. The solve columns include the set-up "
           f"(r = b - A x, first sums) and {m1} iterations.",
           "", C.table(headers, rows)]
    if breakdown:
        out += ["", "Per operation (same vectors; median (min) over interleaved batches of 20 "
                "calls, us per call):", "",
                C.table(["threads", "operation", "median us", "min us"], breakdown)]
    text = "\n".join(out)
    print(text)
    C.chart(args.chart, f"One CG iteration ({K.n:,} rows)",
            [f"{t} thread{'s' if t > 1 else ''}" for t in args.threads],
            {"relsim": [statistics.median(res[t]["relsim"]) * 1e3 for t in args.threads],
             "scipy (1 BLAS thread)": [statistics.median(res[t]["scipy"]) * 1e3
                                       for t in args.threads]},
            "ms per iteration (median)")
    if args.markdown:
        C.update_markdown(args.markdown, TITLE, text)


if __name__ == "__main__":
    main()
