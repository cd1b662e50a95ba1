"""The values an integer expression of a kernel can take, where its IR alone says so.

A run-time index into a local vector, a matrix or a Global is checked where it is read (a
negative index wraps once, one still outside sets the error line: `lowering/expr.py`). Where
the index is known to lie in range, the check is left out: the same values, and no branch per
read (each one a block and a phi for Numba to type and LLVM to optimise: miniFE's element
kernel reads 40 entries of its shape-function table per Gauss point, ``TABLE[8 * g + i, c]``).

`Ranges(body)` knows a range for a local whose every binding has one: a static loop's variable
(``range`` of constants), an assignment of an expression with a range (constants, such locals,
``+ - *`` and unary minus of them). A local bound any other way (a loop over a run-time range,
a key or vector loop, an unpacking, its own earlier value: ``i = i + 1``) has none, and neither
has an expression that reads it. Every read of a local sees a value one of its bindings made,
so the union of their ranges holds at each read. Ranges stay within int32 (the narrowest
integer a kernel computes in): arithmetic that could wrap has none.
"""
from __future__ import annotations

from .. import ir

_LIMIT = 2 ** 31  # ranges within [-_LIMIT, _LIMIT): no i32 or i64 arithmetic wraps in them
_OPEN = object()  # a local whose range is being found (a cycle: none)


class Ranges:
    """Ranges (lo, hi), both included, of a kernel body's integer expressions (`of`)."""

    def __init__(self, body):
        self.bindings: dict = {}  # local -> its bindings: an expression, (lo, hi), or None
        for s in ir.walk_stmts(body):
            if isinstance(s, ir.Assign):
                self._bind(s.name, s.value)
            elif isinstance(s, ir.ForRange):
                self._bind(s.var, _static_range(s))
            elif isinstance(s, (ir.ForEach, ir.ForGroup)):
                self._bind(s.var, None)
            elif isinstance(s, (ir.AssignIndex, ir.Unpack)):
                self._bind(s.name, None)
        self.known: dict = {}  # local -> its range, or None (found at its first use)

    def _bind(self, local: str, binding) -> None:
        self.bindings.setdefault(local, []).append(binding)

    def of(self, e):
        """(lo, hi) of integer expression `e`, or None where the IR does not bound it."""
        if not _is_int(getattr(e, "type", None)) and not isinstance(e, ir.Const):
            return None
        if isinstance(e, ir.Const):
            v = e.value
            if isinstance(v, bool) or not isinstance(v, int):
                return None
            return _within((v, v))
        if isinstance(e, ir.Local):
            return self._local(e.name)
        if isinstance(e, ir.UnaryOp) and e.op == "-":
            r = self.of(e.operand)
            return None if r is None else _within((-r[1], -r[0]))
        if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*"):
            a, b = self.of(e.left), self.of(e.right)
            if a is None or b is None:
                return None
            if e.op == "+":
                return _within((a[0] + b[0], a[1] + b[1]))
            if e.op == "-":
                return _within((a[0] - b[1], a[1] - b[0]))
            products = [x * y for x in a for y in b]
            return _within((min(products), max(products)))
        return None

    def _local(self, local: str):
        if local in self.known:
            r = self.known[local]
            return None if r is _OPEN else r
        self.known[local] = _OPEN
        r = None
        for binding in self.bindings.get(local, [None]):
            part = binding if isinstance(binding, tuple) or binding is None else \
                self.of(binding)
            if part is None:
                r = None
                break
            r = part if r is None else (min(r[0], part[0]), max(r[1], part[1]))
        self.known[local] = r
        return r


def _static_range(s):
    """(lo, hi) of a loop over a range of constants (an empty one binds nothing: (0, 0),
    harmless in a union), else None."""
    bounds = (s.start, s.stop, s.step)
    if not all(isinstance(x, ir.Const) and isinstance(x.value, int) and
               not isinstance(x.value, bool) for x in bounds):
        return None
    values = range(*(x.value for x in bounds))
    return _within((min(values), max(values))) if values else (0, 0)


def _is_int(t) -> bool:
    return t is not None and getattr(t, "shape", None) == () and \
        getattr(t, "is_int", False)


def _within(r):
    return r if -_LIMIT <= r[0] and r[1] < _LIMIT else None
