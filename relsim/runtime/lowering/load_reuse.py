"""A load or a computation a row's body made already is read from its local, not made again
(`reuse`).

The lowering loads a vector field whole where a kernel names it: ``t.Ke[k]`` in a loop of 16
unrolled iterations loads all 16 components 16 times, and an adjoint or tangent reloads what
the forward pass loaded. Matrix algebra repeats arithmetic the same way: miniFE's element
kernel forms each node coordinate ``p[0] + h[0]`` four times, and its table rows' indices
``k + 5`` three times. LLVM removes the repeats, but Numba types and lowers each, and LLVM's
cost grows with what it has to prove equal: the adjoint of a 16-entry tet assembly (1,339
statements, a third of them repeated loads) took 16 s to compile, 12.7 s of it in LLVM.

Here, in straight-line code (a body's top-level statements, and those of each loop and branch
on their own), ``x = e`` where the same ``e`` (a load ``A[i]``: the same array name and index;
or arithmetic, a compare, a choice or a pure call: the same operations on the same names and
constants, ``a * b`` and ``b * a`` alike) was computed into ``y`` earlier becomes ``x = y``
(which `copy_propagation` then drops), as long as nothing in between may have changed it: a
store into ``A`` (any element: indices are not compared), a store to a name ``e`` or ``y``
reads, or a statement that calls anything impure, branches or loops (these forget everything).
Arrays are the kernel's parameters, never each other's views (the part functions are compiled
with ``noalias`` on that ground). The same operations on the same values give the same bits
(IEEE arithmetic is deterministic; float constants are told apart by their bits: 0.0 is not
-0.0). A store is never forwarded to a later load: the array may round what it stores (a
float32 field). The same values, fewer statements.
"""
from __future__ import annotations

import ast
import copy
from collections import defaultdict

from .purity import array_of, names_read, pure
from .single_assignment import is_store


def reuse(body: list) -> list:
    """`body` (a loop's statements, not changed) with its repeated loads and computations
    reading the local the first one stored, as described above (in nested loops and branches
    too, each block on its own)."""
    made: dict = {}  # a load's key (`_key`) -> the local holding it
    deps: dict = defaultdict(set)  # a name -> the keys of `made` that its store forgets
    copies: dict = {}  # local -> the local it copies (here or in `body`), for the keys
    copied_by: dict = defaultdict(set)  # local -> the locals copying it
    out = []
    for stmt in body:
        stmt = _inner_blocks_reused(stmt)
        computes = isinstance(stmt, (ast.Assign, ast.AugAssign)) and pure(stmt.value)
        target, value = _reusable(stmt, computes)
        key, reads = _key(value, copies) if value is not None else (None, None)
        hit = made.get(key) if key is not None else None
        if hit is not None:
            same = ast.Assign([ast.Name(target, ast.Store())], ast.Name(hit, ast.Load()))
            same.lineno = getattr(stmt, "lineno", 1)
            out.append(same)
        else:
            out.append(stmt)
        stored = _stored(stmt, computes)
        if stored is None:  # (a call, a branch, a loop: anything may change)
            for known in (made, deps, copies, copied_by):
                known.clear()
        for name in stored or ():
            for k in deps.pop(name, ()):
                made.pop(k, None)
            copies.pop(name, None)
            for local in copied_by.pop(name, ()):
                copies.pop(local, None)
        source = hit if hit is not None else _copy(stmt)
        if source is not None and source != (local := stmt.targets[0].id):
            source = copies.get(source, source)
            copies[local] = source
            copied_by[source].add(local)
        elif key is not None and hit is None and target not in reads:
            made[key] = target
            for name in (target, *reads):
                deps[name].add(key)
    return out


def _reusable(stmt, computes: bool):
    """(local, value) when `stmt` is ``local = A[index]`` with a pure index, or ``local =``
    pure arithmetic, compare, choice or call, else (None, None). `computes`: `stmt` is an
    assignment of a pure value (`pure`)."""
    if computes and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name) and (
                isinstance(stmt.value, _COMPUTED) or
                isinstance(stmt.value, ast.Subscript) and array_of(stmt.value) is not None):
        return stmt.targets[0].id, stmt.value
    return None, None


# a + b and a * b are b + a and b * a, bit for bit (IEEE; only which NaN a NaN-NaN operation
# returns may differ, which LLVM does not keep either)
_COMMUTING = (ast.Add, ast.Mult)
_COMPUTED = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Call)


def _inner_blocks_reused(stmt):
    """`stmt`, a loop or a branch, with each of its blocks reused on its own (a copy: `stmt`
    is not changed); any other statement as it is."""
    if not isinstance(stmt, (ast.For, ast.While, ast.If)):
        return stmt
    new = copy.copy(stmt)
    new.body = reuse(stmt.body)
    new.orelse = reuse(stmt.orelse)
    return new


def _key(node, copies) -> tuple:
    """(a hashable key of expression `node`, each copy read as the local it copies; the
    names the key reads, the array's among them)."""
    reads: set = set()

    def key(n):
        if isinstance(n, ast.Name):
            name = copies.get(n.id, n.id)
            reads.add(name)
            return name
        if isinstance(n, ast.Constant):  # (a float by its bits: 0.0 == -0.0 in Python)
            return (type(n.value).__name__, repr(n.value) if isinstance(n.value, float)
                    else n.value)
        if isinstance(n, ast.Tuple):
            return ("()",) + tuple(key(e) for e in n.elts)
        if isinstance(n, ast.Subscript):
            return ("[]", key(n.value), key(n.slice))
        if isinstance(n, ast.Call):
            return ("call", key(n.func)) + tuple(key(a) for a in n.args)
        if isinstance(n, ast.Attribute):
            return (".", key(n.value), n.attr)
        if isinstance(n, ast.BinOp):
            operands = (key(n.left), key(n.right))
            if isinstance(n.op, _COMMUTING):  # (as LLVM's own CSE takes them)
                operands = tuple(sorted(operands, key=repr))
            return (type(n.op).__name__,) + operands
        if isinstance(n, ast.UnaryOp):
            return (type(n.op).__name__, key(n.operand))
        if isinstance(n, ast.Compare):
            return ("cmp", key(n.left)) + tuple((type(o).__name__, key(c))
                                               for o, c in zip(n.ops, n.comparators))
        if isinstance(n, ast.IfExp):
            return ("if", key(n.test), key(n.body), key(n.orelse))
        if isinstance(n, ast.BoolOp):
            return (type(n.op).__name__,) + tuple(key(v) for v in n.values)
        reads.update(names_read(n))  # (anything else: its whole text, copies not followed)
        return ast.dump(n)
    return key(node), reads


def _copy(stmt):
    """The local `stmt` copies when it is ``local = other``, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Name) and \
            stmt.value.id != stmt.targets[0].id:
        return stmt.value.id
    return None


def _stored(stmt, computes: bool):
    """The names and arrays `stmt` stores to, or None when it may store anything (it calls
    anything impure, branches, loops, or stores through something not a plain array).
    `computes`: `stmt` is an assignment of a pure value (`pure`)."""
    if not computes:
        return None
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    names = {n.id if isinstance(n, ast.Name) else n.target.id
             for t in targets for n in ast.walk(t) if is_store(n)}
    arrays = {array_of(n) for t in targets for n in ast.walk(t)
              if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)}
    return None if None in arrays else names | arrays
