"""Heat diffusion on a tetrahedral mesh (conduction over edges); total heat conserved to round-off.

The mesh comes from `relsim.domains.tetmesh`: a tetrahedralised box, or any tet mesh file meshio
reads (``--mesh part.msh``). Linear finite elements with a lumped capacity, written as kernels:

* per tet: its volume, and the P1 stiffness of each of its 6 edges (``K_ij = n_i.n_j / 36V``
  with n_i the outward area vectors of the faces opposite vertices i, j), reduced into the
  edge conductances ``k = -K_ij`` through the tet's edge keys;
* per vertex: the capacity ``c`` (a quarter of each incident tet's volume, over the grouping
  ``v.tets``) and the stable time step (a min-reduction over ``v.edges``);
* each step: ``conduct`` over edges (equal and opposite fluxes into head and tail) and
  ``update`` over vertices, which advances the heat content ``Q`` and sums it into a Global.

Heat leaves no vertex except through an edge to another, so the sum of Q is conserved exactly
up to round-off. ``--output DIR`` writes the temperature as VTU files per output step (a
``.pvd`` series) and as an XDMF+HDF5 time series, both readable by ParaView.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import relsim as rs
from relsim.domains import tetmesh
from relsim.output import TimeSeries

from ._checks import nonfinite
from ._checks import ranks_note as _ranks
from ._progress import Progress


def build(mesh, cfl: float = 0.5):
    """Fields and kernels of the simulation on `mesh` (a tetmesh.TetMesh)."""
    V, E, T = mesh.vertices, mesh.edges, mesh.tets
    T.new_field("vol", rs.f64, init=0.0)
    E.new_field("k", rs.f64, init=0.0)
    for name in ("c", "T", "Q", "flux"):
        V.new_field(name, rs.f64, init=0.0)
    dt = rs.Global(rs.f64, 0.0)
    dt_stable = rs.Global(rs.f64, 0.0)
    heat = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def stiffness(t):
        p0 = t.v[0].pos
        p1 = t.v[1].pos
        p2 = t.v[2].pos
        p3 = t.v[3].pos
        vol = rs.dot(p1 - p0, rs.cross(p2 - p0, p3 - p0)) / 6.0
        n0 = rs.cross(p2 - p1, p3 - p1)     # outward area vectors (x2) opposite each vertex
        n1 = rs.cross(p3 - p0, p2 - p0)
        n2 = rs.cross(p1 - p0, p3 - p0)
        n3 = rs.cross(p2 - p0, p1 - p0)
        s = -1.0 / (36.0 * vol)
        t.edges[0].k += s * rs.dot(n0, n1)  # local edges (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
        t.edges[1].k += s * rs.dot(n0, n2)
        t.edges[2].k += s * rs.dot(n0, n3)
        t.edges[3].k += s * rs.dot(n1, n2)
        t.edges[4].k += s * rs.dot(n1, n3)
        t.edges[5].k += s * rs.dot(n2, n3)
        t.vol = vol

    @rs.kernel
    def capacity(v):
        c = 0.0
        for t in v.tets:
            c += 0.25 * t.vol
        ksum = 0.0
        for e in v.edges:
            ksum += e.k
        v.c = c
        v.Q = c * v.T
        if ksum > 0.0:
            dt_stable = min(dt_stable, c / ksum)  # explicit Euler is stable below c / sum k

    @rs.kernel
    def conduct(e):
        d = e.k * (e.head.T - e.tail.T)
        e.tail.flux += d
        e.head.flux += -d

    @rs.kernel
    def update(v):
        v.Q += dt * v.flux
        v.flux = 0.0
        v.T = v.Q / v.c
        heat += v.Q

    def setup():
        T.foreach(stiffness)
        dt_stable.value = np.inf
        V.foreach(capacity)
        dt.value = cfl * dt_stable.value

    return setup, conduct, update, dt, heat


def initial_temperature(mesh) -> np.ndarray:
    """A Gaussian hot spot near one corner of the mesh's bounding box."""
    pos = mesh.vertices.pos.numpy()
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    centre = lo + np.array([0.3, 0.4, 0.5]) * (hi - lo)
    r2 = (((pos - centre) / np.maximum(hi - lo, 1e-300)) ** 2).sum(axis=1)
    return np.exp(-20.0 * r2)


def simulate(mesh, steps: int, cfl: float = 0.5, output: str | None = None, every: int = 10,
             capture: bool = True):
    """Run `steps` steps; returns (initial heat, per-step heat history, dt). `capture`: the
    step recorded once and replayed (`rs.capture`; the same bits)."""
    setup, conduct, update, dt, heat = build(mesh, cfl)
    V, E = mesh.vertices, mesh.edges
    V.T.load(initial_temperature(mesh))
    setup()
    initial = float(np.sum(V.Q.numpy()))  # NumPy's pairwise sum, only for the report
    series = []
    if output:
        os.makedirs(output, exist_ok=True)
        series = [TimeSeries(os.path.join(output, "tetheat.pvd"), V, ["T"]),
                  TimeSeries(os.path.join(output, "tetheat.xdmf"), V, ["T"])]

    def advance():
        rs.assign(heat, 0.0)
        E.foreach(conduct)
        V.foreach(update)

    if capture:
        advance = rs.capture(advance)
    history = []
    bar = Progress(steps)
    try:
        for s in series:
            s.write(0.0)
        for step in range(1, steps + 1):
            advance()
            history.append(heat.value)
            bar.update(step)
            if series and (step % every == 0 or step == steps):
                for s in series:
                    s.write(step * dt.value)
    finally:
        bar.close()
        for s in series:
            s.close()
    return initial, history, dt.value


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run tetheat", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=12, help="box cells per side (6 tets each)")
    p.add_argument("--mesh", default=None, help="a tet mesh file instead of the box")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--cfl", type=float, default=0.5, help="dt as a fraction of the stable dt")
    p.add_argument("--output", default=None, help="directory for VTU (.pvd) and XDMF output")
    p.add_argument("--every", type=int, default=10, help="output every N steps")
    p.add_argument("--target", default=None, help="backend: a registered target (rs.targets())")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no-capture", dest="capture", action="store_false",
                   help="launch the step's kernels one by one (default: rs.capture replays it)")
    a = p.parse_args(argv)
    changes = {k: v for k, v in (("target", a.target), ("threads", a.threads)) if v is not None}
    if changes:
        rs.configure(**changes)
    try:
        mesh = tetmesh.load(a.mesh) if a.mesh else tetmesh.box(a.n)
    except rs.DomainError as exc:
        print(f"relsim run tetheat: {exc}")
        return 2
    t0 = time.perf_counter()
    initial, history, dt = simulate(mesh, a.steps, a.cfl, a.output, a.every, a.capture)
    elapsed = time.perf_counter() - t0
    drift = abs(history[-1] - history[0]) / abs(history[0])
    V = mesh.vertices
    print(f"heat diffusion on {mesh.path}: {len(V)} vertices, {len(mesh.edges)} edges, "
          f"{len(mesh.tets)} tets; {a.steps} steps of dt {dt:.3g}, "
          f"target {rs.configure().target}{_ranks()}")
    print(f"  total heat: initial {initial:.15g}, after step 1 {history[0]:.15g}, "
          f"final {history[-1]:.15g}")
    print(f"  relative drift {drift:.3e}; max T {V.T.numpy().max():.6f}; "
          f"{elapsed:.2f} s (compile included)")
    if a.output:
        print(f"  wrote {a.output}/tetheat.pvd (VTU per step) and {a.output}/tetheat.xdmf")
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
    """(name, kernel, relation) of each kernel, on a small mesh (`relsim explain tetheat`)."""
    mesh = tetmesh.box(1)
    setup, conduct, update, _, _ = build(mesh)
    return [("conduct", conduct, mesh.edges), ("update", update, mesh.vertices)]


if __name__ == "__main__":
    raise SystemExit(main())
