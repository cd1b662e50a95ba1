#!/usr/bin/env python
"""A 7-point periodic stencil on an n^3 grid: relsim vs a hand-written Numba triple loop.

The relsim kernel, over a grid relation of ``--n``^3 cells (``C.set_grid((n, n, n), True)``)::

    c.v = c(1, 0, 0).u + c(-1, 0, 0).u + c(0, 1, 0).u + c(0, -1, 0).u \\
        + c(0, 0, 1).u + c(0, 0, -1).u - 6.0 * c.u

The peer is what a user writes by hand: a triple loop over a 3-D array, ``prange`` on the
outermost axis, periodic neighbours by ``i + 1 if i < n - 1 else 0``. Same additions in the same
order, so the results must be bitwise identical (checked). Times per sweep, interleaved in one
process, at each ``--threads`` count (relsim: ``Config(threads=t)``; Numba:
``numba.set_num_threads``); also relsim with the row-at-a-time lowering (``--row-loop``, the
lowering grid relations had before the nested loops), for the record.

Usage::

    python bench/grid_stencil.py [--n 96] [--threads 1 2] [--repeats 15] [--markdown PATH]
"""
from __future__ import annotations

import argparse

import _common as C
import numba
import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True, error_model="numpy", boundscheck=False)
def hand_written(u, v):
    nz, ny, nx = u.shape
    for k in prange(nz):
        kp = k + 1 if k < nz - 1 else 0
        km = k - 1 if k > 0 else nz - 1
        for j in range(ny):
            jp = j + 1 if j < ny - 1 else 0
            jm = j - 1 if j > 0 else ny - 1
            for i in range(nx):
                ip = i + 1 if i < nx - 1 else 0
                im = i - 1 if i > 0 else nx - 1
                v[k, j, i] = u[k, j, ip] + u[k, j, im] + u[k, jp, i] + u[k, jm, i] + \
                    u[kp, j, i] + u[km, j, i] - 6.0 * u[k, j, i]


def build(n):
    import relsim as rs
    G = rs.Relation("G", n ** 3)
    G.set_grid((n, n, n), True)
    G.new_field("u", rs.f64).load(np.random.default_rng(5).standard_normal(n ** 3))
    G.new_field("v", rs.f64, init=0.0)

    @rs.kernel
    def laplace(c):
        c.v = c(1, 0, 0).u + c(-1, 0, 0).u + c(0, 1, 0).u + c(0, -1, 0).u \
            + c(0, 0, 1).u + c(0, 0, -1).u - 6.0 * c.u

    return G, laplace


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=96)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--number", type=int, default=5, help="calls per timed batch")
    ap.add_argument("--row-loop", action="store_true",
                    help="also time relsim's row-at-a-time lowering (a subset of all rows)")
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    C.add_chart_argument(ap, "grid_stencil")
    args = ap.parse_args(argv)
    import relsim as rs
    n = args.n
    G, laplace = build(n)
    u3 = G.u.numpy().reshape(n, n, n).copy()
    v3 = np.zeros_like(u3)
    hand_written(u3, v3)
    if args.row_loop:  # all rows, but in an order no box has: the row-at-a-time lowering
        G.subset("scrambled", np.concatenate([np.arange(1, n ** 3), [0]]))
    rows, series = [], {}
    for t in args.threads:
        cfg = rs.Config(threads=t)
        G.foreach(laplace, cfg)
        if not np.array_equal(G.v.numpy().view(np.uint64), v3.reshape(-1).view(np.uint64)):
            raise SystemExit("relsim and the hand-written loop differ")

        def peer(t=t):
            numba.set_num_threads(t)
            hand_written(u3, v3)

        variants = {"hand-written Numba": peer,
                    "relsim": lambda cfg=cfg: G.foreach(laplace, cfg)}
        if args.row_loop:
            variants["relsim row loop"] = lambda cfg=cfg: G.scrambled.foreach(laplace, cfg)
        times = C.interleaved(variants, args.repeats, args.number)
        base = C.summary(times["hand-written Numba"])[0]
        for name, samples in times.items():
            lo, med = C.summary(samples)
            rows.append([t, name, C.ms(lo), C.ms(med), f"{lo / base:.2f}",
                         f"{C.paired_ratio(samples, times['hand-written Numba']):.2f}"])
            series.setdefault(name, []).append(lo * 1e3)
    text = "\n".join([C.machine_line(), "",
                      f"{n}^3 periodic 7-point stencil, ms per sweep; results bitwise "
                      f"identical to the hand-written loop (checked).", "",
                      C.table(["threads", "variant", "min ms", "median ms",
                               "min / hand-written", "paired median ratio"], rows)])
    print(text)
    C.chart(args.chart, f"{n}^3 periodic 7-point stencil",
            [f"{t} thread{'s' if t > 1 else ''}" for t in args.threads], series,
            "ms per sweep (min)")
    if args.markdown:
        C.update_markdown(args.markdown, "Grid stencil (periodic, 7 points)", text)


if __name__ == "__main__":
    main()
