"""Compile-time evaluation in the frontend: constant expressions, and `rs.static` loops.

A *compile-time expression* is evaluated in Python while the kernel compiles: literals, names
captured from the enclosing scope, the variables of enclosing static loops, tuples and lists of
these, arithmetic and indexing on them, `range(...)` and the rs functions of
`builtin_table.COMPILE_TIME` (`rs.vec`, `rs.mat`, `rs.eye`). Anything computed in the kernel
(its key, a local, a field, an rs.Global) is not one: the error points at it.

`for v in rs.static(<iterable>):` is unrolled here, before type checking, so every target gets
it: the body is converted once per item, with `v` bound to the item (a constant, as a captured
value is; `for dx, dy in rs.static(...)` unpacks items). Each copy keeps the source locations
of the body, so later errors point at the user's line. `break` and `continue` in a static loop
are refused (there is no loop left to leave); `return` in a kernel's static loop leaves the
kernel, as in Python. The loop variable exists only inside the body.
"""
from __future__ import annotations

import ast
import builtins as _py_builtins
import operator

import numpy as np

from ...errors import KernelNameError, KernelSyntaxError, KernelTypeError
from ...relations.globals import Global
from ..builtin_table import COMPILE_TIME

MAX_UNROLL = 1024  # items of one static loop (each copies the body into the kernel)

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
          ast.Invert: operator.invert}
_CALLABLE = tuple(COMPILE_TIME.values()) + (range,)
_HINT = ("a compile-time constant: a literal, a name captured from the enclosing scope or a "
         "static loop variable, or range() / tuples / arithmetic of these")


class _NotStatic(Exception):
    """A part of a compile-time expression that is computed in the kernel."""

    def __init__(self, node, reason):
        super().__init__(reason)
        self.node, self.reason = node, reason


def value(fe, node, scope, what: str):
    """The Python value of compile-time expression `node`; `what` names it in errors."""
    try:
        return _eval(fe, node, scope)
    except _NotStatic as ns:
        raise fe.error(KernelTypeError, f"{what} must be {_HINT}; {ns.reason}",
                       scope.src.loc(ns.node)) from None


NOT_STATIC = object()


def constant(fe, node, scope):
    """The value of `node` if it is a compile-time expression, else NOT_STATIC."""
    try:
        return _eval(fe, node, scope)
    except _NotStatic:
        return NOT_STATIC


def loop_index(fe, node, scope):
    """The int an index computed from static loop variables and literals only is (``Ke[k //
    8, k % 8]``, ``t.v[2 * i]`` in ``for k in rs.static(...)``), so a vector, a matrix or a key
    vector is indexed at a fixed position (a run-time index builds a tuple of every entry, and
    a reduction through ``t.v[2 * i]`` would not be a fixed key path); else None. Captured
    names are left to the frontend, which records them (`Frontend.capture`)."""
    if not isinstance(node, (ast.BinOp, ast.UnaryOp)) or any(
            isinstance(n, ast.Name) and n.id not in scope.static for n in ast.walk(node)):
        return None
    v = constant(fe, node, scope)
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and \
            -2 ** 63 <= int(v) < 2 ** 63:
        return int(v)
    return None


def call_value(fe, call, scope):
    """`rs.vec(3)`, `rs.eye(n, rs.f32)`...: a COMPILE_TIME function called while compiling."""
    name = ast.unparse(call.func)
    return value(fe, call, scope, f"the arguments of {name}()")


def _eval(fe, node, scope):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _name(fe, node, scope)
    if isinstance(node, ast.Attribute):
        base = _path_base(fe, node, scope)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise fe.error(KernelNameError, f"{_short(base)} has no attribute {node.attr!r}",
                           scope.src.loc(node)) from None
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_eval(fe, x, scope) for x in node.elts)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        return _apply(fe, node, scope, _UNOPS[type(node.op)], _eval(fe, node.operand, scope))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _apply(fe, node, scope, _BINOPS[type(node.op)], _eval(fe, node.left, scope),
                      _eval(fe, node.right, scope))
    if isinstance(node, ast.Subscript):
        return _apply(fe, node, scope, operator.getitem, _path_base(fe, node, scope),
                      _eval(fe, node.slice, scope))
    if isinstance(node, ast.Slice):
        parts = (node.lower, node.upper, node.step)
        return slice(*(None if p is None else _eval(fe, p, scope) for p in parts))
    if isinstance(node, ast.Call):
        fn = _eval(fe, node.func, scope)
        if not any(fn is c for c in _CALLABLE):
            raise _NotStatic(node, f"{ast.unparse(node.func)}() is not evaluated while "
                                   f"compiling (only range() and rs.{', rs.'.join(COMPILE_TIME)})")
        if node.keywords:
            raise fe.error(KernelSyntaxError, "keyword arguments are not supported in kernel "
                           "calls", scope.src.loc(node))
        return _apply(fe, node, scope, fn, *(_eval(fe, a, scope) for a in node.args))
    raise _NotStatic(node, f"{ast.unparse(node)!r} is not")


def _path_base(fe, node, scope):
    """The object `node` (an attribute or subscript) is taken from; a key path computed in
    the kernel (`c.n`, `r.v[0]`) is refused as a whole."""
    try:
        return _eval(fe, node.value, scope)
    except _NotStatic as ns:
        if ns.node is not node.value or not isinstance(node.value, (ast.Name, ast.Attribute,
                                                                     ast.Subscript)):
            raise
        raise _NotStatic(node, f"{ast.unparse(node)!r} is computed in the kernel") from None


def _name(fe, node, scope):
    n = node.id
    if not scope.is_static(n):
        raise _NotStatic(node, f"{n!r} is computed in the kernel")
    if n in scope.static or n in scope.captured or hasattr(_py_builtins, n):
        v = scope.lookup(n)
        if isinstance(v, Global):
            raise _NotStatic(node, f"rs.Global {n!r} is read when the kernel runs")
        return v
    raise fe.error(KernelNameError, f"name {n!r} is not defined", scope.src.loc(node))


def _apply(fe, node, scope, fn, *args):
    try:
        return fn(*args)
    except (TypeError, ValueError, IndexError, KeyError, ArithmeticError) as exc:
        raise fe.error(KernelTypeError, f"{ast.unparse(node)}: {exc}",
                       scope.src.loc(node)) from None


# -- static loops -------------------------------------------------------------------------
def unroll(fe, s, scope, in_func) -> list:
    """The IR of `for <target> in rs.static(<iterable>): <body>`, the body once per item."""
    loc = scope.src.loc(s)
    if s.orelse:
        raise fe.syntax("'for ... else' is not supported in kernels", loc)
    call = s.iter
    if call.keywords or len(call.args) != 1:
        raise fe.syntax("rs.static(iterable) takes one argument", scope.src.loc(call))
    items = _items(fe, value(fe, call.args[0], scope, "the iterable of rs.static"),
                   scope.src.loc(call.args[0]))
    names = _target_names(fe, s.target, scope)
    _refuse_exits(fe, s.body, scope)
    saved = {n: scope.static[n] for n in names if n in scope.static}
    out: list = []
    try:
        for item in items:
            scope.static.update(_bind(fe, s.target, item, scope))
            out.extend(fe.block(s.body, scope, in_func))
    finally:
        for n in names:
            scope.static.pop(n, None)
        scope.static.update(saved)
    return out


def _items(fe, it, loc) -> list:
    if isinstance(it, np.ndarray) and it.ndim >= 1:
        items = list(it)
    elif isinstance(it, (tuple, list, range)):
        items = list(it)
    else:
        raise fe.error(KernelTypeError, f"rs.static needs a tuple, list, range or NumPy array "
                       f"to loop over, not {_short(it)}", loc)
    if len(items) > MAX_UNROLL:
        raise fe.error(KernelTypeError, f"rs.static would copy the loop body {len(items)} "
                       f"times (at most {MAX_UNROLL}); use a plain range() loop", loc)
    return items


def _target_names(fe, t, scope) -> list:
    if isinstance(t, ast.Name):
        if t.id == scope.param:
            raise fe.syntax(f"cannot assign to the kernel parameter {t.id!r}", scope.src.loc(t))
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for x in t.elts for n in _target_names(fe, x, scope)]
    raise fe.syntax("a static loop variable must be a name or a tuple of names",
                    scope.src.loc(t))


def _bind(fe, t, item, scope) -> dict:
    if isinstance(t, ast.Name):
        return {t.id: item}
    parts = list(item) if isinstance(item, (tuple, list, np.ndarray)) else None
    if parts is None or len(parts) != len(t.elts):
        raise fe.error(KernelTypeError, f"cannot unpack {_short(item)} into {len(t.elts)} "
                       f"names", scope.src.loc(t))
    out: dict = {}
    for x, v in zip(t.elts, parts):
        out.update(_bind(fe, x, v, scope))
    return out


def _refuse_exits(fe, stmts, scope) -> None:
    """`break` / `continue` of this static loop (not of a loop nested in it)."""
    for s in stmts:
        if isinstance(s, (ast.Break, ast.Continue)):
            word = "break" if isinstance(s, ast.Break) else "continue"
            raise fe.syntax(f"'{word}' in a static loop is not supported: rs.static unrolls "
                            f"the loop while compiling; test a condition with 'if' instead",
                            scope.src.loc(s))
        if isinstance(s, ast.If):
            _refuse_exits(fe, s.body, scope)
            _refuse_exits(fe, s.orelse, scope)


def _short(v) -> str:
    r = repr(v)
    return r if len(r) < 60 else r[:57] + "..."
