"""Typing of operators and conversions (a part of the TypeChecker, which mixes it in).

Rules: Python literals are weak (they adopt the other operand's type); otherwise the wider type
wins (bool < i32 < i64 < f32 < f64). A local's type is the join of everything assigned to it.
Implicit conversions on assignment may narrow floats (f64 -> f32) but never turn floats into ints.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...types import (
    KeyType,
    MatType,
    ScalarType,
    VecType,
    bool_,
    elem_of,
    f64,
    i64,
    is_value,
    promote,
    with_elem,
)
from .. import ir
from . import calls

BITWISE = {"&", "|", "^", "<<", ">>"}


def join(a, b):
    """The type a local must have to hold values of types a and b, or None."""
    if a == b:
        return a
    if isinstance(a, ScalarType) and isinstance(b, ScalarType):
        return promote(a, b)
    if type(a) is type(b) and isinstance(a, (VecType, MatType)) and a.shape == b.shape:
        return with_elem(a, promote(a.elem, b.elem))
    return None


def can_assign(src, dst) -> bool:
    if src == dst:
        return True
    if not (is_value(src) and is_value(dst)) or src.shape != dst.shape:
        return False
    s, d = elem_of(src), elem_of(dst)
    if d.is_bool:
        return s.is_bool
    if d.is_int:
        return not s.is_float
    return True


class OperatorTyping:
    """The TypeChecker's methods for operators, conversions and value constructors; `err`
    and `expr` are the TypeChecker's."""

    def truth(self, x):
        if x.type == bool_:
            return x
        if isinstance(x.type, ScalarType):
            return ir.Compare(x.loc, "!=", x, self.cast(ir.Const(x.loc, 0, weak=True, type=i64),
                                                       x.type), type=bool_)
        raise self.err(f"a {x.type!r} value has no truth value here", x.loc)

    def e_BinOp(self, e):
        a, b = self.expr(e.left), self.expr(e.right)
        op = e.op
        if op == "@":
            return self.matmul(e, a, b)
        for x in (a, b):
            if not is_value(x.type):
                raise self.err(f"operator '{op}' is not defined for {x.type!r}", x.loc)
        if op in BITWISE:
            if not all(isinstance(x.type, ScalarType) and not x.type.is_float for x in (a, b)):
                raise self.err(f"operator '{op}' needs integers or bools", e.loc)
            a, b, t = self.unify(a, b)
            return ir.BinOp(e.loc, op, a, b, type=t)
        if op == "**":
            if not (isinstance(a.type, ScalarType) and isinstance(b.type, ScalarType)):
                raise self.err("'**' needs scalar operands", e.loc)
            return calls.power(self, e, a, b)
        # arithmetic: bools count as i64
        a, b = (self.cast(x, with_elem(x.type, i64)) if elem_of(x.type).is_bool else x
                for x in (a, b))
        a, b, et = self.unify(a, b)
        if op == "/" and not et.is_float:
            a, b, et = (self.cast(a, with_elem(a.type, f64)), self.cast(b, with_elem(b.type, f64)),
                        f64)
        shape_a, shape_b = a.type.shape, b.type.shape
        if shape_a and shape_b and shape_a != shape_b:
            raise self.err(f"operator '{op}' on mismatched shapes {a.type!r} and {b.type!r}",
                           e.loc)
        if (shape_a or shape_b) and op in ("//", "%"):
            raise self.err(f"operator '{op}' needs scalars", e.loc)
        rt = a.type if shape_a else b.type
        return ir.BinOp(e.loc, op, a, b, type=with_elem(rt, et))

    def matmul(self, e, a, b):
        ta, tb = a.type, b.type
        et = promote(elem_of(ta), elem_of(tb)) if is_value(ta) and is_value(tb) else None
        if isinstance(ta, MatType) and isinstance(tb, VecType) and ta.m == tb.n:
            rt = VecType(ta.n, et)
        elif isinstance(ta, VecType) and isinstance(tb, MatType) and ta.n == tb.n:
            rt = VecType(tb.m, et)
        elif isinstance(ta, MatType) and isinstance(tb, MatType) and ta.m == tb.n:
            rt = MatType(ta.n, tb.m, et)
        else:
            raise self.err(f"'@' needs matrix @ vector or matrix @ matrix of matching sizes, "
                           f"not {ta!r} @ {tb!r}", e.loc)
        a, b = self.cast(a, with_elem(ta, et)), self.cast(b, with_elem(tb, et))
        return ir.BinOp(e.loc, "@", a, b, type=rt)

    def unify(self, a, b):
        """Cast a and b to one element type (weak literals adopt the other's)."""
        ea, eb = elem_of(a.type), elem_of(b.type)
        wa, wb = _is_weak(a), _is_weak(b)
        if wa and not wb:
            et = eb if (eb.is_float or not ea.is_float) else promote(ea, eb)
        elif wb and not wa:
            et = ea if (ea.is_float or not eb.is_float) else promote(ea, eb)
        else:
            et = promote(ea, eb)
        return self.cast(a, with_elem(a.type, et)), self.cast(b, with_elem(b.type, et)), et

    def cast(self, x, t):
        if x.type == t:
            return x
        if isinstance(x, ir.Const) and isinstance(t, ScalarType):
            if t.is_int and isinstance(x.value, float) and not (
                    np.isfinite(x.value) and np.iinfo(t.dtype).min <= int(x.value)
                    <= np.iinfo(t.dtype).max):
                raise self.err(f"the constant {x.value!r} does not fit in {t!r}", x.loc)
            with np.errstate(over="ignore"):  # a float constant too large for f32 is inf
                return ir.Const(x.loc, t.dtype.type(x.value).item(), type=t)
        return ir.Cast(x.loc, x, type=t)

    def convert(self, x, t, loc, what=None):
        """Implicit conversion on assignment, with a clear error when it would lose meaning.
        `what` names the target in messages, e.g. "field V.T"."""
        if x.type == t:
            return x
        dst = f"{what} ({t!r})" if what else f"a {t!r} target"
        if isinstance(x.type, ScalarType) and isinstance(t, (VecType, MatType)):
            raise self.err(f"cannot assign a scalar to {dst}; build the value with a tuple "
                           f"or the type, e.g. {t!r}(...)", loc)
        if not can_assign(x.type, t):
            raise self.err(f"cannot assign a {x.type!r} value to {dst}"
                           + (" (use int() to truncate)" if elem_of(t).is_int else ""), loc)
        return self.cast(x, t)

    def e_UnaryOp(self, e):
        x = self.expr(e.operand)
        if e.op == "not":
            return ir.UnaryOp(e.loc, "not", self.truth(x), type=bool_)
        if not is_value(x.type):
            raise self.err(f"operator '{e.op}' is not defined for {x.type!r}", e.loc)
        if e.op == "~":
            if not isinstance(x.type, ScalarType) or not x.type.is_int:
                raise self.err("'~' needs an integer", e.loc)
            return ir.UnaryOp(e.loc, "~", x, type=x.type)
        if elem_of(x.type).is_bool:
            x = self.cast(x, with_elem(x.type, i64))
        if e.op == "+":
            return x
        if isinstance(x, ir.Const):  # a negative literal: located at its sign too
            return replace(x, value=-x.value, loc=e.loc)
        return ir.UnaryOp(e.loc, "-", x, type=x.type)

    def e_Compare(self, e):
        a, b = self.expr(e.left), self.expr(e.right)
        if isinstance(a.type, KeyType) and isinstance(b.type, KeyType):
            if e.op not in ("==", "!=") or a.type != b.type:
                raise self.err("keys can only be compared with == and != to keys of the same "
                               "relation", e.loc)
            return ir.Compare(e.loc, e.op, a, b, type=bool_)
        for x in (a, b):
            if not isinstance(x.type, ScalarType):
                raise self.err(f"cannot compare {x.type!r} values (compare components)", x.loc)
        a, b, _ = self.unify(a, b)
        return ir.Compare(e.loc, e.op, a, b, type=bool_)

    def e_BoolOp(self, e):
        vals = tuple(self.truth(self.expr(v)) for v in e.values)
        return ir.BoolOp(e.loc, e.op, vals, type=bool_)

    def e_IfExp(self, e):
        test = self.truth(self.expr(e.test))
        a, b = self.expr(e.body), self.expr(e.orelse)
        if isinstance(a.type, KeyType) or isinstance(b.type, KeyType):
            if a.type != b.type:
                raise self.err(f"both branches must have the same type: {a.type!r} and "
                               f"{b.type!r}", e.loc)
            return ir.IfExp(e.loc, test, a, b, type=a.type)
        t = join(a.type, b.type) if not (_is_weak(a) or _is_weak(b)) else None
        if t is None:
            if is_value(a.type) and is_value(b.type) and a.type.shape == b.type.shape:
                a, b, et = self.unify(a, b)
                t = with_elem(a.type, et)
            else:
                raise self.err(f"both branches must have the same type: {a.type!r} and "
                               f"{b.type!r}", e.loc)
        return ir.IfExp(e.loc, test, self.cast(a, t), self.cast(b, t), type=t)

    def construct(self, args, t, loc):
        """`rs.vec(n[, e])(...)`: n components, or one for all of them, or one n-vector;
        `rs.mat(n, m[, e])(...)`: n rows (tuples or m-vectors), or one n x m matrix. With the
        element type e given the value is converted to it; without, it is typed as the tuple
        of its components would be."""
        what = _constructor(t)
        xs = [self.expr(a) for a in args]
        one = xs[0] if len(xs) == 1 else None
        if one is not None and one.type == with_elem(t, elem_of(one.type)):
            v = one  # a vector or matrix of the right shape: converted
        elif isinstance(t, VecType):
            if one is not None and isinstance(one.type, ScalarType):
                c = self.cast(one, t.elem) if t.elem_given else one
                v = ir.TupleExpr(loc, (c,) * t.n, type=VecType(t.n, c.type))
            elif one is not None and isinstance(one.type, (VecType, MatType)):
                raise self.err(f"{what}(v) converts a vector of {t.n} components, not "
                               f"{one.type!r}", one.loc)
            elif len(xs) != t.n:
                raise self.err(f"{what}(...) takes {t.n} components (or one, for all of "
                               f"them), got {len(xs)}", loc)
            else:
                for x in xs:
                    if not isinstance(x.type, ScalarType):
                        raise self.err(f"{what}(...) takes scalar components; this one is "
                                       f"{x.type!r}", x.loc)
                v = self.tuple_value(loc, xs)
        else:
            if len(xs) != t.n:
                rows = ", ".join(["(" + ", ".join(["..."] * t.m) + ")"] * t.n)
                hint = f"; write the rows as tuples: {what}({rows})" \
                    if len(xs) == t.n * t.m else ""
                raise self.err(f"{what}(...) takes {t.n} rows (tuples or vectors of {t.m} "
                               f"components), got {len(xs)} argument(s){hint}", loc)
            for x in xs:
                if not (isinstance(x.type, VecType) and x.type.n == t.m):
                    raise self.err(f"{what}(...) takes {t.n} rows of {t.m} components each "
                                   f"(tuples or vectors); this row is {x.type!r}", x.loc)
            v = self.tuple_value(loc, xs)
        return self.cast(v, t) if t.elem_given else v

    def e_TupleExpr(self, e):
        return self.tuple_value(e.loc, [self.expr(x) for x in e.elts])

    def tuple_value(self, loc, elts):
        """A vector of typed scalars, or a matrix of typed equal-length vector rows."""
        if not elts:
            raise self.err("empty tuples are not values", loc)
        if all(isinstance(x.type, ScalarType) for x in elts):
            strong = [x.type for x in elts if not _is_weak(x)] or [x.type for x in elts]
            et = strong[0]
            for t in strong[1:]:
                et = promote(et, t)
            if any(x.type.is_float for x in elts) and not et.is_float:
                et = f64
            if et.is_bool:
                et = bool_
            return ir.TupleExpr(loc, tuple(self.cast(x, et) for x in elts),
                                type=VecType(len(elts), et))
        if all(isinstance(x.type, VecType) for x in elts) and \
                len({x.type.n for x in elts}) == 1:
            et = elts[0].type.elem
            for x in elts[1:]:
                et = promote(et, x.type.elem)
            t = MatType(len(elts), elts[0].type.n, et)
            return ir.TupleExpr(loc, tuple(self.cast(x, VecType(t.m, et)) for x in elts),
                                type=t)
        raise self.err("a tuple in a kernel must be a vector of scalars or a matrix of equal "
                       "length rows", loc)

    def e_Cast(self, e):
        t = e.type
        if isinstance(e.value, ir.TupleExpr):  # rs.vec(3)(a, b, c) / mat constructor
            return self.construct(e.value.elts, t, e.loc)
        v = self.expr(e.value)
        if not isinstance(v.type, ScalarType):
            raise self.err(f"cannot convert {v.type!r} to {t!r}", e.loc)
        if t.is_bool:
            return self.truth(v)
        return self.cast(v, t)


def _constructor(t) -> str:
    """How the user spelled the constructor of vector / matrix type t."""
    dims = f"{t.n}" if isinstance(t, VecType) else f"{t.n}, {t.m}"
    kind = "vec" if isinstance(t, VecType) else "mat"
    return f"rs.{kind}({dims}, {t.elem.name})" if t.elem_given else f"rs.{kind}({dims})"


def _is_weak(x) -> bool:
    return isinstance(x, ir.Const) and x.weak
