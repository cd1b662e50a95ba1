"""Tetrahedral meshes: read any file meshio reads, or tetrahedralise a box.

>>> from relsim.domains import tetmesh
>>> mesh = tetmesh.load("part.msh")          # .msh .vtu .vtk .mesh .xdmf ... (through meshio)
>>> mesh = tetmesh.box(4, 4, 4)              # or a box, 6 tets per cube cell
>>> V, E, T, B = mesh.vertices, mesh.edges, mesh.tets, mesh.boundary

Relations (built with the public relsim API only):

* ``vertices``: field ``pos`` (vec3 f64), the file's point data as fields; groupings ``edges``
  (incident edges) and ``tets`` (incident tets, ascending) for ``for e in v.edges:`` loops;
* ``tets``: key vector ``v`` (4 vertices, positive volume: ``det(v1-v0, v2-v0, v3-v0) > 0``),
  key vector ``edges`` (6 edges, local order (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)), the
  file's cell data as fields;
* ``edges``: unique edges, key fields ``tail`` < ``head`` and key vector ``v`` = (tail, head);
* ``boundary``: boundary triangles with outward normals (``(v1-v0) x (v2-v0)`` points out),
  key vector ``v``, key ``elem`` (the tet) and field ``side`` (i32: the local face, the one
  opposite vertex ``side`` of the tet).

``mesh.relations`` maps the names above to the relations.

Named sets become subsets: physical volumes / cell sets of tets on ``tets``; physical surfaces
/ cell sets of triangles on ``boundary`` and (their vertices) on ``vertices``; point sets on
``vertices``. `box` names its six sides ``xmin xmax ymin ymax zmin zmax`` the same way.
`load` drops points no tet uses and reorients tets listed with the opposite vertex order (a
warning counts each; `meshfile`). Bad input (unreadable file, no tets, dangling indices,
degenerate tets, inverted ones given to `from_arrays`, a face shared by three tets) raises
`relsim.DomainError` naming the file; nothing is half-built.
"""
from __future__ import annotations

import itertools
import os

import numpy as np

from . import meshfile
from .cells import TETRA
from .unstructured import Mesh, Names, build

NAMES = Names(vertices="vertices", elements="tets", vkey="v", coords=("pos",))


class TetMesh(Mesh):
    """A tet mesh: ``vertices``, ``edges``, ``tets``, ``boundary`` (relations), ``path``."""


def from_arrays(points, tets, *, where: str = "<arrays>", point_data=None, cell_data=None,
                point_sets=None, tet_sets=None, face_sets=None) -> TetMesh:
    """A tet mesh from points (n, 3) and tets (m, 4); sets map names to rows (point_sets,
    tet_sets) or to (f, 3) vertex triangles on the boundary (face_sets)."""
    return build(TETRA, points, tets, where, NAMES, point_data=point_data, cell_data=cell_data,
                 point_sets=point_sets, elem_sets=tet_sets, facet_sets=face_sets, cls=TetMesh)


def load(path) -> TetMesh:
    """Read the tets of a mesh file (other cell types are used only for named face sets)."""
    d = meshfile.read(path, TETRA)
    return from_arrays(d.points, d.cells, where=os.fspath(path), point_data=d.point_data,
                       cell_data=d.cell_data, point_sets=d.point_sets, tet_sets=d.elem_sets,
                       face_sets=d.facet_sets)


def box_arrays(nx: int, ny: int, nz: int, size=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0)):
    """Points and positively oriented tets of an nx x ny x nz box of cubes, each cut into the
    six Kuhn tets around its main diagonal (a conforming mesh)."""
    n = np.array([nx, ny, nz])
    if (n < 1).any():
        raise ValueError(f"box needs at least one cell per axis, got {tuple(n)}")
    axes = [origin[i] + size[i] * np.arange(n[i] + 1) / n[i] for i in range(3)]
    z, y, x = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
    points = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    stride = np.array([1, nx + 1, (nx + 1) * (ny + 1)])
    k, j, i = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    base = (i * stride[0] + j * stride[1] + k * stride[2]).ravel()
    tets = []
    for perm in itertools.permutations(range(3)):
        offs = np.cumsum([0] + [stride[a] for a in perm])       # v0 -> v3 along the diagonal
        t = base[:, None] + offs[None, :]
        odd = sum(perm[a] > perm[b] for a in range(3) for b in range(a + 1, 3)) % 2
        tets.append(t[:, [0, 2, 1, 3]] if odd else t)
    cells = np.stack(tets, axis=1).reshape(-1, 4)
    return points, cells


def box(nx: int = 4, ny: int | None = None, nz: int | None = None, size=1.0,
        origin=0.0) -> TetMesh:
    """A box [origin, origin + size] of nx x ny x nz cubes, 6 tets each; side subsets
    ``xmin xmax ymin ymax zmin zmax`` on ``boundary`` and ``vertices``. ``box(n)`` is n cubes
    per side of the unit cube [0, 1]^3: (n+1)^3 vertices, 6 n^3 tets."""
    ny = nx if ny is None else ny
    nz = nx if nz is None else nz
    size = np.broadcast_to(np.asarray(size, dtype=float), (3,))
    origin = np.broadcast_to(np.asarray(origin, dtype=float), (3,))
    points, cells = box_arrays(nx, ny, nz, size, origin)
    face_sets = side_sets(points, cells, origin, origin + size)
    return from_arrays(points, cells, where=f"tetmesh.box({nx}, {ny}, {nz})",
                       face_sets=face_sets)


def side_sets(points, cells, lo, hi) -> dict:
    """Boundary triangles on each side of the box [lo, hi], named xmin xmax ... zmax."""
    faces = cells[:, np.array(TETRA.faces)].reshape(-1, 3)
    out = {}
    for axis, a in enumerate("xyz"):
        for name, value in ((f"{a}min", lo[axis]), (f"{a}max", hi[axis])):
            on = np.isclose(points[faces, axis], value, rtol=0, atol=1e-12 * (1 + abs(value)))
            out[name] = faces[on.all(axis=1)]
    return out


# the public API (docs/api/ renders it; tests/test_docs.py checks each name is documented)
__all__ = ["TetMesh", "from_arrays", "load", "box", "box_arrays", "side_sets"]
