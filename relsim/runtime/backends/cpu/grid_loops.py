"""Structured loops for a kernel over a grid relation (`R.set_grid`): nested loops over the axes
of a box of cells (the whole grid, `interior(d)`, a side), the outermost axis in parallel, the
innermost unit-stride.

The row-at-a-time lowering finds each neighbour `c(dx, dy, ...)` of a periodic axis with a
division and a modulo per access. Here the loops know the coordinates: along an outer periodic
axis the wrapped row delta of each offset is computed once per iteration of that axis
(`_w<axis>_<d>`); along the innermost axis, cells far enough from a periodic side use the
constant delta (``u[_row + 1]``: contiguous, so LLVM can vectorise), and the few cells within
reach of the side (the peeled ends of the innermost loop) wrap that one offset by one compare
and one subtraction (so these loops run only where axis 0 is at least that reach long). A large
body (`outline.large`) runs that wrapping form along the whole line instead: one copy of it to
compile, not three (smoke's advection: 6.6 -> 2.8 s).
Bounded axes need no test (centred neighbours are checked once per launch space). The values
are the same as the general lowering's: only where rows come from changes. The grid's shape and
strides are read from its `GridShape` parameter before the loops: one compile serves every
size.

The generated functions take the row-loop functions' arguments, then `_lo`, `_hi` (per-axis
bounds of the box); a row's position in the iteration space is its index in the box, axis 0
fastest: the order of a subset's ascending rows.
"""
from __future__ import annotations

import ast

from ...lowering.emit import call, name, store
from ...lowering.expr import POS, ROW


class GridPlan:
    """What the fast row body of one kernel uses: the centred offsets along the innermost axis
    and the wrapped deltas of outer periodic axes (filled while the body is lowered)."""

    def __init__(self, grid, sizes):
        # `sizes`: the name of the grid's `GridShape` parameter (shape, then strides: read
        # into `_gridn<axis>`, `_grids<axis>` before the loops; axis 0 has stride 1)
        self.periodic, self.sizes = grid.periodic, sizes
        self.wraps: dict = {}  # (axis, d) -> variable holding that offset's wrapped row delta
        self.inner: set = set()  # offsets used along axis 0 when it is periodic
        self.peel = False  # lowering the body of the innermost axis's peeled ends

    def neighbour(self, alg, offsets) -> ast.expr:
        """The row of the kernel's own row's neighbour at `offsets`, in the fast body (or, with
        `peel`, in the peeled ends, where an offset along a periodic axis 0 wraps)."""
        delta, terms = 0, []
        for axis, d in enumerate(offsets):
            if d == 0:
                continue
            if axis == 0 and self.periodic[0] and self.peel:
                # one wrap at most: the loops run only on grids at least `reach` wide
                self.inner.add(d)
                moved = alg.bind(ast.BinOp(name("_g0"), ast.Add(), ast.Constant(d)))
                side = ast.Compare(moved, [ast.GtE() if d > 0 else ast.Lt()],
                                   [name("_gridn0") if d > 0 else ast.Constant(0)])
                wrapped = ast.BinOp(moved, ast.Sub() if d > 0 else ast.Add(), name("_gridn0"))
                terms.append(alg.bind(ast.BinOp(ast.IfExp(side, wrapped, moved), ast.Sub(),
                                                name("_g0"))).id)
                continue
            if axis == 0:
                delta += d
                if self.periodic[0]:
                    self.inner.add(d)
                continue
            if not self.periodic[axis]:
                terms.append(alg.bind(ast.BinOp(ast.Constant(d), ast.Mult(),
                                                name(f"_grids{axis}"))).id)
                continue
            var = self.wraps.setdefault((axis, d), f"_w{axis}_{'m' if d < 0 else ''}{abs(d)}")
            terms.append(var)
        out: ast.expr = name(ROW)
        if delta:
            out = ast.BinOp(out, ast.Add(), ast.Constant(delta))
        for t in terms:
            out = ast.BinOp(out, ast.Add(), name(t))
        return alg.bind(out)

    @property
    def reach(self) -> int:
        """The largest offset along axis 0 of the cells' neighbours (the loops need an axis 0
        at least that long: `CpuExecutable.grid_box` checks it)."""
        return max((abs(d) for d in self.inner), default=0)

    def function(self, fname, args, peeled, fast, range_fn) -> ast.FunctionDef:
        """The function running the row statements over the box `_lo`, `_hi`: `fast` (lowered
        through `neighbour`) on the interior of the innermost axis, `peeled` (the same, with
        `peel` set) on its ends; with `fast` None, `peeled` on the whole of it (one copy of a
        large body instead of three: its compile time, where the wrap's compare is cheap)."""
        ndim = len(self.periodic)
        g = [f"_g{a}" for a in range(ndim)]

        def bound(arr, a):
            return ast.Subscript(name(arr), ast.Constant(a), ast.Load())

        def extent(a):
            return ast.BinOp(bound("_hi", a), ast.Sub(), bound("_lo", a))

        # each line of the innermost axis: its peeled ends around its interior, all while the
        # line's cells are in cache (a second nest for the ends cost 1.3x on the 96^3 stencil)
        locate = [ast.Assign([store(ROW)], ast.BinOp(name("_rb"), ast.Add(), name(g[0]))),
                  ast.Assign([store(POS)], ast.BinOp(name("_pb"), ast.Add(), name(g[0])))]
        if self.inner and fast is None:  # a large body: the peeled one along the whole line
            inner = [_for(g[0], "range", bound("_lo", 0), bound("_hi", 0), locate + peeled)]
        elif self.inner:
            reach_lo, reach_hi = max(0, -min(self.inner)), max(0, max(self.inner))
            first = call("min", call("max", bound("_lo", 0), ast.Constant(reach_lo)),
                         bound("_hi", 0))
            last = call("max", call("min", bound("_hi", 0),
                                    ast.BinOp(name("_gridn0"), ast.Sub(),
                                              ast.Constant(reach_hi))), name("_x0"))
            inner = [ast.Assign([store("_x0")], first), ast.Assign([store("_x1")], last),
                     _for(g[0], "range", bound("_lo", 0), name("_x0"), locate + peeled),
                     _for(g[0], "range", name("_x0"), name("_x1"), locate + fast),
                     _for(g[0], "range", name("_x1"), bound("_hi", 0), locate + peeled)]
        else:
            inner = [_for(g[0], "range", bound("_lo", 0), bound("_hi", 0), locate + fast)]
        # row and position of the first cell of a line (position: index in the box)
        rb: ast.expr = ast.Constant(0)
        pb: ast.expr = ast.Constant(0)
        for a in reversed(range(1, ndim)):
            rb = ast.BinOp(rb, ast.Add(), ast.BinOp(name(g[a]), ast.Mult(),
                                                     name(f"_grids{a}")))
            pb = ast.BinOp(ast.BinOp(pb, ast.Mult(), extent(a)), ast.Add(),
                           ast.BinOp(name(g[a]), ast.Sub(), bound("_lo", a)))
        pb = ast.BinOp(ast.BinOp(pb, ast.Mult(), extent(0)), ast.Sub(), bound("_lo", 0))
        body = [ast.Assign([store("_rb")], rb), ast.Assign([store("_pb")], pb)] + inner
        # the outer axes, innermost first; each computes its wrapped deltas once per iteration
        for a in range(1, ndim):
            wraps = [ast.Assign([store(var)], self._wrapped(g[a], a, d))
                     for (axis, d), var in sorted(self.wraps.items()) if axis == a]
            fn = range_fn if a == ndim - 1 else "range"
            body = [_for(g[a], fn, bound("_lo", a), bound("_hi", a), wraps + body)]
        sizes = [ast.Assign([store(f"_gridn{a}")], bound(self.sizes, a)) for a in range(ndim)]
        sizes += [ast.Assign([store(f"_grids{a}")], bound(self.sizes, ndim + a))
                  for a in range(1, ndim)]
        body = sizes + body
        return ast.FunctionDef(fname, ast.arguments([], [ast.arg(x) for x in args], None, [],
                                                    [], None, []), body, [], None, None)

    def _wrapped(self, var, axis, d) -> ast.expr:
        """((g + d) % n - g) * stride: the row delta of offset d along a periodic axis."""
        moved = ast.BinOp(ast.BinOp(name(var), ast.Add(), ast.Constant(d)), ast.Mod(),
                          name(f"_gridn{axis}"))
        return ast.BinOp(ast.BinOp(moved, ast.Sub(), name(var)), ast.Mult(),
                         name(f"_grids{axis}"))


def _for(var, fn, lo, hi, body) -> ast.For:
    return ast.For(store(var), call(fn, lo, hi), body, [])
