"""Expressions of a tangent kernel (`generate.py`): a typed expression of the forward kernel
back as untyped IR (`primal`), and the untyped IR of its tangent, its directional derivative
(`tangent`: None where it is 0).

The tangent of a float field read is the read of the field's tangent field (``<field>__dot``,
through the same key) where that field carries a tangent, of a float Global's read the read
of its tangent Global; of an operation, the sum over its arguments of each one's tangent times
the operation's partial derivative (the same rules as the reverse mode's, `adjoint/
derivatives.py`; a partial that is infinite where the argument's tangent is 0 adds 0, not
NaN, the guard written so that the tangent differentiated again is the product's derivative:
`derivatives.tangent_term`). Vectors and matrices are differentiated whole: d(a @ b) = da @ b +
a @ db, d inverse(A) = -inverse(A) @ dA @ inverse(A), d det(A) = det(A) trace(inverse(A) @
dA), and so on.
"""
from __future__ import annotations

import numpy as np

from ...errors import GradientError
from ...types import MatType, TupleType, VecType, f64
from .. import ir
from ..adjoint import derivatives
from ..adjoint.records import is_diff, is_mat, is_vec
from ..builtin_table import RANDOM

TANGENT = "__dot"  # a field's tangent field: <name>__dot; a local's tangent local, the same


def tangent_name(name: str) -> str:
    return name + TANGENT


def zero(t, loc):
    """The untyped value 0 of f64 type `t` (scalar, vector or matrix)."""
    if isinstance(t, VecType):
        return ir.Cast(loc, ir.TupleExpr(loc, tuple(ir.Const(loc, 0.0) for _ in range(t.n))),
                       type=t)
    if isinstance(t, MatType):
        row = VecType(t.m, f64)
        return ir.Cast(loc, ir.TupleExpr(loc, tuple(zero(row, loc) for _ in range(t.n))),
                       type=t)
    return ir.Const(loc, 0.0)


def _add(loc, a, b):
    if a is None:
        return b
    if b is None:
        return a
    return ir.BinOp(loc, "+", a, b)


def _mul(loc, a, b):
    return ir.BinOp(loc, "*", a, b)


def _mm(loc, a, b):
    return ir.BinOp(loc, "@", a, b)


class Expressions:
    """A mixin of `generate.Tangent`: ``primal(e)`` and ``tangent(e)``. The class says which
    fields and Globals carry tangents (``field_tangent(field)``, ``global_tangent(g)``, each
    None where none is carried), which locals do (``local_tangent(name)``), and how to refuse
    (``refuse(what, loc)``)."""

    # -- the primal, untyped --------------------------------------------------------------
    def primal(self, e):
        m = getattr(self, "p_" + type(e).__name__, None)
        if m is None:
            raise self.refuse(f"this expression ({type(e).__name__})", e.loc)
        return m(e)

    def p_Const(self, e):
        if isinstance(e.value, np.ndarray):  # a constant vector or matrix (rs.eye)
            return _array(e.loc, e.value, e.type)
        return ir.Const(e.loc, e.value)

    def p_Local(self, e):
        return ir.Local(e.loc, e.name)

    def p_Centred(self, e):
        return ir.Centred(e.loc, e.name)

    def p_GlobalRead(self, e):
        return ir.GlobalRead(e.loc, e.ref)

    def p_FieldRead(self, e):
        return ir.Attr(e.loc, self.primal(e.key), e.field.name)

    def p_GroupRead(self, e):
        return ir.Attr(e.loc, self.primal(e.key), e.grouping.name)

    def p_Affine(self, e):
        return ir.Affine(e.loc, self.primal(e.key), tuple(ir.Const(e.loc, int(s))
                                                          for s in e.offsets))

    def p_Shifted(self, e):
        return ir.Affine(e.loc, self.primal(e.key), tuple(self.primal(o) for o in e.offsets))

    def p_RowKey(self, e):
        return ir.RowKey(e.loc, e.relation, self.primal(e.index))

    def p_Index(self, e):
        return ir.Index(e.loc, self.primal(e.base), tuple(self.primal(i) for i in e.index))

    def p_BinOp(self, e):
        return ir.BinOp(e.loc, e.op, self.primal(e.left), self.primal(e.right))

    def p_UnaryOp(self, e):
        return ir.UnaryOp(e.loc, e.op, self.primal(e.operand))

    def p_Compare(self, e):
        return ir.Compare(e.loc, e.op, self.primal(e.left), self.primal(e.right))

    def p_BoolOp(self, e):
        return ir.BoolOp(e.loc, e.op, tuple(self.primal(v) for v in e.values))

    def p_IfExp(self, e):
        return ir.IfExp(e.loc, self.primal(e.test), self.primal(e.body), self.primal(e.orelse))

    def p_Call(self, e):
        return ir.Call(e.loc, e.func, tuple(self.primal(a) for a in e.args))

    def p_Cast(self, e):
        if isinstance(e.type, (VecType, MatType)):
            inner = self.primal(e.value)
            if isinstance(inner, ir.Cast) and isinstance(inner.value, ir.TupleExpr):
                return ir.Cast(e.loc, inner.value, type=e.type)
            return ir.Cast(e.loc, inner, type=e.type)
        fn = {"f64": "float", "i64": "int", "bool": "bool"}.get(getattr(e.type, "name", ""))
        if fn is None:
            return ir.Cast(e.loc, self.primal(e.value), type=e.type)
        return ir.Call(e.loc, fn, (self.primal(e.value),))

    def p_TupleExpr(self, e):
        return ir.Cast(e.loc, ir.TupleExpr(e.loc, tuple(self.primal(x) for x in e.elts)),
                       type=e.type)

    # -- the tangent ----------------------------------------------------------------------
    def helper(self, value, loc):
        """A local holding `value`, assigned just before the statement being made (`pending`):
        a tangent's part that must be a local (its entries indexed)."""
        pending = self.__dict__.setdefault("pending", [])
        count = self.__dict__.setdefault("helpers", [0])
        count[0] += 1
        name = f"_tangent_helper{count[0]}"
        pending.append(ir.Assign(loc, name, value))
        return ir.Local(loc, name)

    def tangent(self, e):
        """The tangent of typed expression `e` as untyped IR, or None where it is 0 (not a
        float value, or one no tangent reaches)."""
        t = getattr(e, "type", None)
        if not is_diff(t):
            if _holds_floats(t) and not isinstance(e, ir.Const) and self._reaches(e):
                what = "a matrix decomposition" if isinstance(t, TupleType) else \
                    f"a {t!r} value computed from differentiated values (forward mode " \
                    f"differentiates f64 values only)"
                raise self.refuse(what, e.loc)
            return None
        m = getattr(self, "t_" + type(e).__name__, None)
        if m is None:
            raise self.refuse(f"this expression ({type(e).__name__})", e.loc)
        return m(e)

    def _reaches(self, e) -> bool:
        """Whether any tangent reaches expression `e` (a non-f64 float: refused if so)."""
        for x in e.walk():
            if isinstance(x, ir.FieldRead) and self.field_tangent(x.field) is not None or \
                    isinstance(x, ir.GlobalRead) and self.global_tangent(x.ref) is not None or \
                    isinstance(x, ir.Local) and self.local_tangent(x.name) is not None:
                return True
        return False

    def t_Const(self, e):
        return None

    def t_Local(self, e):
        name = self.local_tangent(e.name)
        return None if name is None else ir.Local(e.loc, name)

    def t_GlobalRead(self, e):
        g = self.global_tangent(e.ref)
        return None if g is None else ir.GlobalRead(e.loc, g)

    def t_FieldRead(self, e):
        name = self.field_tangent(e.field)
        return None if name is None else ir.Attr(e.loc, self.primal(e.key), name)

    def t_Index(self, e):
        d = self.tangent(e.base)
        return None if d is None else ir.Index(e.loc, d, tuple(self.primal(i) for i in e.index))

    def t_UnaryOp(self, e):
        d = self.tangent(e.operand)
        if d is None or e.op == "+":
            return d
        return ir.UnaryOp(e.loc, "-", d)

    def t_IfExp(self, e):
        depth = self.__dict__.setdefault("branches", 0)
        self.branches = depth + 1  # (no helper computes what one branch alone may compute)
        try:
            body, orelse = self.tangent(e.body), self.tangent(e.orelse)
        finally:
            self.branches = depth
        if body is None and orelse is None:
            return None
        return ir.IfExp(e.loc, self.primal(e.test),
                        body if body is not None else zero(e.type, e.loc),
                        orelse if orelse is not None else zero(e.type, e.loc))

    def t_Cast(self, e):
        if isinstance(e.type, (VecType, MatType)):  # a vector or matrix constructed
            if isinstance(e.value, ir.TupleExpr):
                return self.t_TupleExpr(ir.with_type(e.value, e.type))
            d = self.tangent(e.value)
            return None if d is None else ir.Cast(e.loc, d, type=e.type)
        return self.tangent(e.value) if is_diff(e.value.type) else None

    def t_TupleExpr(self, e):
        parts = [self.tangent(x) for x in e.elts]
        if all(p is None for p in parts):
            return None
        return ir.Cast(e.loc, ir.TupleExpr(e.loc, tuple(
            p if p is not None else zero(x.type, e.loc) for p, x in zip(parts, e.elts))),
            type=e.type)

    def t_BinOp(self, e):
        a, b = e.left, e.right
        da, db = self.tangent(a), self.tangent(b)
        if da is None and db is None:
            return None
        loc, op = e.loc, e.op
        scalars = is_diff(a.type) and is_diff(b.type) and not (
            is_vec(a.type) or is_mat(a.type) or is_vec(b.type) or is_mat(b.type))
        if scalars and op not in ("+", "-"):
            return self._scalar(op, (a, b), (da, db), e)
        pa, pb = self.primal(a), self.primal(b)
        if op in ("+", "-"):
            if db is None:
                return da
            if da is None:
                return db if op == "+" else ir.UnaryOp(loc, "-", db)
            return ir.BinOp(loc, op, da, db)
        if op == "*":
            return _add(loc, None if da is None else _mul(loc, da, pb),
                        None if db is None else _mul(loc, pa, db))
        if op == "@":
            return _add(loc, None if da is None else _mm(loc, da, pb),
                        None if db is None else _mm(loc, pa, db))
        if op == "/":
            first = None if da is None else ir.BinOp(loc, "/", da, pb)
            if db is None:
                return first
            second = ir.BinOp(loc, "/", _mul(loc, pa, db), _mul(loc, pb, pb))
            return ir.BinOp(loc, "-", first, second) if first is not None else \
                ir.UnaryOp(loc, "-", second)
        raise self.refuse(f"the operator {op} on vectors or matrices", loc)

    def _scalar(self, op, args, tangents, e):
        """The tangent of scalar operation `op` (a binary operator or a math function) applied
        to typed `args` whose tangents are `tangents`: sum of tangent x partial."""
        loc = e.loc
        if op == "//":
            return None  # piecewise constant
        if op == "%":  # a - floor(a / b) * b
            pa, pb = (self.primal(x) for x in args)
            da, db = tangents
            q = ir.Call(loc, "floor", (ir.BinOp(loc, "/", pa, pb),))
            return _add(loc, da, None if db is None else ir.UnaryOp(loc, "-", _mul(loc, q, db)))
        if derivatives.unknown(op):
            raise self.refuse(f"the operation {op!r}", loc)
        prim = tuple(self.primal(x) for x in args)
        result = self.primal(e)
        constant = tuple(isinstance(x, ir.Const) for x in args)
        parts = derivatives.partials(op, prim, result, loc, constant)
        total = None
        for d, partial in zip(tangents, parts):
            if d is None or partial is None:
                continue
            if derivatives.guarded(op, partial) and not self.__dict__.get("branches"):
                d, partial = self._once(d, loc), self._once(partial, loc)  # (the guard uses
                # each twice: computed once)
            elif derivatives.singular(op) and any(isinstance(x, ir.Index) for x in d.walk()):
                d = self.helper(d, loc)  # (the guard compares it: a local, for reverse mode)
            total = _add(loc, total, derivatives.tangent_term(op, d, partial, loc))
        return total

    def _once(self, value, loc):
        """`value` computed once, in a local (`helper`), unless it is a local or a constant
        already. Not inside a conditional expression's branches (`t_IfExp`): a helper runs
        before the statement, whichever branch the statement takes."""
        return value if isinstance(value, (ir.Local, ir.Const)) else self.helper(value, loc)

    def t_Call(self, e):
        f, args, loc = e.func, e.args, e.loc
        if f in RANDOM:
            return None  # a draw: a function of integers
        tangents = [self.tangent(a) for a in args]
        if all(t is None for t in tangents):
            return None
        if all(not (is_vec(a.type) or is_mat(a.type)) for a in args) and \
                not (is_vec(e.type) or is_mat(e.type)):
            return self._scalar(f, args, tangents, e)
        p = [self.primal(a) for a in args]
        d = tangents
        call = lambda name, *xs: ir.Call(loc, name, xs)  # noqa: E731
        if f in ("dot", "cross", "outer"):
            return _add(loc, None if d[0] is None else call(f, d[0], p[1]),
                        None if d[1] is None else call(f, p[0], d[1]))
        if f == "norm":  # d|a| = a . da / |a| (0 where a is 0, as the reverse mode gives)
            n = self.primal(e)
            amount = ir.BinOp(loc, "/", call("dot", p[0], d[0]), n)
            return ir.IfExp(loc, ir.Compare(loc, "==", n, ir.Const(loc, 0.0)),
                            ir.Const(loc, 0.0), amount)
        if f == "transpose":
            return call("transpose", d[0])
        if f == "inverse":  # -A^-1 dA A^-1
            inv = self.primal(e)
            return ir.UnaryOp(loc, "-", _mm(loc, _mm(loc, inv, d[0]), inv))
        if f == "det":  # det(A) trace(A^-1 dA), A^-1 dA in a local of its own (the reverse
            # mode, over forward, indexes locals' entries, not a matrix expression's)
            n = args[0].type.n
            m = self.helper(_mm(loc, call("inverse", p[0]), d[0]), loc)
            trace = None
            for i in range(n):
                row = ir.Index(loc, m, (ir.Const(loc, i),))  # (m[i][i]: a row, then its entry)
                trace = _add(loc, trace, ir.Index(loc, row, (ir.Const(loc, i),)))
            return _mul(loc, self.primal(e), trace)
        raise self.refuse(f"the function {f}() of vectors or matrices", loc)


def _holds_floats(t) -> bool:
    """Whether values of type `t` hold floats (a tangent could be lost in them)."""
    if isinstance(t, TupleType):
        return True
    elem = getattr(t, "elem", t)
    return bool(getattr(elem, "is_float", False))


def _array(loc, value, t):
    """A constant vector or matrix as untyped IR."""
    if value.ndim == 1:
        return ir.Cast(loc, ir.TupleExpr(loc, tuple(ir.Const(loc, float(v)) for v in value)),
                       type=t)
    row = VecType(value.shape[1], t.elem)
    return ir.Cast(loc, ir.TupleExpr(loc, tuple(_array(loc, r, row) for r in value)), type=t)


def refusal(kernel_name, what, loc) -> GradientError:
    return GradientError(f"cannot differentiate {what} in forward mode", loc, kernel_name)
