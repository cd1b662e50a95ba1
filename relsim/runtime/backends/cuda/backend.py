"""The `cuda` target: kernels compiled by numba-cuda (``pip install "relsim[cuda]"``), one thread
per row (a grid-stride loop), the same statement and expression lowering as the cpu
(`backends/cuda/rows.py`), so the same meaning as `interp`, bit for bit, where the device
computes the operations as the host does (docs/tutorials/gpu.md: math functions and FMA
contraction).

Launch path:
  1. bind once per iteration space and storage version: subset rows, groupings, slot arrays,
     insert/delete flags and the inverse index of every key reduction (slot targets computed on
     the device by `targets_<k>`, the index built on the host by `host_folds.build_inverse` and
     uploaded once per key version);
  2. the fields' device copies (`cuda_memory`: uploaded only when the host copy is newer) and
     Globals (uploaded when their value changed); run `kernel` / `kernel_rows`;
  3. key reductions into fields: `gather_<k>`, one thread per target row folding its slots in
     slot order (no atomics); written fields are marked device-newer (downloaded when the host
     reads them, or at once when `numpy()` handed their array out);
  4. Global reductions: folded on the device by `cuda_folds` (a few passes of reduction
     kernels; exact float sums through device exact accumulators) into the Global's device copy
     (`memory.GlobalCopy`) by the cpu's rules, downloaded only when the host reads the value;
     on several MPI ranks the slots are downloaded instead, for the layer's exact merge;
  5. rows inserted or deleted by the kernel: the flags come to the host (and the inserted
     values of key fields, and of fields whose host copy is newer), which keeps the relations'
     books (sizes, keys, subsets, groupings) in `relations.elastic`; the fields the device
     holds change there (`compaction`: a prefix sum numbers the surviving rows and the inserted
     slots, in the cpu's order), through their residencies' row hooks
     (`memory.DeviceCopy.keep_rows`, `resize_rows`, `write_rows`): no field crosses the bus.
     On several MPI ranks the layer moves rows between ranks: flags and values go to the host.

An array the device has no room for is a `DeviceMemoryError` (`memory.upload`).

Launches do not wait: a launch's index checks flag its own word of the device error log
(`memory.ErrorLog`), which is checked at the next download of anything (a host read of a field
or Global, print lines, row changes), at `rs.synchronize()` and at the end of the program;
the first failed launch's error is raised then, before anything downstream of it reaches the
host. So a time step whose values the host does not read copies nothing. With
`Config(debug=True)` the kernel is lowered with its debug checks (the shared lowering, as on the
cpu) into per-position arrays on the device, and each launch waits: after the queued launches'
errors, its first-failure array is downloaded and, when a row failed, the lowest row's first
check is raised (`debug_checks.raise_first_failure`), before any gather, fold or row change.
What a failed launch folded, and what the launches after it wrote, is marked invalid
(`ErrorLog.wrote`); what the failed launch stored stays, partial, as on the cpu. Not
yet on this target: nested grid loops, the cpu's direct/split scatter (every key reduction parks
its contributions in slots), streams other than the default one.
"""
from __future__ import annotations

import atexit
import functools
import os
import sys

import numpy as np

from ....errors import ConfigError
from ....relations.field import Field
from ...analysis import affine
from ...caches import lowered, modules
from ...folds import host_folds
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
)
from ...lowering.emit import unparse
from ..base import Backend, Launch, variant_note
from . import device, memory
from .rows import CudaLowerer

THREADS_PER_BLOCK = 256  # on a GPU; the simulator runs each thread as a Python thread
SIM_THREADS = 8
MAX_BLOCKS = 1 << 16  # the grid-stride loop covers any row count


def unavailable_reason() -> str | None:
    """Why target ``cuda`` cannot be offered here (None when `numba.cuda` can be found; it is
    imported when a kernel is first compiled for it)."""
    return _install_hint(device.missing())


def _install_hint(err: str | None) -> str | None:
    if err is None:
        return None
    return f"numba.cuda cannot be imported ({err}); install it: pip install \"relsim[cuda]\""


class CudaBackend(Backend):
    """Target ``cuda`` (registered when `numba.cuda` imports)."""

    name = "cuda"

    def unavailable(self) -> str | None:
        err = device.import_error()
        if err is not None:
            return _install_hint(err)
        if not device.simulated() and not device.cuda().is_available():
            return ("no CUDA GPU is available here (numba.cuda.is_available() is False); "
                    "NUMBA_ENABLE_CUDASIM=1 runs kernels in numba's CUDA simulator (slow: for "
                    "tests)")
        return None

    def synchronize(self) -> None:
        if device.import_error() is None and memory.ERRORS.kernels:
            device.cuda().synchronize()
            memory.ERRORS.check()

    def compile(self, analysed, options):
        _check_at_exit()
        why = self.unavailable()
        if why is not None:
            raise ConfigError(f"target 'cuda' is not available: {why}")
        sites = debug_checks.Sites() if options.debug else None
        note = variant_note(options, sites is not None)

        def lower():
            lowerer = CudaLowerer(analysed, debug=sites, fast_math=options.fast_math)
            return "# relsim generated kernel, for numba.cuda" + note + "\n" + \
                unparse(lowerer.module()) + "\n", lowerer.params.items

        source, params = lowered.lowered(analysed, options, "cuda" + note, lower,
                                               debug=sites is not None)
        mod = modules.module_for(source, options.cache_path(), "kernel_cuda")
        return CudaExecutable(analysed, params, mod, source, sites)


@functools.cache
def _check_at_exit() -> None:
    """At the end of the program (once a cuda kernel was compiled): the queued launches'
    errors, which no later read checked. A failure is written to stderr and ends the process
    with status 1 (an exception cannot propagate from here)."""
    def check():
        try:
            memory.ERRORS.check()
        except Exception as exc:  # noqa: BLE001 - reported, then the process fails
            sys.stderr.write(f"relsim: a queued cuda launch failed, found at exit: "
                             f"{type(exc).__name__}: {exc}\n")
            sys.stderr.flush()
            os._exit(1)

    atexit.register(check)


class _Binding:
    __slots__ = ("versions", "n", "rows", "has_rows", "rows_dev", "args", "gathers", "folds",
                 "deleted", "inserts", "debug", "prints", "outputs")


def _mirrored(field) -> bool:
    """Whether the device keeps `field`'s current values (its row changes are made there)."""
    r = field.residency
    return not field.is_key and isinstance(r, memory.DeviceCopy) and r.mirrors(field)


def _shape(n: int):
    """(blocks, threads per block) of a launch over n positions."""
    if device.simulated():
        return max(1, min(-(-n // SIM_THREADS), device.SIM_BLOCKS)), SIM_THREADS
    return max(1, min(-(-n // THREADS_PER_BLOCK), MAX_BLOCKS)), THREADS_PER_BLOCK


class CudaExecutable(Launch):
    distributable = True  # hands Global contributions and row changes to `partials`, `row_sink`

    def __init__(self, analysed, params, mod, source, sites=None):
        cuda = device.cuda()
        self.analysed = analysed
        self.sites = sites  # debug_checks.Sites of the debug variant (None: no checks)
        self.params = params
        self.source = source
        self.path = mod.__file__
        for fname in mod._FUNCTIONS:  # callees the kernels share (`EmitAlgebra.function`)
            if not hasattr(getattr(mod, fname), "py_func"):  # (a module executed before)
                setattr(mod, fname, cuda.jit(device=True)(getattr(mod, fname)))
        self.kernels = {False: cuda.jit(mod.kernel), True: cuda.jit(mod.kernel_rows)}
        self.targets, self.gathers = {}, {}
        for k, lay in enumerate(analysed.layouts):
            if lay.on_field:
                self.targets[k] = cuda.jit(getattr(mod, f"targets_{k}"))
                self.gathers[k] = cuda.jit(getattr(mod, f"gather_{k}"))
        self.relations = binding.relations_of(analysed, params)
        # fields the kernel writes on the device: its stores, and its key reductions (gathers)
        summary, passed = analysed.summary, {id(p.field) for p in params
                                             if isinstance(p, FieldStorage)}
        self.written = tuple(t for t in summary.targets() if id(t) in passed and
                             any(a.mode != "read" for a in summary.for_target(t)))
        self.bindings: dict = {}
        self.print_stmts = prints.sites(analysed.body)  # the kernel's print sites, in order

    # -- launching ------------------------------------------------------------------------
    def launch(self, relation, subset) -> None:
        versions = tuple(r.storage_version for r in self.relations) + (relation.size,)
        b = self.bindings.get(subset)
        if b is None or b.versions != versions:
            b = self.bind(relation, subset, versions)
        if b.n == 0:  # no rows: only the Globals' folds (a float sum still rounds the value)
            self.fold_globals(b)
            return
        args = [self.argument(p, a) for p, a in zip(self.params, b.args)]
        devs = {id(p.field): a for p, a in zip(self.params, args) if isinstance(p, FieldStorage)}
        mine = len(memory.ERRORS.kernels)  # this launch's place in the queue
        err = memory.ERRORS.word(self.analysed.kernel_name)
        self.kernels[b.has_rows][_shape(b.n)](b.n, b.rows_dev, b.has_rows, err, *args)
        memory.ERRORS.wrote(*b.outputs)
        if b.prints is not None:  # the rows' print lines, before any error of the launch
            self.write_prints(b, relation, mine)
        if b.debug is not None:
            self.check_debug(b, relation, subset, mine)
        for k, f, off, ids, vals in b.gathers:
            F = devs[id(f)]  # the copy the kernel saw (written since, if it stored to f)
            self.gathers[k][_shape(f.relation.size)](f.relation.size, F, off, ids, vals)
        for f in self.written:
            memory.written(f)
        self.fold_globals(b)
        if b.deleted is not None or b.inserts:
            self.change_rows(relation, b)

    def write_prints(self, b, relation, mine) -> None:
        """Download the print sites' arrays (kernels with prints only), write their lines,
        clear the flags on the device. (The launches queued before this one are checked
        first; its own error, if any, is raised at the next download.)"""
        memory.ERRORS.check(upto=mine)
        flags = [memory.download(f, "print", checked=False) for f in b.prints[0]]
        got = [[None if a is None else memory.download(a, "print", checked=False)
                for a in b.prints[i]] for i in (1, 2)]
        prints.emit(prints.lines(self.analysed.kernel_name, relation, self.print_stmts, flags,
                                 got[0], got[1], b.rows if b.has_rows else None),
                    self.print_sink)
        for f in b.prints[0]:
            f.copy_to_device(np.zeros(b.n, dtype=np.int8))

    def fold_globals(self, b) -> None:
        for g, dev, host, fold, lay in b.folds:
            if self.partials is None:
                fold.run()  # on the device, into the Global's device copy
                continue
            # on several ranks: the slots go to the layer's exact merge
            memory.download(dev, "slots", host)
            self.partials.collect(g, lay.op, host, lay.per_row, b.rows if b.has_rows else None)

    def check_debug(self, b, relation, subset, mine) -> None:
        """Debug mode (which waits for each launch): download the per-position first failed
        check and its value and raise the lowest row's (`debug_checks.raise_first_failure`;
        the binding is dropped), after the errors of the launches queued before this one."""
        memory.ERRORS.check(upto=mine)
        first_dev, values_dev = b.debug
        first = memory.download(first_dev, "debug", checked=False)
        if not first.any():
            return
        values = memory.download(values_dev, "debug", checked=False)
        memory.ERRORS.forget()
        self.bindings.pop(subset, None)  # the launch stopped before its folds and row changes
        debug_checks.raise_first_failure(self.sites, self.analysed.kernel_name, relation,
                                         first, values, b.rows if b.has_rows else None)

    def argument(self, p, bound):
        """The device array of parameter p (bound: what the binding holds for it, or None)."""
        if bound is not None:
            return bound
        if isinstance(p, FieldStorage):
            return memory.device_field(p.field)
        return memory.device_global(p.glob)

    def change_rows(self, relation, b) -> None:
        """The kernel's rs.delete / rs.insert (see the module docstring): the flags (and the
        inserted keys) come to the host, which keeps the relations' books (sizes, keys, subsets,
        groupings); the fields' values change on the device (`compaction`), except where the
        host copy is newer, and on several ranks, whose layer moves rows between them."""
        from . import compaction
        if self.row_sink is not None:
            return self.change_rows_on_host(relation, b)
        deleted = None if b.deleted is None else memory.download(b.deleted, "rows")
        inserts, on_device = [], []
        for rel, flags_dev, values_dev, per_row in b.inserts:
            flags = memory.download(flags_dev, "rows")
            count = int(np.count_nonzero(flags))
            if not count:
                continue
            dev = {f: v for f, v in values_dev.items() if _mirrored(f)}
            inserts.append((rel, flags, {f: memory.download(v, "rows") for f, v in
                                         values_dev.items() if f not in dev}, per_row))
            on_device.append((rel, flags_dev, count, dev))
        if deleted is not None and deleted.any():
            keep = ~deleted
            count = int(np.count_nonzero(keep))
            pos = compaction.row_map(b.deleted, False, len(deleted))
            memory.expect_row_map(relation, keep, pos, count)  # for DeviceCopy.keep_rows
            compaction.zero(b.deleted)
        elif not inserts:
            return
        # the books, and the values the host keeps; the fields the device keeps are compacted
        # and resized by their residencies (`memory.DeviceCopy.keep_rows`, `resize_rows`). A
        # change the data model refuses (a DataError) discards the launch's row changes: the
        # flags are cleared either way.
        try:
            row_changes.apply_flagged(relation, deleted, tuple(inserts),
                                      b.rows if b.has_rows else None, None)
            for rel, flags_dev, count, values in on_device:
                pos = compaction.row_map(flags_dev, True, flags_dev.shape[0])
                start = rel.size - count  # the inserted rows are the relation's last
                for f, vals in values.items():  # (still mirrored: the resize kept them so)
                    compaction.compact(vals, pos, count, start, out=f.residency.dev)
                    memory.written(f)
        finally:
            memory.forget_row_map()
            for _, flags_dev, _, _ in on_device:
                compaction.zero(flags_dev)

    def change_rows_on_host(self, relation, b) -> None:
        """Row changes through the host, for the distributed layer's `row_sink`: the flags and
        values downloaded, the flags cleared on the device."""
        from . import compaction
        deleted = None if b.deleted is None else memory.download(b.deleted, "rows")
        inserts = []
        for rel, flags_dev, values_dev, per_row in b.inserts:
            flags = memory.download(flags_dev, "rows")
            values = {f: memory.download(v, "rows") for f, v in values_dev.items()}
            inserts.append((rel, flags, values, per_row))
        if (deleted is None or not deleted.any()) and not any(f.any() for _, f, _, _ in inserts):
            return
        row_changes.apply_flagged(relation, deleted, tuple(inserts),
                                  b.rows if b.has_rows else None, self.row_sink)
        if b.deleted is not None:
            compaction.zero(b.deleted)
        for _, flags_dev, _, _ in b.inserts:
            compaction.zero(flags_dev)

    # -- binding --------------------------------------------------------------------------
    def slots_name(self, lay) -> str:
        """How a DeviceMemoryError names reduction layout `lay`'s slots."""
        t = lay.target
        into = f"field {t.qualname}" if isinstance(t, Field) else \
            (f"Global {t.name!r}" if t.name else "a Global")
        return f"the reduction slots of kernel {self.analysed.kernel_name!r} into {into}"

    def bind(self, relation, subset, versions) -> _Binding:
        from . import folds as cuda_folds
        b = _Binding()
        b.versions = versions
        b.n = relation.size if subset is None else len(subset.rows)
        b.has_rows = subset is not None
        b.rows = subset.rows if b.has_rows else np.zeros(0, dtype=np.int64)
        b.rows_dev = memory.upload(b.rows, "rows")
        affine.check_launch_space(self.analysed, relation, b.rows if b.has_rows else None)
        args, slots, b.deleted, inserts, debug = [], {}, None, {}, [None, None]
        b.prints = None if not self.print_stmts else tuple(  # on the device
            [None if a is None else memory.upload(a, "print") for a in part]
            for part in prints.new_arrays(self.print_stmts, b.n))
        for p in self.params:
            match p:
                case FieldStorage() | GlobalStorage():  # current at each launch
                    args.append(None)
                case GroupOffsets(grouping=g):
                    args.append(memory.upload(g.arrays()[0], "grouping"))
                case GroupRows(grouping=g):
                    args.append(memory.upload(g.arrays()[1], "grouping"))
                case ReductionSlots(layout=lay):
                    host = binding.slot_array(lay, b.n)
                    slots[id(lay)] = host
                    args.append(memory.upload(host, "slots", what=self.slots_name(lay)))
                case DeleteFlags():
                    b.deleted = memory.zeros(relation.size, bool, "the deleted-row flags")
                    args.append(b.deleted)
                case RelationSize(relation=r):  # bound: the versions include every size
                    args.append(memory.upload(np.array([r.size], dtype=np.int64), "rows"))
                case GridShape(relation=r):
                    args.append(memory.upload(np.array(r.grid.shape + r.grid.strides,
                                                       dtype=np.int64), "rows"))
                case DebugFirst():
                    debug[0] = memory.upload(np.zeros(b.n, dtype=np.int32), "debug")
                    args.append(debug[0])
                case PrintFlags(site=k):
                    args.append(b.prints[0][k])
                case PrintValues(site=k, kind=kind):
                    args.append(b.prints[prints.PART[kind]][k])
                case DebugValues():
                    debug[1] = memory.upload(np.zeros((b.n, 1 + debug_checks.OPERANDS)),
                                             "debug")  # the value a check saw, its operands
                    args.append(debug[1])
                case InsertFlags(index=k, layout=lay):
                    flags = memory.zeros(b.n * lay.per_row, bool, "the insert flags")
                    inserts.setdefault(k, [lay.target, None, {}, lay.per_row])[1] = flags
                    args.append(flags)
                case InsertValues(index=k, layout=lay, field=f):
                    vals = memory.zeros((b.n * lay.per_row, f.type.ncomp), f._stored().dtype,
                                        f"the inserted values of {f.qualname}")
                    inserts.setdefault(k, [lay.target, None, {}, lay.per_row])[2][f] = vals
                    args.append(vals)
                case _:
                    raise TypeError(f"cuda backend: no binding for parameter {p!r}")
        b.args = tuple(args)
        b.debug = tuple(debug) if debug[0] is not None else None
        b.inserts = tuple(tuple(v) for v in inserts.values())
        b.gathers, b.folds = [], []
        for k, lay in enumerate(self.analysed.layouts):
            host = slots.get(id(lay))
            if host is None:  # the kernel never reaches this reduction
                continue
            vals = args[[i for i, p in enumerate(self.params)
                         if isinstance(p, ReductionSlots) and p.layout is lay][0]]
            if not isinstance(lay.target, Field):
                b.folds.append((lay.target, vals, host, cuda_folds.DeviceFold(
                    lay, vals, b.rows, b.has_rows, b.rows_dev), lay))
                continue
            tgt = memory.upload(np.full(b.n * lay.per_row, -1, dtype=np.int64), "targets",
                                     what=f"the slot targets of {self.slots_name(lay)}")
            launch_args = [self.argument(p, a) for p, a in zip(self.params, b.args)]
            self.targets[k][_shape(b.n)](b.n, b.rows_dev, b.has_rows,
                                         memory.ERRORS.word(self.analysed.kernel_name),
                                         *launch_args, tgt)
            tgt = memory.download(tgt, "index")
            off, ids = host_folds.build_inverse(tgt, lay.target.relation.size)
            if lay.stores:  # slots share stored values: index those (~stored: negated)
                ids = host_folds.shared_ids(ids, lay.per_row, lay.stored_per_row, lay.stores)
            b.gathers.append((k, lay.target, memory.upload(off, "index"),
                              memory.upload(ids, "index"), vals))
        folded = tuple(f for _, f, *_ in b.gathers) + tuple(g for g, *_ in b.folds)
        b.outputs = (tuple(f for f in self.written if all(f is not r for r in folded)), folded)
        if b.debug is not None:  # the targets_<k> runs above recorded too: the kernel will
            b.debug[0].copy_to_device(np.zeros(b.n, dtype=np.int32))
        self.bindings[subset] = b
        return b
