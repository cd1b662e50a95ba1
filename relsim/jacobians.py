"""The Jacobian of a program's residuals, and the diagonal of J^T J, by kernels generated from
the residual kernels (`runtime/tangent/jacobian.py`): `rs.Tangents.jacobian` and
`rs.Tangents.jacobian_diagonal`, what `relsim.optimize.least_squares` assembles and
preconditions with.

The program runs once with its launches noted; each launch reading an unknown must store a
residual (`Unsupported` otherwise: the caller goes without, None); per launch and site where it
reads an unknown (and per component of the unknown's value) a kernel made once and kept with
the user's kernel runs over the launch's rows: a `Diagonal` kernel adds the squares of the
residuals' derivatives into the unknown's diagonal, an `Entries` kernel stores the derivatives
and the site's row beside each residual, assembled here into triplets.
"""
from __future__ import annotations

import numpy as np

from . import config as _config
from .errors import GradientError
from .relations import launch as _launch
from .relations.field import Field
from .relations.globals import Global
from .relations.subset import Subset
from .runtime.adjoint import GivenKernel
from .runtime.tangent.jacobian import (
    DIAGONAL,
    ROW,
    Diagonal,
    Entries,
    Unsupported,
    entry_names,
    sites,
)
from .tape import analysis_of
from .types import f64, i64


class _Launches(_launch.Recorder):
    """Notes the launches of a program as it runs."""

    label = "the program runs for its Jacobian"

    def __init__(self):
        self.launches = []

    def before_launch(self, kernel, relation, subset, config) -> None:
        self.launches.append((kernel, relation, subset, config))


def _plans(program, residuals, unknowns):
    """[(kernel, space, config, analysed, sites)] of the launches that read unknowns, after
    running the program once; raises Unsupported for a program not of the needed form."""
    for r in _launch.recorders:
        raise GradientError(f"the Jacobian's kernels cannot run while {r.label}")
    seen = _Launches()
    _launch.recorders.append(seen)
    try:
        program()
    finally:
        _launch.recorders.remove(seen)
    wanted = {id(u): u for u in unknowns}
    res = {id(r) for r in residuals}
    plans = []
    for kernel, relation, subset, config in seen.launches:
        cfg = config if config is not None else _config.current()
        base = relation if subset is None else subset.relation
        a = analysis_of(kernel, base, cfg)
        found = sites(a, wanted)
        writes = {id(x.target) for x in a.summary.accesses if x.mode != "read"}
        if found and not writes & res:
            raise Unsupported(f"kernel {kernel.name} reads an unknown but stores no residual")
        if found:
            plans.append((kernel, relation if subset is None else subset, cfg, a, found))
    return plans


def _made(kernel, key, make, *args):
    """The generated kernel `key` kept with `kernel` (made by `make(kernel, *args)` once)."""
    kept = kernel.__dict__.setdefault("_jacobian_kernels", {})
    if key not in kept:
        kept[key] = make(kernel, *args)
    return kept[key]


def jacobian_diagonal(program, residuals, unknowns, weights):
    """`rs.Tangents.jacobian_diagonal`."""
    weight = {id(r): float(weights.get(r, 1.0)) for r in residuals}
    try:
        plans = _plans(program, residuals, unknowns)
        runs = []
        for kernel, space, cfg, a, found in plans:
            for site in found:
                for c in range(site.components):
                    key = ("diagonal", id(a), site.text, id(site.target), c,
                           tuple(sorted(weight.items())))
                    runs.append((_made(kernel, key, _diagonal_kernel, a, site, c, weight),
                                 space, cfg))
    except Unsupported:
        return None
    for u in unknowns:  # the diagonals start at 0
        if isinstance(u, Field):
            _field(u.relation, u.name + DIAGONAL, u.type).load(0.0)
        else:
            for c in range(_components(u)):
                _diagonal_global(u, c).value = 0.0
    for k, space, cfg in runs:
        space.foreach(k, cfg)
    out = []
    for u in unknowns:
        if isinstance(u, Field):
            out.append(u.relation.field(u.name + DIAGONAL).numpy(copy=True))
        else:
            vals = np.array([_diagonal_global(u, c).value for c in range(_components(u))])
            out.append(vals.reshape(u.type.shape) if u.type.shape else vals[0])
    return out


def jacobian_entries(program, residuals, unknowns):
    """`rs.Tangents.jacobian`."""
    weight = {id(r): 1.0 for r in residuals}
    try:
        plans = _plans(program, residuals, unknowns)
        runs = []
        for n, (kernel, space, cfg, a, found) in enumerate(plans):
            stored = [r for r in residuals if any(
                x.target is r and x.mode != "read" for x in a.summary.accesses)]
            for i, site in enumerate(found):
                for c in range(site.components):
                    tag = f"{n}_{i}_{c}"
                    key = ("entries", id(a), site.text, id(site.target), c, tag)
                    runs.append((_made(kernel, key, _entries_kernel, a, site, c, weight, tag,
                                       stored), space, cfg, site, c, tag, stored))
    except Unsupported:
        return None
    roff = _offsets(residuals)
    uoff = _offsets(unknowns)
    rows, cols, vals = [], [], []
    for k, space, cfg, site, c, tag, stored in runs:
        space.foreach(k, cfg)
        held = np.asarray(space.rows if isinstance(space, Subset) else np.arange(space.size),
                          dtype=np.int64)
        u = site.target
        for r in stored:
            value_name, col_name = entry_names(r, tag)
            v = r.relation.field(value_name).numpy()[held].reshape(len(held), -1)
            width = v.shape[1]
            row_ids = roff[id(r)] + held[:, None] * width + np.arange(width)[None, :]
            if isinstance(u, Field):
                keyrow = r.relation.field(col_name).numpy()[held].astype(np.int64)
                col = uoff[id(u)] + keyrow * _components(u) + c
            else:
                col = np.full(len(held), uoff[id(u)] + c, dtype=np.int64)
            rows.append(row_ids.ravel())
            cols.append(np.repeat(col, width))
            vals.append(v.ravel())
    m = sum(_size(r) for r in residuals)
    n = sum(_size(u) for u in unknowns)
    if not rows:
        return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), (m, n))
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), (m, n)


def _diagonal_kernel(kernel, a, site, c, weight):
    return GivenKernel(kernel, f"{kernel.name}_diagonal", a.param,
                       Diagonal(a, site, c, weight, _diagonal_global).body())


def _entries_kernel(kernel, a, site, c, weight, tag, stored):
    """The `Entries` kernel, with the fields it stores into made first."""
    for r in stored:
        value_name, col_name = entry_names(r, tag)
        _field(r.relation, value_name, r.type)
        _field(r.relation, col_name, i64)
    if isinstance(site.target, Field):
        R = site.target.relation
        if not R.has_field(ROW):
            R.new_field(ROW, i64).load(np.arange(R.size))
    return GivenKernel(kernel, f"{kernel.name}_jacobian", a.param,
                       Entries(a, site, c, weight, tag).body())


def _field(R, name, t):
    return R.field(name) if R.has_field(name) else R.new_field(name, t)


def _components(u) -> int:
    """Values per row of a field (per Global: its values)."""
    return max(1, int(np.prod(u.type.shape, dtype=np.int64)))


def _size(t) -> int:
    per = max(1, int(np.prod(t.type.shape, dtype=np.int64)))
    return per * (t.relation.size if isinstance(t, Field) else 1)


def _offsets(targets) -> dict:
    out, at = {}, 0
    for t in targets:
        out[id(t)] = at
        at += _size(t)
    return out


def _diagonal_global(g, c):
    """The Global holding component c of unknown Global g's diagonal (made on first use)."""
    kept = g.__dict__.setdefault("_diagonal", {})
    if c not in kept:
        kept[c] = Global(f64, 0.0, name=f"{g.name or 'global'}__diag{c}")
    return kept[c]
