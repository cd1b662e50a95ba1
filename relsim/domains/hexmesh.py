"""Hexahedral meshes: LULESH's structured box, and unstructured hex meshes read through meshio.

``box(n)`` builds exactly the single-domain mesh of LULESH 2.0 (s = n elements per edge; the
reference description is /work/shared/reference/lulesh.md sections 5.1-5.2), under the
reference's names:

* relation ``nodes`` ((n+1)^3 rows): node(col, row, plane) = plane*(n+1)^2 + row*(n+1) + col;
  fields ``x y z`` (f64) = (length*col)/n, (length*row)/n, (length*plane)/n, each computed
  independently (length = 1.125 by default, LULESH's); node subsets ``symmX`` (col = 0),
  ``symmY`` (row = 0), ``symmZ`` (plane = 0), (n+1)^2 nodes each, ascending;
  groupings ``corners`` (the node's element corners k = 8*e + local index, ascending in k:
  LULESH's nodeElemCornerList) and ``elems`` (its elements, ascending);
* relation ``elems`` (n^3 rows): elem(col, row, plane) = plane*n^2 + row*n + col;
  key vector ``nodelist`` (8 nodes, LULESH's local order: with base = node(col, row, plane),
  E1 = n+1, E2 = (n+1)^2: base, base+1, base+E1+1, base+E1, then the same + E2; so 0-3 is the
  z- face counter-clockwise in (x, y) and 4-7 the z+ face);
  face-neighbour keys ``lxim lxip letam letap lzetam lzetap`` (into ``elems``): lxim = e-1
  (0 at e = 0), lxip = e+1 (the last element at the last), letam = e-n if e >= n else e,
  letap = e+n if e < n^3-n else e, lzetam = e-n^2 if e >= n^2 else e, lzetap = e+n^2 if
  e < n^3-n^2 else e (at x boundaries lxim/lxip point into the neighbouring row: apply
  ``elemBC`` there, as the reference does);
  field ``elemBC`` (i32 bit mask): col = 0 -> XI_M_SYMM, col = n-1 -> XI_P_FREE,
  row = 0 -> ETA_M_SYMM, row = n-1 -> ETA_P_FREE, plane = 0 -> ZETA_M_SYMM,
  plane = n-1 -> ZETA_P_FREE (the constants below, LULESH's values);
  key vector ``corners`` (its 8 corner rows 8*e + i);
* relation ``corners`` (8 n^3 rows, k = 8*e + local index): keys ``elem`` and ``node``, for
  per-corner values (forces) that nodes gather ``for c in n.corners:`` in ascending k.

``load(path)`` reads the hexahedra of any mesh file meshio reads (VTK order = LULESH order;
inverted, degenerate or dangling elements raise `relsim.DomainError`) into ``nodes`` (x y z and
the point data), ``elems`` (``nodelist``, ``edges`` and the cell data), ``edges``, ``boundary``
(outward quads) and ``corners`` as above, with the file's named sets as subsets (see
`relsim.domains.tetmesh` for the conventions). Face neighbours and elemBC exist only for `box`.
"""
from __future__ import annotations

import os

import numpy as np

import relsim as rs

from . import meshfile
from .cells import HEXAHEDRON
from .unstructured import Mesh, Names, build

# LULESH's boundary-condition bits (elemBC)
XI_M, XI_M_SYMM, XI_M_FREE, XI_M_COMM = 0x00007, 0x00001, 0x00002, 0x00004
XI_P, XI_P_SYMM, XI_P_FREE, XI_P_COMM = 0x00038, 0x00008, 0x00010, 0x00020
ETA_M, ETA_M_SYMM, ETA_M_FREE, ETA_M_COMM = 0x001C0, 0x00040, 0x00080, 0x00100
ETA_P, ETA_P_SYMM, ETA_P_FREE, ETA_P_COMM = 0x00E00, 0x00200, 0x00400, 0x00800
ZETA_M, ZETA_M_SYMM, ZETA_M_FREE, ZETA_M_COMM = 0x07000, 0x01000, 0x02000, 0x04000
ZETA_P, ZETA_P_SYMM, ZETA_P_FREE, ZETA_P_COMM = 0x38000, 0x08000, 0x10000, 0x20000

NEIGHBOURS = ("lxim", "lxip", "letam", "letap", "lzetam", "lzetap")
NAMES = Names(vertices="nodes", elements="elems", vkey="nodelist", coords=("x", "y", "z"))


class HexMesh(Mesh):
    """A hex mesh: ``nodes``, ``elems``, ``corners`` (and ``edges``, ``boundary`` if loaded)."""


def lulesh_arrays(n: int, length: float = 1.125) -> dict:
    """LULESH's mesh arrays for s = n, under the reference's names (plain NumPy)."""
    if int(n) != n or n < 1:
        raise ValueError(f"hexmesh.box needs n >= 1 elements per edge, got {n!r}")
    n = int(n)
    e1, e2 = n + 1, (n + 1) ** 2
    plane, row, col = (a.ravel() for a in np.meshgrid(*[np.arange(n + 1)] * 3, indexing="ij"))
    out = {"x": (length * col) / n, "y": (length * row) / n, "z": (length * plane) / n}
    plane, row, col = (a.ravel() for a in np.meshgrid(*[np.arange(n)] * 3, indexing="ij"))
    base = plane * e2 + row * e1 + col
    local = np.array([0, 1, e1 + 1, e1, e2, e2 + 1, e2 + e1 + 1, e2 + e1])
    out["nodelist"] = base[:, None] + local[None, :]
    e = np.arange(n ** 3)
    last = n ** 3 - 1
    out["lxim"] = np.where(e == 0, 0, e - 1)
    out["lxip"] = np.where(e == last, last, e + 1)
    out["letam"] = np.where(e >= n, e - n, e)
    out["letap"] = np.where(e < n ** 3 - n, e + n, e)
    out["lzetam"] = np.where(e >= n * n, e - n * n, e)
    out["lzetap"] = np.where(e < n ** 3 - n * n, e + n * n, e)
    bc = np.zeros(n ** 3, dtype=np.int32)
    for where, bit in ((col == 0, XI_M_SYMM), (col == n - 1, XI_P_FREE),
                       (row == 0, ETA_M_SYMM), (row == n - 1, ETA_P_FREE),
                       (plane == 0, ZETA_M_SYMM), (plane == n - 1, ZETA_P_FREE)):
        bc[where] |= bit
    out["elemBC"] = bc
    i, j = (a.ravel() for a in np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"))
    out["symmZ"] = i * e1 + j
    out["symmY"] = i * e2 + j
    out["symmX"] = i * e2 + j * e1
    return out


def _add_corners(nodes, elems, key: str):
    """The ``corners`` relation (k = 8*e + i) with groupings ``nodes.corners``."""
    nodelist = elems.field(key).numpy()
    C = rs.Relation("corners", nodelist.size)
    k = np.arange(nodelist.size)
    C.new_key_field("elem", elems).load(k // 8)
    C.new_key_field("node", nodes).load(nodelist.ravel())
    elems.new_key_field("corners", C, 8).load(k.reshape(-1, 8))
    C.group_by("node", "corners")
    return C


def box(n: int, length: float = 1.125, *, corners: bool = True) -> HexMesh:
    """LULESH's cube of n^3 hexahedra and (n+1)^3 nodes (see the module docstring); with
    ``corners=False`` no ``corners`` relation (13 bytes per corner, 8 corners per element) for
    a program that reduces into the nodes through ``nodelist`` instead."""
    a = lulesh_arrays(n, length)
    nodes = rs.Relation("nodes", len(a["x"]))
    for c in "xyz":
        nodes.new_field(c, rs.f64).load(a[c])
    for name in ("symmX", "symmY", "symmZ"):
        nodes.subset(name, a[name])
    elems = rs.Relation("elems", len(a["nodelist"]))
    elems.new_key_field("nodelist", nodes, 8).load(a["nodelist"])
    for name in NEIGHBOURS:
        elems.new_key_field(name, elems).load(a[name])
    elems.new_field("elemBC", rs.i32).load(a["elemBC"])
    relations = {"nodes": nodes, "elems": elems}
    if corners:
        relations["corners"] = _add_corners(nodes, elems, "nodelist")
    elems.group_by("nodelist", "elems")
    xyz = ("x", "y", "z")
    rs.geometry.points(nodes, coords=xyz, cells=elems.nodelist, cell_type="hexahedron")
    rs.geometry.cells(elems, keys="nodelist", coords=xyz, cell_type="hexahedron")
    return HexMesh(f"hexmesh.box({n})", relations)


def from_arrays(points, hexes, *, where: str = "<arrays>", point_data=None, cell_data=None,
                point_sets=None, elem_sets=None, face_sets=None) -> HexMesh:
    """An unstructured hex mesh from points (n, 3) and hexahedra (m, 8) in VTK order."""
    m = build(HEXAHEDRON, points, hexes, where, NAMES, point_data=point_data,
              cell_data=cell_data, point_sets=point_sets, elem_sets=elem_sets,
              facet_sets=face_sets, cls=HexMesh)
    try:
        m.corners = _add_corners(m.nodes, m.elems, "nodelist")
    except rs.SchemaError as exc:
        raise rs.DomainError(f"{where}: {exc}") from exc
    m.relations["corners"] = m.corners
    return m


def load(path) -> HexMesh:
    """Read the hexahedra of a mesh file (quad cells are used only for named face sets)."""
    d = meshfile.read(path, HEXAHEDRON)
    return from_arrays(d.points, d.cells, where=os.fspath(path), point_data=d.point_data,
                       cell_data=d.cell_data, point_sets=d.point_sets, elem_sets=d.elem_sets,
                       face_sets=d.facet_sets)


# the public API (docs/api/ renders it; tests/test_docs.py checks each name is documented)
__all__ = ["HexMesh", "from_arrays", "load", "box", "lulesh_arrays"]
