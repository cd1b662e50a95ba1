"""Arithmetic on float64 Globals that a captured step can replay: `rs.assign`.

``rs.assign(alpha, rz / pq)`` sets ``alpha`` to ``rz.value / pq.value`` now, like
``alpha.value = rz.value / pq.value``; inside an `rs.capture` block it is also recorded, and
each replay computes it again from the Globals' values then (compiled into the step on the
cpu). ``rz / pq`` is an `Expr`: `+ - * /`, unary minus, `abs` and ``.sqrt()`` of scalar float64
Globals and Python numbers; ``rr > tol`` a `Condition` (`< <= > >=`; `&` joins them: `AllOf`),
what `rs.while_loop` tests. Evaluated on the host in Python floats, in compiled code in float64:
the same IEEE operations, the same bits.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import DataError
from . import launch as _launch

OPS = ("+", "-", "*", "/", "neg", "abs", "sqrt")
UNARY = ("neg", "abs", "sqrt")
GLOBAL = None  # the Global class (set by globals.py, which imports this module)


class Operand:
    """Arithmetic and comparisons that build expressions: shared by `Expr` and scalar f64
    Globals (`relations.globals.Global`). Ordering only: == and hashing stay identity's."""

    __slots__ = ()

    def __add__(self, other):
        return _binary("+", self, other)

    def __radd__(self, other):
        return _binary("+", other, self)

    def __sub__(self, other):
        return _binary("-", self, other)

    def __rsub__(self, other):
        return _binary("-", other, self)

    def __mul__(self, other):
        return _binary("*", self, other)

    def __rmul__(self, other):
        return _binary("*", other, self)

    def __truediv__(self, other):
        return _binary("/", self, other)

    def __rtruediv__(self, other):
        return _binary("/", other, self)

    def __neg__(self):
        return Expr("neg", (operand(self),))

    def __abs__(self):
        return Expr("abs", (operand(self),))

    def sqrt(self):
        """The correctly rounded square root (NaN below zero, as compiled code gives it)."""
        return Expr("sqrt", (operand(self),))

    def __lt__(self, other):
        return Condition("<", self, other)

    def __le__(self, other):
        return Condition("<=", self, other)

    def __gt__(self, other):
        return Condition(">", self, other)

    def __ge__(self, other):
        return Condition(">=", self, other)


class Expr(Operand):
    """A float64 value computed from scalar float64 Globals and numbers (`op` of `args`: +, -,
    *, / of two; neg, abs, sqrt of one)."""

    __slots__ = ("op", "args")

    def __init__(self, op: str, args: tuple):
        self.op, self.args = op, args

    def __bool__(self):
        raise DataError("a Global expression has no truth value: read `.value` after the "
                        "step, or give it to rs.assign")

    def __repr__(self) -> str:
        if self.op in UNARY:
            return f"{'-' if self.op == 'neg' else self.op}({_show(self.args[0])})"
        return f"({_show(self.args[0])} {self.op} {_show(self.args[1])})"


class _Test:
    """What `Condition` and `AllOf` share: `&` joins them; no truth value on the host."""

    __slots__ = ()

    def __and__(self, other):
        return AllOf(self.parts + _condition(other).parts)

    def __bool__(self):
        raise DataError("a Global condition has no truth value on the host: give it to "
                        "rs.while_loop or rs.cond, or compare `.value`s")


class Condition(_Test):
    """`left op right` (op one of < <= > >=) of two operands: a loop's condition
    (`global_loop.while_loop`). False when either side is NaN, as in Python and compiled
    code."""

    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left, right):
        self.op, self.left, self.right = op, operand(left), operand(right)

    def holds(self) -> bool:
        a, b = evaluate(self.left), evaluate(self.right)
        return a < b if self.op == "<" else a <= b if self.op == "<=" else \
            a > b if self.op == ">" else a >= b

    @property
    def parts(self) -> tuple:
        """The comparisons that must all hold (one here: `AllOf` has several)."""
        return (self,)

    def __repr__(self) -> str:
        return f"{_show(self.left)} {self.op} {_show(self.right)}"


class AllOf(_Test):
    """Comparisons that must all hold (`c1 & c2`), tested in order."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple):
        self.parts = parts

    def holds(self) -> bool:
        return all(c.holds() for c in self.parts)

    def __repr__(self) -> str:
        return " & ".join(f"({c!r})" for c in self.parts)


def _condition(c):
    if not isinstance(c, _Test):
        raise DataError(f"`&` joins comparisons of Globals (rr > tol), got {c!r}")
    return c


def operand(x, what: str = "rs.assign"):
    """`x` as an expression operand: an Expr, a scalar float64 Global, or a float."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, GLOBAL):
        if x.type.shape or x.type.dtype != np.float64:
            raise DataError(f"{what}: only scalar f64 Globals take part in Global arithmetic, "
                            f"got {_show(x)} of type {x.type!r}")
        return x
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer,
                                                              np.floating)):
        raise DataError(f"{what}: a Global expression combines f64 Globals and numbers, got "
                        f"{x!r}")
    v = float(x)
    if v != x:
        raise DataError(f"{what}: {x!r} is not exactly a float64")
    return v


def _binary(op, a, b):
    return Expr(op, (operand(a), operand(b)))


def evaluate(x) -> float:
    """The value of an operand now (Globals read from their host arrays, brought up to date)."""
    if isinstance(x, float):
        return x
    if not isinstance(x, Expr):  # a Global
        return float(x.data[0])
    a = evaluate(x.args[0])
    if x.op == "neg":
        return -a
    if x.op == "abs":
        return abs(a)
    if x.op == "sqrt":
        return math.sqrt(a) if not a < 0.0 else math.nan
    b = evaluate(x.args[1])
    if x.op == "+":
        return a + b
    if x.op == "-":
        return a - b
    if x.op == "*":
        return a * b
    return a / b if b != 0.0 else _divide_by_zero(a, b)


def _divide_by_zero(a: float, b: float) -> float:
    """IEEE division by a zero, as compiled code divides (Python raises): +-inf or NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.divide(np.float64(a), np.float64(b)))


def globals_of(x) -> list:
    """The Globals an operand reads, once each, in order."""
    out = {}

    def walk(y):
        if isinstance(y, Expr):
            for a in y.args:
                walk(a)
        elif not isinstance(y, float):
            out[id(y)] = y
    walk(x)
    return list(out.values())


def assign(target, value) -> None:
    """``rs.assign(g, value)``: set the scalar float64 Global `g` to `value` (a number, a Global,
    or an expression of them: `Expr`), computed now; inside `rs.capture`, recorded, and
    computed again at each replay."""
    if not isinstance(target, GLOBAL):
        raise DataError(f"rs.assign assigns a Global, got {target!r}")
    operand(target, "rs.assign")
    expr = operand(value)
    v = evaluate(expr)
    for r in _launch.recorders:
        r.before_assign(target, expr, v)
    if _launch.effects():  # (not in a side a capture traces)
        set_value(target, v)


def set_value(target, v: float) -> None:
    """Write `v` into Global `target`'s host array (as an assignment from the host does)."""
    target._data[0] = v
    target._row_data[0] = -1
    if target.residency is not None:
        target.residency.after_host_write(target)


def _show(x) -> str:
    if isinstance(x, (Expr, float)):
        return repr(x)
    return f"Global {x.name!r}" if x.name else "a Global"
