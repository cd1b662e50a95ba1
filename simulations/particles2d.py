"""Particles binned into a 2-D grid: sources insert, particles leaving the box are deleted.

Each step: move particles (a kernel deletes those that leave the unit square), emit new ones
from the source cells (a kernel over a subset inserts them), re-bin them into cells, and count
them per cell through the cell -> particles grouping. The check: the particle count equals
initial + inserted - deleted, and the per-cell counts sum to it and match a NumPy histogram.
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import time

import numpy as np

import relsim as rs
from relsim.domains import grid, particles

from ._checks import nonfinite
from ._progress import Progress


def build(n_cells=32, n_particles=2000, seed=1):
    g = grid.Grid((n_cells, n_cells), spacing=1.0 / n_cells)
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0.0, 1.0, (n_particles, 2))
    ang = rng.uniform(0, 2 * np.pi, n_particles)
    vel = 0.3 * np.column_stack([np.cos(ang), np.sin(ang)])
    parts = particles.Particles(g, pos, vel)
    parts.locate()
    C, P = g.cells, parts.rel
    C.new_field("count", rs.i64)
    centre = n_cells // 2
    C.subset("sources", [centre + n_cells * centre, 3 + n_cells * 5])
    dt = rs.Global(rs.f64, 0.01)
    phase = rs.Global(rs.f64, 0.0)
    left, born = rs.Global(rs.i64, 0), rs.Global(rs.i64, 0)

    @rs.kernel
    def move(p):
        p.pos += dt * p.vel
        x = p.pos
        if x[0] < 0.0 or x[0] >= 1.0 or x[1] < 0.0 or x[1] >= 1.0:
            rs.delete(p)
            left += 1

    @rs.kernel
    def emit(c):
        for k in range(3):
            a = phase + 2.0943951023931953 * k
            rs.insert(P, pos=c.center, vel=(0.3 * math.cos(a), 0.3 * math.sin(a)))
            born += 1

    @rs.kernel
    def count(c):
        m = 0
        for _q in c.particles:
            m += 1
        c.count = m

    return g, parts, dict(move=move, emit=emit, count=count), \
        dict(dt=dt, phase=phase, left=left, born=born)


def simulate(steps=100, n_cells=32, n_particles=2000, output=None):
    g, parts, k, glob = build(n_cells, n_particles)
    C, P = g.cells, parts.rel
    initial = P.size
    series = None
    if output:
        from relsim.output import TimeSeries
        os.makedirs(output, exist_ok=True)
        series = TimeSeries(os.path.join(output, "particles.pvd"), P, ["vel"])
    with Progress(steps) as bar:
        for step in range(steps):
            glob["phase"].value = 0.37 * step
            P.foreach(k["move"])
            C.sources.foreach(k["emit"])
            parts.locate()
            C.foreach(k["count"])
            if series is not None:
                series.write(step * glob["dt"].value)
            bar.update(step + 1, f"{P.size:,} particles")
    if series is not None:
        series.close()
    return g, parts, initial, glob


def check(g, parts, initial, glob) -> list:
    problems = []
    P, C = parts.rel, g.cells
    expected = initial + glob["born"].value - glob["left"].value
    if P.size != expected:
        problems.append(f"count {P.size} != initial {initial} + born {glob['born'].value} - "
                        f"left {glob['left'].value}")
    counts = C.count.numpy()
    if counts.sum() != P.size:
        problems.append(f"per-cell counts sum to {counts.sum()}, not {P.size}")
    bad = nonfinite(pos=P.pos.numpy())
    if bad:
        return problems + bad
    hist = np.bincount(g.cell_of(P.pos.numpy()), minlength=C.size)
    if not np.array_equal(hist, counts):
        problems.append("per-cell counts differ from a NumPy histogram")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run particles2d",
                                description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--cells", type=int, default=32)
    p.add_argument("--particles", type=int, default=5000)
    p.add_argument("--output", default=None, help="directory for a ParaView .pvd series")
    p.add_argument("--target", default=None)
    a = p.parse_args(argv)
    if a.cells < 6:
        p.error("--cells must be at least 6 (the second source is cell (3, 5))")
    if a.target:
        rs.configure(target=a.target)
    t0 = time.perf_counter()
    g, parts, initial, glob = simulate(a.steps, a.cells, a.particles, a.output)
    problems = check(g, parts, initial, glob)
    print(f"particles: {initial} at start, {glob['born'].value} inserted, "
          f"{glob['left'].value} left the box, {parts.size} now "
          f"({time.perf_counter() - t0:.2f} s)")
    if problems:
        print("FAILED: " + "; ".join(problems))
        return 1
    P = parts.rel
    state = hashlib.sha256(P.pos.numpy(copy=True).tobytes() + P.vel.numpy(copy=True).tobytes())
    print(f"sha256(pos, vel) {state.hexdigest()}")
    print("OK: count conserved and every particle binned")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
