"""How much work one row of a kernel does: the parallel threshold in rows of that kernel.

`Config.parallel_threshold` (4096 by default) is the number of rows from which a launch pays for
a parallel region when a row does a few operations. A kernel whose rows loop over groupings (cell
lists, neighbour lists: ``for q in p.cell(1, 0, 0).particles``) does as much in one row as in
hundreds of such rows, so it pays for threads from far fewer rows. Once per kernel,
`grouping_loops` finds each loop over a grouping in the kernel's body with the loops around it
(a ``range`` of constant bounds counts its iterations; an enclosing grouping loop, its groups'
mean length); at each binding `threshold` weighs a row as one plus the expected iterations of
those loops (their groupings' mean length now) and runs the launch in parallel from
``parallel_threshold / weight`` rows (at least one). The same bits either way: only the speed
depends on it.
"""
from __future__ import annotations

import math

from ... import ir


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


def threshold(rows: int, loops: tuple) -> int:
    """The parallel threshold, `rows` for rows of a few operations, for a kernel with the
    grouping `loops` of `grouping_loops`, its groupings as they are now."""
    if not loops:
        return rows
    weight = 1.0 + sum(count * math.prod(mean_length(g) for g in groups)
                       for count, groups in loops)
    return math.ceil(rows / weight)
