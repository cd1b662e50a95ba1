"""One name per assignment in a row loop's straight-line body (`rename`).

Generated adjoint and tangent code assigns a derivative's local again at each contribution
(``x_d = _t906``, then ``x_d = _t910``...): the implicit fem energy's tangent adjoint has 659
locals assigned 2-25 times in a body of 6,000 statements. Numba's SSA reconstruction rewrites
the whole function once per such local (its cost is about their number times the function's
size): that kernel took 28 s to compile. Here each later assignment of such a local gets a
fresh name and the reads after it follow: the same values, one definition each.

Only locals that are plainly per row are renamed: assigned at the body's top level (not in a
branch or an inner loop, not by ``+=``), never read before their first assignment in the body,
and not among the names the caller says are used outside it (`elsewhere`; the cpu's row loops
pass none: a row's locals are its own, the loop's index and what precedes the loop are read
before any assignment in the body, so they keep their names).
"""
from __future__ import annotations

import ast
from collections import Counter

from .substitution import substituted


def rename(body: list, elsewhere: frozenset = frozenset()) -> list:
    """`body` (a loop's statements, not changed) with each eligible local's later assignments
    renamed `<name>__<k>`, and every read of it after an assignment reading that name. `elsewhere`:
    names used outside the body (never renamed)."""
    candidates = _candidates(body) - elsewhere
    if not candidates:
        return body
    current: dict = {}
    counts: Counter = Counter()
    out = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            value = substituted(stmt.value, current) if current else stmt.value
            targets = []
            for t in stmt.targets:
                if t.id in candidates:
                    counts[t.id] += 1
                    new = t.id if counts[t.id] == 1 else f"{t.id}__{counts[t.id]}"
                    current[t.id] = new
                    targets.append(ast.Name(new, ast.Store()))
                else:
                    targets.append(t)
            renamed = ast.Assign(targets, value)
            renamed.lineno = getattr(stmt, "lineno", 1)
            out.append(renamed)
        elif current:
            out.append(substituted(stmt, current))
        else:
            out.append(stmt)
    return out


def _candidates(body: list) -> set:
    """Locals assigned more than once at the top level of `body` by plain assignments, nowhere
    else in it, and never read before their first assignment."""
    top: Counter = Counter()
    deeper: set = set()
    read_first: set = set()
    seen: set = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                    node.id not in seen:
                read_first.add(node.id)
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            for t in stmt.targets:
                top[t.id] += 1
                seen.add(t.id)
            stores = [n for n in ast.walk(stmt.value) if is_store(n)]
        else:
            stores = [n for n in ast.walk(stmt) if is_store(n)]
        for node in stores:
            deeper.add(node.id if isinstance(node, ast.Name) else node.target.id)
    return {v for v, k in top.items() if k > 1} - deeper - read_first


def is_store(node) -> bool:
    """Whether `node` stores a plain name (an assignment's target, ``+=``, ``:=``)."""
    return (isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)) or \
        (isinstance(node, (ast.AugAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name))
