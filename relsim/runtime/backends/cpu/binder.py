"""Binding a cpu launch (`Binder`, the part of `backend.CpuExecutable` that makes one): the
arrays of one iteration space (the whole relation or a subset) as the generated function's
arguments, the scheme of its key reductions into fields (`scatter.choose`: added directly,
split by ownership, or slots folded after the kernel), which compiled variant it calls
(serial, parallel, tier 0; row loops, grid loops, lanes), and what runs after it: the debug
check, the folds left pending or run at once, row changes; and when a launch binds again
(`current`, `rebind`: a binding kept for the arrays it finds, new key arrays taken in,
`swap_keys`, or keys changed in their arrays kept, `free_of_keys`).
"""
from __future__ import annotations

import copy

import numba
import numpy as np

from ....relations.field import Field
from ....relations.globals import Global
from ....relations.key_field import key_dtype
from ....types import elem_of
from ... import epoch, semantics
from ...analysis import affine
from ...analysis.slots import identity
from ...folds import exact_sum, host_folds, lane_sums
from ...host import binding, debug_checks, prints, row_changes
from ...lowering import (
    DebugFirst,
    DebugValues,
    DeleteFlags,
    FieldStorage,
    GlobalStorage,
    GridShape,
    GroupOffsets,
    GroupRows,
    InsertFlags,
    InsertValues,
    PrintFlags,
    PrintValues,
    ReductionSlots,
    RelationSize,
    SlotPlaces,
)
from .. import base
from . import lanes, ownership, row_work, segment, tiers
from . import scatter as cpu_scatter

_EMPTY_ROWS = np.zeros(0, dtype=np.int64)
# a whole launch's `_rows`: read-only as a subset's rows are, so the one function of a variant
# that both launches call (`loops.py`) has one signature for them
_NO_SUBSET = np.zeros(0, dtype=np.int64)
_NO_SUBSET.flags.writeable = False


def stored_arg(p):
    """The argument of parameter `p` when it passes stored data, taken again at each binding
    (a field's storage, with its pending reductions left pending; a Global's; a grouping's
    offsets or rows, in order: their positions, body.py); None for the binding's own arrays."""
    match p:
        case FieldStorage(field=f):
            return f._data
        case GlobalStorage(glob=g):
            return g.data
        case GroupOffsets(grouping=g):
            return g.offsets()
        case GroupRows(grouping=g):
            return _EMPTY_ROWS if g.in_order else g.arrays()[1]
    return None



class Binding:
    """Arrays bound for one iteration space (the whole relation or one subset)."""
    __slots__ = ("versions", "epoch", "size", "args", "n", "rows", "has_rows", "folds", "fn",
                 "call_args", "post", "globals", "parallel", "deferred", "outstanding", "scheme",
                 "row_args", "debug", "device", "lanes", "prints", "entry", "entry_args",
                 "threshold", "structure", "arrays", "contents")


class Binder:
    """`CpuExecutable`'s binding methods (they read its compiled variants and options)."""

    def bind(self, relation, subset, versions) -> Binding:
        b = Binding()
        b.entry = None  # b.fn's compiled entry for b.call_args (False: called once)
        b.versions = versions
        b.n = relation.size if subset is None else len(subset.rows)
        b.rows = _NO_SUBSET if subset is None else subset.rows
        b.has_rows = subset is not None
        b.threshold = row_work.threshold(self.threshold, self.group_loops, self.row_ops)
        args, slot_arrays, slot_places, inserts, deleted = [], {}, {}, {}, None
        debug = [None, None]
        b.prints = prints.new_arrays(self.print_stmts, b.n) if self.print_stmts else None
        for p in self.params:
            stored = stored_arg(p)
            if stored is not None:
                args.append(stored)
                continue
            match p:
                case ReductionSlots(layout=lay):  # a field's: allocated once the scheme is known
                    arr = binding.slot_array(lay, 0 if isinstance(lay.target, Field) else b.n)
                    slot_arrays[id(lay)] = (len(args), arr)
                    args.append(arr)
                case SlotPlaces(layout=lay):  # filled below, once the targets are known
                    slot_places[id(lay)] = len(args)
                    args.append(np.empty(0, dtype=np.int32))
                case DeleteFlags():
                    args.append(np.zeros(relation.size, dtype=bool))
                    deleted = args[-1]
                case InsertFlags(index=k, layout=lay):  # one entry per insert slot
                    args.append(np.zeros(b.n * lay.per_row, dtype=bool))
                    inserts[k] = (lay.target, args[-1], inserts.get(k, (0, 0, {}))[2],
                                  lay.per_row)
                case InsertValues(index=k, layout=lay, field=f):
                    args.append(np.zeros((b.n * lay.per_row, f.type.ncomp), dtype=f.data.dtype))
                    inserts.setdefault(k, (lay.target, None, {}, lay.per_row))[2][f] = args[-1]
                case RelationSize(relation=r):
                    args.append(np.array([r.size], dtype=np.int64))
                case GridShape(relation=r):
                    args.append(np.array(r.grid.shape + r.grid.strides, dtype=np.int64))
                case DebugFirst():
                    args.append(np.zeros(b.n, dtype=np.int32))
                    debug[0] = args[-1]
                case DebugValues():  # the value a check saw, then its operands
                    args.append(np.zeros((b.n, 1 + debug_checks.OPERANDS)))
                    debug[1] = args[-1]
                case PrintFlags(site=k):
                    args.append(b.prints[0][k])
                case PrintValues(site=k, kind=kind):
                    args.append(b.prints[prints.PART[kind]][k])
                case _:
                    raise TypeError(f"cpu backend: no binding for parameter {p!r}")
        affine.check_launch_space(self.analysed, relation, None if subset is None else b.rows)
        b.args = tuple(args)
        scheme, splits = self.scheme(b)
        b.scheme = scheme
        if scheme == "direct" and self.self_tiering and self.planned_ahead is None and \
                b.n < b.threshold and self.scatter == "auto":
            tiers.plan_ahead(self, b)  # (in the background, for a run past the threshold)
        if scheme == "slots":  # the key reductions' slots, for every row
            for lay in self.analysed.layouts:
                if isinstance(lay.target, Field) and id(lay) in slot_arrays:
                    i, _ = slot_arrays[id(lay)]
                    args[i] = binding.slot_array(lay, b.n)
                    slot_arrays[id(lay)] = (i, args[i])
                    if id(lay) in slot_places:
                        nslots = b.n * lay.per_row
                        args[slot_places[id(lay)]] = np.empty(
                            nslots, dtype=np.int32 if nslots < 2 ** 31 else np.int64)
            b.args = tuple(args)
        gathers, b.folds, split_shv, global_vals = [], [], {}, {}
        for k, lay in enumerate(self.analysed.layouts):
            vals = slot_arrays.get(id(lay), (None, None))[1]
            if vals is None:  # the kernel never reaches this reduction: nothing to fold
                vals = binding.slot_array(lay, b.n)
            op = host_folds.OPS.get(lay.op)
            if not isinstance(lay.target, Field):
                global_vals[k] = vals
                b.folds.append((lay.target, self.make_fold(lay, vals, b), lay, vals))
                continue
            f = lay.target
            F = f._data.reshape(f.relation.size, -1)
            if scheme == "direct":  # added to the field by the kernel: nothing to fold
                continue
            if scheme == "split":  # only the shared targets' slots, folded after the kernel
                sp = splits[k]
                shv = split_shv[k] = binding.slot_array(lay, sp.nshared, per_row=1)
                gathers.append((f, F, sp, None, shv, op, False, lay))
                continue
            tgt = self.slot_targets(b, k, lay, 0, b.n)
            off, ids = host_folds.build_inverse(tgt, f.relation.size)
            if lay.stores:  # slots share stored values: index those (~stored: negated)
                ids = host_folds.shared_ids(ids, lay.per_row, lay.stored_per_row, lay.stores)
            place = slot_places.get(id(lay))
            if place is not None:  # slots are written pre-permuted: fold them in place
                b.args[place][ids] = np.arange(len(ids))
                ids = None
            elif len(tgt) < 2 ** 31:
                ids = ids.astype(np.int32)
            if len(tgt) < 2 ** 31:
                off = off.astype(np.int32)
            gathers.append((f, F, off, ids, vals, op, elem_of(f.type).is_bool, None))
        # what launch calls: the kernel, then `post` (boolean folds, the split's shared folds;
        # every fold when rows change), and leaves the other folds pending (see `launch`)
        parallel = not (self.force_serial or self.tier0) and b.n >= b.threshold
        if scheme in ("direct", "split"):
            b.fn, parallel = self.scatters[scheme], scheme == "split"
        else:
            b.fn = self.row_loops[self.mode(parallel)]
        b.call_args = b.row_args = (b.n, b.rows, b.has_rows, self.err) + b.args
        # (not under fast_math: LLVM could fuse a product into a TwoSum's addition)
        lanes_ok = bool(self.lane_offsets or self.chunk_ops) and scheme == "plain" \
            and not self.options.fast_math and (self.partials is None or
                                                self.partials.takes_lanes())
        # the grid's nested loops save the neighbours' index arithmetic; a kernel reading no
        # neighbour saves nothing there, while its float Global sums in lanes skip the slots'
        # exact fold (a dot product over 16k cells: ~40 us)
        box = self.grid_box(relation, subset, b) if scheme == "plain" and not (
            lanes_ok and not self.analysed.stencil) else None
        if box is not None:  # nested loops over the axes
            b.fn = self.grid_loops[self.mode(parallel)]
            b.call_args += box
        if scheme == "split":  # one partition of the rows for all fields
            ks = sorted(splits)  # (the kernel's `_own<k>`, `_shv<k>`, ascending k)
            mixed, places = ownership.combined([splits[k] for k in ks])
            b.call_args += (splits[ks[0]].bounds, mixed) + \
                tuple(a for k, pl in zip(ks, places) for a in (pl, split_shv[k]))
        b.parallel = parallel
        b.lanes = None
        if lanes_ok and box is None:  # (a stencil's nested loops, measured, save more)
            self.bind_lanes(b, global_vals)
        b.post, b.deferred, b.outstanding = [], [], 0
        b.debug = tuple(debug) if debug[0] is not None else None
        if b.debug is not None:  # checked first; the targets_<k> runs above recorded too
            b.debug[0].fill(0)
            b.post.append((self.check_debug, (b, relation, subset)))
        moves_rows = deleted is not None or bool(inserts)
        for f, F, off, ids, vals, op, is_bool, split_lay in gathers:
            if is_bool:
                fn = host_folds.gather_bool_parallel if parallel else host_folds.gather_bool_serial
                b.post.append((fn, (F, off, ids, vals, op)))
                continue
            if split_lay is not None:  # `off`: the Split; its shared rows only
                many = not self.force_serial and len(off.rows) >= max(
                    self.threshold, host_folds.SPARSE_PARALLEL_ROWS)
                fn = host_folds.gather_num_listed_parallel if many else \
                    host_folds.gather_num_listed_serial
                b.post.append((fn, (F, off.rows, off.off, vals, op)))
                if split_lay.conditional:  # slots a row may skip: back to the identity
                    b.post.append((vals.fill, (identity(split_lay.op,
                                                        elem_of(split_lay.target.type)),)))
                continue
            fn, args = self.gather_call(F, off, ids, vals, op, parallel)
            pf = host_folds.PendingFold(f, fn, args, op, (off, ids, vals), b)
            if moves_rows:  # rows move after this launch: fold now
                b.post.append((pf.fold, ()))
            else:
                b.deferred.append(pf)
        if moves_rows:
            b.post.append((row_changes.apply_flagged, (relation, deleted,
                                                       tuple(inserts.values()),
                                                       b.rows if b.has_rows else None,
                                                       self.row_sink)))
        b.post, b.deferred = tuple(b.post), tuple(b.deferred)
        b.folds = tuple(b.folds)
        # every Global it reads or reduces into, however (storage, slots, lanes, chunks): a
        # fold still pending into one runs before the launch (`launch`), or the lanes' values,
        # rounded from the Global's value, would replace it
        lanes_globals = () if b.lanes is None else \
            tuple(g for g, *_ in b.lanes.sums) + tuple(c.glob for c in b.lanes.chunks)
        b.globals = tuple({id(g): g for g in (
            *(p.glob for p in self.params if isinstance(p, GlobalStorage)),
            *(g for g, *_ in b.folds), *lanes_globals)}.values())
        self.bindings[subset] = b
        return b

    def bind_lanes(self, b, global_vals) -> None:
        """Make `b` call the lanes variant, its float64 Global sums no longer folded from
        slots (unless `lanes.LaneSums` needs them); a kernel with no other effect can be run
        again as bound so far, with its slots (`rerun`)."""
        layouts = self.analysed.layouts
        rerun = None
        if self.lanes_pure:  # (in tier 0 through its serial part function, not the plain
            # dispatcher: what a serial launch elsewhere calls, an MPI rank's, finds compiled)
            mode = self.mode(b.parallel)
            rerun = (self.row_loops["serial" if mode == "tier0" else mode], b.call_args)
        slot_folds = {id(lay): fold for _, fold, lay, _ in b.folds}
        chunk_folds = {k: slot_folds[id(layouts[k])] for k in self.chunk_ops}
        # chunks of at least twice the parallel threshold (a lower threshold, for heavy rows,
        # gives a small launch chunks enough for its threads)
        least = min(lane_sums.CHUNK_ROWS, 2 * max(1, b.threshold))
        b.lanes = lanes.make(layouts, self.lane_offsets, global_vals, b.n, rerun, chunk_folds,
                             least)
        b.fn, b.entry = self.lanes_fns[self.mode(b.parallel)], None
        b.call_args = b.row_args + (b.lanes.lanes,) + \
            tuple(a for c in b.lanes.chunks for a in c.arrays())
        folded = {id(layouts[k]) for k in (*self.lane_offsets, *self.chunk_ops)}
        b.folds = [f for f in b.folds if id(f[2]) not in folded]

    def grid_box(self, relation, subset, b):
        """(lo, hi) of the box of grid cells the launch runs over, when the kernel has grid
        loops for this grid and the launch space is such a box (else None)."""
        g = relation.grid
        if self.grid_loops is None or g is None or (len(g.shape), g.periodic) != self.grid \
                or g.shape[0] < self.grid_reach:
            return None
        return affine.launch_box(g, None if subset is None else b.rows)

    def slot_targets(self, b, k, lay, lo, hi) -> np.ndarray:
        """The target row of each slot of field layout k (-1: none) of binding `b`'s positions
        lo..hi - 1 (int32 where the rows fit). The split asks for a chunk of positions at a
        time (`ownership.split_chunks`): at miniFE 80^3 the whole binding's, 33M slots, took
        131 MB while binding."""
        tgt = np.full((hi - lo) * lay.per_row, -1, dtype=key_dtype(lay.target.relation.size))
        if (lo, hi) == (0, b.n):
            rows, has_rows = b.rows, b.has_rows
        elif b.has_rows:
            rows, has_rows = b.rows[lo:hi], True
        else:  # (read-only, as a subset's rows and a whole launch's empty ones: one signature)
            rows, has_rows = np.arange(lo, hi, dtype=np.int64), True
            rows.flags.writeable = False
        self.targets[k](hi - lo, rows, has_rows, self.err, *b.args, tgt)
        return tgt

    def scheme(self, b):
        """How this binding applies its key reductions into fields (`cpu_scatter.choose`)."""
        field_layouts = {k: lay for k, lay in enumerate(self.analysed.layouts)
                         if isinstance(lay.target, Field)}
        serial = self.force_serial or self.tier0 or b.n < b.threshold
        return cpu_scatter.choose(self.scatter, field_layouts, b.n, serial, self.nthreads(),
                                  lambda k, lay, lo, hi: self.slot_targets(b, k, lay, lo, hi),
                                  self.scatter_share)

    def nthreads(self) -> int:
        return self.threads or numba.get_num_threads()

    def gather_call(self, F, off, ids, vals, op, parallel):
        """The compiled fold of a key reduction's slots into field storage F (2-D view), and
        its arguments."""
        touched = np.flatnonzero(off[1:] != off[:-1])
        if 4 * len(touched) < F.shape[0]:
            # few target rows receive slots (boundary faces into cells): fold only those;
            # the others keep their value, as a fold of no slots would leave it
            # (serial unless large: a parallel region costs more than folding a few thousand
            # rows, up to milliseconds when other processes hold the cores)
            fn = host_folds.gather_num_rows_parallel if not (self.force_serial or self.tier0) \
                and len(touched) >= max(self.threshold, host_folds.SPARSE_PARALLEL_ROWS) \
                else host_folds.gather_num_rows_serial
            return fn, (F, touched, off, ids, vals, op)
        if F.shape[1] == 1 and F.flags.c_contiguous and vals.flags.c_contiguous:
            # a scalar field: 1-D views (so writes still go to the field's data)
            fn = host_folds.gather_num_scalar_parallel if parallel else \
                host_folds.gather_num_scalar_serial
            return fn, (F.reshape(-1), off, ids, vals.reshape(-1), op)
        fn = host_folds.gather_num_parallel if parallel else host_folds.gather_num_serial
        return fn, (F, off, ids, vals, op)

    @staticmethod
    def make_fold(lay, vals, b):
        g: Global = lay.target
        flat = g._data.reshape(-1)  # the fold runs from the Global's residency: not `data`
        if lay.op in ("argmin", "argmax"):
            return segment.CompiledFold(host_folds.fold_arg, (
                flat, g._row_data, vals, lay.per_row, b.rows, b.has_rows, lay.op == "argmin"))
        if semantics.sums_exactly(g, lay.op):  # independent of the order of the slots
            return exact_sum.fold_of(flat, vals)
        et = elem_of(g.type)
        fn = host_folds.fold_bool if et.is_bool else host_folds.fold_num
        return segment.CompiledFold(fn, (flat, vals, host_folds.OPS[lay.op]))

    def current(self, relation, subset) -> Binding:
        """The binding a launch over `relation` (or `subset`) would use now (`launch` tests
        the same inline: its hot path)."""
        b = self.bindings.get(subset)
        if b is None or b.epoch != epoch.value or b.size != relation.size:
            b = self.refresh(relation, subset, b)
        return b

    def refresh(self, relation, subset, b) -> Binding:
        """Re-bind if any relation's storage changed since `b` was bound (else keep `b`)."""
        versions = tuple(r.storage_version for r in self.relations) + (relation.size,
                                                                       self.nthreads())
        if b is None or b.versions != versions:
            b = self.rebind(relation, subset, b, versions)
        b.epoch = epoch.value
        b.size = relation.size
        b.device = base.on_device(self.host_fields)  # (attaching a device copy moves the epoch)
        return b

    def rebind(self, relation, subset, b, versions) -> Binding:
        """The binding for the arrays the fields hold now: the one kept from before, when it
        was made from the very arrays it would be made from now (value fields, keys, the
        groupings' builds, at the same sizes, and the same keys in them, unless it holds
        nothing computed from the keys: `free_of_keys`), else a new one. The binding replaced
        is kept in turn. (What a binding computes from keys, such as a scatter's plan, depends
        on the key arrays and their contents alone: keys change by a new array, or, when they
        follow a value field, in their array, moving the key field's version. So moving
        particles, whose `cell` keys change in their array, re-bind only the launches that
        computed something from the keys.)"""
        structure = tuple(r.size for r in self.relations) + versions[-2:]
        arrays, contents = self.bound_arrays(), self.key_contents()
        kept = self.kept.pop(subset, None)
        for old in (b, kept):  # (swapped twice since b's last launch: b's own arrays again)
            if old is not None and old.structure == structure and \
                    all(a is k for a, k in zip(arrays, old.arrays)) and \
                    (old.contents == contents or self.free_of_keys(old, subset)):
                old.versions, old.contents = versions, contents
                self.bindings[subset] = new = old
                break
        else:
            new = self.swap_keys(b, subset, structure, arrays, contents)
            if new is None:
                new = self.bind(relation, subset, versions)
                if self.self_tiering and tiers.start(self, new):
                    new = self.bind(relation, subset, versions)  # its serial variants meanwhile
                if self.self_tiering:
                    tiers.helpers_ahead(self, new)
            new.structure, new.arrays, new.versions = structure, arrays, versions
            new.contents = contents
            self.bindings[subset] = new
        for old in (b, kept):
            if old is not None and old is not new and old.structure == structure:
                self.kept[subset] = old
                break
        return new

    def swap_keys(self, b, subset, structure, arrays, contents):
        """A copy of binding `b` holding `arrays`, when they differ from its own in keys or
        groupings (particles binned again: new key arrays and cell lists each step) and
        nothing `b` holds was computed from those: its arguments taken again from the
        parameters, the rest (slots, lanes, folds, the launch's shape) kept; else None. A
        launch over the whole relation at the same sizes, on one process. (md, 500 atoms: a
        binding made anew took ~35 us a step.)"""
        if b is None or b.structure != structure or not self.free_of_keys(b, subset):
            return None
        changed = [k for k, (a, old) in enumerate(zip(arrays, b.arrays))
                   if a is not old or contents[k] != b.contents[k]]
        if not any(self.key_arrays[k] for k in changed):
            return None  # (value fields alone: a double buffer keeps both bindings instead)
        args = [mine if arg is None else arg
                for mine, arg in zip(b.args, map(stored_arg, self.params))]  # (slots kept)
        new = Binding()
        for name in Binding.__slots__:
            if hasattr(b, name):
                setattr(new, name, getattr(b, name))
        new.args = tuple(args)
        new.row_args = (b.n, b.rows, b.has_rows, self.err) + new.args
        new.call_args = new.row_args + b.call_args[len(b.row_args):]  # (lanes, a grid's box)
        new.entry = None
        if b.lanes is not None:  # (a captured step may hold b's: a copy)
            new.lanes = copy.copy(b.lanes)
            if b.lanes.rerun is not None:
                fn, rerun_args = b.lanes.rerun
                new.lanes.rerun = (fn, new.row_args + rerun_args[len(b.row_args):])
        return new

    def bound_arrays(self) -> tuple:
        """The arrays a binding is made from: the fields' storage (keys derived first, as
        binding does: a key field with keys to compute holds its stale array until then), the
        groupings' offsets (rebuilt first, when their keys changed)."""
        return tuple(f._data if f.is_key else f._stored() for f in self.array_fields) + \
            tuple(g.offsets() for g in self.groupings)

    def key_contents(self) -> tuple:
        """Per bound array (`bound_arrays`): the version of the keys it holds (0: a value
        field's), which moves when keys are computed again in the same array."""
        return tuple(f.version if f.is_key else 0 for f in self.array_fields) + \
            tuple(g.key_field.version for g in self.groupings)

    def followed_keys(self) -> tuple:
        """The key fields it reads, or groups by, that follow a value field
        (`KeyField.follow`: moving particles' cells), whose keys a captured step computes
        again in their arrays."""
        return tuple({id(k): k for k in ([f for f in self.array_fields if f.is_key] +
                                         [g.key_field for g in self.groupings])
                      if k.follows is not None}.values())

    def free_of_keys(self, b, subset) -> bool:
        """Whether binding `b` over `subset` (None: the whole relation) holds nothing computed
        from the keys' values (no reductions into fields through keys, row changes, prints or
        debug checks; the whole relation, on one process), so that it stays right when keys
        are computed again in their arrays, and may take new key arrays in (`swap_keys`)."""
        return self.swaps_keys and subset is None and self.partials is None and \
            not b.post and not b.deferred and b.prints is None and b.debug is None

    def can_keep_binding(self, subset) -> bool:
        """Whether the binding over `subset` now is `free_of_keys` (a captured step keeps it
        while the keys that follow a value field are computed again in their arrays)."""
        b = self.bindings.get(subset)
        return b is not None and self.free_of_keys(b, subset)

    def check_debug(self, b, relation, subset):
        """Debug mode, after the kernel: raise the lowest failed row's first failed check (the
        binding is dropped: the launch stopped before its folds and row changes)."""
        first, values = b.debug
        if first.any():
            self.bindings.pop(subset, None)
            self.kept.pop(subset, None)
            debug_checks.raise_first_failure(self.sites, self.analysed.kernel_name, relation,
                                             first, values, b.rows if b.has_rows else None)
