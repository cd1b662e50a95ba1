"""Optimal control: the launch velocity of a soft body that bounces off the floor so its centre
of mass is at a target at time T, with gradients from rs.Tape and scipy's L-BFGS-B.

A square mass-spring net (``--m`` x ``--m`` masses in the x-y plane, springs along the lattice's
edges and diagonals, damped along their length) starts at rest above a floor, gravity pulling it
down; a smooth penalty force pushes back what sinks below the floor. Each step: ``springs``
(over the springs: the spring and damping forces, reduced into both ends through their keys),
``move`` (over the masses: symplectic Euler, the floor). At the start a kernel gives every mass the
launch velocity ``(vx, vy)``, two Globals; after ``--steps`` steps the centre of mass is summed
into Globals and ``loss = |centre - target|^2``. The bounce makes the centre's path depend on
the net's deformation, not only on the launch. L-BFGS-B, from the launch ``(1.2, 2)``, finds the
velocity that puts the centre on the target (the centre reached from the launch ``(1.6, 2.4)``);
each evaluation runs the throw on a tape and differentiates the loss with respect to ``vx`` and
``vy``. Checks (``relsim run throw`` exits 1 when one fails): the tape's gradient at the start
agrees with central differences to 1e-6, and the optimised centre lies within 1e-3 of the
target (relative to the throw's length). Needs scipy.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import relsim as rs

from ._checks import ranks_note as _ranks

GRAVITY = 9.81
STIFFNESS = 2000.0  # springs (N/m per unit mass)
DAMPING = 2.0
FLOOR = 20000.0  # the floor's penalty stiffness
SOFT = 2e-3  # the width over which it sets in (a smooth force: the loss stays smooth)
DT = 1e-3
AIM = (1.6, 2.4)  # the launch whose centre at T is the target
START = (1.2, 2.0)


def net(m: int, size: float = 0.3):
    """(positions, springs (i, j), rest lengths) of an m x m net of side `size` whose lowest row
    is 0.2 above the floor."""
    h = size / (m - 1)
    ij = np.array([(i, j) for j in range(m) for i in range(m)])
    pos = np.column_stack([ij[:, 0] * h, 0.2 + ij[:, 1] * h])
    at = {(i, j): k for k, (i, j) in enumerate(ij)}
    pairs = []
    for (i, j), k in at.items():
        for di, dj in ((1, 0), (0, 1), (1, 1), (1, -1)):
            other = at.get((i + di, j + dj))
            if other is not None:
                pairs.append((k, other))
    pairs = np.array(pairs)
    rest = np.linalg.norm(pos[pairs[:, 0]] - pos[pairs[:, 1]], axis=1)
    return pos, pairs, rest


def build(m: int = 6):
    """(throw(steps) -> loss, the Globals vx, vy, loss, centre-x, centre-y, target)."""
    pos, pairs, rest = net(m)
    V = rs.Relation("masses", len(pos))
    for name in ("x", "y", "vx", "vy", "fx", "fy"):
        V.new_field(name, rs.f64)
    S = rs.Relation("springs", len(pairs))
    S.new_key_field("a", V, values=pairs[:, 0])
    S.new_key_field("b", V, values=pairs[:, 1])
    S.new_field("rest", rs.f64).load(rest)
    P = rs.Relation("probe", 1)
    vx, vy = rs.Global(rs.f64, START[0]), rs.Global(rs.f64, START[1])
    cx, cy, loss = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)
    tx, ty = rs.Global(rs.f64, 0.0), rs.Global(rs.f64, 0.0)
    share = 1.0 / len(pos)

    @rs.kernel
    def launch(v):
        v.vx = vx
        v.vy = vy

    @rs.kernel
    def springs(s):
        dx = s.b.x - s.a.x
        dy = s.b.y - s.a.y
        d = math.sqrt(dx * dx + dy * dy)
        along = ((s.b.vx - s.a.vx) * dx + (s.b.vy - s.a.vy) * dy) / d
        f = (STIFFNESS * (d - s.rest) + DAMPING * along) / d
        s.a.fx += f * dx
        s.a.fy += f * dy
        s.b.fx -= f * dx
        s.b.fy -= f * dy

    @rs.kernel
    def move(v):  # the floor: a smooth penalty, FLOOR * depth once a mass is below it
        fy = v.fy - GRAVITY + FLOOR * SOFT * math.log1p(math.exp(-v.y / SOFT))
        v.vx += DT * v.fx
        v.vy += DT * fy
        v.x += DT * v.vx
        v.y += DT * v.vy
        v.fx = 0.0
        v.fy = 0.0

    @rs.kernel
    def centre(v):
        cx += share * v.x
        cy += share * v.y

    @rs.kernel
    def misfit(p):
        loss += (cx - tx) * (cx - tx) + (cy - ty) * (cy - ty)

    def throw(steps):
        """Throw the net from its rest shape with the launch velocity (vx, vy) as set; the loss
        (on a tape: what `backward` differentiates)."""
        V.x.load(pos[:, 0])
        V.y.load(pos[:, 1])
        V.fx.load(0.0)
        V.fy.load(0.0)
        V.foreach(launch)
        for _ in range(steps):
            S.foreach(springs)
            V.foreach(move)
        cx.value, cy.value, loss.value = 0.0, 0.0, 0.0
        V.foreach(centre)
        P.foreach(misfit)
        return loss.value

    return throw, (vx, vy, loss, cx, cy, tx, ty), pos


def loss_and_gradient(throw, g, velocity, steps):
    vx, vy, loss = g[0], g[1], g[2]
    vx.value, vy.value = float(velocity[0]), float(velocity[1])  # before the tape: the control
    with rs.Tape() as tape:
        value = throw(steps)
    tape.backward(loss)
    return value, np.array([vx.grad, vy.grad])


def optimise(m=6, steps=800, tol=1e-14):
    """(target, centre reached, evaluations, gradient check error, scipy result)."""
    from scipy.optimize import minimize
    throw, g, pos = build(m)
    vx, vy, loss, cx, cy, tx, ty = g
    vx.value, vy.value = AIM
    throw(steps)
    target = np.array([cx.value, cy.value])
    tx.value, ty.value = target

    def f(v):
        return loss_and_gradient(throw, g, v, steps)

    _, grad = f(START)
    h = 1e-6
    fd = []
    for e in (np.array([h, 0.0]), np.array([0.0, h])):
        sides = []
        for v in (np.add(START, e), np.subtract(START, e)):
            vx.value, vy.value = v
            sides.append(throw(steps))
        fd.append((sides[0] - sides[1]) / (2 * h))
    gerr = float(np.max(np.abs(grad - fd) / np.maximum(np.abs(fd), 1e-300)))
    res = minimize(f, START, jac=True, method="L-BFGS-B",
                   options=dict(ftol=tol, gtol=tol, maxiter=200))
    loss_and_gradient(throw, g, res.x, steps)
    reached = np.array([cx.value, cy.value])
    length = float(np.linalg.norm(target - pos.mean(axis=0)))
    return target, reached, res.nfev, gerr, res, length


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run throw", description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=6, help="masses per side of the net")
    p.add_argument("--steps", type=int, default=800, help=f"steps of {DT} s")
    p.add_argument("--target", default=None, help="backend: a registered target (rs.targets())")
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args(argv)
    if a.m < 2 or a.steps < 1:
        p.error("--m must be at least 2 and --steps at least 1")
    try:
        import scipy  # noqa: F401
    except ImportError:
        print("relsim run throw: needs scipy (pip install scipy)")
        return 2
    changes = {k: v for k, v in (("target", a.target), ("threads", a.threads)) if v is not None}
    if changes:
        rs.configure(**changes)
    t0 = time.perf_counter()
    target, reached, evaluations, gerr, res, length = optimise(a.m, a.steps)
    elapsed = time.perf_counter() - t0
    miss = float(np.linalg.norm(reached - target)) / length
    print(f"throw: a {a.m} x {a.m} mass-spring net, {a.steps} steps of {DT} s, target "
          f"{rs.configure().target}{_ranks()}")
    print(f"  gradient at the start vs central differences: {gerr:.1e} (relative)")
    print(f"  L-BFGS-B: {evaluations} evaluations (throw + backward); launch velocity "
          f"({res.x[0]:.6f}, {res.x[1]:.6f}); {elapsed:.2f} s")
    print(f"  centre at T: ({reached[0]:.6f}, {reached[1]:.6f}), target ({target[0]:.6f}, "
          f"{target[1]:.6f}): missed by {miss:.1e} of the throw")
    bad = []
    if not gerr <= 1e-6:
        bad.append(f"the tape's gradient differs from central differences by {gerr:.1e}")
    if not miss <= 1e-3:
        bad.append(f"the centre missed the target by {miss:.1e} of the throw (limit 1e-3)")
    if bad:
        print("  FAILED: " + "; ".join(bad))
        return 1
    print("  OK: gradient checked, the centre reaches the target")
    return 0


def kernels() -> list:
    """(name, kernel, relation): none listed (`relsim explain throw`)."""
    return []


if __name__ == "__main__":
    raise SystemExit(main())
