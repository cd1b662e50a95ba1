#!/usr/bin/env python
"""A resolution sweep: what the first launch of a grid kernel costs at each new grid size.

A grid's shape is bound per launch, so a kernel is compiled once per count of axes and
periodic kinds, not per size. Three kernels a fluid solver has (a 5-point diffusion step over a
periodic grid, the same over the interior of a bounded one, a semi-Lagrangian read at computed
offsets) are launched on grids of several sizes, each size on fresh relations, in a fresh cache
directory (so the first size pays the whole compile); the table gives each size's first launch
(which compiles, loads or reuses) and a warm launch for scale.

Usage::

    python bench/grid_sizes.py [--sizes 64 96 128 200] [--markdown docs/benchmarks/history.md]
"""
from __future__ import annotations

import argparse
import tempfile
import time

import _common as C
import numpy as np

import relsim as rs
from relsim.domains import grid

TITLE = "Grid sizes: one compile per grid kind"


@rs.kernel
def diffuse(c):
    c.un = c.u + 0.1 * (c(1, 0).u + c(-1, 0).u + c(0, 1).u + c(0, -1).u - 4.0 * c.u)


@rs.kernel
def advect(c):
    di = int(np.floor(-2.5 * c.u))
    c.un = c(di, 1).u


def first_and_warm(space, kernel, cfg):
    t0 = time.perf_counter()
    space.foreach(kernel, cfg)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    space.foreach(kernel, cfg)
    return first, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 96, 128, 200])
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    args = ap.parse_args()
    # every launch parallel (else the first launch past `parallel_threshold` compiles the
    # parallel variant: a variant's compile, at whatever size it happens)
    cfg = rs.Config(target="cpu", cache_dir=tempfile.mkdtemp(prefix="relsim-sizes-"),
                    parallel_threshold=1)
    rows = []
    for n in args.sizes:
        cells = {}
        for periodic in (True, False):
            g = grid.Grid((n, n), periodic=periodic)
            g.cells.new_field("u", rs.f64, init=np.random.default_rng(n).random(n * n))
            g.cells.new_field("un", rs.f64)
            cells[periodic] = g
        runs = [first_and_warm(cells[True].cells, diffuse, cfg),
                first_and_warm(cells[False].interior(1), diffuse, cfg),
                first_and_warm(cells[True].cells, advect, cfg)]
        rows.append([f"{n}x{n}"] + [f"{C.ms(f)} ({C.ms(w)})" for f, w in runs])
    text = "\n\n".join([
        "Command: `python bench/grid_sizes.py`.",
        C.machine_line(),
        "First launch of each kernel at each new grid size, ms (a warm launch in brackets); "
        "fresh relations per size, a fresh cache directory at the start; every launch runs "
        "the parallel variant.",
        C.table(["grid", "diffuse, periodic", "diffuse, bounded interior",
                 "advect (computed offsets)"], rows)])
    print(text)
    if args.markdown:
        C.update_markdown(args.markdown, TITLE, text)


if __name__ == "__main__":
    main()
