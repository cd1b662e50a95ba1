"""Reading mesh files through meshio into plain arrays for the mesh domains.

`read(path, kind)` returns a `MeshData`: the points, the elements of one kind (all blocks of
that cell type, concatenated in file order), their point and cell data, and the named sets:

* vertex sets from the file's point sets;
* element sets and facet sets (boundary faces/edges) from its cell sets (meshio's
  ``cell_sets``: gmsh 4 physical names, Abaqus/Exodus sets...) and from tag data
  (``gmsh:physical`` named through the file's ``field_data``, ``medit:ref``) on blocks of the
  element type or of its facet type.

Files from other tools are tidied, each with a warning that counts what changed:

* points no element uses (gmsh writes them with ``Mesh.SaveAll=1``) are dropped and the rest
  renumbered in order, their point data and point sets with them; left in, such a vertex has
  no volume and no neighbours (a zero lumped mass: NaN in a heat code);
* tets, and triangles of a planar (z = const) mesh, listed with the opposite vertex order are
  reoriented (two vertices swapped). Degenerate elements stay an error, in the mesh domain.

Any failure (missing file, a format meshio cannot read, no elements of the kind) is a
`DomainError` naming the file.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from relsim import DomainError

from .cells import TETRA, TRIANGLE, Kind, tet_volumes, triangle_normals

# cell-data keys that hold region tags (become subsets, not fields), with the prefix used to
# name a tag that the file does not name
TAG_KEYS = {"gmsh:physical": "physical_", "medit:ref": "ref_", "CellEntityIds": "tag_"}
IGNORED_DATA = {"gmsh:geometrical", "gmsh:dim_tags"}
VOLUME_TYPES = ("tetra", "hexahedron", "wedge", "pyramid")  # meshio types (and their orders)


@dataclass
class MeshData:
    path: str
    points: np.ndarray
    cells: np.ndarray                                 # (m, nverts) elements of the kind
    point_data: dict = field(default_factory=dict)    # name -> (npoints, ...) array
    cell_data: dict = field(default_factory=dict)     # name -> (m, ...) array
    point_sets: dict = field(default_factory=dict)    # name -> vertex rows
    elem_sets: dict = field(default_factory=dict)     # name -> element rows
    facet_sets: dict = field(default_factory=dict)    # name -> (f, k) facet vertex arrays


def identifier(name: str) -> str:
    """A file's set or data name as a relsim name (identifier characters only)."""
    s = re.sub(r"\W", "_", str(name).strip())
    return s if s and not s[0].isdigit() else f"_{s}"


def read(path, kind: Kind) -> MeshData:
    import meshio

    where = os.fspath(path)
    if not os.path.exists(where):
        raise DomainError(f"{where}: no such file")
    if os.path.isfile(where) and os.path.getsize(where) == 0:
        raise DomainError(f"{where}: the file is empty")
    said = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(said), \
                contextlib.redirect_stderr(said):
            warnings.simplefilter("ignore")
            m = meshio.read(where)
    # meshio raises many kinds (ReadError, ValueError, KeyError...) and, for a file that no
    # reader accepts, prints a message and calls sys.exit
    except (Exception, SystemExit) as exc:
        why = " ".join(said.getvalue().split()) or f"{type(exc).__name__}: {exc}"
        raise DomainError(f"{where}: cannot read the mesh file (truncated, or not a mesh in a "
                          f"format meshio reads from its suffix?): {why}") from exc
    blocks = [i for i, b in enumerate(m.cells) if b.type == kind.name]
    if not blocks:
        found = sorted({b.type for b in m.cells}) or ["no cells"]
        raise DomainError(f"{where}: no {kind.name} cells in the file (it has "
                          f"{', '.join(found)})")
    if kind.dim == 2:
        volume = sorted({b.type for b in m.cells if b.type.startswith(VOLUME_TYPES)})
        if volume:
            n = sum(len(m.cells[i].data) for i in blocks)
            warnings.warn(f"{where}: the file holds a volume mesh ({', '.join(volume)}); only "
                          f"its {n} {kind.name} cells (often its boundary) are read, not the "
                          f"volume", RuntimeWarning, stacklevel=3)
    cells = np.concatenate([np.asarray(m.cells[i].data) for i in blocks])
    offsets = np.cumsum([0] + [len(m.cells[i].data) for i in blocks])
    data = MeshData(where, np.asarray(m.points), cells)

    for name, arr in m.point_data.items():
        if name not in IGNORED_DATA:
            data.point_data[identifier(name)] = np.asarray(arr)
    for name, per_block in m.cell_data.items():
        if name in IGNORED_DATA or name in TAG_KEYS:
            continue
        data.cell_data[identifier(name)] = np.concatenate([np.asarray(per_block[i])
                                                           for i in blocks])
    for name, rows in m.point_sets.items():
        data.point_sets[identifier(name)] = np.asarray(rows, dtype=np.int64)

    facet_blocks = [i for i, b in enumerate(m.cells) if b.type == kind.facet_type]
    for name, per_block in m.cell_sets.items():
        if str(name).startswith("gmsh:"):
            continue
        _add_set(data, identifier(name), per_block, m, blocks, offsets, facet_blocks)
    names = {(int(v[0]), int(v[1])): k for k, v in m.field_data.items()
             if np.size(v) == 2}
    for key, prefix in TAG_KEYS.items():
        if key not in m.cell_data:
            continue
        per_block = m.cell_data[key]
        for dim, group in ((kind.dim, blocks), (kind.dim - 1, facet_blocks)):
            tags = sorted({int(t) for i in group for t in np.unique(per_block[i])})
            for tag in tags:
                name = identifier(names.get((tag, dim), f"{prefix}{tag}"))
                if name in data.elem_sets or name in data.facet_sets:
                    continue  # the same set was already given by name
                sel = [np.flatnonzero(np.asarray(per_block[i]) == tag)
                       if i in group else None for i in range(len(m.cells))]
                _add_set(data, name, sel, m, blocks, offsets, facet_blocks)
    _drop_unused_points(data, kind)
    _reorient(data, kind)
    return data


def _drop_unused_points(data: MeshData, kind: Kind) -> None:
    n = len(data.points)
    cells = np.asarray(data.cells, dtype=np.int64)
    if not cells.size or cells.min() < 0 or cells.max() >= n:
        return  # dangling indices: the mesh domain reports them
    used = np.zeros(n, dtype=bool)
    used[cells.ravel()] = True
    if used.all():
        return
    new = np.cumsum(used) - 1
    new[~used] = -1
    warnings.warn(f"{data.path}: {int((~used).sum())} of its {n} points are used by no "
                  f"{kind.name} element; they were dropped and the points renumbered",
                  RuntimeWarning, stacklevel=4)
    data.points = data.points[used]
    data.cells = new[cells]
    data.point_data = {k: v[used] for k, v in data.point_data.items()}
    data.point_sets = {k: new[v][new[v] >= 0] for k, v in data.point_sets.items()}
    # a facet through a dropped point is on no element: -1 makes it "not on the boundary"
    data.facet_sets = {k: new[v] for k, v in data.facet_sets.items()}


def _reorient(data: MeshData, kind: Kind) -> None:
    p, c = np.asarray(data.points, dtype=np.float64), np.asarray(data.cells, dtype=np.int64)
    if not c.size or c.min() < 0 or c.max() >= len(p) or p.ndim != 2:
        return
    if kind is TETRA and p.shape[1] == 3:
        signed = tet_volumes(p, c)
    elif kind is TRIANGLE and p.shape[1] >= 2 and (p.shape[1] == 2 or np.ptp(p[:, 2]) == 0.0):
        q = p if p.shape[1] == 3 else np.column_stack([p, np.zeros(len(p))])
        signed = triangle_normals(q, c)[:, 2]
    else:
        return
    flip = signed < 0  # zero (degenerate) stays for the domain's check
    if not flip.any():
        return
    warnings.warn(f"{data.path}: {int(flip.sum())} of its {len(c)} {kind.name} elements had the "
                  f"opposite vertex order; they were reoriented", RuntimeWarning, stacklevel=4)
    c = c.copy()
    c[flip, 1], c[flip, 2] = c[flip, 2], c[flip, 1].copy()
    data.cells = c


def _add_set(data, name, per_block, m, blocks, offsets, facet_blocks) -> None:
    """Add one named cell set: element rows, and/or the vertex lists of tagged facets."""
    elem_rows, facet_list = [], []
    for i, rows in enumerate(per_block):
        if rows is None or not np.size(rows):
            continue
        rows = np.asarray(rows, dtype=np.int64)
        if i in blocks:
            elem_rows.append(rows + offsets[blocks.index(i)])
        elif i in facet_blocks:
            facet_list.append(np.asarray(m.cells[i].data)[rows])
    if elem_rows:
        data.elem_sets[name] = np.concatenate(elem_rows)
    if facet_list:
        data.facet_sets[name] = np.concatenate(facet_list).astype(np.int64)
