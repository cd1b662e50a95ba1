"""Smoke: 2-D stable fluids (Stam) on a periodic MAC grid, the pressure by conjugate gradients.

The unit square, periodic both ways, holds ``n x n`` cells of side ``h = 1/n`` (a periodic
`grid.Grid`, ``--n``, default 128). Density ``d`` and pressure ``p`` live at the cell centres;
the velocity is staggered (MAC): the field ``ux`` of cell (i, j) is the x-velocity on the face
between cells (i-1, j) and (i, j) (its west face), ``uy`` the y-velocity on the face between
(i, j-1) and (i, j) (its south face; the grid's cells already have a ``v``, their corners).
Each step of fixed ``dt`` (kernels over the cells):

* ``inflow`` (over the subset ``source``, a small block near the bottom): ``d = 1``, ``uy`` set
  to the inflow speed;
* ``buoyancy``: ``uy += dt beta d``, the density averaged to the face;
* ``advect``: semi-Lagrangian advection of ``ux``, ``uy`` (each traced back from its own face, the
  other component averaged there) and of ``d`` (from the centre), bilinear, reading the old
  fields at offsets computed from the velocity (``c(i, j)``);
* ``divergence`` at the cells, summed into a Global, and ``rhs``: ``b = -(div - mean div) / dt``.
  A periodic Poisson problem is singular (constants are its null space) and solvable only for a
  right-hand side of zero mean; the divergence of a periodic field sums to zero in exact
  arithmetic, and subtracting the mean (an exact Global sum) makes it so to round-off;
* ``linalg.cg`` on the matrix-free operator ``laplacian`` (minus the 5-point Laplacian, positive
  semi-definite), warm-started from the last step's pressure, to ``--rtol`` (default 1e-8);
* ``project``: ``ux -= dt dp/dx``, ``uy -= dt dp/dy`` on the faces. On the MAC grid the divergence
  of this gradient is exactly the 5-point Laplacian, so the projected field's divergence is
  ``mean div u* - dt r``, r the solver's residual ``b - A p``.

Checks (``relsim run smoke`` exits 1 when one fails): no NaN; after every projection the largest
``|div u|`` is at most ``10 rtol n`` times the largest before it (``||r|| <= rtol ||b||`` bounds
each entry of ``dt r`` by ``rtol sqrt(n^2) max |div u* - mean|``, at most twice ``rtol n max
|div u*|``; the rest of the 10 for the recurrence's own round-off: CG updates r rather than
recomputing it); the density-weighted centre of the smoke rose; CG converged every step
(iterations reported). ``--output DIR`` writes the cells' density, velocity (averaged to the
centres) and pressure as a VTU series (``smoke.pvd``) every ``--every`` steps.
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import relsim as rs
from relsim import linalg
from relsim.domains import grid

from ._checks import nonfinite
from ._checks import ranks_note as _ranks
from ._progress import Progress

DT = 0.01
BETA = 2.0  # buoyancy: the upward acceleration of smoke of density 1
INFLOW = 0.5  # the upward speed set in the source
RTOL = 1e-8
SOURCE = ((0.4375, 0.5625), (0.0625, 0.125))  # the source block: x and y ranges (centres inside)


def source_rows(centres) -> np.ndarray:
    """Rows of the cells whose centres lie in the SOURCE block."""
    (x0, x1), (y0, y1) = SOURCE
    x, y = centres[:, 0], centres[:, 1]
    return np.flatnonzero((x > x0) & (x < x1) & (y > y0) & (y < y1))


def build(n: int, dt_value: float = DT, rtol: float = RTOL):
    """The grid and the step of an n x n periodic box: (grid, step, measured, kernels,
    launches); step() does one time step and returns the pressure solve's SolveInfo,
    measured() the divergence before and after the projection, the smoke's mass and height;
    launches: the (kernel, relation or subset) pairs both launch, for `rs.precompile`."""
    if n < 4:
        raise rs.DomainError(f"an {n} x {n} grid is too small: use at least 4 cells per side")
    g = grid.Grid((n, n), spacing=1.0 / n, periodic=True)
    C = g.cells
    rows = source_rows(C.center.numpy())
    if len(rows) == 0:
        raise rs.DomainError(f"an {n} x {n} grid has no cell centre in the source block "
                             f"{SOURCE}: use a finer grid (n >= 16 always has one)")
    source = C.subset("source", rows)
    for name in ("ux", "uy", "d", "p", "uxn", "uyn", "dn", "div", "b", "s", "As"):
        C.new_field(name, rs.f64)
    dt, h, beta = rs.Global(rs.f64, dt_value), rs.Global(rs.f64, 1.0 / n), rs.Global(rs.f64, BETA)
    inflow_speed, cells = rs.Global(rs.f64, INFLOW), rs.Global(rs.f64, float(n * n))
    total, before, after = (rs.Global(rs.f64, 0.0) for _ in range(3))
    mass, height = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)

    @rs.kernel
    def inflow(c):
        c.d = 1.0
        c.uy = inflow_speed

    @rs.kernel
    def buoyancy(c):
        c.uy += dt * beta * 0.5 * (c.d + c(0, -1).d)

    @rs.func
    def back(u, v):  # where velocity (u, v) comes from: cells from here, x and y
        return -dt * u / h, -dt * v / h

    @rs.func
    def bilinear(q00, q10, q01, q11, fx, fy):
        return (1.0 - fx) * ((1.0 - fy) * q00 + fy * q01) + fx * ((1.0 - fy) * q10 + fy * q11)

    @rs.kernel
    def advect(c):  # each field traced back from its own place (ux, uy: faces; d: the centre)
        x, y = back(c.ux, 0.25 * (c.uy + c(-1, 0).uy + c(0, 1).uy + c(-1, 1).uy))
        i, j = int(math.floor(x)), int(math.floor(y))
        c.uxn = bilinear(c(i, j).ux, c(i + 1, j).ux, c(i, j + 1).ux, c(i + 1, j + 1).ux,
                         x - i, y - j)
        x, y = back(0.25 * (c.ux + c(1, 0).ux + c(0, -1).ux + c(1, -1).ux), c.uy)
        i, j = int(math.floor(x)), int(math.floor(y))
        c.uyn = bilinear(c(i, j).uy, c(i + 1, j).uy, c(i, j + 1).uy, c(i + 1, j + 1).uy,
                         x - i, y - j)
        x, y = back(0.5 * (c.ux + c(1, 0).ux), 0.5 * (c.uy + c(0, 1).uy))
        i, j = int(math.floor(x)), int(math.floor(y))
        c.dn = bilinear(c(i, j).d, c(i + 1, j).d, c(i, j + 1).d, c(i + 1, j + 1).d, x - i, y - j)

    @rs.kernel
    def divergence(c):
        c.div = (c(1, 0).uxn - c.uxn + c(0, 1).uyn - c.uyn) / h
        total += c.div
        before = max(before, abs(c.div))

    @rs.kernel
    def rhs(c):
        c.b = (total / cells - c.div) / dt

    @rs.kernel
    def laplacian(c):  # As = -(the 5-point Laplacian of s)
        c.As = (4.0 * c.s - c(1, 0).s - c(-1, 0).s - c(0, 1).s - c(0, -1).s) / (h * h)

    @rs.kernel
    def project(c):
        c.ux = c.uxn - dt * (c.p - c(-1, 0).p) / h
        c.uy = c.uyn - dt * (c.p - c(0, -1).p) / h
        c.d = c.dn

    @rs.kernel
    def measure(c):
        after = max(after, abs(c(1, 0).ux - c.ux + c(0, 1).uy - c.uy) / h)
        mass += c.d
        height += c.d * c.center[1]

    A = linalg.Operator(laplacian, x=C.s, y=C.As)

    def step():
        source.foreach(inflow)
        C.foreach(buoyancy)
        C.foreach(advect)
        total.value = before.value = 0.0
        C.foreach(divergence)
        C.foreach(rhs)
        info = linalg.cg(A, b=C.b, x=C.p, rtol=rtol)
        C.foreach(project)
        return info

    def measured():
        """(max |div u| before the last projection, after it, the smoke's mass, the height of
        its centre)."""
        after.value = mass.value = height.value = 0.0
        C.foreach(measure)
        m = mass.value
        return before.value, after.value, m, height.value / m if m > 0.0 else 0.0

    kernels = dict(inflow=inflow, buoyancy=buoyancy, advect=advect, divergence=divergence,
                   rhs=rhs, laplacian=laplacian, project=project)
    # what a step and its measurement launch, the pressure solve's too, for `rs.precompile`
    launches = [(inflow, source)] + [(k, C) for k in (buoyancy, advect, divergence, rhs,
                                                      project, measure)] + \
        linalg.cg_launches(A, C.b, C.p)
    return g, step, measured, kernels, launches


def velocity_at_centres(C) -> None:
    """C.vel: the velocity averaged to the cell centres (for the output)."""
    if not C.has_field("vel"):
        C.new_field("vel", rs.vec(2))

    @rs.kernel
    def centred(c):
        c.vel = (0.5 * (c.ux + c(1, 0).ux), 0.5 * (c.uy + c(0, 1).uy))

    C.foreach(centred)


def simulate(n: int = 128, steps: int = 150, every: int = 10, output: str | None = None,
             dt: float = DT, rtol: float = RTOL, precompile: bool = False):
    """Run `steps` steps on an n x n grid; returns (the cells, the per-step history: max |div|
    before and after the projection, the smoke's mass and height, CG iterations, and each
    solve's residual norms). `precompile`: the kernels compiled ahead, on every core, tiered,
    where the start-up mode is (`rs.precompile(..., background=None)`), as `relsim run smoke`
    does."""
    g, step, measured, _, launches = build(n, dt, rtol)
    if precompile:  # (`relsim run smoke`) with a cold cache, every kernel's serial variant
        # compiled on every core before the first step, the parallel ones behind it (one core
        # compiled them one by one as each was first launched: 9.3-9.6 s to the end, 7.3-7.8
        # s with this, on 2 cores)
        rs.precompile(launches, background=None)
    C = g.cells
    series = None
    if output:
        from relsim.output import TimeSeries
        os.makedirs(output, exist_ok=True)
        series = TimeSeries(os.path.join(output, "smoke.pvd"), C, ["d", "vel", "p"])
    history = {k: [] for k in ("before", "after", "mass", "height", "iterations", "converged",
                               "residuals")}
    with Progress(steps) as bar:
        for k in range(1, steps + 1):
            info = step()
            for key, value in zip(("before", "after", "mass", "height"), measured()):
                history[key].append(value)
            history["iterations"].append(info.iterations)
            history["converged"].append(info.converged)
            history["residuals"].append(list(info.residuals))
            if series is not None and (k % every == 0 or k == steps):
                velocity_at_centres(C)
                series.write(k * dt)
            bar.update(k)
    if series is not None:
        series.close()
    return C, history


def check(history, n: int, rtol: float = RTOL) -> list:
    problems = nonfinite(before=history["before"], after=history["after"],
                         height=history["height"], mass=history["mass"],
                         residuals=[r[-1] for r in history["residuals"]])
    if problems:
        return problems
    limit = 10.0 * rtol * n
    ratio = np.asarray(history["after"]) / np.maximum(history["before"], 1e-300)
    worst = int(np.argmax(ratio))
    if not ratio[worst] <= limit:
        problems.append(f"after the projection of step {worst + 1} max |div u| is "
                        f"{ratio[worst]:.3g} of the largest before it (limit {limit:.3g})")
    if not history["height"][-1] > history["height"][0]:
        problems.append(f"the smoke did not rise: its centre went from height "
                        f"{history['height'][0]:.4g} to {history['height'][-1]:.4g}")
    failed = [k + 1 for k, ok in enumerate(history["converged"]) if not ok]
    if failed:
        problems.append(f"CG did not converge at {len(failed)} step(s), the first step "
                        f"{failed[0]}")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run smoke", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=128, help="cells per side (at least 16: the source "
                   "block must hold a cell centre)")
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--dt", type=float, default=DT)
    p.add_argument("--rtol", type=float, default=RTOL,
                   help="CG's relative tolerance for the pressure (||r|| <= rtol ||b||)")
    p.add_argument("--every", type=int, default=10, help="output every N steps")
    p.add_argument("--output", default=None, help="directory for a VTU series (smoke.pvd)")
    p.add_argument("--target", default=None, help="backend: a registered target (rs.targets())")
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args(argv)
    if a.steps < 1 or a.every < 1 or not a.dt > 0 or not a.rtol > 0:
        p.error("--steps and --every must be at least 1, --dt and --rtol positive")
    changes = {k: v for k, v in (("target", a.target), ("threads", a.threads)) if v is not None}
    if changes:
        rs.configure(**changes)
    t0 = time.perf_counter()
    try:
        C, history = simulate(a.n, a.steps, a.every, a.output, a.dt, a.rtol, precompile=True)
    except rs.DomainError as exc:
        print(f"relsim run smoke: {exc}")
        return 2
    elapsed = time.perf_counter() - t0
    its = history["iterations"]
    print(f"smoke: {a.n} x {a.n} periodic MAC grid, {a.steps} steps of dt {a.dt}, CG rtol "
          f"{a.rtol:g}, target {rs.configure().target}{_ranks()}")
    ratio = np.asarray(history["after"]) / np.maximum(history["before"], 1e-300)
    print(f"  CG iterations per step: mean {np.mean(its):.1f}, max {max(its)}; max |div u| "
          f"after / before the projection: at most {ratio.max():.2e}")
    print(f"  smoke's centre at height {history['height'][0]:.4f} after step 1, "
          f"{history['height'][-1]:.4f} at the end (mass {history['mass'][-1]:.4g}); "
          f"{elapsed:.2f} s (compile included)")
    if a.output:
        print(f"  wrote {a.output}/smoke.pvd")
    bad = check(history, a.n, a.rtol)
    if bad:
        print("  FAILED: " + "; ".join(bad))
        return 1
    print("  OK: divergence-free to the solver's tolerance, CG converged every step, the smoke "
          "rose")
    return 0


def bench(argv=None) -> int:
    """`relsim bench smoke`: relsim against Warp, Taichi and hand-written Numba
    (bench/peers/smoke_plume.py of a clone of the repository)."""
    from ._peers import run_peer_bench
    return run_peer_bench("smoke_plume.py", "smoke", argv)


def kernels() -> list:
    """(name, kernel, relation) of the step's kernels, on a small grid (`relsim explain
    smoke`)."""
    g, _, _, k, _ = build(16)
    return [(name, k[name], g.cells) for name in ("inflow", "buoyancy", "advect", "divergence",
                                                   "rhs", "laplacian", "project")]


if __name__ == "__main__":
    raise SystemExit(main())
