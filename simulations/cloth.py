"""Cloth: a mass-spring sheet pinned at two corners, falling onto a sphere.

A square sheet (``trimesh.plane(n)``, side 1, horizontal at height 0.6) hangs from its two
corners at y = 0 and falls under gravity onto a sphere of radius 0.25 below its middle. Springs
(one relation, key ``v`` = two vertices, rest length ``L0``): the mesh's edges (stretch and, on
the diagonals, shear) and one bending spring across every interior edge (between the two
vertices opposite it). The model is the mass-spring cloth of Taichi's quickstart with the
sheet's mass (1) spread over its vertices, so that the physics does not change with ``--n``: a
spring pulls with ``120 (L / L0 - 1)`` plus a dashpot on its stretching speed, air drag, the
sphere as a velocity constraint; symplectic Euler, ``--substeps`` steps per frame of 1/60 s.
Kernels:

* ``springs`` (per spring): its force, reduced into both end vertices through its keys;
* ``advance`` (per vertex): velocity (``w``: the inverse mass, 0 for the pinned corners, which
  never move),
  drag, the sphere's contact (the inward normal velocity removed), position, ``f = 0``;
* ``measure`` (every frame): the closest vertex to the sphere's centre and the largest stretch
  of the cloth's edges (``L / L0 - 1``), as min / max Global reductions.

Checks (``relsim run cloth`` exits 1 when one fails): no NaN; no vertex inside the sphere by
more than ``--penetration`` (default 1% of its radius; contact acts on velocities, so a vertex
may cross the surface by at most one step's motion); no edge of the cloth stretched by more
than ``--strain`` (default 15%; cloth buckles rather than compresses, and the bending springs
fold freely); the cloth reached the sphere. An explicit step is stable below a time step that
shrinks as ``n^-1.5``: the default ``--substeps`` grows so (100 up to n = 32). ``--output DIR``
writes positions and speed as a VTU series (``cloth.pvd``).
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import relsim as rs
from relsim.domains import trimesh

from ._checks import nonfinite
from ._checks import ranks_note as _ranks
from ._progress import Progress

HEIGHT = 0.6  # the sheet's starting height
CENTRE = (0.5, 0.5, 0.0)
RADIUS = 0.25
MASS = 1.0  # of the whole sheet, spread evenly over its vertices
TENSION = 120.0  # a spring's force per unit strain
DAMPING = 300.0  # the dashpot on a spring's stretching speed, per unit of a vertex's mass
DRAG = 1.0
GRAVITY = 9.8
FRAME = 1.0 / 60.0


def sheet(n: int):
    """The cloth's mesh: trimesh.plane(n) (n x n squares, 2 triangles each), and the spring
    pairs (the mesh's edges first, then bending pairs: the vertices opposite each interior
    edge)."""
    mesh = trimesh.plane(n)
    edges = mesh.edges.v.numpy(copy=True)
    tri_v, tri_e = mesh.triangles.v.numpy(copy=True), mesh.triangles.edges.numpy(copy=True)
    opposite = np.full((len(edges), 2), -1)
    for local in range(3):  # local edge k joins corners k and k+1: the opposite one is k+2
        e, far = tri_e[:, local], tri_v[:, (local + 2) % 3]
        first = opposite[e, 0] < 0
        opposite[e[first], 0] = far[first]
        opposite[e[~first], 1] = far[~first]
    bends = opposite[(opposite >= 0).all(axis=1)]
    return mesh, np.vstack([edges, bends])


def stable_substeps(n: int) -> int:
    """Steps per frame for a sheet of n x n squares: 100 up to n = 32 (a quarter of the stable
    limit there), growing as n^1.5 beyond (the stiffest mode's frequency)."""
    return max(100, math.ceil(100 * (n / 32) ** 1.5))


def time_step(substeps: int) -> float:
    return FRAME / substeps


def build(mesh, pairs, dt_value: float):
    """Relations, fields and kernels of the simulation on `mesh` with springs `pairs`."""
    V = mesh.vertices
    pos = V.pos.numpy(copy=True)
    vec3 = rs.vec(3)
    V.new_field("x", vec3).load(pos + np.array([0.0, 0.0, HEIGHT]))
    V.new_field("vel", vec3)
    V.new_field("f", vec3)
    pinned = (pos[:, 1] == 0.0) & ((pos[:, 0] == 0.0) | (pos[:, 0] == 1.0))
    mass = MASS / V.size
    V.new_field("w", rs.f64).load(np.where(pinned, 0.0, 1.0 / mass))  # inverse mass
    S = rs.Relation("springs", len(pairs))
    S.new_key_field("v", V, 2).load(pairs)
    S.new_field("L0", rs.f64).load(np.linalg.norm(pos[pairs[:, 1]] - pos[pairs[:, 0]], axis=1))
    S.subset("edges", np.arange(mesh.edges.size))  # the cloth's own edges (not the bends)
    dt = rs.Global(rs.f64, dt_value)
    k, dashpot = rs.Global(rs.f64, TENSION), rs.Global(rs.f64, DAMPING * mass)
    drag = rs.Global(rs.f64, math.exp(-DRAG * dt_value))
    g = rs.Global(vec3, (0.0, 0.0, -GRAVITY))
    centre, radius = rs.Global(vec3, CENTRE), rs.Global(rs.f64, RADIUS)
    closest, strain = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)

    @rs.kernel
    def springs(s):
        d = s.v[1].x - s.v[0].x
        length = rs.norm(d)
        u = d / length
        pull = k * (length / s.L0 - 1.0) + dashpot * rs.dot(s.v[1].vel - s.v[0].vel, u)
        s.v[0].f += pull * u
        s.v[1].f += -pull * u

    @rs.kernel
    def advance(v):
        vel = (v.vel + dt * (v.w * v.f + g)) * drag
        if v.w == 0.0:  # pinned
            vel = (0.0, 0.0, 0.0)
        off = v.x - centre
        dist = rs.norm(off)
        if dist <= radius:
            normal = off / dist
            vel = vel - min(rs.dot(vel, normal), 0.0) * normal
        v.vel = vel
        v.x += dt * vel
        v.f = (0.0, 0.0, 0.0)

    @rs.kernel
    def measure_vertices(v):
        closest = min(closest, rs.norm(v.x - centre))

    @rs.kernel
    def measure_springs(s):
        strain = max(strain, rs.norm(s.v[1].x - s.v[0].x) / s.L0 - 1.0)

    def step():
        S.foreach(springs)
        V.foreach(advance)

    def measure():
        """(distance of the closest vertex to the sphere's centre, largest spring strain)."""
        closest.value = math.inf
        strain.value = 0.0
        V.foreach(measure_vertices)
        S.edges.foreach(measure_springs)
        return closest.value, strain.value

    kernels = dict(springs=springs, advance=advance, measure_vertices=measure_vertices,
                   measure_springs=measure_springs)
    return S, step, measure, kernels


def simulate(mesh, pairs, frames: int = 60, substeps: int = 100, output: str | None = None,
             capture: bool = True):
    """Run `frames` frames; returns the per-frame history: closest (distance to the sphere's
    centre), strain (largest), and the springs relation. `capture`: the step's launches
    recorded once and replayed (`rs.capture`; the same bits)."""
    S, step, measure, _ = build(mesh, pairs, time_step(substeps))
    if capture:
        step = rs.capture(step)
    V = mesh.vertices
    series = None
    if output:
        from relsim.output import TimeSeries
        os.makedirs(output, exist_ok=True)
        series = TimeSeries(os.path.join(output, "cloth.pvd"), V, ["x", "vel"])
    history = {"closest": [], "strain": []}
    with Progress(frames) as bar:
        for frame in range(1, frames + 1):
            for _ in range(substeps):
                step()
            c, s = measure()
            history["closest"].append(c)
            history["strain"].append(s)
            if series is not None:
                series.write(frame * FRAME)
            bar.update(frame)
    if series is not None:
        series.close()
    return history, S


def check(history, penetration: float = 0.01, strain: float = 0.15) -> list:
    problems = nonfinite(closest=history["closest"], strain=history["strain"])
    if problems:
        return problems
    deepest = RADIUS - min(history["closest"])
    if deepest > penetration * RADIUS:
        problems.append(f"a vertex went {deepest:.3g} inside the sphere (limit "
                        f"{penetration * RADIUS:.3g})")
    if min(history["closest"]) > RADIUS * 1.05:
        problems.append(f"the cloth never reached the sphere (closest "
                        f"{min(history['closest']):.3g}, radius {RADIUS})")
    worst = max(history["strain"])
    if worst > strain:
        problems.append(f"an edge was stretched by {worst:.1%} (limit {strain:.0%})")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run cloth", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=32, help="squares per side of the sheet")
    p.add_argument("--frames", type=int, default=60, help="frames of 1/60 s")
    p.add_argument("--substeps", type=int, default=None, help="time steps per frame (default "
                   "100, more above n = 32: stable_substeps)")
    p.add_argument("--penetration", type=float, default=0.01,
                   help="depth allowed inside the sphere, as a fraction of its radius")
    p.add_argument("--strain", type=float, default=0.15, help="largest edge stretch allowed")
    p.add_argument("--output", default=None, help="directory for a VTU series (cloth.pvd)")
    p.add_argument("--target", default=None, help="backend: a registered target (rs.targets())")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no-capture", dest="capture", action="store_false",
                   help="launch the step's kernels one by one (default: rs.capture replays it)")
    a = p.parse_args(argv)
    if a.substeps is None:
        a.substeps = stable_substeps(a.n)
    if a.n < 2 or a.frames < 1 or a.substeps < 1:
        p.error("--n must be at least 2, --frames and --substeps at least 1")
    changes = {k: v for k, v in (("target", a.target), ("threads", a.threads)) if v is not None}
    if changes:
        rs.configure(**changes)
    mesh, pairs = sheet(a.n)
    t0 = time.perf_counter()
    history, S = simulate(mesh, pairs, a.frames, a.substeps, a.output, a.capture)
    elapsed = time.perf_counter() - t0
    print(f"cloth: {mesh.vertices.size} vertices, {S.size} springs; {a.frames} frames of "
          f"{a.substeps} steps (dt {time_step(a.substeps):.3g}), "
          f"target {rs.configure().target}{_ranks()}")
    print(f"  closest to the sphere's centre {min(history['closest']):.5f} (radius {RADIUS}); "
          f"largest edge stretch {max(history['strain']):.2%}; {elapsed:.2f} s (compile included)")
    if a.output:
        print(f"  wrote {a.output}/cloth.pvd")
    bad = check(history, a.penetration, a.strain)
    if bad:
        print("  FAILED: " + "; ".join(bad))
        return 1
    print("  OK: the cloth rests on the sphere without going through it, edges in bounds")
    return 0


def bench(argv=None) -> int:
    """`relsim bench cloth`: relsim against Warp, Taichi and hand-written Numba
    (bench/peers/cloth_sheet.py of a clone of the repository)."""
    from ._peers import run_peer_bench
    return run_peer_bench("cloth_sheet.py", "cloth", argv)


def kernels() -> list:
    """(name, kernel, relation) of each step kernel, on a small sheet (`relsim explain cloth`)."""
    mesh, pairs = sheet(2)
    S, _, _, k = build(mesh, pairs, 1e-3)
    return [("springs", k["springs"], S), ("advance", k["advance"], mesh.vertices)]


if __name__ == "__main__":
    raise SystemExit(main())
