"""Dirichlet rows of a `SparseMatrix`: the elimination, and the columns it keeps so that the
right-hand side can be lifted again at every step.

Imposing ``x[rows] = values`` on ``A x = b`` symmetrically makes each such row the identity
row and moves its column out of every other row into ``b`` (``b -= a * value``). The first call
for a row changes A; the moved column entries (the *lifting*) are kept here, so a later call
with the same rows — a time loop that recomputes ``b`` each step, with new boundary values —
moves them into the new ``b`` from the kept values, as the first call did. The kept columns
belong to the matrix as it was assembled: after the entries change (``A.entries.a`` re-assembled
by a kernel or loaded, which its field's version tells), the next call eliminates afresh from
the new values; if the new values still have every moved entry at exactly 0 (the entries were
changed in place, say scaled, rather than assembled again), the columns are gone from A and
the call is an error rather than a right-hand side with nothing moved. Calls on one
right-hand side that name a row twice (miniFE's faces, whose edges are in two of them) move its
column once, with the first call's value, and leave the last value in b, as miniFE does.

A compacted copy (`SparseMatrix.compacted`: the entries that are exactly 0 dropped, the moved
columns among them) carries the elimination with its kept columns, so it lifts them into every
new ``b`` as the full matrix would; its pattern cannot hold a column again, so changing its
entries and imposing Dirichlet rows anew is an error there.
"""
from __future__ import annotations

import numpy as np

import relsim as rs


class Elimination:
    """The rows eliminated from one matrix's entries, and their kept columns: entry numbers
    (ascending: by row, then column), their rows, columns and values, in the rows that are not
    eliminated. `compacted`: whether the entries no longer hold the kept columns."""

    def __init__(self, n: int):
        self.fixed = np.zeros(n, dtype=bool)
        self.kept = np.zeros(0, dtype=np.int64)
        self.kept_row = np.zeros(0, dtype=np.int64)
        self.kept_col = np.zeros(0, dtype=np.int64)
        self.kept_a = np.zeros(0)
        self.compacted = False
        self.version = None  # the entries' version after the last elimination wrote them
        # the columns already lifted into the right-hand side `b_state` names (the b field and
        # its version after that lift): a later call on that same b lifts only the others
        self.lifted = np.zeros(n, dtype=bool)
        self.b_state = None

    def current(self, entries) -> bool:
        """Whether the entries are still the ones this elimination left."""
        return self.version == entries.a.version

    def columns_gone(self, entries) -> bool:
        """Whether the entries changed since, yet every kept column entry is still 0: A was
        changed in place, not assembled again, and the moved columns cannot be recovered."""
        return bool(self.kept.size) and bool(np.any(self.kept_a != 0.0)) and \
            not np.any(entries.a.numpy()[self.kept] != 0.0)

    def eliminate(self, new: np.ndarray, entries) -> None:
        """Make rows `new` (none eliminated yet) identity rows, keeping their columns."""
        r, c = entries.row.numpy(), entries.col.numpy()
        # (read here, not handed out; on several ranks every rank's values, gathered)
        a = entries.a.numpy(copy=True) if entries.partition is not None else entries.a.data
        in_new = np.zeros(len(self.fixed), dtype=bool)
        in_new[new] = True
        self.fixed |= in_new
        moved = np.flatnonzero(in_new[c] & ~self.fixed[r])
        stay = ~in_new[self.kept_row]  # kept entries of rows now eliminated: not needed
        kept = np.concatenate([self.kept[stay], moved])
        rows = np.concatenate([self.kept_row[stay], r[moved].astype(np.int64)])
        cols = np.concatenate([self.kept_col[stay], c[moved].astype(np.int64)])
        vals = np.concatenate([self.kept_a[stay], a[moved]])
        order = np.lexsort((cols, rows))  # by row, then column (the entries' order)
        self.kept, self.kept_row, self.kept_col, self.kept_a = \
            kept[order], rows[order], cols[order], vals[order]
        # the entries of the new rows and columns: 0, 1 on those rows' diagonal (written in
        # place: a copy of every entry took 112 MB at miniFE 80^3)
        zero = np.flatnonzero(in_new[r] | in_new[c])
        rz = r[zero]
        entries.a._load_rows(zero, np.where(in_new[rz] & (rz == c[zero]), 1.0, 0.0))
        self.version = entries.a.version

    def lift(self, rows: np.ndarray, values: np.ndarray, entries, b) -> None:
        """``b -= s``, s per row the sum of kept ``a * value`` over the columns of `rows`,
        added in column order from 0 (as miniFE's impose_dirichlet: its right-hand side bit
        for bit); then ``b[rows] = values``. A column already lifted into this same `b` (no
        change to b since) is not lifted again: as if it were gone from A, which is what a
        row imposed by two calls on one right-hand side gets in miniFE's reference (its
        second value in b, the first moved out of the other rows)."""
        if self.b_state != (id(b), b.version):
            self.lifted[:] = False  # a new right-hand side: every column moves again
        value_of = np.zeros(len(self.fixed))
        mine = np.zeros(len(self.fixed), dtype=bool)
        value_of[rows], mine[rows] = values, True
        mine &= ~self.lifted
        self.lifted[rows] = True
        cols = self.kept_col
        use = mine[cols]
        s = np.zeros(len(self.fixed))
        np.add.at(s, self.kept_row[use], self.kept_a[use] * value_of[cols[use]])
        bv = b.numpy(copy=True)
        bv -= s  # (b - 0.0 is b, bit for bit, in rows without such columns)
        bv[rows] = values
        b.load(bv)
        self.b_state = (id(b), b.version)


    def carried(self, entries) -> Elimination:
        """This elimination for a compacted copy of the matrix whose entries are `entries`
        (the kept columns by row and column only: they are not among its entries)."""
        out = Elimination(len(self.fixed))
        out.fixed = self.fixed.copy()
        out.kept_row, out.kept_col, out.kept_a = self.kept_row, self.kept_col, self.kept_a
        out.kept = np.full(len(self.kept), -1, dtype=np.int64)  # (not entries of the copy)
        out.compacted = True
        out.version = entries.a.version
        return out


def rows_and_values(matrix, rows, values) -> tuple:
    """(row numbers, one f64 value per row) from `rows` (numbers or a Subset of the matrix's
    relation) and `values` (one number, one per row, or a scalar float Field of that relation,
    read at those rows), checked."""
    V, name = matrix.vertices, matrix.name
    if isinstance(rows, rs.Subset):
        if rows.relation is not V:
            raise rs.DataError(f"{name}.dirichlet: subset {rows.name!r} is of relation "
                               f"{rows.relation.name}, not of {V.name} (the matrix's rows)")
        rows = rows.rows
    rows = np.asarray(rows)
    if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
        raise rs.DataError(f"{name}.dirichlet: rows must be a 1-D array of row numbers or a "
                           f"Subset of {V.name}, got an array of shape {rows.shape} and dtype "
                           f"{rows.dtype}")
    rows = rows.astype(np.int64)
    bad = (rows < 0) | (rows >= matrix.n)
    if bad.any():
        raise rs.DataError(f"{name}.dirichlet: row {rows[bad][0]} is outside the {matrix.n} "
                           f"rows of {V.name}")
    if isinstance(values, rs.Field):
        if values.relation is not V or values.type != rs.f64:
            raise rs.DataError(f"{name}.dirichlet: values from a field must be an f64 scalar "
                               f"field of {V.name}, got {values.qualname} ({values.type!r})")
        vals = values.numpy()[rows].astype(np.float64)
    else:
        try:
            vals = np.broadcast_to(np.asarray(values, dtype=np.float64), rows.shape)
        except (TypeError, ValueError):
            raise rs.DataError(f"{name}.dirichlet: values must be one number, one per row "
                               f"({len(rows)}) or an f64 field of {V.name}, got "
                               f"{type(values).__name__} of shape "
                               f"{np.shape(values)}") from None
    order = np.argsort(rows, kind="stable")
    r, v = rows[order], vals[order]
    clash = (r[1:] == r[:-1]) & (v[1:] != v[:-1]) & ~(np.isnan(v[1:]) & np.isnan(v[:-1]))
    if clash.any():
        raise rs.DataError(f"{name}.dirichlet: row {r[1:][clash][0]} is given twice with "
                           f"different values")
    return rows, vals
