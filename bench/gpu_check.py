#!/usr/bin/env python
"""The cuda target on a GPU, in one table: what `bench/gpu_check.sh` runs on an NVIDIA machine
(and what ``--tiny`` runs anywhere, in numba's CUDA simulator, to check that it works).

Parts (each prints its figure, or "skipped: why" / "failed: why"), under one time budget
(``--budget`` seconds: a part that would start with less time left than it needs is skipped; one
still running when the budget ends is stopped and says so):

* ``launch``: time per launch of a 1-row kernel (``r.x += 1.0``) on cuda, against an empty
  numba.cuda kernel launched and synchronised (the floor) and the same kernel on the cpu;
* ``stream``: a streaming field update (``s.a = s.b + 0.5 * s.a``, 24 bytes per row) in GB/s,
  against the device-to-device copy bandwidth (``cuMemcpyDtoD`` of one field, read + write)
  measured in the same run;
* ``elastic``: particles moved by a kernel, per launch: without ``rs.insert``/``rs.delete``;
  with them compiled in but no row changing; with 1% of the rows deleted and re-inserted each
  launch (the host round trip of `backends/cuda/backend.py`); cuda against cpu, bit for bit;
* ``airfoil``: Airfoil on the standard mesh, ``--airfoil-iterations`` (1000), cuda against cpu:
  the time, and whether every rms and q are bit-exact;
* ``lulesh``: LULESH at each ``--sizes`` (50 100 150), the first ``--cycles`` cycles, FOM on
  cuda against the cpu (all cores), and whether e(0) and the checksums are bit-exact; then
  with ``fast_math=True`` (fused multiply-adds): its FOM and e(0)'s distance from the cpu's;
* ``heat``: tetheat's step on the Kuhn cube ``tetmesh.box(--heat-n)`` (100), ms per step,
  relsim cuda against a hand-written numba.cuda step (edge fluxes added with atomics) and
  NVIDIA Warp on the GPU (skipped when warp is not installed: its wheel, 149 MB, is over the
  64 MiB a device call carries); relsim's answer is checked bit for bit against the serial
  Numba loop, the peers' within rounding.

``--tests LINE`` adds the cuda tests' pytest summary (gpu_check.sh passes it) as a row.

    python bench/gpu_check.py [--tiny] [--budget 300] [--parts launch stream ...]
"""
from __future__ import annotations

import argparse
import contextlib
import pathlib
import signal
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "peers"))

import _common as C  # noqa: E402
import numpy as np  # noqa: E402

import relsim as rs  # noqa: E402

PARTS = ("launch", "stream", "elastic", "airfoil", "lulesh", "heat")
CUDA, CPU = rs.Config(target="cuda"), rs.Config(target="cpu")
FAST = rs.Config(target="cuda", fast_math=True)  # products may fuse into FMAs


class Skip(Exception):
    """A part that cannot run here: its message says why."""


class OutOfTime(Exception):
    pass


class Budget:
    """The seconds left; `part(need)` runs a part only with `need` seconds left, and stops it
    (SIGALRM) when the budget ends."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    @contextlib.contextmanager
    def part(self, need: float):
        left = self.left()
        if left < need:
            raise Skip(f"time budget ({left:.0f} s left, the part needs ~{need:.0f} s)")

        def stop(*_):
            raise OutOfTime(f"stopped: the time budget ran out ({need:.0f} s estimated)")
        old = signal.signal(signal.SIGALRM, stop)
        signal.alarm(max(1, int(left)))
        try:
            yield
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)


def per_call(fn, number: int, repeats: int) -> float:
    """Minimum over `repeats` of the mean seconds per call of `number` calls (after one)."""
    fn()
    return min(C.interleaved({"f": fn}, repeats, number)["f"])


def us(s: float) -> str:
    return f"{s * 1e6:.1f} us"


def same_bits(a, b) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def yes(flag: bool) -> str:
    return "yes" if flag else "NO"


# -- the parts: each returns rows [what, cuda, compared with, check] ----------------------------
def part_launch(a):
    from numba import cuda
    rels = {}
    for t in ("cuda", "cpu"):
        R = rels[t] = rs.Relation(f"R_{t}", 1)
        R.new_field("x", rs.f64)

    @rs.kernel
    def trivial(r):
        r.x += 1.0

    @cuda.jit
    def empty(x):
        pass
    dx = cuda.to_device(np.zeros(1))

    def floor():
        empty[1, 1](dx)
        cuda.synchronize()
    n, r = a.launch_number, a.repeats
    t_cuda = per_call(lambda: rels["cuda"].foreach(trivial, CUDA), n, r)
    t_floor = per_call(floor, n, r)
    t_cpu = per_call(lambda: rels["cpu"].foreach(trivial, CPU), n, r)
    ok = all(R.x.data[0] == 1 + n * r for R in rels.values())  # every launch ran once
    return [["launch overhead (1-row kernel)", f"{us(t_cuda)} per launch",
             f"numba.cuda empty kernel + sync {us(t_floor)}; relsim cpu {us(t_cpu)}",
             f"ran: {yes(ok)}"]]


def part_stream(a):
    from numba import cuda
    n = a.stream_rows
    S = rs.Relation("S", n)
    S.new_field("a", rs.f64, init=1.0)
    S.new_field("b", rs.f64, init=0.5)

    @rs.kernel
    def stream(s):
        s.a = s.b + 0.5 * s.a

    t = per_call(lambda: S.foreach(stream, CUDA), a.stream_number, a.repeats)
    src = cuda.to_device(np.ones(n))
    dst = cuda.device_array_like(src)

    def copy():
        dst.copy_to_device(src)
        cuda.synchronize()
    t_copy = per_call(copy, a.stream_number, a.repeats)
    bw, bw_copy = 24 * n / t / 1e9, 16 * n / t_copy / 1e9
    ok = bool(np.all(S.a.data == 1.0))  # the fixed point of a = 0.5 + 0.5 a from a = 1
    return [[f"streaming update s.a = s.b + 0.5*s.a ({n:,} rows, 24 B/row)",
             f"{bw:.1f} GB/s ({t * 1e3:.3f} ms/launch)",
             f"device-to-device copy {bw_copy:.1f} GB/s: {100 * bw / bw_copy:.0f}% of it",
             f"values right: {yes(ok)}"]]


def _particles(n: int, limit: int, recycle: bool):
    rng = np.random.default_rng(5)
    P = rs.Relation("P", n, elastic=True)
    P.new_field("x", rs.f64).load(rng.random(n))
    P.new_field("v", rs.f64).load(rng.standard_normal(n))
    P.new_field("age", rs.i64).load(np.arange(n) % 100)
    old = rs.Global(rs.i64, limit)

    if recycle:
        @rs.kernel
        def step(p):
            p.x += p.v * 0.001
            p.age += 1
            if p.age >= old:
                rs.delete(p)
                rs.insert(P, x=0.5, v=-p.v, age=0)
    else:
        @rs.kernel
        def step(p):
            p.x += p.v * 0.001
            p.age += 1
    return P, step


def part_elastic(a):
    n, k = a.particles, a.elastic_launches
    cases = (("no insert/delete", 1 << 60, False), ("insert/delete, none happen", 1 << 60, True),
             ("1% deleted + re-inserted per launch", 100, True))
    times, same = {}, []
    for label, limit, recycle in cases:
        for cfg in (CUDA, CPU):
            P, step = _particles(n, limit, recycle)
            P.foreach(step, cfg)  # compiles
            t0 = time.perf_counter()
            for _ in range(k):
                P.foreach(step, cfg)
            times[label, cfg.target] = (time.perf_counter() - t0) / k
            if cfg is CUDA:
                want = [P.x.numpy(copy=True), P.v.numpy(copy=True), P.age.numpy(copy=True)]
            else:
                same.append(all(same_bits(w, g.numpy(copy=True))
                                for w, g in zip(want, (P.x, P.v, P.age))) and P.size == n)
    rows = []
    for (label, _, _), ok in zip(cases, same):
        rows.append([f"elastic particles ({n:,} rows): {label}",
                     f"{times[label, 'cuda'] * 1e3:.3f} ms/launch",
                     f"cpu {times[label, 'cpu'] * 1e3:.3f} ms/launch",
                     f"cuda = cpu bit for bit after {k + 1} launches: {yes(ok)}"])
    base = times[cases[0][0], "cuda"]
    rows[1][2] += f"; {times[cases[1][0], 'cuda'] / base:.1f}x the plain launch on cuda"
    rows[2][2] += f"; {times[cases[2][0], 'cuda'] / base:.1f}x the plain launch on cuda " \
        f"(the host round trip)"
    return rows


def part_airfoil(a):
    from relsim_simulations.airfoil import solver
    mesh = solver.op2mesh.naca_mesh(*a.airfoil_size)
    its, res = a.airfoil_iterations, {}
    for cfg in (CUDA, CPU):
        af = solver.build(mesh)
        timings: dict = {}
        hist = solver.solve(af, its, cfg, timings=timings)
        res[cfg.target] = (hist, af.cells.q.numpy(copy=True), timings)
    (h_gpu, q_gpu, t_gpu), (h_cpu, q_cpu, t_cpu) = res["cuda"], res["cpu"]
    return [[f"Airfoil {mesh.ncell:,} cells, {its} iterations",
             f"{t_gpu['loop_s']:.2f} s (+ first iteration {t_gpu['first_s']:.2f} s)",
             f"cpu {CPU.thread_count()} threads {t_cpu['loop_s']:.2f} s "
             f"(+ {t_cpu['first_s']:.2f} s): cpu/cuda time "
             f"{t_cpu['loop_s'] / max(t_gpu['loop_s'], 1e-9):.2f}",
             f"rms bit-exact vs cpu: {yes(same_bits(h_gpu, h_cpu))} "
             f"(rms({its}) = {float(h_gpu[-1])!r}); q: {yes(same_bits(q_gpu, q_cpu))}"]]


def lulesh_run(s: int, cycles: int, cfg):
    from relsim_simulations.lulesh.problem import Lulesh
    L = Lulesh(s, config=cfg)
    L.warm_up()
    t0 = time.perf_counter()
    L.run(cycles)
    elapsed = time.perf_counter() - t0
    return s ** 3 * L.cycle / (1000.0 * elapsed), (L.origin_energy(), L.checksums(), L.cycle)


def part_lulesh(a, s):
    fom_gpu, state_gpu = lulesh_run(s, a.cycles, CUDA)
    fom_cpu, state_cpu = lulesh_run(s, a.cycles, CPU)
    fom_fast, state_fast = lulesh_run(s, a.cycles, FAST)
    rel = abs(state_fast[0] - state_cpu[0]) / abs(state_cpu[0])
    return [[f"LULESH s={s}, first {state_gpu[2]} cycles", f"FOM {fom_gpu:,.0f} z/s",
             f"cpu {CPU.thread_count()} threads FOM {fom_cpu:,.0f} z/s: "
             f"cuda/cpu {fom_gpu / fom_cpu:.2f}",
             f"e(0) and checksums bit-exact vs cpu: {yes(state_gpu == state_cpu)}"],
            [f"LULESH s={s}, fast_math=True", f"FOM {fom_fast:,.0f} z/s",
             f"cuda fast/exact {fom_fast / fom_gpu:.2f}",
             f"e(0) relative to cpu {rel:.1e} (<= 1e-12: {yes(rel <= 1e-12)})"]]


def part_heat(a):
    import heat_tet

    from relsim.domains import tetmesh
    mesh = tetmesh.box(a.heat_n)
    old = rs.config.current()
    rs.configure(target="cuda")
    try:
        rel = heat_tet.Relsim(mesh)
        arrays, start = rel.arrays()
        serial = heat_tet.NumbaSerial(**arrays)
        states = {}
        for name, v in (("relsim", rel), ("serial", serial)):
            v.load(*start)
            for _ in range(a.heat_check_steps):
                v.step()
            states[name] = v.state()
        exact = all(same_bits(x, y) for x, y in zip(states["relsim"], states["serial"]))
        t_rel = per_call(rel.step, a.heat_number, a.repeats)
    finally:
        rs.configure(target=old.target)
    what = f"heat, Kuhn cube n={a.heat_n} ({len(mesh.edges):,} edges), one step"
    check = f"relsim cuda = serial Numba loop bit for bit: {yes(exact)}"
    peers = []
    for name, label in (("numba_cuda", "hand-written numba.cuda (atomics)"),
                        ("warp", "warp (cuda, atomics)")):
        mod = heat_tet.load_peer(name)
        if mod is None:
            peers.append(f"{name}: skipped: not installed")
            continue
        if name == "warp" and not mod.wp.is_cuda_available():
            peers.append("warp: skipped: warp finds no CUDA device")
            continue
        w = mod.Heat(**arrays, device="cuda")
        w.load(*start)
        for _ in range(a.heat_check_steps):
            w.step()
        T = w.state()[0]
        dev = float(np.abs(T - states["serial"][0]).max() / np.abs(states["serial"][0]).max())

        def steps(w=w):
            for _ in range(a.heat_number):
                w.step()
            w.state()  # synchronises (and copies T, Q back: as relsim's launches synchronise)
        t_peer = per_call(steps, 1, a.repeats) / a.heat_number
        peers.append(f"{label} {t_peer * 1e3:.3f} ms: relsim {t_peer / t_rel:.2f}x as fast")
        check += f"; {name} max |dT|/max|T| {dev:.1e}"
    peer = "; ".join(peers)
    return [[what, f"{t_rel * 1e3:.3f} ms", peer, check]]


# -- driver ----------------------------------------------------------------------------------
def plan(a):
    """[(part name, label, need in seconds, fn)] in priority order (cheap parts first)."""
    g = 1 if a.tiny else 0
    out = [("launch", "launch overhead", 10, lambda: part_launch(a)),
           ("stream", "streaming bandwidth", 10, lambda: part_stream(a)),
           ("elastic", "elastic relations", 20, lambda: part_elastic(a)),
           ("airfoil", "Airfoil", 30 + 60 * (1 - g), lambda: part_airfoil(a))]
    for s in a.sizes:
        out.append(("lulesh", f"LULESH s={s}", 25 + (s / 50) ** 3 * 20,
                    lambda s=s: part_lulesh(a, s)))
    out.append(("heat", f"heat n={a.heat_n}", 15 + (a.heat_n / 40) ** 3 * 8,
                lambda: part_heat(a)))
    return [p for p in out if p[0] in a.parts]


def arguments(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true",
                    help="tiny sizes: a check that every part runs (in the simulator too)")
    ap.add_argument("--budget", type=float, default=360.0, help="seconds for all parts")
    ap.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS)
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="LULESH -s (50 100 150)")
    ap.add_argument("--cycles", type=int, default=None, help="LULESH cycles timed (50)")
    ap.add_argument("--airfoil-iterations", type=int, default=None, help="(1000)")
    ap.add_argument("--heat-n", type=int, default=None, help="tetmesh.box(n) (100)")
    ap.add_argument("--tests", metavar="LINE", help="the cuda tests' pytest summary line")
    a = ap.parse_args(argv)
    tiny = a.tiny
    defaults = dict(sizes=[2, 3] if tiny else [50, 100, 150], cycles=2 if tiny else 50,
                    airfoil_iterations=3 if tiny else 1000, heat_n=2 if tiny else 100)
    for k, v in defaults.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.airfoil_size = (4, 6) if tiny else (400, 600)
    a.repeats = 2 if tiny else 5
    a.launch_number = 5 if tiny else 2000
    a.stream_rows = 256 if tiny else 1 << 27
    a.stream_number = 2 if tiny else 20
    a.particles = 300 if tiny else 1 << 20
    a.elastic_launches = 2 if tiny else 20
    a.heat_check_steps = 2 if tiny else 20
    a.heat_number = 2 if tiny else 20
    return a


def main(argv=None) -> int:
    a = arguments(argv)
    from relsim.runtime.backends.cuda import device as cuda_runtime
    why = rs.target_registry.get("cuda").unavailable() if "cuda" in rs.targets() else \
        "numba.cuda cannot be imported (pip install \"relsim[cuda]\")"
    where = "numba's CUDA simulator (figures meaningless)" if "cuda" in rs.targets() and \
        cuda_runtime.simulated() else "the GPU"
    print(f"gpu_check: {C.machine_line()}; cuda on {where}; budget {a.budget:.0f} s", flush=True)
    budget, rows, failed = Budget(a.budget), [], False
    if a.tests:
        rows.append(["cuda tests on the device", a.tests, "", ""])
    for _, label, need, fn in plan(a):
        t0 = time.perf_counter()
        try:
            if why is not None:
                raise Skip(why)
            with budget.part(need):
                got = fn()
            print(f"{label}: done in {time.perf_counter() - t0:.1f} s", flush=True)
            for r in got:
                print("  " + " | ".join(r), flush=True)
        except Skip as exc:
            got = [[label, f"skipped: {exc}", "", ""]]
        except OutOfTime as exc:
            got = [[label, str(exc), "", ""]]
            failed = True
        except Exception as exc:  # noqa: BLE001 (one part failing must not hide the others)
            got = [[label, f"failed: {type(exc).__name__}: {str(exc).splitlines()[0]}", "", ""]]
            failed = True
        if got[0][1].startswith(("skipped", "failed", "stopped")):
            print(f"{label}: {got[0][1]}", flush=True)
        rows += got
    order = {name: i for i, name in enumerate(("cuda tests", "LULESH", "Airfoil", "heat",
                                               "streaming", "launch", "elastic"))}
    rows.sort(key=lambda r: next((i for k, i in order.items() if r[0].startswith(k)), 99))
    print()
    print(C.table(["part", "cuda", "compared with (same machine)", "check"], rows))
    bad = any("NO" in r[3].split() or "NO" in r[3].replace(";", " ").split() for r in rows)
    return 1 if failed or bad else 0


if __name__ == "__main__":
    sys.exit(main())
