#!/usr/bin/env python
"""Global max, arg-max and integer sums: folded in the loop vs through slots vs NumPy.

For each row count (``--rows``) and thread count (``--threads``), on the same array, timed
interleaved in one process (launch, then the read of the value):

* ``rs.reduce_max(g, r.x)``, ``rs.reduce_argmax(g, r.x)`` (and ``g.row``), ``n += r.k`` (an
  integer field) and ``if r.x > 0.5: n += 1`` (a count: a conditional integer sum, which
  stays in slots: "count" has the same figure twice): in the loop (the lanes variant: per lane
  of each chunk of rows the first best value and its row, or an integer sum, folded in row
  order after the launch), and through slots (the same kernel
  under ``fast_math=True``, which keeps the lanes variant off; these kernels do no float
  arithmetic, so fast math changes nothing else): the same bits, checked;
* NumPy: ``x.max()``, ``x.argmax()``, ``k.sum()``, ``np.count_nonzero(x > 0.5)``;
* a plain launch of the same size (``r.y = r.y + 0.5 * r.x``), for scale.

Usage::

    python bench/global_extremes.py [--rows 65536 1000000] [--threads 1 2] [--repeats 15]
                                    [--markdown docs/benchmarks/history.md]
"""
from __future__ import annotations

import argparse

import _common as C
import numba
import numpy as np

import relsim as rs

TITLE = "Global max, arg-max and integer sums: in the loop vs slots vs NumPy"


def build(n):
    R = rs.Relation("R", n)
    R.new_field("x", rs.f64).load(np.random.default_rng(n).random(n))
    R.new_field("y", rs.f64, init=0.0)
    R.new_field("k", rs.i64).load(np.arange(n) % 7)
    hi = rs.Global(rs.f64, -np.inf)
    total = rs.Global(rs.i64, 0)
    at = rs.Global(rs.f64, -np.inf)
    n_big = rs.Global(rs.i64, 0)

    @rs.kernel
    def biggest(r):
        rs.reduce_max(hi, r.x)

    @rs.kernel
    def where(r):
        rs.reduce_argmax(at, r.x)

    @rs.kernel
    def int_sum(r):
        total += r.k

    @rs.kernel
    def count(r):
        if r.x > 0.5:
            n_big += 1

    @rs.kernel
    def axpy(r):
        r.y = r.y + 0.5 * r.x

    return R, {"max": (biggest, hi, -np.inf), "argmax": (where, at, -np.inf),
               "int sum": (int_sum, total, 0), "count": (count, n_big, 0)}, axpy


def reader(R, kernel, g, init, cfg, row=False):
    def run():
        g.value = init
        R.foreach(kernel, cfg)
        return (g.value, g.row) if row else g.value
    return run


def measure(n: int, threads: list, repeats: int) -> list:
    """The table's rows for `n` rows, at each thread count."""
    R, kernels, axpy = build(n)
    x, ks = R.x.numpy(copy=True), R.k.numpy(copy=True)
    peers = {"max": lambda: x.max(), "argmax": lambda: x.argmax(),
             "int sum": lambda: ks.sum(), "count": lambda: np.count_nonzero(x > 0.5)}
    rows = []
    for t in threads:
        numba.set_num_threads(t)
        loop = rs.Config(target="cpu", threads=t, parallel_threshold=1)
        slots = rs.Config(target="cpu", threads=t, parallel_threshold=1, fast_math=True)
        variants = {"plain launch": lambda cfg=loop: R.foreach(axpy, cfg)}
        for name, (kern, g, init) in kernels.items():
            a = reader(R, kern, g, init, loop, name == "argmax")
            b = reader(R, kern, g, init, slots, name == "argmax")
            assert np.array_equal(np.asarray(a()), np.asarray(b())), name  # same bits
            variants[f"{name} loop"], variants[f"{name} slots"] = a, b
            variants[f"{name} numpy"] = peers[name]
        for fn in variants.values():
            fn()
        got = C.interleaved(variants, repeats, max(1, int(2e5 // n)))
        med = {k: C.summary(v)[1] for k, v in got.items()}
        for name in kernels:
            rows.append([f"{n:,}", t, name, C.us(med[f"{name} loop"]),
                         C.us(med[f"{name} slots"]), C.us(med[f"{name} numpy"]),
                         C.us(med["plain launch"]),
                         f"{med[f'{name} slots'] / med[f'{name} loop']:.2f}",
                         f"{med[f'{name} loop'] / med[f'{name} numpy']:.2f}"])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[65536, 1_000_000])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    args = ap.parse_args()
    rows = [row for n in args.rows for row in measure(n, args.threads, args.repeats)]
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    text = "\n\n".join([
        "Command: `python bench/global_extremes.py`.", C.machine_line(),
        "Median us per call (launch and read); the loop and slot figures are the same bits.",
        C.table(["rows", "threads", "reduction", "in the loop", "slots", "NumPy",
                 "plain launch", "slots / loop", "loop / NumPy"], rows)])
    print(text)
    if args.markdown:
        C.update_markdown(args.markdown, TITLE, text)


if __name__ == "__main__":
    main()
