"""Reads of locals replaced in generated code without copying what does not change
(`substituted`), for the passes over a row's body (`copy_propagation`, `single_assignment`):
a body of 6,000 statements deep-copied statement by statement cost LULESH's cold lowering ~1 s.
"""
from __future__ import annotations

import ast
import copy


def substituted(node, known: dict):
    """`node` with each read of a local `known` names replaced by (a copy of) the expression
    it maps to, or by a read of the name when it maps to a string: a new node along each path
    to a replaced read, every other node shared with `node` (which is not changed)."""
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load) and node.id in known:
            new = known[node.id]
            return ast.Name(new, ast.Load()) if isinstance(new, str) else copy.copy(new)
        return node
    fields = {}
    for field, value in ast.iter_fields(node):
        if isinstance(value, list):
            new = [substituted(v, known) if isinstance(v, ast.AST) else v for v in value]
            if any(a is not b for a, b in zip(new, value)):
                fields[field] = new
        elif isinstance(value, ast.AST):
            new = substituted(value, known)
            if new is not value:
                fields[field] = new
    if not fields:
        return node
    made = copy.copy(node)
    for field, value in fields.items():
        setattr(made, field, value)
    return made
