"""The pipeline, one readable function: source -> IR -> typed IR -> access -> phase -> slots.

Backends consume the `Analysed` result; `rs.explain` prints each stage of it.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .analysis import access, affine, fusion, phase, slots
from .analysis.frontend import Frontend
from .analysis.typecheck import TypeChecker
from .caches import analysed as analysis_cache


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
    # (name, table) of the analysis cache's key when analysed with a cache (the lowered-module
    # cache keys on it: it determines everything above but the captures)
    key: tuple | None = None
    # made by relsim as IR (adjoint, tangent, Jacobian kernels), not parsed from a user's source
    generated: bool = False


def analyse(kernel, relation, cache_dir=None) -> Analysed:
    """`kernel` over `relation`, analysed; with `cache_dir`, the passes after the frontend are
    looked up in (and stored to) the analysis cache there (`analysis_cache`)."""
    name = kernel.name
    fe = Frontend(name)
    parts = getattr(kernel, "parts", None)  # rs.fuse: one body, each part's after the other
    given = getattr(kernel, "given_ir", None)  # generated as IR (an adjoint): no source
    if given is not None:
        (param, untyped), bodies = given(), None
    elif parts:
        param, untyped, bodies = fe.fused(parts)
    else:
        (param, untyped), bodies = fe.kernel(kernel), None
    captures = tuple(fe.captures.values())
    key = analysis_cache.Key(name, relation, param, untyped, bodies, cache_dir) \
        if cache_dir and given is None else None
    result = key.load() if key is not None else None
    if result is None:
        result = _passes(name, relation, param, untyped, parts, bodies)
        if key is not None:
            key.store(result)
    cache_key = (key.name, key.table) if key is not None and key.name is not None else None
    return Analysed(name, relation, param, untyped, *result, captures, cache_key,
                    generated=given is not None)


def _well_formed(result) -> bool:
    """Whether a cached analysis has the shape `_passes` returns."""
    if type(result) is not tuple or len(result) != 8:
        return False
    body, env, summary, info, layouts, inserts, deletes, stencil = result
    return type(body) is tuple and all(isinstance(s, ir.Stmt) for s in body) and \
        type(env) is dict and isinstance(summary, access.AccessSummary) and \
        isinstance(info, phase.PhaseInfo) and type(layouts) is tuple and \
        type(inserts) is tuple and type(deletes) is bool and type(stencil) is tuple


def _passes(name, relation, param, untyped, parts, bodies) -> tuple:
    """The analysis after the frontend: the Analysed fields from `body` to `stencil`."""
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
    return body, dict(tc.env), summary, info, layouts, inserts, deletes, stencil
