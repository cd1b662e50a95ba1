"""Inverse heat conduction: recover two conductivities from a few thermometers, with gradients
from rs.Tape and scipy's L-BFGS-B.

A unit box of tets (`relsim.domains.tetmesh`, ``--n`` cells a side) is made of two materials:
the half ``x < 0.5`` conducts with ``kappa_left``, the other half with ``kappa_right``. The heat
equation is `tetheat`'s (linear elements, lumped capacity, explicit Euler: conduction over the
edges, then an update of the vertices; an edge takes the conductivity of the half its midpoint
lies in). A hot spot diffuses for ``--steps`` steps from the truth ``(0.7, 1.6)``; ``--sensors``
vertices record their temperature every ``--every`` steps. Starting from ``(1, 1)``, L-BFGS-B
minimises the squared misfit between the recorded and the simulated temperatures; each
evaluation runs the simulation on a tape and differentiates the misfit with respect to both
conductivities (`tape.backward`). Checks (``relsim run inverse_heat`` exits 1 when one fails):
the tape's gradient at the start agrees with central differences to 1e-6, and the recovered
conductivities lie within 1e-3 (relative) of the truth. Needs scipy.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import relsim as rs
from relsim.domains import tetmesh

from . import tetheat
from ._checks import ranks_note as _ranks

TRUTH = (0.7, 1.6)
IMPLICIT_STEP = 10  # explicit steps per backward Euler step (--implicit)
START = (1.0, 1.0)
BOUNDS = (0.1, 2.0)


def build(n: int = 6, sensors: int = 8, seed: int = 3, implicit: bool = False):
    """The mesh, its kernels and Globals: (mesh, run(kappas, record) -> misfit, Globals).
    `implicit`: backward Euler steps of IMPLICIT_STEP explicit steps each, a linear solve per
    step (`implicit_stepper`)."""
    mesh = tetmesh.box(n)
    V, E = mesh.vertices, mesh.edges
    setup, _, _, dt, _ = tetheat.build(mesh, cfl=0.5 / BOUNDS[1])  # stable up to kappa = 2
    V.T.load(tetheat.initial_temperature(mesh))
    setup()  # edge conductances k and capacities c of the unit material
    pos = V.pos.numpy()
    E.new_field("left", rs.bool_).load(
        (pos[E.tail.numpy()][:, 0] + pos[E.head.numpy()][:, 0]) < 1.0)
    V.new_field("seen", rs.f64)
    rng = np.random.default_rng(seed)
    S = V.subset("sensors", np.sort(rng.choice(V.size, sensors, replace=False)))
    left, right = rs.Global(rs.f64, START[0]), rs.Global(rs.f64, START[1])
    misfit = rs.Global(rs.f64, 0.0)
    start = V.T.numpy(copy=True)

    @rs.kernel
    def conduct(e):
        d = (left if e.left else right) * e.k * (e.head.T - e.tail.T)
        e.tail.flux += d
        e.head.flux -= d

    @rs.kernel
    def update(v):
        v.T += dt * v.flux / v.c
        v.flux = 0.0

    @rs.kernel
    def compare(v):
        misfit += (v.T - v.seen) * (v.T - v.seen)

    step_once = implicit_stepper(mesh, left, right, dt) if implicit else None

    def run(steps, every, record=None):
        """Simulate from the hot spot with the conductivities `left`, `right` hold; with
        `record` (a list of arrays, one per observation) add the misfit to them into
        `misfit`; without, return the sensors' temperatures at each observation."""
        V.T.load(start)
        V.flux.load(0.0)
        misfit.value = 0.0
        seen = []
        if implicit:
            step_once.assemble()
        for step in range(1, steps + 1):
            if implicit:
                step_once()
            else:
                E.foreach(conduct)
                V.foreach(update)
            if step % every == 0:
                if record is None:
                    seen.append(V.T.numpy(copy=True))
                else:
                    V.seen.load(record[step // every - 1])
                    S.foreach(compare)
        return seen if record is None else misfit.value

    return mesh, run, (left, right, misfit)


def implicit_stepper(mesh, left, right, dt):
    """A backward Euler step of IMPLICIT_STEP * dt, (C / h + L) T_new = C / h T_old, L the
    edges' conductances as a graph Laplacian (the explicit step's conduction), assembled into a
    `linalg.SparseMatrix` by kernels (so on a tape the conductivities' gradient flows through
    the matrix: `linalg`'s solves are differentiated implicitly) and solved by cg. The step
    object: ``assemble()`` (once per run: the matrix depends on the conductivities), then one
    call per step."""
    from relsim import linalg
    V, E = mesh.vertices, mesh.edges
    tail, head = E.tail.numpy().astype(np.int64), E.head.numpy().astype(np.int64)
    H = linalg.SparseMatrix(V, np.r_[tail, head], np.r_[head, tail], name="H")
    code = H.entries.row.numpy().astype(np.int64) * V.size + H.entries.col.numpy()

    def entry(r, c):
        return np.searchsorted(code, r * V.size + c)

    E.new_key_field("H", H.entries, 4, values=np.stack(
        [entry(tail, tail), entry(tail, head), entry(head, tail), entry(head, head)], axis=1))
    V.new_key_field("Hd", H.entries, values=entry(np.arange(V.size), np.arange(V.size)))
    V.new_field("b", rs.f64)
    h = rs.Global(rs.f64, 0.0, name="h")

    @rs.kernel
    def laplacian(e):
        w = (left if e.left else right) * e.k
        e.H[0].a += w
        e.H[1].a -= w
        e.H[2].a -= w
        e.H[3].a += w

    @rs.kernel
    def capacity(v):
        v.Hd.a += v.c / h

    @rs.kernel
    def rhs(v):
        v.b = v.c / h * v.T

    class Step:
        def assemble(self):
            h.value = IMPLICIT_STEP * dt.value  # (a constant of the program)
            H.entries.a.fill(0.0)
            E.foreach(laplacian)
            V.foreach(capacity)

        def __call__(self):
            V.foreach(rhs)
            linalg.cg(H, V.b, V.T, rtol=1e-13)

    return Step()


def misfit_and_gradient(run, globals_, kappas, steps, every, record):
    """The misfit for conductivities `kappas` and its gradient. The parameters are set before
    the tape starts: the gradient is with respect to the values they have then (an assignment
    recorded on the tape would cut the derivative)."""
    left, right, misfit = globals_
    left.value, right.value = float(kappas[0]), float(kappas[1])
    with rs.Tape() as tape:
        value = run(steps, every, record)
    tape.backward(misfit)
    return value, np.array([left.grad, right.grad])


def misfit_only(run, globals_, kappas, steps, every, record):
    globals_[0].value, globals_[1].value = float(kappas[0]), float(kappas[1])
    return run(steps, every, record)


def recover(n=6, steps=200, every=20, sensors=8, tol=1e-12, implicit=False):
    """(truth, recovered, evaluations, gradient check error, scipy result)."""
    from scipy.optimize import minimize
    mesh, run, globals_ = build(n, sensors, implicit=implicit)
    globals_[0].value, globals_[1].value = TRUTH
    record = run(steps, every)

    def f(k):
        return misfit_and_gradient(run, globals_, k, steps, every, record)

    value, grad = f(START)
    h = 1e-6
    fd = [(misfit_only(run, globals_, np.add(START, e), steps, every, record) -
           misfit_only(run, globals_, np.subtract(START, e), steps, every, record)) / (2 * h)
          for e in (np.array([h, 0.0]), np.array([0.0, h]))]
    gerr = float(np.max(np.abs(grad - fd) / np.maximum(np.abs(fd), 1e-300)))
    res = minimize(f, START, jac=True, method="L-BFGS-B", bounds=[BOUNDS, BOUNDS],
                   options=dict(ftol=tol, gtol=tol, maxiter=200))
    return np.array(TRUTH), res.x, res.nfev, gerr, res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run inverse_heat",
                                description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=6, help="box cells a side (6 tets each)")
    p.add_argument("--steps", type=int, default=None, help="time steps (default 200; 20 "
                   "with --implicit)")
    p.add_argument("--every", type=int, default=None, help="steps between two observations "
                   "(default 20; 2 with --implicit)")
    p.add_argument("--implicit", action="store_true", help=f"backward Euler steps of "
                   f"{IMPLICIT_STEP} explicit ones, each a linalg.cg solve on the tape "
                   f"(differentiated implicitly)")
    p.add_argument("--sensors", type=int, default=8)
    p.add_argument("--target", default=None, help="backend: a registered target (rs.targets())")
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args(argv)
    scale = IMPLICIT_STEP if a.implicit else 1
    a.steps = 200 // scale if a.steps is None else a.steps
    a.every = 20 // scale if a.every is None else a.every
    if a.n < 2 or a.steps < 1 or not 1 <= a.every <= a.steps or a.sensors < 1:
        p.error("--n must be at least 2, --steps and --sensors at least 1, --every in "
                "1..--steps")
    try:
        import scipy  # noqa: F401
    except ImportError:
        print("relsim run inverse_heat: needs scipy (pip install scipy)")
        return 2
    changes = {k: v for k, v in (("target", a.target), ("threads", a.threads)) if v is not None}
    if changes:
        rs.configure(**changes)
    t0 = time.perf_counter()
    truth, found, evaluations, gerr, res = recover(a.n, a.steps, a.every, a.sensors,
                                                   implicit=a.implicit)
    elapsed = time.perf_counter() - t0
    rel = np.abs(found - truth) / truth
    how = f"implicit (backward Euler, cg) steps of {IMPLICIT_STEP} dt" if a.implicit else \
        "explicit steps"
    print(f"inverse heat conduction: {6 * a.n ** 3} tets, {a.steps} {how}, {a.sensors} "
          f"sensors every {a.every} steps, target {rs.configure().target}{_ranks()}")
    print(f"  gradient at the start vs central differences: {gerr:.1e} (relative)")
    print(f"  L-BFGS-B: {evaluations} evaluations (simulation + backward), misfit "
          f"{res.fun:.3e}; {elapsed:.2f} s")
    print(f"  conductivities: found ({found[0]:.6f}, {found[1]:.6f}), truth ({truth[0]}, "
          f"{truth[1]}): relative error {rel.max():.1e}")
    bad = []
    if not gerr <= 1e-6:
        bad.append(f"the tape's gradient differs from central differences by {gerr:.1e}")
    if not rel.max() <= 1e-3:
        bad.append(f"the conductivities were recovered to {rel.max():.1e} only (limit 1e-3)")
    if bad:
        print("  FAILED: " + "; ".join(bad))
        return 1
    print("  OK: gradient checked, conductivities recovered to 1e-3")
    return 0


def kernels() -> list:
    """(name, kernel, relation) of the forward kernels (`relsim explain inverse_heat`)."""
    return []


if __name__ == "__main__":
    raise SystemExit(main())
