"""Molecular dynamics: a Lennard-Jones fluid in a periodic box, cell lists, velocity Verlet (NVE).

``4 m^3`` atoms start on an FCC lattice at the reduced density 0.8442 (``--density``; the
classic liquid-argon state point, units sigma = epsilon = mass = 1) with random velocities of
temperature 0.72 (no net momentum), in a periodic cube. Pairs interact closer than
``r_c = 2.5`` through the Lennard-Jones potential shifted to zero at ``r_c``. The atoms are
particles
(`relsim.domains.particles`) binned into the cells of a periodic grid (`grid.Grid`, cells at
least ``r_c`` wide, at least 3 per side): each step re-bins the atoms that moved. Kernels, over
the atoms:

* ``kick_drift``: half a kick (``v += dt/2 f``), a drift (``x += dt v``), the position wrapped
  into the box;
* ``forces``: the force on the atom from every atom of its cell and the 26 around it (a loop
  over run-time cell offsets; periodic: the minimum image), written to the atom's own row (no
  reduction through keys), and half of each pair's energy summed into a Global (a row is
  hundreds of pair evaluations: the cpu target weighs its rows by their cell-list loops and runs
  it on threads from a few dozen atoms);
* ``kick``: the other half kick, and the kinetic energy summed into a Global.

Checks (``relsim run md`` exits 1 when one fails): no NaN; the number of atoms unchanged; the
total energy drifts by at most ``--drift`` (default 1e-3) of the mean kinetic energy over the
run (velocity Verlet conserves a shadow energy; the force's jump at ``r_c`` costs a little);
the total momentum stays zero to round-off. ``--output DIR`` writes the atoms (velocity and
speed) as a VTU series (``md.pvd``).
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import relsim as rs
from relsim.domains import grid, particles

from ._checks import nonfinite
from ._checks import ranks_note as _ranks
from ._progress import Progress

DENSITY = 0.8442
TEMPERATURE = 0.72
CUTOFF = 2.5
DT = 0.005


def lattice(m: int, seed: int = 1, density: float = DENSITY):
    """(positions, velocities, box side) of 4 m^3 atoms on an FCC lattice at `density`, with
    velocities of TEMPERATURE (normal, no net momentum, scaled to it exactly)."""
    n = 4 * m ** 3
    box = (n / density) ** (1.0 / 3.0)
    cell = box / m
    base = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])
    corners = np.array([[i, j, k] for k in range(m) for j in range(m) for i in range(m)])
    pos = ((corners[:, None, :] + base[None, :, :] + 0.25) * cell).reshape(-1, 3)
    vel = np.random.default_rng(seed).standard_normal((n, 3))
    vel -= vel.mean(axis=0)
    vel *= math.sqrt(3.0 * (n - 1) * TEMPERATURE / (vel * vel).sum())
    return pos, vel, box


def build(pos, vel, box_side: float, dt_value: float = DT):
    """The grid, the atoms and the kernels for atoms at `pos` with velocities `vel` in a
    periodic cube of side `box_side`: (grid, atoms, setup, step, energies, kernels), kernels
    by name (the step's and the set-up's)."""
    nc = int(box_side // CUTOFF)
    if nc < 3:
        raise rs.DomainError(f"a box of side {box_side:.3g} holds {nc} cells of width "
                             f"{CUTOFF} per side; cell lists need at least 3: use more atoms")
    g = grid.Grid((nc, nc, nc), spacing=box_side / nc, periodic=True)
    atoms = particles.Particles(g, pos, vel, name="atoms")
    atoms.locate()
    A = atoms.rel
    A.new_field("f", rs.vec(3))
    box, dt = rs.Global(rs.f64, box_side), rs.Global(rs.f64, dt_value)
    rc2 = rs.Global(rs.f64, CUTOFF * CUTOFF)
    shift = rs.Global(rs.f64, 4.0 * (CUTOFF ** -12 - CUTOFF ** -6))
    potential, kinetic = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)
    momentum = rs.Global(rs.vec(3), (0.0, 0.0, 0.0))

    @rs.kernel
    def kick_drift(p):
        p.vel += 0.5 * dt * p.f
        x = p.pos + dt * p.vel
        p.pos = x - box * rs.vec(3)(math.floor(x[0] / box), math.floor(x[1] / box),
                                    math.floor(x[2] / box))

    @rs.kernel
    def forces(p):
        f = rs.vec(3)(0.0, 0.0, 0.0)
        e = 0.0
        for k in range(27):  # the neighbour cells, x fastest (offsets known at run time:
            # one copy of the loop body, where rs.static would compile 27)
            for q in p.cell(k % 3 - 1, (k // 3) % 3 - 1, k // 9 - 1).particles:
                d = p.pos - q.pos
                d = d - box * rs.vec(3)(round(d[0] / box), round(d[1] / box),
                                        round(d[2] / box))  # the nearest image
                r2 = rs.dot(d, d)
                if r2 < rc2 and r2 > 0.0:
                    i2 = 1.0 / r2
                    i6 = i2 * i2 * i2
                    f = f + (24.0 * i2 * i6 * (2.0 * i6 - 1.0)) * d
                    e += 0.5 * (4.0 * i6 * (i6 - 1.0) - shift)
        p.f = f
        potential += e

    @rs.kernel
    def kick(p):
        p.vel += 0.5 * dt * p.f

    def energies():
        """(kinetic, potential, momentum) after the last step (or the set-up): the kinetic
        energy and momentum summed now, the potential by the step's force launch."""
        kinetic.value = 0.0
        momentum.value = (0.0, 0.0, 0.0)
        A.foreach(measure)
        return kinetic.value, potential.value, momentum.value

    def setup():
        potential.value = 0.0
        A.foreach(forces)

    @rs.kernel
    def measure(p):
        kinetic += 0.5 * rs.dot(p.vel, p.vel)
        momentum += p.vel

    def step():
        A.foreach(kick_drift)
        rs.assign(potential, 0.0)  # (recorded by rs.capture: zeroed at each replay)
        A.foreach(forces)
        A.foreach(kick)

    kernels = dict(kick_drift=kick_drift, forces=forces, kick=kick, measure=measure)
    return g, atoms, setup, step, energies, kernels


def simulate(m: int = 8, steps: int = 500, every: int = 10, output: str | None = None,
             dt: float = DT, density: float = DENSITY, precompile: bool = False,
             capture: bool = True):
    """Run 4 m^3 atoms for `steps` steps; returns (atoms, the history every `every` steps:
    kinetic, potential, total energy, momentum). `precompile`: the kernels compiled ahead, on
    every core, tiered, where the start-up mode is (`rs.precompile(..., background=None)`), as
    `relsim run md` does. `capture`: the step recorded once and replayed (`rs.capture`; the
    atoms' cells and cell lists computed again inside it; the same bits)."""
    pos, vel, side = lattice(m, density=density)
    g, atoms, setup, step, energies, kernels = build(pos, vel, side, dt)
    if capture:
        step = rs.capture(step)
    A = atoms.rel
    if precompile:  # (`relsim run md`) with a cold cache, the kernels' serial variants
        # compiled on every core before the set-up, the parallel ones behind it (cold 6.6-6.9
        # -> 6.5 s on 2 cores)
        rs.precompile([(k, A) for k in kernels.values()], background=None)
    series = None
    if output:
        from relsim.output import TimeSeries
        os.makedirs(output, exist_ok=True)
        series = TimeSeries(os.path.join(output, "md.pvd"), A, ["vel"])
    setup()
    history = {"kinetic": [], "potential": [], "energy": [], "momentum": []}

    def record():
        kin, pot, mom = energies()
        history["kinetic"].append(kin)
        history["potential"].append(pot)
        history["energy"].append(kin + pot)
        history["momentum"].append(float(np.abs(mom).max()))

    record()
    with Progress(steps) as bar:
        for k in range(1, steps + 1):
            step()
            if k % every == 0 or k == steps:
                record()
                if series is not None:
                    series.write(k * dt)
            bar.update(k)
    if series is not None:
        series.close()
    return atoms, history


def check(history, n_start: int, n_end: int, drift: float = 1e-3) -> list:
    problems = nonfinite(energy=history["energy"], momentum=history["momentum"])
    if problems:
        return problems
    if n_end != n_start:
        problems.append(f"{n_start} atoms became {n_end}")
    energy = np.asarray(history["energy"])
    scale = float(np.mean(history["kinetic"]))
    worst = float(np.max(np.abs(energy - energy[0]))) / scale
    if not worst <= drift:
        problems.append(f"total energy drifted by {worst:.3g} of the mean kinetic energy "
                        f"(limit {drift:g})")
    if max(history["momentum"]) > 1e-9 * n_start:
        problems.append(f"the total momentum is {max(history['momentum']):.3g}, not zero")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run md", description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=8, help="FCC cells per side: 4 m^3 atoms "
                   "(the box needs 3 cell-list cells per side: m >= 5 at the default density)")
    p.add_argument("--density", type=float, default=DENSITY)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--dt", type=float, default=DT)
    p.add_argument("--every", type=int, default=10, help="energies (and output) every N steps")
    p.add_argument("--drift", type=float, default=1e-3,
                   help="energy drift allowed, as a fraction of the mean kinetic energy")
    p.add_argument("--output", default=None, help="directory for a VTU series (md.pvd)")
    p.add_argument("--target", default=None, help="backend: a registered target (rs.targets())")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no-capture", dest="capture", action="store_false",
                   help="launch the step's kernels one by one (default: rs.capture replays it)")
    a = p.parse_args(argv)
    if a.steps < 1 or a.every < 1 or not a.dt > 0:
        p.error("--steps and --every must be at least 1 and --dt positive")
    changes = {k: v for k, v in (("target", a.target), ("threads", a.threads)) if v is not None}
    if changes:
        rs.configure(**changes)
    n = 4 * a.m ** 3
    t0 = time.perf_counter()
    try:
        atoms, history = simulate(a.m, a.steps, a.every, a.output, a.dt, a.density,
                                  precompile=True, capture=a.capture)
    except rs.DomainError as exc:
        print(f"relsim run md: {exc}")
        return 2
    elapsed = time.perf_counter() - t0
    print(f"Lennard-Jones fluid: {n} atoms, density {a.density}, {a.steps} steps of dt {a.dt}, "
          f"target {rs.configure().target}{_ranks()}")
    e = history["energy"]
    print(f"  total energy per atom: start {e[0] / n:.8f}, end {e[-1] / n:.8f}; temperature "
          f"{2.0 * history['kinetic'][-1] / (3.0 * (n - 1)):.4f}; {elapsed:.2f} s "
          f"(compile included)")
    if a.output:
        print(f"  wrote {a.output}/md.pvd")
    bad = check(history, n, atoms.size, a.drift)
    if bad:
        print("  FAILED: " + "; ".join(bad))
        return 1
    print("  OK: energy conserved within the limit, momentum zero, no atom lost")
    return 0


def bench(argv=None) -> int:
    """`relsim bench md`: relsim against Warp, Taichi and hand-written Numba
    (bench/peers/md_fluid.py of a clone of the repository)."""
    from ._peers import run_peer_bench
    return run_peer_bench("md_fluid.py", "md", argv)


def kernels() -> list:
    """(name, kernel, relation) of the step's kernels, on a small box (`relsim explain md`)."""
    pos, vel, side = lattice(5)
    _, atoms, _, _, _, k = build(pos, vel, side)
    return [(name, k[name], atoms.rel) for name in ("kick_drift", "forces", "kick")]


if __name__ == "__main__":
    raise SystemExit(main())
