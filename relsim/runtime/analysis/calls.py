"""Typing of builtin calls (math, min/max, vector algebra) and of the power operator.

`tc` is the TypeChecker (its err, cast, unify, truth and expression methods); which builtins
exist, and a math function's arity and result, come from `builtin_table`."""
from __future__ import annotations

from ... import philox
from ...types import (
    KeyType,
    KeyVecType,
    MatType,
    ScalarType,
    TupleType,
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
from ..builtin_table import DECOMPOSITIONS, MATH, RANDOM, RANDOM_COUNTERS


def _float_of(t: ScalarType) -> ScalarType:
    return t if t.is_float else f64


def type_call(tc, e, args):
    name, n = e.func, len(args)

    def need(k):
        if n != k:
            raise tc.err(f"{name}() takes {k} argument(s), {n} given", e.loc)

    def scalar(x):
        if not isinstance(x.type, ScalarType):
            raise tc.err(f"{name}() needs a scalar, not {x.type!r}", x.loc)
        return x

    if name in RANDOM:
        return random_call(tc, e, args)
    if name == "pow":
        need(2)
        return tc.e_BinOp(ir.BinOp(e.loc, "**", e.args[0], e.args[1]))
    fn = MATH.get(name)
    if fn is not None and fn.arity == 1:
        need(1)
        x = scalar(args[0])
        x = tc.cast(x, _float_of(x.type))
        return ir.Call(e.loc, name, (x,), type=bool_ if fn.predicate else x.type)
    if fn is not None:
        need(2)
        a, b = scalar(args[0]), scalar(args[1])
        a, b, et = tc.unify(a, b)
        ft = _float_of(et)
        return ir.Call(e.loc, name, (tc.cast(a, ft), tc.cast(b, ft)), type=ft)
    if name == "abs":
        need(1)
        x = args[0]
        if not is_value(x.type):
            raise tc.err(f"abs() needs a number or vector, not {x.type!r}", x.loc)
        if elem_of(x.type).is_bool:
            x = tc.cast(x, with_elem(x.type, i64))
        return ir.Call(e.loc, "abs", (x,), type=x.type)
    if name in ("min", "max"):
        if n < 2:
            raise tc.err(f"{name}() in a kernel takes two or more arguments", e.loc)
        for x in args:
            if not is_value(x.type) or elem_of(x.type).is_bool:
                raise tc.err(f"{name}() needs numbers or vectors, not {x.type!r}", x.loc)
        acc = args[0]
        out = [acc]
        for x in args[1:]:
            acc, x2, et = tc.unify(acc, x)
            out = [tc.cast(o, with_elem(o.type, et)) for o in out] + [x2]
            acc = out[0]
        shapes = {o.type.shape for o in out}
        if len(shapes) != 1:
            raise tc.err(f"{name}() arguments must have one shape", e.loc)
        return ir.Call(e.loc, name, tuple(out), type=out[0].type)
    if name in ("int", "float"):
        need(1)
        return tc.e_Cast(ir.Cast(e.loc, e.args[0], type=i64 if name == "int" else f64))
    if name == "bool":
        need(1)
        return tc.truth(scalar(args[0]))
    if name == "len":
        need(1)
        t = args[0].type
        if not isinstance(t, (VecType, KeyVecType, MatType)):
            raise tc.err(f"len() needs a vector, not {t!r}", e.loc)
        return ir.Const(e.loc, t.n, type=i64)
    return _vector_call(tc, e, name, args, need)


def _vector_call(tc, e, name, args, need):
    def vecs(k):
        need(k)
        for x in args:
            if not isinstance(x.type, VecType):
                raise tc.err(f"{name}() needs vectors, not {x.type!r}", x.loc)

    def common(xs):
        et = elem_of(xs[0].type)
        for x in xs[1:]:
            et = promote(et, elem_of(x.type))
        if et.is_bool:
            et = i64
        return [tc.cast(x, with_elem(x.type, et)) for x in xs], et

    if name == "dot":
        vecs(2)
        if args[0].type.n != args[1].type.n:
            raise tc.err(f"dot() of vectors of different lengths: {args[0].type!r}, "
                         f"{args[1].type!r}", e.loc)
        xs, et = common(args)
        return ir.Call(e.loc, name, tuple(xs), type=et)
    if name == "cross":
        vecs(2)
        if args[0].type.n != 3 or args[1].type.n != 3:
            raise tc.err("cross() needs two 3-vectors", e.loc)
        xs, et = common(args)
        return ir.Call(e.loc, name, tuple(xs), type=VecType(3, et))
    if name == "norm":
        vecs(1)
        xs, et = common(args)
        ft = _float_of(et)
        return ir.Call(e.loc, name, (tc.cast(xs[0], VecType(xs[0].type.n, ft)),), type=ft)
    if name == "outer":
        vecs(2)
        xs, et = common(args)
        return ir.Call(e.loc, name, tuple(xs), type=MatType(xs[0].type.n, xs[1].type.n, et))
    if name in ("det", "inverse", "transpose"):
        need(1)
        t = args[0].type
        if not isinstance(t, MatType):
            raise tc.err(f"{name}() needs a matrix, not {t!r}", e.loc)
        if name == "transpose":
            return ir.Call(e.loc, name, tuple(args), type=MatType(t.m, t.n, t.elem))
        if t.n != t.m or t.n not in (2, 3):
            raise tc.err(f"{name}() needs a 2x2 or 3x3 matrix, not {t!r}", e.loc)
        ft = _float_of(t.elem)
        x = tc.cast(args[0], MatType(t.n, t.m, ft))
        return ir.Call(e.loc, name, (x,), type=ft if name == "det" else x.type)
    if name in DECOMPOSITIONS:
        return _decomposition(tc, e, name, args, need)
    raise tc.err(f"unknown function {name}()", e.loc)


def _decomposition(tc, e, name, args, need):
    """`rs.eigh(A)` -> (w, Q), `rs.svd(F)` -> (U, S, V), `rs.polar(F)` -> (R, P) of a 2x2 or
    3x3 matrix, in its float type (`decompositions.py`)."""
    need(1)
    t = args[0].type
    if not (isinstance(t, MatType) and t.n == t.m and t.n in (2, 3)):
        raise tc.err(f"rs.{name}() needs a 2x2 or 3x3 matrix, not {t!r}", e.loc)
    ft = _float_of(t.elem)
    m, v = MatType(t.n, t.n, ft), VecType(t.n, ft)
    parts = {"eigh": (v, m), "svd": (m, v, m), "polar": (m, m)}[name]
    return ir.Call(e.loc, name, (tc.cast(args[0], m),), type=TupleType(parts))


def random_call(tc, e, args):
    """`rs.uniform(p, c0[, c1[, c2]], seed=s)` / `rs.normal(...)` (the frontend appends the seed,
    0 if not given): p a key (its row is drawn for) or an integer, the counters and the seed
    integers, in [0, 2**32) if constant (else checked when run, `semantics.random_draw`). The typed
    call has p, RANDOM_COUNTERS counters (omitted ones 0) and the seed, each an i64 but p."""
    name = e.func
    *pos, seed = args
    form = f"rs.{name}(p, c0[, c1[, c2]], seed=...)"
    if not 2 <= len(pos) <= 1 + RANDOM_COUNTERS:
        few = " (at least one counter: the time step, a draw number, ...)" if len(pos) < 2 \
            else ""
        raise tc.err(f"{form} takes a key or integer and 1 to {RANDOM_COUNTERS} counters, "
                     f"{len(pos)} argument(s) given{few}", e.loc)
    p, counters = pos[0], pos[1:]

    def word(x, what):
        if not (isinstance(x.type, ScalarType) and x.type.is_int):
            raise tc.err(f"rs.{name}(): {what} must be an integer, not {x.type!r}", x.loc)
        if isinstance(x, ir.Const) and not 0 <= x.value < philox.WORD:
            raise tc.err(f"rs.{name}(): {what} is {x.value}, outside [0, 2**32)", x.loc)
        return tc.cast(x, i64)

    if not isinstance(p.type, KeyType):
        if not (isinstance(p.type, ScalarType) and p.type.is_int):
            raise tc.err(f"rs.{name}(): p must be a key (its row is used) or an integer, not "
                         f"{p.type!r}", p.loc)
        p = tc.cast(p, i64)
    cs = [word(c, f"counter c{i}") for i, c in enumerate(counters)]
    cs += [ir.Const(e.loc, 0, type=i64)] * (RANDOM_COUNTERS - len(cs))
    return ir.Call(e.loc, name, (p, *cs, word(seed, "the seed")), type=f64)


def power(tc, e, a, b):
    """`a ** b`: small constant integer exponents multiply (x*x, (x*x)*x); others call pow."""
    k = b.value if isinstance(b, ir.Const) else None
    if k is not None and float(k).is_integer() and 1 <= k <= 4 and not elem_of(a.type).is_bool:
        et = elem_of(a.type)
        if et.is_bool:
            a = tc.cast(a, i64)
        acc = a
        for _ in range(int(k) - 1):
            acc = ir.BinOp(e.loc, "*", acc, a, type=a.type)
        return acc
    a, b, et = tc.unify(a, b)
    ft = _float_of(et)
    return ir.Call(e.loc, "pow", (tc.cast(a, ft), tc.cast(b, ft)), type=ft)

