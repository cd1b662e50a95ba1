"""Kernels over a grid relation run as nested loops over a box of cells
(`backends/cpu/grid_loops.py`): the same bits as interp for periodic, bounded and mixed axes,
over the whole grid and over interior subsets, with neighbours two cells away, a Global sum and
an early exit."""
import numpy as np
import pytest

import relsim as rs
from relsim.runtime.analysis import affine


def _grid(shape, periodic, seed=0):
    n = int(np.prod(shape))
    C = rs.Relation("C", n)
    C.set_grid(shape, periodic)
    C.new_field("u", rs.f64).load(np.random.default_rng(seed).standard_normal(n))
    C.new_field("v", rs.f64, init=0.0)
    return C


def _kernel(ndim, total):
    if ndim == 2:
        @rs.kernel
        def stencil(c):
            if c.u > 1.5:
                return
            s = c(1, 0).u + c(-1, 0).u + c(0, 1).u + c(0, -1).u + 0.5 * c(-2, 1).u
            c.v = s - 4.0 * c.u
            total += c.v  # noqa: F821 (a captured Global)
        return stencil

    @rs.kernel
    def stencil3(c):
        if c.u > 1.5:
            return
        s = c(1, 0, 0).u + c(-1, 0, 0).u + c(0, 1, 0).u + c(0, -1, 0).u + \
            c(0, 0, 1).u + c(0, 0, -1).u + 0.25 * c(2, -1, 1).u
        c.v = s - 6.0 * c.u
        total += c.v  # noqa: F821
    return stencil3


CASES = [((7, 5), True), ((7, 5), (True, False)), ((7, 5), (False, True)), ((6, 4, 5), True),
         ((6, 4, 5), (False, True, True)), ((5, 4, 6), (True, True, False))]


def _inner(C, shape, per):
    coords = C.grid.coords(np.arange(C.size))
    inside = np.ones(C.size, dtype=bool)
    for a, (n, p) in enumerate(zip(shape, per)):
        if not p:
            inside &= (coords[a] >= 2) & (coords[a] < n - 2)
    return C.subset("inner", inside)


@pytest.mark.parametrize("shape,periodic", CASES)
@pytest.mark.parametrize("target", ["cpu", "cpu-serial"])
def test_grid_loops_match_interp(shape, periodic, target):
    C = _grid(shape, periodic)
    per = C.grid.periodic
    spaces = [_inner(C, shape, per)] + ([C] if all(per) else [])
    total = rs.Global(rs.f64, 0.0)
    k = _kernel(len(shape), total)
    for space in spaces:
        out = {}
        for t in ("interp", target):
            C.v.load(np.zeros(C.size))
            total.value = 0.0
            for _ in range(2):
                space.foreach(k, rs.Config(target=t, parallel_threshold=1))
            out[t] = (C.v.numpy().copy(), total.value)
        assert np.array_equal(out["interp"][0].view(np.uint64), out[target][0].view(np.uint64))
        assert out["interp"][1] == out[target][1]
        b = k._last[3].bindings[None if space is C else space]
        assert b.fn in k._last[3].grid_loops.values()  # ran as nested loops


def test_launch_box_recognises_boxes_only():
    C = _grid((4, 3, 5), True)
    lo, hi = affine.launch_box(C.grid, None)
    assert lo.tolist() == [0, 0, 0] and hi.tolist() == [4, 3, 5]
    coords = C.grid.coords(np.arange(C.size))
    box = (coords[0] >= 1) & (coords[0] < 3) & (coords[2] >= 2)
    lo, hi = affine.launch_box(C.grid, np.flatnonzero(box))
    assert lo.tolist() == [1, 0, 2] and hi.tolist() == [3, 3, 5]
    rows = np.flatnonzero(box)
    assert affine.launch_box(C.grid, rows[:-1]) is None  # not a whole box
    assert affine.launch_box(C.grid, rows[::-1].copy()) is None  # not in row order
    assert affine.launch_box(C.grid, np.array([0, 5])) is None


def test_one_compile_serves_every_size():
    """A grid's shape is bound per launch: the same kernel on grids of other sizes (and on an
    axis 0 narrower than the stencil's reach, where the nested loops step aside for the row
    loop) is lowered once, and matches interp on each."""
    total = rs.Global(rs.f64, 0.0)
    k = _kernel(2, total)
    modules = set()
    for shape in ((7, 5), (9, 6), (16, 3), (2, 4), (1, 3)):
        C = _grid(shape, True, seed=shape[0])
        out = {}
        for t in ("interp", "cpu"):
            C.v.load(np.zeros(C.size))
            total.value = 0.0
            C.foreach(k, rs.Config(target=t, parallel_threshold=1))
            out[t] = (C.v.numpy().copy(), total.value)
        assert out["interp"][0].tobytes() == out["cpu"][0].tobytes(), shape
        assert out["interp"][1] == out["cpu"][1]
        exe = k._last[3]
        modules.add(exe.path)
        ran_nested = exe.bindings[None].fn in exe.grid_loops.values()
        assert ran_nested == (shape[0] >= 2), shape  # c(-2, 1): a reach of 2 along axis 0
    assert len(modules) == 1


def test_a_kernel_reading_no_neighbour_sums_its_globals_in_lanes():
    """Without a neighbour to read, the nested loops save nothing, and a float Global sum
    accumulated in the loop (lanes) skips the slots' exact fold: a dot product over a grid runs
    as the row loop's lanes variant, the stencil above as nested loops; both give interp's
    bits."""
    from relsim.runtime.backends.cpu import lanes
    C = _grid((40, 30), True)
    dot = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def square(c):
        c.v = 2.0 * c.u
        dot += c.u * c.v  # noqa: F821

    out = {}
    for t in ("interp", "cpu"):
        dot.value = 0.0
        C.foreach(square, rs.Config(target=t, parallel_threshold=1))
        out[t] = (C.v.numpy().tobytes(), dot.value)
    assert out["interp"] == out["cpu"]
    b = square._last[3].bindings[None]
    assert isinstance(b.lanes, lanes.LaneSums) and b.fn not in square._last[3].grid_loops.values()
    total = rs.Global(rs.f64, 0.0)
    stencil = _kernel(2, total)
    C.foreach(stencil, rs.Config(target="cpu", parallel_threshold=1))
    b = stencil._last[3].bindings[None]
    assert b.lanes is None and b.fn in stencil._last[3].grid_loops.values()
