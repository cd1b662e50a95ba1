"""Coloured in-place smoothers, shared by the coloured-launch tests and the MPI programs:
red-black SOR for a periodic 2-D Poisson problem on a grid, and Gauss-Seidel for a graph
Laplacian system on a tet mesh's vertices, coloured by its edges (`rs.colour`)."""
import numpy as np

import relsim as rs
from relsim.domains import tetmesh

OMEGA = 1.5


def red_black(n: int = 16):
    """(C, red, black, sor, residual, res): the grid, its two parity subsets, the SOR kernel
    (a neighbour offset of odd length always reaches the other colour on a periodic grid of even
    size) and the kernel summing the squared residual into `res`."""
    C = rs.Relation("rb", n * n)
    C.set_grid((n, n), True)
    f = np.random.default_rng(1).standard_normal(n * n)
    C.new_field("f", rs.f64).load(f - f.mean())  # (solvable: orthogonal to the constants)
    C.new_field("u", rs.f64)
    i, j = np.arange(n * n) % n, np.arange(n * n) // n
    red = C.subset("red", (i + j) % 2 == 0)
    black = C.subset("black", (i + j) % 2 == 1)
    res = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def sor(c):
        gs = 0.25 * (c(1, 0).u + c(-1, 0).u + c(0, 1).u + c(0, -1).u - c.f)
        c.u = (1.0 - OMEGA) * c.u + OMEGA * gs

    @rs.kernel
    def residual(c):
        r = c(1, 0).u + c(-1, 0).u + c(0, 1).u + c(0, -1).u - 4.0 * c.u - c.f
        res += r * r

    return C, red, black, sor, residual, res


def mesh_gauss_seidel(n: int = 4):
    """(V, colours, sweep, residual, res): Gauss-Seidel for (L + I) u = f with L the graph
    Laplacian of a tet mesh's edges, one launch per colour of `rs.colour(V, E.v)`; the
    neighbours are reached through a directed copy of the edges grouped by their source."""
    mesh = tetmesh.box(n)
    V, E = mesh.vertices, mesh.edges
    tail, head = E.tail.numpy(), E.head.numpy()
    N = rs.Relation("gs_pairs", 2 * E.size)
    N.new_key_field("src", V, values=np.concatenate([tail, head]))
    N.new_key_field("dst", V, values=np.concatenate([head, tail]))
    N.group_by("src", "out")
    V.new_field("f", rs.f64).load(np.random.default_rng(2).standard_normal(V.size))
    V.new_field("u", rs.f64)
    colours = rs.colour(V, E.v)
    res = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def sweep(v):
        s = v.f
        d = 1.0
        for p in v.out:
            s += p.dst.u
            d += 1.0
        v.u = s / d

    @rs.kernel
    def residual(v):
        s = v.f - v.u
        for p in v.out:
            s += p.dst.u - v.u
        res += s * s

    return V, colours, sweep, residual, res
