"""Heat diffusion over the edges of a mesh; total heat is conserved to round-off.

The mesh is a structured grid of vertices joined by edges along both axes, built by hand with
relations and key fields (the domain libraries build the same from files).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import relsim as rs

from ._checks import nonfinite
from ._checks import ranks_note as _ranks
from ._progress import Progress


def grid_graph(nx: int, ny: int):
    """Vertices of an nx x ny grid and the edges between axis neighbours."""
    V = rs.Relation("vertices", nx * ny)
    idx = np.arange(nx * ny).reshape(ny, nx)
    tails = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    heads = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    E = rs.Relation("edges", len(heads))
    E.new_key_field("head", V).load(heads)
    E.new_key_field("tail", V).load(tails)
    xy = np.stack(np.meshgrid(np.linspace(0, 1, nx), np.linspace(0, 1, ny)), -1).reshape(-1, 2)
    V.new_field("pos", rs.vec(2, rs.f64)).load(xy)
    return V, E


def build(nx: int, ny: int, dt_value: float):
    V, E = grid_graph(nx, ny)
    V.new_field("T", rs.f64, init=0.0)
    V.new_field("flux", rs.f64, init=0.0)
    E.new_field("k", rs.f64, init=1.0)
    pos = V.pos.numpy()
    V.T.load(np.exp(-40.0 * ((pos[:, 0] - 0.3) ** 2 + (pos[:, 1] - 0.6) ** 2)))
    dt = rs.Global(rs.f64, dt_value)
    heat = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def conduct(e):
        d = e.k * (e.head.T - e.tail.T)
        e.tail.flux += d
        e.head.flux += -d

    @rs.kernel
    def update(v):
        v.T += dt * v.flux
        v.flux = 0.0
        heat += v.T

    return V, E, conduct, update, heat


def simulate(nx=64, ny=64, steps=200, dt=0.1, capture: bool = True):
    """Run `steps` steps; returns (the vertices, the initial heat, the total heat after each
    step). `capture`: the step recorded once and replayed (`rs.capture`; the same bits)."""
    V, E, conduct, update, heat = build(nx, ny, dt)
    heat.value = 0.0
    initial = float(np.sum(V.T.numpy()))  # NumPy's pairwise sum, only for the report

    def step():
        rs.assign(heat, 0.0)
        E.foreach(conduct)
        V.foreach(update)

    if capture:
        step = rs.capture(step)
    history = []
    with Progress(steps) as bar:
        for k in range(steps):
            step()
            history.append(heat.value)
            bar.update(k + 1)
    return V, initial, history


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run heat", description=__doc__.splitlines()[0])
    p.add_argument("--nx", type=int, default=200)
    p.add_argument("--ny", type=int, default=200)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--dt", type=float, default=0.1)
    p.add_argument("--target", default=None, help="backend: a registered target (rs.targets())")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no-capture", dest="capture", action="store_false",
                   help="launch the step's kernels one by one (default: rs.capture replays it)")
    a = p.parse_args(argv)
    changes = {k: v for k, v in (("target", a.target), ("threads", a.threads)) if v is not None}
    if changes:
        rs.configure(**changes)
    t0 = time.perf_counter()
    V, initial, history = simulate(a.nx, a.ny, a.steps, a.dt, a.capture)
    elapsed = time.perf_counter() - t0
    drift = abs(history[-1] - history[0]) / abs(history[0])
    print(f"heat diffusion on a {a.nx}x{a.ny} grid graph, {a.steps} steps, "
          f"target {rs.configure().target}{_ranks()}")
    print(f"  total heat: initial {initial:.15g}, after step 1 {history[0]:.15g}, "
          f"final {history[-1]:.15g}")
    print(f"  relative drift {drift:.3e}; max T {V.T.numpy().max():.6f}; "
          f"{elapsed:.2f} s (compile included)")
    bad = nonfinite(T=V.T.numpy(), total_heat=history)
    if bad:
        print("  FAILED: " + "; ".join(bad))
        return 1
    if drift > 1e-12:
        print("  FAILED: heat is not conserved")
        return 1
    print("  OK: heat conserved to round-off")
    return 0


def kernels() -> list:
    """(name, kernel, relation) of each kernel, on a small mesh (`relsim explain heat`)."""
    V, E, conduct, update, _ = build(4, 3, 0.1)
    return [("conduct", conduct, E), ("update", update, V)]


if __name__ == "__main__":
    raise SystemExit(main())
