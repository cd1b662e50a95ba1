"""Linear systems on graphs for the solver tests: A = c I + L (L the graph Laplacian of the edges,
c > 0: symmetric positive definite), optionally with a one-sided convection term w on every edge
(nonsymmetric), applied matrix-free by two kernels, and the same matrix in SciPy."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import relsim as rs
from relsim import linalg


def graph(nv=60, ne=150, seed=5, perm=None):
    """A random connected graph (a chain plus random edges); `perm` renumbers its vertices."""
    rng = np.random.default_rng(seed)
    tail = np.concatenate([np.arange(nv - 1), rng.integers(0, nv, ne - (nv - 1))])
    head = np.concatenate([np.arange(1, nv), rng.integers(0, nv, ne - (nv - 1))])
    if perm is not None:
        tail, head = perm[tail], perm[head]
    V, E = rs.Relation("V", nv), rs.Relation("E", ne)
    E.new_key_field("tail", V).load(tail)
    E.new_key_field("head", V).load(head)
    for name in ("u", "Au", "b", "x", "diag"):
        V.new_field(name, rs.f64)
    return V, E


def operator(V, E, c=1.0, w=0.0, cs=None):
    """The matrix-free A = c I + L (+ w: the head receives w * u_tail), on V.u -> V.Au; `cs`: a
    per-vertex field scaling c (a badly scaled diagonal)."""
    if cs is None:
        @rs.kernel
        def diagonal(v):
            v.Au = c * v.u
    else:
        @rs.kernel
        def diagonal(v):
            v.Au = c * v.cs * v.u

    @rs.kernel
    def laplacian(e):
        d = e.head.u - e.tail.u
        e.tail.Au -= d
        e.head.Au += d + w * e.tail.u

    def apply(config):
        V.foreach(diagonal, config)
        E.foreach(laplacian, config)

    return linalg.Operator(apply, x=V.u, y=V.Au)


def matrix(V, E, c=1.0, w=0.0, cs=None):
    """The same A as a SciPy CSR matrix."""
    n = V.size
    t, h = E.tail.numpy(), E.head.numpy()
    diag = c * (np.ones(n) if cs is None else cs)
    A = sp.diags(diag).tolil()
    for a, bb in zip(t, h):  # d = u_h - u_t: Au_t -= d, Au_h += d + w u_t
        A[a, a] += 1.0
        A[a, bb] -= 1.0
        A[bb, bb] += 1.0
        A[bb, a] -= 1.0
        A[bb, a] += w
    return A.tocsr()
