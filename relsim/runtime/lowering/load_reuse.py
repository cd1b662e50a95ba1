"""A load a row's body made already is read from its local, not made again (`reuse`).

The lowering loads a vector field whole where a kernel names it: ``t.Ke[k]`` in a loop of 16
unrolled iterations loads all 16 components 16 times, and an adjoint or tangent reloads what
the forward pass loaded. LLVM removes the copies, but its cost grows with the loads it has to
prove equal: the adjoint of a 16-entry tet assembly (1,339 statements, a third of them repeated
loads) took 16 s to compile, 12.7 s of it in LLVM.

Here, in the body's top-level statements (straight-line code), ``x = A[i]`` where the same
``A[i]`` (the same array name and index expression) was loaded into ``y`` earlier becomes
``x = y`` (which `copy_propagation` then drops), as long as nothing in between may have
changed it: a store into ``A`` (any element: indices are not compared), a store to a name the
index or ``y`` reads, or a statement that calls anything impure, branches or loops (these
forget every load). Arrays are the kernel's parameters, never each other's views (the part
functions are compiled with ``noalias`` on that ground). A store is never forwarded to a
later load: the array may round what it stores (a float32 field). The same values, fewer
statements.
"""
from __future__ import annotations

import ast
import copy

from .purity import array_of, names_read, pure
from .single_assignment import is_store


def reuse(body: list) -> list:
    """`body` (a loop's statements, not changed) with its repeated loads reading the local
    the first one stored, as described above."""
    made: dict = {}  # ast.dump(load) -> (local holding it, its array, the names it reads)
    copies: dict = {}  # local -> the local it copies (here or in `body`), for the keys
    out = []
    for stmt in body:
        target, load = _load(stmt)
        if load is not None:
            load = _Copies(copies).visit(copy.deepcopy(load)) if copies else load
            key = ast.dump(load)
        if load is not None and key in made:
            same = ast.Assign([ast.Name(target, ast.Store())], ast.Name(made[key][0], ast.Load()))
            same.lineno = getattr(stmt, "lineno", 1)
            out.append(same)
        else:
            out.append(stmt)
        _forget(made, copies, stmt)
        if load is not None and key in made:
            copies[target] = made[key][0]
        elif _copy(stmt) is not None:
            copies[stmt.targets[0].id] = copies.get(stmt.value.id, stmt.value.id)
        elif load is not None and target not in names_read(load):
            made[key] = (target, array_of(load), names_read(load))
    return out


def _load(stmt):
    """(local, load) when `stmt` is ``local = A[index]`` with a pure index, else (None, None)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Subscript) and \
            array_of(stmt.value) is not None and pure(stmt.value):
        return stmt.targets[0].id, stmt.value
    return None, None


def _copy(stmt):
    """The local `stmt` copies when it is ``local = other``, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Name) and \
            stmt.value.id != stmt.targets[0].id:
        return stmt.value.id
    return None


def _forget(made: dict, copies: dict, stmt) -> None:
    """Drop from `made` the loads `stmt` may change or whose locals it overwrites, and from
    `copies` the copies it overwrites."""
    if not (isinstance(stmt, (ast.Assign, ast.AugAssign)) and pure(stmt.value)):
        made.clear()  # (a call, a branch, a loop: anything may change)
        copies.clear()
        return
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    names = {n.id if isinstance(n, ast.Name) else n.target.id
             for t in targets for n in ast.walk(t) if is_store(n)}
    arrays = {array_of(n) for t in targets for n in ast.walk(t)
              if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)}
    if None in arrays:
        made.clear()
        copies.clear()
        return
    for key, (local, array, reads) in list(made.items()):
        if array in arrays or local in names or reads & names:
            del made[key]
    for local, source in list(copies.items()):
        if local in names or source in names:
            del copies[local]


class _Copies(ast.NodeTransformer):
    """Reads of the copies made here -> the locals they copy (in a load's key)."""

    def __init__(self, copies):
        self.copies = copies

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.copies:
            return ast.Name(self.copies[node.id], ast.Load())
        return node
