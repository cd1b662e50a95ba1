"""The partial derivatives of the kernel language's float operations, one rule each.

`partials(op, args, result, loc)` gives, for an operation (a binary operator, ``neg``, ``copy``,
or a math function's name) applied to `args` with value `result` (untyped IR: locals and
constants of the adjoint kernel's replay), one expression per argument: its partial derivative,
or None where none flows (a constant exponent, a piecewise constant function such as floor).
An operation with no rule here is refused by the adjoint pass (`unknown(op)`).

Where a function has no derivative (abs at 0, min and max at a tie) the rule follows the branch
the forward value took: min(x, y) is ``y if y < x else x``, so a tie sends it all to x.

A partial that is infinite at a finite argument (`singular`: sqrt at 0, 1/y at 0, ...) sends
nothing where no adjoint arrives, and a product x * y with y == 0 sends nothing back to x
whatever adjoint arrives: 0 x inf counts as 0 there, not NaN. So the distance sqrt(dot(d, d))
of a zero vector d (a particle's pair with itself in a neighbour loop) passes 0 back to d, as
the distance's one-sided derivatives average; where the loss's derivative itself is infinite
it shows.
"""
from __future__ import annotations

import math

from .. import ir


class Build:
    """Untyped IR expressions at one source location."""

    def __init__(self, loc):
        self.loc = loc

    def c(self, v):
        return ir.Const(self.loc, float(v))

    def add(self, a, b):
        return ir.BinOp(self.loc, "+", a, b)

    def sub(self, a, b):
        return ir.BinOp(self.loc, "-", a, b)

    def mul(self, a, b):
        return ir.BinOp(self.loc, "*", a, b)

    def div(self, a, b):
        return ir.BinOp(self.loc, "/", a, b)

    def neg(self, a):
        return ir.UnaryOp(self.loc, "-", a)

    def call(self, f, *args):
        return ir.Call(self.loc, f, tuple(args))

    def pick(self, test_op, a, b, yes, no):
        """``yes if a <test_op> b else no``."""
        return ir.IfExp(self.loc, ir.Compare(self.loc, test_op, a, b), self.c(yes), self.c(no))


def _power(b, x, y, r, constant_exponent):
    dx = b.mul(y, ir.BinOp(b.loc, "**", x, b.sub(y, b.c(1.0))))
    return (dx, None if constant_exponent else b.mul(r, b.call("log", x)))


# op -> (b, args, result) -> partials; `args` are the argument expressions
_RULES = {
    "copy": lambda b, a, r: (b.c(1.0),),
    "pos": lambda b, a, r: (b.c(1.0),),
    "neg": lambda b, a, r: (b.c(-1.0),),
    "+": lambda b, a, r: (b.c(1.0), b.c(1.0)),
    "-": lambda b, a, r: (b.c(1.0), b.c(-1.0)),
    "*": lambda b, a, r: (a[1], a[0]),
    "/": lambda b, a, r: (b.div(b.c(1.0), a[1]), b.neg(b.div(r, a[1]))),
    "sqrt": lambda b, a, r: (b.div(b.c(0.5), r),),
    "cbrt": lambda b, a, r: (b.div(b.c(1.0), b.mul(b.c(3.0), b.mul(r, r))),),
    "exp": lambda b, a, r: (r,),
    "expm1": lambda b, a, r: (b.add(r, b.c(1.0)),),
    "log": lambda b, a, r: (b.div(b.c(1.0), a[0]),),
    "log2": lambda b, a, r: (b.div(b.c(1.0), b.mul(a[0], b.c(math.log(2.0)))),),
    "log10": lambda b, a, r: (b.div(b.c(1.0), b.mul(a[0], b.c(math.log(10.0)))),),
    "log1p": lambda b, a, r: (b.div(b.c(1.0), b.add(b.c(1.0), a[0])),),
    "sin": lambda b, a, r: (b.call("cos", a[0]),),
    "cos": lambda b, a, r: (b.neg(b.call("sin", a[0])),),
    "tan": lambda b, a, r: (b.add(b.c(1.0), b.mul(r, r)),),
    "asin": lambda b, a, r: (b.div(b.c(1.0), b.call("sqrt", b.sub(b.c(1.0),
                                                                  b.mul(a[0], a[0])))),),
    "acos": lambda b, a, r: (b.neg(b.div(b.c(1.0), b.call("sqrt", b.sub(
        b.c(1.0), b.mul(a[0], a[0]))))),),
    "atan": lambda b, a, r: (b.div(b.c(1.0), b.add(b.c(1.0), b.mul(a[0], a[0]))),),
    "atan2": lambda b, a, r: (b.div(a[1], b.add(b.mul(a[0], a[0]), b.mul(a[1], a[1]))),
                              b.neg(b.div(a[0], b.add(b.mul(a[0], a[0]),
                                                      b.mul(a[1], a[1]))))),
    "sinh": lambda b, a, r: (b.call("cosh", a[0]),),
    "cosh": lambda b, a, r: (b.call("sinh", a[0]),),
    "tanh": lambda b, a, r: (b.sub(b.c(1.0), b.mul(r, r)),),
    "hypot": lambda b, a, r: (b.div(a[0], r), b.div(a[1], r)),
    "abs": lambda b, a, r: (b.pick("<", a[0], b.c(0.0), -1.0, 1.0),),
    "fabs": lambda b, a, r: (b.pick("<", a[0], b.c(0.0), -1.0, 1.0),),
    "min": lambda b, a, r: (b.pick("<", a[1], a[0], 0.0, 1.0),
                            b.pick("<", a[1], a[0], 1.0, 0.0)),
    "max": lambda b, a, r: (b.pick(">", a[1], a[0], 0.0, 1.0),
                            b.pick(">", a[1], a[0], 1.0, 0.0)),
    "copysign": lambda b, a, r: (b.mul(b.call("copysign", b.c(1.0), a[0]),
                                       b.call("copysign", b.c(1.0), a[1])), None),
    "floor": lambda b, a, r: (None,),
    "ceil": lambda b, a, r: (None,),
    "round": lambda b, a, r: (None,),
    "trunc": lambda b, a, r: (None,),
}


# the operations whose partials can be infinite (or NaN) at finite arguments
_SINGULAR = frozenset(("/", "sqrt", "cbrt", "log", "log2", "log10", "log1p", "asin", "acos",
                       "atan2", "hypot", "**", "pow"))


def singular(op: str) -> bool:
    """Whether `op`'s partials can be infinite at finite arguments (`adjoint` guards them)."""
    return op in _SINGULAR


def adjoint(op: str, a, partial, loc):
    """What an argument of `op` gets from adjoint `a` through `partial`: ``a * partial``; 0
    where ``a == 0`` for a `singular` op, and where the other factor is 0 for a product (the
    partial): 0 x inf is 0."""
    amount = ir.BinOp(loc, "*", a, partial)
    zero = partial if op == "*" and not isinstance(partial, ir.Const) else \
        a if singular(op) else None
    if zero is None:
        return amount
    return ir.IfExp(loc, ir.Compare(loc, "==", zero, ir.Const(loc, 0.0)), ir.Const(loc, 0.0),
                    amount)


def guarded(op: str, partial) -> bool:
    """Whether `tangent_term` guards the term of `op` through `partial` (0 x inf: a product's
    factor that is not a constant, or a `singular` op's partial)."""
    return op == "*" and not isinstance(partial, ir.Const) or op != "*" and singular(op)


def tangent_term(op: str, d, partial, loc):
    """What an argument of `op` with tangent `d` adds to the result's tangent: ``d *
    partial``, with 0 x inf counted as 0 as `adjoint` counts it, but guarded only where the
    product is not finite (a zero factor, the other one infinite or NaN): elsewhere the term is
    the plain product, so differentiating the tangent again (reverse over forward: Hessian-
    vector products) sees the product's own derivatives, also where a factor is exactly 0 (a
    guard ``0 if d == 0`` there would take d's derivative with it)."""
    amount = ir.BinOp(loc, "*", d, partial)
    if not guarded(op, partial):
        return amount
    zero, other = (partial, d) if op == "*" else (d, partial)
    test = ir.BoolOp(loc, "and", (ir.Compare(loc, "==", zero, ir.Const(loc, 0.0)),
                                  ir.UnaryOp(loc, "not", ir.Call(loc, "isfinite", (other,)))))
    return ir.IfExp(loc, test, ir.Const(loc, 0.0), amount)


def unknown(op: str) -> bool:
    return op not in _RULES and op not in ("**", "pow")


def partials(op: str, args: tuple, result, loc, constant: tuple = ()) -> tuple:
    """The partial derivative of `op` with respect to each of `args` (None: none flows);
    `constant[i]` says argument i is a constant (a power's constant exponent)."""
    b = Build(loc)
    if op in ("**", "pow"):
        return _power(b, args[0], args[1], result, bool(constant and constant[1]))
    return _RULES[op](b, args, result)
