"""Loop-invariant assignments computed once, before a loop of a fixed count (`invariants`).

A cell list's neighbour loop (``for k in range(27): for q in p.cell(dx, dy, dz).particles``)
computes, in each of its 27 iterations, the row's cell and that cell's coordinates on the
grid (a division and a remainder per axis by the grid's shape, read from an array) before it
moves by the iteration's offset. LLVM keeps them in the loop (Numba's integer division tests
its divisor and may raise, which LLVM does not move), so they are moved here, at the source:
md's force loop, 500 atoms, 1.56 -> 1.43 ms.

Only loops that certainly run are changed: ``for x in range(C)`` (or ``range(A, B)``) with
constant bounds and at least one iteration, so a moved statement runs exactly when it ran
before, once instead of C times. A statement moves when it is a plain assignment of a
generated local at the loop body's top level, before anything that could leave an iteration
early (``continue``, ``break``, ``return``, ``raise``); its local is assigned nowhere else in
the loop and not read there before it; its value is a pure expression (arithmetic, compares,
choices, constants, casts, scalar math, and loads from arrays the loop never stores to, in
loops that call nothing impure) of names the loop never assigns (or that moved before it).
Inner loops are done first, so what is invariant in two nested loops leaves both.
"""
from __future__ import annotations

import ast
import copy

from .emit import TEMPORARY, dotted
from .purity import array_of, pure, pure_call
from .single_assignment import is_store

_EXITS = (ast.Continue, ast.Break, ast.Return, ast.Raise)


def invariants(body: list) -> list:
    """`body` (a list of statements, not changed) with the invariant assignments of its
    fixed-count loops, at any depth, moved before those loops."""
    out = []
    for stmt in body:
        if isinstance(stmt, (ast.For, ast.If, ast.While)):
            inner = invariants(stmt.body)
            moved, kept = _split(stmt, inner) if isinstance(stmt, ast.For) and _runs(stmt) \
                else ([], inner)
            out.extend(moved)
            stmt = copy.copy(stmt)  # (shallow: the statements themselves are shared)
            stmt.body, stmt.orelse = kept, invariants(stmt.orelse)
        out.append(stmt)
    return out


def _runs(loop: ast.For) -> bool:
    """Whether `loop` is ``for x in range(...)`` with constant bounds and one iteration at
    least (a plain name as its variable)."""
    it = loop.iter
    if not (isinstance(loop.target, ast.Name) and isinstance(it, ast.Call) and
            isinstance(it.func, ast.Name) and it.func.id == "range" and not it.keywords and
            1 <= len(it.args) <= 2 and
            all(isinstance(a, ast.Constant) and type(a.value) is int for a in it.args)):
        return False
    bounds = [a.value for a in it.args]
    return (bounds[0] if len(bounds) == 1 else bounds[1] - bounds[0]) >= 1


def _split(loop: ast.For, body: list):
    """(the statements of `body` that move before `loop`, the rest in order)."""
    stores: dict = {}  # name -> how many times the loop stores it
    for n in ast.walk(ast.Module([loop.target, *body], [])):
        if is_store(n):
            key = n.id if isinstance(n, ast.Name) else n.target.id
            stores[key] = stores.get(key, 0) + 1
    written = {array_of(t) for n in ast.walk(ast.Module(body, [])) if isinstance(n, (
        ast.Assign, ast.AugAssign)) for t in (n.targets if isinstance(n, ast.Assign) else
                                             [n.target]) if isinstance(t, ast.Subscript)}
    loads_ok = not any(isinstance(n, ast.Call) and not pure_call(n) and
                       dotted(n.func) != "range" for n in ast.walk(ast.Module(body, [])))
    read: set = set()  # names read by the statements kept so far
    moved, kept = [], []
    for at, stmt in enumerate(body):
        if any(isinstance(n, _EXITS) for n in ast.walk(stmt)):
            kept.extend(body[at:])
            break
        target = _target(stmt)
        if target is not None and stores.get(target) == 1 and target not in read and \
                _invariant(stmt.value, stores, written, loads_ok):
            moved.append(stmt)
            del stores[target]  # (assigned before the loop now: invariant there)
            continue
        kept.append(stmt)
        read.update(n.id for n in ast.walk(stmt)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    return moved, kept


def _target(stmt):
    """The generated temporary (``_t<k>``) a plain single assignment stores, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name) and TEMPORARY.fullmatch(stmt.targets[0].id):
        return stmt.targets[0].id
    return None


def _invariant(value, stores, written, loads_ok) -> bool:
    if not pure(value):
        return False
    for n in ast.walk(value):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in stores:
            return False
        if isinstance(n, ast.Subscript) and (not loads_ok or array_of(n) in written or
                                             array_of(n) is None):
            return False
    return True
