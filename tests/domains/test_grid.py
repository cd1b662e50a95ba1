"""The grid domain: cells/vertices, subsets, affine kernels, locate."""
import numpy as np
import pytest

import relsim as rs
from relsim.domains import grid

# the target tests here are tiny: they run on the cuda target too (tests/conftest.py)
pytestmark = pytest.mark.device_sized


def test_counts_centres_vertices_and_subsets():
    g = grid.Grid((4, 3), spacing=(0.5, 1.0), origin=(1.0, -1.0))
    assert g.cells.size == 12 and g.vertices.size == 20
    c = g.cells.center.numpy()
    assert c[0].tolist() == [1.25, -0.5] and c[1].tolist() == [1.75, -0.5]  # axis 0 fastest
    assert c[4].tolist() == [1.25, 0.5]
    v = g.vertices.pos.numpy()
    corners = v[g.cells.v.numpy()[5]]
    assert np.allclose(corners.mean(0), c[5])
    assert g.cells.interior.rows.tolist() == [5, 6]
    assert g.cells.xmin.rows.tolist() == [0, 4, 8]
    assert g.cells.ymax.rows.tolist() == [8, 9, 10, 11]
    assert len(g.cells.boundary) == 10
    assert g.interior(2).rows.tolist() == []
    p = grid.Grid((5, 5), periodic=(True, False))
    assert len(p.interior(1)) == 15  # periodic axis: every column is interior


def test_3d_grid_and_stencil_kernel(target):
    g = grid.Grid((4, 4, 4), spacing=0.25)
    C = g.cells
    C.new_field("u", rs.f64).load(C.center.numpy().sum(1))
    C.new_field("lap", rs.f64)

    @rs.kernel
    def lap(c):
        c.lap = (c(1, 0, 0).u + c(-1, 0, 0).u + c(0, 1, 0).u + c(0, -1, 0).u
                 + c(0, 0, 1).u + c(0, 0, -1).u - 6.0 * c.u)

    g.interior().foreach(lap, target)
    inner = g.interior().rows
    assert np.allclose(C.lap.numpy()[inner], 0.0, atol=1e-12)  # linear field: zero Laplacian
    with pytest.raises(rs.KernelRuntimeError, match="outside the grid"):
        C.foreach(lap, target)


def test_locate_and_cell_lists():
    g = grid.Grid((4, 4), spacing=0.25)
    P = rs.Relation("P", 5, elastic=True)
    P.new_field("pos", rs.vec(2, rs.f64)).load(
        [[0.1, 0.1], [0.9, 0.1], [0.1, 0.1], [0.6, 0.6], [0.99, 0.99]])
    g.locate(P)
    assert P.cell.numpy().tolist() == [0, 3, 0, 10, 15]
    assert g.cells.particles.offsets()[:2].tolist() == [0, 2]
    P.pos.load([[1.5, 0.1]] * 5)
    with pytest.raises(rs.DomainError, match="outside the grid along axis 0"):
        g.locate(P)
    q = grid.Grid((4, 4), spacing=0.25, periodic=True)
    assert q.cell_of([[1.1, -0.1]]).tolist() == [12]


def test_bad_grids():
    with pytest.raises(rs.DomainError):
        grid.Grid((4,))
    with pytest.raises(rs.DomainError):
        grid.Grid((4, 4), spacing=0)


def test_stencil_offsets_are_in_the_access_summary():
    g = grid.Grid((4, 4), periodic=True)
    C = g.cells
    C.new_field("u", rs.f64)
    C.new_field("w", rs.f64)

    @rs.kernel
    def k(c):
        c.w = c(1, 0).u - c(-1, 0).u + c(0, 2).u

    text = rs.explain(k, C, rs.Config(target="interp"))
    assert "stencil (offsets from the kernel's own key): [(-1, 0), (0, 2), (1, 0)]" in text


@pytest.mark.parametrize("shape, spacing, origin, periodic", [
    ((5, 6, 7), 0.37, -0.2, True), ((4, 9), (0.3, 0.5), (0.1, -1.0), True),
    ((5, 6, 7), 0.37, 0.0, (True, False, True)), ((8, 3), (1.0, 2.0), 0.0, False)])
def test_cell_of_each_point_is_the_cell_holding_it(shape, spacing, origin, periodic):
    """Point by point: the floor of (x - origin) / spacing on each axis, wrapped on periodic
    axes, the first axis fastest (the whole-array computation, whatever the axes share)."""
    g = grid.Grid(shape, spacing=spacing, origin=origin, periodic=periodic)
    rng = np.random.default_rng(7)
    lo = np.array(g.origin)
    hi = lo + np.array(g.spacing) * np.array(shape)
    span = np.where(g.periodic, 3 * (hi - lo), 0.0)  # periodic axes: points in other images
    pts = rng.uniform(lo - span, hi + span, (300, len(shape)))
    rows = g.cell_of(pts)
    for p, row in zip(pts, rows):
        want, stride = 0, 1
        for axis, n in enumerate(shape):
            c = int(np.floor((p[axis] - g.origin[axis]) / g.spacing[axis]))
            want += (c % n if g.periodic[axis] else c) * stride
            stride *= n
        assert row == want
    assert rows.dtype == np.int64


@pytest.mark.parametrize("shape, spacing, origin, periodic", [
    ((5, 6, 7), 0.37, -0.2, True), ((4, 9), (0.3, 0.5), (0.1, -1.0), True),
    ((5, 6, 7), 0.37, 0.0, (True, False, True)), ((8, 3), (1.0, 2.0), 0.0, False)])
def test_the_compiled_binning_gives_cell_of_s_rows_or_leaves_the_point_to_it(shape, spacing,
                                                                           origin, periodic):
    """`locate`'s compiled rule (what a captured step runs) writes `cell_of`'s rows into the
    keys' array, far images of periodic axes included; a point `cell_of` would refuse, or one
    too far to wrap in integers, sets the flag instead."""
    g = grid.Grid(shape, spacing=spacing, origin=origin, periodic=periodic)
    rng = np.random.default_rng(8)
    lo = np.array(g.origin)
    hi = lo + np.array(g.spacing) * np.array(shape)
    span = np.where(g.periodic, 1e6 * (hi - lo), 0.0)
    pts = rng.uniform(lo - span, hi + span, (500, len(shape)))
    pts[:7] = lo + (hi - lo) * np.arange(7)[:, None] / 7  # (on cell faces too)
    P = rs.Relation("pts", len(pts))
    P.new_field("pos", rs.vec(len(shape), rs.f64)).load(pts)
    rule, args = g.locate(P).compiled_rule
    keys, flag = np.zeros(len(pts), dtype=np.int32), np.zeros(1, dtype=np.int64)
    rule(pts, keys, flag, *args)
    assert flag[0] == 0 and keys.tolist() == g.cell_of(pts).tolist()
    for bad in ([np.nan] * len(shape), hi + 1.0, lo + 3e17 * (hi - lo)):
        flag[0] = 0
        rule(np.vstack([pts[:3], bad]), keys, flag, *args)
        refused = not all(g.periodic) or not np.isfinite(bad).all() or bad[0] > 1e16
        assert flag[0] == refused


def test_a_point_not_finite_lies_in_no_cell():
    """A NaN or infinite position names its row (it used to land in some cell of a periodic
    grid: NaN converted to an integer)."""
    g = grid.Grid((4, 4), spacing=0.25, periodic=True)
    with pytest.raises(rs.DomainError, match=r"\(row 2\) is not finite"):
        g.cell_of([[0.1, 0.1], [0.5, 0.5], [np.nan, 0.3]])
    with pytest.raises(rs.DomainError, match=r"\(row 0\) is not finite"):
        g.cell_of([[0.1, np.inf]])
    assert g.cell_of(np.zeros((0, 2))).tolist() == []
