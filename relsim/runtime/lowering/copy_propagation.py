"""Copies and constants in a row loop's body read where they are used (`propagate`).

Generated adjoint and tangent code names every intermediate: the implicit fem energy's tangent
adjoint assigns 1,699 locals a plain copy of another name (``x_d = _t906``) and 704 a float
constant (``_t12 = 0.0``) in 6,066 statements. Numba types, renames and lowers each of them.
Here, at the body's top level, a local assigned exactly once in the whole body, by a copy of a
name that nothing in the body stores to afterwards, or by a float or bool constant, is dropped
and its reads read that name (or constant) instead: the same values, fewer statements.

A local read before its assignment in the body (a value carried from an earlier row or from
before the loop) keeps its assignment, as does, at the top level, anything assigned in a
branch, an inner loop or by ``+=``. Integer constants stay named (a literal integer types
differently in Numba). The blocks of loops and branches are propagated the same way, each on
its own, keeping every name used outside the block (an inner loop's ``v_G_0 =
v__gradients1_return_0``, miniFE's shape-function gradients passed out of a helper, goes; a
value carried from one iteration to the next stays).
"""
from __future__ import annotations

import ast
import copy
from collections import Counter

from .single_assignment import is_store
from .substitution import substituted


def propagate(body: list, keep: frozenset = frozenset()) -> list:
    """`body` (a loop's statements, not changed) without the top-level copies and constants
    described above; names in `keep` (read outside the body) are never dropped."""
    stores, read_first, last = _stores_and_early_reads(body)
    known: dict = {}  # dropped local -> the expression its reads become
    out = []
    for at, stmt in enumerate(body):
        target = _single_target(stmt)
        if target is not None and target not in keep and stores[target] == 1 and \
                target not in read_first:
            value = stmt.value
            if isinstance(value, ast.Name) and value.id != target and \
                    last.get(value.id, -1) <= at:  # (nothing stores it afterwards)
                known[target] = known.get(value.id, value)
                continue
            if isinstance(value, ast.Constant) and type(value.value) in (float, bool):
                known[target] = value
                continue
        out.append(substituted(stmt, known) if known else stmt)
    return _blocks_propagated(out, keep)


def _blocks_propagated(body: list, keep: frozenset) -> list:
    """`body` with the blocks of its loops and branches propagated each on its own (copies:
    `body` is not changed), every name used outside a block (anywhere in `body` or in `keep`)
    kept there: an inner loop's copy of another name, assigned once and read only after it
    in the same iteration, is dropped as at the top level."""
    if not any(isinstance(stmt, _BLOCKS) for stmt in body):
        return body
    used = Counter(n.id for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name))
    out = []
    for stmt in body:
        if isinstance(stmt, _BLOCKS):
            stmt = copy.copy(stmt)
            for part in ("body", "orelse"):
                block = getattr(stmt, part)
                if block:
                    inside = Counter(n.id for s in block for n in ast.walk(s)
                                     if isinstance(n, ast.Name))
                    outside = {name for name, k in used.items() if k > inside[name]}
                    setattr(stmt, part, propagate(block, keep | outside))
        out.append(stmt)
    return out


_BLOCKS = (ast.For, ast.While, ast.If)


def _single_target(stmt):
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _stores_and_early_reads(body):
    """(stores: name -> how many times the body stores it, anywhere; the names read before
    the body's first store to them; name -> the position of the last statement storing it)."""
    stores: Counter = Counter()
    read_first: set = set()
    last: dict = {}
    for at, stmt in enumerate(body):
        stored = []
        for n in ast.walk(stmt):  # (one walk: the reads, then the stores, of each statement)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id not in stores:
                    read_first.add(n.id)
            elif is_store(n):
                stored.append(n.id if isinstance(n, ast.Name) else n.target.id)
        for name in stored:
            stores[name] += 1
            last[name] = at
    return stores, read_first, last
