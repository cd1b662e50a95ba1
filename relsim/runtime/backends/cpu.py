"""The `cpu` backend: Numba, `parallel=True` with `prange` for large iteration spaces, a serial
variant for small ones (identical results: nothing depends on the order rows run in).

Launch path (kept lean: no analysis, no argument rebuilding unless storage changed):
  1. re-bind arrays if any relation's storage changed (and rebuild the slot inverse indexes);
  2. call the serial or parallel kernel;
  3. fold key-reduction slots into their fields, and Global slots into their Globals.
"""
from __future__ import annotations

import ast

import numpy as np
from numba import njit

from ...errors import KernelRuntimeError
from ...relations.field import Field
from ...relations.globals import Global
from .. import cache
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


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)[:40]


class _Binding:
    """Arrays bound for one iteration space (the whole relation or one subset)."""
    __slots__ = ("versions", "args", "n", "rows", "has_rows", "gathers", "folds")


class CpuExecutable:
    def __init__(self, analysed, params, mod, source, options):
        self.analysed = analysed
        self.params = params
        self.source = source
        self.path = mod.__file__
        flags = dict(cache=True, error_model="numpy", boundscheck=False)
        self.serial = njit(**flags)(mod.kernel_serial)
        self._parallel_py = mod.kernel_parallel
        self._parallel = None
        self.targets = {k: njit(parallel=True, **flags)(getattr(mod, f"targets_{k}"))
                        for k in range(len(analysed.layouts))
                        if hasattr(mod, f"targets_{k}")}
        self.force_serial = options.target == "cpu-serial"
        self.threshold = options.parallel_threshold
        rels = {id(analysed.relation): analysed.relation}
        for _, kind, obj in params:
            if kind == "field":
                rels[id(obj.relation)] = obj.relation
            elif kind in ("goff", "grows"):
                rels[id(obj.source)] = obj.source
                rels[id(obj.target)] = obj.target
        self.relations = tuple(rels.values())
        self.bindings: dict = {}
        self.err = np.zeros(1, dtype=np.int64)  # set to a source line by a failed index check

    @property
    def parallel(self):
        if self._parallel is None:
            self._parallel = njit(cache=True, error_model="numpy", boundscheck=False,
                                  parallel=True)(self._parallel_py)
        return self._parallel

    # -- launching ------------------------------------------------------------------------
    def launch(self, relation, subset) -> None:
        b = self.bindings.get(subset)
        versions = tuple(r.storage_version for r in self.relations) + (relation.size,)
        if b is None or b.versions != versions:
            b = self.bind(relation, subset, versions)
        parallel = not self.force_serial and b.n >= self.threshold
        err = self.err
        (self.parallel if parallel else self.serial)(b.n, b.rows, b.has_rows, err, *b.args)
        if err[0]:
            self.raise_flagged(err)
        for F, off, ids, vals, op, is_bool in b.gathers:
            if is_bool:
                (cpu_folds.gather_bool_parallel if parallel else
                 cpu_folds.gather_bool_serial)(F, off, ids, vals, op)
            else:
                (cpu_folds.gather_num_parallel if parallel else
                 cpu_folds.gather_num_serial)(F, off, ids, vals, op)
        for fold in b.folds:
            fold()

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
        args, slot_arrays = [], {}
        for pname, kind, obj in self.params:
            if kind == "field":
                args.append(obj.data)
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
        b.args = tuple(args)
        b.gathers, b.folds = [], []
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
                F = f.data.reshape(f.relation.size, -1)
                b.gathers.append((F, off, ids, vals, op, elem_of(f.type).is_bool))
            else:
                b.folds.append(self.make_fold(lay, vals, b))
        self.bindings[subset] = b
        return b

    def slot_array(self, lay, n):
        t = lay.target.type
        et = elem_of(t)
        arr = np.empty((n * lay.per_row, t.ncomp), dtype=et.dtype)
        arr.fill(identity(lay.op, et))
        return arr

    @staticmethod
    def make_fold(lay, vals, b):
        g: Global = lay.target
        flat = g.data.reshape(-1)
        if lay.op in ("argmin", "argmax"):
            rows, has_rows, per_row, is_min = b.rows, b.has_rows, lay.per_row, lay.op == "argmin"
            return lambda: cpu_folds.fold_arg(flat, g.row_data, vals, per_row, rows, has_rows,
                                              is_min)
        op = cpu_folds.OPS[lay.op]
        fn = cpu_folds.fold_bool if elem_of(g.type).is_bool else cpu_folds.fold_num
        return lambda: fn(flat, vals, op)
