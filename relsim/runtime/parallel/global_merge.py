"""Global reductions over several ranks, with the one-process result's bits.

The wrapped launch hands over each Global reduction's contributions instead of folding them
(`collect`: its slot values, in launch order, and the global row of each launch position). Only
rows this rank owns count (halo rows run here too, for their reductions into fields, but their
Global contributions are their owner's). Then, with the other ranks (`finish`, collective):

* float sums: each rank's exact accumulator (`exact_sum`) is gathered and merged with the
  Global's value before the launch, and rounded once: `math.fsum`'s value, as on one process;
* float sums into a Global with sum="ordered": every rank's contributions and their rows are
  gathered and folded in ascending row from the value before the launch, as on one process (all
  contributions travel: for reproducing a serial code's order, not for speed);
* min/max and arg-min/arg-max: each rank's first best contribution in row order, with its row;
  the candidates, in ascending row after the Global's own value, are folded by the arg rule
  (`host_folds.fold_arg`: strictly better or the first NaN): the lowest row wins ties, the lowest
  row's NaN wins, exactly as a fold in row order over every rank's rows;
* integer sums and products, and/or: each rank's fold, then the ranks' results in rank order
  (they commute: wrapping integer arithmetic).
"""
from __future__ import annotations

import numpy as np

from ...types import elem_of
from .. import semantics
from ..analysis.slots import identity
from ..folds import exact_sum, host_folds

NO_ROW = np.iinfo(np.int64).max


class GlobalMerge:
    """The sink a wrapped launch hands its Global contributions to (``launch.partials``)."""

    def __init__(self, world, layouts):
        self.world = world
        self.layouts = layouts  # the kernel's Global reduction layouts: merged in this order
        self.items = {}
        self.plan = None

    def begin(self, plan) -> None:
        self.plan = plan
        self.items.clear()

    def collect(self, g, op, vals, per_row, rows) -> None:
        """`vals`: (slots, components), `per_row` slots per launch position; `rows`: the global
        row of each position (None: position i is row i)."""
        p = self.plan
        positions = np.arange(len(vals) // per_row if per_row else 0) if rows is None else rows
        # min/max/arg and sums in row order need each slot's row; the others none
        arg = op in ("min", "max", "argmin", "argmax") or semantics.sums_in_row_order(g, op)
        if len(p.halo) == 0:  # every executed row is this rank's: every slot counts
            self.items[id(g)] = (vals, np.repeat(positions, per_row) if arg else None)
            return
        counted = np.repeat(p.owned_positions, per_row)
        self.items[id(g)] = (np.ascontiguousarray(vals[counted]),
                             np.repeat(positions, per_row)[counted] if arg else None)

    def finish(self) -> None:
        """Merge every Global reduction of the kernel (collective: in the kernel's layout
        order on every rank, also those this rank's launch handed nothing for)."""
        items, self.items = self.items, {}
        for lay in self.layouts:
            g = lay.target
            vals, rows = items.get(id(g), (None, None))
            if vals is None:
                vals = np.zeros((0, g.type.ncomp), dtype=g.type.dtype)
                rows = np.zeros(0, dtype=np.int64)
            _merge(self.world, g, lay.op, vals, rows)


def _merge(world, g, op, vals, rows) -> None:
    et = elem_of(g.type)
    flat = g.data.reshape(-1)
    comm = world.comm
    if semantics.sums_exactly(g, op):
        accs = exact_sum.new_many(flat.shape[0])
        if len(vals) * vals.shape[1] > exact_sum.SERIAL_SLOTS:
            exact_sum.sum_slots(vals, accs)
        elif len(vals):  # (the same accumulator: compiled in a fraction of the time)
            exact_sum.add_slots_serial(vals, accs)
        everyone = np.empty((world.size, *accs.shape), dtype=accs.dtype)
        comm.Allgather(accs, everyone)  # (buffers: no pickling)
        for c in range(flat.shape[0]):  # (in Python: a few integers per rank, no compiling)
            flat[c] = exact_sum.round_merged(everyone[:, c], flat[c], flat.dtype)
        return
    if semantics.sums_in_row_order(g, op):
        # every rank's contributions with their rows; each rank folds all of them, in ascending
        # row (program order within a row: the sort is stable), from the value before the launch
        everyone = comm.allgather((vals, rows))
        all_rows = np.concatenate([r for _, r in everyone])
        all_vals = np.concatenate([v for v, _ in everyone]).astype(flat.dtype, copy=False)
        order = np.argsort(all_rows, kind="stable")
        host_folds.fold_num(flat, np.ascontiguousarray(all_vals[order]), host_folds.OPS["+"])
        return
    if op in ("min", "max", "argmin", "argmax"):
        is_min = op in ("min", "argmin")
        ident = np.array([identity(op, et)], dtype=flat.dtype)
        mine = []
        for c in range(flat.shape[0]):
            best, brow = ident.copy(), np.array([NO_ROW])
            if len(vals):
                host_folds.fold_arg(best, brow, np.ascontiguousarray(vals[:, c:c + 1]), 1,
                                   rows, True, is_min)
            mine.append((best[0], brow[0]))
        everyone = comm.allgather(mine)
        for c in range(flat.shape[0]):
            cands = sorted((pair[c] for pair in everyone), key=lambda p: p[1])
            cvals = np.array([[v] for v, _ in cands], dtype=flat.dtype)
            crows = np.array([r for _, r in cands], dtype=np.int64)
            value = flat[c:c + 1].copy()
            row = g._row_data.copy() if op.startswith("arg") else np.array([-1])
            host_folds.fold_arg(value, row, cvals, 1, crows, True, is_min)
            flat[c] = value[0]
            if op.startswith("arg"):
                g._row_data[0] = row[0]
        return
    part = np.full(flat.shape, identity(op, et), dtype=flat.dtype)
    fold = host_folds.fold_bool if et.is_bool else host_folds.fold_num
    if len(vals):
        fold(part, vals, host_folds.OPS[op])
    everyone = np.array(comm.allgather(part), dtype=flat.dtype)
    fold(flat, everyone, host_folds.OPS[op])
