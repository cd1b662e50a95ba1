"""The `cpu` backend: Numba, `parallel=True` with `prange` for large iteration spaces, a serial
variant for small ones (identical results: nothing depends on the order rows run in).

Launch path (kept lean: no analysis, no argument rebuilding unless storage changed):
  1. re-bind arrays if any relation's storage changed (and rebuild the slot inverse indexes);
     checked through the global storage epoch first, so an unchanged launch costs one compare;
  2. call the serial or parallel kernel (chosen, with its argument tuple, at bind time);
  3. leave the folds of its reduction slots pending: a Global's until its value is next needed
     (`Global.defer`), a field's until the next launch that touches the field (`Field.defer`),
     which absorbs them (folding each row first, in a compiled variant) when it touches the
     field only at its own key over the whole relation, and otherwise folds them before it runs
     (`settle`); the host and relsim internals fold them on access (`Field.data`).
"""
from __future__ import annotations

import ast

import numba
import numpy as np
from numba import njit

from ...errors import ConfigError, KernelRuntimeError
from ...relations import launch as _launch
from ...relations.field import Field
from ...relations.globals import Global
from .. import affine, cache, row_changes
from ..lowering import KernelLowerer
from ..slots import identity
from ..typecheck import elem_of
from . import cpu_folds
from .base import Backend

_EMPTY_ROWS = np.zeros(0, dtype=np.int64)


class CpuBackend(Backend):
    name = "cpu"

    def compile(self, analysed, options):
        lowerer = KernelLowerer(analysed)
        module_ast = lowerer.module()
        source = f"# relsim kernel {analysed.kernel_name!r} over {analysed.relation.name}\n" + \
            ast.unparse(module_ast) + "\n"
        mod = cache.module_for(source, options.cache_path(), _safe(analysed.kernel_name))
        return CpuExecutable(analysed, lowerer.params.items, mod, source, options)


def _apply_row_changes(relation, deleted, inserts) -> None:
    """Deleted rows go (order kept), then flagged insert slots become rows, in slot order;
    the flag arrays are cleared for the next launch."""
    cols_by_rel = {}
    for rel, flags, values in inserts:
        picked = np.flatnonzero(flags)
        cols = {f.name: vals[picked].reshape((len(picked),) + f.type.shape)
                for f, vals in values.items()}
        cols_by_rel[rel] = (len(picked), cols)
        flags[:] = False
    mask = None
    if deleted is not None:
        mask = deleted.copy()
        deleted[:] = False
    row_changes.apply(relation, mask, cols_by_rel)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)[:40]


class _Binding:
    """Arrays bound for one iteration space (the whole relation or one subset)."""
    __slots__ = ("versions", "epoch", "size", "args", "n", "rows", "has_rows", "folds", "fn",
                 "call_args", "post", "globals", "parallel", "deferred", "outstanding")


class CpuExecutable:
    def __init__(self, analysed, params, mod, source, options):
        self.analysed = analysed
        self.params = params
        self.source = source
        self.path = mod.__file__
        flags = dict(cache=True, error_model="numpy", boundscheck=False)
        # keyed by "is the launch over a subset": dispatchers compile on first call only
        self.serial = {False: njit(**flags)(mod.kernel_serial),
                       True: njit(**flags)(mod.kernel_serial_rows)}
        self.parallel = {False: njit(parallel=True, **flags)(mod.kernel_parallel),
                         True: njit(parallel=True, **flags)(mod.kernel_parallel_rows)}
        self.targets = {k: njit(parallel=True, **flags)(getattr(mod, f"targets_{k}"))
                        for k in range(len(analysed.layouts))
                        if hasattr(mod, f"targets_{k}")}
        self.force_serial = options.target == "cpu-serial"
        self.threads = options.threads
        if self.threads is not None and self.threads > numba.config.NUMBA_NUM_THREADS:
            raise ConfigError(f"threads={self.threads} exceeds the Numba thread pool "
                              f"({numba.config.NUMBA_NUM_THREADS}); set NUMBA_NUM_THREADS")
        self.threshold = options.parallel_threshold
        rels = {id(analysed.relation): analysed.relation}
        for _, kind, obj in params:
            if kind == "field":
                rels[id(obj.relation)] = obj.relation
            elif kind in ("goff", "grows"):
                rels[id(obj.source)] = obj.source
                rels[id(obj.target)] = obj.target
        self.relations = tuple(rels.values())
        self.options = options
        self.absorbing_fns: dict = {}
        # fields whose key reductions this kernel folds; fields it reads or writes, and whether
        # it could absorb their pending reductions (numeric, only at its own key, same relation)
        self.gather_fields = tuple(lay.target for lay in analysed.layouts
                                   if isinstance(lay.target, Field))
        self.touched = []
        for t in analysed.summary.targets():
            if not isinstance(t, Field) or t.is_key:
                continue
            acc = analysed.summary.for_target(t)
            if all(a.mode == "reduce" and not a.centred for a in acc):
                continue  # only reduced into through keys: its folds queue behind pending ones
            absorbable = all(a.centred for a in acc) and t.relation is analysed.relation and \
                all(t is not g for g in self.gather_fields) and not elem_of(t.type).is_bool
            self.touched.append((t, absorbable))
        self.bindings: dict = {}
        self.err = np.zeros(1, dtype=np.int64)  # set to a source line by a failed index check
        self.err_view = memoryview(self.err)  # reads err[0] as a Python int, cheaply

    # -- launching ------------------------------------------------------------------------
    def launch(self, relation, subset) -> None:
        if self.threads is not None and numba.get_num_threads() != self.threads:
            return self.launch_with_threads(relation, subset)
        b = self.bindings.get(subset)
        if b is None or b.epoch != _launch.storage_epoch or b.size != relation.size:
            b = self.refresh(relation, subset, b)
        for g in b.globals:  # read here, or reduced into (folds keep launch order)
            if g.pending is not None:
                g.flush()
        if _launch.pending_fields or b.outstanding:
            fn, args = self.settle(b)
        else:
            fn, args = b.fn, b.call_args
        fn(*args)
        if self.err_view[0]:
            self.raise_flagged(self.err)
        for fn, args in b.post:
            fn(*args)
        for pf in b.deferred:  # key-reduction folds: left pending unless the field is exposed
            if pf.field.exposed:
                pf.fold()
            else:
                pf.field.defer(pf)
                b.outstanding += 1
        for g, fold in b.folds:
            g.defer(fold)

    def settle(self, b):
        """Before a launch, with reductions pending somewhere: fold this kernel's own pending
        slots (about to be overwritten), and the pending reductions into every field it reads
        or writes: folded now, or, for a field it touches only at its own key while running
        over the whole relation, absorbed (the kernel folds each row first, as it goes).
        Returns the function to call and its arguments."""
        if b.outstanding:
            for f in self.gather_fields:
                f.flush()
        absorbing = []
        for f, absorbable in self.touched:
            if f.pending:
                if absorbable and not b.has_rows:
                    absorbing.append(f)
                else:
                    f.flush()
        if not absorbing:
            return b.fn, b.call_args
        pending = [pf for f in absorbing for pf in f.pending]
        folds = tuple((pf.field, cpu_folds.OP_NAMES[pf.op], pf.absorb_args[1] is not None)
                      for pf in pending)
        fn = self.absorbing(folds, b.parallel)  # compiled before the folds leave their fields
        for f in absorbing:
            for pf in f.take_pending():
                pf.owner.outstanding -= 1
        return fn, b.call_args + tuple(a for pf in pending for a in pf.absorb_args)

    def absorbing(self, folds, parallel):
        """The kernel (over a whole relation) that first folds, row by row, pending reductions
        passed as extra arguments (`folds`: their operators and shapes; compiled once each)."""
        key = (tuple((f.name, op, has_ids) for f, op, has_ids in folds), parallel)
        fn = self.absorbing_fns.get(key)
        if fn is None:
            lowerer = KernelLowerer(self.analysed, absorb=folds)
            source = f"# relsim kernel {self.analysed.kernel_name!r} over " \
                f"{self.analysed.relation.name}, folding pending reductions first\n" + \
                ast.unparse(lowerer.module()) + "\n"
            if [p for p, _, _ in lowerer.params.items] != [p for p, _, _ in self.params]:
                raise AssertionError("absorbing variant lowered with different parameters")
            mod = cache.module_for(source, self.options.cache_path(),
                                   _safe(self.analysed.kernel_name) + "_absorb")
            flags = dict(cache=True, error_model="numpy", boundscheck=False)
            fn = njit(parallel=parallel, **flags)(
                mod.kernel_parallel if parallel else mod.kernel_serial)
            self.absorbing_fns[key] = fn
        return fn

    def launch_with_threads(self, relation, subset) -> None:
        """A launch under a Config with its own thread count (restored afterwards)."""
        before = numba.get_num_threads()
        numba.set_num_threads(self.threads)
        try:
            self.launch(relation, subset)
        finally:
            numba.set_num_threads(before)

    def refresh(self, relation, subset, b) -> _Binding:
        """Re-bind if any relation's storage changed since `b` was bound (else keep `b`)."""
        versions = tuple(r.storage_version for r in self.relations) + (relation.size,)
        if b is None or b.versions != versions:
            b = self.bind(relation, subset, versions)
        b.epoch = _launch.storage_epoch
        b.size = relation.size
        return b

    def raise_flagged(self, err):
        line = int(err[0])
        err[0] = 0
        raise KernelRuntimeError(f"in kernel {self.analysed.kernel_name!r}: index out of range "
                                 f"at line {line} (for at least one row)")

    def bind(self, relation, subset, versions) -> _Binding:
        b = _Binding()
        b.versions = versions
        b.n = relation.size if subset is None else len(subset.rows)
        b.rows = _EMPTY_ROWS if subset is None else subset.rows
        b.has_rows = subset is not None
        args, slot_arrays, slot_places, inserts, deleted = [], {}, {}, {}, None
        for _pname, kind, obj in self.params:
            if kind == "field":  # the storage itself: pending reductions stay pending
                args.append(obj._data)
            elif kind == "global":
                args.append(obj.data)
            elif kind == "goff":
                args.append(obj.arrays()[0])
            elif kind == "grows":
                args.append(obj.arrays()[1])
            elif kind == "slots":
                arr = self.slot_array(obj, b.n)
                slot_arrays[id(obj)] = arr
                args.append(arr)
            elif kind == "spos":  # filled below, once the targets are known
                nslots = b.n * obj.per_row
                args.append(np.empty(nslots, dtype=np.int32 if nslots < 2 ** 31 else np.int64))
                slot_places[id(obj)] = args[-1]
            elif kind == "delete":
                args.append(np.zeros(relation.size, dtype=bool))
                deleted = args[-1]
            elif kind.startswith("ins"):  # insert flags / values: one entry per slot
                k = int(kind[3:].split("f")[0].split("v")[0])
                lay = self.analysed.inserts[k]
                nslots = b.n * lay.per_row
                if kind.endswith("flag"):
                    args.append(np.zeros(nslots, dtype=bool))
                    inserts[k] = (lay.target, args[-1], {})
                else:
                    args.append(np.zeros((nslots, obj.type.ncomp), dtype=obj.data.dtype))
                    inserts.setdefault(k, (lay.target, None, {}))[2][obj] = args[-1]
        b.args = tuple(args)
        affine.check_launch_space(self.analysed, relation, None if subset is None else b.rows)
        gathers, b.folds = [], []
        for k, lay in enumerate(self.analysed.layouts):
            vals = slot_arrays.get(id(lay))
            if vals is None:  # the kernel never reaches this reduction: nothing to fold
                vals = self.slot_array(lay, b.n)
            op = cpu_folds.OPS.get(lay.op)
            if isinstance(lay.target, Field):
                f = lay.target
                tgt = np.full(b.n * lay.per_row, -1, dtype=np.int64)
                self.targets[k](b.n, b.rows, b.has_rows, self.err, *b.args, tgt)
                off, ids = cpu_folds.build_inverse(tgt, f.relation.size)
                if lay.stores:  # slots share stored values: index those (~stored: negated)
                    ids = cpu_folds.shared_ids(ids, lay.per_row, lay.stored_per_row,
                                               lay.stores)
                place = slot_places.get(id(lay))
                if place is not None:  # slots are written pre-permuted: fold them in place
                    place[ids] = np.arange(len(ids))
                    ids = None
                elif len(tgt) < 2 ** 31:
                    ids = ids.astype(np.int32)
                if len(tgt) < 2 ** 31:
                    off = off.astype(np.int32)
                F = f._data.reshape(f.relation.size, -1)
                gathers.append((f, F, off, ids, vals, op, elem_of(f.type).is_bool))
            else:
                b.folds.append((lay.target, self.make_fold(lay, vals, b)))
        # what launch calls: the kernel, then `post` (boolean folds; every fold when rows change),
        # and leaves the other folds pending (see `launch`)
        parallel = not self.force_serial and b.n >= self.threshold
        b.fn = (self.parallel if parallel else self.serial)[b.has_rows]
        b.call_args = (b.n, b.rows, b.has_rows, self.err) + b.args
        b.parallel = parallel
        b.post, b.deferred, b.outstanding = [], [], 0
        row_changes = deleted is not None or bool(inserts)
        for f, F, off, ids, vals, op, is_bool in gathers:
            if is_bool:
                fn = cpu_folds.gather_bool_parallel if parallel else cpu_folds.gather_bool_serial
                b.post.append((fn, (F, off, ids, vals, op)))
                continue
            fn, args = self.gather_call(F, off, ids, vals, op, parallel)
            pf = cpu_folds.PendingFold(f, fn, args, op, (off, ids, vals), b)
            if row_changes:  # rows move after this launch: fold now
                b.post.append((pf.fold, ()))
            else:
                b.deferred.append(pf)
        if row_changes:
            b.post.append((_apply_row_changes, (relation, deleted, tuple(inserts.values()))))
        b.post, b.deferred = tuple(b.post), tuple(b.deferred)
        b.folds = tuple(b.folds)
        b.globals = tuple({id(o): o for _, kind, o in self.params if kind == "global"}.values()) \
            + tuple(g for g, _ in b.folds)
        self.bindings[subset] = b
        return b

    def gather_call(self, F, off, ids, vals, op, parallel):
        """The compiled fold of a key reduction's slots into field storage F (2-D view), and
        its arguments."""
        touched = np.flatnonzero(off[1:] != off[:-1])
        if 4 * len(touched) < F.shape[0]:
            # few target rows receive slots (boundary faces into cells): fold only those;
            # the others keep their value, as a fold of no slots would leave it
            # (serial unless large: a parallel region costs more than folding a few thousand
            # rows, up to milliseconds when other processes hold the cores)
            fn = cpu_folds.gather_num_rows_parallel if not self.force_serial and len(touched) \
                >= max(self.threshold, cpu_folds.SPARSE_PARALLEL_ROWS) \
                else cpu_folds.gather_num_rows_serial
            return fn, (F, touched, off, ids, vals, op)
        if F.shape[1] == 1 and F.flags.c_contiguous and vals.flags.c_contiguous:
            # a scalar field: 1-D views (so writes still go to the field's data)
            fn = cpu_folds.gather_num_scalar_parallel if parallel else \
                cpu_folds.gather_num_scalar_serial
            return fn, (F.reshape(-1), off, ids, vals.reshape(-1), op)
        fn = cpu_folds.gather_num_parallel if parallel else cpu_folds.gather_num_serial
        return fn, (F, off, ids, vals, op)

    def slot_array(self, lay, n):
        t = lay.target.type
        et = elem_of(t)
        arr = np.empty((n * lay.stored_per_row, t.ncomp), dtype=et.dtype)
        arr.fill(identity(lay.op, et))
        return arr

    @staticmethod
    def make_fold(lay, vals, b):
        g: Global = lay.target
        flat = g._data.reshape(-1)  # the fold runs inside `g.flush`: not the flushing `data`
        if lay.op in ("argmin", "argmax"):
            rows, has_rows, per_row, is_min = b.rows, b.has_rows, lay.per_row, lay.op == "argmin"
            return lambda: cpu_folds.fold_arg(flat, g._row_data, vals, per_row, rows, has_rows,
                                              is_min)
        op = cpu_folds.OPS[lay.op]
        fn = cpu_folds.fold_bool if elem_of(g.type).is_bool else cpu_folds.fold_num
        return lambda: fn(flat, vals, op)
