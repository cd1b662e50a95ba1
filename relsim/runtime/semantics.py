"""The meaning of every operator and builtin, written once over an abstract scalar algebra.

Both the `interp` oracle (an algebra of NumPy scalars) and the Numba lowering (an algebra that
emits Python `ast` statements) evaluate vector/matrix operations through these functions, so the
order of every floating-point operation is the same in all backends, bit for bit.

Values are lists of scalar components (row-major for matrices); a scalar is a 1-element list.
"""
from __future__ import annotations

from .. import philox
from ..types import MatType, ScalarType, VecType, bool_, elem_of, f64, i64
from . import decompositions
from .builtin_table import DECOMPOSITIONS, MATH, RANDOM


def binop(alg, op, a, b, ta, tb, rt):
    """Element-wise arithmetic with scalar broadcasting; `@` is matrix multiplication."""
    et = elem_of(rt)
    if op == "@":
        return matmul(alg, a, b, ta, tb, et)
    if len(a) == 1 and len(b) > 1:
        a = a * len(b)
    if len(b) == 1 and len(a) > 1:
        b = b * len(a)
    return [alg.binop(op, x, y, et) for x, y in zip(a, b)]


def matmul(alg, a, b, ta, tb, et):
    if isinstance(ta, MatType) and isinstance(tb, VecType):
        rows, inner, cols = ta.n, ta.m, 1
    elif isinstance(ta, VecType):
        rows, inner, cols = 1, ta.n, tb.m
    else:
        rows, inner, cols = ta.n, ta.m, tb.m
    out = []
    for i in range(rows):
        for j in range(cols):
            acc = None
            for k in range(inner):
                p = alg.binop("*", a[i * inner + k], b[k * cols + j], et)
                acc = p if acc is None else alg.binop("+", acc, p, et)
            out.append(acc)
    return out


def unop(alg, op, a, t):
    et = elem_of(t)
    if op == "-":
        return [alg.neg(x, et) for x in a]
    if op == "~":
        return [alg.invert(x, et) for x in a]
    if op == "not":
        return [alg.not_(a[0])]
    raise ValueError(op)


def less(alg, a, b, et):
    return alg.compare("<", a, b, et)


def call(alg, name, args, arg_types, rt, check=None):
    """A builtin call on component lists. `check(ok)` is given each condition (a bool value) the
    call needs at run time: the backend reports the call's line when it is false."""
    et = elem_of(rt) if rt is not None else None
    if name in RANDOM:
        return [random_draw(alg, name, [a[0] for a in args], check)]
    if name in ("min", "max"):
        acc = args[0]
        for nxt in args[1:]:
            acc = [_pick(alg, name, x, y, et) for x, y in zip(acc, nxt)]
        return acc
    if name == "abs":
        if et.is_float:
            return [alg.math("fabs", [x], et) for x in args[0]]
        zero = alg.const(0, et)
        return [alg.select(less(alg, x, zero, et), alg.neg(x, et), x, et) for x in args[0]]
    if name == "dot":
        return [_dot(alg, args[0], args[1], et)]
    if name == "norm":
        return [alg.math("sqrt", [_dot(alg, args[0], args[0], et)], et)]
    if name == "cross":
        a, b = args
        m = lambda x, y: alg.binop("*", x, y, et)  # noqa: E731
        s = lambda x, y: alg.binop("-", x, y, et)  # noqa: E731
        return [s(m(a[1], b[2]), m(a[2], b[1])), s(m(a[2], b[0]), m(a[0], b[2])),
                s(m(a[0], b[1]), m(a[1], b[0]))]
    if name == "outer":
        a, b = args
        return [alg.binop("*", x, y, et) for x in a for y in b]
    if name == "transpose":
        t = arg_types[0]
        return [args[0][i * t.m + j] for j in range(t.m) for i in range(t.n)]
    if name == "det":
        return [_det(alg, args[0], arg_types[0].n, et)]
    if name == "inverse":
        return _inverse(alg, args[0], arg_types[0].n, et)
    if name in DECOMPOSITIONS:  # hundreds of operations: a function of their own
        n, ft = arg_types[0].n, elem_of(arg_types[0])
        return alg.function(name, f"{name}{n}_{ft.name}",
                            lambda a, m: getattr(decompositions, name)(a, m, n, ft),
                            args[0])
    if name == "hypot":
        x, y = args[0][0], args[1][0]
        ss = alg.binop("+", alg.binop("*", x, x, et), alg.binop("*", y, y, et), et)
        return [alg.math("sqrt", [ss], et)]
    if name == "copysign":  # a NaN y gives |x|: no target keeps a NaN's sign alike (LLVM
        # moves a negation into the division that made the NaN, and x86 gives -NaN for 0/0)
        x, y = args[0][0], args[1][0]
        return [alg.select(alg.math("isnan", [y], et), alg.math("fabs", [x], et),
                           alg.math("copysign", [x, y], et), et)]
    if name == "cbrt" and et != f64:  # single precision: through double (the C library's)
        wide = alg.math("cbrt", [alg.cast(args[0][0], et, f64)], f64)
        return [alg.cast(wide, f64, et)]
    if name in MATH and MATH[name].predicate:  # computed in the argument's type
        return [alg.math(name, [args[0][0]], elem_of(arg_types[0]))]
    return [alg.math(name, [a[0] for a in args], et)]


def random_draw(alg, name, words, check):
    """`rs.uniform` / `rs.normal` (`relsim/philox.py`, through `alg.draw`) of the row or integer
    p, the counters and the seed (i64 values, in that order): every counter and the seed must
    be a 32-bit word, 0 <= c < 2**32."""
    zero, top = alg.const(0, i64), alg.const(philox.WORD, i64)
    ok = None
    for w in words[1:]:
        inside = alg.binop("&", alg.compare(">=", w, zero, i64), alg.compare("<", w, top, i64),
                           bool_)
        ok = inside if ok is None else alg.binop("&", ok, inside, bool_)
    check(ok)
    return alg.draw(name, words)


def _pick(alg, name, x, y, et):
    """min(x, y) = y if y < x else x; max(x, y) = y if y > x else x (Python's choice)."""
    c = alg.compare("<" if name == "min" else ">", y, x, et)
    return alg.select(c, y, x, et)


def _dot(alg, a, b, et):
    acc = alg.binop("*", a[0], b[0], et)
    for x, y in zip(a[1:], b[1:]):
        acc = alg.binop("+", acc, alg.binop("*", x, y, et), et)
    return acc


def _det(alg, m, n, et):
    mul = lambda x, y: alg.binop("*", x, y, et)  # noqa: E731
    sub = lambda x, y: alg.binop("-", x, y, et)  # noqa: E731
    if n == 2:
        return sub(mul(m[0], m[3]), mul(m[1], m[2]))
    c0 = sub(mul(m[4], m[8]), mul(m[5], m[7]))
    c1 = sub(mul(m[3], m[8]), mul(m[5], m[6]))
    c2 = sub(mul(m[3], m[7]), mul(m[4], m[6]))
    return alg.binop("+", sub(mul(m[0], c0), mul(m[1], c1)), mul(m[2], c2), et)


def _inverse(alg, m, n, et):
    mul = lambda x, y: alg.binop("*", x, y, et)  # noqa: E731
    sub = lambda x, y: alg.binop("-", x, y, et)  # noqa: E731
    d = _det(alg, m, n, et)
    if n == 2:
        adj = [m[3], alg.neg(m[1], et), alg.neg(m[2], et), m[0]]
    else:
        def cof(r0, r1, c0, c1):
            return sub(mul(m[r0 * 3 + c0], m[r1 * 3 + c1]), mul(m[r0 * 3 + c1], m[r1 * 3 + c0]))
        # adjugate (transpose of the cofactor matrix)
        adj = [cof(1, 2, 1, 2), cof(0, 2, 2, 1), cof(0, 1, 1, 2),
               cof(1, 2, 2, 0), cof(0, 2, 0, 2), cof(0, 1, 2, 0),
               cof(1, 2, 0, 1), cof(0, 2, 1, 0), cof(0, 1, 0, 1)]
    r = alg.binop("/", alg.const(1.0, et), d, et)
    return [alg.binop("*", x, r, et) for x in adj]


def cast(alg, a, src, dst):
    se, de = elem_of(src), elem_of(dst)
    if se == de:
        return list(a)
    return [alg.cast(x, se, de) for x in a]


# the operators a reduction folds with; a compiled fold knows each by its position here (the op
# codes of `folds/host_folds`)
FOLD_OPS = ("+", "*", "min", "max", "and", "or")


def reduce_step(alg, op, cur, x, et):
    """One step of a reduction's fold, `cur op x`: the one rule every fold follows (interp, a
    kernel's own reductions, absorbed pending folds; `folds/host_folds._combine` is its
    compiled form, checked against it in tests/runtime/test_fold_rule.py). min/max keep `cur`
    on ties and when x is NaN, and keep a NaN `cur` (``x if x < cur else cur``)."""
    if op == "+":
        return alg.binop("+", cur, x, et)
    if op == "*":
        return alg.binop("*", cur, x, et)
    if op in ("min", "max"):
        return _pick(alg, op, cur, x, et)
    if op == "and":
        return alg.binop("&", cur, x, bool_)
    if op == "or":
        return alg.binop("|", cur, x, bool_)
    raise ValueError(op)


def global_step(alg, op, cur, x, et):
    """One step of a Global reduction's fold, `cur op x`, taken in ascending row order. As
    `reduce_step`, except that a float min/max is NaN as soon as any input is (the lowest row's
    NaN wins, and stays), so the result depends on no order but the rows' (ties too go to the
    lowest row). Float sums fold step by step only into a Global made with sum="ordered"; the
    others are exact (`exact_sum`, `sums_exactly`); float products are refused by the type
    checker."""
    if op in ("min", "max") and et.is_float:
        pick = _pick(alg, op, cur, x, et)
        return alg.select(alg.math("isnan", [cur], et), cur,
                          alg.select(alg.math("isnan", [x], et), x, pick, et), et)
    return reduce_step(alg, op, cur, x, et)


def sums_exactly(target, op) -> bool:
    """Whether the Global reduction `op` into `target` is an exact float sum (`exact_sum`: the
    contributions summed exactly with the value, rounded once, in no particular order): a float
    `+` into a Global with sum="exact" (the default). Every other Global reduction, a float sum
    into a Global with sum="ordered" too, folds by `global_step` in ascending row order."""
    return op == "+" and elem_of(target.type).is_float and target.sum == "exact"


def sums_in_row_order(target, op) -> bool:
    """Whether the Global reduction `op` into `target` is a float sum into a Global with
    sum="ordered": its contributions are added one at a time, in ascending row and program
    order, from the value (`global_step`), like an integer sum but not in any other order."""
    return op == "+" and elem_of(target.type).is_float and target.sum == "ordered"


def arg_better(alg, op, best, x, et):
    """Whether an arg-min/arg-max reduction takes x (and its row) over `best`, rows taken in
    ascending order: when strictly better, or when x is the first NaN (then the result is NaN,
    at the lowest row holding one). Ties keep the lowest row."""
    better = alg.compare("<" if op == "argmin" else ">", x, best, et)
    if not et.is_float:
        return better
    first_nan = alg.select(alg.math("isnan", [best], et), alg.const(False, bool_),
                           alg.math("isnan", [x], et), bool_)
    return alg.select(first_nan, alg.const(True, bool_), better, bool_)


__all__ = ["binop", "unop", "call", "random_draw", "cast", "reduce_step", "global_step",
           "sums_exactly", "sums_in_row_order", "arg_better",
           "FOLD_OPS",
           "ScalarType"]
