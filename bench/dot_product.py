#!/usr/bin/env python
"""Dot product as an exact Global sum: ``g += r.x * r.y`` against ``numpy.dot`` (target cpu).

For each row count (``--rows``: 10, 1000, 65536, 1000000) and thread count (``--threads``: 1 2),
three variants on the same arrays, timed interleaved in one process:

* relsim dot:   ``g.value = 0.0; R.foreach(dot, cfg); g.value`` with the kernel ``g += r.x *
  r.y`` (g an f64 ``rs.Global``): launch, then the read that forces the fold (the exact sum of
  the rows' products: the same bits on any thread count, checked against ``math.fsum``);
* axpy launch:  ``R.foreach(axpy, cfg)`` with ``r.y = r.y + 0.5 * r.x``: a plain launch of the
  same size, no Global (what a dot costs beyond a launch is ``dot - axpy``);
* numpy.dot:    ``numpy.dot(x, y)`` on ``x = R.x.numpy(), y = R.y.numpy()`` (OpenBLAS ddot, its
  threads set to the same t where the library is found: see ``_blas.py``); at t > 1 also with
  OpenBLAS on 1 thread (``numpy.dot 1 BLAS thread``). On a 2-core machine that other jobs load,
  a 2-thread OpenBLAS call often waits a scheduler tick (4-8 ms) for its worker thread, so the
  ratio and the goal use the faster of the two numpy.dot figures of each batch (the stricter
  reference).

``cfg = rs.Config(target="cpu", threads=t, parallel_threshold=P)`` with P the default (4096)
unless ``--parallel-threshold`` is given; the table says which variant of the kernels ran
(serial below P rows, parallel from P up). Everything is warmed up (compiled) first; each
(rows, threads) cell is timed in ``--repeats`` interleaved batches of as many calls as fill about
``--batch-ms``; figures are the median (and min) per call. Goal (the relsim issue's): the dot
within 1.5x of numpy.dot at 65536 and 1M rows, and within 2 us of a plain launch at 10 rows.

Usage::

    python bench/dot_product.py [--rows 10 1000 65536 1000000] [--threads 1 2] [--repeats 30]
                                [--batch-ms 20] [--parallel-threshold 4096]
                                [--markdown docs/benchmarks/history.md] [--chart PATH]
"""
from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

import _blas
import _common as C
import numba
import numpy as np

import relsim as rs

TITLE = "Dot product (exact Global sum) vs numpy.dot"
GOAL_RATIO = 1.5  # dot / numpy.dot at the large sizes
GOAL_LARGE = (65536, 1_000_000)
GOAL_SMALL = 10  # rows at which the dot is judged against a plain launch
GOAL_SMALL_US = 2.0  # dot - axpy

g = rs.Global(rs.f64, 0.0)


@rs.kernel
def dot(r):
    g += r.x * r.y


@rs.kernel
def axpy(r):
    r.y = r.y + 0.5 * r.x


def relation(n: int, seed: int):
    R = rs.Relation(f"R{n}", n)
    rng = np.random.default_rng(seed)
    R.new_field("x", rs.f64).load(rng.standard_normal(n))
    R.new_field("y", rs.f64).load(rng.standard_normal(n))
    return R


def variant_of(kernel, R, cfg) -> str:
    """'serial' or 'parallel': the variant the kernel's last launch over R ran (internal API,
    falling back to the threshold rule)."""
    from relsim.runtime import execute
    try:
        b = execute.executable(kernel, R, cfg).bindings[None]
        return "parallel" if b.parallel else "serial"
    except (AttributeError, KeyError):
        return "parallel" if R.size >= cfg.parallel_threshold else "serial"


def calibrate(fns, batch_s: float) -> int:
    """Calls per batch: about `batch_s` seconds of the slowest of `fns` (at least 1)."""
    worst = 0.0
    for fn in fns:
        t0 = time.perf_counter()
        k = 0
        while k < 3 or time.perf_counter() - t0 < 0.01:
            fn()
            k += 1
        worst = max(worst, (time.perf_counter() - t0) / k)
    return max(1, int(batch_s / worst))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[10, 1000, 65536, 1_000_000])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=30, help="timed batches per variant")
    ap.add_argument("--batch-ms", type=float, default=20.0,
                    help="about how long one batch of calls runs (sets the calls per batch)")
    ap.add_argument("--parallel-threshold", type=int, default=rs.Config().parallel_threshold,
                    help="Config.parallel_threshold (default: relsim's, %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    C.add_chart_argument(ap, "dot_product")
    args = ap.parse_args(argv)

    os.environ.setdefault("RELSIM_CACHE_DIR", tempfile.mkdtemp(prefix="relsim-bench-"))
    rels = {n: relation(n, args.seed + i) for i, n in enumerate(args.rows)}
    rows, res = [], {}
    for t in args.threads:
        if t > numba.config.NUMBA_NUM_THREADS:
            raise SystemExit(f"--threads {t} > NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS}")
        rs.configure(target="cpu", threads=t)  # Numba's pool: launches need not switch it
        blas = _blas.set_threads(t)
        cfg = rs.Config(target="cpu", threads=t, parallel_threshold=args.parallel_threshold)
        for n, R in rels.items():
            x, y = R.x.numpy(), R.y.numpy()

            def rel_dot(R=R, cfg=cfg):
                g.value = 0.0
                R.foreach(dot, cfg)
                return g.value

            blas_t = (lambda t=t: _blas.set_threads(t)) if blas else None
            # after a t-thread BLAS batch, relsim's batches wait for its spinning workers
            calm = _blas.quiet if t > 1 and blas else None
            variants = {"dot": (calm, rel_dot),
                        "axpy": (calm, lambda R=R, cfg=cfg: R.foreach(axpy, cfg)),
                        "numpy": (blas_t, lambda x=x, y=y: np.dot(x, y))}
            if t > 1 and blas:
                variants["numpy1"] = (lambda: _blas.set_threads(1), variants["numpy"][1])
            for set_up, fn in variants.values():  # warm up: compile, bind
                if set_up is not None:
                    set_up()
                for _ in range(20):
                    fn()
            got, want = rel_dot(), math.fsum(x * y)
            if got != want:
                raise SystemExit(f"relsim dot at {n} rows, {t} threads: {got!r} != "
                                 f"math.fsum {want!r}")
            which = variant_of(dot, R, cfg)
            if variant_of(axpy, R, cfg) != which:
                which += f" (axpy {variant_of(axpy, R, cfg)})"
            number = calibrate([rel_dot], args.batch_ms / 1e3)
            r = res[n, t] = _blas.interleaved(variants, args.repeats, number)
            r["best"] = [min(a, b) for a, b in zip(r["numpy"], r.get("numpy1", r["numpy"]))]
            (dmin, dmed), (amin, amed), (nmin, nmed) = (C.summary(r[k])
                                                         for k in ("dot", "axpy", "numpy"))
            one = C.summary(r["numpy1"]) if "numpy1" in r else None
            rows.append([f"{n:,}", t, which, f"{C.us(dmed)} ({C.us(dmin)})",
                         f"{C.us(amed)} ({C.us(amin)})", f"{C.us(nmed)} ({C.us(nmin)})",
                         f"{C.us(one[1])} ({C.us(one[0])})" if one else "(same)",
                         f"{C.paired_ratio(r['dot'], r['best']):.2f}",
                         C.us(C.summary([d - a for d, a in zip(r['dot'], r['axpy'])])[1]),
                         number])
            print(f"  {n:>9,} rows, {t} thread(s): done", flush=True)

    headers = ["rows", "threads", "variant ran", "relsim dot us", "axpy launch us",
               "numpy.dot us", "numpy.dot 1 BLAS thread us", "dot / numpy.dot",
               "dot - axpy us", "calls/batch"]
    out = [f"Machine: {C.machine_line()}.",
           f"Per-call time in us, median (min) over {args.repeats} interleaved batches of "
           f"`calls/batch` calls (about {args.batch_ms:g} ms each), after warm-up. relsim dot: "
           f"`g.value = 0.0; R.foreach(dot, cfg); g.value` with `g += r.x * r.y` (launch + the "
           f"read that folds the exact sum; checked equal to `math.fsum(x * y)`); axpy launch: "
           f"`R.foreach(axpy, cfg)` with `r.y = r.y + 0.5 * r.x` (no Global); numpy.dot: "
           f"`numpy.dot(x, y)` on the same arrays "
           + ("(OpenBLAS set to the same thread count; at 2 threads also on 1 thread: "
              "`dot / numpy.dot` divides by the faster of the two in each batch: on this "
              "loaded 2-core machine a 2-thread OpenBLAS call often waits a scheduler tick, "
              "4-8 ms, for its worker thread; relsim's batches start once the 2-thread "
              "OpenBLAS workers of the batch before sleep, `_blas.quiet`, untimed, since those "
              "spin on the other core for ~0.1 s after a call). " if blas
              else "(BLAS threads not controlled). ")
           + f"`cfg = rs.Config(target=\"cpu\", threads=t, parallel_threshold="
           f"{args.parallel_threshold})`: the kernels run serially below {args.parallel_threshold}"
           f" rows (`variant ran`). `dot / numpy.dot` is the median of the per-batch ratios, "
           f"`dot - axpy` the median of the per-batch differences.",
           "", C.table(headers, rows), ""]
    goals = [f"Goal: dot <= {GOAL_RATIO:g}x numpy.dot at "
             + " and ".join(f"{n:,}" for n in GOAL_LARGE)
             + f" rows; dot <= axpy launch + {GOAL_SMALL_US:g} us at {GOAL_SMALL} rows "
             "(medians):", ""]
    for n in args.rows:
        for t in args.threads:
            r = res[n, t]
            if n in GOAL_LARGE:
                ratio = C.paired_ratio(r["dot"], r["best"])
                verdict = (f"dot / numpy.dot = {ratio:.2f} -> "
                           f"{'met' if ratio <= GOAL_RATIO else 'NOT met'}")
            elif n == GOAL_SMALL:
                extra = C.summary([d - a for d, a in zip(r["dot"], r["axpy"])])[1] * 1e6
                verdict = (f"dot - axpy = {extra:.2f} us -> "
                           f"{'met' if extra <= GOAL_SMALL_US else 'NOT met'}")
            else:
                verdict = "no goal at this size"
            goals.append(f"- {n:,} rows, {t} thread{'s' if t > 1 else ''}: {verdict}")
    text = "\n".join(out + goals)
    print(text)
    labels = [f"{n:,}/{t}t" for t in args.threads for n in args.rows]
    C.chart(args.chart, TITLE + " (rows/threads)", labels,
            {name: [C.summary(res[n, t][k])[1] * 1e6 for t in args.threads for n in args.rows]
             for name, k in (("relsim dot", "dot"), ("axpy launch", "axpy"),
                             ("numpy.dot", "numpy"))},
            "us per call (median)")
    if args.markdown:
        C.update_markdown(args.markdown, TITLE, text)


if __name__ == "__main__":
    main()
