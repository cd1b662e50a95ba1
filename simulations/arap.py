"""As-rigid-as-possible deformation of a triangle mesh with handles (Opt's flagship example),
solved by relsim.optimize.least_squares: Levenberg-Marquardt over residual kernels.

A ``--nx`` x ``--ny`` plane mesh (``trimesh.plane``, 2 x 1) keeps its left side where it is and
has its right side lifted by ``--lift`` and turned by ``--turn`` degrees. The unknowns are each
vertex's position p (vec2) and rotation angle theta; the residuals, per directed edge (i, j),
``(p_i - p_j) - R(theta_i) (rest_i - rest_j)``: how far the edge is from the rest edge turned
by its tail's rotation, and per handle vertex ``p - target`` (weight ``--weight``). Each
Levenberg-Marquardt step solves the normal equations by conjugate gradients with J assembled
from kernels generated from the residual kernel (``inner="sparse"``) and the Jacobi
preconditioner they give.

Checks (``relsim run arap`` exits 1 when one fails): the solve converges; every handle is
within 1e-3 of its target; nine edges in ten keep their rest length to within 10% (the handles
bend the strip; only near the turned end's corners must it stretch); with ``--check-scipy``,
SciPy's least_squares (analytic sparse Jacobian, trf + lsmr) from the same start reaches the
same cost to 1e-6.
``--output PATH`` writes the mesh with each vertex's displacement and angle (.vtu) for
ParaView (Warp By Vector shows the deformed mesh); ``--picture PATH`` draws the
rest and deformed meshes (needs matplotlib).
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import relsim as rs
from relsim import optimize
from relsim.domains import trimesh


def build(nx: int = 40, ny: int = 20, lift: float = 0.4, turn: float = 20.0):
    """(mesh, run, residuals, unknowns, the rest positions, the handle targets)."""
    mesh = trimesh.plane(nx, ny, size=(2.0, 1.0))
    V, E = mesh.vertices, mesh.edges
    rest = V.pos.numpy()[:, :2].copy()
    V.new_field("p", rs.vec(2)).load(rest)
    V.new_field("theta", rs.f64)
    tail, head = E.tail.numpy().astype(np.int64), E.head.numpy().astype(np.int64)
    H = rs.Relation("half_edges", 2 * E.size)
    H.new_key_field("i", V, values=np.concatenate([tail, head]))
    H.new_key_field("j", V, values=np.concatenate([head, tail]))
    hi, hj = H.i.numpy(), H.j.numpy()
    H.new_field("rest", rs.vec(2)).load(rest[hi] - rest[hj])
    H.new_field("r", rs.vec(2))
    left = V.subsets["xmin"].rows
    right = V.subsets["xmax"].rows
    a = math.radians(turn)
    centre = np.array([2.0, 0.5])
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    moved = (rest[right] - centre) @ rot.T + centre + np.array([0.0, lift])
    handles = np.concatenate([left, right])
    targets = np.concatenate([rest[left], moved])
    K = rs.Relation("handles", len(handles))
    K.new_key_field("v", V, values=handles)
    K.new_field("target", rs.vec(2)).load(targets)
    K.new_field("r", rs.vec(2))

    @rs.kernel
    def edge_residual(h):
        c = math.cos(h.i.theta)
        s = math.sin(h.i.theta)
        d = h.rest
        h.r = h.i.p - h.j.p - rs.vec(2)(c * d[0] - s * d[1], s * d[0] + c * d[1])

    @rs.kernel
    def handle_residual(k):
        k.r = k.v.p - k.target

    def run(config=None):
        H.foreach(edge_residual, config)
        K.foreach(handle_residual, config)

    return mesh, run, [H.r, K.r], [V.p, V.theta], rest, (handles, targets)


def scipy_cost(mesh, rest, handles_targets, weight: float, max_nfev=None):
    """SciPy's least_squares on the same problem (analytic sparse Jacobian, trf + lsmr,
    columns scaled by the Jacobian's norms): its final cost and positions (after at most
    `max_nfev` evaluations if given: `scipy_solve`)."""
    sol = scipy_solve(mesh, rest, handles_targets, weight, max_nfev)
    return 0.5 * float(np.sum(sol.fun ** 2)), sol.x[:2 * len(rest)].reshape(len(rest), 2)


def scipy_solve(mesh, rest, handles_targets, weight: float, max_nfev=None):
    """SciPy's `OptimizeResult` for the problem (trf + lsmr, from the rest shape; `status`
    0: stopped at `max_nfev`, its `njev`: the iterations taken)."""
    import scipy.optimize as so
    import scipy.sparse as sp
    E = mesh.edges
    tail, head = E.tail.numpy().astype(np.int64), E.head.numpy().astype(np.int64)
    i, j = np.concatenate([tail, head]), np.concatenate([head, tail])
    d = rest[i] - rest[j]
    handles, targets = handles_targets
    n, m, w = len(rest), len(i), math.sqrt(weight)

    def fun(x):
        p, th = x[:2 * n].reshape(n, 2), x[2 * n:]
        c, s = np.cos(th[i]), np.sin(th[i])
        rd = np.column_stack([c * d[:, 0] - s * d[:, 1], s * d[:, 0] + c * d[:, 1]])
        return np.concatenate([(p[i] - p[j] - rd).ravel(), (w * (p[handles] - targets)).ravel()])

    def jac(x):
        th = x[2 * n:]
        c, s = np.cos(th[i]), np.sin(th[i])
        rows, cols, vals = [], [], []
        for comp in range(2):
            r = 2 * np.arange(m) + comp
            rows += [r, r]
            cols += [2 * i + comp, 2 * j + comp]
            vals += [np.ones(m), -np.ones(m)]
        rows += [2 * np.arange(m), 2 * np.arange(m) + 1]
        cols += [2 * n + i, 2 * n + i]
        vals += [s * d[:, 0] + c * d[:, 1], -(c * d[:, 0] - s * d[:, 1])]
        hr = 2 * m + np.arange(2 * len(handles))
        rows.append(hr)
        cols.append((2 * handles[:, None] + np.arange(2)[None, :]).ravel())
        vals.append(np.full(2 * len(handles), w))
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                     np.concatenate(cols))),
                             shape=(2 * m + 2 * len(handles), 3 * n))

    x0 = np.concatenate([rest.ravel(), np.zeros(n)])
    # (x_scale="jac", as the SciPy Cookbook's large-scale bundle adjustment sets: 3x fewer
    # iterations here than unscaled)
    return so.least_squares(fun, x0, jac=jac, method="trf", tr_solver="lsmr", x_scale="jac",
                            ftol=1e-12, xtol=1e-12, gtol=1e-12, max_nfev=max_nfev)


def picture(path, mesh, rest, deformed) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tri = mesh.triangles.v.numpy()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.triplot(rest[:, 0], rest[:, 1], tri, color="0.8", linewidth=0.4)
    ax.triplot(deformed[:, 0], deformed[:, 1], tri, color="tab:blue", linewidth=0.4)
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_title("as-rigid-as-possible: rest (grey) and deformed (blue), handles at both ends")
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relsim run arap", description=__doc__.splitlines()[0])
    p.add_argument("--nx", type=int, default=40, help="cells along the 2-long side")
    p.add_argument("--ny", type=int, default=20, help="cells along the 1-long side")
    p.add_argument("--lift", type=float, default=0.4)
    p.add_argument("--turn", type=float, default=20.0, help="degrees")
    p.add_argument("--weight", type=float, default=100.0, help="the handles' weight")
    p.add_argument("--target", default=None, help="backend: a registered target (rs.targets())")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--check-scipy", action="store_true", help="compare with SciPy's cost")
    p.add_argument("--output", default=None, help="write the deformed mesh (.vtu)")
    p.add_argument("--picture", default=None, help="draw rest and deformed meshes (.png)")
    a = p.parse_args(argv)
    if a.target or a.threads:
        rs.configure(**{k: v for k, v in (("target", a.target), ("threads", a.threads)) if v})
    mesh, run, residuals, unknowns, rest, ht = build(a.nx, a.ny, a.lift, a.turn)
    V = mesh.vertices
    t0 = time.perf_counter()
    info = optimize.least_squares(run, residuals, unknowns, weights={residuals[1]: a.weight})
    elapsed = time.perf_counter() - t0
    deformed = V.p.numpy().copy()
    handles, targets = ht
    miss = float(np.abs(deformed[handles] - targets).max())
    tail, head = mesh.edges.tail.numpy(), mesh.edges.head.numpy()
    stretch = np.linalg.norm(deformed[tail] - deformed[head], axis=1) / \
        np.linalg.norm(rest[tail] - rest[head], axis=1)
    print(f"arap: {V.size} vertices, {3 * V.size} unknowns, {residuals[0].relation.size} "
          f"directed edges; {info.iterations} Levenberg-Marquardt iterations "
          f"({info.inner_iterations} cg), {elapsed:.2f} s, cost {info.cost:.9g}, {info.reason}")
    print(f"  handles within {miss:.1e} of their targets; edge lengths x{stretch.min():.3f} "
          f"to x{stretch.max():.3f}")
    rigid = float(np.mean(np.abs(stretch - 1.0) <= 0.1))
    print(f"  {100 * rigid:.1f}% of the edges within 10% of their rest length")
    ok = info.converged and miss < 1e-3 and rigid >= 0.9
    if a.check_scipy:
        want, _ = scipy_cost(mesh, rest, ht, a.weight)
        rel = abs(info.cost - want) / want
        print(f"  SciPy least_squares' cost {want:.9g}: relative difference {rel:.1e}")
        ok = ok and rel < 1e-6
    if a.output:  # (the displacement from the rest mesh: ParaView's "Warp By Vector")
        V.new_field("displacement", rs.vec(3)).load(np.column_stack([deformed - rest,
                                                                     np.zeros(V.size)]))
        rs.write(a.output, V, fields=[V.displacement, V.theta])
        print(f"  wrote {a.output}")
    if a.picture:
        picture(a.picture, mesh, rest, deformed)
        print(f"  drew {a.picture}")
    print("  checks: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


def bench(argv=None) -> int:
    """`relsim bench arap`: relsim's Levenberg-Marquardt against SciPy's least_squares
    (bench/peers/arap_deform.py of a clone of the repository)."""
    from ._peers import run_peer_bench
    return run_peer_bench("arap_deform.py", "arap", argv)


if __name__ == "__main__":
    raise SystemExit(main())
