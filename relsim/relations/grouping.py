"""Groupings: the CSR inverse index of a key field, so kernels can loop over incident rows."""
from __future__ import annotations

import numpy as np

from ..compiled import njit

# entries (rows times key slots) from which a grouping built again (its keys changed: moving
# particles, each step) is built by a compiled counting sort rather than NumPy's stable argsort
# (32k entries 1.7 -> 0.1 ms, 1M 82 -> 6 ms), and from which its first build is (a mesh's
# grouping, built once): loading the compiled function from the cache takes ~40 ms, compiling
# it ~0.6 s once per machine, while the argsort of 500 entries takes 14 us
COUNTING_SORT_FROM = 8192
COUNTING_SORT_FIRST_FROM = 1 << 19


class Grouping:
    """For each row t of `target`, the rows r of the source relation with key(r) == t,
    ascending (for a key vector: one entry per matching slot, in (row, slot) order)."""

    def __init__(self, target, name: str, key_field):
        self.target = target
        self.name = name
        self.key_field = key_field
        self.source = key_field.relation
        self._version = None
        self._offsets = None
        self._rows = None
        self._in_order = False
        self._built_from = None  # the key array of the last build
        self._fill = None  # `counting_sort`'s scratch (`_scratch`)

    def arrays(self):
        """(offsets, rows), rebuilt when the key field was reloaded or rows were inserted or
        deleted; keys still to derive for inserted rows (`KeyField.derive`) are derived first,
        so inserted rows are in their groups. When the source is sorted by the key (`in_order`)
        the rows are ``0, 1, 2, ...``: made for the call, not kept (a sparse matrix's entries
        grouped by row: 112 MB at miniFE 80^3)."""
        self._current()
        if self._rows is None:
            return self._offsets, np.arange(self.source.size, dtype=np.int64)
        return self._offsets, self._rows

    def _current(self) -> None:
        kf = self.key_field
        if kf._unset is not None:
            kf._derive_unset()
        if self._version != (kf.version, self.target.size, self.source.size):
            self._build()

    def _build(self) -> None:
        keys = self.key_field.data.reshape(self.source.size, -1)
        arity = keys.shape[1]
        flat = keys.ravel()
        if self._built_from is self.key_field._stored() and self._rows is not None and \
                len(self._rows) == len(flat) and len(self._offsets) == self.target.size + 1:
            # keys computed again in the same array (moving particles): built again into its
            # own arrays, which a launch's binding keeps
            self._sort(flat, arity, self._offsets, self._rows, COUNTING_SORT_FROM)
            self._mark_current()
            return
        self._built_from = self.key_field._stored()
        self._in_order = bool(arity == 1 and (len(flat) < 2 or (flat[1:] >= flat[:-1]).all()))
        if self._in_order:  # each group's first position, found in the sorted keys (bincount
            # made an int64 copy of them: 112 MB for a matrix's 14M entries at miniFE 80^3)
            bounds = np.arange(self.target.size + 1, dtype=flat.dtype if len(flat) else np.int64)
            offsets = np.searchsorted(flat, bounds, side="left").astype(np.int64, copy=False)
            self._rows = None
        else:
            offsets = np.empty(self.target.size + 1, dtype=np.int64)
            self._rows = np.empty(len(flat), dtype=np.int64)
            self._sort(flat, arity, offsets, self._rows, COUNTING_SORT_FROM
                       if self._version is not None else COUNTING_SORT_FIRST_FROM)
        self._offsets = offsets
        self._mark_current()

    def _sort(self, flat, arity, offsets, rows, counting_from: int) -> None:
        """The groups of `flat` into `offsets` and `rows`: by the compiled counting sort from
        `counting_from` entries, else by NumPy's stable argsort (each slot's position in key
        order: rows ascending within a group)."""
        if len(flat) >= counting_from:
            counting_sort(flat, arity, offsets, rows, self._scratch())
            return
        offsets[0] = 0
        np.cumsum(np.bincount(flat, minlength=self.target.size), out=offsets[1:])
        order = np.argsort(flat, kind="stable")
        rows[:] = order if arity == 1 else order // arity

    def _mark_current(self) -> None:
        """Its arrays hold the groups of its key field's keys now (built here, or by
        `in_place_call`'s function in a captured step)."""
        self._version = (self.key_field.version, self.target.size, self.source.size)

    def in_place_call(self):
        """(compiled function, arguments) building it again into its own arrays from its key
        field's own array (`KeyField.follow`'s keys), for a captured step's compiled call; None
        when it has no arrays of its own (`in_order`) or was built from other keys."""
        self._current()
        kf = self.key_field
        if self._rows is None or kf._owned is None or self._built_from is not kf._stored():
            return None
        keys = kf._owned.reshape(-1)
        return (counting_sort, (keys, len(keys) // max(self.source.size, 1), self._offsets,
                                self._rows, self._scratch()))

    def _scratch(self) -> np.ndarray:
        """`counting_sort`'s scratch, one per target row (kept: a grouping rebuilt every step)."""
        if self._fill is None or len(self._fill) != self.target.size:
            self._fill = np.empty(self.target.size, dtype=np.int64)
        return self._fill

    @property
    def in_order(self) -> bool:
        """Whether the grouped rows are the source's rows in order (the source relation is
        sorted by the key: ``rows()`` is ``0, 1, 2, ...``), so a group is a contiguous range."""
        self._current()
        return self._in_order

    def offsets(self) -> np.ndarray:
        """CSR offsets, one per target row plus one: target row t's group is
        ``rows()[offsets()[t]:offsets()[t + 1]]``."""
        self._current()
        return self._offsets

    def rows(self) -> np.ndarray:
        """The source rows of every group, group after group, each group in ascending order."""
        return self.arrays()[1]

    def __repr__(self) -> str:
        return (f"<Grouping {self.target.name}.{self.name}: {self.source.name} rows by "
                f"{self.key_field.name}>")


@njit(cache=True)
def counting_sort(keys, arity, offsets, rows, fill):
    """The CSR of `keys` (one per key slot, `arity` slots a row) into `offsets` (one per target
    row plus one; zeroed here) and `rows`, each slot's row, group after group, in slot order
    within a group: what a stable argsort of the keys gives, in two passes over them. `fill`
    (one per target row) is its scratch: it allocates nothing (a captured step's compiled call
    runs it)."""
    for t in range(offsets.shape[0]):
        offsets[t] = 0
    for k in keys:
        offsets[k + 1] += 1
    for t in range(offsets.shape[0] - 1):
        offsets[t + 1] += offsets[t]
    for t in range(fill.shape[0]):
        fill[t] = offsets[t]
    for i in range(keys.shape[0]):
        k = keys[i]
        rows[fill[k]] = i // arity
        fill[k] += 1
