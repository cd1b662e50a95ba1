"""Writing relations' fields to mesh files through meshio (VTU, XDMF+HDF5, VTK, ...).

It imports nothing from relsim but its errors, so the public API (``rs.write``,
``rs.geometry``) and the runtime (which partitions declared relations by where their rows are)
import it.

A relation can be written when its geometry is known: every domain, bundled or a plugin,
declares it with the public `rs.geometry` (relsim/geometry.py: `points` for a vertex relation,
`cells` for elements, edges and boundary faces, `point_cloud` for particles), which checks it
and keeps it here (`record`). Fields of a vertex relation are written as point data on the
mesh's elements; fields of any other declared relation as cell data on its own cells.
Coordinates are read when writing, so a moving mesh is written where it is now.

* ``rs.write(path, relation, fields)``: one file, format from the suffix (``.vtu``, ``.vtk``,
  ``.xdmf`` (HDF5 heavy data, needs h5py), ``.msh`` ...).
* ``TimeSeries(path, relation, fields)``: one file per step plus an index ParaView opens as a
  time series: ``.pvd`` (VTU files ``<stem>_000000.vtu`` ... beside it) or ``.xdmf`` (one
  XDMF file and one HDF5 file ``<stem>.h5``, `xdmf_series.XdmfSeries`). Both write each step's
  geometry as it is then, so a moving mesh moves, and particles inserted or deleted change the
  point count from step to step (the XDMF file stores a mesh again only when it changed).

Vector fields are written as (rows, n) arrays, matrices flattened to (rows, n*m), booleans as
uint8. Errors (no geometry, unknown field, a format meshio cannot write) are `DomainError`s.
"""
from __future__ import annotations

import os
import weakref
from dataclasses import dataclass

import numpy as np

from .errors import DomainError

_GEOMETRY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class _Geometry:
    vertices: object          # weakref to the vertex relation
    coords: object            # a vec3 field name, or (x, y, z) scalar field names
    cells: object             # (m, k) array (point-centred) or key field name(s) of the relation
    cell_type: str            # meshio cell type
    centring: str             # "point" or "cell"


def record(relation, vertices, coords, cells, cell_type: str, centring: str) -> None:
    """Keep `relation`'s geometry (as `rs.geometry` checked it: domains call that). `centring`
    "point": `relation` is `vertices`, with `cells` an (m, k) array of its rows, or None for a
    point cloud; "cell": `cells` is the key field name(s) of `relation` giving each row's
    vertices. `coords`: a field name of `vertices`, or a tuple of scalar field names."""
    _GEOMETRY[relation] = _Geometry(weakref.ref(vertices), coords, cells, cell_type, centring)


def geometry_fields(relation) -> list:
    """The coordinate fields (of its vertex relation) `row_coordinates` reads for `relation`,
    or [] when it has no registered geometry."""
    g = _GEOMETRY.get(relation)
    V = None if g is None else g.vertices()
    if V is None or (g.centring == "point" and V is not relation):
        return []
    return [V.field(c) for c in _as_tuple(g.coords)]


def row_coordinates(relation):
    """Where `relation`'s rows are ((n, 3) float64) when a domain registered its geometry: the
    points of a mesh or a point cloud, or the centroids of a mesh's cells; else None."""
    g = _GEOMETRY.get(relation)
    if g is None or g.vertices() is None:
        return None
    if g.centring == "point" and g.vertices() is not relation:
        return None
    pts, cells, _, centring = geometry(relation)
    if centring == "point":
        return pts
    return pts[cells].mean(axis=1) if len(cells) else np.zeros((0, 3))


def has_geometry(relation) -> bool:
    return relation in _GEOMETRY


def _as_tuple(x) -> tuple:
    return (x,) if isinstance(x, str) else tuple(x)


def geometry(relation):
    """(points (n, 3) float64, cells (m, k) int64, meshio cell type, "point" or "cell")."""
    g = _GEOMETRY.get(relation)
    if g is None:
        raise DomainError(f"relation {relation.name!r} has no mesh geometry: it was not built "
                          f"by a mesh domain (a domain declares it with rs.geometry.points / "
                          f"cells / point_cloud)")
    V = g.vertices()
    if V is None:
        raise DomainError(f"relation {relation.name!r}: its vertex relation no longer exists")
    cs = [V.field(c).numpy(copy=True) for c in _as_tuple(g.coords)]
    pts = np.column_stack(cs).astype(np.float64)  # (n, 1..3): a vector field or scalars
    if pts.shape[1] < 3:
        pts = np.column_stack([pts, np.zeros((len(pts), 3 - pts.shape[1]))])
    if g.centring == "point":
        cells = g.cells if g.cells is not None else \
            np.arange(relation.size, dtype=np.int64).reshape(-1, 1)
    else:
        kf = [relation.field(k).numpy().reshape(relation.size, -1) for k in _as_tuple(g.cells)]
        cells = np.column_stack(kf)
    return pts, cells.astype(np.int64, copy=False), g.cell_type, g.centring


def _field_arrays(relation, fields) -> dict:
    if fields is None:
        g = _GEOMETRY.get(relation)
        skip = set(_as_tuple(g.coords)) if g is not None and g.centring == "point" else set()
        fields = [f for n, f in relation.fields.items() if not f.is_key and n not in skip]
    out = {}
    for f in fields:
        if isinstance(f, str):
            try:
                f = relation.field(f)
            except Exception as exc:
                raise DomainError(f"cannot write {relation.name}: {exc}") from None
        if f.relation is not relation:
            raise DomainError(f"cannot write field {f.qualname} with relation {relation.name}")
        a = f.numpy(copy=True)  # a snapshot: the field itself is not handed out
        if a.dtype == np.bool_:
            a = a.astype(np.uint8)
        if a.ndim > 2:
            a = a.reshape(len(a), -1)
        out[f.name] = a
    return out


def _mesh(relation, fields):
    import meshio
    pts, cells, ctype, centring = geometry(relation)
    data = _field_arrays(relation, fields)
    if centring == "point":
        return meshio.Mesh(pts, [(ctype, cells)], point_data=data)
    return meshio.Mesh(pts, [(ctype, cells)], cell_data={k: [v] for k, v in data.items()})


def _writes_files() -> bool:
    return True


def install_writer_check(fn) -> None:
    """`fn()`: whether this process writes the files (relsim installs one: on several MPI ranks
    every rank gathers the values, which is collective, and rank 0 alone writes)."""
    global _writes_files
    _writes_files = fn


def write(path, relation, fields=None) -> None:
    """Write `relation`'s `fields` (names or Fields; default: all its non-key fields) on its
    mesh to `path`; meshio picks the format from the suffix (.vtu, .vtk, .xdmf, .msh ...).
    On several MPI ranks every rank must call it (the values are gathered from all); rank 0
    writes the file, the same file one process writes."""
    import meshio
    where = os.fspath(path)
    known = _writable_suffixes(meshio)
    if known and not any(where.lower().endswith(k) for k in known):
        suffix = os.path.splitext(where)[1]
        raise DomainError(f"{where}: cannot tell the file format from the suffix "
                          f"{suffix or '(none)'!r}; rs.write knows {', '.join(known)}")
    mesh = _mesh(relation, fields)
    if not _writes_files():
        return
    try:
        meshio.write(where, mesh)
    except Exception as exc:
        raise DomainError(f"{where}: cannot write {relation.name}: "
                          f"{type(exc).__name__}: {exc}") from exc


def _writable_suffixes(meshio) -> list:
    """The suffixes meshio can write, sorted (from its format registry; empty if this meshio
    has none, and then meshio decides)."""
    try:
        from meshio._helpers import _writer_map, extension_to_filetypes
    except ImportError:
        return []
    return sorted(ext for ext, kinds in extension_to_filetypes.items()
                  if any(k in _writer_map for k in kinds))


class TimeSeries:
    """Fields of one relation over time, as ``.pvd`` + VTU files or ``.xdmf`` + HDF5.

    >>> with TimeSeries("out/heat.xdmf", mesh.vertices, ["T"]) as series:
    ...     for step in range(n):
    ...         ...
    ...         series.write(t)
    """

    def __init__(self, path, relation, fields=None):
        self.path = os.fspath(path)
        self.relation = relation
        self.fields = fields
        self.kind = os.path.splitext(self.path)[1].lower()
        if self.kind not in (".pvd", ".xdmf"):
            raise DomainError(f"{self.path}: a time series is a .pvd or an .xdmf file")
        geometry(relation)  # fail now, not at the first step
        self.steps: list = []
        self._xdmf = None

    def __enter__(self) -> TimeSeries:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def write(self, t: float) -> None:
        """Append the fields' current values as time `t`."""
        try:
            if self.kind == ".pvd":
                self._write_pvd(float(t))
            else:
                self._write_xdmf(float(t))
        except DomainError:
            raise
        except Exception as exc:
            raise DomainError(f"{self.path}: cannot write step {len(self.steps)}: "
                              f"{type(exc).__name__}: {exc}") from exc
        self.steps.append(float(t))

    def _write_pvd(self, t: float) -> None:
        stem = os.path.splitext(self.path)[0]
        name = f"{stem}_{len(self.steps):06d}.vtu"
        write(name, self.relation, self.fields)
        entries = [(s, f"{os.path.basename(stem)}_{i:06d}.vtu")
                   for i, s in enumerate(self.steps + [t])]
        from xml.sax.saxutils import quoteattr  # here: it imports urllib and ssl (~40 ms)

        lines = ['<?xml version="1.0"?>',
                 '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">',
                 "  <Collection>"]
        lines += [f'    <DataSet timestep="{s!r}" group="" part="0" file={quoteattr(f)}/>'
                  for s, f in entries]
        lines += ["  </Collection>", "</VTKFile>", ""]
        if not _writes_files():
            return
        with open(self.path, "w") as fh:
            fh.write("\n".join(lines))

    def _write_xdmf(self, t: float) -> None:
        pts, cells, ctype, centring = geometry(self.relation)  # where the rows are now
        data = _field_arrays(self.relation, self.fields)  # (gathered on every rank)
        if not _writes_files():
            return
        if self._xdmf is None:
            from .xdmf_series import XdmfSeries
            self._xdmf = XdmfSeries(self.path)
        point = centring == "point"
        self._xdmf.write(t, pts, cells, ctype, data if point else {}, {} if point else data)

    def close(self) -> None:
        """Close an XDMF series' files (a .pvd index is complete after every `write`); leaving
        a ``with TimeSeries(...)`` block calls it."""
        if self._xdmf is not None:
            self._xdmf.close()
            self._xdmf = None


# the public API (docs/api/ renders it; tests/test_docs.py checks each name is documented)
__all__ = ["write", "TimeSeries", "geometry", "geometry_fields", "has_geometry", "row_coordinates"]
