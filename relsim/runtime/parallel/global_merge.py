"""Global reductions over several ranks, with the one-process result's bits.

The wrapped launch hands over each Global reduction's contributions instead of folding them
(`collect`: its slot values, in launch order, and the global row of each launch position). Only
rows this rank owns count (halo rows run here too, for their reductions into fields, but their
Global contributions are their owner's). Then, with the other ranks (`finish`, collective):

* float sums: each rank's exact accumulator (`exact_sum`) is gathered and merged with the
  Global's value before the launch, and rounded once: `math.fsum`'s value, as on one process;
  a cpu launch that folded float64 sums in lanes (`backends/cpu/lanes.py`: every row it ran is
  this rank's) hands its lanes instead (`collect_lanes`): every rank's are gathered and rounded
  once from the Global's value, as one process rounds its own chunks' (`lane_sums.finish`, no
  other compiled code); when any rank has slots instead, or the lanes leave the value
  undecided, every rank merges exact accumulators of its slots as above (the same value);
* float sums into a Global with sum="ordered": every rank's contributions and their rows are
  gathered and folded in ascending row from the value before the launch, as on one process (all
  contributions travel: for reproducing a serial code's order, not for speed);
* min/max and arg-min/arg-max: each rank's first best contribution in row order, with its row
  (from its slots, or from its lanes' candidates: each lane's first best); the candidates, in
  ascending row after the Global's own value, are folded by the arg rule (`first_best`, in
  NumPy, as `host_folds.fold_arg`: strictly better or the first NaN): the lowest row wins ties,
  the lowest row's NaN wins, exactly as a fold in row order over every rank's rows;
* integer sums and products, and/or: each rank's fold (of its slots, or of its lanes' partial
  sums), then the ranks' results in rank order (they commute: wrapping integer arithmetic).
"""
from __future__ import annotations

import time

import numpy as np

from ...types import elem_of
from .. import semantics
from ..analysis.slots import identity
from ..folds import exact_sum, host_folds, lane_sums
from . import exchange

NO_ROW = np.iinfo(np.int64).max
# how the lane-summed Globals were merged: from every rank's lanes, or exactly from slots (tests
# check that each path is taken)
PATHS = {"lanes": 0, "exact": 0}
# of the merges from lanes, those the compiled helpers made in a launch (`_compiled_merge`)
COMPILED = {"merges": 0}


class GlobalMerge:
    """The sink a wrapped launch hands its Global contributions to (``launch.partials``)."""

    def __init__(self, world, layouts, lane_globals=()):
        self.world = world
        self.layouts = layouts  # the kernel's Global reduction layouts: merged in this order
        # the Globals whose sums the wrapped launch may hand over as lanes (the same on every
        # rank: each such Global's merge starts with the ranks' lanes, or None, gathered)
        self.lane_ids = {id(g) for g in lane_globals}
        self.items = {}
        self.lanes = None  # the launch's `LaneSums`
        self.plan = None
        self.messages = {}  # component count -> its `_LaneMessage` (made at the first merge)

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

    def takes_lanes(self) -> bool:
        """Whether the launch may fold its float64 Global sums in lanes: it runs no other
        rank's row (a halo row's contributions are its owner's, and lanes cannot leave them
        out)."""
        return self.plan is not None and len(self.plan.halo) == 0

    def collect_lanes(self, sums) -> None:
        """A cpu launch's Global reductions folded in its loop (`lanes.LaneSums`): its float64
        sums' lanes, merged at `finish`, and its chunk-folded Globals' lanes, as candidates
        (min/max and arg: each lane's first best and its row) or partial integer sums."""
        self.lanes = sums
        for c in sums.chunks:
            self.items[id(c.glob)] = c.handed()

    def finish(self, start: int = 0, gathered: bool = False) -> None:
        """Merge every Global reduction of the kernel (collective: in the kernel's layout
        order on every rank, also those this rank's launch handed nothing for); from layout
        `start` on (those before it merged by a captured step's compiled code, which also
        gathered the lanes of layout `start` when `gathered`: `captured_mpi`)."""
        t0 = time.perf_counter()
        try:
            self._finish(start, gathered)
        finally:
            exchange.TRAFFIC["merge_seconds"] += time.perf_counter() - t0

    def _finish(self, start: int, gathered: bool) -> None:
        items, self.items = self.items, {}
        lanes, self.lanes = self.lanes, None
        slots = None  # the lane-summed Globals' slots, once one needs them
        for k, lay in enumerate(self.layouts[start:], start):
            g = lay.target
            if id(g) in self.lane_ids:
                if _lanes_merged(self.world, g, None if lanes is None else lanes.part(g),
                                 self.messages, gathered and k == start):
                    PATHS["lanes"] += 1
                    continue
                PATHS["exact"] += 1
                if lanes is not None:  # the exact path, from this rank's slots
                    if slots is None:
                        slots = lanes.slot_arrays()
                    items[id(g)] = (slots[id(g)], None)
            vals, rows = items.get(id(g), (None, None))
            if vals is None:
                vals = np.zeros((0, g.type.ncomp), dtype=g.type.dtype)
                rows = np.zeros(0, dtype=np.int64)
            _merge(self.world, g, lay.op, vals, rows)


def _lanes_merged(world, g, mine, messages, gathered: bool = False) -> bool:
    """Every rank's lanes of g (`mine`: this rank's, `LaneSums.part`, or None) rounded
    once into g, from its value before the launch: False (g untouched) when a rank had none
    or the rounding is undecided (every rank decides alike: they hold the same lanes).
    `gathered`: the first messages were gathered already (by compiled code). Where relsim's
    compiled helpers are at hand, they gather and round (`_compiled_merge`)."""
    if not gathered and mine is not None:
        done = _compiled_merge(world, g, mine, lane_message(messages, g.type.ncomp, world.size))
        if done is not None:
            if done:
                return True
            gathered = True  # (the host goes on from the gathered messages)
    gathered = _gather_lanes(world, mine, g.type.ncomp, messages, gathered)
    if gathered is None:
        return False
    lanes, depth = gathered
    flat = g.data.reshape(-1)
    out = np.empty(flat.shape[0])
    if not lane_sums.finish(lanes, 0, flat.shape[0], depth, flat, out):
        return False
    flat[:] = out
    return True


# chunks of lanes a rank sends in the merge's first message; a launch with more (over
# INLINE_CHUNKS * lane_sums.CHUNK_ROWS rows on the rank) sends the rest in a second
INLINE_CHUNKS = 4


class _LaneMessage:
    """The buffers of a launch's lanes merges (per component count): this rank's message (its
    count of chunks, or -1 for none, and its depth bound, then its first INLINE_CHUNKS
    chunks) and every rank's, made once (a merge then costs a few NumPy operations: it runs
    after every launch with a float64 Global sum)."""

    __slots__ = ("chunk", "buf", "head", "body", "every", "heads", "bodies", "gathered", "info",
                 "fast")

    def __init__(self, ncomp: int, size: int):
        self.chunk = ncomp * lane_sums.STATE * lane_sums.LANES  # floats a chunk holds
        shape = (INLINE_CHUNKS, ncomp, lane_sums.STATE, lane_sums.LANES)
        self.buf = np.zeros(2 + INLINE_CHUNKS * self.chunk)
        self.head = self.buf[:2].view(np.int64)
        self.body = self.buf[2:].reshape(shape)  # (views: chunks written and read in place)
        self.every = np.empty((size, len(self.buf)))
        self.heads = self.every[:, :2].view(np.int64)
        self.bodies = self.every[:, 2:].reshape((size, *shape))
        # every rank's chunks in one array, their count and depth (`compiled_mpi.gather_lanes`)
        self.gathered = np.empty((size * INLINE_CHUNKS, *shape[1:]))
        self.info = np.zeros(2, dtype=np.int64)
        self.fast = None  # (the compiled helpers' further arguments; False: not at hand)


def _compiled_merge(world, g, mine, m):
    """g's merge by relsim's compiled helpers (`compiled_mpi.gather_lanes`, then
    `lane_sums.finish_gathered`): True when g now holds the rounded sum; False when the
    messages were gathered but the host must go on from them (a rank without lanes or with
    more chunks, an undecided sum); None when the helpers are not in the disk cache (nothing
    done: mpi4py it is, and rank 0's background worker compiles them for the next run)."""
    if m.fast is None:
        m.fast = _helpers_at_hand(world)
    if m.fast is False:
        return None
    every_sum, q0, q1, depth = mine
    traffic, handles = m.fast
    from . import compiled_mpi
    if compiled_mpi.gather_lanes(every_sum, q0, q1, depth, m.buf, m.every, m.gathered, m.info,
                                 traffic, handles) != 0:
        return False
    flat = g.data.reshape(-1)
    if lane_sums.finish_gathered(m.gathered, m.info, flat, np.empty_like(flat)) != 0:
        return False
    COMPILED["merges"] += 1
    return True


def _helpers_at_hand(world):
    """The merge helpers' further arguments when their machine code is here or in the disk
    cache, else False."""
    from ..host.compile_jobs import load_cached
    from . import compiled_mpi
    if not compiled_mpi.SUPPORTED:
        return False
    if world.rank == 0:
        compiled_mpi.ahead()
    wanted = {compiled_mpi.gather_lanes, lane_sums.finish_gathered}
    if not all(load_cached(fn, sig) for fn, sig in compiled_mpi.signatures() if fn in wanted):
        return False
    return np.zeros(4), compiled_mpi.handles(world, exchange.TAG)


def lane_message(messages: dict, ncomp: int, size: int) -> _LaneMessage:
    """The merge buffers for Globals of `ncomp` components (made at their first merge)."""
    m = messages.get(ncomp)
    if m is None:
        m = messages[ncomp] = _LaneMessage(ncomp, size)
    return m


def _gather_lanes(world, mine, ncomp: int, messages: dict, gathered: bool = False):
    """Every rank's lanes, in rank order, as one array (chunks, components, STATE, LANES), and
    the sum of their depth bounds (each counts its rank's chunks and lanes merged); None when
    a rank had none. `mine`: this rank's (lanes of every summed Global, first and end
    component of this one, depth bound), or None. One collective of buffers (no pickling: a
    pickled allgather is two collectives and ~25 us more) when no rank has more than
    INLINE_CHUNKS chunks, else two. `messages`: the buffers kept between merges, per
    component count; `gathered`: the first collective made already (by compiled code, with
    the same buffers: `compiled_mpi.gather_lanes`)."""
    m = lane_message(messages, ncomp, world.size)
    lanes = None
    if mine is not None:
        every_sum, q0, q1, _depth = mine
        lanes = every_sum[:, q0:q1]  # (a view: copied into the message, and the rest once)
    if not gathered:
        if mine is None:
            m.head[0] = -1
        else:
            m.head[0], m.head[1] = len(lanes), mine[3]
            inline = min(len(lanes), INLINE_CHUNKS)
            m.body[:inline] = lanes[:inline]
        world.comm.Allgather(m.buf, m.every)
    heads = m.heads.tolist()
    if any(nch < 0 for nch, _ in heads):
        return None
    depth = sum(d for _, d in heads)
    counts = [max(nch - INLINE_CHUNKS, 0) for nch, _ in heads]
    if not any(counts):  # (every rank's chunks in the first message)
        nchs = {nch for nch, _ in heads}
        if len(nchs) == 1:  # (as many on every rank: one C-contiguous copy, as
            # `lane_sums.finish` is compiled for)
            every = np.ascontiguousarray(m.bodies[:, :nchs.pop()])
            return every.reshape(-1, *every.shape[2:]), depth
        return np.concatenate([m.bodies[q, :nch] for q, (nch, _) in enumerate(heads)]), depth
    chunk = m.chunk
    sizes = [c * chunk for c in counts]  # (every rank takes part: each knows every count)
    rest = np.empty(sum(sizes))
    displs = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    mine_rest = np.zeros(0) if lanes is None else \
        np.ascontiguousarray(lanes[INLINE_CHUNKS:]).reshape(-1)
    world.comm.Allgatherv(mine_rest, [rest, (sizes, displs)])
    parts = []
    for q, (nch, _) in enumerate(heads):
        parts += [m.bodies[q, :min(nch, INLINE_CHUNKS)],
                  rest[displs[q]:displs[q] + sizes[q]].reshape(-1, *m.bodies.shape[2:])]
    return np.concatenate(parts), depth


def _exact_sums(vals, ncomp: int):
    """This rank's exact accumulators (ncomp, ACC_LEN) of the columns of `vals` (slots,
    components), by the compiled folds (`sum_slots` is a one-process run's too), or, for few
    finite values while the serial fold is not compiled (a one-process run folds its slots
    with other code), from floats adding up to each sum (`exact_sum.exact_parts`: math.fsum,
    ~30 ns a value and a pass) while the background worker compiles it: a first `mpiexec` run
    compiles nothing of its own."""
    accs = exact_sum.new_many(ncomp)
    if len(vals) * ncomp > exact_sum.SERIAL_SLOTS:
        exact_sum.sum_slots(vals, accs)
        return accs
    if not _serial_fold_ready(vals, accs):
        parts = [exact_sum.exact_parts(vals[:, c].tolist()) for c in range(ncomp)]
        if all(p is not None for p in parts):
            for c, p in enumerate(parts):
                exact_sum.acc_of_parts(p, accs[c])
            return accs
    if len(vals):
        exact_sum.add_slots_serial(vals, accs)
    return accs


# the slots' dtype (their arrays: 2-D, C-contiguous) -> [add_slots_serial loaded, the
# background worker's done test]: found once (Numba's typeof, ~15 us, not at every launch)
_SERIAL_FOLD: dict = {}


def _serial_fold_ready(vals, accs) -> bool:
    """Whether `exact_sum.add_slots_serial` for these arguments is compiled here or in the disk
    cache (then loaded); if not, it is given to the background worker, once."""
    key = vals.dtype
    state = _SERIAL_FOLD.get(key)
    if state is not None and state[0]:
        return True
    from numba import typeof

    from ..host.compile_jobs import AFTER_KERNELS, helper_in_background, load_cached
    sig = (typeof(vals), typeof(accs))
    if state is None:
        state = _SERIAL_FOLD[key] = list(helper_in_background(exact_sum.add_slots_serial, sig,
                                                              AFTER_KERNELS))
    elif state[1]():
        state[0] = load_cached(exact_sum.add_slots_serial, sig)
        if not state[0]:  # (the worker failed: compiled here at the next call)
            state[:] = [True, None]
    return state[0]


def first_best(vals, rows, value, row, is_min: bool) -> tuple:
    """`host_folds.fold_arg`'s rule in NumPy (nothing to compile): from (value, row), the
    first of `vals` (in ascending `rows`) strictly better than the best so far, or the first
    NaN, which then stays. Returns the (value, row) it ends with."""
    if value != value or len(vals) == 0:
        return value, row
    nan = np.flatnonzero(vals != vals)
    if len(nan):
        return vals[nan[0]], rows[nan[0]]
    best = vals.min() if is_min else vals.max()
    if not (best < value if is_min else best > value):
        return value, row
    first = np.flatnonzero(vals == best)[0]  # (no earlier one is strictly better: the first)
    return vals[first], rows[first]


def _in_row_order(vals, rows, c: int) -> tuple:
    """Column c's contributions and rows in ascending row: `rows` of slots (one per slot,
    ascending already) or of lanes' candidates (one per candidate and component, -1 where
    the lane had none, in no order)."""
    if rows.ndim == 1:
        return vals, rows
    r = rows[:, c]
    kept = np.flatnonzero(r >= 0)
    order = kept[np.argsort(r[kept], kind="stable")]
    return vals[order], r[order]


def _merge(world, g, op, vals, rows) -> None:
    et = elem_of(g.type)
    flat = g.data.reshape(-1)
    comm = world.comm
    if semantics.sums_exactly(g, op):
        accs = _exact_sums(vals, flat.shape[0])
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
        ident = flat.dtype.type(identity(op, et))
        mine = [first_best(*_in_row_order(vals[:, c], rows, c), ident, NO_ROW, is_min)
                for c in range(flat.shape[0])]
        everyone = comm.allgather(mine)
        arg = op.startswith("arg")
        for c in range(flat.shape[0]):
            cands = sorted((pair[c] for pair in everyone), key=lambda p: p[1])
            value, row = first_best(np.array([v for v, _ in cands], dtype=flat.dtype),
                                    np.array([r for _, r in cands], dtype=np.int64), flat[c],
                                    g._row_data[0] if arg else -1, is_min)
            flat[c] = value
            if arg:
                g._row_data[0] = row
        return
    part = np.full(flat.shape, identity(op, et), dtype=flat.dtype)
    fold = host_folds.fold_bool if et.is_bool else host_folds.fold_num
    if len(vals):
        fold(part, vals, host_folds.OPS[op])
    everyone = np.array(comm.allgather(part), dtype=flat.dtype)
    fold(flat, everyone, host_folds.OPS[op])
