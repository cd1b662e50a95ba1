"""Mesh geometry of relations, declared by domains: the public plugin API ``rs.geometry``.

A domain (bundled or a third-party plugin) says here where its relations' rows are, so that
``rs.write`` / ``relsim.output.TimeSeries`` can write their fields as VTU, XDMF, ... and a
run on several ranks can partition them by where they are:

* ``rs.geometry.points(V, coords="pos", cells=C.v, cell_type="tetra")``: the rows of `V` are
  the points of a mesh; `V`'s fields are written as point data on its cells;
* ``rs.geometry.cells(C, keys="v", coords="pos", cell_type="tetra")``: each row of `C` is one
  cell, whose vertices are rows of the relation its key field(s) point into; `C`'s fields are
  written as cell data;
* ``rs.geometry.point_cloud(P, coords="pos")``: the rows of `P` are points on their own
  (particles), written as one ``vertex`` cell each, however many rows `P` has then.

`coords` names the coordinates of the point relation: one float field (``rs.vec(2 or 3,
rs.f64)`` or ``f32``; a float scalar for points on a line) or a tuple of two or three float
scalar fields ``("x", "y", "z")``; fewer than three components are padded with zeros. Fields may
be given by name or as Field objects. Coordinates are read when writing, so a moving mesh is
written where it is then. `cell_type` is a meshio cell type (`CELL_TYPES`: ``"line"``,
``"triangle"``, ``"quad"``, ``"tetra"``, ``"hexahedron"`` ...), with its vertices in meshio's
(VTK's) local order.

Declaring a relation again replaces what it had. Bad arguments raise `DomainError` naming the
relation and field. The declarations are kept in `relsim.output`, which writes the files; a
relation with none cannot be written.
"""
from __future__ import annotations

import numpy as np

from . import output
from .errors import DomainError
from .relations import Field, Relation
from .types import ScalarType, VecType

# meshio cell type -> vertices per cell: the types relsim writes (meshio knows them all;
# tests/domains/test_plugins.py checks the counts against meshio's own table)
CELL_TYPES = {
    "vertex": 1, "line": 2, "triangle": 3, "quad": 4, "tetra": 4, "pyramid": 5, "wedge": 6,
    "hexahedron": 8, "line3": 3, "triangle6": 6, "quad8": 8, "quad9": 9, "tetra10": 10,
    "pyramid13": 13, "wedge15": 15, "hexahedron20": 20, "hexahedron27": 27,
}


def points(vertices, *, coords, cells, cell_type: str) -> None:
    """Declare `vertices` (a Relation) the points of a mesh of `cells` of meshio `cell_type`,
    at the coordinate field(s) `coords` of `vertices`.

    `cells` is the connectivity, read now: an (m, k) integer array of rows of `vertices`, or
    the key field(s) of the element relation that hold it (a key vector of k vertices, or a
    tuple of k scalar key fields, as Field objects: ``C.v``, ``(E.tail, E.head)``).
    `rs.write(path, vertices, fields)` then writes `vertices`' fields as point data."""
    where = _relation("rs.geometry.points", "vertices", vertices)
    nverts = _cell_type(where, cell_type)
    coords = _coords(where, vertices, coords)
    if isinstance(cells, Field) or (isinstance(cells, tuple | list) and cells
                                    and all(isinstance(f, Field) for f in cells)):
        keys = _keys(where, cells, None, vertices)
        # a key vector's own array (read-only, and replaced, never changed, by a load: the
        # connectivity as it is now, without a copy); scalar keys side by side
        cols = [f.numpy().reshape(f.relation.size, -1) for f in keys]
        arr = cols[0] if len(cols) == 1 else np.column_stack(cols)
        source = f"key field(s) {', '.join(f.qualname for f in keys)}"
    else:
        try:
            arr = np.asarray(cells)
        except (TypeError, ValueError):  # ragged rows
            arr = np.asarray(None)
        if arr.size == 0 and arr.ndim <= 2:
            arr = arr.reshape(0, nverts).astype(np.int64)
        if arr.ndim != 2 or arr.dtype.kind not in "iu":
            raise DomainError(f"{where}: cells must be an (m, {nverts}) integer array of rows "
                              f"of {vertices.name}, or key field(s) into it; got "
                              f"{_describe(cells, arr)}")
        arr = arr.astype(np.int64)
        source = "cells"
        bad = np.flatnonzero(((arr < 0) | (arr >= vertices.size)).any(axis=1))
        if len(bad):
            raise DomainError(f"{where}: cell {int(bad[0])} has vertex rows "
                              f"{arr[bad[0]].tolist()}, outside {vertices.name} (size "
                              f"{vertices.size}); {len(bad)} such cell(s)")
    if arr.shape[1] != nverts:
        raise DomainError(f"{where}: a {cell_type!r} cell has {nverts} vertices, but {source} "
                          f"give {arr.shape[1]}")
    if arr.flags.writeable:  # (a copy of the caller's array: kept as given)
        arr.flags.writeable = False
    output.record(vertices, vertices, coords, arr, cell_type, "point")


def cells(relation, *, keys, coords, cell_type: str) -> None:
    """Declare each row of `relation` (a Relation) one cell of meshio `cell_type`: its
    vertices are the rows its key field(s) `keys` point at (names or KeyFields: a key vector
    of all the cell's vertices, or a tuple of scalar key fields, one per vertex: ``("tail",
    "head")``), all into one vertex relation, whose field(s) `coords` are the coordinates.

    The keys and coordinates are read when writing. `rs.write(path, relation, fields)` then
    writes `relation`'s fields as cell data."""
    where = _relation("rs.geometry.cells", "relation", relation)
    nverts = _cell_type(where, cell_type)
    kfs = _keys(where, keys, relation, None)
    vertices = kfs[0].target
    coords = _coords(where, vertices, coords)
    k = sum(f.arity or 1 for f in kfs)
    if k != nverts:
        raise DomainError(f"{where}: a {cell_type!r} cell has {nverts} vertices, but key "
                          f"field(s) {', '.join(f.qualname for f in kfs)} give {k}")
    names = kfs[0].name if len(kfs) == 1 else tuple(f.name for f in kfs)
    output.record(relation, vertices, coords, names, cell_type, "cell")


def point_cloud(relation, *, coords) -> None:
    """Declare the rows of `relation` (a Relation, elastic or not) points on their own, at
    its coordinate field(s) `coords`: written as one ``vertex`` cell per row, however many
    rows it has when written; `relation`'s fields are written as point data."""
    where = _relation("rs.geometry.point_cloud", "relation", relation)
    coords = _coords(where, relation, coords)
    output.record(relation, relation, coords, None, "vertex", "point")


# -- checks: each error starts with `where`, "rs.geometry.<function>(<relation>)" --------------

def _relation(what: str, arg: str, rel) -> str:
    """`where` for the errors of `what` declaring `rel`, once `rel` is a Relation."""
    if not isinstance(rel, Relation):
        raise DomainError(f"{what}: {arg} must be a relsim Relation, got "
                          f"{type(rel).__name__} {rel!r:.60}")
    return f"{what}({rel.name})"


def _cell_type(where: str, cell_type) -> int:
    if not isinstance(cell_type, str) or cell_type not in CELL_TYPES:
        raise DomainError(f"{where}: unknown cell type {cell_type!r}; the meshio cell types "
                          f"are {', '.join(CELL_TYPES)}")
    return CELL_TYPES[cell_type]


def _field(where: str, rel, f, role: str) -> Field:
    """`f` (a name or a Field) as a field of `rel`."""
    if isinstance(f, Field):
        if f.relation is not rel:
            raise DomainError(f"{where}: {role} {f.qualname} is not a field of {rel.name}")
        return f
    if not isinstance(f, str):
        raise DomainError(f"{where}: {role} must be field names or Fields, got {f!r:.60}")
    if not rel.has_field(f):
        raise DomainError(f"{where}: {role} {f!r} is not a field of {rel.name}; it has "
                          f"{', '.join(sorted(rel.fields)) or 'no fields'}")
    return rel.field(f)


def _is_float_scalar(t) -> bool:
    return isinstance(t, ScalarType) and t.is_float


def _coords(where: str, vertices, coords):
    """`coords` checked against `vertices`: one field name, or a tuple of 2-3 names."""
    many = isinstance(coords, tuple | list)
    fields = [_field(where, vertices, c, "coords") for c in (coords if many else (coords,))]
    if many and not 2 <= len(fields) <= 3:
        raise DomainError(f"{where}: coords must be one field or 2 or 3 scalar fields "
                          f"(x, y[, z]), got {len(fields)}")
    for f in fields:
        t = f.type
        ok = _is_float_scalar(t) if many else \
            _is_float_scalar(t) or (isinstance(t, VecType) and t.elem.is_float and t.n <= 3)
        if not ok:
            want = "a float scalar field (x, y[, z] are one field each)" if many else \
                "a float vector field (rs.vec(2 or 3, rs.f64)), or a float scalar"
            raise DomainError(f"{where}: coords {f.qualname} is {t!r}, not {want}")
    names = tuple(f.name for f in fields)
    return names if many else names[0]


def _keys(where: str, keys, relation, vertices) -> list:
    """`keys` (a name or key field, or a tuple of them) as key fields of one relation, all
    into one relation: of `relation` (names allowed) when given, else Fields only; into
    `vertices` when given."""
    many = isinstance(keys, tuple | list)
    items = list(keys) if many else [keys]
    if not items:
        raise DomainError(f"{where}: no key fields given")
    out = []
    for k in items:
        if relation is not None:
            f = _field(where, relation, k, "key")
        elif isinstance(k, Field):
            f = k
        else:
            raise DomainError(f"{where}: cells must be an integer array or key fields, got "
                              f"{k!r:.60}")
        if not f.is_key:
            raise DomainError(f"{where}: {f.qualname} is {f.type!r}, not a key field")
        if out and f.relation is not out[0].relation:
            raise DomainError(f"{where}: key fields {out[0].qualname} and {f.qualname} belong "
                              f"to different relations")
        target = vertices if vertices is not None else out[0].target if out else f.target
        if f.target is not target:
            raise DomainError(f"{where}: key field {f.qualname} points into {f.target.name}, "
                              f"not into {target.name}, the relation of the vertices")
        out.append(f)
    return out


def _describe(cells, arr) -> str:
    if arr.dtype == object:
        return f"{type(cells).__name__} {cells!r:.60}"
    return f"{arr.dtype} array of shape {arr.shape}"


__all__ = ["CELL_TYPES", "cells", "point_cloud", "points"]
