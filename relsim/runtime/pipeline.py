"""The pipeline, one readable function: source -> IR -> typed IR -> access -> phase -> slots.

Backends consume the `Analysed` result; `rs.explain` prints each stage of it.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import access, affine, fusion, ir, phase, slots
from .frontend import Frontend
from .typecheck import TypeChecker


@dataclass(frozen=True)
class Analysed:
    kernel_name: str
    relation: object
    param: str
    untyped: tuple
    body: tuple  # typed IR
    locals: dict  # local name -> type
    summary: access.AccessSummary
    phase: phase.PhaseInfo
    layouts: tuple  # slots.Layout per key-reduced field / reduced Global
    inserts: tuple  # slots.Layout per relation the kernel inserts rows into
    deletes: bool  # the kernel may delete its own rows
    stencil: tuple  # (offsets, loc) of affine accesses from the kernel's own key
    captures: tuple = ()  # captures.Capture: Python values compiled in as constants


def analyse(kernel, relation) -> Analysed:
    name = kernel.name
    fe = Frontend(name)
    parts = getattr(kernel, "parts", None)  # rs.fuse: one body, each part's after the other
    if parts:
        param, untyped, bodies = fe.fused(parts)
    else:
        param, untyped = fe.kernel(kernel)
    tc = TypeChecker(name, relation, param)
    body = tc.check(untyped)
    summary = access.summarize(relation, body)
    info = phase.check(summary, name)
    if parts:
        fusion.check(name, parts, relation, param, bodies)
    layouts = tuple(slots.layouts(body, info, name))
    inserts = tuple(slots.insert_layouts(body, name))
    deletes = any(isinstance(s, ir.Delete) for s in ir.walk_stmts(body))
    stencil = tuple(affine.centred_stencil(body))
    return Analysed(name, relation, param, untyped, body, dict(tc.env), summary, info, layouts,
                    inserts, deletes, stencil, tuple(fe.captures.values()))
