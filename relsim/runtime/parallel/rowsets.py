"""Which rows a kernel reaches from a set of its own rows, read from its typed IR.

`Reach(analysed, rows)` evaluates the kernel's key expressions over `rows` (global row ids of
its relation):

* `rows_of(expr)`: every row of the expression's relation that some row may reach (a union:
  both branches of an `if`, every component of a key vector, every assignment of a local), or
  None when it cannot tell (then: every row);
* `per_row(expr)`: the row each source row reaches (an array aligned with `rows`, one column
  per component of a key vector), or None when it cannot tell. Reduction targets are fixed key
  paths (the phase rules), so it can always tell for those, except through locals assigned more
  than once.

Key fields are the same on every rank and kernels never write them, so this is local work."""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ...types import KeyType, KeyVecType
from .. import ir

_UNBOUND = object()  # (`Reach.bound`: a name with no rows before)


def key_loop(s) -> bool:
    """Whether statement `s` is a loop whose variable holds keys (a grouping's rows, a key
    vector's entries)."""
    return isinstance(s, ir.ForGroup) or (isinstance(s, ir.ForEach) and is_key(s.seq.type))


def is_key(t) -> bool:
    return isinstance(t, (KeyType, KeyVecType))


class Reach:
    def __init__(self, analysed, rows: np.ndarray):
        self.relation = analysed.relation
        self.rows = rows
        self.param = analysed.param
        self.sets: dict = {}  # local name -> rows it may hold (None: unknown)
        self.single: dict = {}  # local name -> its one assigning expression (per_row)
        counts: dict = {}
        for s in ir.walk_stmts(analysed.body):
            if isinstance(s, ir.Assign) and is_key(s.value.type):
                counts[s.name] = counts.get(s.name, 0) + 1
                self.single[s.name] = s.value
            elif isinstance(s, (ir.ForEach, ir.ForGroup)):
                counts[s.var] = 2  # many values per row
        self.single = {k: v for k, v in self.single.items() if counts[k] == 1}
        for _ in range(2):  # twice: a local assigned in a loop from one assigned later
            for s in ir.walk_stmts(analysed.body):
                if isinstance(s, ir.Assign) and is_key(s.value.type):
                    self._bind(s.name, self.rows_of(s.value))
                elif key_loop(s):  # (a name: every loop's rows that use it)
                    self._bind(s.var, self.loop_rows(s))

    def _bind(self, name, rows) -> None:
        if name in self.sets and (self.sets[name] is None or rows is None):
            self.sets[name] = None
        elif name in self.sets:
            self.sets[name] = np.union1d(self.sets[name], rows)
        else:
            self.sets[name] = rows

    @contextmanager
    def bound(self, name, rows):
        """Inside the block, local `name` holds `rows` only (a loop variable inside its own
        loop, where the name alone holds the rows of every loop that uses it)."""
        saved = self.sets.get(name, _UNBOUND)
        self.sets[name] = rows
        try:
            yield
        finally:
            if saved is _UNBOUND:
                del self.sets[name]
            else:
                self.sets[name] = saved

    # -- sets -------------------------------------------------------------------------------
    def loop_rows(self, s):
        """Rows the variable of `key_loop` `s` may hold (None: unknown)."""
        if isinstance(s, ir.ForGroup):
            return self.group_rows(s.group)
        return self.rows_of(s.seq)

    def rows_of(self, e):
        """Sorted unique rows `e` may hold over the source rows, or None (any row)."""
        if isinstance(e, ir.Centred):
            return self.rows
        if isinstance(e, ir.Cast):
            return self.rows_of(e.value)
        if isinstance(e, ir.Local):
            return self.sets.get(e.name)
        if isinstance(e, ir.FieldRead) and e.field.is_key:
            at = self.rows_of(e.key)
            return None if at is None else np.unique(e.field.data[at])
        if isinstance(e, ir.Index) and isinstance(e.base, ir.FieldRead) and \
                e.base.field.is_key and _const(e.index):
            at = self.rows_of(e.base.key)
            return None if at is None else np.unique(e.base.field.data[at, e.index[0].value])
        if isinstance(e, ir.Index) and is_key(e.base.type):
            return self.rows_of(e.base)
        if isinstance(e, ir.Affine):
            at = self.rows_of(e.key)
            if at is None:
                return None
            nb = neighbours(at, e.offsets, self.target_of(e.key).grid)
            return np.unique(nb[nb >= 0])
        if isinstance(e, ir.IfExp):
            a, b = self.rows_of(e.body), self.rows_of(e.orelse)
            return None if a is None or b is None else np.union1d(a, b)
        return None

    def group_rows(self, g):
        """Rows a `for r in k.<grouping>` loop visits: the grouping's source rows keyed to
        the rows `k` may hold."""
        at = self.rows_of(g.key)
        if at is None:
            return None
        keys = g.grouping.key_field.data
        return np.flatnonzero(np.isin(keys, at).reshape(len(keys), -1).any(axis=1))

    # -- per row ----------------------------------------------------------------------------
    def per_row(self, e):
        """The row `e` holds for each source row (array aligned with the source rows; 2-D for
        a key vector; -1 off a bounded grid), or None when that is not fixed."""
        if isinstance(e, ir.Centred):
            return self.rows
        if isinstance(e, ir.Cast):
            return self.per_row(e.value)
        if isinstance(e, ir.Local):
            value = self.single.get(e.name)
            return None if value is None else self.per_row(value)
        if isinstance(e, ir.FieldRead) and e.field.is_key:
            at = self.per_row(e.key)
            return None if at is None or at.ndim != 1 else e.field.data[at]
        if isinstance(e, ir.Index) and _const(e.index):
            base = self.per_row(e.base)
            return None if base is None or base.ndim != 2 else base[:, e.index[0].value]
        if isinstance(e, ir.Affine):
            at = self.per_row(e.key)
            if at is None or at.ndim != 1:
                return None
            return neighbours(at, e.offsets, self.target_of(e.key).grid)
        return None

    def target_of(self, e):
        t = e.type
        return t.relation if is_key(t) else self.relation


def _const(index) -> bool:
    return len(index) == 1 and isinstance(index[0], ir.Const)


def neighbours(rows, offsets, grid) -> np.ndarray:
    """The grid neighbour at `offsets` of each row (periodic axes wrap; -1 off a bounded axis)."""
    out = np.array(rows, dtype=np.int64)
    off = np.zeros(len(out), dtype=bool)
    for d, n, st, periodic in zip(offsets, grid.shape, grid.strides, grid.periodic):
        if d == 0:
            continue
        c = (out // st) % n
        c2 = (c + d) % n if periodic else c + d
        off |= (c2 < 0) | (c2 >= n)
        out = out + (np.clip(c2, 0, n - 1) - c) * st
    out[off] = -1
    return out
