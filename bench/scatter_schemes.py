#!/usr/bin/env python
"""Edge scatter: relsim's ways of applying reductions through keys vs the plain serial loop.

The kernel (the design sketch's heat flux)::

    d = e.k * (e.head.T - e.tail.T)
    e.tail.flux += d
    e.head.flux -= d

on two graphs: the unique edges of a Kuhn-cube tet mesh (``tetmesh.box(--box)``: mesh order,
so most vertices are reached from one contiguous range of edges) and a random graph
(``--vertices``, ``--edges``: almost every vertex reached from everywhere).

Rows timed per call, interleaved in one process (ms, min and median over repeats):

* ``serial loop``: hand-written Numba, ``flux[tail[e]] += d; flux[head[e]] -= d`` in edge order
  (the serial meaning: every relsim variant must give the same bits, checked);
* ``relsim <scheme>`` for ``Config(scatter=...)``: ``direct`` (serial, straight into the field),
  ``split`` (one contiguous block of edges per thread, direct to the vertices a block owns,
  the shared ones parked and folded), ``slots`` (every contribution parked, then folded) and
  ``auto`` (what relsim chooses), at each ``--threads`` count.

Also printed: the fraction of contributions going to vertices shared between blocks, and of
rows reaching them, which is what ``auto`` decides on (`SPLIT_MIXED_COST` in
`relsim/runtime/backends/cpu/scatter.py`). ``--sweep`` measures that cost: the tet mesh's edges
with a growing fraction of them moved to random places in the edge order (so more and more
vertices are shared between the two blocks), split and direct timed at 2 threads for each.

Usage::

    python bench/scatter_schemes.py [--box 48] [--vertices 250000] [--edges 1000000]
                                    [--threads 1 2] [--repeats 15] [--sweep] [--markdown PATH]
"""
from __future__ import annotations

import argparse

import _common as C
import numpy as np
from gather_scatter import build_relsim
from numba import njit

SCHEMES = ("direct", "split", "slots", "auto")


@njit(cache=True, error_model="numpy", boundscheck=False)
def serial_loop(k, head, tail, T, flux):
    for e in range(k.shape[0]):
        d = k[e] * (T[head[e]] - T[tail[e]])
        flux[tail[e]] += d
        flux[head[e]] -= d


def tet_graph(n):
    from relsim.domains import tetmesh
    mesh = tetmesh.box(n)
    E = mesh.edges
    return E.head.numpy().copy(), E.tail.numpy().copy(), mesh.vertices.size


def random_graph(nv, ne, seed=1):
    rng = np.random.default_rng(seed)
    return rng.integers(0, nv, ne), rng.integers(0, nv, ne), nv


def build(head, tail, nv):
    """The relations and kernel of gather_scatter.py, with random T and k."""
    rng = np.random.default_rng(7)
    return build_relsim(head, tail, rng.random(nv), 0.5 + rng.random(len(head)))


def measure(name, head, tail, nv, threads, repeats, number):
    import relsim as rs
    from relsim.runtime.backends.cpu import ownership
    V, E, conduct = build(head, tail, nv)
    k, T = E.k.numpy().copy(), V.T.numpy().copy()
    h64, t64 = head.astype(np.int64), tail.astype(np.int64)
    ref = np.zeros(nv)
    serial_loop(k, h64, t64, T, ref)
    rows, fractions = [], []
    for t in threads:
        tgt = np.empty(2 * len(head), dtype=np.int64)
        tgt[0::2], tgt[1::2] = tail, head
        sp = ownership.split(tgt, 2, ownership.block_bounds(len(head), t), nv)
        fractions.append(f"{t} blocks: {sp.shared_fraction:.3f} (rows {sp.mixed.mean():.3f})")
        variants = {"serial loop": lambda: serial_loop(k, h64, t64, T, np.zeros(nv))}
        for scheme in SCHEMES:
            cfg = rs.Config(threads=t, scatter=scheme)

            def run(cfg=cfg):
                E.foreach(conduct, cfg)
                V.flux.numpy()  # settle anything pending (what a reader would see)
            V.flux.load(np.zeros(nv))
            run()
            got = V.flux.numpy()
            if not np.array_equal(got.view(np.uint64), ref.view(np.uint64)):
                raise SystemExit(f"{name}: relsim {scheme} at {t} threads differs from the "
                                 f"serial loop")
            variants[f"relsim {scheme}"] = run
        times = C.interleaved(variants, repeats, number)
        base = C.summary(times["serial loop"])[0]
        for v, samples in times.items():
            lo, med = C.summary(samples)
            rows.append([name, t, v, C.ms(lo), C.ms(med), f"{lo / base:.2f}"])
    return rows, fractions


def sweep(head, tail, nv, repeats, number):
    """Split vs direct at 2 threads as the shared fraction grows (moved edges)."""
    import relsim as rs
    from relsim.runtime.backends.cpu import ownership
    rng = np.random.default_rng(3)
    rows = []
    for moved in (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.1, 1.0):
        order = np.arange(len(head))
        pick = rng.choice(len(head), int(moved * len(head)), replace=False)
        order[np.sort(pick)] = pick[rng.permutation(len(pick))]
        h, t = head[order], tail[order]
        tgt = np.empty(2 * len(h), dtype=np.int64)
        tgt[0::2], tgt[1::2] = t, h
        sp = ownership.split(tgt, 2, ownership.block_bounds(len(h), 2), nv)
        V, E, conduct = build(h, t, nv)
        variants = {s: (lambda c=rs.Config(threads=2, scatter=s), E=E, k=conduct:
                        E.foreach(k, c)) for s in ("direct", "split")}
        times = C.interleaved(variants, repeats, number)
        d, spl = C.summary(times["direct"])[0], C.summary(times["split"])[0]
        rows.append([f"{moved:.3f}", f"{sp.shared_fraction:.3f}", f"{sp.mixed.mean():.3f}",
                     C.ms(d), C.ms(spl), f"{spl / d:.2f}"])
    return C.table(["edges moved", "shared slots", "mixed rows", "direct min ms",
                    "split min ms", "split / direct"], rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--box", type=int, default=48, help="tetmesh.box(n): n cells per side")
    ap.add_argument("--vertices", type=int, default=250_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--number", type=int, default=3, help="calls per timed batch")
    ap.add_argument("--sweep", action="store_true",
                    help="also time split vs direct at 2 threads as the shared fraction grows")
    ap.add_argument("--markdown", metavar="PATH", help="update this section of a markdown file")
    C.add_chart_argument(ap, "scatter_schemes")
    args = ap.parse_args(argv)
    rows, notes = [], []
    for name, (head, tail, nv) in (
            (f"tet mesh box({args.box})", tet_graph(args.box)),
            (f"random graph {args.edges}/{args.vertices}",
             random_graph(args.vertices, args.edges))):
        r, fr = measure(name, head, tail, nv, args.threads, args.repeats, args.number)
        rows += r
        notes.append(f"{name} ({len(head)} edges, {nv} vertices): contributions to shared "
                     f"vertices, {'; '.join(fr)}")
    text = "\n".join([C.machine_line(), "",
                      C.table(["graph", "threads", "variant", "min ms", "median ms",
                               "min / serial loop"], rows), ""] + [f"- {n}" for n in notes])
    if args.sweep:
        head, tail, nv = tet_graph(args.box)
        text += "\n\nSplit vs direct at 2 threads, tet mesh edges partly shuffled:\n\n" + \
            sweep(head, tail, nv, args.repeats, args.number)
    print(text)
    labels = sorted({(r[0], r[1]) for r in rows}, key=lambda x: (x[0], x[1]))
    variants = list(dict.fromkeys(r[2] for r in rows))
    ratio = {(r[0], r[1], r[2]): float(r[5]) for r in rows}
    C.chart(args.chart, "Edge scatter: time / serial loop (min)",
            [f"{g.split(' ')[0]} {t}t" for g, t in labels],
            {v: [ratio.get((g, t, v)) for g, t in labels] for v in variants}, "ratio")
    if args.markdown:
        C.update_markdown(args.markdown, "Edge scatter: direct, split and parked", text)


if __name__ == "__main__":
    main()
