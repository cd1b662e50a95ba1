"""OP2 Airfoil: 2-D Euler finite volumes around a NACA0012, bit-exact with the reference.

    relsim run airfoil [--mesh FILE | --size I J] [--iterations N] [--threads N] [--json PATH]
    relsim bench airfoil [--mesh FILE | --size I J] [--iterations N] [--reference PATH] ...
    relsim explain airfoil

Without --mesh or --size the standard 720 000-cell mesh is generated in-process (--size 400 600;
the same mesh as OP2's new_grid.dat). The kernels are in `solver.py`, the benchmark in
`benchmark.py`. `python -m bench.scaling airfoil` (a tool in the repository's bench/) predicts
its scaling on MPI ranks.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import relsim as rs

from .. import _checkpointing as checkpointing
from .._checks import nonfinite
from .._progress import Progress
from . import solver


def load_mesh(mesh_path=None, size=None):
    """(Op2Mesh, description) from a file or the generator (default: the standard mesh)."""
    op2 = solver.op2mesh
    if mesh_path:
        return op2.read_op2(mesh_path), f"read {mesh_path}"
    i, j = size or (400, 600)
    return op2.naca_mesh(i, j), f"generated NACA0012 I={i} J={j}"


def mesh_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--mesh", metavar="FILE", help="OP2 ASCII mesh file (plain or gzip)")
    src.add_argument("--size", nargs=2, type=int, metavar=("I", "J"),
                     help="generate the NACA0012 mesh in-process (default 400 600: the "
                          "standard 720 000-cell mesh)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run airfoil", description=__doc__.splitlines()[0])
    mesh_arguments(p)
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--threads", type=int, default=None, help="Numba threads (default: all)")
    p.add_argument("--target", default=None,
                   help="backend: a registered target (rs.targets()): cpu (default), "
                   "cpu-serial, interp, cuda")
    p.add_argument("--every", type=int, default=100, help="print the rms every N iterations")
    p.add_argument("--json", metavar="PATH", help="write the rms history (full precision)")
    p.add_argument("--output", metavar="PATH", help="write the final flow (density, pressure, "
                   "Mach number per cell) for ParaView: .vtu, .xdmf, ...")
    checkpointing.add_arguments(p)
    a = p.parse_args(argv)
    try:
        every = checkpointing.parse_every(a.checkpoint_every)
    except ValueError:
        p.error(f"--checkpoint-every must be a positive integer or auto, got "
                f"{a.checkpoint_every}")
    changes = {k: v for k, v in (("target", a.target), ("threads", a.threads)) if v is not None}
    if changes:
        rs.configure(**changes)
    cfg = rs.configure()

    t0 = time.perf_counter()
    mesh, how = load_mesh(a.mesh, a.size)
    t_mesh = time.perf_counter() - t0
    print(f"mesh: {how} in {t_mesh:.2f} s: {mesh.nnode} nodes, {mesh.ncell} cells, "
          f"{mesh.nedge} edges, {mesh.nbedge} bedges")
    threads = cfg.thread_count()
    ranks = rs.ranks().size
    print(f"target {cfg.target}, {threads} thread(s)" +
          (f" on each of {ranks} MPI ranks" if ranks > 1 else ""))
    af = solver.build(mesh)

    relations, globs = [af.nodes, af.cells, af.edges, af.bedges], {"rms": af.rms}
    done = []  # the rms of every iteration so far (a checkpoint keeps them)
    if a.restart:
        done = rs.restart(a.restart, relations, globs)["rms"]
        print(f"restarted from {a.restart} after iteration {len(done)}")
    ckpt = None
    if a.checkpoint:
        ckpt = checkpointing.Checkpointer(
            a.checkpoint, every, a.mttf,
            lambda path: rs.checkpoint(path, relations, globs, meta={"rms": done}))

    bar = Progress(a.iterations, "iterations")

    def report(it, rms):
        if it % a.every == 0 or (it == a.iterations and a.iterations < a.every):
            bar.close()  # (redrawn at the next update)
            print(f" {it:4d}  {rms:10.5e}", flush=True)
        done.append(float(rms))
        if ckpt is not None:
            ckpt(it)
        bar.update(it)

    timings: dict = {}
    start = len(done)
    with bar:
        history = solver.solve(af, a.iterations, report=report, timings=timings,
                               history=list(done))
    q = af.cells.q.numpy()
    digest = solver.q_sha256(q)
    print(f"first iteration {timings['first_s']:.2f} s (compilation or cache load included); "
          f"the other {max(a.iterations - start - 1, 0)}: {timings['loop_s']:.2f} s")
    if len(history):
        print(f"final rms {float(history[-1])!r}")
    print(f"sha256(q) {digest}")
    bad = nonfinite(q=q, rms=history)
    if bad:
        print("FAILED: " + "; ".join(bad))
    ok = check_standard(mesh, history, digest) and not bad
    if a.output:
        write_flow(af, a.output)
        print(f"wrote {a.output}")
    if a.json and rs.ranks().rank == 0:
        with open(a.json, "w") as f:
            json.dump({"mesh": how, "ncell": mesh.ncell, "iterations": a.iterations,
                       "target": cfg.target, "threads": threads,
                       "rms": [float(r) for r in history], "q_sha256": digest,
                       "first_iteration_s": timings["first_s"], "loop_s": timings["loop_s"]},
                      f, indent=1)
            f.write("\n")
        print(f"wrote {a.json}")
    return 0 if ok else 1


def write_flow(af, path) -> None:
    """The cells' density, pressure and Mach number, from q, as cell data of the quad mesh.
    The geometry is declared here, after the run: declared before the first launch it would
    also choose how an MPI run partitions the mesh (by where the cells are)."""
    q = af.cells.q.numpy()
    rho = q[:, 0]
    u2 = (q[:, 1] ** 2 + q[:, 2] ** 2) / rho ** 2
    p = solver.GM1 * (q[:, 3] - 0.5 * rho * u2)
    for name, values in (("density", rho), ("pressure", p),
                         ("mach", np.sqrt(u2 / (solver.GAM * p / rho)))):
        if not af.cells.has_field(name):
            af.cells.new_field(name, rs.f64)
        getattr(af.cells, name).load(values)
    rs.geometry.cells(af.cells, keys="pcell", coords="x", cell_type="quad")
    rs.write(path, af.cells, ["density", "pressure", "mach"])


def check_standard(mesh, history, digest) -> bool:
    """On the standard mesh, compare with the published table and the bit-exact reference."""
    if mesh.ncell != solver.STANDARD_NCELL:
        return True
    ok = True
    for it, want in solver.PUBLISHED_RMS.items():
        if it <= len(history):
            got = f"{history[it - 1]:10.5e}".strip()
            if got != want:
                print(f"  iteration {it}: rms {got} differs from the published {want}")
                ok = False
    if len(history) >= 1000:
        rms = history[999]
        dev = abs(rms - solver.VALIDATION_RMS) * 100 / solver.VALIDATION_RMS
        passed = dev < 0.00001
        print(f"deviation from {solver.VALIDATION_RMS}: {dev:.3e} % -> "
              f"This test is considered {'PASSED' if passed else 'FAILED'}")
        print("all published rms values (iterations 100..1000) reproduced: "
              f"{'yes' if ok else 'NO'}")
        exact = rms == solver.BITEXACT_RMS_1000
        rel = abs(rms - solver.BITEXACT_RMS_1000) / solver.BITEXACT_RMS_1000
        print(f"rms(1000) (an exact sum) vs the serial no-FMA reference's left-to-right sum "
              f"{solver.BITEXACT_RMS_1000!r}: "
              f"{'identical' if exact else f'relative difference {rel:.2e}'}")
        if len(history) == 1000:
            same_q = digest == solver.BITEXACT_Q_SHA256
            print(f"q vs the serial no-FMA reference (sha256): "
                  f"{'bit-exact' if same_q else 'DIFFERENT'}")
            ok = ok and same_q
        ok = ok and passed and rel <= 1e-12
    return ok


def kernels() -> list:
    """(name, kernel, relation) of the five kernels, on a small mesh (`relsim explain
    airfoil`)."""
    af = solver.build(solver.op2mesh.naca_mesh(2, 3))
    return [(name, af.kernels[name], rel) for name, rel in (
        ("save_soln", af.cells), ("adt_calc", af.cells), ("res_calc", af.edges),
        ("bres_calc", af.bedges), ("update", af.cells))]


def bench(argv=None) -> int:
    """`relsim bench airfoil`: relsim against its peers (see benchmark.py)."""
    if argv and "--model" in argv:  # the scaling model moved to bench/scaling/
        print("relsim bench airfoil --model: the scaling model is a tool of the repository now: "
              "python -m bench.scaling airfoil [options]", file=sys.stderr)
        return 2
    from . import benchmark
    return benchmark.main(argv)


__all__ = ["bench", "check_standard", "explain", "load_mesh", "main", "solver"]
