"""Lowering of typed IR expressions to Python `ast`, shared by every compiled target (see
`body.py` for statements and the seam a target's driver supplies).

Every value is scalarised: a vec3 local `p` becomes `v_p_0, v_p_1, v_p_2`; every intermediate
result gets a temporary (`emit.EmitAlgebra`). Each `e_<Node>` returns a list of atoms, one per
component. The code refers to three names a driver binds: `ROW` (the relation row being run),
`POS` (its position in the iteration space, int64: reduction and insert slots are numbered by
it) and `ERR` (the error line array a failed index check sets).

Lowered with `debug` (a `debug_checks.Sites`), the code also runs the debug mode's checks: a
failed check records its site number and a value for the row (`record`) and goes on with a
harmless value; without it, none of that code exists.
"""
from __future__ import annotations

import ast

from ...types import (
    KeyType,
    KeyVecType,
    MatType,
    ScalarType,
    TupleType,
    VecType,
    elem_of,
    i64,
)
from .. import ir, semantics
from ..analysis.int_ranges import Ranges
from ..host.debug_checks import OriginChecks, Site
from .emit import ROW, EmitAlgebra, call, name, store, unsigned
from .params import Params

# ROW (from emit): the relation row (a centred key's value)
POS = "_p"  # the position in the iteration space (the row, or its index in a subset)
ERR = "_err"  # int64[1]: set to the source line by a failed index check (no raise in kernels)


class ExprLowerer:
    """Expressions, indexing and scalarised locals; emits into `self.alg.out`."""

    def __init__(self, analysed, debug=None):
        self.a = analysed
        self.params = Params()
        self.alg = EmitAlgebra()
        self.ranges = None  # `int_ranges.Ranges` of the kernel's body (at the first index)
        self.debug = debug  # debug_checks.Sites: lowering the debug variant (else None)

    def local_names(self, lname, t) -> list:
        if isinstance(t, KeyType):
            return [f"k_{lname}"]
        if isinstance(t, KeyVecType):
            return [f"k_{lname}_{c}" for c in range(t.n)]
        return [f"v_{lname}_{c}" for c in range(t.ncomp)]

    def positions(self, t, index):
        """Flat component positions addressed by `index` on a value of type t: ints if the
        index is constant, else [atom of the first flat position]."""
        if isinstance(t, TupleType):  # a constant index (typecheck)
            return list(t.span(index[0].value))
        shape = t.shape
        idx = [self.norm_index(i, n) for i, n in zip(index, shape)]
        if len(shape) == 2 and len(idx) == 1:
            if isinstance(idx[0], int):
                return [idx[0] * shape[1] + j for j in range(shape[1])]
            return [self.alg.bind(ast.BinOp(idx[0], ast.Mult(), ast.Constant(shape[1])))]
        if all(isinstance(k, int) for k in idx):
            pos = 0
            for k, n in zip(idx, shape):
                pos = pos * n + k
            return [pos]
        pos = idx[0]
        for k, n in zip(idx[1:], shape[1:]):
            pos = self.alg.bind(ast.BinOp(ast.BinOp(pos, ast.Mult(), ast.Constant(n)), ast.Add(),
                                          k if not isinstance(k, int) else ast.Constant(k)))
        return [pos]

    def norm_index(self, i, n):
        """A constant index as an int; a run-time index as a checked, non-negative atom."""
        if isinstance(i, ir.Const):
            v = int(i.value)
            return v + n if v < 0 else v
        if self.ranges is None:
            self.ranges = Ranges(self.a.body)
        known = self.ranges.of(i)
        if known is not None and 0 <= known[0] and known[1] < n:  # in range: no check
            return self.expr(i)[0]
        given = self.expr(i)[0]
        a = self.alg.bind(ast.IfExp(ast.Compare(given, [ast.Lt()], [ast.Constant(0)]),
                                    ast.BinOp(given, ast.Add(), ast.Constant(n)), given))
        # no `raise` inside prange (it would serialise the loop): flag the line, use index 0,
        # and let the launcher raise after the kernel
        fixed = self.alg.fresh()
        self.alg.out.append(ast.Assign([store(fixed)], a))
        failed = self.record(Site("index-range", i.loc, extent=n), given) \
            if self.debug is not None else [self.flag_error(i.loc.line)]
        check = ast.If(ast.BoolOp(ast.Or(), [ast.Compare(a, [ast.Lt()], [ast.Constant(0)]),
                                             ast.Compare(a, [ast.GtE()], [ast.Constant(n)])]),
                       failed + [ast.Assign([store(fixed)], ast.Constant(0))], [])
        self.alg.out.append(check)
        return name(fixed)

    @staticmethod
    def flag_error(line: int) -> ast.stmt:
        """`_err[0] = line`: an index out of range at that source line; -line: a builtin's
        argument out of its range (a random draw's counter or seed)."""
        return ast.Assign([ast.Subscript(name(ERR), ast.Constant(0), ast.Store())],
                          ast.Constant(line))

    # -- debug checks (only with `debug`) -------------------------------------------------
    def record(self, site: Site, value: ast.expr, operands=()) -> list:
        """Statements recording a failed check for this row, unless an earlier one did: the
        site's number, `value` and the `operands` (float checks) at the row's position (each
        row writes only its own entry: no race in a parallel loop)."""
        first = self.params.debug_first().name
        values = self.params.debug_values().name

        def at(arr, ctx, col=None):
            pos = unsigned(name(POS))
            idx = pos if col is None else ast.Tuple([pos, ast.Constant(col)], ast.Load())
            return ast.Subscript(name(arr), idx, ctx)

        writes = [ast.Assign([at(values, ast.Store(), c)], v)
                  for c, v in enumerate((value,) + tuple(operands))]
        return [ast.If(ast.Compare(at(first, ast.Load()), [ast.Eq()], [ast.Constant(0)]), [
            ast.Assign([at(first, ast.Store())], ast.Constant(self.debug.number(site)))] +
            writes, [])]

    def check_finite(self, vals, t, loc, what: str) -> None:
        """Debug: each float value in `vals` must be finite (a field write, a contribution)."""
        if self.debug is None or not elem_of(t).is_float:
            return
        site = Site("non-finite", loc, what)
        for v in vals:
            self.alg.out.append(ast.If(ast.UnaryOp(ast.Not(), call("math.isfinite", v)),
                                       self.record(site, _float_code(v)), []))

    def checked_key(self, atom, field, loc):
        """Debug: a key read from key field `field` lies in [0, size) of its relation; else
        the check fails and the row goes on with key 0."""
        rel = field.type.relation
        size = ast.Subscript(name(self.params.relation_size(rel).name), ast.Constant(0),
                             ast.Load())
        fixed = self.alg.fresh()
        self.alg.out.append(ast.Assign([store(fixed)], atom))
        bad = ast.BoolOp(ast.Or(), [ast.Compare(atom, [ast.Lt()], [ast.Constant(0)]),
                                    ast.Compare(atom, [ast.GtE()], [size])])
        site = Site("key-range", loc, field.qualname, rel)
        self.alg.out.append(ast.If(bad, self.record(site, atom) +
                                   [ast.Assign([store(fixed)], ast.Constant(0))], []))
        return name(fixed)

    def checked_alg(self, loc):
        """The algebra for an operation at `loc`: in debug mode, each operation that can create
        a NaN or an infinity is followed by its check (`debug_checks.OriginChecks`: a float
        result not finite from finite operands, recorded with them; an integer divisor zero)."""
        if self.debug is None:
            return self.alg

        def on_result(site, r, operands):
            fin = lambda x: call("math.isfinite", x)  # noqa: E731
            # the tests joined by `&`, not `and`: no branch per operand (Numba's passes cost
            # far more than linearly in the blocks of a function; a decomposition's results
            # are each tested against its 9 inputs)
            test = ast.UnaryOp(ast.Not(), fin(r))
            for x in operands:
                if not isinstance(x, ast.Constant):
                    test = ast.BinOp(test, ast.BitAnd(), fin(x))
            self.alg.out.append(ast.If(test, self.record(site, _float_code(r),
                                                         operands[:site.operands]), []))

        def on_int_division(op, b):
            if not (isinstance(b, ast.Constant) and b.value != 0):
                self.alg.out.append(ast.If(ast.Compare(b, [ast.Eq()], [ast.Constant(0)]),
                                           self.record(Site("int-division", loc, op),
                                                       ast.Constant(0)), []))

        return OriginChecks(self.alg, loc, on_result, on_int_division)

    def field_slots(self, field, key_atom, index):
        """Subscript expressions (as (array name, index tuple)) for the addressed components."""
        arr = self.params.field(field).name
        # a key is never negative: indexed as unsigned, Numba emits no negative-index
        # wraparound (a branch per access that also stops LLVM vectorising row loops)
        row = unsigned(key_atom)
        return [(arr, sl) for sl in self.component_slots(field.type, row, index)]

    def component_slots(self, t, lead, index) -> list:
        """Subscripts (after the leading `lead`: a row, or a Global's 0) of the components of
        a stored value of type t that `index` addresses (all of them when it is empty): a
        run-time index reads the array where the value is stored, one load per component."""
        if not index:
            comps = [()] if isinstance(t, ScalarType) else _all_index_tuples(t.shape)
        else:
            idx = [self.norm_index(i, n) for i, n in zip(index, t.shape)]
            idx = [ast.Constant(k) if isinstance(k, int) else k for k in idx]
            if len(t.shape) == 2 and len(idx) == 1:
                comps = [(idx[0], ast.Constant(j)) for j in range(t.shape[1])]
            else:
                comps = [tuple(idx)]
        out = []
        for c in comps:
            parts = [lead] + [ast.Constant(x) if isinstance(x, int) else x for x in c]
            out.append(parts[0] if len(parts) == 1 else ast.Tuple(parts, ast.Load()))
        return out

    # -- expressions: each returns a list of atoms (one per component) --------------------
    def expr(self, e) -> list:
        return getattr(self, "e_" + type(e).__name__)(e)

    def e_Const(self, e):
        return [self.alg.const(e.value, e.type)]

    def e_Local(self, e):
        return [name(n) for n in self.local_names(e.name, self.a.locals[e.name])]

    def e_Centred(self, e):
        return [name(ROW)]

    def e_GlobalRead(self, e):
        arr = self.params.glob(e.ref).name
        return [self.alg.bind(ast.Subscript(name(arr), ast.Tuple(
            [ast.Constant(0)] + [ast.Constant(x) for x in idx], ast.Load()) if idx else
            ast.Constant(0), ast.Load())) for idx in _all_index_tuples(e.ref.type.shape)]

    def e_FieldRead(self, e):
        key = self.expr(e.key)[0]
        out = [self.alg.bind(ast.Subscript(name(arr), sl, ast.Load()))
               for arr, sl in self.field_slots(e.field, key, ())]
        if self.debug is not None and isinstance(e.type, (KeyType, KeyVecType)):
            out = [self.checked_key(k, e.field, e.loc) for k in out]
        return out

    def e_Index(self, e):
        bt = e.base.type
        if isinstance(e.base, ir.FieldRead) and not isinstance(bt, ScalarType):
            key = self.expr(e.base.key)[0]
            out = [self.alg.bind(ast.Subscript(name(arr), sl, ast.Load()))
                   for arr, sl in self.field_slots(e.base.field, key, e.index)]
            if self.debug is not None and isinstance(e.type, KeyType):
                out = [self.checked_key(k, e.base.field, e.loc) for k in out]
            return out
        if isinstance(e.base, ir.GlobalRead) and not isinstance(bt, ScalarType) and \
                not all(isinstance(i, ir.Const) for i in e.index):
            # a run-time index into a vector or matrix Global: loads of the addressed entries
            # (not every entry loaded, then a tuple of them built and indexed)
            arr = self.params.glob(e.base.ref).name
            return [self.alg.bind(ast.Subscript(name(arr), sl, ast.Load()))
                    for sl in self.component_slots(bt, ast.Constant(0), e.index)]
        base = self.expr(e.base)
        pos = self.positions(bt, e.index)
        if isinstance(pos[0], int):
            return [base[p] for p in pos]
        tup = self.alg.bind(ast.Tuple(base, ast.Load()))
        n_out = e.type.ncomp if isinstance(e.type, (VecType, MatType)) else 1
        return [self.alg.bind(ast.Subscript(tup, ast.BinOp(pos[0], ast.Add(), ast.Constant(j))
                                            if j else pos[0], ast.Load())) for j in range(n_out)]

    def grid_sizes(self, relation) -> tuple:
        """`relation`'s grid shape and strides as atoms: reads of its `GridShape` parameter,
        bound per launch (one compile serves every size). Axis 0 is the unit-stride one."""
        arr = name(self.params.grid_shape(relation).name)
        nd = len(relation.grid.periodic)
        read = [self.alg.bind(ast.Subscript(arr, ast.Constant(k), ast.Load()))
                for k in range(2 * nd)]
        return read[:nd], [ast.Constant(1)] + read[nd + 1:]

    def moved_row(self, e, k, offsets, checked) -> ast.expr:
        """The row of key k's grid neighbour at `offsets` (atoms, or ints): each axis's
        coordinate moved, wrapped on a periodic axis (Python's floor modulo, as interp's),
        else checked (a failure flags the line and keeps the coordinate), unless `checked`
        (a centred key's constant offsets: checked once per launch space)."""
        grid = e.type.relation.grid
        shape, strides = self.grid_sizes(e.type.relation)
        out = k
        for axis, (d, n, st, periodic) in enumerate(zip(offsets, shape, strides,
                                                         grid.periodic)):
            if isinstance(d, int) and d == 0:
                continue
            dd = ast.Constant(d) if isinstance(d, int) else d
            if checked and not periodic:
                step = dd if axis == 0 else ast.BinOp(dd, ast.Mult(), st)
                out = self.alg.bind(ast.BinOp(out, ast.Add(), step))
                continue
            c = self.alg.bind(ast.BinOp(k if axis == 0 else ast.BinOp(k, ast.FloorDiv(), st),
                                        ast.Mod(), n))
            moved = ast.BinOp(c, ast.Add(), dd)
            if periodic:
                # (Python's m % n is m itself for 0 <= m < n, which a neighbour mostly is: the
                # division, tens of cycles for a size known at run time, only across the edge)
                m = self.alg.bind(moved)
                inside = ast.Compare(ast.Constant(0), [ast.LtE(), ast.Lt()], [m, n])
                c2 = self.alg.bind(ast.IfExp(inside, m, ast.BinOp(m, ast.Mod(), n)))
            else:
                c2 = self.alg.bind(moved)
                what = str(tuple(offsets)) if all(isinstance(x, int) for x in offsets) else \
                    "computed when the kernel ran"
                failed = [self.flag_error(e.loc.line)] if self.debug is None else self.record(
                    Site("neighbour", e.loc, what, e.type.relation), k)
                self.alg.out.append(ast.If(ast.BoolOp(ast.Or(), [
                    ast.Compare(c2, [ast.Lt()], [ast.Constant(0)]),
                    ast.Compare(c2, [ast.GtE()], [n])]),
                    failed + [ast.Assign([store(c2.id)], c)], []))
            delta = ast.BinOp(c2, ast.Sub(), c)
            out = self.alg.bind(ast.BinOp(out, ast.Add(), delta if axis == 0 else
                                          ast.BinOp(delta, ast.Mult(), st)))
        return out

    def e_Affine(self, e):
        k = self.expr(e.key)[0]
        return [self.moved_row(e, k, e.offsets, isinstance(e.key, ir.Centred))]

    def e_RowKey(self, e):
        """`rs.at(R, i)`: the row i, checked against R's size (bound per launch); a row
        outside it is flagged at the line (debug: a row-range failure) and the row
        goes on with row 0."""
        i = self.expr(e.index)[0]
        size = ast.Subscript(name(self.params.relation_size(e.relation).name), ast.Constant(0),
                             ast.Load())
        row = self.alg.fresh()
        self.alg.out.append(ast.Assign([store(row)], i))
        bad = ast.BoolOp(ast.Or(), [ast.Compare(name(row), [ast.Lt()], [ast.Constant(0)]),
                                    ast.Compare(name(row), [ast.GtE()], [size])])
        failed = [self.flag_error(e.loc.line)] if self.debug is None else self.record(
            Site("row-range", e.loc, "", e.relation), name(row))
        self.alg.out.append(ast.If(bad, failed + [ast.Assign([store(row)], ast.Constant(0))],
                                   []))
        return [name(row)]

    def e_Shifted(self, e):
        """`c(di, dj)` with run-time offsets: checked (bounded axes) or wrapped, per access."""
        k = self.expr(e.key)[0]
        return [self.moved_row(e, k, [self.expr(o)[0] for o in e.offsets], False)]

    def e_BinOp(self, e):
        return semantics.binop(self.checked_alg(e.loc), e.op, self.expr(e.left),
                               self.expr(e.right), e.left.type, e.right.type, e.type)

    def e_UnaryOp(self, e):
        return semantics.unop(self.alg, e.op, self.expr(e.operand), e.type)

    def e_Compare(self, e):
        a, b = self.expr(e.left)[0], self.expr(e.right)[0]
        et = e.left.type if isinstance(e.left.type, ScalarType) else i64
        return [self.alg.compare(e.op, a, b, et)]

    def e_BoolOp(self, e):
        """Short-circuit: later operands are evaluated only when needed, unless they are cheap
        and safe to compute anyway (`EmitAlgebra.speculable`): then a `pick` chooses, with no
        branch."""
        first = self.expr(e.values[0])[0]
        sides = [self.side(v) for v in e.values[1:]]
        if self.alg.speculable([s for stmts, _ in sides for s in stmts]):
            res = first
            for stmts, (val,) in sides:
                self.alg.out.extend(stmts)
                res = self.alg.pick(res, val, res) if e.op == "and" else \
                    self.alg.pick(res, res, val)
            return [res]
        res = self.alg.fresh()
        self.alg.out.append(ast.Assign([store(res)], first))
        for stmts, (val,) in sides:
            inner = stmts + [ast.Assign([store(res)], val)]
            test = name(res) if e.op == "and" else ast.UnaryOp(ast.Not(), name(res))
            self.alg.out.append(ast.If(test, inner, []))
        return [name(res)]

    def e_IfExp(self, e):
        """Only the branch taken is computed, unless both are cheap and safe to compute anyway
        (`EmitAlgebra.speculable`): then a `pick` per component chooses, with no branch."""
        test = self.expr(e.test)[0]
        (body, a), (orelse, b) = self.side(e.body), self.side(e.orelse)
        if self.alg.speculable(body + orelse):
            self.alg.out.extend(body + orelse)
            return [self.alg.pick(test, x, y) for x, y in zip(a, b)]
        res = [self.alg.fresh() for _ in a]
        branches = [stmts + [ast.Assign([store(r)], v) for r, v in zip(res, vals)]
                    for stmts, vals in ((body, a), (orelse, b))]
        self.alg.out.append(ast.If(test, *branches))
        return [name(r) for r in res]

    def side(self, e) -> tuple:
        """(statements, atoms) of `e` lowered into a block of its own (a side of a choice)."""
        saved = self.alg.out
        self.alg.out = []
        try:
            vals = self.expr(e)
            return self.alg.out, vals
        finally:
            self.alg.out = saved

    def e_Call(self, e):
        args = [self.expr(a) for a in e.args]

        def check(ok):  # a failed run-time condition: flagged as -line (see `flag_error`)
            if isinstance(ok, ast.Constant) and ok.value is True:
                return
            self.alg.out.append(ast.If(ast.UnaryOp(ast.Not(), ok),
                                       [self.flag_error(-e.loc.line)], []))

        return semantics.call(self.checked_alg(e.loc), e.func, args, [a.type for a in e.args],
                              e.type, check)

    def e_Cast(self, e):
        return semantics.cast(self.checked_alg(e.loc), self.expr(e.value), e.value.type, e.type)

    def e_TupleExpr(self, e):
        out = []
        for x in e.elts:
            out.extend(self.expr(x))
        return out


def _float_code(v) -> ast.expr:
    """`debug_checks.float_code` of a non-finite float: 0 NaN, 1 +inf, -1 -inf, as
    ``int(v > 0) - int(v < 0)``: no branch (two per check site, as conditional expressions)."""
    return ast.BinOp(call("int", ast.Compare(v, [ast.Gt()], [ast.Constant(0)])), ast.Sub(),
                     call("int", ast.Compare(v, [ast.Lt()], [ast.Constant(0)])))


def _all_index_tuples(shape):
    if not shape:
        return [()]
    if len(shape) == 1:
        return [(i,) for i in range(shape[0])]
    return [(i, j) for i in range(shape[0]) for j in range(shape[1])]
