"""`relsim bench airfoil`: relsim's Airfoil against its peers, on the same mesh and machine.

Peers, timed in one process and interleaved (each repeat runs every variant at every thread
count in turn, so slow phases of a shared machine hit all of them alike); figures are the
minimum and median over repeats:

* ``relsim``: this port (`solver.py`: the five kernels, res as reductions through keys),
  target ``cpu``;
* ``relsim-gather``: the same solver written in relsim as the baseline's explicit fused gather
  (`gather.py`): the difference from ``relsim`` is what the lowering of key reductions costs;
* ``numba``: the hand-written deterministic Numba gather, ``bench/airfoil_numba.py`` of the
  relsim repository (not installed with relsim: run from a checkout, or pass ``--numba PATH``);
* ``op2``: optionally, a reference binary built from OP2 (``--reference PATH``, e.g.
  ``airfoil_openmp`` of ``apps/c/airfoil/airfoil_plain/dp``), run in a scratch directory that
  holds the mesh as ``new_grid.dat``, with ``OMP_NUM_THREADS``; its time is OP2's own "Max total
  runtime" (always its 1000 iterations) and its printed rms values are compared with relsim's.

Timed: the time loop, with each variant's set-up of its gather structures (relsim's inverse
indexes are built on the first launch; the Numba baseline's face lists in ``run``); not the mesh,
and not compilation (every variant is warmed up first). Cold and warm start (``relsim run airfoil
... --iterations 1`` in a fresh process, with empty and then filled compile caches) are measured
separately. Results are checked: relsim's rms history and q must equal the baseline's bit for
bit. The table goes to stdout; ``--markdown PATH`` also writes it as the ``Airfoil`` section of
that file (e.g. ``docs/benchmarks/history.md``), ``--png PATH`` draws a PNG when matplotlib is
installed (it is optional: without it, no PNG, and the run says so). Neither is written by
default.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numba
import numpy as np

import relsim as rs
from relsim.report import machine_line, table, update_markdown

from . import gather, load_mesh, mesh_arguments, solver

REPO = pathlib.Path(__file__).resolve().parents[2]
OP2_OPENMP_2T = 62.6  # s, OP2 generated OpenMP, 2 threads, this machine kind (reference doc §6)


def load_numba_peer(path=None):
    """The hand-written baseline module, from `path` or bench/ of this checkout."""
    candidates = [pathlib.Path(path)] if path else [
        REPO / "bench" / "airfoil_numba.py", pathlib.Path.cwd() / "bench" / "airfoil_numba.py"]
    for p in candidates:
        if p.is_file():
            spec = importlib.util.spec_from_file_location("airfoil_numba_peer", p)
            mod = importlib.util.module_from_spec(spec)
            # registered: Numba's cache finds the module of a cached function by name
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
            return mod
    raise SystemExit(
        "relsim bench airfoil: the hand-written Numba peer bench/airfoil_numba.py was not found "
        f"(looked in {', '.join(str(c) for c in candidates)}). It lives in the relsim "
        "repository, not in the installed package: run from a checkout, pass --numba PATH, "
        "or --no-numba to time relsim alone.")


# -- the variants ----------------------------------------------------------------------------

def run_relsim(mesh, iterations, threads, module=solver):
    rs.configure(threads=threads)
    af = module.build(mesh)
    t0 = time.perf_counter()
    hist = module.solve(af, iterations)
    return time.perf_counter() - t0, hist, af.cells.q.numpy().copy()


def run_numba(peer, mesh, iterations, threads):
    timings: dict = {}
    hist, q = peer.run(mesh, iterations, threads, timings=timings)
    return timings["setup_s"] + timings["loop_s"], hist, q


def run_reference(binary, threads, workdir):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    t0 = time.perf_counter()
    proc = subprocess.run([os.path.abspath(binary)], cwd=workdir, env=env, capture_output=True,
                          text=True)
    wall = time.perf_counter() - t0
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise SystemExit(f"relsim bench airfoil: {binary} failed ({proc.returncode}):\n"
                         f"{out[-2000:]}")
    m = re.search(r"Max total runtime\s*=\s*([0-9.eE+-]+)", out)
    rms = {int(i): v for i, v in re.findall(r"^\s*(\d+)\s+(\d\.\d{5}e[-+]\d\d)\s*$", out, re.M)}
    return (float(m.group(1)) if m else wall), rms


def stage_mesh_file(mesh, mesh_path, workdir) -> None:
    """The mesh as `new_grid.dat` in workdir (OP2's Airfoil reads that name)."""
    dest = pathlib.Path(workdir) / "new_grid.dat"
    if mesh_path:
        with open(mesh_path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        if not gz:
            os.symlink(os.path.abspath(mesh_path), dest)
            return
    solver.op2mesh.write_op2(mesh, dest)


# -- per-launch profile ----------------------------------------------------------------------

def profile(mesh, iterations, threads, peer) -> list:
    """Milliseconds per stage (min and median over `iterations`) of each relsim launch and of
    the baseline's two passes, interleaved per iteration. res_calc and bres_calc leave their
    reductions into res pending; update folds them row by row before its own body (and its rms
    slots are folded when rms is read, at the end of the iteration: not in these times)."""
    rs.configure(threads=threads)
    af = solver.build(mesh)
    solver.solve(af, 1)
    k, C, E, B = af.kernels, af.cells, af.edges, af.bedges
    launches = [("save_soln (once per iteration)", C, k["save_soln"]),
                ("adt_calc", C, k["adt_calc"]), ("res_calc (fold left pending)", E, k["res_calc"]),
                ("bres_calc (fold left pending)", B, k["bres_calc"]),
                ("update (folds res's pending slots first)", C, k["update"]),
                ("update_adt: update, then adt_calc, one pass", C, k["update_adt"]),
                ("update_adt_save: ... then save_soln", C, k["update_adt_save"])]
    hw = None
    if peer is not None:
        numba.set_num_threads(threads)
        cface, nface, bptr, blist = peer.gather_structures(mesh)
        x, q = np.ascontiguousarray(mesh.x), np.tile(solver.QINF, (mesh.ncell, 1))
        qold, adt = np.empty_like(q), np.empty(mesh.ncell)
        flux, d2 = np.empty((mesh.nedge, 4)), np.empty_like(q)
        peer.adt_calc(x, mesh.cell, q, adt)
        hw = (x, q, qold, adt, flux, d2, cface, nface, bptr, blist)
    times: dict = {}
    clock = time.perf_counter

    def timed(name, fn, *args):
        t0 = clock()
        fn(*args)
        times.setdefault(name, []).append(clock() - t0)

    for _ in range(iterations):
        timed(launches[0][0], launches[0][1].foreach, launches[0][2])
        for _ in range(2):  # the two stages, in the solver's order
            for name, rel, kern in launches[1:]:
                timed(name, rel.foreach, kern)
        if hw is not None:
            x, q, qold, adt, flux, d2, cface, nface, bptr, blist = hw
            for first in (True, False):
                timed("numba edge_flux", peer.edge_flux, x, mesh.edge, mesh.ecell, q, adt,
                      flux)
                timed("numba cell_stage (fold, bres, update, adt)", peer.cell_stage, x,
                      mesh.cell, mesh.bedge, mesh.bound, cface, nface, bptr, blist, flux, q,
                      qold, adt, d2, first, not first)
            timed("numba rms sum (once per iteration)", peer.exact_total, d2)
    return [(n, min(v) * 1e3, statistics.median(v) * 1e3) for n, v in times.items()]


# -- start-up --------------------------------------------------------------------------------

def startup(mesh_args, threads) -> dict:
    """Seconds for `relsim run airfoil <mesh> --iterations 1` in a fresh process: cold (empty
    relsim and Numba caches), then warm (the same caches); plus each run's first iteration."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="relsim-startup-") as d:
        env = dict(os.environ, RELSIM_CACHE_DIR=os.path.join(d, "relsim"),
                   NUMBA_CACHE_DIR=os.path.join(d, "numba"))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-m", "relsim.cli", "run", "airfoil", *mesh_args,
               "--iterations", "1", "--threads", str(threads)]
        for kind in ("cold", "warm"):
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if proc.returncode != 0:
                raise SystemExit(f"start-up run failed:\n{proc.stdout}{proc.stderr}")
            m = re.search(r"first iteration ([0-9.]+) s", proc.stdout)
            out[kind] = (wall, float(m.group(1)) if m else float("nan"))
    return out


# -- report ----------------------------------------------------------------------------------

def draw_png(path, results, threads_list) -> str:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no PNG drawn (pip install matplotlib for one)"
    names = sorted({n for n, _ in results})
    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = 0.8 / max(len(names), 1)
    for k, n in enumerate(names):
        xs = [i + k * width for i, t in enumerate(threads_list) if (n, t) in results]
        ys = [min(results[(n, t)]) for t in threads_list if (n, t) in results]
        ax.bar(xs, ys, width, label=n)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(threads_list))],
                  [f"{t} thread{'s' if t > 1 else ''}" for t in threads_list])
    ax.set_ylabel("time loop, s (min over repeats)")
    ax.set_title("OP2 Airfoil")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return f"wrote {path}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim bench airfoil", description=__doc__.split("\n")[0])
    mesh_arguments(p)
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--threads", type=int, nargs="+", default=None,
                   help="thread counts to time (default: 1 and all Numba threads)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--numba", metavar="PATH", help="the hand-written peer (default: "
                   "bench/airfoil_numba.py of this checkout)")
    p.add_argument("--no-numba", action="store_true", help="do not time the hand-written peer")
    p.add_argument("--no-gather", action="store_true",
                   help="do not time the explicit-gather formulation (relsim-gather)")
    p.add_argument("--reference", metavar="PATH", help="an OP2 Airfoil binary to time as well")
    p.add_argument("--no-startup", action="store_true", help="skip the cold/warm start runs")
    p.add_argument("--profile", type=int, default=20, metavar="N",
                   help="time each launch over N iterations at the largest thread count "
                        "(default 20; 0: skip)")
    p.add_argument("--markdown", metavar="PATH", default=None,
                   help="markdown file whose 'Airfoil' section receives the table "
                        "(e.g. docs/benchmarks/history.md; default: none)")
    p.add_argument("--png", metavar="PATH", default=None,
                   help="PNG of the times (needs matplotlib; default: none)")
    a = p.parse_args(argv)
    nmax = numba.config.NUMBA_NUM_THREADS
    threads_list = a.threads or sorted({1, nmax})
    if max(threads_list) > nmax:
        raise SystemExit(f"--threads {max(threads_list)} exceeds NUMBA_NUM_THREADS={nmax}")
    peer = None if a.no_numba else load_numba_peer(a.numba)

    t0 = time.perf_counter()
    mesh, how = load_mesh(a.mesh, a.size)
    print(f"mesh: {how} ({time.perf_counter() - t0:.1f} s): {mesh.ncell} cells, "
          f"{mesh.nedge} edges; {a.iterations} iterations; threads {threads_list}; "
          f"{a.repeats} repeat(s), interleaved")
    mesh_args = ["--mesh", a.mesh] if a.mesh else ["--size", *map(str, a.size or (400, 600))]

    start = None
    if not a.no_startup:
        print("start-up (relsim run airfoil --iterations 1, fresh process) ...", flush=True)
        start = startup(mesh_args, max(threads_list))
        for kind, (wall, first) in start.items():
            print(f"  {kind}: {wall:.1f} s wall, of which first iteration {first:.1f} s")

    prof = []
    if a.profile:
        print(f"per-launch profile ({a.profile} iterations, {max(threads_list)} threads) ...",
              flush=True)
        prof = profile(mesh, a.profile, max(threads_list), peer)
        for name, lo, med in prof:
            print(f"  {name:44s} min {lo:8.2f} ms  median {med:8.2f} ms")

    load0 = os.getloadavg()[0]
    workdir = None
    if a.reference:
        workdir = tempfile.mkdtemp(prefix="relsim-op2-")
        stage_mesh_file(mesh, a.mesh, workdir)
    try:
        # warm up (compile or load every variant at every thread count; not timed)
        for t in threads_list:
            run_relsim(mesh, 1, t)
            if not a.no_gather:
                run_relsim(mesh, 1, t, gather)
            if peer is not None:
                peer.warmup(t)
        results: dict = {}
        hist: dict = {}
        ref_rms: dict = {}
        for r in range(a.repeats):
            for t in threads_list:
                sec, h, q = run_relsim(mesh, a.iterations, t)
                results.setdefault(("relsim", t), []).append(sec)
                hist[("relsim", t)] = (h, q)
                print(f"  repeat {r + 1}, {t} thread(s): relsim {sec:7.2f} s", end="", flush=True)
                if not a.no_gather:
                    sec, h, q = run_relsim(mesh, a.iterations, t, gather)
                    results.setdefault(("relsim-gather", t), []).append(sec)
                    hist[("relsim-gather", t)] = (h, q)
                    print(f", relsim-gather {sec:7.2f} s", end="", flush=True)
                if peer is not None:
                    sec, h, q = run_numba(peer, mesh, a.iterations, t)
                    results.setdefault(("numba", t), []).append(sec)
                    hist[("numba", t)] = (h, q)
                    print(f", hand-written Numba {sec:7.2f} s", end="", flush=True)
                if a.reference:
                    sec, rms = run_reference(a.reference, t, workdir)
                    results.setdefault(("op2", t), []).append(sec)
                    ref_rms[t] = rms
                    print(f", OP2 {sec:7.2f} s", end="", flush=True)
                print()
    finally:
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        rs.configure(threads=None)
        numba.set_num_threads(nmax)

    # checks
    h0, q0 = hist[("relsim", threads_list[0])]
    checks = []
    same_threads = all(hist[("relsim", t)][0].tobytes() == h0.tobytes()
                       and hist[("relsim", t)][1].tobytes() == q0.tobytes()
                       for t in threads_list)
    checks.append(f"relsim bitwise identical across {threads_list} threads: "
                  f"{'yes' if same_threads else 'NO'}")
    if not a.no_gather:
        hg, qg = hist[("relsim-gather", threads_list[0])]
        same = hg.tobytes() == h0.tobytes() and qg.tobytes() == q0.tobytes()
        checks.append(f"relsim = relsim-gather bit for bit: {'yes' if same else 'NO'}")
    if peer is not None:
        hn, qn = hist[("numba", threads_list[0])]
        same = hn.tobytes() == h0.tobytes() and qn.tobytes() == q0.tobytes()
        checks.append(f"relsim = hand-written Numba bit for bit (rms history and q): "
                      f"{'yes' if same else 'NO'}")
    if mesh.ncell == solver.STANDARD_NCELL and a.iterations >= 1000:
        bad = [i for i, v in solver.PUBLISHED_RMS.items() if f"{h0[i - 1]:10.5e}".strip() != v]
        checks.append(f"the 10 printed rms values (iterations 100..1000) equal the published "
                      f"ones: {'yes' if not bad else f'NO (iterations {bad})'}")
        rel = abs(h0[999] - solver.BITEXACT_RMS_1000) / solver.BITEXACT_RMS_1000
        checks.append(f"rms(1000) = {float(h0[999])!r} (an exact sum): "
                      f"{'identical to' if rel == 0 else f'{rel:.1e} relative from'} the serial "
                      f"no-FMA reference's left-to-right sum (within 1e-12: "
                      f"{'yes' if rel <= 1e-12 else 'NO'})")
        if a.iterations == 1000:
            same_q = solver.q_sha256(q0) == solver.BITEXACT_Q_SHA256
            checks.append(f"sha256(q) {'equals' if same_q else 'DIFFERS from'} the serial "
                          f"no-FMA reference's")
    for t, rms in ref_rms.items():
        bad = [i for i, v in rms.items() if i <= len(h0) and f"{h0[i - 1]:10.5e}".strip() != v]
        checks.append(f"OP2 ({t} thread(s)) printed rms equal to relsim's at "
                      f"{len([i for i in rms if i <= len(h0)])} iterations: "
                      f"{'yes' if not bad else f'NO (iterations {bad})'}")

    rows = []
    for (name, t), secs in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        lo, med = min(secs), statistics.median(secs)
        base = results.get(("numba", t))
        ratio = f"{lo / min(base):.2f}" if base else "-"
        rows.append([name, t, f"{lo:.2f}", f"{med:.2f}", ratio])
    tab = table(["variant", "threads", "min s", "median s", "min / hand-written Numba"], rows)
    print()
    print(tab)
    for c in checks:
        print(c)
    load1 = os.getloadavg()[0]
    note = [f"Load average (1 min) {load0:.1f} at the start of the timed runs and {load1:.1f} at "
            "the end: on a shared machine, compare ratios within a row pair, not absolute times."]
    if prof:
        note.append(f"Per launch, over {a.profile} iterations at {max(threads_list)} threads "
                    "(ms per call; the res folds run inside update; the serial rms fold, "
                    "once per iteration, is in neither):\n\n"
                    + table(["launch", "min ms", "median ms"],
                            [[n, f"{lo:.2f}", f"{med:.2f}"] for n, lo, med in prof]))
    note.append(
        "Reading the table: `relsim` is the port (`simulations/airfoil/solver.py`): five kernels, "
        "res as `+` reductions through keys, launched in the reference's order. relsim lowers "
        "res_calc's `+= F` and `-= F` to one stored slot per edge (the second target folds it "
        "negated), leaves the folds pending, and `update`, which reads res at its own key, "
        "folds each cell's slots (in edge order, then bres_calc's) before its body; the first "
        "stage's rms fold is dropped, as `rms = 0` overwrites it. Each update runs fused with "
        "the next stage's adt_calc, and after the second stage with the next iteration's "
        "save_soln (`rs.fuse`: one pass over the cells per stage, as the hand-written "
        "baseline's cell pass). `relsim-gather` "
        "(`gather.py`) is the same solver written in relsim as the baseline's fused gather, "
        "with the same bits.")
    if start:
        note.append(f"Start-up (`relsim run airfoil {' '.join(mesh_args)} --iterations 1`, a "
                    f"fresh process, {max(threads_list)} threads): cold (empty caches) "
                    f"{start['cold'][0]:.1f} s wall, first iteration {start['cold'][1]:.1f} s; "
                    f"warm {start['warm'][0]:.1f} s wall, first iteration "
                    f"{start['warm'][1]:.1f} s.")
    if mesh.ncell == solver.STANDARD_NCELL and a.iterations == 1000 and not a.reference:
        note.append(f"For comparison, OP2's generated OpenMP build took {OP2_OPENMP_2T} s on "
                    "2 threads on this machine kind (reference measurement; pass --reference "
                    "to time a binary here).")
    png_msg = draw_png(a.png, results, threads_list) if a.png else ""
    if png_msg:
        print(png_msg)
    if a.markdown:
        body = "\n\n".join([
            f"Command: `{' '.join(['relsim bench airfoil', *(argv or [])])}`",
            f"Mesh: {how} ({mesh.ncell} cells, {mesh.nedge} edges); {a.iterations} iterations; "
            f"time loop in seconds (set-up of gather structures included; mesh and compilation "
            f"excluded); {a.repeats} interleaved repeat(s).",
            f"Machine: {machine_line()}.",
            tab,
            "\n".join(f"* {c}" for c in checks),
            *note,
            f"PNG: {png_msg}." if png_msg else ""])
        update_markdown(a.markdown, "Airfoil", body)
    return 0
