"""The `interp` backend: executes the typed IR directly in Python, one row at a time, in
ascending row order. Slow and obvious; the oracle the compiled backends are tested against.

Scalars are NumPy scalars of the exact type; math goes through the C library (as compiled code
does); reductions fold each contribution immediately, which is the serial meaning by definition.
With `Config(debug=True)` it runs the debug checks (`debug_checks`) and raises at the first that
fails: that row is the lowest failing one, since rows run in ascending order.
"""
from __future__ import annotations

import numpy as np

from ...errors import KernelRuntimeError
from ...relations.field import Field
from ...relations.globals import Global
from ...types import KeyType, KeyVecType, ScalarType, TupleType, elem_of
from .. import ir, semantics
from ..analysis import affine
from ..folds import exact_sum
from ..host import prints, row_changes
from ..host.debug_checks import OriginChecks, Site, contributed, float_code, written
from ..numpy_algebra import NumpyAlgebra
from . import base
from .base import Backend, Launch


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Return(Exception):
    pass


class InterpExecutable(Launch):
    """Runs the typed IR row by row (generates nothing: `source` and `path` are None)."""

    distributable = True  # hands Global contributions and row changes to `partials`, `row_sink`

    def __init__(self, analysed, debug: bool = False):
        self.a = self.analysed = analysed
        self.alg = NumpyAlgebra()
        self.debug = debug
        self.print_site = {id(s): k for k, s in enumerate(prints.sites(analysed.body))}

    def launch(self, relation, subset) -> None:
        base.bring_to_host(t for t in self.a.summary.targets() if isinstance(t, Field))
        self.relation = relation
        rows = range(relation.size) if subset is None else subset.rows
        affine.check_launch_space(self.a, relation, None if subset is None else subset.rows)
        self.deleted = np.zeros(relation.size, dtype=bool) if self.a.deletes else None
        self.inserted = {lay.target: [] for lay in self.a.inserts}
        self.sources = {lay.target: [] for lay in self.a.inserts}  # each inserted row's row
        # float Global sums are exact: their contributions are summed at the end (every such
        # Global, also one no row reaches: the exact sum of its value alone may differ, -0.0)
        self.sums = {lay.target: [[] for _ in range(lay.target.type.ncomp)]
                     for lay in self.a.layouts
                     if isinstance(lay.target, Global)
                     and semantics.sums_exactly(lay.target, lay.op)}
        self.given = None if self.partials is None else {
            lay.target: ([], []) for lay in self.a.layouts if isinstance(lay.target, Global)}
        self.printed = []  # (row, print site, line): written after the launch, in row order
        try:
            with np.errstate(all="ignore"):
                for row in rows:
                    env = {}
                    self.row = int(row)
                    try:
                        self.block(self.a.body, env)
                    except _Return:
                        pass
        finally:  # (also the lines before an error, as the compiled targets write them)
            self.printed.sort(key=lambda p: (p[0], p[1]))
            prints.emit(self.printed, self.print_sink)
        if self.given is not None:
            self.hand_over()
            self.sums = {}
        for g, comps in self.sums.items():
            flat = g.data.reshape(-1)
            for c, contributions in enumerate(comps):
                flat[c] = exact_sum.exact_sum_reference([flat[c]] + contributions, flat.dtype)
        if self.row_sink is not None:
            self.row_sink.record(
                None if self.deleted is None else np.flatnonzero(self.deleted),
                [(rel, np.array(self.sources[rel], dtype=np.int64), _columns(rel, rows_)[1])
                 for rel, rows_ in self.inserted.items()])
            return
        row_changes.apply(relation, self.deleted, {
            rel: _columns(rel, rows_) for rel, rows_ in self.inserted.items()})

    def hand_over(self) -> None:
        """Give the Global contributions, in row order, to the distributed layer."""
        ops = {lay.target: lay.op for lay in self.a.layouts}
        for g, (rows, values) in self.given.items():
            vals = np.array(values, dtype=g.type.dtype).reshape(len(values), g.type.ncomp)
            self.partials.collect(g, ops[g], vals, 1, np.array(rows, dtype=np.int64))

    def s_Delete(self, s, env):
        self.deleted[self.row] = True

    def s_Print(self, s, env):
        fvals, ivals = [], []
        for x, kind, _col, _n in prints.layout(s)[2]:
            if kind != "s":
                v = self.expr(x, env)
                (fvals if kind == "f" else ivals).extend([v] if np.isscalar(v) else v)
        site = self.print_site[id(s)]
        line = f"{prints.prefix(self.a.kernel_name, self.relation, self.row)} " \
            f"{prints.text(s, fvals, ivals)}"
        self.printed.append((self.row, site, line))

    def s_Insert(self, s, env):
        vals = [self.expr(v, env) for v in s.values]
        if self.debug:
            for f, val in zip(s.names, vals):
                if not isinstance(f.type, (KeyType, KeyVecType)):
                    self.check_finite(val, f.type, s.loc, written("inserted into", f))
        values = {}
        for f, val in zip(s.names, vals):
            values[f.name] = val if isinstance(f.type, (KeyType, KeyVecType)) else \
                np.array(val, dtype=f.type.dtype).reshape(f.type.shape)
        self.inserted[s.relation].append(values)
        self.sources[s.relation].append(self.row)

    def e_Affine(self, e, env):
        key = self.expr(e.key, env)
        try:
            return affine.neighbour_row(key, e.offsets, e.type.relation.grid, e.loc)
        except KernelRuntimeError:
            if not self.debug:
                raise
            self.fail(Site("neighbour", e.loc, str(tuple(e.offsets)), e.type.relation), key)

    def e_RowKey(self, e, env):
        row = int(self.expr(e.index, env)[0])
        if not 0 <= row < e.relation.size:
            site = Site("row-range", e.loc, "", e.relation)
            if self.debug:
                self.fail(site, row)
            raise KernelRuntimeError(f"{site.message(row)}\n{e.loc.render()}")
        return row

    def e_Shifted(self, e, env):
        key = self.expr(e.key, env)
        offsets = tuple(int(self.expr(o, env)[0]) for o in e.offsets)
        try:
            return affine.neighbour_row(key, offsets, e.type.relation.grid, e.loc)
        except KernelRuntimeError:
            if not self.debug:
                raise
            self.fail(Site("neighbour", e.loc, str(offsets), e.type.relation), key)

    # -- debug checks (`debug_checks`; only with debug) -----------------------------------
    def fail(self, site, value, operands=()):
        raise site.error(self.a.kernel_name, self.relation, self.row, value, operands)

    def check_finite(self, vals, t, loc, what):
        if not elem_of(t).is_float:
            return
        for v in vals:
            if not np.isfinite(v):
                self.fail(Site("non-finite", loc, what), float_code(v))

    def check_key(self, k: int, field, loc) -> None:
        rel = field.type.relation
        if not 0 <= k < rel.size:
            self.fail(Site("key-range", loc, field.qualname, rel), k)

    def checked_alg(self, loc):
        """The algebra for an operation at `loc`: with debug, each operation that can create a
        NaN or an infinity is checked (`debug_checks.OriginChecks`)."""
        if not self.debug:
            return self.alg

        def on_result(site, r, operands):
            if not np.isfinite(r) and all(np.isfinite(x) for x in operands):
                self.fail(site, float_code(r), operands[:site.operands])

        def on_int_division(op, b):
            if b == 0:
                self.fail(Site("int-division", loc, op), 0)

        return OriginChecks(self.alg, loc, on_result, on_int_division)

    # -- statements ----------------------------------------------------------------------
    def block(self, body, env):
        for s in body:
            getattr(self, "s_" + type(s).__name__)(s, env)

    def s_Assign(self, s, env):
        env[s.name] = self.expr(s.value, env)

    def s_AssignIndex(self, s, env):
        cur = list(env[s.name])
        val = self.expr(s.value, env)  # before the index, as the compiled code
        pos = self.flat_positions(s.index, env, self.a.locals[s.name])
        for p, v in zip(pos, val):
            cur[p] = v
        env[s.name] = cur

    def s_FieldStore(self, s, env):
        key = self.expr(s.key, env)
        val = self.expr(s.value, env)
        if self.debug:
            self.check_finite(val, s.field.type, s.loc, written("stored into", s.field))
        data = s.field.data
        if s.index:
            idx = tuple(self.index_value(i, n, env) for i, n in zip(s.index, s.field.type.shape))
            sub = data[(key,) + idx]
            if np.ndim(sub) == 0:
                data[(key,) + idx] = val[0]
            else:
                data[(key,) + idx] = np.array(val).reshape(np.shape(sub))
        else:
            data[key] = val[0] if not s.field.type.shape else \
                np.array(val).reshape(s.field.type.shape)

    def s_FieldReduce(self, s, env):
        key = self.expr(s.key, env)
        val = self.expr(s.value, env)
        if self.debug:
            self.check_finite(val, s.field.type, s.loc, contributed(s.op, field=s.field))
        data = s.field.data
        idx = tuple(self.index_value(i, n, env) for i, n in zip(s.index, s.field.type.shape))
        view = data[(key,) + idx]
        et = elem_of(s.field.type)
        if np.ndim(view) == 0:
            data[(key,) + idx] = semantics.reduce_step(self.alg, s.op, view, val[0], et)
        else:
            flat = view.reshape(-1)
            for c, v in enumerate(val):
                flat[c] = semantics.reduce_step(self.alg, s.op, flat[c], v, et)

    def s_GlobalReduce(self, s, env):
        g = s.ref
        val = self.expr(s.value, env)
        if self.debug:
            self.check_finite(val, g.type, s.loc, contributed(s.op, glob=g))
        if self.given is not None:
            rows, values = self.given[g]
            rows.append(self.row)
            values.append(np.asarray(val).reshape(-1))
            return
        et = elem_of(g.type)
        flat = g.data.reshape(-1)
        if s.op in ("argmin", "argmax"):
            better = semantics.arg_better(self.alg, s.op, flat[0], val[0], et)
            if better:
                flat[0] = val[0]
                g.row_data[0] = self.row
            return
        if g in self.sums:
            for c, v in enumerate(val):
                self.sums[g][c].append(v)
            return
        for c, v in enumerate(val):
            flat[c] = semantics.global_step(self.alg, s.op, flat[c], v, et)

    def s_If(self, s, env):
        self.block(s.body if self.expr(s.test, env)[0] else s.orelse, env)

    def loop_body(self, body, env) -> bool:
        try:
            self.block(body, env)
        except _Break:
            return False
        except _Continue:
            pass
        return True

    def s_While(self, s, env):
        while self.expr(s.test, env)[0]:
            if not self.loop_body(s.body, env):
                break

    def s_ForRange(self, s, env):
        start, stop, step = (int(self.expr(x, env)[0]) for x in (s.start, s.stop, s.step))
        for i in range(start, stop, step):
            env[s.var] = [np.int64(i)]
            if not self.loop_body(s.body, env):
                break

    def s_ForEach(self, s, env):
        seq = self.expr(s.seq, env)
        for x in seq:
            env[s.var] = x if isinstance(s.seq.type, KeyVecType) else [x]
            if not self.loop_body(s.body, env):
                break

    def s_ForGroup(self, s, env):
        key = self.expr(s.group.key, env)
        g = s.group.grouping
        # (rows sorted by their key: the grouping keeps no rows, `arrays()` would make them)
        offsets, rows = g.offsets(), None if g.in_order else g.rows()
        for j in range(offsets[key], offsets[key + 1]):
            env[s.var] = j if rows is None else int(rows[j])
            if not self.loop_body(s.body, env):
                break

    def s_Break(self, s, env):
        raise _Break

    def s_Continue(self, s, env):
        raise _Continue

    def s_Return(self, s, env):
        raise _Return

    def s_Pass(self, s, env):
        pass

    # -- expressions: keys are ints, key vectors tuples of ints, values component lists ----
    def expr(self, e, env):
        return getattr(self, "e_" + type(e).__name__)(e, env)

    def e_Const(self, e, env):
        return [e.type.dtype.type(e.value)]

    def e_Local(self, e, env):
        return env[e.name]

    def e_Centred(self, e, env):
        return self.row

    def e_GlobalRead(self, e, env):
        return list(e.ref.data.reshape(-1))

    def e_FieldRead(self, e, env, check=True):
        key = self.expr(e.key, env)
        v = e.field.data[key]
        if isinstance(e.type, KeyType):
            if self.debug and check:
                self.check_key(int(v), e.field, e.loc)
            return int(v)
        if isinstance(e.type, KeyVecType):
            if self.debug and check:
                for x in v:
                    self.check_key(int(x), e.field, e.loc)
            return tuple(int(x) for x in v)
        return [v] if isinstance(e.type, ScalarType) else list(np.asarray(v).reshape(-1))

    def e_GroupRead(self, e, env):  # only used as a loop sequence (see s_ForGroup)
        raise AssertionError("grouping read outside a loop")

    def index_value(self, i, n, env):
        k = int(self.expr(i, env)[0])
        if self.debug and not -n <= k < n:
            self.fail(Site("index-range", i.loc, extent=n), k)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise KernelRuntimeError(f"index {k} out of range for length {n}\n"
                                     f"{i.loc.render()}")
        return k

    def flat_positions(self, index, env, base_t):
        """Flat component positions that `index` addresses in a value of type `base_t`."""
        if isinstance(base_t, TupleType):  # a constant index (typecheck)
            return list(base_t.span(index[0].value))
        shape = base_t.shape
        ks = [self.index_value(i, n, env) for i, n in zip(index, shape)]
        if len(shape) == 2 and len(ks) == 1:
            return [ks[0] * shape[1] + j for j in range(shape[1])]
        pos = 0
        for k, n in zip(ks, shape):
            pos = pos * n + k
        return [pos]

    def e_Index(self, e, env):
        bt = e.base.type
        if isinstance(bt, KeyVecType) and isinstance(e.base, ir.FieldRead) and self.debug:
            # the compiled code reads (and checks) only the indexed key
            base = self.e_FieldRead(e.base, env, check=False)
            k = base[self.index_value(e.index[0], bt.n, env)]
            self.check_key(k, e.base.field, e.loc)
            return k
        base = self.expr(e.base, env)
        if isinstance(bt, KeyVecType):
            return base[self.index_value(e.index[0], bt.n, env)]
        return [base[p] for p in self.flat_positions(e.index, env, bt)]

    def e_BinOp(self, e, env):
        return semantics.binop(self.checked_alg(e.loc), e.op, self.expr(e.left, env),
                               self.expr(e.right, env), e.left.type, e.right.type, e.type)

    def e_UnaryOp(self, e, env):
        return semantics.unop(self.alg, e.op, self.expr(e.operand, env), e.type)

    def e_Compare(self, e, env):
        a, b = self.expr(e.left, env), self.expr(e.right, env)
        if isinstance(e.left.type, KeyType):
            return [np.bool_(a == b if e.op == "==" else a != b)]
        return [self.alg.compare(e.op, a[0], b[0], e.left.type)]

    def e_BoolOp(self, e, env):
        want = e.op == "or"
        for v in e.values:
            if bool(self.expr(v, env)[0]) == want:
                return [np.bool_(want)]
        return [np.bool_(not want)]

    def e_IfExp(self, e, env):
        return self.expr(e.body if self.expr(e.test, env)[0] else e.orelse, env)

    def e_Call(self, e, env):
        # a key argument (a random draw's p) is its row
        args = [[np.int64(v)] if isinstance(a.type, KeyType) else v
                for a, v in ((a, self.expr(a, env)) for a in e.args)]

        def check(ok):
            if not ok:
                raise KernelRuntimeError(
                    f"rs.{e.func}(): a counter or the seed is outside [0, 2**32): "
                    f"{', '.join(str(int(a[0])) for a in args[1:])}\n{e.loc.render()}")

        return semantics.call(self.checked_alg(e.loc), e.func, args, [a.type for a in e.args],
                              e.type, check)

    def e_Cast(self, e, env):
        return semantics.cast(self.checked_alg(e.loc), self.expr(e.value, env), e.value.type,
                              e.type)

    def e_TupleExpr(self, e, env):
        out = []
        for x in e.elts:
            out.extend(self.expr(x, env))
        return out


def _columns(rel, rows: list) -> tuple:
    """Inserted rows (dicts of field values) as (count, {field: array})."""
    names = {n for r in rows for n in r}
    cols = {}
    for n in names:
        f = rel.field(n)
        dtype = f.data.dtype  # (a key field's type has no dtype: its storage's)
        zero = np.zeros(f.type.shape, dtype)
        cols[n] = np.array([r.get(n, zero) for r in rows],
                           dtype=dtype).reshape((len(rows),) + f.type.shape)
    return len(rows), cols


class InterpBackend(Backend):
    name = "interp"

    def compile(self, analysed, config):
        return InterpExecutable(analysed, config.debug)

