"""How much work one row of a kernel does: the parallel threshold in rows of that kernel.

`Config.parallel_threshold` (4096 by default) is the number of rows from which a launch pays for
a parallel region when a row does a few operations. A kernel whose rows loop over groupings (cell
lists, neighbour lists: ``for q in p.cell(1, 0, 0).particles``) does as much in one row as in
hundreds of such rows, so it pays for threads from far fewer rows. Once per kernel,
`grouping_loops` finds each loop over a grouping in the kernel's body with the loops around it
(a ``range`` of constant bounds counts its iterations; an enclosing grouping loop, its groups'
mean length); at each binding `threshold` weighs a row as one plus the expected iterations of
those loops (their groupings' mean length now) and runs the launch in parallel from
``parallel_threshold / weight`` rows (at least one). A kernel without grouping loops whose rows
are light (fewer expression nodes than `LIGHT_ROW`, a vector's or matrix's counted per
component: an axpy, a dot product) weighs its rows
below one, so its launches go parallel only from more rows: a parallel region costs more than
thousands of such rows. A configured threshold of 0 or 1 (always parallel) is kept. The same
bits either way: only the speed depends on it.
"""
from __future__ import annotations

import math

from ... import ir
from ...analysis.access import stmt_exprs

# A row of this many expression nodes is one row of `Config.parallel_threshold`; a lighter one
# counts as a fraction of a row (a kernel without grouping loops, never more than one). Measured
# on a 2-core machine (tbb): a launch of `r.y = r.y + 0.5 * r.x` (8 nodes) over 16,384 rows took
# 11.0 us parallel against 3.9 serial, over 65,536 rows 15.0 against 11.1, over 262,144 rows 47
# against 145: it pays from ~100,000 rows, 4,096 * 200 / 8.
LIGHT_ROW = 200


def grouping_loops(body, outer=(1, ())) -> tuple:
    """((constant iterations, (grouping, ...)), ...): each grouping loop in `body`, with the
    product of the constant trip counts of the loops around it and the groupings it is nested
    in (itself last)."""
    count, groups = outer
    found = []
    for s in body:
        match s:
            case ir.ForRange(start=ir.Const(), stop=ir.Const(), step=ir.Const()):
                trips = len(range(s.start.value, s.stop.value, s.step.value))
                found += grouping_loops(s.body, (count * trips, groups))
            case ir.ForGroup():
                inner = (count, groups + (s.group.grouping,))
                found.append(inner)
                found += grouping_loops(s.body, inner)
            case ir.If():
                found += grouping_loops(s.body, outer) + grouping_loops(s.orelse, outer)
            case ir.ForRange() | ir.ForEach() | ir.While():
                found += grouping_loops(s.body, outer)  # trip count unknown: counted once
    return tuple(found)


def mean_length(grouping) -> float:
    """Entries per group: the grouped rows (one per key slot) over the groups."""
    offsets = grouping.offsets()
    return float(offsets[-1]) / max(1, len(offsets) - 1)


def operations(body) -> int:
    """The expression nodes of `body` (a loop's body counted once), each as many as the
    components of its value (a 3 x 3 matrix: 9): what a row computes, as far as a count of the
    IR tells."""
    return sum(_components(n.type) for s in ir.walk_stmts(body) for e in stmt_exprs(s)
               for n in e.walk())


def _components(t) -> int:
    shape = getattr(t, "shape", None)
    return math.prod(shape) if isinstance(shape, tuple) and shape else 1


def threshold(rows: int, loops: tuple, ops: int = LIGHT_ROW) -> int:
    """The parallel threshold, `rows` for rows of about `LIGHT_ROW` expression nodes, for a
    kernel with `ops` nodes and the grouping `loops` of `grouping_loops`, its groupings as they
    are now. A threshold of 0 or 1 (always parallel) stays as it is."""
    if rows <= 1:
        return rows
    if loops:
        weight = 1.0 + sum(count * math.prod(mean_length(g) for g in groups)
                           for count, groups in loops)
    else:
        weight = min(1.0, max(ops, 1) / LIGHT_ROW)  # light rows: threads pay from more rows
    return math.ceil(rows / weight)
