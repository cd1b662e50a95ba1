#!/usr/bin/env python
"""Hand-written deterministic Numba Airfoil (OP2 benchmark), the baseline for relsim's port.

Reproduces the serial no-FMA OP2 Airfoil bit for bit with any thread count: every stage
computes the flux of each interior edge once into a per-edge temporary (``flux``), then each
cell, in parallel, folds its edges' fluxes in ascending edge index (+F as the edge's first
cell, -F as its second), then its boundary edges' terms in ascending bedge index, and applies
``update``. The printed rms sums the cells' terms exactly, rounded once, as relsim sums a float
Global (the reference's left-to-right sum can differ in the last bits; q is bit-exact).

Loop fusion (no change to any rounded operation): save_soln is fused into the first stage's
cell pass, and adt_calc for the next stage into each cell pass (adt[c] depends only on q[c]).

Usage::

    python bench/airfoil_numba.py --mesh new_grid.dat.gz --iterations 1000 --threads 2
    python bench/airfoil_numba.py --size 400 600 [--chart bench/out/airfoil_numba.png]

API: ``run(mesh, iterations, threads) -> (rms_history, q)``.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import pathlib
import sys
import time

import numba
import numpy as np
from numba import njit, prange

_ROOT = pathlib.Path(__file__).resolve().parents[1]
try:
    if str(_ROOT) not in sys.path:
        sys.path.insert(0, str(_ROOT))
    from relsim.domains.op2mesh import Op2Mesh, naca_mesh, read_op2
    from relsim.runtime.folds import exact_sum
except ImportError:  # relsim core not importable: use the mesh and sum modules on their own
    sys.path.insert(0, str(_ROOT / "relsim" / "domains"))
    sys.path.insert(0, str(_ROOT / "relsim" / "runtime"))
    import exact_sum
    from op2mesh import Op2Mesh, naca_mesh, read_op2

# ---------------------------------------------------------------------------------------
# Constants: doubles initialised from single-precision literals (reference section 2.2).

GAM = float(np.float32(1.4))  # 1.399999976158142
GM1 = GAM - 1.0  # 0.3999999761581421
CFL = float(np.float32(0.9))  # 0.8999999761581421
EPS = float(np.float32(0.05))  # 0.05000000074505806
MACH = float(np.float32(0.4))  # 0.4000000059604645


def freestream() -> np.ndarray:
    """q_inf = (r, r u, 0, r e): p = r = 1, u = sqrt(gam p / r) mach, e = p/(r gm1) + 0.5 u u."""
    p = 1.0
    r = 1.0
    u = math.sqrt(GAM * p / r) * MACH  # 0.4732863856704763
    e = p / (r * GM1) + 0.5 * u * u  # 2.612000150442132
    return np.array([r, r * u, 0.0, r * e])


QINF = freestream()
QINF0, QINF1, QINF2, QINF3 = (float(v) for v in QINF)

STANDARD_NCELL = 720_000
VALIDATION_RMS = 1.060114637578e-4  # OP2's 13-digit constant
BITEXACT_RMS_1000 = 1.06011463757807830e-04  # serial no-FMA result, iteration 1000
BITEXACT_Q_SHA256 = "208a59ef723f7b2ea9009ba2b1cd57f8ca17d9f0b6d4a9b23435ff6f6cae1472"

_JIT = dict(error_model="numpy", cache=True)  # no fastmath: no FMA contraction

# ---------------------------------------------------------------------------------------
# Kernels. Every expression keeps the reference's grouping; do not "simplify".


@njit(inline="always", **_JIT)
def _adt_cell(x, cell, q, c):
    ri = 1.0 / q[c, 0]
    u = ri * q[c, 1]
    v = ri * q[c, 2]
    cs = math.sqrt((GAM * GM1) * (ri * q[c, 3] - 0.5 * (u * u + v * v)))
    n0 = cell[c, 0]
    n1 = cell[c, 1]
    n2 = cell[c, 2]
    n3 = cell[c, 3]
    dx = x[n1, 0] - x[n0, 0]
    dy = x[n1, 1] - x[n0, 1]
    a = abs(u * dy - v * dx) + cs * math.sqrt(dx * dx + dy * dy)
    dx = x[n2, 0] - x[n1, 0]
    dy = x[n2, 1] - x[n1, 1]
    a = a + (abs(u * dy - v * dx) + cs * math.sqrt(dx * dx + dy * dy))
    dx = x[n3, 0] - x[n2, 0]
    dy = x[n3, 1] - x[n2, 1]
    a = a + (abs(u * dy - v * dx) + cs * math.sqrt(dx * dx + dy * dy))
    dx = x[n0, 0] - x[n3, 0]
    dy = x[n0, 1] - x[n3, 1]
    a = a + (abs(u * dy - v * dx) + cs * math.sqrt(dx * dx + dy * dy))
    return a / CFL


@njit(parallel=True, **_JIT)
def adt_calc(x, cell, q, adt):
    for c in prange(cell.shape[0]):
        adt[c] = _adt_cell(x, cell, q, c)


@njit(parallel=True, **_JIT)
def edge_flux(x, edge, ecell, q, adt, flux):
    """res_calc's flux F of every interior edge (F leaves ecell[e, 0])."""
    for e in prange(edge.shape[0]):
        n1 = edge[e, 0]
        n2 = edge[e, 1]
        c1 = ecell[e, 0]
        c2 = ecell[e, 1]
        dx = x[n1, 0] - x[n2, 0]
        dy = x[n1, 1] - x[n2, 1]
        a0 = q[c1, 0]
        a1 = q[c1, 1]
        a2 = q[c1, 2]
        a3 = q[c1, 3]
        b0 = q[c2, 0]
        b1 = q[c2, 1]
        b2 = q[c2, 2]
        b3 = q[c2, 3]
        ri1 = 1.0 / a0
        p1 = GM1 * (a3 - (0.5 * ri1) * (a1 * a1 + a2 * a2))
        vol1 = ri1 * (a1 * dy - a2 * dx)
        ri2 = 1.0 / b0
        p2 = GM1 * (b3 - (0.5 * ri2) * (b1 * b1 + b2 * b2))
        vol2 = ri2 * (b1 * dy - b2 * dx)
        mu = (0.5 * (adt[c1] + adt[c2])) * EPS
        flux[e, 0] = 0.5 * (vol1 * a0 + vol2 * b0) + mu * (a0 - b0)
        flux[e, 1] = 0.5 * (((vol1 * a1 + p1 * dy) + vol2 * b1) + p2 * dy) + mu * (a1 - b1)
        flux[e, 2] = 0.5 * (((vol1 * a2 - p1 * dx) + vol2 * b2) - p2 * dx) + mu * (a2 - b2)
        flux[e, 3] = 0.5 * (vol1 * (a3 + p1) + vol2 * (b3 + p2)) + mu * (a3 - b3)


@njit(parallel=True, **_JIT)
def cell_stage(
    x, cell, bedge, bound, cface, nface, bptr, blist, flux, q, qold, adt, d2, first, want_d2
):
    """Per cell: res = fold of edge fluxes (ascending edge), then bres_calc terms (ascending
    bedge); then update (q = q_old - res/adt); then adt_calc for the next stage.
    ``first``: also save_soln (q_old = q) before updating. ``want_d2``: store delta**2."""
    for c in prange(cell.shape[0]):
        q0 = q[c, 0]
        q1 = q[c, 1]
        q2 = q[c, 2]
        q3 = q[c, 3]
        # res_calc: fold in ascending edge order. cface = 2 * edge + side.
        r0 = 0.0
        r1 = 0.0
        r2 = 0.0
        r3 = 0.0
        for k in range(nface[c]):
            s = cface[c, k]
            e = s >> 1
            if (s & 1) == 0:
                r0 = r0 + flux[e, 0]
                r1 = r1 + flux[e, 1]
                r2 = r2 + flux[e, 2]
                r3 = r3 + flux[e, 3]
            else:
                r0 = r0 - flux[e, 0]
                r1 = r1 - flux[e, 1]
                r2 = r2 - flux[e, 2]
                r3 = r3 - flux[e, 3]
        # bres_calc: this cell's boundary edges in ascending bedge order.
        for k in range(bptr[c], bptr[c + 1]):
            b = blist[k]
            n1 = bedge[b, 0]
            n2 = bedge[b, 1]
            dx = x[n1, 0] - x[n2, 0]
            dy = x[n1, 1] - x[n2, 1]
            ri = 1.0 / q0
            p1 = GM1 * (q3 - (0.5 * ri) * (q1 * q1 + q2 * q2))
            if bound[b] == 1:
                r1 = r1 + p1 * dy
                r2 = r2 + (-p1) * dx
            else:
                vol1 = ri * (q1 * dy - q2 * dx)
                ri2 = 1.0 / QINF0
                p2 = GM1 * (QINF3 - (0.5 * ri2) * (QINF1 * QINF1 + QINF2 * QINF2))
                vol2 = ri2 * (QINF1 * dy - QINF2 * dx)
                mu = adt[c] * EPS
                r0 = r0 + (0.5 * (vol1 * q0 + vol2 * QINF0) + mu * (q0 - QINF0))
                r1 = r1 + (
                    0.5 * (((vol1 * q1 + p1 * dy) + vol2 * QINF1) + p2 * dy) + mu * (q1 - QINF1)
                )
                r2 = r2 + (
                    0.5 * (((vol1 * q2 - p1 * dx) + vol2 * QINF2) - p2 * dx) + mu * (q2 - QINF2)
                )
                r3 = r3 + (0.5 * (vol1 * (q3 + p1) + vol2 * (QINF3 + p2)) + mu * (q3 - QINF3))
        # save_soln (first stage) and update.
        if first:
            o0 = q0
            o1 = q1
            o2 = q2
            o3 = q3
            qold[c, 0] = o0
            qold[c, 1] = o1
            qold[c, 2] = o2
            qold[c, 3] = o3
        else:
            o0 = qold[c, 0]
            o1 = qold[c, 1]
            o2 = qold[c, 2]
            o3 = qold[c, 3]
        adti = 1.0 / adt[c]
        d0 = adti * r0
        d1 = adti * r1
        d2_ = adti * r2
        d3 = adti * r3
        q[c, 0] = o0 - d0
        q[c, 1] = o1 - d1
        q[c, 2] = o2 - d2_
        q[c, 3] = o3 - d3
        if want_d2:
            d2[c, 0] = d0 * d0
            d2[c, 1] = d1 * d1
            d2[c, 2] = d2_ * d2_
            d2[c, 3] = d3 * d3
        # adt_calc for the next stage.
        adt[c] = _adt_cell(x, cell, q, c)


def exact_total(a):
    """The rms terms' sum as relsim sums a float Global: exactly, rounded once (the reference
    keeps one running sum in index order, which can differ in the last bits)."""
    total = np.zeros(1)
    exact_sum.fold_of(total, a.reshape(-1, 1))()
    return total[0]


# ---------------------------------------------------------------------------------------
# Driver


def gather_structures(mesh: Op2Mesh):
    """Per-cell face lists for the deterministic gather.

    cface[c, :nface[c]]: 2*e + side for the edges of c in ascending e (side 0: c is the
    edge's first cell, +F; side 1: its second, -F). blist[bptr[c]:bptr[c+1]]: the bedges
    of c in ascending order.
    """
    ncell = mesh.ncell
    slots = mesh.ecell.reshape(-1).astype(np.int64)  # slot s = 2*e + side
    order = np.argsort(slots, kind="stable")  # by cell, then ascending slot = ascending edge
    nface = np.bincount(slots, minlength=ncell)
    width = max(int(nface.max()) if ncell else 0, 1)
    start = np.zeros(ncell + 1, dtype=np.int64)
    np.cumsum(nface, out=start[1:])
    rank = np.arange(len(order)) - start[slots[order]]
    cface = np.full((ncell, width), -1, dtype=np.int32)
    cface[slots[order], rank] = order.astype(np.int32)
    becell = mesh.becell.astype(np.int64)
    border = np.argsort(becell, kind="stable")
    bptr = np.zeros(ncell + 1, dtype=np.int32)
    np.cumsum(np.bincount(becell, minlength=ncell), out=bptr[1:])
    return cface, nface.astype(np.int32), bptr, border.astype(np.int32)


def run(
    mesh: Op2Mesh,
    iterations: int = 1000,
    threads: int | None = None,
    *,
    rms_every: int = 1,
    report=None,
    timings: dict | None = None,
):
    """Run Airfoil on ``mesh``. Returns (rms_history, q).

    rms_history[k] is the rms after iteration (k + 1) * rms_every (by default every
    iteration), from the exact sum of its terms. ``report(iter, rms)`` is called for each.
    ``timings``, if given, receives setup_s and loop_s (JIT time is in loop_s unless the
    kernels were compiled or cached before, see :func:`warmup`).
    """
    if threads is not None:
        numba.set_num_threads(int(threads))
    t0 = time.perf_counter()
    x = np.ascontiguousarray(mesh.x)
    cell = np.ascontiguousarray(mesh.cell)
    bedge = np.ascontiguousarray(mesh.bedge)
    bound = np.ascontiguousarray(mesh.bound)
    cface, nface, bptr, blist = gather_structures(mesh)
    ncell = mesh.ncell
    q = np.empty((ncell, 4))
    q[:] = QINF
    qold = np.empty_like(q)
    adt = np.empty(ncell)
    flux = np.empty((mesh.nedge, 4))
    d2 = np.empty((ncell, 4))
    hist = []
    t1 = time.perf_counter()

    adt_calc(x, mesh.cell, q, adt)
    for it in range(1, iterations + 1):
        want = it % rms_every == 0
        # stage 1 (with save_soln), stage 2 (with the rms terms)
        edge_flux(x, mesh.edge, mesh.ecell, q, adt, flux)
        cell_stage(
            x, cell, bedge, bound, cface, nface, bptr, blist, flux, q, qold, adt, d2, True, False
        )
        edge_flux(x, mesh.edge, mesh.ecell, q, adt, flux)
        cell_stage(
            x, cell, bedge, bound, cface, nface, bptr, blist, flux, q, qold, adt, d2, False, want
        )
        if want:
            rms = math.sqrt(exact_total(d2) / ncell)
            hist.append(rms)
            if report is not None:
                report(it, rms)
    t2 = time.perf_counter()
    if timings is not None:
        timings["setup_s"] = t1 - t0
        timings["loop_s"] = t2 - t1
    return np.array(hist), q


def warmup(threads: int | None = None) -> float:
    """Compile (or load from cache) every kernel on a tiny mesh; returns the seconds taken."""
    t = time.perf_counter()
    run(naca_mesh(2, 3), 2, threads)
    return time.perf_counter() - t


def q_sha256(q: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(q, dtype="<f8").tobytes()).hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--mesh", metavar="FILE", help="OP2 ASCII mesh (plain or .gz)")
    src.add_argument(
        "--size",
        nargs=2,
        type=int,
        metavar=("I", "J"),
        help="generate the NACA0012 mesh in-process (400 600 = standard)",
    )
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help=f"Numba threads (default {numba.config.NUMBA_NUM_THREADS})",
    )
    ap.add_argument(
        "--rms-every",
        type=int,
        default=1,
        help="compute the (exact-sum) rms every N iterations (default 1)",
    )
    ap.add_argument(
        "--no-warmup",
        action="store_true",
        help="do not compile before timing (JIT/cache load counts in the time)",
    )
    ap.add_argument(
        "--chart",
        metavar="PATH",
        default=str(_ROOT / "bench" / "out" / "airfoil_numba.png"),
        help="bar chart PNG of the set-up and loop times, drawn when matplotlib is installed "
        "('' = none; default: %(default)s)",
    )
    args = ap.parse_args(argv)

    t = time.perf_counter()
    mesh = read_op2(args.mesh) if args.mesh else naca_mesh(*args.size)
    how = f"read {args.mesh}" if args.mesh else f"generated I={args.size[0]} J={args.size[1]}"
    print(
        f"mesh: {how} in {time.perf_counter() - t:.2f} s: {mesh.nnode} nodes, "
        f"{mesh.ncell} cells, {mesh.nedge} edges, {mesh.nbedge} bedges"
    )
    threads = args.threads
    if threads is not None:
        numba.set_num_threads(threads)
    print(f"threads: {numba.get_num_threads()}")
    if not args.no_warmup:
        print(
            f"warm-up (JIT or cache load): {warmup(threads):.2f} s; "
            f"threading layer {numba.threading_layer()}"
        )

    t_start = [time.perf_counter()]

    def report(it, rms):
        if it % 100 == 0:
            print(
                f" {it:5d}  {rms:10.5e}   ({time.perf_counter() - t_start[0]:7.2f} s)", flush=True
            )

    timings = {}
    t_start[0] = time.perf_counter()
    hist, q = run(
        mesh, args.iterations, threads, rms_every=args.rms_every, report=report, timings=timings
    )
    print(
        f"setup {timings['setup_s']:.2f} s; time loop: {timings['loop_s']:.2f} s wall "
        f"for {args.iterations} iterations"
    )
    if len(hist):
        print(f"final rms {hist[-1]:.17e}")
    print(f"sha256(q) {q_sha256(q)}")
    try:
        from relsim.report import chart
    except ImportError:  # relsim core not importable: no chart
        chart = None
    msg = chart(
        args.chart,
        f"Airfoil, hand-written Numba ({mesh.ncell} cells, {args.iterations} iterations, "
        f"{numba.get_num_threads()} threads)",
        ["setup", "time loop"],
        {"seconds": [timings["setup_s"], timings["loop_s"]]},
        "s",
    ) if chart else None
    if msg:
        print(msg)
    if (
        mesh.ncell == STANDARD_NCELL
        and args.iterations == 1000
        and len(hist)
        and args.iterations % args.rms_every == 0
    ):
        dev = abs(hist[-1] - VALIDATION_RMS) * 100 / VALIDATION_RMS
        print(
            f"deviation from {VALIDATION_RMS}: {dev:.3e} % -> "
            f"{'PASSED' if dev < 0.00001 else 'FAILED'}"
        )
        same = q_sha256(q) == BITEXACT_Q_SHA256
        print(f"q bit-exact vs serial no-FMA reference: {'yes' if same else 'NO'}")
        rel = abs(hist[-1] - BITEXACT_RMS_1000) / BITEXACT_RMS_1000
        print(f"rms (an exact sum) vs the reference's left-to-right sum: {rel:.1e} relative")
    return 0


if __name__ == "__main__":
    sys.exit(main())
