"""Rows deleted and inserted by a kernel take effect after it, in a deterministic order:
first the deleted rows go (survivors keep their order), then inserted rows are appended in the
order they were produced (ascending source row, program order within a row)."""
from __future__ import annotations

import numpy as np

from ...relations import elastic


def apply(relation, deleted, inserted: dict) -> None:
    """`deleted`: a row mask of `relation` or None; `inserted`: {relation: (count, columns)}.
    (A launch's own changes: not `Relation.insert` / `delete`, which a recorder refuses from the
    host, while a captured step repeats a kernel's.)"""
    if deleted is not None and deleted.any():
        elastic.delete_rows(relation, deleted)
    for rel, (count, cols) in inserted.items():
        if count:
            elastic.append_rows(rel, count, cols)


def apply_flagged(relation, deleted, inserts, rows, sink) -> None:
    """A compiled launch's changes (cpu, cuda): `deleted` a row mask, `inserts` (relation, flags
    per insert slot, {field: values per slot}, slots per launch position). Deleted rows go
    (order kept), then flagged slots become rows, in slot order; the flag arrays are cleared
    for the next launch. With a `sink` (the distributed layer's `RowChanges`) the changes go to
    it instead, with the source row of each inserted row (`rows`: the launch's rows, None for
    every row)."""
    cols_by_rel, sources = {}, {}
    for rel, flags, values, per_row in inserts:
        picked = np.flatnonzero(flags)
        cols = {f.name: vals[picked].reshape((len(picked),) + f.type.shape)
                for f, vals in values.items()}
        cols_by_rel[rel] = (len(picked), cols)
        positions = picked // per_row
        sources[rel] = positions if rows is None else rows[positions]
        flags[:] = False
    mask = None
    if deleted is not None:
        mask = deleted.copy()
        deleted[:] = False
    if sink is None:
        apply(relation, mask, cols_by_rel)
    else:
        sink.record(None if mask is None else np.flatnonzero(mask),
                    [(rel, sources[rel], cols) for rel, (_, cols) in cols_by_rel.items()])
