"""A cpu binding's Global reductions folded in the launch's loop: float64 sums in TwoSum lanes
(`folds.lane_sums`), min/max, arg-min/arg-max and integer sums per chunk of rows.

The lanes variant of a kernel (`loops.CpuLowerer.lanes_function`) leaves, per chunk of rows,
TwoSum lanes for each such Global; `LaneSums.finish` rounds them once, from the Global's value,
and writes the result. When it cannot decide (rarely: see `lane_sums`), `exact` sums the
contributions exactly from their slots: written by the same run for a kernel with other
effects, or by running a kernel whose only effects are its Global reductions again with its
slots (`rerun`). Either way the Global ends with the correctly rounded exact sum, as the slot
path gives it: the bits do not depend on the path.

A chunk-folded Global (`loops.chunk_layouts`) leaves, per lane of each chunk of rows, an
integer sum, or the lane's first best value and its row (a min/max or an arg reduction);
`finish` folds them into the Global with the slot fold's own rule, each chunk's candidates in
ascending row order (`host_folds.fold_candidates`), so the value and row are the slot fold's.
"""
from __future__ import annotations

import numpy as np

from ....types import elem_of
from ...analysis.slots import identity
from ...folds import exact_sum, host_folds, lane_sums
from ...host.jit import entry_point

# how many launches took the exact path (tests check that it is taken, and where)
EXACT_PATH = {"count": 0}


class LaneSums:
    __slots__ = ("lanes", "sums", "depth", "rerun", "chunks", "finish_fn", "slots")

    def __init__(self, lanes, sums, depth, rerun, chunks=(), slots=()):
        self.lanes = lanes  # lane_sums.new_lanes(...), passed to the kernel as `_lanes`
        # per Global: (Global, its flat storage, first and end component in the lanes, the
        # rounded values, the exact fold over its slots)
        self.sums = sums
        self.depth = depth  # lane_sums.depth_bound of the launch
        self.rerun = rerun  # (function, arguments) writing the slots again, or None
        self.chunks = chunks  # the chunk-folded Globals' `Chunks`
        # per sum, lane_sums.finish; from the second launch on, its compiled entry for that
        # sum's arguments (whose types never change: no dispatch by them, ~0.3 us a launch;
        # False after the first)
        self.finish_fn = None
        self.slots = slots  # per sum, its slot array (slots, components)

    def finish(self) -> None:
        """After the lanes variant ran: every Global's new value, from its lanes, or else
        (rarely) from its slots; the chunk-folded ones from their chunks."""
        for c in self.chunks:
            c.fold()
        if self.rounded():
            return
        EXACT_PATH["count"] += 1
        if self.rerun is not None:  # a kernel with no other effect: its slots, written now
            fn, args = self.rerun
            fn(*args)
        self.exact_sums()

    def rounded(self) -> bool:
        """Round every Global from its lanes into its storage; False (nothing written) when
        the check leaves any component undecided."""
        sums = self.sums
        finish = self.finish_fn or (lane_sums.finish,) * len(sums)
        for fn, (_g, flat, q0, q1, out, _fold) in zip(finish, sums):
            if not fn(self.lanes, q0, q1, self.depth, flat, out):
                return False  # (a lone scalar's `out` is its storage: finish wrote nothing)
        if not self.finish_fn:  # (from the second launch: a binding made again for each
            # launch, as particles' moving keys make theirs, would type them for nothing)
            self.finish_fn = False if self.finish_fn is None else tuple(
                entry_point(lane_sums.finish, (self.lanes, q0, q1, self.depth, flat, out))
                for _g, flat, q0, q1, out, _fold in sums)
        for g, flat, _q0, _q1, out, _fold in sums:
            if out is not flat:
                flat[:] = out
            _host_written(g)
        return True

    def host_calls(self) -> list:
        """(function, arguments) of each of relsim's compiled folds `finish` calls after a
        launch (a sum's rounding, a chunk-folded Global's fold), so that they can be compiled
        ahead with the kernels (`CpuExecutable.calls_of`, `rs.precompile`)."""
        return [(lane_sums.finish, (self.lanes, q0, q1, self.depth, flat, out))
                for _g, flat, q0, q1, out, _fold in self.sums] + \
            [c.host_call() for c in self.chunks]

    def exact(self) -> None:
        """Every Global's new value from its slots, after a launch of the slot variant (one
        folding pending reductions first: `CpuExecutable.settle`)."""
        for c in self.chunks:
            c.slot_fold()
            _host_written(c.glob)
        self.exact_sums()

    def part(self, g) -> tuple:
        """What a rank hands the other ranks of Global g (`parallel.global_merge`): the lanes
        of every sum (not a copy), g's first and end component in them, the launch's depth
        bound."""
        for h, _flat, q0, q1, _out, _fold in self.sums:
            if h is g:
                return self.lanes, q0, q1, self.depth
        raise KeyError(g.name)

    def slot_arrays(self) -> dict:
        """{id of each summed Global: its slots (slots, components)} after the lanes variant
        ran; for a kernel with no other effect, written now by running it again with its
        slots (call once per launch)."""
        if self.rerun is not None:
            fn, args = self.rerun
            fn(*args)
        return {id(g): v for (g, *_), v in zip(self.sums, self.slots)}

    def exact_sums(self) -> None:
        """The float64 sums' values from their slots (written by the launch that just ran)."""
        for g, _flat, _q0, _q1, _out, fold in self.sums:
            fold()
            _host_written(g)


class Chunks:
    """A chunk-folded Global's per-lane values `vals` (chunks, components, LANES) and, for a
    min/max or arg reduction, rows `rows` (the kernel's `_cv<k>`, `_cr<k>`); each lane starts
    from the operator's identity (row -1); `slot_fold` folds its slots instead (the slot
    variant ran)."""

    __slots__ = ("glob", "op", "vals", "rows", "ident", "slot_fold")

    def __init__(self, lay, nch, slot_fold):
        g = self.glob = lay.target
        et = elem_of(g.type)
        self.op, self.slot_fold = lay.op, slot_fold
        self.ident = identity(lay.op, et)
        shape = (nch, g.type.ncomp, lane_sums.LANES)
        self.vals = np.full(shape, self.ident, dtype=et.dtype)
        self.rows = None if lay.op == "+" else np.full(shape, -1, dtype=np.int64)

    def arrays(self) -> tuple:
        return (self.vals,) if self.rows is None else (self.vals, self.rows)

    def handed(self) -> tuple:
        """The lanes as (values, rows), (chunks x lanes, components) each (rows None for an
        integer sum, -1 where a lane had no candidate), for the MPI layer's merge; then back
        to the identity for the next launch."""
        ncomp = self.vals.shape[1]
        vals = self.vals.transpose(0, 2, 1).reshape(-1, ncomp).copy()
        rows = None
        if self.rows is not None:
            rows = self.rows.transpose(0, 2, 1).reshape(-1, ncomp).copy()
            self.rows.fill(-1)
        self.vals.fill(self.ident)
        return vals, rows

    def host_call(self) -> tuple:
        """(fold, arguments) folding the lanes into the Global: the slot fold's value and
        row."""
        g = self.glob
        flat = g._data.reshape(-1)
        if self.rows is None:  # an integer sum: any order (it wraps)
            lanes = self.vals.transpose(0, 2, 1).reshape(-1, flat.shape[0])  # (a copy)
            return host_folds.fold_num, (flat, lanes, host_folds.OPS["+"])
        arg = self.op in ("argmin", "argmax")
        op = 0 if arg else host_folds.OPS[self.op]  # (an arg reduction's rule is its own)
        return host_folds.fold_candidates, (flat, g._row_data, self.vals, self.rows, op, arg,
                                            self.op in ("min", "argmin"))

    def fold(self) -> None:
        """The lanes into the Global (`host_call`); then back to the identity for the next
        launch."""
        fn, args = self.host_call()
        fn(*args)
        if self.rows is not None:
            self.rows.fill(-1)
        self.vals.fill(self.ident)
        _host_written(self.glob)


def _host_written(g) -> None:
    if g.residency is not None:  # (a device copy: now stale)
        g.residency.after_host_write(g)


def make(layouts, offsets, slot_vals, n, rerun, chunk_folds=None, least=None):
    """The LaneSums of a binding of `n` rows: `offsets` {layout index: first component} (the
    lowering's `lane_offsets`), `slot_vals` {layout index: its slot array}, `chunk_folds`
    {layout index: its slot fold} of the chunk-folded Globals (`loops.chunk_layouts`);
    `least`: rows a chunk holds at least (default `lane_sums.CHUNK_ROWS`)."""
    nch = lane_sums.chunks(n, least or lane_sums.CHUNK_ROWS)
    chunks = tuple(Chunks(layouts[k], nch, fold) for k, fold in (chunk_folds or {}).items())
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
                    lane_sums.depth_bound(n, per_row, nch), rerun, chunks,
                    tuple(slot_vals[k] for k in offsets))
