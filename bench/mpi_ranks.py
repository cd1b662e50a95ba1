#!/usr/bin/env python
"""The same workload on 1, 2, 3 ... MPI ranks: time per step, what each rank exchanges, and
whether every rank count gives the one-process bits.

For each rank count the script starts ``mpiexec -n N python bench/mpi_ranks.py --worker ...``
(one process without mpiexec for N = 1); the worker builds the problem, runs warm-up steps
(compilation), then times `--steps` steps and reports, from rank 0: seconds per step, ghost
messages and bytes received per step (summed over ranks), the ghost and owned rows of the
relations, and a digest of the result. Workloads:

* ``heat``: the design sketch's heat conduction on an n x n grid graph (edges scatter into
  vertices, a Global sum per step);
* ``tetheat``: P1 heat on a Kuhn-cube tet mesh, ``tetmesh.box(n)``;
* ``diffusion2d``: a 5-point periodic stencil on an n x n grid (`swap` each step);
* ``airfoil``: OP2 Airfoil on the generated NACA0012 mesh I=n, J=1.5n (n=400: the standard
  720 000-cell mesh), one iteration per step.

``--capture both`` (the default) times each rank count twice: the step as a Python loop of
launches, and recorded with ``rs.capture`` and replayed (compiled segments, which on several
ranks make their ghost exchanges and Global merges themselves, calling MPI from compiled
code); "us/launch" is the step's time over its launches. "MPI" is the time the slowest rank
spent in exchanges and merges (waiting for the others included), and "beyond" what a step on
several ranks costs over one rank's step (its compiled loops and their Python) and that.

On a machine with fewer cores than ranks the runs are oversubscribed (said in the table): the
point is then the exchange volumes and the bits, not the speed-up.

Usage::

    python bench/mpi_ranks.py [--workload heat] [--n 200] [--ranks 1 2 3] [--steps 50]
                              [--capture both|yes|no] [--busy K]
                              [--markdown docs/benchmarks/history.md] [--chart PATH]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
from _common import ROOT, add_chart_argument, chart, machine_line, table, update_markdown


def _heat(n):
    import relsim as rs
    sys.path.insert(0, str(ROOT))
    from relsim_simulations.heat import build
    V, E, conduct, update, heat = build(n, n, 0.1)

    def step():
        rs.assign(heat, 0.0)
        E.foreach(conduct)
        V.foreach(update)
    return step, [V, E], lambda: [V.T.numpy(copy=True), np.array([heat.value])]


def _tetheat(n):
    import relsim as rs
    sys.path.insert(0, str(ROOT))
    from relsim.domains import tetmesh
    from relsim_simulations.tetheat import build, initial_temperature
    mesh = tetmesh.box(n)
    setup, conduct, update, dt, heat = build(mesh, 0.5)
    V, E = mesh.vertices, mesh.edges
    V.T.load(initial_temperature(mesh))
    setup()

    def step():
        rs.assign(heat, 0.0)
        E.foreach(conduct)
        V.foreach(update)
    return step, [V, E, mesh.tets], lambda: [V.T.numpy(copy=True), np.array([heat.value])]


def _diffusion2d(n):
    import relsim as rs
    from relsim.domains import grid
    g = grid.Grid((n, n), spacing=1.0 / n, periodic=True)
    C = g.cells
    xy = C.center.numpy()
    C.new_field("u", rs.f64).load(np.sin(2 * np.pi * xy[:, 0]) * np.sin(2 * np.pi * xy[:, 1]))
    C.new_field("un", rs.f64)
    r = rs.Global(rs.f64, 0.2)

    @rs.kernel
    def stencil(c):
        c.un = c.u + r * (c(1, 0).u + c(-1, 0).u + c(0, 1).u + c(0, -1).u - 4.0 * c.u)

    def step():
        C.foreach(stencil)
        C.u.swap(C.un)
    return step, [C], lambda: [C.u.numpy(copy=True)]


def _airfoil(n):
    import relsim as rs
    sys.path.insert(0, str(ROOT))
    from relsim_simulations.airfoil import solver
    af = solver.build(solver.op2mesh.naca_mesh(n, max(2, 3 * n // 2)))
    k, cells = af.kernels, af.cells

    def step():  # one iteration of the two-stage scheme
        cells.foreach(k["save_soln"])
        for _ in range(2):
            cells.foreach(k["adt_calc"])
            af.edges.foreach(k["res_calc"])
            af.bedges.foreach(k["bres_calc"])
            rs.assign(af.rms, 0.0)
            cells.foreach(k["update"])
    return step, [af.nodes, cells, af.edges, af.bedges], \
        lambda: [cells.q.numpy(copy=True), np.array([af.rms.value])]


WORKLOADS = {"heat": _heat, "tetheat": _tetheat, "diffusion2d": _diffusion2d,
             "airfoil": _airfoil}


def worker(workload: str, n: int, steps: int, warmup: int, capture: bool) -> None:
    import relsim as rs
    from relsim.runtime.capture_ops import LaunchOp, walk
    from relsim.runtime.parallel import exchange
    step, relations, result = WORKLOADS[workload](n)
    with rs.capture() as captured:  # (the first warm-up step, recorded)
        step()
    launches = sum(isinstance(op, LaunchOp) for op in walk(captured.ops))
    if capture:  # replays: compiled segments (on several ranks with their MPI calls)
        captured.compile()
        step = captured
    for _ in range(warmup - 1):
        step()
    result()  # (a host read: collective)
    r = rs.ranks()
    if r.size > 1:
        from mpi4py import MPI
        MPI.COMM_WORLD.Barrier()
    before = exchange.traffic()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if r.size > 1:
        MPI.COMM_WORLD.Barrier()
    seconds = (time.perf_counter() - t0) / steps
    after = exchange.traffic()
    traffic = {k: after[k] - before[k] for k in before}
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes()
                                     for a in result())).hexdigest()[:16]
    rows = {R.name: (R.size, R.partition.owned if R.partition else R.size,
                     R.partition.ghosts if R.partition else 0) for R in relations}
    if r.size > 1:
        everyone = MPI.COMM_WORLD.gather((seconds, traffic, rows), root=0)
    else:
        everyone = [(seconds, traffic, rows)]
    if r.rank == 0:
        print("RESULT " + json.dumps({
            "seconds": max(e[0] for e in everyone),
            "messages": sum(e[1]["ghost_messages"] for e in everyone) / steps,
            "bytes": sum(e[1]["ghost_bytes"] for e in everyone) / steps,
            "exchange": max(e[1]["ghost_seconds"] for e in everyone) / steps,
            "merge": max(e[1]["merge_seconds"] for e in everyone) / steps,
            "ghosts": {name: sum(e[2][name][2] for e in everyone) for name in rows},
            "sizes": {name: rows[name][0] for name in rows},
            "threads": rs.configure().thread_count(),
            "launches": launches,
            "digest": digest}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="heat")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--threads", type=int, default=None,
                    help="Numba threads per rank (default: cores / ranks on the node)")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--capture", choices=("both", "yes", "no"), default="both",
                    help="time the step as launches, captured (rs.capture), or both")
    ap.add_argument("--busy", type=int, default=0, metavar="K",
                    help="K busy Python loops running beside every run (a loaded machine)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--markdown", metavar="PATH", default=None)
    add_chart_argument(ap, "mpi_ranks")
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.workload, a.n, a.steps, a.warmup, a.capture == "yes")
        return 0
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.busy)]
    try:
        return _runs(a, mpiexec, cores)
    finally:
        for p in busy:
            p.kill()


def _runs(a, mpiexec, cores) -> int:
    rows, base, digest = [], {}, None
    modes = {"both": ("no", "yes"), "yes": ("yes",), "no": ("no",)}[a.capture]
    for n in a.ranks:
        for mode in modes:
            cmd = [sys.executable, __file__, "--worker", "--workload", a.workload, "--n",
                   str(a.n), "--steps", str(a.steps), "--warmup", str(max(a.warmup, 1)),
                   "--capture", mode]
            env = dict(os.environ)
            if a.threads:
                env["NUMBA_NUM_THREADS"] = str(a.threads)
            if n > 1:
                if mpiexec is None:
                    print(f"{n} ranks: skipped (no mpiexec: pip install 'relsim[mpi]')")
                    continue
                cmd = [mpiexec, "-n", str(n), *cmd]
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
            if p.returncode or not line:
                print(f"{n} ranks failed:\n{p.stderr[-2000:]}")
                return 1
            r = json.loads(line[0][len("RESULT "):])
            first = base.setdefault(mode, r)
            digest = digest or r["digest"]
            ghosts = ", ".join(f"{k} {v / r['sizes'][k]:.1%}" for k, v in r["ghosts"].items())
            rows.append([f"{n} x {r['threads']} thread(s)" + (" (oversubscribed)" if n > cores
                                                               else ""),
                         "captured" if mode == "yes" else "launches",
                         f"{r['seconds'] * 1e3:.3f}", f"{r['seconds'] * 1e6 / r['launches']:.1f}",
                         f"{first['seconds'] / r['seconds']:.2f}",
                         f"{r['messages']:.0f}", f"{r['bytes'] / 1024:.1f}",
                         f"{r['exchange'] * 1e3:.3f}", f"{r['merge'] * 1e3:.3f}",
                         f"{(r['exchange'] + r['merge']) / r['seconds']:.1%}",
                         "" if r is first else f"{_beyond(r, first) * 1e6:.1f}",
                         ghosts,
                         "yes" if r["digest"] == digest else "NO"])
    body = (f"{a.workload}, n={a.n}, {a.steps} steps after {a.warmup} warm-up"
            + (f", {a.busy} busy process(es) beside it" if a.busy else "") + f"; {machine_line()}"
            f"\n\n" + table(["ranks x threads", "step", "ms/step", "us/launch",
                             "speed-up (over 1 rank, same step)", "ghost msgs/step",
                             "ghost KiB/step", "exchange ms/step (slowest rank)",
                             "merge ms/step (slowest rank)", "time in MPI",
                             "beyond 1 rank's step + MPI (us)",
                             "ghost rows (of each relation)",
                             "same bits as 1"], rows))
    print(body)
    if a.markdown:
        update_markdown(a.markdown, f"MPI ranks: {a.workload}", body)
    chart(a.chart, f"{a.workload} on MPI ranks", [f"{r[0]}, {r[1]}" for r in rows],
          {"ms/step": [float(r[2]) for r in rows]}, "ms per step")
    return 0 if all(r[-1] == "yes" for r in rows) else 1


def _beyond(r, one) -> float:
    """Seconds a step on several ranks (`r`) takes beyond one rank's step (`one`: its
    compiled loops and their Python) and its time in MPI."""
    return r["seconds"] - one["seconds"] - r["exchange"] - r["merge"]


if __name__ == "__main__":
    raise SystemExit(main())
