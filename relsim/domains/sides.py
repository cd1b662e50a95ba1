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
    vertices, first, inverse, count = np.unique(key, axis=0, return_index=True,
                                                return_inverse=True, return_counts=True)
    return Sides(vertices.astype(np.int64), inverse.reshape(len(c), len(loc)).astype(np.int64),
                 count.astype(np.int64), oriented[first])
