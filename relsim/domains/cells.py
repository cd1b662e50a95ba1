"""Element kinds of the mesh domains: local edge and face tables, measures and validity checks.

Local numbering follows VTK / meshio / gmsh (and, for hexahedra, LULESH):

* ``triangle`` (a, b, c): counter-clockwise in (x, y), so the signed area is positive; edges
  (0,1) (1,2) (2,0); its facets are those same directed edges, which have the triangle on their
  left, so their right-hand normal points outward.
* ``tetra`` (0, 1, 2, 3): ``det(p1-p0, p2-p0, p3-p0) > 0`` (positive volume); edges (0,1) (0,2)
  (0,3) (1,2) (1,3) (2,3); face i is the face opposite vertex i, ordered so its right-hand
  normal points out of the tet: (1,2,3) (0,3,2) (0,1,3) (0,2,1).
* ``hexahedron`` (0..7): 0-3 the bottom face counter-clockwise seen from the top, 4-7 the top
  face above them; twelve edges (bottom, top, verticals); six outward faces
  z- (0,3,2,1), z+ (4,5,6,7), y- (0,1,5,4), x+ (1,2,6,5), y+ (2,3,7,6), x- (3,0,4,7).

All functions are plain NumPy over arrays of cells; the checks raise `DomainError` naming
`where` (a file or a generator) and the first bad element.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relsim import DomainError

from .sides import unique_rows, unique_sides


@dataclass(frozen=True)
class Kind:
    name: str          # meshio cell type
    dim: int           # topological dimension
    nverts: int
    edges: tuple       # local vertex pairs
    faces: tuple       # local facets, outward
    facet_type: str    # meshio cell type of a facet


TRIANGLE = Kind("triangle", 2, 3, ((0, 1), (1, 2), (2, 0)), ((0, 1), (1, 2), (2, 0)), "line")
TETRA = Kind("tetra", 3, 4, ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)),
             ((1, 2, 3), (0, 3, 2), (0, 1, 3), (0, 2, 1)), "triangle")
HEXAHEDRON = Kind("hexahedron", 3, 8,
                  ((0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4),
                   (0, 4), (1, 5), (2, 6), (3, 7)),
                  ((0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6),
                   (3, 0, 4, 7)), "quad")
KINDS = {k.name: k for k in (TRIANGLE, TETRA, HEXAHEDRON)}

# for each hex corner: its neighbours along the local x, y, z directions (a right-handed frame)
HEX_CORNER_FRAMES = ((1, 3, 4), (2, 0, 5), (3, 1, 6), (0, 2, 7),
                     (7, 5, 0), (4, 6, 1), (5, 7, 2), (6, 4, 3))

# relative size below which an element counts as degenerate (measure / longest_edge**dim)
DEGENERATE_TOL = 1e-12


def as_points(points, where: str) -> np.ndarray:
    """Points as a float64 (n, 3) array (2-D points get z = 0)."""
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] not in (2, 3):
        raise DomainError(f"{where}: points must have shape (n, 2) or (n, 3), got {p.shape}")
    if p.shape[1] == 2:
        p = np.column_stack([p, np.zeros(len(p))])
    if not np.all(np.isfinite(p)):
        bad = int(np.flatnonzero(~np.isfinite(p).all(axis=1))[0])
        raise DomainError(f"{where}: point {bad} has a non-finite coordinate {p[bad].tolist()}")
    return p


def check_indices(kind: Kind, cells, npoints: int, where: str) -> np.ndarray:
    """Cells as an int64 (m, nverts) array; dangling or repeated vertex indices are errors."""
    c = np.asarray(cells)
    if c.ndim != 2 or c.shape[1] != kind.nverts or (c.size and c.dtype.kind not in "iu"):
        raise DomainError(f"{where}: {kind.name} cells must be an integer array of shape "
                          f"(m, {kind.nverts}), got {c.dtype} {c.shape}")
    c = c.astype(np.int64)
    bad = np.flatnonzero(((c < 0) | (c >= npoints)).any(axis=1))
    if len(bad):
        raise DomainError(f"{where}: {kind.name} {int(bad[0])} has vertex indices "
                          f"{c[bad[0]].tolist()}, dangling (there are {npoints} points); "
                          f"{len(bad)} such element(s)")
    s = np.sort(c, axis=1)
    rep = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
    if len(rep):
        raise DomainError(f"{where}: {kind.name} {int(rep[0])} is degenerate: it repeats a "
                          f"vertex {c[rep[0]].tolist()}; {len(rep)} such element(s)")
    return c


def longest_edge(kind: Kind, p: np.ndarray, c: np.ndarray) -> np.ndarray:
    a, b = np.array(kind.edges).T
    d = p[c[:, a]] - p[c[:, b]]
    # the root of the largest squared length: the bits of the largest norm (sqrt is monotonic)
    return np.sqrt(np.add.reduce(d * d, axis=2).max(axis=1))


def triangle_normals(p: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(b - a) x (c - a) per triangle: twice the area, along the right-hand normal."""
    return np.cross(p[c[:, 1]] - p[c[:, 0]], p[c[:, 2]] - p[c[:, 0]])


def tet_volumes(p: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Signed volumes det(p1-p0, p2-p0, p3-p0) / 6."""
    a = p[c[:, 0]]
    return np.einsum("ij,ij->i", p[c[:, 1]] - a,
                     np.cross(p[c[:, 2]] - a, p[c[:, 3]] - a)) / 6.0


def hex_corner_jacobians(p: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(m, 8) triple products of the three edges at each corner (all > 0 for a valid hex)."""
    out = np.empty((len(c), 8))
    for k, (a, b, d) in enumerate(HEX_CORNER_FRAMES):
        o = p[c[:, k]]
        out[:, k] = np.einsum("ij,ij->i", p[c[:, a]] - o, np.cross(p[c[:, b]] - o, p[c[:, d]] - o))
    return out


def check_shapes(kind: Kind, p: np.ndarray, c: np.ndarray, where: str) -> None:
    """Raise on degenerate (zero measure) or inverted (negative measure) elements.

    Triangles are checked for inversion only when the mesh lies in a plane z = const (their
    normals must point to +z); for curved surfaces, `facets` checks that neighbours agree."""
    if not len(c):
        return
    h = longest_edge(kind, p, c)
    if kind is TRIANGLE:
        n = triangle_normals(p, c)
        size = np.linalg.norm(n, axis=1)
        signed = n[:, 2] if np.ptp(p[:, 2]) == 0.0 else size
    elif kind is TETRA:
        signed = size = tet_volumes(p, c)
    else:
        jac = hex_corner_jacobians(p, c)
        signed = size = jac.min(axis=1)
    small = np.abs(size) <= DEGENERATE_TOL * h ** kind.dim
    if small.any():
        i = int(np.flatnonzero(small)[0])
        raise DomainError(f"{where}: {kind.name} {i} (vertices {c[i].tolist()}) is degenerate: "
                          f"its {'area' if kind.dim == 2 else 'volume'} is {size[i]:.3g}; "
                          f"{int(small.sum())} such element(s)")
    neg = signed < 0
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        what = ("its normal points to -z (clockwise in x, y)" if kind is TRIANGLE else
                f"its {'volume' if kind is TETRA else 'corner Jacobian'} is {signed[i]:.3g}")
        raise DomainError(f"{where}: {kind.name} {i} (vertices {c[i].tolist()}) is inverted: "
                          f"{what}; {int(neg.sum())} such element(s)")


def unique_edges(kind: Kind, c: np.ndarray):
    """Unique edges as (tail, head) rows with tail < head, sorted; and each element's edges
    (m, len(kind.edges)) as rows of that table, in the local edge order."""
    found = unique_sides(c, kind.edges)
    return found.vertices, found.of_cell


def _orientation(f: np.ndarray) -> np.ndarray:
    """For facets given as vertex cycles: True/False by cyclic orientation (rotated so the
    smallest vertex comes first, is the next vertex smaller than the previous one?)."""
    k = f.shape[1]
    start = np.argmin(f, axis=1)
    r = np.arange(len(f))
    if k == 2:
        return start == 0
    return f[r, (start + 1) % k] < f[r, (start - 1) % k]


def facets(kind: Kind, c: np.ndarray, where: str):
    """Boundary facets of a conforming mesh: (facets (b, k) with outward orientation, the
    element each belongs to, its local face index). Checks that every interior facet is
    shared by exactly two elements that traverse it in opposite directions."""
    loc = np.array(kind.faces)
    nf = len(loc)
    all_f = c[:, loc].reshape(-1, loc.shape[1])
    if not len(all_f):
        return all_f, np.zeros(0, np.int64), np.zeros(0, np.int64)
    _, _, inverse, counts = unique_rows(np.sort(all_f, axis=1).astype(np.int64))
    per = counts[inverse]
    if kind is not TRIANGLE and (per > 2).any():
        i = int(np.flatnonzero(per > 2)[0])
        raise DomainError(f"{where}: face {sorted(all_f[i].tolist())} is shared by "
                          f"{int(per[i])} {kind.name} elements (overlapping or duplicate "
                          f"elements)")
    pair = np.flatnonzero(per == 2)
    if len(pair):
        order = pair[np.argsort(inverse[pair], kind="stable")]
        first, second = order[0::2], order[1::2]
        same = _orientation(all_f[first]) == _orientation(all_f[second])
        if same.any():
            a, b = int(first[same][0]), int(second[same][0])
            what = ("inconsistently oriented" if kind is TRIANGLE else
                    "overlapping or inverted")
            raise DomainError(f"{where}: {kind.name} elements {a // nf} and {b // nf} are "
                              f"{what}: they traverse their shared "
                              f"{'edge' if kind is TRIANGLE else 'face'} "
                              f"{sorted(all_f[a].tolist())} in the same direction")
    bnd = np.flatnonzero(per == 1)
    return all_f[bnd], (bnd // nf).astype(np.int64), (bnd % nf).astype(np.int64)
