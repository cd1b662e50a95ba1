"""Explicit hyperelastic FEM: a Neo-Hookean beam clamped at one end, sagging under gravity.

A beam ``4 x 1 x 1`` (length along x) of linear tetrahedra (`relsim.domains.tetmesh.box`,
``4n x n x n`` cubes of 6 tets) is clamped at ``x = 0`` and released at rest under gravity
(-z). The material is compressible Neo-Hookean,

    psi(F) = mu/2 (tr F^T F - 3) - mu log J + lam/2 (log J)^2,   P = mu (F - F^-T) + lam log J F^-T,

with lumped masses; time stepping is symplectic Euler (velocity first, then position), with a
time step a fraction (``--cfl``) of the mesh's P-wave crossing time. Kernels:

* ``rest`` (per tet, once): the inverse rest shape matrix ``Dm^-1`` and rest volume ``W``, and
  the lumped mass ``rho W / 4`` reduced into each of its vertices;
* ``forces`` (per tet, each step): ``F = Ds Dm^-1``, ``P(F)``, and the nodal forces
  ``-W P Dm^-T`` reduced into the tet's four vertices through its keys;
* ``advance`` (per free vertex, each step: the ``free`` subset, all but the clamped ones):
  ``v += dt (f / m + g)``, ``x += dt v``, ``f = 0``;
* ``energy_*`` (every ``--every`` steps): kinetic, elastic and gravitational energy as exact
  Global sums.

Checks (``relsim run fem`` exits 1 when one fails): no NaN; the total energy stays within
``--drift`` (default 2%) of the energy the beam exchanges (the largest kinetic energy
reached); the beam, released at rest, oscillates about its static shape, so half its largest
tip deflection is the static one: it must lie between ``1 - --tolerance`` (default 0.4) and
1.05 times the static deflection of a linear-elastic Timoshenko cantilever under its own
weight. Linear tets are too stiff in bending (a displacement finite element never sags more than
the exact solution), by about 1/n: the ratio measured is 0.51, 0.68, 0.78, 0.87 at n = 2, 3, 4,
6 (``relsim run fem --n N --steps 1500N``). ``--output DIR`` writes the displacement and speed
as a VTU series (``fem.pvd``) for ParaView.
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import relsim as rs
from relsim.domains import tetmesh

from ._checks import nonfinite
from ._checks import ranks_note as _ranks
from ._progress import Progress

LENGTH = 4.0  # beam length (x); the cross-section is 1 x 1
YOUNG = 2.0e4
POISSON = 0.3
DENSITY = 1.0
GRAVITY = 9.81


def lame(young=YOUNG, poisson=POISSON):
    """(mu, lam) of Young's modulus and Poisson's ratio."""
    mu = young / (2.0 * (1.0 + poisson))
    lam = young * poisson / ((1.0 + poisson) * (1.0 - 2.0 * poisson))
    return mu, lam


def beam(n: int):
    """The beam's tet mesh: 4n x n x n cubes, 6 tets each."""
    return tetmesh.box(4 * n, n, n, size=(LENGTH, 1.0, 1.0))


def time_step(n: int, cfl: float = 0.3, young=YOUNG, poisson=POISSON, density=DENSITY):
    """cfl times the P-wave's time to cross the shortest tet height of the mesh (h / sqrt(3)
    for the Kuhn tets of cubes of side h = 1/n)."""
    mu, lam = lame(young, poisson)
    wave = math.sqrt((lam + 2.0 * mu) / density)
    return cfl * (1.0 / n) / math.sqrt(3.0) / wave


@rs.func
def deformation(x0, x1, x2, x3, Dm_inv):
    """F = Ds Dm^-1, Ds the current edge vectors from vertex 0 as columns."""
    return rs.transpose(rs.mat(3, 3)(x1 - x0, x2 - x0, x3 - x0)) @ Dm_inv


@rs.func
def neo_hookean(F, mu, lam):
    """The strain energy density psi(F) per unit rest volume."""
    log_j = math.log(rs.det(F))
    c = rs.dot(F[0], F[0]) + rs.dot(F[1], F[1]) + rs.dot(F[2], F[2])
    return 0.5 * mu * (c - 3.0) - mu * log_j + 0.5 * lam * log_j * log_j


def build(mesh, dt_value: float, young=YOUNG, poisson=POISSON, density=DENSITY,
          gravity=GRAVITY):
    """Fields, subsets and kernels of the simulation on `mesh` (a tetmesh.TetMesh)."""
    V, T = mesh.vertices, mesh.tets
    vec3 = rs.vec(3)
    V.new_field("x", vec3).load(V.pos.numpy())
    for name in ("vel", "f"):
        V.new_field(name, vec3)
    V.new_field("m", rs.f64)
    T.new_field("Dm_inv", rs.mat(3, 3))
    T.new_field("W", rs.f64)
    V.subset("free", np.flatnonzero(~np.isin(np.arange(V.size), V.xmin.rows)))
    mu_v, lam_v = lame(young, poisson)
    mu, lam, rho = rs.Global(rs.f64, mu_v), rs.Global(rs.f64, lam_v), rs.Global(rs.f64, density)
    dt = rs.Global(rs.f64, dt_value)
    g = rs.Global(vec3, (0.0, 0.0, -gravity))
    kinetic, elastic, potential, sag = (rs.Global(rs.f64, 0.0) for _ in range(4))

    @rs.kernel
    def rest(t):
        p0 = t.v[0].pos
        Dm = rs.transpose(rs.mat(3, 3)(t.v[1].pos - p0, t.v[2].pos - p0, t.v[3].pos - p0))
        W = rs.det(Dm) / 6.0
        t.Dm_inv = rs.inverse(Dm)
        t.W = W
        for i in rs.static(range(4)):
            t.v[i].m += 0.25 * rho * W

    @rs.kernel
    def forces(t):
        F = deformation(t.v[0].x, t.v[1].x, t.v[2].x, t.v[3].x, t.Dm_inv)
        F_inv_T = rs.transpose(rs.inverse(F))
        P = mu * (F - F_inv_T) + lam * math.log(rs.det(F)) * F_inv_T
        H = (-t.W) * (t.Dm_inv @ rs.transpose(P))  # row i: the force on vertex i + 1
        t.v[1].f += H[0]
        t.v[2].f += H[1]
        t.v[3].f += H[2]
        t.v[0].f += -(H[0] + H[1] + H[2])

    @rs.kernel
    def advance(v):
        v.vel += dt * (v.f / v.m + g)
        v.x += dt * v.vel
        v.f = (0.0, 0.0, 0.0)

    @rs.kernel
    def energy_tets(t):
        F = deformation(t.v[0].x, t.v[1].x, t.v[2].x, t.v[3].x, t.Dm_inv)
        elastic += t.W * neo_hookean(F, mu, lam)

    @rs.kernel
    def energy_vertices(v):
        kinetic += 0.5 * v.m * rs.dot(v.vel, v.vel)
        potential += -v.m * rs.dot(g, v.x - v.pos)

    @rs.kernel
    def tip(v):
        sag += v.pos[2] - v.x[2]

    @rs.kernel
    def displacement(v):
        v.u = v.x - v.pos
        v.speed = rs.norm(v.vel)

    def setup():
        T.foreach(rest)

    def step():
        T.foreach(forces)
        V.free.foreach(advance)

    def energies():
        """(kinetic, elastic, gravitational) energy now (gravity's relative to the rest
        shape)."""
        for glob in (kinetic, elastic, potential):
            glob.value = 0.0
        T.foreach(energy_tets)
        V.foreach(energy_vertices)
        return kinetic.value, elastic.value, potential.value

    def tip_sag():
        """The mean downward displacement of the free end's vertices (x = LENGTH)."""
        sag.value = 0.0
        V.xmax.foreach(tip)
        return sag.value / V.xmax.size

    def fill_output():
        """Fields u (displacement) and speed, for output (created on first use)."""
        if not V.has_field("u"):
            V.new_field("u", vec3)
            V.new_field("speed", rs.f64)
        V.foreach(displacement)

    kernels = dict(rest=rest, forces=forces, advance=advance, energy_tets=energy_tets,
                   energy_vertices=energy_vertices, tip=tip, displacement=displacement)
    return setup, step, (energies, tip_sag, fill_output), kernels


def static_deflection(young=YOUNG, poisson=POISSON, density=DENSITY, gravity=GRAVITY):
    """The tip deflection of a linear-elastic cantilever of length LENGTH and unit square
    section under its own weight: Euler-Bernoulli's q L^4 / (8 E I) plus Timoshenko's shear
    term q L^2 / (2 k G A) (k = 5/6)."""
    q = density * gravity  # weight per unit length (A = 1)
    inertia = 1.0 / 12.0
    shear = young / (2.0 * (1.0 + poisson))
    return q * LENGTH ** 4 / (8.0 * young * inertia) + q * LENGTH ** 2 / (2.0 * 5.0 / 6.0 *
                                                                          shear)


def new_history() -> dict:
    """The histories a run records: time, energy (total), kinetic, sag."""
    return {"time": [], "energy": [], "kinetic": [], "sag": []}


def append(history: dict, time_now: float, energies, tip_sag) -> None:
    """Record the energies and the tip's sag now (`build`'s `energies` and `tip_sag`)."""
    kin, ela, pot = energies()
    history["time"].append(time_now)
    history["energy"].append(kin + ela + pot)
    history["kinetic"].append(kin)
    history["sag"].append(tip_sag())


def simulate(mesh, dt: float, steps: int = 4000, every: int = 50, output: str | None = None,
             capture: bool = True):
    """Run the beam `mesh` (`beam(n)`) for `steps` steps of `dt`; returns the histories,
    recorded every `every` steps: time, energy (total), kinetic, sag (the mean downward
    displacement of the free end's vertices). `capture`: the step's launches recorded once
    and replayed (`rs.capture`; the same bits)."""
    setup, step, (energies, tip_sag, fill_output), _ = build(mesh, dt)
    if capture:
        step = rs.capture(step)
    setup()
    series = None
    if output:
        from relsim.output import TimeSeries
        os.makedirs(output, exist_ok=True)
        fill_output()
        series = TimeSeries(os.path.join(output, "fem.pvd"), mesh.vertices, ["u", "speed"])
    history = new_history()

    def record(k):
        append(history, k * dt, energies, tip_sag)
        if series is not None:
            fill_output()
            series.write(k * dt)

    with Progress(steps) as bar:
        record(0)
        for k in range(1, steps + 1):
            step()
            if k % every == 0 or k == steps:
                record(k)
            bar.update(k)
    if series is not None:
        series.close()
    return history


def check(history, drift_tol: float = 0.02, tolerance: float = 0.4) -> list:
    """The physical checks (see the module docstring): a list of failures, empty if none."""
    problems = nonfinite(energy=history["energy"], sag=history["sag"])
    if problems:
        return problems
    energy = np.asarray(history["energy"])
    scale = max(history["kinetic"])
    drift = float(np.max(np.abs(energy - energy[0]))) / scale if scale > 0 else math.inf
    if not drift <= drift_tol:
        problems.append(f"total energy drifted by {drift:.3g} of the largest kinetic energy "
                        f"(limit {drift_tol})")
    ratio = static_sag(history) / static_deflection()
    if not 1.0 - tolerance <= ratio <= 1.05:
        problems.append(f"the static tip deflection (half the largest) is {ratio:.3f} times "
                        f"the linear-elastic estimate, not in [{1.0 - tolerance:.2f}, 1.05]")
    return problems


def static_sag(history) -> float:
    """The static tip deflection: half the largest (an undamped release from rest)."""
    return 0.5 * max(history["sag"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run fem", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4, help="cubes across the beam (4n along it)")
    p.add_argument("--steps", type=int, default=None,
                   help="time steps (default 4000; --implicit: the same simulated time)")
    p.add_argument("--cfl", type=float, default=None, help="dt as a fraction of the P-wave's "
                   "crossing time of the shortest tet height (default 0.3; --implicit: 50 "
                   "times that)")
    p.add_argument("--every", type=int, default=None, help="energies (and output) every N "
                   "steps (default 50; --implicit: 1)")
    p.add_argument("--drift", type=float, default=0.02, help="energy drift allowed, as a "
                   "fraction of the largest kinetic energy")
    p.add_argument("--tolerance", type=float, default=0.4, help="how much less than the "
                   "linear-elastic estimate the static tip deflection may be, relative")
    p.add_argument("--implicit", action="store_true", help="implicit Euler: each step "
                   "minimises the incremental potential by Newton-CG (relsim.optimize)")
    p.add_argument("--output", default=None, help="directory for a VTU series (fem.pvd)")
    p.add_argument("--target", default=None, help="backend: a registered target (rs.targets())")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no-capture", dest="capture", action="store_false",
                   help="launch the step's kernels one by one (default: rs.capture replays it)")
    a = p.parse_args(argv)
    changes = {k: v for k, v in (("target", a.target), ("threads", a.threads)) if v is not None}
    if changes:
        rs.configure(**changes)
    from . import _fem_implicit as fem_implicit
    if a.cfl is None:
        a.cfl = 0.3 * (fem_implicit.FACTOR if a.implicit else 1.0)
    if a.steps is None:
        a.steps = fem_implicit.default_steps(4000, a.cfl) if a.implicit else 4000
    if a.every is None:
        a.every = 1 if a.implicit else 50
    if a.n < 1 or a.steps < 1 or a.every < 1 or not a.cfl > 0:
        p.error("--n, --steps and --every must be at least 1 and --cfl positive")
    if a.implicit:
        if a.output:
            p.error("--output is for the explicit run")
        return fem_implicit.run(a)
    mesh, dt = beam(a.n), time_step(a.n, a.cfl)
    t0 = time.perf_counter()
    history = simulate(mesh, dt, a.steps, a.every, a.output, a.capture)
    elapsed = time.perf_counter() - t0
    print(f"Neo-Hookean beam: {len(mesh.vertices)} vertices, {len(mesh.tets)} tets; "
          f"{a.steps} steps of dt {dt:.3g} (t = {a.steps * dt:.3g}), "
          f"target {rs.configure().target}{_ranks()}")
    energy = history["energy"]
    print(f"  energy: start {energy[0]:.6g}, end {energy[-1]:.6g}; largest kinetic "
          f"{max(history['kinetic']):.6g}")
    print(f"  tip deflection: largest {max(history['sag']):.5g}, static (half) "
          f"{static_sag(history):.5g}; linear-elastic estimate {static_deflection():.5g}; "
          f"{elapsed:.2f} s (compile included)")
    if a.output:
        print(f"  wrote {a.output}/fem.pvd")
    bad = check(history, a.drift, a.tolerance)
    if bad:
        print("  FAILED: " + "; ".join(bad))
        return 1
    print("  OK: energy conserved within the limit, tip deflection matches the estimate")
    return 0


def bench(argv=None) -> int:
    """`relsim bench fem`: relsim against hand-written Numba, Taichi and Warp on this beam
    (bench/peers/fem_beam.py of a clone of the repository; ``pip install -e .[bench]``)."""
    from ._peers import run_peer_bench
    return run_peer_bench("fem_beam.py", "fem", argv)


def kernels() -> list:
    """(name, kernel, relation) of each kernel, on a small mesh (`relsim explain fem`)."""
    mesh = beam(1)
    _, _, _, k = build(mesh, 1e-3)
    return [("forces", k["forces"], mesh.tets), ("advance", k["advance"], mesh.vertices)]


if __name__ == "__main__":
    raise SystemExit(main())
