"""Relations of an unstructured mesh, built from arrays (shared by trimesh, tetmesh, hexmesh).

`build` validates everything first (indices, shapes, orientation, names) and only then creates
the relations, so a bad mesh raises `DomainError` and leaves nothing half-built. For a mesh of
elements ``C`` over vertices ``V`` it makes:

* ``V``: the points, with the coordinate field(s) and the file's point data as fields;
* ``C``: the elements, with a key vector of their vertices (local order of `cells.Kind`), a key
  vector ``edges`` of their edges (the kind's local edge order) and the file's cell data;
* ``edges``: the unique edges, key fields ``tail < head`` and the key vector ``v = (tail,
  head)``; sorted by (tail, head);
* ``boundary``: facets that belong to one element, outward, key vector ``v``, key ``elem``
  (the element) and field ``side`` (i32, the element's local face index: for a tet the face
  opposite vertex ``side``, for a triangle the edge (side, side+1 mod 3)); in the order of
  their elements;
* groupings on ``V``: ``edges`` (incident edges) and one named after ``C`` (incident elements,
  ascending), so kernels can write ``for e in v.edges:``;
* subsets: named vertex sets on ``V``, element sets on ``C``, facet sets on ``boundary`` (and
  the vertices of each facet set on ``V`` under the same name).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

import relsim as rs
from relsim import DomainError

from .cells import Kind, as_points, check_indices, check_shapes, facets, unique_edges


@dataclass(frozen=True)
class Names:
    vertices: str = "vertices"
    elements: str = "tets"
    vkey: str = "v"              # the elements' vertex key vector
    coords: tuple = ("pos",)     # one vec3 field, or three scalar fields (x, y, z)


class Mesh:
    """A built mesh: its relations as attributes (``mesh.vertices``, ``mesh.edges`` ...) and
    as the dict ``mesh.relations`` (name -> Relation, in build order: vertices, edges,
    elements, boundary; `hexmesh` adds corners); ``path``: the file, or what built it."""

    def __init__(self, where: str, relations: dict):
        self.path = where
        self.relations = dict(relations)
        for name, rel in relations.items():
            setattr(self, name, rel)

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={len(r)}" for k, r in self.relations.items())
        return f"<{type(self).__name__} {self.path}: {parts}>"


_DTYPES = {"f": {8: rs.f64, 4: rs.f32}, "i": {4: rs.i32, 8: rs.i64}, "b": {1: rs.bool_}}


def field_type(arr: np.ndarray, what: str):
    """The relsim type of a data array of shape (rows,), (rows, k) or (rows, k, m)."""
    kind, size = arr.dtype.kind, arr.dtype.itemsize
    if kind == "u":
        kind, size = "i", 8
    elem = _DTYPES.get(kind, {}).get(size) or (rs.i64 if kind == "i" else None)
    if elem is None:
        raise DomainError(f"{what}: data of dtype {arr.dtype} cannot be a field")
    if arr.ndim == 1:
        return elem
    if arr.ndim == 2:
        return rs.vec(arr.shape[1], elem)
    if arr.ndim == 3:
        return rs.mat(arr.shape[1], arr.shape[2], elem)
    raise DomainError(f"{what}: data of shape {arr.shape} cannot be a field")


def _lookup(table: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Row of `table` equal (as a vertex set) to each query row, or -1."""
    key = np.sort(table, axis=1)
    q = np.sort(queries, axis=1)
    both = np.concatenate([key, q])
    _, inv = np.unique(both, axis=0, return_inverse=True)
    inv = inv.ravel()
    where = np.full(inv.max() + 1 if len(inv) else 0, -1, dtype=np.int64)
    where[inv[:len(key)]] = np.arange(len(key))
    return where[inv[len(key):]]


def build(kind: Kind, points, cells, where: str, names: Names = Names(), *, point_data=None,
          cell_data=None, point_sets=None, elem_sets=None, facet_sets=None, cls=Mesh) -> Mesh:
    """Validate the arrays and build the mesh's relations (see the module docstring)."""
    p = as_points(points, where)
    c = check_indices(kind, cells, len(p), where)
    if not len(c):
        raise DomainError(f"{where}: the mesh has no {kind.name} elements")
    check_shapes(kind, p, c, where)
    edges, elem_edges = unique_edges(kind, c)
    bfacets, belem, bside = facets(kind, c, where)

    vsets = {k: _rows(v, len(p), f"{where}: vertex set {k!r}") for k, v in
             (point_sets or {}).items()}
    esets = {k: _rows(v, len(c), f"{where}: element set {k!r}") for k, v in
             (elem_sets or {}).items()}
    bsets = {}
    for name, fs in (facet_sets or {}).items():
        fs = np.asarray(fs, dtype=np.int64)
        rows = _lookup(bfacets, fs) if len(fs) and len(bfacets) else np.full(len(fs), -1)
        if (rows < 0).any():
            warnings.warn(f"{where}: {int((rows < 0).sum())} of the {len(fs)} facets of set "
                          f"{name!r} are not on the boundary; they are left out",
                          RuntimeWarning, stacklevel=3)
        bsets[name] = np.unique(rows[rows >= 0])
        vsets.setdefault(name, np.unique(fs))
    pdata = _data(point_data, len(p), where, "point data")
    cdata = _data(cell_data, len(c), where, "cell data")

    vnames = list(names.coords) + ["edges", names.elements]
    _check_names(where, names.vertices, vnames, pdata, vsets)
    _check_names(where, names.elements, [names.vkey, "edges"], cdata, esets)
    _check_names(where, "boundary", ["v", "elem", "side"], {}, bsets)

    # -- everything is valid: build (nothing escapes until the end) -------------------------
    try:
        rels = _make(kind, names, p, c, edges, elem_edges, bfacets, belem, bside, pdata, cdata,
                     vsets, esets, bsets)
    except (rs.SchemaError, rs.DataError) as exc:
        raise DomainError(f"{where}: {exc}") from exc
    return cls(where, rels)


def _make(kind, names, p, c, edges, elem_edges, bfacets, belem, bside, pdata, cdata, vsets,
          esets, bsets) -> dict:
    V = rs.Relation(names.vertices, len(p))
    if len(names.coords) == 1:
        V.new_field(names.coords[0], rs.vec(3, rs.f64)).load(p)
    else:
        for i, n in enumerate(names.coords):
            V.new_field(n, rs.f64).load(p[:, i])
    E = rs.Relation("edges", len(edges))
    E.new_key_field("tail", V).load(edges[:, 0])
    E.new_key_field("head", V).load(edges[:, 1])
    E.new_key_field("v", V, 2).load(edges)
    C = rs.Relation(names.elements, len(c))
    C.new_key_field(names.vkey, V, kind.nverts).load(c)
    C.new_key_field("edges", E, len(kind.edges)).load(elem_edges)
    B = rs.Relation("boundary", len(bfacets))
    B.new_key_field("v", V, bfacets.shape[1]).load(bfacets)
    B.new_key_field("elem", C).load(belem)
    B.new_field("side", rs.i32).load(bside.astype(np.int32))
    E.group_by("v", "edges")
    C.group_by(names.vkey, names.elements)
    for rel, data in ((V, pdata), (C, cdata)):
        for name, (arr, t) in data.items():
            rel.new_field(name, t, init=None).load(arr)
    for rel, sets in ((V, vsets), (C, esets), (B, bsets)):
        for name, rows in sets.items():
            rel.subset(name, rows)

    coords = names.coords[0] if len(names.coords) == 1 else tuple(names.coords)
    rs.geometry.points(V, coords=coords, cells=C.field(names.vkey), cell_type=kind.name)
    rs.geometry.cells(C, keys=names.vkey, coords=coords, cell_type=kind.name)
    rs.geometry.cells(E, keys=("tail", "head"), coords=coords, cell_type="line")
    rs.geometry.cells(B, keys="v", coords=coords, cell_type=kind.facet_type)
    return {names.vertices: V, "edges": E, names.elements: C, "boundary": B}


def _rows(values, n: int, what: str) -> np.ndarray:
    r = np.asarray(values)
    if r.size and (r.dtype.kind not in "iu" or r.min() < 0 or r.max() >= n):
        raise DomainError(f"{what}: rows must be integers in [0, {n})")
    return np.unique(r.astype(np.int64))


def _data(data, n: int, where: str, what: str) -> dict:
    out = {}
    for name, arr in (data or {}).items():
        arr = np.asarray(arr)
        if arr.shape == (n, 1):
            arr = arr[:, 0]
        if arr.shape[:1] != (n,):
            raise DomainError(f"{where}: {what} {name!r} has shape {arr.shape}, not {n} rows")
        out[name] = (arr, field_type(arr, f"{where}: {what} {name!r}"))
    return out


def _check_names(where: str, rel: str, taken: list, data: dict, sets: dict) -> None:
    seen = {n: "a built-in field or grouping" for n in taken}
    for kind, names in (("a data field", data), ("a named set", sets)):
        for n in names:
            if not n.isidentifier():
                raise DomainError(f"{where}: {kind} of {rel} is named {n!r}, not an identifier")
            if n in seen:
                raise DomainError(f"{where}: {kind} named {n!r} on {rel} clashes with "
                                  f"{seen[n]} of the same name")
            seen[n] = kind
