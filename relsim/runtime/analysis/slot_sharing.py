"""Slot sharing: a row that adds a value to one target and its negation to another
(``e.head.flux += f``, ``e.tail.flux -= f``: a face's flux into its two cells) stores the value
once; the fold of the second target negates it (``x + (-f)`` and ``x - f`` are the same bits).
This halves the slot traffic of conservative flux kernels without changing any result.

Two sites share a slot when, in the kernel's top-level straight-line code (no enclosing loop or
branch, no early exit), they reduce into the same whole field with the same operator, one value
is the other's negation (`-x`) of the same expression, and nothing between them can change what
that expression reads (only other reductions, into fields it does not read, may sit between).
"""
from __future__ import annotations

import math
from dataclasses import fields

from ...types import elem_of
from .. import ir


def shared_stores(layout, body) -> tuple:
    """For each slot of `layout` (a field's, in program order): (stored slot, negated). Empty
    when no two sites share (every slot stored as itself)."""
    sites = layout.sites
    if layout.conditional or not sites or any(site.loops for site in sites):
        return ()
    if not elem_of(layout.target.type).is_float:
        return ()
    top = {id(s): i for i, s in enumerate(body)}
    if any(id(site.stmt) not in top or site.stmt.index for site in sites):
        return ()
    stores: list = [None] * len(sites)
    nstored = 0
    for j, site in enumerate(sites):
        for i in range(j):
            if stores[i][1] or not _negation_of(site.stmt.value, sites[i].stmt.value):
                continue
            if _quiet_between(body, top[id(sites[i].stmt)], top[id(site.stmt)],
                              sites[i].stmt.value):
                stores[j] = (stores[i][0], True)
                break
        if stores[j] is None:
            stores[j] = (nstored, False)
            nstored += 1
    if nstored == len(sites):
        return ()
    return tuple(stores)


def _negation_of(value, other) -> bool:
    return isinstance(value, ir.UnaryOp) and value.op == "-" and same_expr(value.operand, other)


def _quiet_between(body, first, last, value) -> bool:
    """Only reductions into fields / Globals that `value` does not read sit between."""
    read = {id(n.field) for n in value.walk() if isinstance(n, ir.FieldRead)}
    read |= {id(n.ref) for n in value.walk() if isinstance(n, ir.GlobalRead)}
    for s in body[first + 1:last]:
        if isinstance(s, ir.FieldReduce) and id(s.field) not in read:
            continue
        if isinstance(s, ir.GlobalReduce) and id(s.ref) not in read:
            continue
        return False
    return True


def same_expr(a, b) -> bool:
    """Structural equality of IR expressions, source locations aside."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ir.Node):
        return all(same_expr(getattr(a, f.name), getattr(b, f.name))
                   for f in fields(a) if f.name != "loc")
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_expr(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or \
            (a != a and b != b)
    if isinstance(a, (int, str, bool, type(None))):
        return a == b
    return a is b or a == b
