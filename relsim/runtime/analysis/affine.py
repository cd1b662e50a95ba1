"""Affine (grid neighbour) keys: `c(1, 0)` on a relation declared with `R.set_grid(...)`.

Periodic axes wrap; on bounded axes a neighbour must exist. For offsets from the kernel's own
key this is checked once per launch space (the rows the kernel is mapped over), so the compiled
code does no per-access test; map such kernels over an interior subset."""
from __future__ import annotations

import numpy as np

from ...errors import KernelRuntimeError
from .. import ir


def centred_stencil(body) -> list:
    """(offsets, loc) of every affine access from the kernel's own key."""
    out = []
    for s in ir.walk_stmts(body):
        for e in _exprs(s):
            for node in e.walk():
                if isinstance(node, ir.Affine) and isinstance(node.key, ir.Centred):
                    out.append((node.offsets, node.loc))
    return out


def _exprs(s):
    from .access import stmt_exprs
    return stmt_exprs(s)


def check_launch_space(analysed, relation, rows) -> None:
    """Raise if a centred affine access would leave a bounded axis for some row."""
    if not analysed.stencil:
        return
    grid = relation.grid
    # (offsets only along periodic axes never leave the grid: no rows to look at, which at
    # every re-binding, as after each `Field.swap`, cost ~0.4 ms on a 256 x 256 grid)
    stencil = [(offsets, loc) for offsets, loc in analysed.stencil
               if any(d != 0 and not periodic for d, periodic in zip(offsets, grid.periodic))]
    if not stencil:
        return
    rows = np.arange(relation.size) if rows is None else rows
    coords = grid.coords(rows)
    for offsets, loc in stencil:
        for axis, (d, n, periodic) in enumerate(zip(offsets, grid.shape, grid.periodic)):
            if d == 0 or periodic:
                continue
            c = coords[axis] + d
            bad = np.flatnonzero((c < 0) | (c >= n))
            if bad.size:
                row = int(rows[bad[0]])
                raise KernelRuntimeError(
                    f"in kernel {analysed.kernel_name!r}: the neighbour {offsets} of row {row} "
                    f"of {relation.name} is outside the grid (axis {axis} is not periodic); "
                    f"map the kernel over an interior subset, or make the axis periodic\n"
                    f"{loc.render()}")


def neighbour_row(row: int, offsets, grid, loc) -> int:
    """The row of `row`'s neighbour at `offsets` (the interp backend's definition)."""
    out = row
    for d, n, st, periodic in zip(offsets, grid.shape, grid.strides, grid.periodic):
        if d == 0:
            continue
        c = (row // st) % n
        c2 = (c + d) % n if periodic else c + d
        if not 0 <= c2 < n:
            raise KernelRuntimeError(f"grid neighbour {offsets} of row {row} is outside the "
                                     f"grid\n{loc.render()}")
        out += (c2 - c) * st
    return out


def launch_box(grid, rows):
    """(lo, hi), per-axis int64 bounds, when the launch space is a box of grid cells listed in
    row order (`rows` None: the whole grid), else None."""
    shape = np.asarray(grid.shape, dtype=np.int64)
    if rows is None:
        return np.zeros(len(shape), dtype=np.int64), shape
    if len(rows) == 0:
        return None
    coords = grid.coords(rows)
    lo = np.array([c.min() for c in coords], dtype=np.int64)
    hi = np.array([c.max() + 1 for c in coords], dtype=np.int64)
    if int(np.prod(hi - lo)) != len(rows):
        return None
    axes = np.meshgrid(*[np.arange(a, b) * st for a, b, st in zip(lo, hi, grid.strides)],
                       indexing="ij")
    box = sum(axes).transpose(tuple(reversed(range(len(shape))))).reshape(-1)
    return (lo, hi) if np.array_equal(box, rows) else None
