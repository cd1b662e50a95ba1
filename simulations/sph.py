"""SPH dam break: a water column collapsing in a tank, 3-D weakly compressible SPH, cell lists.

A column ``a`` wide and ``2 a`` high (``a`` = 1 m, water, gravity 9.81 m/s^2) stands at the left
end of a tank ``5 a`` long (``--tank``), as in Martin & Moyce's experiment (their ``n^2 = 2``
column): at ``t = 0`` the gate is gone and the column collapses along the floor. The column spans
the channel: the third axis (``--depth`` particle layers, at least 8) is periodic, the flow is the
experiment's 2-D surge computed with 3-D SPH. Fluid particles start on a cubic lattice of spacing
``dx = a / n`` (``--n``); the floor and the two end walls are three layers of fixed particles
(dynamic boundary particles: their density and pressure come from the same summation as the
fluid's, so they push back as the fluid compresses against them).

Weakly compressible SPH: the Wendland C2 kernel with smoothing length ``h = 1.3 dx`` (support
``2 h``); density by summation (the particle mass makes a full lattice neighbourhood sum to the
rest density exactly); Tait's equation of state with speed of sound ``c0 = 10 sqrt(2 g a)`` (the
column's height: density variations ~1%), negative pressures clipped to 0; Monaghan's
artificial viscosity (``alpha = 0.1``); symplectic Euler with a fixed step ``0.25 h / c0``. The
particles are binned into a grid of cells at least ``2 h`` wide (periodic; empty margins keep
the floor and walls from meeting across the box's ends), and every step re-bins those that
moved. Kernels, over the particles:

* ``density``: the summation density from the particles of the 27 neighbour cells (a loop over
  run-time cell offsets; the minimum image across the periodic depth), and the pressure;
* ``forces``: for a fluid particle, gravity plus the pressure and viscous forces of its
  neighbours;
* ``move``: a fluid particle's velocity and position (walls stay);
* ``measure`` (after every step): the surge front (the largest x of the fluid) and the
  largest density as Global maxima, the fluid's count, mass and particles near rest density as
  Global sums.

Checks (``relsim run sph`` exits 1 when one fails): no NaN; the fluid's particle count and total
mass exactly as at the start; density near rest (at least half the fluid within 2% of the rest
density: free-surface particles lack neighbours, so density; none over 5% above it); the surge
front ``Z = x / a`` against Martin & Moyce (1952, their Fig. 3, ``n^2 = 2``, the ``a`` = 2.25
in column) at their times ``T = t sqrt(2 g / a)`` up to ``--until`` (default 2.6): within
``--front`` (default 15%; printed per point; SPH's front tends to run ahead of the experiment's,
whose gate and floor friction slow it). ``--output DIR`` writes the particles (velocity,
density, pressure, fluid) as a VTU series (``sph.pvd``).
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

A = 1.0  # the column's width (m); its height is 2 A
TANK = 5.0  # the floor's length, in column widths
G = 9.81
RHO0 = 1000.0
H_DX = 1.3  # smoothing length / particle spacing
ALPHA = 0.1  # artificial viscosity
WALL_LAYERS = 3

# Martin & Moyce (1952), Fig. 3, n^2 = 2, a = 2.25 in: (T = t sqrt(2 g / a), Z = front / a)
MARTIN_MOYCE = ((0.832, 1.217), (1.219, 1.474), (1.997, 2.292), (2.547, 2.995),
                (3.345, 4.134), (4.034, 4.944))


def wendland(q):
    """The Wendland C2 kernel's shape (1 - q/2)^4 (2 q + 1), q = r / h in [0, 2]."""
    s = 1.0 - 0.5 * q
    return s * s * s * s * (2.0 * q + 1.0)


def layout(n: int, depth: int = 8, tank: float = TANK):
    """(positions, fluid flags, spacing, box origin, box size): the column (n x 2n x depth
    particles), the floor (`tank` column widths long) and the two end walls (3 layers each), all
    `depth` layers deep."""
    if n < 3 or depth < 8:
        raise rs.DomainError(f"the column needs n >= 3 particles across (got {n}) and the depth "
                             f">= 8 layers (3 cell-list cells; got {depth})")
    if not tank >= 1.0:
        raise rs.DomainError(f"the tank must be at least the column's width long (got {tank})")
    tank = round(tank * A / (A / n)) * (A / n)  # whole particle spacings
    dx = A / n
    ys = (np.arange(depth) + 0.5) * dx

    def block(xs, zs):
        x, y, z = np.meshgrid(xs, ys, zs, indexing="ij")
        return np.column_stack([x.ravel(), y.ravel(), z.ravel()])

    wall = (np.arange(WALL_LAYERS) + 0.5) * dx
    span = (np.arange(round(tank / dx)) + 0.5) * dx
    fluid = block((np.arange(n) + 0.5) * dx, (np.arange(2 * n) + 0.5) * dx)
    walls = np.vstack([
        block(np.concatenate([-wall[::-1], span, tank + wall]), -wall),  # the floor
        block(-wall, (np.arange(round(2.4 * A / dx)) + 0.5) * dx),  # the back wall
        block(tank + wall, (np.arange(n) + 0.5) * dx)])  # the far wall, a high
    pos = np.vstack([fluid, walls])
    flags = np.arange(len(pos)) < len(fluid)
    margin = 2.0 * H_DX * dx + WALL_LAYERS * dx  # walls and an empty cell's width
    origin = np.array([-margin, 0.0, -margin])
    size = np.array([tank + 2.0 * margin, depth * dx, 3.0 * A + margin])
    return pos, flags, dx, origin, size


def build(n: int = 12, depth: int = 8, tank: float = TANK):
    """The grid, the particles, the kernels and the Globals of the dam break at resolution
    n (particles across the column): `assemble(*layout(n, depth, tank))`."""
    return assemble(*layout(n, depth, tank))


def assemble(pos, flags, dx: float, origin, size):
    """(grid, particles, step(), observe(), facts, kernels) for particles at `pos` (fluid where
    `flags`) of spacing `dx` in the periodic box at `origin` of `size`."""
    h = H_DX * dx
    cells = np.maximum((size // (2.0 * h)).astype(int), 3)
    g = grid.Grid(tuple(cells), spacing=tuple(size / cells), origin=tuple(origin),
                  periodic=True)
    parts = particles.Particles(g, pos, name="water", fields={
        "fluid": (rs.bool_, False), "rho": (rs.f64, RHO0), "p": (rs.f64, 0.0),
        "acc": (rs.vec(3), (0.0, 0.0, 0.0))})
    parts.rel.fluid.load(flags)
    parts.locate()
    P = parts.rel
    c0 = 10.0 * math.sqrt(2.0 * G * A)
    sigma = 21.0 / (16.0 * math.pi * h ** 3)
    lattice = np.arange(-3, 4) * dx  # the particle mass: a full neighbourhood sums to RHO0
    r = np.sqrt(sum(c ** 2 for c in np.meshgrid(lattice, lattice, lattice)))
    full = sigma * wendland(np.minimum(r / h, 2.0)).sum()
    mass = rs.Global(rs.f64, RHO0 / full)
    dt = rs.Global(rs.f64, 0.25 * h / c0)
    hh, w, ly = rs.Global(rs.f64, h), rs.Global(rs.f64, sigma), rs.Global(rs.f64, size[1])
    reach2 = rs.Global(rs.f64, 4.0 * h * h)  # the support's radius 2 h, squared
    b, visc = rs.Global(rs.f64, RHO0 * c0 * c0 / 7.0), rs.Global(rs.f64, ALPHA * c0 * h)
    front, top = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)
    count, near, total = rs.Global(rs.i64, 0), rs.Global(rs.i64, 0), rs.Global(rs.f64, 0.0)

    @rs.func
    def offset(p, q):  # q to p, the minimum image across the periodic depth
        d = p.pos - q.pos
        return rs.vec(3)(d[0], d[1] - ly * round(d[1] / ly), d[2])

    @rs.kernel
    def density(p):
        s = 0.0
        for k in range(27):  # the neighbour cells, x fastest (run-time offsets)
            for q in p.cell(k % 3 - 1, (k // 3) % 3 - 1, k // 9 - 1).particles:
                d = offset(p, q)
                r2 = rs.dot(d, d)
                if r2 < reach2:
                    r = math.sqrt(r2) / hh
                    s += (1.0 - 0.5 * r) ** 4 * (2.0 * r + 1.0)
        p.rho = mass * w * s
        p.p = max(b * ((p.rho / RHO0) ** 7 - 1.0), 0.0)

    @rs.kernel
    def forces(p):
        a = rs.vec(3)(0.0, 0.0, -G)
        if p.fluid:
            for k in range(27):
                for q in p.cell(k % 3 - 1, (k // 3) % 3 - 1, k // 9 - 1).particles:
                    d = offset(p, q)
                    r2 = rs.dot(d, d)
                    if r2 < reach2 and r2 > 0.0:
                        r = math.sqrt(r2) / hh
                        dv = rs.dot(p.vel - q.vel, d)
                        pi = 0.0  # Monaghan's viscosity, for approaching particles
                        if dv < 0.0:
                            pi = -2.0 * visc * dv / ((r2 + 0.01 * hh * hh) * (p.rho + q.rho))
                        grad = -5.0 * w / (hh * hh) * (1.0 - 0.5 * r) ** 3  # dW/dr / r
                        a -= mass * (p.p / (p.rho * p.rho) + q.p / (q.rho * q.rho) + pi) \
                            * grad * d
        p.acc = a

    @rs.kernel
    def move(p):
        if p.fluid:
            p.vel += dt * p.acc
            p.pos += dt * p.vel

    @rs.kernel
    def measure(p):
        if p.fluid:
            front = max(front, p.pos[0])
            top = max(top, p.rho)
            count += 1
            total += mass
            if abs(p.rho - RHO0) <= 0.02 * RHO0:
                near += 1

    def step():
        P.foreach(density)
        P.foreach(forces)
        P.foreach(move)

    def observe():
        """(front Z, fluid count, fluid mass, the fraction of the fluid within 2% of the rest
        density, the largest fluid density / RHO0)."""
        front.value, top.value, count.value, near.value, total.value = 0.0, 0.0, 0, 0, 0.0
        P.foreach(measure)
        k = count.value
        return dict(front=(front.value + 0.5 * dx) / A, count=k, mass=total.value,
                    near=near.value / k, top=top.value / RHO0)

    kernels = dict(density=density, forces=forces, move=move)
    facts = dict(dt=dt.value, mass=mass.value, dx=dx, c0=c0, fluid=int(flags.sum()), h=h,
                 sigma=sigma, b=b.value, visc=visc.value)  # (also the peers' constants)
    return g, parts, step, observe, facts, kernels


def simulate(n: int = 12, until: float = 2.6, every: int = 50, output: str | None = None,
             depth: int = 8, tank: float = TANK, capture: bool = True):
    """Run until T = t sqrt(2 g / a) reaches `until`; returns (particles, facts, history of
    T and observe()'s values after each step; the output every `every` steps). `capture`:
    the step recorded once and replayed (`rs.capture`; the particles' cells and cell lists
    computed again inside it; the same bits)."""
    g, parts, step, observe, facts, _ = build(n, depth, tank)
    if capture:
        step = rs.capture(step)
    P = parts.rel
    scale = math.sqrt(2.0 * G / A)
    steps = math.ceil(until / (facts["dt"] * scale))
    series = None
    if output:
        from relsim.output import TimeSeries
        os.makedirs(output, exist_ok=True)
        series = TimeSeries(os.path.join(output, "sph.pvd"), P, ["vel", "rho", "p", "fluid"])
    history = {"T": [0.0], **{k: [v] for k, v in observe().items()}}
    with Progress(steps) as bar:
        for k in range(1, steps + 1):
            step()
            history["T"].append(k * facts["dt"] * scale)
            for key, v in observe().items():
                history[key].append(v)
            if series is not None and (k % every == 0 or k == steps):
                series.write(k * facts["dt"])
            bar.update(k)
    if series is not None:
        series.close()
    facts["steps"] = steps
    return parts, facts, history


def front_errors(history) -> list:
    """(T, Z measured, Z of Martin & Moyce, relative difference) at their times within the
    run."""
    T, Z = np.asarray(history["T"]), np.asarray(history["front"])
    return [(t, float(np.interp(t, T, Z)), z, float(np.interp(t, T, Z)) / z - 1.0)
            for t, z in MARTIN_MOYCE if t <= T[-1]]


def check(history, facts, front: float = 0.15) -> list:
    problems = nonfinite(front=history["front"], density=history["top"])
    if problems:
        return problems
    n, m = facts["fluid"], facts["mass"]
    if set(history["count"]) != {n}:
        problems.append(f"the fluid's {n} particles became {sorted(set(history['count']))}")
    if set(history["mass"]) != {n * m}:
        problems.append(f"the fluid's mass {n * m!r} became {sorted(set(history['mass']))}")
    near, top = np.asarray(history["near"]), np.asarray(history["top"])
    if not np.all(near >= 0.5):
        problems.append(f"only {near.min():.0%} of the fluid stayed within 2% of the rest "
                        f"density (limit 50%)")
    if not np.all(top <= 1.05):
        problems.append(f"the fluid compressed to {top.max():.4g} of the rest density")
    worst = [e for e in front_errors(history) if not abs(e[3]) <= front]
    for t, z, ref, rel in worst:
        problems.append(f"the front at T = {t} is Z = {z:.3f}, Martin & Moyce's {ref} "
                        f"({rel:+.1%}, limit {front:.0%})")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run sph", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=12,
                   help="fluid particles across the column (its height holds 2 n)")
    p.add_argument("--depth", type=int, default=8, help="particle layers across the channel")
    p.add_argument("--tank", type=float, default=TANK,
                   help="the floor's length, in column widths")
    p.add_argument("--until", type=float, default=2.6,
                   help="end time, as T = t sqrt(2 g / a) (Martin & Moyce's)")
    p.add_argument("--every", type=int, default=50, help="output every N steps")
    p.add_argument("--front", type=float, default=0.15,
                   help="the surge front's allowed relative difference from Martin & Moyce")
    p.add_argument("--output", default=None, help="directory for a VTU series (sph.pvd)")
    p.add_argument("--target", default=None, help="backend: a registered target (rs.targets())")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no-capture", dest="capture", action="store_false",
                   help="launch the step's kernels one by one (default: rs.capture replays it)")
    a = p.parse_args(argv)
    if a.every < 1 or not a.until > 0:
        p.error("--every must be at least 1 and --until positive")
    changes = {k: v for k, v in (("target", a.target), ("threads", a.threads)) if v is not None}
    if changes:
        rs.configure(**changes)
    t0 = time.perf_counter()
    try:
        parts, facts, history = simulate(a.n, a.until, a.every, a.output, a.depth, a.tank,
                                         a.capture)
    except rs.DomainError as exc:
        print(f"relsim run sph: {exc}")
        return 2
    elapsed = time.perf_counter() - t0
    print(f"SPH dam break: {facts['fluid']} fluid particles of {parts.size}, dx {facts['dx']:.4g}"
          f" m, {facts['steps']} steps of dt {facts['dt']:.3g} s, target "
          f"{rs.configure().target}{_ranks()}; {elapsed:.2f} s (compile included)")
    print("  front Z = x/a against Martin & Moyce (1952): "
          + ", ".join(f"T {t}: {z:.3f} vs {ref} ({rel:+.1%})"
                      for t, z, ref, rel in front_errors(history)))
    print(f"  fluid density: {min(history['near']):.0%} or more of it within 2% of rest, the "
          f"largest {max(history['top']):.4f} x rest")
    if a.output:
        print(f"  wrote {a.output}/sph.pvd")
    bad = check(history, facts, a.front)
    if bad:
        print("  FAILED: " + "; ".join(bad))
        return 1
    print("  OK: particle count and mass exact, density near rest, front within "
          f"{a.front:.0%} of the experiment")
    return 0


def bench(argv=None) -> int:
    """`relsim bench sph`: relsim against Warp, Taichi and hand-written Numba
    (bench/peers/sph_dam.py of a clone of the repository)."""
    from ._peers import run_peer_bench
    return run_peer_bench("sph_dam.py", "sph", argv)


def kernels() -> list:
    """(name, kernel, relation) of the step's kernels, on a coarse column (`relsim explain
    sph`)."""
    _, parts, _, _, _, k = build(4)
    return [(name, k[name], parts.rel) for name in ("density", "forces", "move")]


if __name__ == "__main__":
    raise SystemExit(main())
