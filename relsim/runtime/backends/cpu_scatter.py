"""How a cpu launch applies its reductions into fields through keys (`Config.scatter`): the
choice between direct (serial, straight into the field), split (blocks of rows in parallel,
`runtime/ownership.py`) and parked slots. All three give the same bits; the choice is speed.

`scatter="auto"`'s cost model for a parallel launch, in units of the serial direct launch (1):
split costs 1/threads plus SPLIT_MIXED_COST per fraction of rows that reach a shared target
(they branch to the parked path: ~10-20x a direct row when rare); parking every contribution
costs SLOTS_COST/threads. The cheapest wins (ties: direct). Measured on a memory-bound edge
scatter at 1 and 2 threads (bench/scatter_schemes.py --sweep: split beat direct only below
~4% mixed rows; slots cost 2.4-2.6x direct at 1 thread); more threads are extrapolated.
"""
from __future__ import annotations

import numpy as np

from ...types import elem_of
from .. import ownership

SPLIT_MIXED_COST = 12.0
SLOTS_COST = 2.6


def choose(want: str, field_layouts: dict, n: int, serial: bool, threads: int, targets):
    """(scheme, splits) for a launch of `n` rows whose field layouts are `field_layouts`
    ({index: layout}; empty: "plain"): `want` is `Config.scatter`, `serial` whether the launch
    runs serially anyway (cpu-serial, below the parallel threshold), `targets(k, layout)` the
    target row of each slot of layout k. `splits` ({index: ownership.Split}) for "split"."""
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
    splits = {k: ownership.split(targets(k, lay), lay.per_row, bounds, lay.target.relation.size)
              for k, lay in field_layouts.items()}
    if want == "split":
        return "split", splits
    mixed = np.logical_or.reduce([sp.mixed for sp in splits.values()]).mean() if n else 0.0
    costs = {"direct": 1.0, "split": 1.0 / threads + SPLIT_MIXED_COST * mixed,
             "slots": SLOTS_COST / threads}
    best = min(costs, key=lambda k: (costs[k], k != "direct"))
    return best, (splits if best == "split" else None)
