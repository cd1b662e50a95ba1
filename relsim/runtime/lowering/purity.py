"""What a generated expression may compute without side effects (`pure`), for the passes that
move (`hoist`), reuse (`load_reuse`) or drop (`dead_assignments`) statements of a row's body.

Pure: arithmetic, compares, choices, constants, casts, scalar math and loads from arrays. Under
the kernels' ``error_model="numpy"`` none of these raises (a division by zero gives inf, nan or
0) and loads are unchecked, so such a value computed once, earlier or never gives the same
values. A call is pure when it is one of `PURE_FUNCTIONS` or lives in one of `PURE_MODULES`.
"""
from __future__ import annotations

import ast

from .emit import CAST_FN, dotted

# calls of these compute a scalar from their arguments and nothing else
PURE_FUNCTIONS = frozenset({*CAST_FN.values(), "_u64", "abs", "min", "max", "round",
                            "np.round", "np.rint", "np.floor", "np.ceil", "np.sqrt",
                            "np.abs", "np.fabs", "np.isnan", "np.isinf", "np.isfinite"})
PURE_MODULES = ("math.", "_libm.", "_fused.", "_choice.")
_PURE_NODES = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare,
               ast.IfExp, ast.Subscript, ast.Attribute, ast.Tuple, ast.Slice, ast.Call,
               ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context)


def pure(value) -> bool:
    """Whether expression `value` computes a value and nothing else (loads allowed)."""
    for n in ast.walk(value):  # (a loop, not all() over a generator: lowering's hottest test)
        if not isinstance(n, _PURE_NODES) or type(n) is ast.Call and not pure_call(n):
            return False
    return True


def pure_call(node: ast.Call) -> bool:
    name = dotted(node.func)
    return name is not None and not node.keywords and (
        name in PURE_FUNCTIONS or name.startswith(PURE_MODULES))


def array_of(node):
    """The name of the array a subscript indexes (None when not a plain name)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def names_read(node) -> set:
    """The names `node` (a statement, an expression or a list of statements) reads."""
    nodes = ast.Module(node, []) if isinstance(node, list) else node
    return {n.id for n in ast.walk(nodes) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Load)}
