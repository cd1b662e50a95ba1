"""The distinct sides (edges or faces) of a mesh's cells, for domain plugins: each cell's local
sides looked up in one table of unique sides, with how many cells share each (1: a boundary
side of a conforming mesh)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from relsim import DomainError


class Sides(NamedTuple):
    vertices: np.ndarray  # (s, k) each distinct side's vertices, ascending; rows sorted
    of_cell: np.ndarray  # (m, len(local)) each cell's local sides as rows of `vertices`
    count: np.ndarray  # (s,) how many cell sides are that side
    oriented: np.ndarray  # (s, k) each side's vertices in the order its first cell lists them


def unique_sides(cells, local) -> Sides:
    """The distinct sides of `cells` ((m, n) vertex numbers per cell), whose local sides are
    `local` (tuples of local vertex numbers, all of one length k: a quad's edges
    ``((0, 1), (1, 2), (2, 3), (3, 0))``). Two sides are the same if they have the same
    vertices in any order. See `Sides` for what is returned."""
    c = np.asarray(cells)
    if c.ndim != 2 or c.dtype.kind not in "iu":
        raise DomainError(f"unique_sides: cells must be an (m, n) integer array, got shape "
                          f"{c.shape} and dtype {c.dtype}")
    loc = np.asarray(local)
    if loc.ndim != 2 or loc.dtype.kind not in "iu" or loc.size == 0:
        raise DomainError(f"unique_sides: local must be tuples of local vertex numbers, all of "
                          f"one length, got {local!r}")
    outside = (loc < 0) | (loc >= c.shape[1])
    if outside.any():
        raise DomainError(f"unique_sides: local vertex {int(loc[outside][0])} is not one of a "
                          f"cell's {c.shape[1]} vertices")
    k = loc.shape[1]
    oriented = c[:, loc].reshape(-1, k).astype(np.int64)
    if not len(oriented):
        empty = np.zeros((0, k), np.int64)
        return Sides(empty, np.zeros((len(c), len(loc)), np.int64), np.zeros(0, np.int64), empty)
    key = np.sort(oriented, axis=1)
    vertices, first, inverse, count = unique_rows(key)
    return Sides(vertices, inverse.reshape(len(c), len(loc)), count, oriented[first])


def unique_rows(rows: np.ndarray):
    """``np.unique(rows, axis=0, return_index=True, return_inverse=True, return_counts=True)``
    of an (n, k) int64 array, as int64 arrays (the inverse 1-D), computed on one integer per
    row where the rows' values allow (each row read as a number in base max - min + 1: the
    same order as the rows'); ~20x faster than NumPy's row sort (584k tets' 2.3M faces: 2.7
    -> 0.15 s)."""
    n, k = rows.shape
    if n == 0:
        return rows.copy(), *(np.zeros(0, np.int64) for _ in range(3))
    lo, hi = int(rows.min()), int(rows.max())
    base = hi - lo + 1
    if base ** k > np.iinfo(np.int64).max:  # (a huge vertex range with long rows)
        table, first, inverse, count = (np.asarray(a, np.int64) for a in np.unique(
            rows, axis=0, return_index=True, return_inverse=True, return_counts=True))
        return table, first, inverse.reshape(-1), count
    code = rows[:, 0] - lo
    for j in range(1, k):
        code = code * base + (rows[:, j] - lo)
    _, first, inverse, count = np.unique(code, return_index=True, return_inverse=True,
                                         return_counts=True)
    return (rows[first], first.astype(np.int64), inverse.reshape(-1).astype(np.int64),
            count.astype(np.int64))
