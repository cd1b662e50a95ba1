"""A cpu binding's float64 Global sums accumulated in the launch's loop (`folds.lane_sums`).

The lanes variant of a kernel (`loops.CpuLowerer.lanes_function`) leaves, per chunk of rows,
TwoSum lanes for each such Global; `LaneSums.finish` rounds them once, from the Global's value,
and writes the result. When it cannot decide (rarely: see `lane_sums`), `exact` sums the
contributions exactly from their slots: written by the same run for a kernel with other
effects, or by running a kernel whose only effects are its Global reductions again with its
slots (`rerun`). Either way the Global ends with the correctly rounded exact sum, as the slot
path gives it: the bits do not depend on the path.
"""
from __future__ import annotations

import numpy as np

from ...folds import exact_sum, lane_sums

# how many launches took the exact path (tests check that it is taken, and where)
EXACT_PATH = {"count": 0}


class LaneSums:
    __slots__ = ("lanes", "sums", "depth", "rerun")

    def __init__(self, lanes, sums, depth, rerun):
        self.lanes = lanes  # lane_sums.new_lanes(...), passed to the kernel as `_lanes`
        # per Global: (Global, its flat storage, first and end component in the lanes, the
        # rounded values, the exact fold over its slots)
        self.sums = sums
        self.depth = depth  # lane_sums.depth_bound of the launch
        self.rerun = rerun  # (function, arguments) writing the slots again, or None

    def finish(self) -> None:
        """After the lanes variant ran: every Global's new value, from its lanes, or else
        (rarely) from its slots."""
        if self.rounded():
            return
        EXACT_PATH["count"] += 1
        if self.rerun is not None:  # a kernel with no other effect: its slots, written now
            fn, args = self.rerun
            fn(*args)
        self.exact()

    def rounded(self) -> bool:
        """Round every Global from its lanes into its storage; False (nothing written) when
        the check leaves any component undecided."""
        sums = self.sums
        for _g, flat, q0, q1, out, _fold in sums:
            if not lane_sums.finish(self.lanes, q0, q1, self.depth, flat, out):
                return False  # (a lone scalar's `out` is its storage: finish wrote nothing)
        for g, flat, _q0, _q1, out, _fold in sums:
            if out is not flat:
                flat[:] = out
            _host_written(g)
        return True

    def exact(self) -> None:
        """Every Global's new value from its slots (written by the launch that just ran)."""
        for g, _flat, _q0, _q1, _out, fold in self.sums:
            fold()
            _host_written(g)


def _host_written(g) -> None:
    if g.residency is not None:  # (a device copy: now stale)
        g.residency.after_host_write(g)


def make(layouts, offsets, slot_vals, n, rerun):
    """The LaneSums of a binding of `n` rows: `offsets` {layout index: first component} (the
    lowering's `lane_offsets`), `slot_vals` {layout index: its slot array}."""
    nch = lane_sums.chunks(n)
    ncomp = sum(layouts[k].target.type.ncomp for k in offsets)
    sums, per_row = [], 1
    for k, q0 in offsets.items():
        lay = layouts[k]
        g = lay.target
        flat = g._data.reshape(-1)
        q1 = q0 + g.type.ncomp
        per_row = max(per_row, lay.per_row)
        # (a scalar alone is rounded into its storage: `finish` writes it only once decided)
        out = flat if len(offsets) == 1 and q1 - q0 == 1 else np.empty(q1 - q0)
        sums.append((g, flat, q0, q1, out, exact_sum.fold_of(flat, slot_vals[k])))
    return LaneSums(lane_sums.new_lanes(nch, ncomp), tuple(sums),
                    lane_sums.depth_bound(n, per_row, nch), rerun)
