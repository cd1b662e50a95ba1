"""A large parallel loop's body compiled as a function of its own, which the loop calls.

Numba's parallel passes (parfor conversion, array analysis, hoisting, gufunc lowering) take time
that grows much faster than the loop body they see: measured on this project's smoke advection
kernel (2-D, semi-Lagrangian, three bilinear interpolations), the grid loops' parallel variant
compiled in 57 s against 3.6 s for the same loops serially, and its row loop in 16 s against
1.1 s. With the body outlined — ``for _g1 in prange(...): kernel_grid_body(_g1, ...)``, the
body an ordinary (serial) function — the parallel passes see a loop of one call: 7.2 s and
2.9 s, and the launch ran as fast or faster (15 ms against 22 ms a step at 512^2, 2 threads).
A small body gains nothing (a light row loop's call can cost vectorisation: 1.4 -> 1.7 ms on
2M rows), so only bodies of at least `OUTLINE_STATEMENTS` statements are outlined.

The body function takes the loop's index, the function's arguments and the names the function
assigns before the loop, in that order; a ``continue`` of the loop itself (a kernel's early
``return``) becomes a ``return``. Only the statements on the way to such a ``continue`` are
copied: the rest stay shared with the serial variants (`emit.unparse` relies on that). The
arithmetic is the same statements in the same order: the bits do not change.
"""
from __future__ import annotations

import ast

from ...lowering.emit import call, name

# measured (see above): 37 and 40 statements, outlined 1.35 / 1.75 s against 0.93 / 1.01 s
# inline; 388 statements, 2.9 s against 16 s
OUTLINE_STATEMENTS = 150


def large(stmts) -> bool:
    """Whether a loop body of these statements is large (its compile time matters more than
    a few operations a row)."""
    return _statements(stmts) >= OUTLINE_STATEMENTS


def outlined(fn: ast.FunctionDef) -> tuple:
    """(body function or None, fn): fn's `prange` loop calling a function of its body when
    the body is large, else fn unchanged."""
    found = _parallel_loop(fn)
    if found is None:
        return None, fn
    at, loop = found
    if not large(loop.body):
        return None, fn
    before = [t.id for s in fn.body[:at] if isinstance(s, ast.Assign)
              for t in s.targets if isinstance(t, ast.Name)]
    params = [loop.target.id] + [a.arg for a in fn.args.args] + before
    body_name = f"{fn.name}_body"
    body = ast.FunctionDef(body_name, ast.arguments([], [ast.arg(p) for p in params], None, [],
                                                    [], None, []),
                           _returning(loop.body), [], None, None)
    calling = ast.For(loop.target, loop.iter, [ast.Expr(call(body_name, *map(name, params)))],
                      [])
    return body, ast.FunctionDef(fn.name, fn.args, fn.body[:at] + [calling], [], None, None)


def _parallel_loop(fn):
    """(index, loop) of fn's last top-level statement when it is a `prange` loop whose names
    nothing after it reads (there is nothing after it), else None."""
    if not fn.body:
        return None
    loop = fn.body[-1]
    if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and \
            isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) and \
            loop.iter.func.id == "prange" and not loop.orelse:
        return len(fn.body) - 1, loop
    return None


def _statements(stmts) -> int:
    n = 0
    for s in stmts:
        n += 1
        for part in ("body", "orelse"):
            sub = getattr(s, part, None)
            if sub:
                n += _statements(sub)
    return n


def _returning(stmts: list) -> list:
    """`stmts` with each `continue` of the loop they are the body of (not of a loop inside
    it) a `return`; the statements on the way copied, the others shared."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Continue):
            s = ast.Return(None)
        elif isinstance(s, ast.If):
            body, orelse = _returning(s.body), _returning(s.orelse)
            if body is not s.body or orelse is not s.orelse:
                s = ast.If(s.test, body, orelse)
        elif isinstance(s, (ast.Break, ast.Try, ast.With)):  # (never generated in a row loop)
            raise ValueError(f"cannot outline a loop body holding {type(s).__name__}")
        out.append(s)
    return stmts if all(a is b for a, b in zip(out, stmts)) else out
