#!/usr/bin/env python
"""Gather/scatter over ~1M edges: relsim vs hand-written deterministic Numba.

A random graph (``--vertices`` V, ``--edges`` E, fixed ``--seed``; head/tail uniform) and the
kernel from the design sketch::

    d = e.k * (e.head.T - e.tail.T)
    e.tail.flux += d
    e.head.flux -= d

Variants, all timed per iteration (one pass over the edges), interleaved in one process:

* ``relsim``: ``E.foreach(conduct)``, target cpu, with ``rs.configure(threads=t)``;
* ``hand-written``: the same computation written directly in Numba the deterministic way: a
  ``prange`` over edges writes each edge's two contributions into per-slot temporaries
  (slot 2e: +d into tail, slot 2e+1: -d into head), then a ``prange`` over vertices folds each
  vertex's slots into ``flux`` over a precomputed inverse index, in ascending slot (= edge) order;
* ``naive serial``: one plain serial loop, ``flux[tail] += d; flux[head] -= d`` (reference);
* ``hand-written, pre-permuted slots`` (reference for a possible relsim lowering): the same two
  passes, but each contribution is written straight to its position in the inverse-index order
  (``slots[pos[2e]] = d``), so the fold reads its slots contiguously, without the ``ids``
  indirection. Same values, same fold order: bitwise identical.

The serial meaning is the same for all three, so after the same number of iterations from the
same start their ``flux`` arrays must be bitwise identical (checked, for every thread count).

Usage::

    python bench/gather_scatter.py [--threads 1 2] [--iterations 10] [--repeats 5]
                                   [--markdown docs/benchmarks/history.md] [--chart PATH]
"""
from __future__ import annotations

import argparse
import os
import tempfile

import _common as C
import numpy as np
from numba import njit, prange

GOAL_RATIO = 1.2
_JIT = dict(cache=True, error_model="numpy", boundscheck=False)


# -- hand-written deterministic Numba -------------------------------------------------------
@njit(parallel=True, **_JIT)
def hw_scatter(k, head, tail, T, slots):
    for e in prange(k.shape[0]):
        d = k[e] * (T[head[e]] - T[tail[e]])
        slots[2 * e] = d
        slots[2 * e + 1] = -d


@njit(parallel=True, **_JIT)
def hw_fold(flux, off, ids, slots):
    for v in prange(flux.shape[0]):
        acc = flux[v]
        for j in range(off[v], off[v + 1]):
            acc += slots[ids[j]]
        flux[v] = acc


@njit(**_JIT)
def hw_inverse(head, tail, nv):
    """CSR of slot ids per vertex (slot 2e -> tail[e], 2e+1 -> head[e]), ascending slot ids."""
    ne = head.shape[0]
    off = np.zeros(nv + 1, dtype=np.int64)
    for e in range(ne):
        off[tail[e] + 1] += 1
        off[head[e] + 1] += 1
    for v in range(nv):
        off[v + 1] += off[v]
    pos = off[:-1].copy()
    ids = np.empty(2 * ne, dtype=np.int64)
    for e in range(ne):
        t = tail[e]
        ids[pos[t]] = 2 * e
        pos[t] += 1
        h = head[e]
        ids[pos[h]] = 2 * e + 1
        pos[h] += 1
    return off, ids


@njit(parallel=True, **_JIT)
def perm_scatter(k, head, tail, T, pos, slots):
    for e in prange(k.shape[0]):
        d = k[e] * (T[head[e]] - T[tail[e]])
        slots[pos[2 * e]] = d
        slots[pos[2 * e + 1]] = -d


@njit(parallel=True, **_JIT)
def perm_fold(flux, off, slots):
    for v in prange(flux.shape[0]):
        acc = flux[v]
        for j in range(off[v], off[v + 1]):
            acc += slots[j]
        flux[v] = acc


def perm_step(k, head, tail, T, flux, off, pos, slots):
    perm_scatter(k, head, tail, T, pos, slots)
    perm_fold(flux, off, slots)


def hw_step(k, head, tail, T, flux, off, ids, slots):
    hw_scatter(k, head, tail, T, slots)
    hw_fold(flux, off, ids, slots)


@njit(**_JIT)
def naive_serial(k, head, tail, T, flux):
    for e in range(k.shape[0]):
        d = k[e] * (T[head[e]] - T[tail[e]])
        flux[tail[e]] += d
        flux[head[e]] -= d


# -- setup ----------------------------------------------------------------------------------
def graph(nv, ne, seed):
    rng = np.random.default_rng(seed)
    head = rng.integers(0, nv, ne, dtype=np.int64)
    tail = rng.integers(0, nv, ne, dtype=np.int64)
    T = rng.random(nv)
    k = 0.5 + rng.random(ne)
    return head, tail, T, k


def build_relsim(head, tail, T, k):
    import relsim as rs
    V = rs.Relation("V", len(T))
    E = rs.Relation("E", len(k))
    E.new_key_field("head", V).load(head)
    E.new_key_field("tail", V).load(tail)
    V.new_field("T", rs.f64).load(T)
    V.new_field("flux", rs.f64, init=0.0)
    E.new_field("k", rs.f64).load(k)

    @rs.kernel
    def conduct(e):
        d = e.k * (e.head.T - e.tail.T)
        e.tail.flux += d
        e.head.flux -= d

    return V, E, conduct


def bits(a):
    return np.ascontiguousarray(a).view(np.uint64)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vertices", type=int, default=250_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--iterations", type=int, default=1, help="iterations per timed batch")
    ap.add_argument("--repeats", type=int, default=40, help="timed batches per variant")
    ap.add_argument("--check-iterations", type=int, default=3,
                    help="iterations from a fresh start for the bitwise check")
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    C.add_chart_argument(ap, "gather_scatter")
    args = ap.parse_args(argv)

    os.environ.setdefault("RELSIM_CACHE_DIR", tempfile.mkdtemp(prefix="relsim-bench-"))
    import numba

    import relsim as rs

    head, tail, T, k = graph(args.vertices, args.edges, args.seed)
    V, E, conduct = build_relsim(head, tail, T, k)
    flux_hw = np.zeros(args.vertices)
    flux_nv = np.zeros(args.vertices)
    flux_pm = np.zeros(args.vertices)
    off, ids = hw_inverse(head, tail, args.vertices)
    slots = np.empty(2 * args.edges)
    pos = np.empty_like(ids)
    pos[ids] = np.arange(len(ids))  # slot id -> its place in the inverse-index order
    slots_pm = np.empty(2 * args.edges)
    Tv, kv, hv, tv = V.T.numpy(), E.k.numpy(), E.head.numpy(), E.tail.numpy()

    rows, checks, mins = [], [], {}
    for t in args.threads:
        if t > numba.config.NUMBA_NUM_THREADS:
            raise SystemExit(f"--threads {t} > NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS}")
        rs.configure(target="cpu", threads=t)  # also numba.set_num_threads(t)

        # bitwise check from a fresh start (also the warm-up: compiles and binds everything)
        V.flux.fill(0.0)
        flux_hw[:] = 0.0
        flux_nv[:] = 0.0
        flux_pm[:] = 0.0
        for _ in range(args.check_iterations):
            E.foreach(conduct)
            hw_step(k, head, tail, T, flux_hw, off, ids, slots)
            naive_serial(k, head, tail, T, flux_nv)
            perm_step(k, head, tail, T, flux_pm, off, pos, slots_pm)
        same_hw = np.array_equal(bits(V.flux.numpy()), bits(flux_hw))
        same_nv = np.array_equal(bits(flux_hw), bits(flux_nv)) and \
            np.array_equal(bits(flux_hw), bits(flux_pm))
        checks.append((t, same_hw, same_nv))

        n = args.iterations
        # V.flux was handed out by numpy() above, so every launch folds its slots at once (a
        # field nobody has the array of may leave them pending for the next reader): each timed
        # relsim launch includes its fold, like the hand-written step
        assert V.flux.exposed
        variants = {
            "relsim": lambda: E.foreach(conduct),
            "hand-written": lambda: hw_step(kv, hv, tv, Tv, flux_hw, off, ids, slots),
            "naive serial": lambda: naive_serial(kv, hv, tv, Tv, flux_nv),
            "pre-permuted": lambda: perm_step(kv, hv, tv, Tv, flux_pm, off, pos, slots_pm),
        }
        res = C.interleaved(variants, args.repeats, n)
        best = {name: min(v) for name, v in res.items()}
        for name, v in best.items():
            mins.setdefault(name, []).append(v * 1e3)
        rows.append([t, C.ms(best["relsim"]), C.ms(best["hand-written"]),
                     C.ms(best["naive serial"]), C.ms(best["pre-permuted"]),
                     f"{best['relsim'] / best['hand-written']:.2f}",
                     f"{C.paired_ratio(res['relsim'], res['hand-written']):.2f}",
                     "yes" if same_hw else "NO", "yes" if same_nv else "NO"])

    headers = ["threads", "relsim ms/iter", "hand-written ms/iter", "naive serial ms/iter",
               "hand-written, pre-permuted ms/iter", "relsim / hand-written (of mins)",
               "(median of paired ratios)",
               "relsim == hand-written bitwise", "== naive, pre-permuted bitwise"]
    out = [f"Machine: {C.machine_line()}.",
           f"Graph: {args.vertices:,} vertices, {args.edges:,} edges (seed {args.seed}, uniform "
           f"random endpoints). Kernel: `d = e.k * (e.head.T - e.tail.T); e.tail.flux += d; "
           f"e.head.flux -= d`. Time per iteration: min over {args.repeats} interleaved batches "
           f"of {args.iterations} iteration(s); the ratio also as the median of the ratios of "
           f"back-to-back pairs. Bitwise check after "
           f"{args.check_iterations} iterations from flux = 0. Goal: relsim / hand-written "
           f"<= {GOAL_RATIO}.",
           "", C.table(headers, rows)]
    ok = all(a and b for _, a, b in checks)
    out += ["", "Results bitwise identical across relsim, hand-written, naive serial and "
            "pre-permuted: "
            + ("yes, for every thread count." if ok else "NO (see table).")]
    text = "\n".join(out)
    print(text)
    C.chart(args.chart, f"Gather/scatter ({args.edges:,} edges)",
            [f"{t} thread{'s' if t > 1 else ''}" for t in args.threads], mins,
            "ms per iteration (min)")
    if args.markdown:
        C.update_markdown(args.markdown, "Gather/scatter (1M edges)", text)


if __name__ == "__main__":
    main()
