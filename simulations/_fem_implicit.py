"""Implicit Euler for the Neo-Hookean beam of `fem` (``relsim run fem --implicit``): each step
minimises the incremental potential by Newton-CG (`relsim.optimize.minimize`).

Backward Euler's step from positions x_n and velocities v_n is the minimiser of

    E(y) = sum_free m/(2 dt^2) |y - (x_n + dt v_n)|^2 + sum_tets W psi(F(y)) - sum_free m g.y

over the free vertices' positions y (the clamped ones stay at rest), then v_{n+1} = (y - x_n)/dt.
Its gradient is the tape's and its Hessian-vector products are reverse over forward mode, so the
user writes the energy only: the kernels ``place`` (the unknown positions into ``x`` on the free
subset), ``potential`` (per tet: `fem.neo_hookean`) and ``inertia`` (per free vertex). Implicit
Euler dissipates energy, so it is stable at steps far past the explicit one's limit (the default:
50 times `fem`'s, 80 steps for the same simulated time). The static shape, the minimiser of the
elastic and gravitational energy alone (the same `minimize` without the inertia term), is what
the damped beam settles to.

Checks (exit 1 when one fails): no NaN; the total energy never rises (by more than 1e-6 of the
energy exchanged); the static tip deflection against the Timoshenko estimate, as `fem` checks it;
the swing about the static shape shrinking (its last quarter's amplitude smaller than its
first's). tests/simulations/test_fem_implicit.py checks the step's first-order convergence to the
explicit run at small steps.
"""
from __future__ import annotations

import math
import time

import numpy as np

import relsim as rs
from relsim import optimize

from . import fem
from ._checks import nonfinite
from ._progress import Progress

FACTOR = 50.0  # the default step: this many times fem's explicit one


def build(mesh, dt_value: float, rtol: float = 1e-5, max_newton: int = 50):
    """Fields, kernels and the step of the implicit beam on `mesh` (`fem.beam(n)`). Returns
    (setup, step, (energies, tip_sag, static), stats): `step()` takes one implicit step,
    `static()` puts the beam in its static shape; `stats` counts Newton iterations and
    Hessian-vector products. Newton stops where no vertex's net force (the gradient) is above
    `rtol` times the largest vertex weight; more than `max_newton` iterations is an error."""
    setup, _, (energies, tip_sag, _), _ = fem.build(mesh, dt_value)
    V, T = mesh.vertices, mesh.tets
    vec3 = rs.vec(3)
    V.new_field("y", vec3).load(V.pos.numpy())
    V.new_field("x_hat", vec3)
    V.new_field("x_old", vec3)
    mu_v, lam_v = fem.lame()
    mu, lam = rs.Global(rs.f64, mu_v), rs.Global(rs.f64, lam_v)
    dt = rs.Global(rs.f64, dt_value)
    inertial = rs.Global(rs.f64, 1.0)  # 0: the static problem (no inertia term)
    g = rs.Global(vec3, (0.0, 0.0, -fem.GRAVITY))
    energy = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def place(v):
        v.x = v.y

    @rs.kernel
    def potential(t):
        F = fem.deformation(t.v[0].x, t.v[1].x, t.v[2].x, t.v[3].x, t.Dm_inv)
        energy += t.W * fem.neo_hookean(F, mu, lam)

    @rs.kernel
    def inertia(v):
        d = v.y - v.x_hat
        energy += v.m * (inertial * 0.5 * rs.dot(d, d) / (dt * dt) - rs.dot(g, v.y))

    @rs.kernel
    def predict(v):
        v.x_old = v.x
        v.x_hat = v.x + dt * v.vel
        v.y = v.x_hat

    @rs.kernel
    def velocity(v):
        v.vel = (v.x - v.x_old) / dt

    def incremental_potential():
        energy.value = 0.0
        V.free.foreach(place)
        T.foreach(potential)
        V.free.foreach(inertia)

    stats = {"steps": 0, "newton": 0, "hessian_products": 0}

    def solve():
        gtol = rtol * fem.GRAVITY * float(V.m.numpy().max())
        info = optimize.minimize(incremental_potential, energy, V.y, method="newton-cg",
                                 gtol=gtol, max_iterations=max_newton)
        if not info.converged:
            raise rs.DataError(f"fem --implicit: Newton-CG stopped without converging "
                               f"({info.reason}, max |gradient| {info.gradient:.3g}) at step "
                               f"{stats['steps'] + 1}")
        stats["newton"] += info.iterations
        stats["hessian_products"] += info.hessian_products

    def step():
        V.free.foreach(predict)
        solve()
        V.free.foreach(velocity)
        stats["steps"] += 1

    def static():
        """The beam in its static shape (velocities zero): the minimiser of the elastic and
        gravitational energy."""
        inertial.value = 0.0
        try:
            V.free.foreach(predict)
            solve()
        finally:
            inertial.value = 1.0
        V.vel.load(np.zeros((V.size, 3)))

    return setup, step, (energies, tip_sag, static), stats


def simulate(mesh, dt: float, steps: int, every: int = 1):
    """Run `steps` implicit steps of `dt` on `mesh`; the histories recorded every `every` steps
    (time, energy, kinetic, sag) and the Newton counts."""
    setup, step, (energies, tip_sag, _), stats = build(mesh, dt)
    setup()
    history = fem.new_history()
    with Progress(steps) as bar:
        fem.append(history, 0.0, energies, tip_sag)
        for k in range(1, steps + 1):
            step()
            if k % every == 0 or k == steps:
                fem.append(history, k * dt, energies, tip_sag)
            bar.update(k)
    return history, stats


def static_sag(n: int) -> float:
    """The tip deflection of the beam `fem.beam(n)` in its static shape."""
    mesh = fem.beam(n)
    setup, _, (_, tip_sag, static), _ = build(mesh, fem.time_step(n))
    setup()
    static()
    return tip_sag()


def check(history, static: float, tolerance: float = 0.4) -> list:
    """The implicit run's checks (see the module docstring): a list of failures."""
    problems = nonfinite(energy=history["energy"], sag=history["sag"])
    if problems:
        return problems
    energy = np.asarray(history["energy"])
    scale = max(float(energy[0] - energy.min()), 1e-300)
    rise = float(np.max(np.diff(energy), initial=0.0))
    if rise > 1e-6 * scale:
        problems.append(f"the total energy rose by {rise:.3g} in a step (implicit Euler "
                        f"dissipates: at most {1e-6 * scale:.3g})")
    ratio = static / fem.static_deflection()
    if not 1.0 - tolerance <= ratio <= 1.05:
        problems.append(f"the static tip deflection is {ratio:.3f} times the linear-elastic "
                        f"estimate, not in [{1.0 - tolerance:.2f}, 1.05]")
    swing = np.abs(np.asarray(history["sag"]) - static)
    quarter = max(len(swing) // 4, 1)
    if not swing[-quarter:].max() < swing[:quarter].max():
        problems.append(f"the swing about the static shape did not shrink: "
                        f"{swing[:quarter].max():.3g} in the first quarter of the run, "
                        f"{swing[-quarter:].max():.3g} in the last")
    return problems


def run(a) -> int:
    """`relsim run fem --implicit` with fem's parsed arguments `a`."""
    mesh = fem.beam(a.n)
    dt = fem.time_step(a.n, a.cfl)
    t0 = time.perf_counter()
    history, stats = simulate(mesh, dt, a.steps, a.every)
    elapsed = time.perf_counter() - t0
    static = static_sag(a.n)
    print(f"Neo-Hookean beam, implicit Euler (Newton-CG): {len(mesh.vertices)} vertices, "
          f"{len(mesh.tets)} tets; {a.steps} steps of dt {dt:.3g} "
          f"({dt / fem.time_step(a.n):.3g} times the explicit step; t = {a.steps * dt:.3g}), "
          f"target {rs.configure().target}")
    print(f"  {stats['newton']} Newton iterations, {stats['hessian_products']} Hessian-vector "
          f"products; {elapsed:.2f} s (compile included)")
    energy = history["energy"]
    print(f"  energy: start {energy[0]:.6g}, end {energy[-1]:.6g}; tip deflection: largest "
          f"{max(history['sag']):.5g}, last {history['sag'][-1]:.5g}, static {static:.5g}; "
          f"linear-elastic estimate {fem.static_deflection():.5g}")
    bad = check(history, static, a.tolerance)
    if bad:
        print("  FAILED: " + "; ".join(bad))
        return 1
    print("  OK: energy dissipated, the beam swings about its static shape and settles, the "
          "static deflection matches the estimate")
    return 0


def default_steps(explicit_steps: int, cfl: float, explicit_cfl: float = 0.3) -> int:
    """Steps covering the time `explicit_steps` explicit steps of cfl `explicit_cfl` cover."""
    return max(1, math.ceil(explicit_steps * explicit_cfl / cfl))
