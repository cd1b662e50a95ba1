#!/usr/bin/env python
"""A double buffer, the way explicit time stepping writes it: one periodic 5-point stencil
step on an n x n grid, then the buffers exchanged, three ways (target cpu, one process, the
variants interleaved):

* swap:      ``C.foreach(step); C.u.swap(C.un)`` (no copy: the fields exchange arrays);
* copy_from: ``C.foreach(step); C.u.copy_from(C.un)`` (a NumPy copy of the new values);
* kernel:    ``C.foreach(step); C.foreach(back)`` with ``c.u = c.un`` (a second launch).

A swap changes which array each field holds, so the launches after it must bind their
arguments again, unless they take up a binding they made for these arrays before (the cpu
backend keeps one besides the current one: a double buffer then binds twice in all). All three
give the same values (checked). Figures: per step, us, median (min) over ``--repeats``.

Usage::

    python bench/double_buffer.py [--sizes 64 256 1024] [--repeats 20] [--markdown PATH]
"""
from __future__ import annotations

import argparse

import _common as C
import numpy as np

import relsim as rs
from relsim.domains import grid

TITLE = "Double buffers: swap vs copy"


def problem(n):
    g = grid.Grid((n, n), spacing=1.0 / n, periodic=True)
    cells = g.cells
    cells.new_field("u", rs.f64).load(np.random.default_rng(3).random(n * n))
    cells.new_field("un", rs.f64)
    r = rs.Global(rs.f64, 0.2)

    @rs.kernel
    def step(c):
        c.un = c.u + r * (c(1, 0).u + c(-1, 0).u + c(0, 1).u + c(0, -1).u - 4.0 * c.u)

    @rs.kernel
    def back(c):
        c.u = c.un

    return cells, step, back


EXCHANGES = {  # how a step's new values become the current ones
    "swap": lambda cells, back, cfg: cells.u.swap(cells.un),
    "copy_from": lambda cells, back, cfg: cells.u.copy_from(cells.un),
    "kernel": lambda cells, back, cfg: cells.foreach(back, cfg),
}


def variants(n, cfg):
    """{name: (the grid's cells, one step then the exchange)}, each on a problem of its own."""
    out = {}
    for name, exchange in EXCHANGES.items():
        cells, step, back = problem(n)

        def run(cells=cells, step=step, back=back, exchange=exchange):
            cells.foreach(step, cfg)
            exchange(cells, back, cfg)

        out[name] = (cells, run)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    args = ap.parse_args(argv)
    cfg = rs.Config(target="cpu")
    rows = []
    for n in args.sizes:
        vs = variants(n, cfg)
        for _, run in vs.values():  # compile, bind both states of the buffers
            for _ in range(4):
                run()
        first = vs["swap"][0].u.numpy(copy=True)
        for name in ("copy_from", "kernel"):
            if not np.array_equal(vs[name][0].u.numpy(), first):
                raise SystemExit(f"{n}: {name} and swap differ")
        number = max(1, 2_000_000 // (n * n))
        r = C.interleaved({k: run for k, (_, run) in vs.items()}, args.repeats, number)
        cells = [f"{C.us(C.summary(r[k])[1])} ({C.us(C.summary(r[k])[0])})" for k in vs]
        rows.append([f"{n} x {n}"] + cells + [f"{C.paired_ratio(r['swap'], r['copy_from']):.2f}"])
    text = "\n".join([
        f"Machine: {C.machine_line()}.",
        f"Per step, us, median (min) over {args.repeats} interleaved repeats; `Config(target="
        f"\"cpu\")`. swap: the step, then `u.swap(un)`; copy_from: the step, then "
        f"`u.copy_from(un)`; kernel: the step, then a launch of `c.u = c.un`.", "",
        C.table(["grid", "swap us", "copy_from us", "kernel us", "swap / copy_from"], rows)])
    print(text)
    if args.markdown:
        C.update_markdown(args.markdown, TITLE, text)


if __name__ == "__main__":
    main()
