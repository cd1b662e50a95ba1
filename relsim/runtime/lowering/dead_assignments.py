"""Assignments of a row's body whose locals nothing reads are dropped (`drop`).

A kernel that reads one component of a vector field loads the whole vector (``t.Ke[k]``), an
adjoint recomputes forward values some of which its derivatives never need, and `load_reuse`
and `copy_propagation` leave locals behind. Numba types and lowers each, and LLVM removes them
only after optimising around them (the 16-entry tet assembly's adjoint: 260 dead loads of
1,339 statements, 16 s of compiling, 5.5 s without them).

Here a plain assignment of one local at the body's top level is dropped when no statement of
the body, at any depth, reads that local, the caller does not read it after the body (`keep`),
and its value is pure (`purity.pure`: with the kernels' numpy error model it cannot raise, so
not computing it changes nothing else). Repeated until nothing more goes: dropping a load
can leave its index unread.
"""
from __future__ import annotations

import ast
from collections import Counter

from .purity import pure


def drop(body: list, keep: frozenset = frozenset()) -> list:
    """`body` (a loop's statements, not changed) without its dead pure assignments."""
    reads = Counter(n.id for n in ast.walk(ast.Module(body, []))
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    out = list(body)
    while True:
        dead = [at for at, stmt in enumerate(out) if _dead(stmt, reads, keep)]
        if not dead:
            return out
        for at in reversed(dead):
            reads.subtract(n.id for n in ast.walk(out[at].value)
                           if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
            del out[at]


def _dead(stmt, reads: Counter, keep: frozenset) -> bool:
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
        isinstance(stmt.targets[0], ast.Name) and reads[stmt.targets[0].id] <= 0 and \
        stmt.targets[0].id not in keep and pure(stmt.value)
