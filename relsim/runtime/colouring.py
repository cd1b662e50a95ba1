"""Coloured launches: a kernel that reads a field through keys and writes it at its own row
(Gauss-Seidel, red-black SOR) is race-free over a subset none of those reads reach, such as one
colour of a red-black or graph colouring: every value it reads is then one the launch does not
write, so rows may run in any order, on any thread count, rank count or device.

The phase rules leave such fields to the launch (`analysis.phase.coloured`); `Colouring.check`
proves it for the launch space from the data (the rows each read may reach over the subset's
rows, `parallel.rowsets.Reach`: key fields, grid offsets, groupings), or raises the phase
error, naming both sites and a row the read reaches inside the subset. A verdict is kept until
storage changes anywhere (`epoch`), so a smoother's sweeps prove each colour once.
"""
from __future__ import annotations

import numpy as np

from . import epoch, ir
from .analysis import phase
from .parallel.rowsets import Reach, is_key


class Colouring:
    def __init__(self, analysed, conflicts):
        self.analysed = analysed
        self.conflicts = conflicts  # phase.coloured(...)
        self.proven: dict = {}  # id(subset) -> (subset, epoch when proven)

    def check(self, relation, subset) -> None:
        if subset is not None:
            held = self.proven.get(id(subset))
            if held is not None and held[0] is subset and held[1] == epoch.value:
                return
        self.prove(relation, subset)
        self.proven[id(subset)] = (subset, epoch.value)

    def prove(self, relation, subset) -> None:
        name = self.analysed.kernel_name
        for field, read, other in self.conflicts:
            if subset is None:
                raise phase.conflict(field, read, other, name, (
                    "; over a subset that none of these reads reach, such as one colour of a "
                    "red-black or graph colouring (rs.colour), it is allowed"))
            rows = np.asarray(subset.rows, dtype=np.int64)
            reach = Reach(self.analysed, rows)
            for node, hit in _reads_through_keys(reach, self.analysed.body, field):
                if hit is None:
                    raise phase.conflict(field, read, other, name, (
                        f"; the launch runs over subset {subset.name!r}, but which rows the "
                        f"read at line {node.loc.line} reaches cannot be told before it runs"))
                inside = np.intersect1d(hit, rows)
                if len(inside):
                    raise phase.conflict(field, read, other, name, (
                        f"; over subset {subset.name!r} the read at line {node.loc.line} "
                        f"reaches row {int(inside[0])}, which the launch also writes (a "
                        f"colour's reads must reach only rows of other colours)"))


def _reads_through_keys(reach, body, field):
    """(FieldRead node, rows its key may hold) of each read of `field` through any key but the
    kernel's own. Inside a loop over a grouping or a key vector the loop variable holds that
    loop's rows only (`reach` alone binds a name to every loop's rows that use it: two loops
    both over `e` would make each read through `e` reach both loops' rows)."""
    for s in body:
        for c in s.children():
            if isinstance(c, ir.Expr):
                for e in c.walk():
                    if isinstance(e, ir.FieldRead) and e.field is field and \
                            not isinstance(e.key, ir.Centred):
                        yield e, reach.rows_of(e.key)
        own = None
        if isinstance(s, ir.ForGroup):
            own = reach.group_rows(s.group)
        elif isinstance(s, ir.ForEach) and is_key(s.seq.type):
            own = reach.rows_of(s.seq)
        saved = reach.sets.get(s.var, _UNBOUND) if own is not None else _UNBOUND
        if own is not None:
            reach.sets[s.var] = own
        try:
            for name in ("body", "orelse"):
                sub = getattr(s, name, None)
                if isinstance(sub, tuple):
                    yield from _reads_through_keys(reach, sub, field)
        finally:
            if own is not None:
                if saved is _UNBOUND:
                    reach.sets.pop(s.var, None)
                else:
                    reach.sets[s.var] = saved


_UNBOUND = object()
