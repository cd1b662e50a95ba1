"""The nonzero pattern of a finite-element matrix from its elements' connectivity, compiled.

Every pair of one element's vertices is a nonzero, and so is the diagonal. Sorting all the
pairs' codes (k * k per element) and looking each up again costs two passes over k * k * ne
numbers: 10.5 s of miniFE's 100^3 set-up (66M pairs, 27M nonzeros). Here each row's columns
are found from the elements around its vertex (a counting sort of the connectivity), made
distinct with a marker array and sorted in place (a row has a few dozen), and each element's
pairs are looked up in their rows: the same pattern, in CSR order, and the same entry of each
pair.
"""
from __future__ import annotations

import numpy as np

from ..compiled import njit


@njit(cache=True)
def _elements_of_vertices(conn, n):
    """(starts, elements): vertex v is in elements[starts[v]:starts[v + 1]], ascending."""
    ne, k = conn.shape
    starts = np.zeros(n + 1, dtype=np.int64)
    for e in range(ne):
        for a in range(k):
            starts[conn[e, a] + 1] += 1
    for v in range(n):
        starts[v + 1] += starts[v]
    elements = np.empty(starts[n], dtype=np.int64)
    fill = starts[:n].copy()
    for e in range(ne):
        for a in range(k):
            v = conn[e, a]
            elements[fill[v]] = e
            fill[v] += 1
    return starts, elements


@njit(cache=True)
def _row_columns(conn, starts, elements, marker, row, cols, at):
    """Write row `row`'s distinct columns (itself first, then its elements' vertices as met)
    from cols[at]; returns where they end. marker[v] == row: v already written."""
    k = conn.shape[1]
    marker[row] = row
    cols[at] = row
    at += 1
    for p in range(starts[row], starts[row + 1]):
        e = elements[p]
        for b in range(k):
            v = conn[e, b]
            if marker[v] != row:
                marker[v] = row
                cols[at] = v
                at += 1
    return at


@njit(cache=True)
def element_pattern(conn, n):
    """(offsets, rows, cols, index) for elements `conn` (ne, k) over n vertices: row i's
    columns are cols[offsets[i]:offsets[i + 1]], ascending, the diagonal among them (rows: each
    entry's row); index[e, k * a + b] is the entry (row conn[e, a], column conn[e, b])."""
    ne, k = conn.shape
    starts, elements = _elements_of_vertices(conn, n)
    marker = np.full(n, -1, dtype=np.int64)
    scratch = np.empty(1 + k * (starts[1:] - starts[:-1]).max() if n else 1, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):  # how many columns each row has
        offsets[i + 1] = offsets[i] + _row_columns(conn, starts, elements, marker, i, scratch, 0)
    rows = np.empty(offsets[n], dtype=np.int64)
    cols = np.empty(offsets[n], dtype=np.int64)
    marker[:] = -1
    for i in range(n):  # the columns, ascending
        end = _row_columns(conn, starts, elements, marker, i, cols, offsets[i])
        cols[offsets[i]:end].sort()
        rows[offsets[i]:end] = i
    index = np.empty((ne, k * k), dtype=np.int64)
    for e in range(ne):
        for a in range(k):
            lo, hi = offsets[conn[e, a]], offsets[conn[e, a] + 1]
            row = cols[lo:hi]
            for b in range(k):
                index[e, k * a + b] = lo + np.searchsorted(row, conn[e, b])
    return offsets, rows, cols, index
