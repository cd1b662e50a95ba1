"""Structured grids in 2-D and 3-D: cells with affine neighbour access, and their vertices.

    g = grid.Grid((64, 64), spacing=1 / 64, periodic=True)
    g.cells                 # relation; field `center` (vec), key vector `v` (corner vertices)
    g.vertices              # relation; field `pos` (vec)
    g.cells.interior        # subset: cells at least 1 away from every bounded side
    g.interior(2)           # subset at depth 2 (created once, then looked up)
    g.cells.xmin ...        # per-side boundary subsets (depth 1); g.boundary(depth) for all sides
    g.locate(P, "pos", "cell")   # bin particles into cells (a key field of P into g.cells)

In a kernel over cells, `c(1, 0)` is the east neighbour and `c(0, -1)` the south one: cell
(i, j[, k]) is row i + n0*j + n0*n1*k. Periodic axes wrap; on bounded axes map stencil kernels
over an interior subset (relsim checks this at launch). Built with the public API only.
"""
from __future__ import annotations

import itertools

import numba
import numpy as np

import relsim as rs

_SIDES = ("x", "y", "z")


class Grid:
    """A structured 2-D or 3-D grid: `shape` cells per axis, `spacing` and `origin` (one value
    or one per axis), `periodic` (a bool or one per axis); `name` names the cells relation.
    ``g.cells`` (field ``center``, key vector ``v`` of corner vertices, boundary subsets) and
    ``g.vertices`` (field ``pos``); the module docstring shows the neighbour access."""

    def __init__(self, shape, spacing=1.0, origin=0.0, periodic=False, name="cells"):
        shape = tuple(int(n) for n in shape)
        if len(shape) not in (2, 3) or any(n < 1 for n in shape):
            raise rs.DomainError(f"grid shape must be 2 or 3 positive sizes, got {shape}")
        d = len(shape)
        self.shape = shape
        self.dim = d
        self.spacing = _per_axis(spacing, d, "spacing", float)
        self.origin = _per_axis(origin, d, "origin", float)
        self.periodic = _per_axis(periodic, d, "periodic", bool)
        if any(h <= 0 for h in self.spacing):
            raise rs.DomainError(f"grid spacing must be positive, got {self.spacing}")
        # (for `cell_of`) the row of cell (i, j[, k]) is its coordinates times these strides
        # (one value for every axis when they agree: NumPy broadcasts a row of 3 slowly)
        self._origin, self._spacing = (v[0] if len(set(v)) == 1 else np.array(v)
                                       for v in (self.origin, self.spacing))
        self._strides = np.cumprod((1,) + shape[:-1]).astype(np.float64)  # (exact up to 2^53)
        # `locate`'s compiled rule's arguments (`_cells_in_place`)
        self._rule_args = (np.array(self.origin), np.array(self.spacing),
                           np.array(shape, dtype=np.int64), np.array(self.periodic, dtype=np.bool_))
        ncell = int(np.prod(shape))
        self.cells = rs.Relation(name, ncell)
        self.cells.set_grid(shape, self.periodic)
        vshape = tuple(n + 1 for n in shape)
        self.vertices = rs.Relation(f"{name}_vertices", int(np.prod(vshape)))
        idx = [np.arange(n) for n in shape]
        coords = np.stack(np.meshgrid(*idx, indexing="ij"), -1).reshape(-1, d)
        # rows run with the first axis fastest: reorder meshgrid's C order accordingly
        rows = _rows(coords, shape)
        order = np.argsort(rows)
        coords = coords[order]
        h, o = np.array(self.spacing), np.array(self.origin)
        self.cells.new_field("center", rs.vec(d, rs.f64)).load(o + (coords + 0.5) * h)
        vidx = [np.arange(n) for n in vshape]
        vcoords = np.stack(np.meshgrid(*vidx, indexing="ij"), -1).reshape(-1, d)
        vcoords = vcoords[np.argsort(_rows(vcoords, vshape))]
        self.vertices.new_field("pos", rs.vec(d, rs.f64)).load(o + vcoords * h)
        corners = list(itertools.product((0, 1), repeat=d))
        if d == 2:  # counter-clockwise quad
            corners = [(0, 0), (1, 0), (1, 1), (0, 1)]
        else:  # VTK hexahedron order
            corners = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0),
                       (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]
        keys = np.stack([_rows(coords + np.array(c), vshape) for c in corners], -1)
        self.cells.new_key_field("v", self.vertices, len(corners)).load(keys)
        self._coords = coords
        self.cells.subset("interior", self._interior_mask(1))
        for axis in range(d):
            for side, pick in (("min", 0), ("max", shape[axis] - 1)):
                self.cells.subset(f"{_SIDES[axis]}{side}", coords[:, axis] == pick)
        self.cells.subset("boundary", ~self._interior_mask(1, include_periodic=True))
        ctype = "quad" if d == 2 else "hexahedron"
        rs.geometry.cells(self.cells, keys="v", coords="pos", cell_type=ctype)
        rs.geometry.points(self.vertices, coords="pos", cells=keys, cell_type=ctype)

    def _interior_mask(self, depth, include_periodic=False):
        mask = np.ones(len(self._coords), dtype=bool)
        for axis, n in enumerate(self.shape):
            if self.periodic[axis] and not include_periodic:
                continue
            c = self._coords[:, axis]
            mask &= (c >= depth) & (c < n - depth)
        return mask

    def interior(self, depth: int = 1):
        """Cells at least `depth` cells away from every bounded side (periodic axes: all)."""
        name = "interior" if depth == 1 else f"interior{depth}"
        if name in self.cells.subsets:
            return self.cells.subset(name)
        return self.cells.subset(name, self._interior_mask(int(depth)))

    def boundary(self, depth: int = 1):
        """Cells within `depth` of any side of the grid (periodic sides included)."""
        name = "boundary" if depth == 1 else f"boundary{depth}"
        if name in self.cells.subsets:
            return self.cells.subset(name)
        return self.cells.subset(name, ~self._interior_mask(int(depth), include_periodic=True))

    def cell_of(self, points) -> np.ndarray:
        """Rows of the cells containing `points` (n, dim); periodic axes wrap. Raises
        DomainError for a point outside a bounded axis or not finite. (Moving particles call
        it every step: whole-array operations in floats, whose integer values are exact, with
        no per-row broadcasts, and the wrap only when a point lies outside: 32k points
        ~1.1 -> 0.15 ms.)"""
        p = np.asarray(points, dtype=np.float64).reshape(-1, self.dim)
        c = np.subtract(p, self._origin)
        np.divide(c, self._spacing, out=c)
        np.floor(c, out=c)
        if len(c) == 0:
            return np.zeros(0, dtype=np.int64)
        lo, hi = c.min(), c.max()  # (over every axis at once: one axis' costs 80x more)
        if not (np.isfinite(lo) and np.isfinite(hi)):
            bad = int(np.flatnonzero(~np.isfinite(c).all(axis=1))[0])
            raise rs.DomainError(f"point {p[bad].tolist()} (row {bad}) is not finite: it lies "
                                 f"in no cell of the grid")
        inside = lo >= 0 and hi < min(self.shape)  # (every point in the grid: nothing to do)
        for axis, n in enumerate(() if inside else self.shape):
            if c[:, axis].min() >= 0 and c[:, axis].max() < n:
                continue
            if self.periodic[axis]:  # (of integers in floats: exact, as in integers)
                np.remainder(c[:, axis], n, out=c[:, axis])
                continue
            bad = np.flatnonzero((c[:, axis] < 0) | (c[:, axis] >= n))
            raise rs.DomainError(
                f"point {p[bad[0]].tolist()} (row {int(bad[0])}) lies outside the grid "
                f"along axis {axis}; delete particles that leave a bounded grid first")
        return (c @ self._strides).astype(np.int64)

    def _cells_of_rows(self, pos, at):
        """The cells of the particles at rows `at` (all of them, after they moved: no second
        copy of the positions)."""
        p = pos.numpy(copy=True)  # (a copy: the field is not handed out)
        return self.cell_of(p if len(at) == len(p) else p[at])

    def locate(self, particles, pos_field="pos", key_field="cell", group="particles"):
        """Point the key field `key_field` of `particles` at the cell containing each particle
        (creating the key field, and the cell -> particles grouping `group`, the first time).
        The grouping rebuilds itself on its next use. Afterwards the keys follow the positions
        (`KeyField.follow`): particles that moved (a launch wrote `pos_field`, or the host
        loaded it) and rows inserted later are binned again when the keys or the grouping are
        next read, so calling `locate()` again is never needed."""
        pos = particles.field(pos_field)
        rows = self.cell_of(pos.numpy(copy=True))  # (a copy: the field is not handed out)
        if not particles.has_field(key_field):
            particles.new_key_field(key_field, self.cells)
            if group and group not in self.cells.groupings:
                particles.group_by(key_field, group)
        kf = particles.field(key_field).load(rows)
        # from now on the keys follow the positions: moved or inserted particles are binned
        # again when the keys or the cell lists are next read (inside a captured step, by
        # `_cells_in_place`, compiled into the step)
        kf.follow(pos, lambda at: self._cells_of_rows(pos, at),
                  compiled=(_cells_in_place, self._rule_args))
        return kf


@numba.njit(cache=True, error_model="numpy", boundscheck=False)
def _cells_in_place(points, keys, flag, origin, spacing, shape, periodic):
    """`Grid.cell_of` compiled, into `keys` (the same rows: each axis' cell is the same floats'
    floor, wrapped on a periodic axis as integers, where NumPy wraps the integral floats
    exactly); ``flag[0] = 1`` at the first point not finite, outside a bounded axis or too far
    to wrap in integers, which `cell_of` then handles (and names)."""
    for i in range(points.shape[0]):
        row, stride = 0, 1
        for a in range(points.shape[1]):
            c = np.floor((points[i, a] - origin[a]) / spacing[a])  # (a float: NaN stays)
            n = shape[a]
            if not (c >= 0.0 and c < n):  # (NaN too)
                if not (periodic[a] and abs(c) < 2.0 ** 52):
                    flag[0] = 1
                    return
                row += (int(c) % n) * stride  # (Python's modulo: NumPy's remainder's sign)
            else:
                row += int(c) * stride
            stride *= n
        keys[i] = row


def _rows(coords, shape):
    rows = np.zeros(len(coords), dtype=np.int64)
    stride = 1
    for axis, n in enumerate(shape):
        rows += coords[:, axis] * stride
        stride *= n
    return rows


def _per_axis(value, d, what, kind):
    if np.ndim(value) == 0:
        return (kind(value),) * d
    vals = tuple(kind(v) for v in value)
    if len(vals) != d:
        raise rs.DomainError(f"{what} needs {d} values, got {len(vals)}")
    return vals


def box(shape, **kw) -> Grid:
    """A grid over [origin, origin + shape*spacing]; same arguments as Grid."""
    return Grid(shape, **kw)


# the public API (docs/api/ renders it; tests/test_docs.py checks each name is documented)
__all__ = ["Grid", "box"]
