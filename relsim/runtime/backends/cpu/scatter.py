"""How a cpu launch applies its reductions into fields through keys (`Config.scatter`): the
choice between direct (serial, straight into the field), split (blocks of rows in parallel,
`backends/cpu/ownership.py`) and parked slots. All three give the same bits; the choice is speed.

`scatter="auto"`'s cost model for a parallel launch, in units of the serial direct launch (1),
with `s` the share of a row's work that is its reductions through keys (`scatter_share`: each
scalar contribution weighs SCATTER_WEIGHT expression nodes, the rest of the row one per scalar
node), `m` the fraction of rows reaching a shared target and `p` the thread count:

* direct: 1;
* split: 1/p + SPLIT_MIXED_COST * s * m (a mixed row branches to the parked path);
* slots: (1 + (SLOTS_COST - 1) * s) / p (every contribution parked, then folded).

The cheapest wins (ties: direct). Fitted on two programs at 2 threads: a memory-bound edge
scatter (s = 0.48; bench/scatter_schemes.py --sweep: split beat direct only below ~4% mixed
rows, slots cost 2.5x direct at 1 thread and 1.1-1.5x at 2) and LULESH s=30, whose force
kernels (s = 0.02-0.06, m = 0.067) ran at FOM ~3180 split, ~2490 slots and ~2390 direct (parked
folds there cost more than their share suggests: hence SLOTS_COST 6 rather than the scatter's
2.5). More threads are extrapolated.
"""
from __future__ import annotations

import functools

import numpy as np

from ....types import elem_of
from ... import ir
from ...analysis.access import stmt_exprs
from ...analysis.slots import static_trip
from . import ownership

# the values of `Config.scatter` (validated by `CpuBackend.check_options`)
SCHEMES = ("auto", "direct", "split", "slots")

SCATTER_WEIGHT = 8
SPLIT_MIXED_COST = 24.0
SLOTS_COST = 6.0
UNKNOWN_TRIP = 4  # iterations assumed for a loop whose trip count is not a constant


def scatter_share(analysed) -> float:
    """The share of a row's work that is its reductions into fields through keys (0..1)."""
    scatter = sum(lay.per_row * lay.target.type.ncomp for lay in analysed.layouts
                  if lay.on_field)
    weighted = SCATTER_WEIGHT * scatter
    return weighted / (weighted + _work(analysed.body, 1)) if scatter else 0.0


def _work(body, times) -> int:
    """Scalar expression nodes a row evaluates (loops: their trip count times)."""
    total = 0
    for s in body:
        for e in stmt_exprs(s):
            total += times * sum(getattr(getattr(n, "type", None), "ncomp", 1) or 1
                                 for n in e.walk())
        if isinstance(s, ir.If):
            total += _work(s.body, times) + _work(s.orelse, times)
        elif isinstance(s, (ir.ForRange, ir.ForEach, ir.While, ir.ForGroup)):
            total += _work(s.body, times * (static_trip(s) or UNKNOWN_TRIP))
    return total


def choose(want: str, field_layouts: dict, n: int, serial: bool, threads: int, targets,
           share: float = 1.0):
    """(scheme, splits) for a launch of `n` rows whose field layouts are `field_layouts`
    ({index: layout}; empty: "plain"): `want` is `Config.scatter`, `serial` whether the launch
    runs serially anyway (cpu-serial, below the parallel threshold), `targets(k, layout, lo,
    hi)` the target row of each slot of layout k's source positions lo..hi - 1 (asked for a
    chunk of positions at a time: `ownership.split_chunks`), `share` the kernel's
    `scatter_share`. `splits` ({index: ownership.Split}) for "split"."""
    if not field_layouts:
        return "plain", None
    numeric = not any(elem_of(lay.target.type).is_bool for lay in field_layouts.values())
    if want == "auto":
        if serial or threads == 1:
            return "direct", None
        if not numeric:  # boolean folds have no split gather
            return "slots", None
    elif want != "split":
        return want, None
    elif serial or not numeric:  # a forced split runs serially, or parks all
        return ("direct" if serial else "slots"), None
    bounds = ownership.block_bounds(n, threads)
    splits = {k: ownership.split_chunks(functools.partial(targets, k, lay), n, lay.per_row,
                                        bounds, lay.target.relation.size)
              for k, lay in field_layouts.items()}
    if want == "split":
        return "split", splits
    mixed = np.logical_or.reduce([sp.mixed >= 0 for sp in splits.values()]).mean() if n else 0.0
    costs = {"direct": 1.0, "split": 1.0 / threads + SPLIT_MIXED_COST * share * mixed,
             "slots": (1.0 + (SLOTS_COST - 1.0) * share) / threads}
    best = min(costs, key=lambda k: (costs[k], k != "direct"))
    return best, (splits if best == "split" else None)
