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

from contextlib import nullcontext

import numpy as np

from . import epoch, ir
from .analysis import phase
from .parallel.rowsets import Reach, key_loop


class Colouring:
    def __init__(self, analysed, conflicts):
        self.analysed = analysed
        self.conflicts = conflicts  # phase.coloured(...)
        self.proven: dict = {}  # id(subset) -> (subset, epoch, structure when proven)
        self.relations = _relations(analysed)

    def check(self, relation, subset) -> None:
        if subset is not None:
            held = self.proven.get(id(subset))
            if held is not None and held[0] is subset:
                if held[1] == epoch.value:
                    return
                if held[2] == self.structure():  # (only values or swapped arrays changed)
                    self.proven[id(subset)] = (subset, epoch.value, held[2])
                    return
        self.prove(relation, subset)
        self.proven[id(subset)] = (subset, epoch.value, self.structure())

    def structure(self) -> tuple:
        """The structure versions of the relations the kernel reaches, and how often keys
        were computed again in place (what a proof reads)."""
        return tuple((R.structure_version, R.keys_version) for R in self.relations)

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


def _relations(analysed) -> tuple:
    """The relations whose keys, sizes or groupings a proof for `analysed` reads: its own, and
    those of every field and grouping its expressions read, with their key targets."""
    found = {id(analysed.relation): analysed.relation}
    for s in ir.walk_stmts(analysed.body):
        for c in s.children():
            if not isinstance(c, ir.Expr):
                continue
            for e in c.walk():
                holder = getattr(e, "field", None) if isinstance(e, ir.FieldRead) else \
                    getattr(e, "grouping", None) if isinstance(e, ir.GroupRead) else None
                for R in (getattr(holder, a, None) for a in ("relation", "target", "source")):
                    if R is not None and hasattr(R, "structure_version"):
                        found.setdefault(id(R), R)
    return tuple(found.values())


def _reads_through_keys(reach, body, field):
    """(FieldRead node, rows its key may hold) of each read of `field` through any key but the
    kernel's own; inside a loop over keys its variable holds that loop's rows only (two loops
    over `e` would otherwise make each read through `e` reach both loops' rows)."""
    for s in body:
        for c in s.children():
            if isinstance(c, ir.Expr):
                for e in c.walk():
                    if isinstance(e, ir.FieldRead) and e.field is field and \
                            not isinstance(e.key, ir.Centred):
                        yield e, reach.rows_of(e.key)
        bodies = [sub for sub in (getattr(s, "body", None), getattr(s, "orelse", None))
                  if isinstance(sub, tuple)]
        with reach.bound(s.var, reach.loop_rows(s)) if key_loop(s) else nullcontext():
            for sub in bodies:
                yield from _reads_through_keys(reach, sub, field)
