"""P1 finite elements on a tet mesh for the solver tests: the stiffness matrix of -Laplace u = f
assembled into a `linalg.SparseMatrix` by an element kernel, the consistent load vector, zero
Dirichlet values on the box's sides; and the same matrix assembled with NumPy."""
from __future__ import annotations

import numpy as np

import relsim as rs
from relsim import linalg
from relsim.domains import tetmesh


def poisson(n, f, config=None):
    """(mesh, K, V) for -Laplace u = f on tetmesh.box(n) (f: a function of the (m, 3)
    positions), with V.b the load vector, zero values imposed on the sides, V.u/V.Ku free."""
    mesh = tetmesh.box(n)
    V, T = mesh.vertices, mesh.tets
    for name in ("f", "b", "x"):
        V.new_field(name, rs.f64)
    V.f.load(f(V.pos.numpy()))
    K = linalg.SparseMatrix.from_elements(T.v, name="K")

    @rs.kernel
    def assemble(t):
        p0 = t.v[0].pos
        J = rs.mat(3, 3)(t.v[1].pos - p0, t.v[2].pos - p0, t.v[3].pos - p0)
        vol = rs.det(J) / 6.0
        Ji = rs.inverse(J)
        g1 = Ji[:, 0]
        g2 = Ji[:, 1]
        g3 = Ji[:, 2]
        G = rs.mat(4, 3)(-(g1 + g2 + g3), g1, g2, g3)
        fsum = t.v[0].f + t.v[1].f + t.v[2].f + t.v[3].f
        for k in rs.static(range(16)):  # entry (i, j) = (k // 4, k % 4)
            t.K[k].a += vol * rs.dot(G[k // 4], G[k % 4])
        for i in rs.static(range(4)):
            t.v[i].b += vol / 20.0 * (t.v[i].f + fsum)

    T.foreach(assemble, config)
    sides = np.unique(np.concatenate([V.subsets[s].rows for s in
                                      ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")]))
    return mesh, K, V, sides


def stiffness_numpy(mesh):
    """The P1 stiffness matrix of `mesh`, assembled with NumPy (dense; small meshes)."""
    P = mesh.vertices.pos.numpy()
    K = np.zeros((len(P), len(P)))
    for t in mesh.tets.v.numpy():
        J = P[t[1:]] - P[t[0]]
        Ji = np.linalg.inv(J)
        G = np.vstack([-Ji.sum(axis=1), Ji.T])
        K[np.ix_(t, t)] += abs(np.linalg.det(J)) / 6.0 * G @ G.T
    return K
