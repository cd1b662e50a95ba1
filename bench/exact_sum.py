#!/usr/bin/env python
"""Exact Global sums (`relsim.runtime.folds.exact_sum`) against plain float sums.

The values: ``--n`` (2.9M) float64, ``rng.standard_normal(n) * 10**rng.uniform(-5, 5, n)``,
held as a ``(n, 1)`` slot array, the shape a scalar Global's reduction slots have. Variants,
timed interleaved in one process, at each thread count (``numba.set_num_threads``):

* ``(a) prange sum``: ``s += v[i]`` in a ``prange`` (Numba's parallel reduction; the result
  depends on the thread count, so it is not deterministic);
* ``(b) serial fold``: one left-to-right loop over the slots, what relsim folds a Global with
  today (`host_folds.fold_num`);
* ``(c) sum_slots``: `exact_sum.sum_slots` into fresh accumulators, then `round_f64`: the
  correctly rounded exact sum, the same bits for every thread count (checked, and checked equal
  to ``math.fsum``);
* ``(d) relsim``: what a user runs, ``total += r.x`` over a relation of n rows (the kernel
  writes its slots, the fold (c) runs when ``total.value`` is read): launch plus read.

Figures: min and median over ``--repeats`` runs in ms; ``c/a`` and ``c/b`` are medians of the
per-repeat ratios (each pair timed back to back).

Usage::

    python bench/exact_sum.py [--n 2900000] [--threads 1 2] [--repeats 20] [--number 3]
                              [--chart bench/out/exact_sum.png]
"""
from __future__ import annotations

import argparse
import math

import _common as C
import numba
import numpy as np
from numba import njit, prange

import relsim as rs
from relsim.runtime.folds import exact_sum as es

_JIT = dict(cache=True, error_model="numpy", boundscheck=False)


@njit(parallel=True, **_JIT)
def prange_sum(vals):
    s = 0.0
    for i in prange(vals.shape[0]):
        s += vals[i, 0]
    return s


@njit(**_JIT)
def serial_fold(g, vals):
    for c in range(g.shape[0]):
        acc = g[c]
        for s in range(vals.shape[0]):
            acc += vals[s, c]
        g[c] = acc


def exact(vals):
    acc = es.new_many(vals.shape[1])
    es.sum_slots(vals, acc)
    return es.round_f64(acc[0])


total = rs.Global(rs.f64, 0.0)


@rs.kernel
def add_rows(r):
    total += r.x


def relsim_sum(R, cfg):
    total.value = 0.0
    R.foreach(add_rows, cfg)
    return total.value


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2_900_000)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--number", type=int, default=3, help="calls per timed sample")
    ap.add_argument("--seed", type=int, default=0)
    C.add_chart_argument(ap, "exact_sum")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    n = args.n
    vals = (rng.standard_normal(n) * 10.0 ** rng.uniform(-5, 5, n)).reshape(n, 1)
    g = np.zeros(1)
    expected = math.fsum(vals[:, 0])
    R = rs.Relation("R", n)
    R.new_field("x", rs.f64).load(vals[:, 0])

    rows, mins = [], {k: [] for k in "abcd"}
    for t in args.threads:
        if t > numba.config.NUMBA_NUM_THREADS:
            raise SystemExit(f"--threads {t} > NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS}")
        numba.set_num_threads(t)
        cfg = rs.Config(target="cpu", threads=t)
        for name, got in (("sum_slots", exact(vals)), ("relsim", relsim_sum(R, cfg))):
            if got != expected or math.copysign(1, got) != math.copysign(1, expected):
                raise SystemExit(f"{name} gave {got!r}, math.fsum {expected!r}")
        prange_sum(vals)
        serial_fold(g, vals)
        times = C.interleaved(
            {
                "a": lambda: prange_sum(vals),
                "b": lambda: serial_fold(g, vals),
                "c": lambda: exact(vals),
                "d": lambda cfg=cfg: relsim_sum(R, cfg),
            },
            repeats=args.repeats,
            number=args.number,
        )
        (amin, amed), (bmin, bmed), (cmin, cmed), (dmin, dmed) = \
            (C.summary(times[k]) for k in "abcd")
        for k in "abcd":
            mins[k].append(min(times[k]) * 1e3)
        rows.append([
            t,
            f"{C.ms(amin)} / {C.ms(amed)}",
            f"{C.ms(bmin)} / {C.ms(bmed)}",
            f"{C.ms(cmin)} / {C.ms(cmed)}",
            f"{C.paired_ratio(times['c'], times['a']):.2f}",
            f"{C.paired_ratio(times['c'], times['b']):.2f}",
            f"{C.ms(dmin)} / {C.ms(dmed)}",
        ])
    print(C.machine_line())
    print(f"n = {n} float64, standard_normal * 10**uniform(-5, 5); ms per sum, min / median "
          f"of {args.repeats} repeats x {args.number} calls")
    print(C.table(
        ["threads", "(a) prange sum", "(b) serial fold", "(c) sum_slots + round", "c/a", "c/b",
         "(d) relsim launch + read"],
        rows,
    ))
    names = {"a": "(a) prange sum", "b": "(b) serial fold", "c": "(c) sum_slots + round",
             "d": "(d) relsim launch + read"}
    C.chart(args.chart, f"Exact Global sums ({n:,} f64)",
            [f"{t} thread{'s' if t > 1 else ''}" for t in args.threads],
            {names[k]: v for k, v in mins.items()}, "ms per sum (min)")


if __name__ == "__main__":
    main()
