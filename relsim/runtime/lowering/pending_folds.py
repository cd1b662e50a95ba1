"""Lowering of absorbed folds: a kernel compiled to fold, at the start of each row, the slots of
key reductions another launch left pending on a field it reads (`backends/cpu/pending.py`). The
code folds exactly as the compiled gathers do (`host_folds._fold_row`): the row's slots in
order, all components of a slot at once, each step by the one fold rule,
`semantics.reduce_step`."""
from __future__ import annotations

import ast

from .. import semantics
from .emit import call, name, store, unsigned


def fold_pending_row(alg, i: int, comps, op: str, has_ids: bool, et) -> None:
    """Append to `alg.out` the fold of pending reduction i (extra arguments `_absorb<i>_off`,
    `_ids`, `_vals`) into the field components `comps` ((array, index) pairs of the kernel's
    own field parameter: a second view of the storage could be assumed not to alias it), whose
    element type is `et`."""
    off, ids, vals = (f"_absorb{i}_{part}" for part in ("off", "ids", "vals"))
    accs = [alg.fresh("_a") for _ in comps]
    for (arr, sl), a in zip(comps, accs):
        alg.out.append(ast.Assign([store(a)], ast.Subscript(name(arr), sl, ast.Load())))
    j, s = alg.fresh("_j"), alg.fresh("_s")
    body = [ast.Assign([store(s)], ast.Subscript(name(ids), unsigned(name(j)), ast.Load())
                       if has_ids else name(j))]

    def step(acc, v):  # acc = acc op v, emitted into the loop body
        outer, alg.out = alg.out, body
        new = semantics.reduce_step(alg, op, name(acc), v, et)
        alg.out = outer
        body.append(ast.Assign([store(acc)], new))

    if has_ids:  # a negative id ~k stands for the negation of shared slot k (slot_sharing)
        neg = ast.Compare(name(s), [ast.Lt()], [ast.Constant(0)])
        k = alg.fresh("_k")
        body.append(ast.Assign([store(k)], ast.IfExp(neg, ast.UnaryOp(ast.Invert(), name(s)),
                                                     name(s))))
        for c, a in enumerate(accs):
            v = alg.fresh("_v")
            body.append(ast.Assign([store(v)], _element(vals, name(k), c)))
            body.append(ast.If(neg, [ast.Assign([store(v)], ast.UnaryOp(ast.USub(), name(v)))],
                               []))
            step(a, name(v))
    else:
        for c, a in enumerate(accs):
            v = alg.fresh("_v")
            body.append(ast.Assign([store(v)], _element(vals, name(s), c)))
            step(a, name(v))
    hi = ast.BinOp(name("_row"), ast.Add(), ast.Constant(1))
    bounds = (ast.Subscript(name(off), unsigned(name("_row")), ast.Load()),
              ast.Subscript(name(off), unsigned(hi), ast.Load()))
    alg.out.append(ast.For(store(j), call("range", *bounds), body, []))
    for (arr, sl), a in zip(comps, accs):
        alg.out.append(ast.Assign([ast.Subscript(name(arr), sl, ast.Store())], name(a)))


def _element(arr, row, c):  # (`row`: a slot, never negative)
    return ast.Subscript(name(arr), ast.Tuple([unsigned(row), ast.Constant(c)], ast.Load()),
                         ast.Load())
