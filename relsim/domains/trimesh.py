"""Triangle meshes (planar or surfaces in 3-D): read any file meshio reads, or make a plane.

>>> from relsim.domains import trimesh
>>> mesh = trimesh.load("surface.obj")       # .msh .vtu .vtk .off .obj .stl .xdmf ... (meshio)
>>> mesh = trimesh.plane(8, 4)               # or a rectangle, 2 triangles per square cell
>>> V, E, F, B = mesh.vertices, mesh.edges, mesh.triangles, mesh.boundary

Relations (built with the public relsim API only):

* ``vertices``: field ``pos`` (vec3 f64; z = 0 for planar meshes), the file's point data as
  fields; groupings ``edges`` (incident edges) and ``triangles`` (incident triangles);
* ``triangles``: key vector ``v`` (3 vertices: counter-clockwise for a mesh in a plane
  z = const; for a surface, neighbours agree on the orientation), key vector ``edges`` (local
  order (0,1) (1,2) (2,0)), the file's cell data as fields;
* ``edges``: unique edges, key fields ``tail`` < ``head`` and key vector ``v`` = (tail, head);
* ``boundary``: boundary edges in their triangle's direction (so the outward normal is to
  their right), key vector ``v``, key ``elem`` (the triangle) and field ``side`` (i32: its
  local edge, (side, side+1 mod 3)).

``mesh.relations`` maps the names above to the relations.

Named sets become subsets: physical surfaces / cell sets of triangles on ``triangles``;
physical curves / cell sets of lines on ``boundary`` and (their vertices) on ``vertices``;
point sets on ``vertices``. `plane` names its sides ``xmin xmax ymin ymax``.
`load` drops points no triangle uses and, in a planar mesh, reorients clockwise triangles (a
warning counts each; `meshfile`). Bad input (unreadable file, no triangles, dangling indices,
degenerate triangles, clockwise ones given to `from_arrays`, inconsistently oriented ones)
raises `relsim.DomainError`; nothing is half-built.
"""
from __future__ import annotations

import os

import numpy as np

from . import meshfile
from .cells import TRIANGLE
from .unstructured import Mesh, Names, build

NAMES = Names(vertices="vertices", elements="triangles", vkey="v", coords=("pos",))


class TriMesh(Mesh):
    """A triangle mesh: ``vertices``, ``edges``, ``triangles``, ``boundary``, ``path``."""


def from_arrays(points, triangles, *, where: str = "<arrays>", point_data=None,
                cell_data=None, point_sets=None, triangle_sets=None,
                edge_sets=None) -> TriMesh:
    """A triangle mesh from points (n, 2 or 3) and triangles (m, 3); sets map names to rows
    (point_sets, triangle_sets) or to (f, 2) boundary edges (edge_sets)."""
    return build(TRIANGLE, points, triangles, where, NAMES, point_data=point_data,
                 cell_data=cell_data, point_sets=point_sets, elem_sets=triangle_sets,
                 facet_sets=edge_sets, cls=TriMesh)


def load(path) -> TriMesh:
    """Read the triangles of a mesh file (line cells are used only for named edge sets)."""
    d = meshfile.read(path, TRIANGLE)
    return from_arrays(d.points, d.cells, where=os.fspath(path), point_data=d.point_data,
                       cell_data=d.cell_data, point_sets=d.point_sets,
                       triangle_sets=d.elem_sets, edge_sets=d.facet_sets)


def plane_arrays(nx: int, ny: int, size=(1.0, 1.0), origin=(0.0, 0.0)):
    """Points (z = 0) and counter-clockwise triangles of an nx x ny rectangle of squares,
    each cut along its diagonal from (i, j) to (i+1, j+1)."""
    if nx < 1 or ny < 1:
        raise ValueError(f"plane needs at least one cell per axis, got ({nx}, {ny})")
    x = origin[0] + size[0] * np.arange(nx + 1) / nx
    y = origin[1] + size[1] * np.arange(ny + 1) / ny
    yy, xx = np.meshgrid(y, x, indexing="ij")
    points = np.column_stack([xx.ravel(), yy.ravel(), np.zeros(xx.size)])
    j, i = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    a = (j * (nx + 1) + i).ravel()
    b, c, d = a + 1, a + nx + 2, a + nx + 1          # (i+1, j), (i+1, j+1), (i, j+1)
    tris = np.stack([np.column_stack([a, b, c]), np.column_stack([a, c, d])], axis=1)
    return points, tris.reshape(-1, 3)


def plane(nx: int = 8, ny: int | None = None, size=1.0, origin=0.0) -> TriMesh:
    """The rectangle [origin, origin + size] in z = 0, nx x ny squares of 2 triangles; side
    subsets ``xmin xmax ymin ymax`` on ``boundary`` and ``vertices``. ``plane(n)`` is n
    squares per side of the unit square [0, 1]^2."""
    ny = nx if ny is None else ny
    size = np.broadcast_to(np.asarray(size, dtype=float), (2,))
    origin = np.broadcast_to(np.asarray(origin, dtype=float), (2,))
    points, tris = plane_arrays(nx, ny, size, origin)
    edges = tris[:, np.array(TRIANGLE.faces)].reshape(-1, 2)
    sets = {}
    for axis, a in enumerate("xy"):
        for name, value in ((f"{a}min", origin[axis]), (f"{a}max", origin[axis] + size[axis])):
            on = np.isclose(points[edges, axis], value, rtol=0, atol=1e-12 * (1 + abs(value)))
            sets[name] = edges[on.all(axis=1)]
    return from_arrays(points, tris, where=f"trimesh.plane({nx}, {ny})", edge_sets=sets)


# the public API (docs/api/ renders it; tests/test_docs.py checks each name is documented)
__all__ = ["TriMesh", "from_arrays", "load", "plane", "plane_arrays"]
