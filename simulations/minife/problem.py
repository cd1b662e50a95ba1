"""miniFE's problem as a relsim program: a brick of nx x ny x nz hex8 elements on the unit cube,
steady conduction (diffusion coefficient 1, source 1) assembled element by element into a
`linalg.SparseMatrix`, Dirichlet values 1 on the x = 1 face and 0 on the five others, solved by
CG as the reference does (at most 200 iterations, tolerance machine epsilon on the residual norm).

Everything follows the reference (Mantevo miniFE 2.0, ``ref/``): node ids ``x + X (y + Y z)``
with X = nx + 1, Y = ny + 1 and coordinates ``id % X / nx`` (get_coords); element ids ``x + nx
(y + ny z)`` in that order, its 8 nodes in the Hex8 order and its node coordinates those of node
0 plus the spacing (get_hex8_node_coords_3d); 2x2x2 Gauss points at +-0.577350269 (the
reference's truncated constant), weights 1; the diffusion matrix and source vector computed
with the reference's formulas and summation order (Hex8::diffusionMatrix_symm, sourceVector,
gradients_and_invJ_and_detJ); impose_dirichlet first for the 0-valued faces, then for x = 1.
"""
from __future__ import annotations

import itertools

import numpy as np

import relsim as rs
from relsim import linalg

GAUSS = 0.577350269  # the reference's 1/sqrt(3), as written in gauss_pts.hpp


def _tables():
    """Shape-function gradients (8 x 3) and values (8) at each Gauss point, in the reference's
    point order (x slowest) and formulas (Hex8::gradients, Hex8::shape_fns)."""
    grads, psis = [], []
    for a, b, c in itertools.product((-GAUSS, GAUSS), repeat=3):
        u, v, w, up, vp, wp = 1.0 - a, 1.0 - b, 1.0 - c, 1.0 + a, 1.0 + b, 1.0 + c
        grads.append(np.array([
            [-0.125 * v * w, -0.125 * u * w, -0.125 * u * v],
            [0.125 * v * w, -0.125 * up * w, -0.125 * up * v],
            [0.125 * vp * w, 0.125 * up * w, -0.125 * up * vp],
            [-0.125 * vp * w, 0.125 * u * w, -0.125 * u * vp],
            [-0.125 * v * wp, -0.125 * u * wp, 0.125 * u * v],
            [0.125 * v * wp, -0.125 * up * wp, 0.125 * up * v],
            [0.125 * vp * wp, 0.125 * up * wp, 0.125 * up * vp],
            [-0.125 * vp * wp, 0.125 * u * wp, 0.125 * u * vp]]))
        psis.append(np.array([0.125 * u * v * w, 0.125 * up * v * w, 0.125 * up * vp * w,
                              0.125 * u * vp * w, 0.125 * u * v * wp, 0.125 * up * v * wp,
                              0.125 * up * vp * wp, 0.125 * u * vp * wp]))
    return np.vstack([np.column_stack([g, f]) for g, f in zip(grads, psis)])


# row 8 g + i: node i's shape-function gradient (3 columns) and value at Gauss point g; a
# Global, so that the element kernel reads the entries of the Gauss point it computes (a
# captured array would be a constant tuple, indexed at run time by building it whole)
TABLE = rs.Global(rs.mat(64, 4), _tables(), name="minife_shape_functions")


@rs.func
def gradients(g):
    """The 8 x 3 shape-function gradients at Gauss point g."""
    k = 8 * g
    return rs.mat(8, 3)((TABLE[k, 0], TABLE[k, 1], TABLE[k, 2]),
                        (TABLE[k + 1, 0], TABLE[k + 1, 1], TABLE[k + 1, 2]),
                        (TABLE[k + 2, 0], TABLE[k + 2, 1], TABLE[k + 2, 2]),
                        (TABLE[k + 3, 0], TABLE[k + 3, 1], TABLE[k + 3, 2]),
                        (TABLE[k + 4, 0], TABLE[k + 4, 1], TABLE[k + 4, 2]),
                        (TABLE[k + 5, 0], TABLE[k + 5, 1], TABLE[k + 5, 2]),
                        (TABLE[k + 6, 0], TABLE[k + 6, 1], TABLE[k + 6, 2]),
                        (TABLE[k + 7, 0], TABLE[k + 7, 1], TABLE[k + 7, 2]))


@rs.func
def values(g):
    """The 8 shape-function values at Gauss point g."""
    k = 8 * g
    return rs.vec(8)(TABLE[k, 3], TABLE[k + 1, 3], TABLE[k + 2, 3], TABLE[k + 3, 3],
                     TABLE[k + 4, 3], TABLE[k + 5, 3], TABLE[k + 6, 3], TABLE[k + 7, 3])


@rs.func
def det3(J):
    """det J as gradients_and_detJ computes it."""
    t0 = J[2, 2] * J[1, 1] - J[2, 1] * J[1, 2]
    t1 = J[2, 2] * J[0, 1] - J[2, 1] * J[0, 2]
    t2 = J[1, 2] * J[0, 1] - J[1, 1] * J[0, 2]
    return J[0, 0] * t0 - J[1, 0] * t1 + J[2, 0] * t2


@rs.func
def inverse3(J, det):
    """J^-1 (row-major) as gradients_and_invJ_and_detJ computes it."""
    inv = 1.0 / det
    return rs.mat(3, 3)(
        ((J[2, 2] * J[1, 1] - J[2, 1] * J[1, 2]) * inv,
         -(J[2, 2] * J[0, 1] - J[2, 1] * J[0, 2]) * inv,
         (J[1, 2] * J[0, 1] - J[1, 1] * J[0, 2]) * inv),
        (-(J[2, 2] * J[1, 0] - J[2, 0] * J[1, 2]) * inv,
         (J[2, 2] * J[0, 0] - J[2, 0] * J[0, 2]) * inv,
         -(J[1, 2] * J[0, 0] - J[1, 0] * J[0, 2]) * inv),
        ((J[2, 1] * J[1, 0] - J[2, 0] * J[1, 1]) * inv,
         -(J[2, 1] * J[0, 0] - J[2, 0] * J[0, 1]) * inv,
         (J[1, 1] * J[0, 0] - J[1, 0] * J[0, 1]) * inv))


class MiniFE:
    """The brick, its matrix and vectors (relations `nodes`, `elems`, the matrix `A`)."""

    def __init__(self, nx: int, ny: int, nz: int, config=None):
        for name, n in (("nx", nx), ("ny", ny), ("nz", nz)):
            if not isinstance(n, int) or n < 1:
                raise ValueError(f"{name} must be a positive int, got {n!r}")
        self.nx, self.ny, self.nz, self.config = nx, ny, nz, config
        X, Y, Z = nx + 1, ny + 1, nz + 1
        ids = np.arange(X * Y * Z, dtype=np.int64)
        N = self.nodes = rs.Relation("nodes", len(ids))
        pos = np.column_stack([(ids % X) / float(nx), ((ids % (X * Y)) // X) / float(ny),
                               (ids // (X * Y)) / float(nz)])  # get_coords: 1.0 * i / div
        N.new_field("pos", rs.vec(3)).load(pos)
        for name in ("b", "x"):
            N.new_field(name, rs.f64)
        ex, ey, ez = (a.ravel() for a in np.meshgrid(np.arange(nx), np.arange(ny),
                                                     np.arange(nz), indexing="ij"))
        order = np.argsort(ex + nx * (ey + ny * ez), kind="stable")
        n0 = (ex + X * (ey + Y * ez))[order]
        conn = np.column_stack([n0, n0 + 1, n0 + X + 1, n0 + X, n0 + X * Y, n0 + 1 + X * Y,
                                n0 + X + X * Y + 1, n0 + X + X * Y])
        E = self.elems = rs.Relation("elems", len(conn))
        E.new_key_field("v", N, 8, values=conn)
        self.A = linalg.SparseMatrix.from_elements(E.v, name="A")
        self.h = rs.Global(rs.vec(3), (1.0 / nx, 1.0 / ny, 1.0 / nz), name="h")
        on = {"x0": ids % X == 0, "y0": (ids % (X * Y)) // X == 0, "z0": ids // (X * Y) == 0,
              "x1": ids % X == nx, "y1": (ids % (X * Y)) // X == ny, "z1": ids // (X * Y) == nz}
        self.bc0 = np.flatnonzero(on["x0"] | on["y0"] | on["z0"] | on["y1"] | on["z1"])
        self.bc1 = np.flatnonzero(on["x1"])
        self.element = _element_kernel(self.h)

    @property
    def nrows(self) -> int:
        return self.nodes.size

    @property
    def nnz(self) -> int:
        return self.A.entries.size

    def precompile(self, background: bool = True) -> int:
        """Compile the element kernel's variant its launch needs, and the CG solve's kernels
        (`linalg.cg_launches`), or load them from the cache, before assembling. With
        `background` (and a cold cache), a launch that would run its parallel variant runs its
        serial one (same bits: the sums into A and b in element order) while a worker process
        compiles the parallel one for later runs (`rs.precompile`):
        that variant, 72 sites each adding to an owned entry or parking in a shared one, takes
        ~50 s to compile on this project's 2-core machine against ~5 s for the serial one.
        Returns the compilations done or started ahead (0 when the cache is warm)."""
        launches = [(self.element, self.elems)] + \
            linalg.cg_launches(self.A, self.nodes.b, self.nodes.x)  # (and the solve's)
        return rs.precompile(launches, self.config, background=background)

    def assemble(self) -> None:
        """The element loop (the diffusion matrices and source vectors summed into A and b
        through keys), then the Dirichlet values: 0 on x=0, y=0, z=0, y=1, z=1, then 1 on x=1."""
        self.elems.foreach(self.element, self.config)
        self.A.dirichlet(self.bc0, b=self.nodes.b, values=0.0)
        self.A.dirichlet(self.bc1, b=self.nodes.b, values=1.0)

    def solve(self, max_iter: int = 200, callback=None, timers=None, dots: str = "exact"):
        """The reference's CG: from x = 0 until the residual norm is <= machine epsilon or
        after max_iter iterations. `dots` (`linalg.cg`): "exact" dot products, or "ordered",
        summed in row order as the serial reference does (then the iterates are the serial
        reference's, bit for bit where the matrix is)."""
        self.nodes.x.fill(0.0)
        return linalg.cg(self.A, self.nodes.b, self.nodes.x, rtol=0.0,
                         atol=float(np.finfo(np.float64).eps), maxiter=max_iter,
                         callback=callback, config=self.config, timers=timers, dots=dots)


def _element_kernel(h):
    @rs.kernel
    def element(e):
        """Hex8::diffusionMatrix_symm and sourceVector of this element, summed into A and b."""
        p = e.v[0].pos
        X = rs.mat(8, 3)((p[0], p[1], p[2]), (p[0] + h[0], p[1], p[2]),
                         (p[0] + h[0], p[1] + h[1], p[2]), (p[0], p[1] + h[1], p[2]),
                         (p[0], p[1], p[2] + h[2]), (p[0] + h[0], p[1], p[2] + h[2]),
                         (p[0] + h[0], p[1] + h[1], p[2] + h[2]), (p[0], p[1] + h[1], p[2] + h[2]))
        Ke = 0.0 * rs.eye(8)
        be = rs.vec(8)(0.0)
        for g in range(8):  # the Gauss points (a loop, not unrolled: 8x less to compile)
            G = gradients(g)
            J = rs.transpose(G) @ X  # summed over the nodes in order, as the reference
            det = det3(J)
            D = G @ rs.transpose(inverse3(J, det))  # dpsidx, dpsidy, dpsidz of each node
            Ke = Ke + det * (D @ rs.transpose(D))
            be = be + values(g) * det
        for k in rs.static(range(64)):  # entry (k // 8, k % 8)
            e.A[k].a += Ke[k // 8, k % 8]
        for i in rs.static(range(8)):
            e.v[i].b += be[i]
    return element


def analytic(x, y, z, terms: int = 300) -> float:
    """The reference's series solution of Laplace's equation in the unit cube, 1 on x = 1 and
    0 on the other faces (analytic_soln.hpp: soln(x, y, z, 300, 300))."""
    pi = 3.141592653589793238462
    total = 0.0
    for p in range(terms + 1):
        sin_py = np.sin((2 * p + 1) * pi * y) / (2 * p + 1)
        for q in range(terms + 1):
            sin_qz = np.sin((2 * q + 1) * pi * z) / (2 * q + 1)
            ell = np.sqrt((2 * p + 1) ** 2 * pi * pi + (2 * q + 1) ** 2 * pi * pi)
            with np.errstate(over="ignore", invalid="ignore"):
                tmp = (np.sinh(ell * x) * sin_py) * (sin_qz / np.sinh(ell))
            if tmp != tmp:  # sinh overflowed: the reference breaks out of the inner loop
                break
            total += tmp
    return 16.0 / (pi * pi) * total


def verify(fe: MiniFE, tolerance: float = 0.06):
    """The reference's solution check at the nodes within 0.05 of the centre (verify_solution:
    the largest absolute difference from the analytic solution, against `tolerance`). Returns
    (passed, max_error, (x, y, z), computed, analytic) of the worst node."""
    pos = fe.nodes.pos.numpy()
    x = fe.nodes.x.numpy()
    near = np.flatnonzero((np.abs(pos - 0.5) < 0.05).all(axis=1))
    worst = (0.0, None, None, None)
    for i in near:
        px, py, pz = pos[i]
        want = 1.0 if px == 1.0 else 0.0 if 0.0 in (px, py, pz) or 1.0 in (py, pz) else \
            analytic(px, py, pz)
        err = abs(want - x[i])
        if err > worst[0]:
            worst = (err, (px, py, pz), x[i], want)
    return (worst[0] <= tolerance,) + worst
