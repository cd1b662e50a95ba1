"""Particles: an elastic relation (rows inserted and deleted, also from kernels) binned into a
grid's cells.

    g = grid.Grid((32, 32), spacing=1 / 32)
    p = particles.Particles(g, positions, velocities)   # relation p.rel, fields pos, vel
    p.locate()               # key field `cell` (p.rel -> g.cells) and grouping g.cells.particles
    # kernels: rs.insert(p.rel, pos=..., vel=...) / rs.delete(q)
    # particles that move are binned again when the cell keys or lists are next read
    # (into the arrays they have: inside rs.capture, right after the launch that moves them)

Cell lists for neighbour search: after `locate()`, a kernel over cells loops
``for q in c.particles:`` (ascending particle row), and over neighbour cells ``c(1, 0).particles``.
Particles inserted later (``rs.insert`` in a kernel, ``p.rel.insert``) are binned by their
position when the cell keys or the cell lists are next read, by a kernel or the host (the key
field's rule, `relsim.KeyField.follow`), and so are particles that moved (a launch wrote
`pos`, or the host loaded it); deleted ones leave their cells. Built with the public API only.
"""
from __future__ import annotations

import numpy as np

import relsim as rs


class Particles:
    """Particles in the cells of `grid` (a `grid.Grid`, 2-D or 3-D).

    * ``rel``: the elastic relation (named `name`, one row per particle) with fields ``pos`` and
      ``vel`` (``rs.vec(d, rs.f64)``; `vel` zero if not given) and one field per entry
      ``name: (type, init)`` of `fields`; kernels run over it and insert/delete its rows;
    * ``size``: its row count; ``locate()``: bin by position (see the method);
    * ``counts()``: particles per grid cell, from the cell lists.
    """

    def __init__(self, grid, pos, vel=None, name="particles", fields=None):
        pos = np.asarray(pos, dtype=np.float64)
        d = grid.dim
        if pos.ndim != 2 or pos.shape[1] != d:
            raise rs.DomainError(f"particle positions must be (n, {d}) for a {d}-D grid, got "
                                 f"{pos.shape}")
        self.grid = grid
        self.rel = rs.Relation(name, len(pos), elastic=True)
        self.rel.new_field("pos", rs.vec(d, rs.f64)).load(pos)
        self.rel.new_field("vel", rs.vec(d, rs.f64)).load(
            np.zeros_like(pos) if vel is None else np.asarray(vel, dtype=np.float64))
        for fname, (ftype, init) in (fields or {}).items():
            self.rel.new_field(fname, ftype, init=init)
        rs.geometry.point_cloud(self.rel, coords="pos")

    @property
    def size(self) -> int:
        """The number of particles now (the relation's row count)."""
        return self.rel.size

    def locate(self):
        """Point each particle's `cell` key at the grid cell containing it: the first call adds
        the key field ``rel.cell`` (into ``grid.cells``) and the grouping ``cells.particles``
        (the cell lists, rebuilt lazily). Moved and inserted particles are binned again
        without calling it again. Particles outside a bounded axis are an error: delete
        them first (e.g. in a kernel with rs.delete). Returns the key field."""
        return self.grid.locate(self.rel, "pos", "cell", "particles")

    def counts(self) -> np.ndarray:
        """Particles per cell (from the grouping)."""
        off = self.grid.cells.grouping("particles").offsets()
        return np.diff(off)


# the public API (docs/api/ renders it; tests/test_docs.py checks each name is documented)
__all__ = ["Particles"]
