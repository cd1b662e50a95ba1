"""Graph colouring of a relation's rows, for coloured launches (Gauss-Seidel and other in-place
smoothers, `runtime/colouring.py`): rows that share a row of another relation's keys (the two
vertices of an edge, the four of a tet) get different colours, so a kernel over one colour that
reads its neighbours through those keys never reads a row the launch writes.

Greedy, in row order: each row takes the smallest colour none of its earlier neighbours has. The
result depends only on the key arrays, which every rank holds whole: the same colours on any rank
count.
"""
from __future__ import annotations

import numpy as np

from ..compiled import njit
from ..errors import SchemaError


def colour(relation, *keys, name: str = "colour") -> list:
    """Colour the rows of `relation` so that rows reached from one row of the keys' relation
    (`keys`: key fields or key vectors of one relation, all into `relation`) differ; returns one
    subset per colour, ``<name>0``, ``<name>1``, ... (subsets of `relation`)."""
    if not keys:
        raise SchemaError(f"rs.colour({relation.name}, ...): give the key fields whose rows join "
                          f"rows of {relation.name} (e.g. E.v, or E.tail, E.head)")
    source = keys[0].relation
    for k in keys:
        if not getattr(k, "is_key", False) or k.target is not relation or k.relation is not source:
            raise SchemaError(f"rs.colour({relation.name}, ...): {getattr(k, 'qualname', k)!r} is "
                              f"not a key field of {source.name} into {relation.name}")
    joined = np.column_stack([k.numpy().reshape(source.size, -1) for k in keys]).astype(np.int64)
    n = relation.size
    width = joined.shape[1]
    a = np.repeat(joined, width, axis=1).ravel()
    b = np.tile(joined, (1, width)).ravel()
    keep = a != b
    a, b = a[keep], b[keep]
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    starts = np.searchsorted(a, np.arange(n + 1))
    colours = _greedy(starts, b.astype(np.int64), n)
    return [relation.subset(f"{name}{c}", np.flatnonzero(colours == c))
            for c in range(int(colours.max()) + 1 if n else 0)]


@njit(cache=True)
def _greedy(starts, neighbours, n):
    """Each row's colour: the smallest none of its neighbours (``neighbours[starts[v]:
    starts[v + 1]]``) coloured before it has, rows in order."""
    colours = np.full(n, -1, dtype=np.int64)
    taken = np.zeros(n + 1, dtype=np.int64)  # taken[c] == v + 1: colour c is a neighbour's
    for v in range(n):
        for k in range(starts[v], starts[v + 1]):
            c = colours[neighbours[k]]
            if c >= 0:
                taken[c] = v + 1
        c = 0
        while taken[c] == v + 1:
            c += 1
        colours[v] = c
    return colours
