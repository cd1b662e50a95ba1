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

import threading

import numba
import numpy as np

from ..compiled import njit


@njit(cache=True)
def _elements_of_vertices(conn, n):
    """(starts, elements): vertex v is in elements[starts[v]:starts[v + 1]], ascending."""
    ne, k = conn.shape
    starts = np.empty(n + 1, dtype=np.int64)
    for v in range(n + 1):
        starts[v] = 0
    for e in range(ne):
        for a in range(k):
            starts[conn[e, a] + 1] += 1
    for v in range(n):
        starts[v + 1] += starts[v]
    elements = np.empty(starts[n], dtype=np.int64)
    fill = np.empty(n, dtype=np.int64)
    for v in range(n):
        fill[v] = starts[v]
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


def element_pattern(conn, n, key_type=lambda size: np.int64, parts=None):
    """(offsets, rows, cols, index) for elements `conn` (ne, k) over n vertices: row i's
    columns are cols[offsets[i]:offsets[i + 1]], ascending, the diagonal among them (rows: each
    entry's row); index[e, k * a + b] is the entry (row conn[e, a], column conn[e, b]). `rows`
    and `cols` are of type ``key_type(n)``, `index` of ``key_type(nnz)`` (the key fields' own
    types: the arrays can become their storage as they are).

    The columns and the element entries are written in `parts` shares of the rows and of the
    elements, one thread each (default: as many as Numba runs now, `numba.get_num_threads`,
    for a pattern of at least `THREADED_PAIRS` element pairs, else 1). Each share writes its
    own rows and elements only, so every count of parts gives the same arrays; the threads
    also share the first touch of the fresh arrays (on this project's virtual machine, up to
    0.25 s for 112 MB on one thread)."""
    starts, elements, offsets = _row_offsets(conn, n, np.empty(0, dtype=key_type(n)))
    rows = np.empty(offsets[n], dtype=key_type(n))
    cols = np.empty(offsets[n], dtype=key_type(n))
    index = np.empty((conn.shape[0], conn.shape[1] ** 2), dtype=key_type(int(offsets[n])))
    if parts is None:  # (Numba's threads now: `rs.configure(threads=...)` sets them)
        parts = numba.get_num_threads() if index.size >= THREADED_PAIRS else 1
    _in_parts(parts, n, lambda lo, hi: _fill_rows(conn, starts, elements, offsets, rows, cols,
                                                  lo, hi))
    _in_parts(parts, conn.shape[0], lambda lo, hi: _fill_index(conn, offsets, cols, index,
                                                               lo, hi))
    return offsets, rows, cols, index


THREADED_PAIRS = 1 << 20  # element pairs from which the pattern is written on threads


def _in_parts(parts, count, fill):
    """fill(lo, hi) for `parts` equal shares of range(count), each on a thread of its own
    (`fill` releases the GIL) but the last, which runs on this one; an exception raised on any
    of them is raised here once all have ended (a share left unwritten is never returned)."""
    bounds = [count * t // parts for t in range(parts + 1)]
    failed = []

    def share(lo, hi):
        try:
            fill(lo, hi)
        except BaseException as exc:  # noqa: BLE001 (raised again on the calling thread)
            failed.append(exc)

    threads = [threading.Thread(target=share, args=(bounds[t], bounds[t + 1]))
               for t in range(parts - 1)]
    for thread in threads:
        thread.start()
    share(bounds[-2], bounds[-1])
    for thread in threads:
        thread.join()
    if failed:
        raise failed[0]


@njit(cache=True)
def _row_offsets(conn, n, cols_like):
    """(starts, elements, offsets): the elements of each vertex (`_elements_of_vertices`) and
    the CSR offsets of the rows' distinct columns (counted in an array of `cols_like`'s type,
    as `_fill_rows` writes them: `_row_columns` compiles once)."""
    k = conn.shape[1]
    starts, elements = _elements_of_vertices(conn, n)
    # (plain loops throughout: NumPy's methods here, max, sort, searchsorted, made this
    # function 7 s to compile; the same arrays. No np.zeros or max() either: each is one
    # more overload for Numba to compile in a cold process, ~0.2 s)
    marker = np.empty(n, dtype=np.int64)
    most = 0  # the most elements around one vertex
    for i in range(n):
        marker[i] = -1
        if starts[i + 1] - starts[i] > most:
            most = starts[i + 1] - starts[i]
    scratch = np.empty(1 + k * most, dtype=cols_like.dtype)
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = 0
    for i in range(n):  # how many columns each row has
        offsets[i + 1] = offsets[i] + _row_columns(conn, starts, elements, marker, i, scratch,
                                                   offsets[0])  # (0, an int64 as _fill_rows')
    return starts, elements, offsets


@njit(cache=True, nogil=True)
def _fill_rows(conn, starts, elements, offsets, rows, cols, lo, hi):
    """Write the columns (ascending) and each entry's row of rows lo..hi-1."""
    n = offsets.shape[0] - 1
    marker = np.empty(n, dtype=np.int64)
    for i in range(n):
        marker[i] = -1
    for i in range(lo, hi):
        end = _row_columns(conn, starts, elements, marker, i, cols, offsets[i])
        _insertion_sort(cols, offsets[i], end)
        for p in range(offsets[i], end):
            rows[p] = i


@njit(cache=True, nogil=True)
def _fill_index(conn, offsets, cols, index, lo, hi):
    """Write each pair's entry of elements lo..hi-1."""
    k = conn.shape[1]
    for e in range(lo, hi):
        for a in range(k):
            first, end = offsets[conn[e, a]], offsets[conn[e, a] + 1]
            for b in range(k):
                index[e, k * a + b] = _find(cols, first, end, conn[e, b])


@njit(cache=True)
def _insertion_sort(a, lo, hi):
    """Sort a[lo:hi] ascending in place."""
    for i in range(lo + 1, hi):
        v = a[i]
        j = i - 1
        while j >= lo and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@njit(cache=True)
def _find(a, lo, hi, v):
    """The position of v in the ascending a[lo:hi], which holds it."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[mid] <= v:
            lo = mid
        else:
            hi = mid
    return lo
