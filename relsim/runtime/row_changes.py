"""Rows deleted and inserted by a kernel take effect after it, in a deterministic order:
first the deleted rows go (survivors keep their order), then inserted rows are appended in the
order they were produced (ascending source row, program order within a row)."""
from __future__ import annotations


def apply(relation, deleted, inserted: dict) -> None:
    """`deleted`: a row mask of `relation` or None; `inserted`: {relation: (count, columns)}."""
    if deleted is not None and deleted.any():
        relation.delete(deleted)
    for rel, (count, cols) in inserted.items():
        if count:
            rel.insert(count, **cols)
