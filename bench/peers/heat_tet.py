#!/usr/bin/env python
"""Peers benchmark: explicit heat conduction on a tetrahedral mesh, relsim against hand-written
Numba, Taichi and NVIDIA Warp, ms per step on the CPU.

The mesh: `relsim.domains.tetmesh.box(n)`, an n^3 cube of Kuhn cubes (6 tets each; n = 40:
68,921 vertices, 462,520 edges), built once. The physics is `relsim run tetheat`'s
(simulations/tetheat.py): its ``setup`` computes the P1 edge conductances ``k``, the lumped
capacities ``c`` and the stable ``dt`` (CFL 0.5), and the Gaussian hot spot gives ``T`` and
``Q = c T``. Every implementation then gets the same NumPy arrays and runs the same step::

    per edge:    d = k * (T[head] - T[tail]);  flux[tail] += d;  flux[head] -= d
    per vertex:  Q += dt * flux;  flux = 0;  T = Q / c

(tetheat's ``conduct`` and ``update`` kernels, without ``update``'s ``heat += v.Q``: that total
is a diagnostic, not part of the state, and is left out of every variant). Variants, timed
interleaved in one process at each ``--threads`` count:

* ``relsim``: tetheat's ``conduct`` kernel and the update above, ``E.foreach(conduct);
  V.foreach(update)``, target cpu, ``rs.configure(threads=t)``;
* ``numba serial``: one ``@njit`` loop over the edges in edge order, then one over the vertices;
* ``numba prange``: the deterministic parallel form, two ``prange`` loops: over the edges,
  ``d[e]`` into an array; over the vertices, each adding its incident edges' ``+d`` / ``-d`` in
  ascending edge order (a CSR built once), then ``Q += dt * flux; T = Q / c`` in the same pass
  (``numba.set_num_threads(t)``);
* ``taichi``: ``ti.init(arch=ti.cpu, cpu_max_num_threads=t)`` (re-initialised for each thread
  count, the program rebuilt), f64 fields, atomic ``+=`` in the edge loop; Taichi's defaults
  otherwise (``fast_math`` on);
* ``warp``: NVIDIA Warp on its ``cpu`` device, f64 arrays, ``wp.atomic_add``/``wp.atomic_sub``;
  Warp's CPU backend runs a launch on one thread, so it is serial at every thread count.

Taichi and Warp get the edge endpoints as int32 (their index type), relsim and Numba as the
int64 keys relsim stores. A peer whose package is not importable is skipped with one line
(``pip install -e .[bench]`` installs taichi, warp-lang and matplotlib).

Answers are checked at every thread count: each variant runs ``--check-steps`` steps from the
same start; relsim's ``T`` and ``Q`` must equal the Numba serial loop's bit for bit, and the
Numba prange gather's too (asserted: the gather adds each vertex's edge fluxes in the serial
loop's order); Taichi's and Warp's atomics (and Taichi's fast math) may round differently, so
they are compared by ``max |T - T_serial| / max |T_serial|`` against ``--tolerance`` (1e-12),
and the deviation is printed. The check also compiles every variant, so the timings exclude
compilation. Time per step: min and median over ``--repeats`` interleaved samples of
``--number`` steps; ratios are to relsim's time at the same thread count (> 1: slower than
relsim), of the minima and as the median of back-to-back pairs.

Usage::

    python bench/peers/heat_tet.py [--n 40] [--threads 1 2] [--repeats 10] [--number 5]
        [--peers numba taichi warp] [--chart PATH] [--markdown docs/benchmarks/history.md]
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench/_common.py
sys.path.insert(0, str(HERE))  # the peers' modules

import _common as C  # noqa: E402
import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

import relsim as rs  # noqa: E402

PEERS = ("numba", "taichi", "warp")
_JIT = dict(cache=True, error_model="numpy", boundscheck=False)


# -- hand-written Numba ---------------------------------------------------------------------
@njit(**_JIT)
def serial_step(k, head, tail, c, dt, T, Q, flux):
    for e in range(k.shape[0]):
        t = tail[e]
        h = head[e]
        d = k[e] * (T[h] - T[t])
        flux[t] += d
        flux[h] -= d
    for v in range(T.shape[0]):
        q = Q[v] + dt * flux[v]
        Q[v] = q
        flux[v] = 0.0
        T[v] = q / c[v]


@njit(parallel=True, **_JIT)
def edge_flux(k, head, tail, T, d):
    for e in prange(k.shape[0]):
        d[e] = k[e] * (T[head[e]] - T[tail[e]])


@njit(parallel=True, **_JIT)
def gather_update(off, slot, c, dt, d, T, Q):
    for v in prange(T.shape[0]):
        acc = 0.0  # what the serial loop's flux[v] starts from
        for j in range(off[v], off[v + 1]):
            s = slot[j]  # 2e (v is the tail of edge e) or 2e + 1 (the head), ascending
            if s & 1:
                acc -= d[s >> 1]
            else:
                acc += d[s >> 1]
        q = Q[v] + dt * acc
        Q[v] = q
        T[v] = q / c[v]  # T is read only by edge_flux: safe to write here


def incidence(head, tail, nv):
    """CSR of each vertex's edge-end slots (2e: tail end, 2e + 1: head end), ascending."""
    ends = np.concatenate([tail, head])
    slots = np.concatenate([2 * np.arange(len(tail)), 2 * np.arange(len(head)) + 1])
    order = np.lexsort((slots, ends))
    off = np.zeros(nv + 1, dtype=np.int64)
    np.cumsum(np.bincount(ends, minlength=nv), out=off[1:])
    return off, np.ascontiguousarray(slots[order])


class NumbaSerial:
    def __init__(self, head, tail, k, c, dt):
        self.a = (k, head, tail, c, float(dt))
        self.T = self.Q = None
        self.flux = np.zeros(len(c))

    def load(self, T, Q):
        self.T, self.Q = T.copy(), Q.copy()
        self.flux[:] = 0.0

    def step(self):
        serial_step(*self.a, self.T, self.Q, self.flux)

    def state(self):
        return self.T.copy(), self.Q.copy()


class NumbaPrange(NumbaSerial):
    def __init__(self, head, tail, k, c, dt):
        super().__init__(head, tail, k, c, dt)
        self.off, self.slot = incidence(head, tail, len(c))
        self.d = np.empty(len(k))

    def step(self):
        k, head, tail, c, dt = self.a
        edge_flux(k, head, tail, self.T, self.d)
        gather_update(self.off, self.slot, c, dt, self.d, self.T, self.Q)


# -- relsim ---------------------------------------------------------------------------------
class Relsim:
    """tetheat's set-up and conduct kernel on the mesh, and the update without the total."""

    def __init__(self, mesh):
        from relsim_simulations import tetheat
        V = mesh.vertices
        setup, conduct, _, dt, _ = tetheat.build(mesh)
        V.T.load(tetheat.initial_temperature(mesh))
        setup()

        @rs.kernel
        def update(v):
            v.Q += dt * v.flux
            v.flux = 0.0
            v.T = v.Q / v.c

        self.V, self.E, self.conduct, self.update, self.dt = V, mesh.edges, conduct, update, dt

    def arrays(self):
        """What the peers get (copies: reading with copy=True leaves the fields unexposed)."""
        V, E = self.V, self.E
        return dict(head=E.head.numpy(copy=True), tail=E.tail.numpy(copy=True),
                    k=E.k.numpy(copy=True), c=V.c.numpy(copy=True), dt=self.dt.value), \
            (V.T.numpy(copy=True), V.Q.numpy(copy=True))

    def load(self, T, Q):
        self.V.T.load(T)
        self.V.Q.load(Q)
        self.V.flux.fill(0.0)

    def step(self):
        self.E.foreach(self.conduct)
        self.V.foreach(self.update)

    def state(self):
        return self.V.T.numpy(copy=True), self.V.Q.numpy(copy=True)


def load_peer(name):
    """The peer's module, or None after one line saying why it is skipped."""
    package = {"taichi": "taichi", "warp": "warp", "numba_cuda": "numba.cuda"}[name]
    if importlib.util.find_spec(package) is None:
        print(f"{name} not installed: skipped")
        return None
    try:
        return importlib.import_module(f"_{name}_heat")
    except Exception as exc:  # installed but broken (e.g. no wheel for this platform's libs)
        print(f"{name} cannot be imported ({type(exc).__name__}: {exc}): skipped")
        return None


def bits(a):
    return np.ascontiguousarray(a).view(np.uint64)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=40, help="cubes per side (default 40)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=10, help="timed samples per variant")
    ap.add_argument("--number", type=int, default=5, help="steps per timed sample")
    ap.add_argument("--check-steps", type=int, default=20,
                    help="steps from the common start for the answer check")
    ap.add_argument("--tolerance", type=float, default=1e-12,
                    help="max |T - T_serial| / max |T_serial| allowed for taichi and warp")
    ap.add_argument("--peers", nargs="*", default=list(PEERS), choices=PEERS,
                    help="peers to time besides relsim (default: all)")
    ap.add_argument("--markdown", metavar="PATH",
                    help="update this benchmark's section of a markdown file")
    C.add_chart_argument(ap, "peers_heat_tet")
    args = ap.parse_args(argv)
    nmax = numba.config.NUMBA_NUM_THREADS
    if max(args.threads) > nmax or min(args.threads) < 1:
        raise SystemExit(f"--threads must lie in 1..NUMBA_NUM_THREADS={nmax}")

    from relsim.domains import tetmesh
    t0 = time.perf_counter()
    mesh = tetmesh.box(args.n)
    rs.configure(target="cpu", threads=args.threads[0])
    rel = Relsim(mesh)
    arrays, start = rel.arrays()
    nv, ne = len(mesh.vertices), len(mesh.edges)
    print(f"mesh: tetmesh.box({args.n}): {nv:,} vertices, {ne:,} edges, {len(mesh.tets):,} tets; "
          f"dt {arrays['dt']:.4g}; set-up {time.perf_counter() - t0:.1f} s")

    taichi = load_peer("taichi") if "taichi" in args.peers else None
    warp = load_peer("warp") if "warp" in args.peers else None
    fixed = {}  # variants that do not depend on the thread count: built once
    if "numba" in args.peers:
        fixed["numba serial"] = NumbaSerial(**arrays)
        fixed["numba prange"] = NumbaPrange(**arrays)
    if warp is not None:
        fixed["warp"] = warp.Heat(**arrays)

    results, checks, failed = {}, [], False
    relsim_bits = None
    try:
        for t in args.threads:
            rs.configure(target="cpu", threads=t)  # also numba.set_num_threads(t)
            variants = {"relsim": rel, **fixed}
            if taichi is not None:
                variants["taichi"] = taichi.Heat(threads=t, **arrays)
            # the check (also the warm-up: every variant compiles or loads its kernels here)
            states = {}
            for name, v in variants.items():
                v.load(*start)
                tc = time.perf_counter()
                for _ in range(args.check_steps):
                    v.step()
                states[name] = v.state()
                print(f"  {t} thread(s): {name}: {args.check_steps} steps "
                      f"in {time.perf_counter() - tc:.2f} s (compilation included)", flush=True)
            ref = states.get("numba serial")
            T_rel, Q_rel = states["relsim"]
            if relsim_bits is None:
                relsim_bits = (bits(T_rel), bits(Q_rel))
            else:
                same = np.array_equal(relsim_bits[0], bits(T_rel)) and \
                    np.array_equal(relsim_bits[1], bits(Q_rel))
                checks.append(f"{t} threads: relsim identical to its {args.threads[0]}-thread "
                              f"answer bit for bit: {'yes' if same else 'NO'}")
                failed |= not same
            if ref is not None:
                for name in ("relsim", "numba prange"):
                    T, Q = states[name]
                    same = np.array_equal(bits(T), bits(ref[0])) and \
                        np.array_equal(bits(Q), bits(ref[1]))
                    checks.append(f"{t} thread(s): {name} = numba serial bit for bit "
                                  f"(T and Q after {args.check_steps} steps): "
                                  f"{'yes' if same else 'NO'}")
                    assert same, checks[-1]
            base = ref[0] if ref is not None else T_rel
            for name in ("taichi", "warp"):
                if name in states:
                    dev = np.abs(states[name][0] - base).max() / np.abs(base).max()
                    ok = dev <= args.tolerance
                    checks.append(f"{t} thread(s): {name}: max |T - T_serial| / max |T_serial| "
                                  f"= {dev:.2e} ({'within' if ok else 'OUTSIDE'} "
                                  f"{args.tolerance:g}; bitwise identical: "
                                  f"{'yes' if dev == 0 else 'no'})")
                    failed |= not ok
            # timing: every variant keeps stepping from its checked state
            res = C.interleaved({name: v.step for name, v in variants.items()},
                                args.repeats, args.number)
            for name, samples in res.items():
                results[(name, t)] = samples
                print(f"  {t} thread(s): {name:13s} min {C.ms(min(samples))} ms/step, "
                      f"median {C.ms(C.summary(samples)[1])}", flush=True)
    finally:
        rs.configure(threads=None)

    names = list(dict.fromkeys(name for name, _ in results))
    rows = []
    for t in args.threads:
        base = results[("relsim", t)]
        for name in names:
            s = results[(name, t)]
            lo, med = C.summary(s)
            threads = "1 (serial)" if name in ("numba serial", "warp") else str(t)
            rows.append([t, name, threads, C.ms(lo), C.ms(med),
                         f"{lo / min(base):.2f}", f"{C.paired_ratio(s, base):.2f}"])
    versions = [f"Numba {numba.__version__}"]
    if taichi is not None:
        versions.append(f"Taichi {taichi.VERSION}")
    if warp is not None:
        versions.append(f"Warp {warp.VERSION}")
    headers = ["--threads", "variant", "threads used", "min ms/step", "median ms/step",
               "/ relsim (of mins)", "/ relsim (median of pairs)"]
    tab = C.table(headers, rows)
    cmd = " ".join(["python bench/peers/heat_tet.py", *(argv if argv is not None
                                                        else sys.argv[1:])])
    out = [f"Command: `{cmd}`.", f"Machine: {C.machine_line()}; {', '.join(versions)}.",
           f"Mesh: `tetmesh.box({args.n})`, {nv:,} vertices, {ne:,} edges; one step = "
           f"tetheat's edge conduction and vertex update (f64). Time per step: min and median "
           f"over {args.repeats} interleaved samples of {args.number} steps; the ratios are to "
           f"relsim at the same --threads (> 1: slower than relsim).", "", tab, "",
           "\n".join(f"* {c}" for c in checks)]
    if warp is not None:
        out.append("* warp: Warp's CPU backend runs each launch on one thread.")
    text = "\n".join(out)
    print()
    print(text)
    C.chart(args.chart, f"Heat on a tet mesh, n={args.n} ({ne:,} edges)",
            [f"{t} thread{'s' if t > 1 else ''}" for t in args.threads],
            {name: [min(results[(name, t)]) * 1e3 for t in args.threads] for name in names},
            "ms per step (min)")
    if args.markdown:
        C.update_markdown(args.markdown, f"Peers: heat on a tet mesh (n={args.n})", text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
