"""Rows inserted and deleted by a launch on several ranks (elastic relations: particles).

Every rank holds every row, in the global order one process has. A wrapped launch hands its row
changes to `RowChanges.record` instead of applying them (``launch.row_sink``): the rows it
deleted, and the rows it inserted with the source row of each. Only changes made by rows the
rank owns count (halo rows ran here for their reductions; their changes are their owner's).
After the launch (`apply`, collective): every rank's changes are all-gathered; the relations
whose rows change are made current at every row (their stale rows gathered: ownership is
recomputed for the new rows); then every rank applies the same changes in the one-process
order: deletions (survivors keep their order), then inserted rows in ascending source row
(program order within a row). So row ids, and every later reduction, are the same for any
rank count."""
from __future__ import annotations

import numpy as np

from .ghosts import StaleGhosts


class RowChanges:
    def __init__(self, world, relation, inserted_into):
        self.world = world
        self.relation = relation  # the launch relation (rows deleted from it)
        self.inserted_into = inserted_into  # the relations the kernel inserts into, in order
        self.pending = None
        self.owner = None

    def begin(self, owner) -> None:
        self.owner = owner
        self.pending = None

    def record(self, deleted, inserts) -> None:
        """`deleted`: rows of the launch relation (global ids) or None; `inserts`: [(relation,
        source rows, {field name: values})]."""
        rank, owner = self.world.rank, self.owner
        mine = None if deleted is None else deleted[owner[deleted] == rank]
        kept = {}
        for rel, src, cols in inserts:
            keep = owner[src] == rank
            kept[id(rel)] = (src[keep], {k: v[keep] for k, v in cols.items()})
        self.pending = (mine, kept)

    def apply(self) -> None:
        """Every rank's recorded changes, applied alike on every rank. Collective: every rank
        takes part, also one whose launch recorded nothing."""
        mine, kept = self.pending or (None, {})
        self.pending = None
        relation = self.relation
        empty = (np.zeros(0, dtype=np.int64), {})
        mine_ins = [kept.get(id(rel), empty) for rel in self.inserted_into]
        everyone = self.world.comm.allgather((mine, mine_ins))
        deleted = [d for d, _ in everyone if d is not None and len(d)]
        counts = sum(len(src) for _, ins in everyone for src, _ in ins)
        if not deleted and not counts:
            return
        for R in {id(relation): relation, **{id(r): r for r in self.inserted_into}}.values():
            for f in R.fields.values():
                if isinstance(f.residency, StaleGhosts):
                    f.data  # noqa: B018 - gathered (collective): rows move next
        mask = None
        if deleted:
            mask = np.zeros(relation.size, dtype=bool)
            mask[np.concatenate(deleted)] = True
        changes = {}
        for i, rel in enumerate(self.inserted_into):
            srcs = [ins[i][0] for _, ins in everyone]
            cols_by_rank = [ins[i][1] for _, ins in everyone]
            src = np.concatenate(srcs)
            order = np.argsort(src, kind="stable")  # ranks' rows are disjoint, each ascending
            names = sorted({n for cols in cols_by_rank for n in cols})
            cols = {}
            for n in names:
                f = rel.field(n)
                parts = [c.get(n, np.zeros((len(s),) + f.type.shape, f._stored().dtype))
                         for c, s in zip(cols_by_rank, srcs)]
                cols[n] = np.concatenate(parts)[order]
            changes[rel] = (len(src), cols)
        from ..host.row_changes import apply
        apply(relation, mask, changes)
