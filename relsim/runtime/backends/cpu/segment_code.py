"""The source of a captured segment's function (`segment.compile_segment`), as Python `ast`.

``captured_segment(_start, a0, a1, ...)`` runs the segment's calls in order: each launch's
compiled functions (its loop, then its folds), a `Rebin` as a launch (its rule, whose flag is
its error word, then the groupings' builds), `Assign`s as float64 arithmetic on the Globals'
arrays, `Loop`s as ``while`` loops, `Branch`es as ``if`` statements. Every launch has a
*position*; its block runs when ``_start <= position``, so that the function can be called
again from the position after a launch whose float64 sums its lanes left undecided (the host
sums them exactly: `_Runner`). A loop keeps its iteration count in an array of its own, and has
a position of its own at the end of its body (what the last launch of the body resumes at); a
branch has one at the end of each side, and a resume inside a side continues that side without
testing the condition again. The function returns -1 when done, a launch's position when its
kernel flagged a failure, -2 - position when its lanes left a sum undecided, at a `HostStop`
(host work, such as a distributed launch's ghost exchange and Global merge), or where a
`CompiledStop`'s calls (the same work done compiled) leave the rest to the host: the runner
does it and calls the function again from the next position.
"""
from __future__ import annotations

import ast

import numpy as np

from ....relations.global_expr import Expr
from ...folds import lane_sums
from ..base import Assign, Branch, CompiledStop, HostStop, Loop

_BINOPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div}
_COMPARE = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE}


def _name(name: str, store: bool = False) -> ast.Name:
    return ast.Name(name, ast.Store() if store else ast.Load())


def _first(array: ast.expr, store: bool = False) -> ast.Subscript:
    return ast.Subscript(array, ast.Constant(0), ast.Store() if store else ast.Load())


class SegmentCode:
    """The parameters (`params`, their values `args`), callees and positions of one segment,
    gathered while its statements are made (`statements`)."""

    def __init__(self, copy_values):
        self.copy_values = copy_values  # the compiled helper copying rounded sums in
        self.params, self.args, self.index = [], [], {}  # (index: array id -> parameter)
        self.callees = {}  # name -> compiled function
        self.positions = []  # position -> its launch (`CapturedCall`), or None: a loop's end
        self.loops = 0

    def param(self, value) -> ast.Name:
        """The parameter passing `value` (an array once however often it is passed)."""
        if isinstance(value, np.ndarray):
            name = self.index.get(id(value))
            if name is None:
                name = self.index[id(value)] = f"a{len(self.params)}"
                self.params.append(name)
                self.args.append(value)
            return _name(name)
        self.params.append(f"a{len(self.params)}")
        self.args.append(value)
        return _name(self.params[-1])

    def call(self, fn, fargs) -> ast.Call:
        name = f"f{len(self.callees)}"
        self.callees[name] = fn
        return ast.Call(_name(name), [self.param(a) for a in fargs], [])

    def value(self, x) -> ast.expr:
        """A `global_expr` operand: a float, a Global's value, or an `Expr`."""
        if isinstance(x, float):
            return ast.Constant(x)
        if not isinstance(x, Expr):
            return _first(self.param(x._data))
        if x.op == "neg":
            return ast.UnaryOp(ast.USub(), self.value(x.args[0]))
        if x.op == "abs":
            return ast.Call(_name("abs"), [self.value(x.args[0])], [])
        if x.op == "sqrt":  # (llvm's sqrt: correctly rounded, NaN below zero)
            return ast.Call(ast.Attribute(_name("math"), "sqrt", ast.Load()),
                            [self.value(x.args[0])], [])
        return ast.BinOp(self.value(x.args[0]), _BINOPS[x.op](), self.value(x.args[1]))

    def statements(self, calls) -> list:
        """The statements running `calls`; an assignment goes ahead of the next launch or loop
        (skipped with it when resuming past it); trailing ones run last, unguarded."""
        out, before = [], []
        for c in calls:
            if isinstance(c, Assign):
                before.append(self.assign(c))
            elif isinstance(c, Loop):
                out += self.loop(c, before)
                before = []
            elif isinstance(c, Branch):
                out += self.branch(c, before)
                before = []
            elif isinstance(c, HostStop):
                out.append(self.host_stop(c, before))
                before = []
            elif isinstance(c, CompiledStop):
                out.append(self.compiled_stop(c, before))
                before = []
            else:
                out.append(self.launch(c, before))
                before = []
        return out + before

    def assign(self, c: Assign) -> ast.Assign:
        """The Global's value, and its row -1 (as `global_expr.set_value` leaves an arg-min or
        arg-max Global: no row has its value yet)."""
        return ast.Assign([ast.Tuple([_first(self.param(c.target._data), True),
                                      _first(self.param(c.target._row_data), True)],
                                     ast.Store())],
                          ast.Tuple([self.value(c.expr), ast.Constant(-1)], ast.Load()))

    def resumes(self, position: int) -> ast.Compare:
        return ast.Compare(_name("_start"), [ast.LtE()], [ast.Constant(position)])

    def host_stop(self, c: HostStop, before) -> ast.If:
        """Back to the host (after the assignments before it), which goes on after it."""
        p = len(self.positions)
        self.positions.append(c)
        return ast.If(self.resumes(p), before + [ast.Return(ast.Constant(-2 - p))], [])

    def compiled_stop(self, c: CompiledStop, before) -> ast.If:
        """Its calls in order; the first not returning 0 sends the segment to the host (which
        does the rest, then goes on after it)."""
        p = len(self.positions)
        self.positions.append(c)
        block = before + [
            ast.If(ast.Compare(self.call(fn, fargs), [ast.NotEq()], [ast.Constant(0)]),
                   [ast.Return(ast.Constant(-2 - p))], []) for fn, fargs in c.calls]
        return ast.If(self.resumes(p), block, [])

    def launch(self, c, before) -> ast.If:
        p = len(self.positions)
        self.positions.append(c)
        block = before + [ast.Expr(self.call(*c.calls[0]))]
        failed = ast.Compare(_first(self.param(c.err)), [ast.NotEq()], [ast.Constant(0)])
        block.append(ast.If(failed, [ast.Return(ast.Constant(p))], []))  # (the launch raises)
        if c.lanes is not None:  # rounded from the lanes, or the exact path on the host
            for _g, flat, q0, q1, out, _fold in c.lanes.sums:
                decided = self.call(lane_sums.finish,
                                    (c.lanes.lanes, q0, q1, c.lanes.depth, flat, out))
                block.append(ast.If(ast.UnaryOp(ast.Not(), decided),
                                    [ast.Return(ast.Constant(-2 - p))], []))
            for _g, flat, _q0, _q1, out, _fold in c.lanes.sums:
                if out is not flat:
                    block.append(ast.Expr(self.call(self.copy_values, (flat, out))))
        block += [ast.Expr(self.call(fn, fargs)) for fn, fargs in c.calls[1:]]
        return ast.If(self.resumes(p), block, [])

    def loop(self, c: Loop, before) -> list:
        first = len(self.positions)
        k = self.loops
        self.loops += 1
        count = self.param(np.zeros(1, dtype=np.int64))  # (kept between calls: a resume)
        go, it = f"go{k}", _first(count)

        def test() -> ast.Assign:  # go = count < max and condition
            more = ast.Compare(it, [ast.Lt()], [ast.Constant(c.max_iterations)])
            if c.condition is not None:
                more = ast.BoolOp(ast.And(), [more] + self.comparisons(c.condition))
            return ast.Assign([_name(go, True)], more)

        fresh = [ast.Assign([_first(count, True)], ast.Constant(0)), test()]
        calls = list(c.calls)
        trailing = []  # the body's last assignments: run at its end position
        while calls and isinstance(calls[-1], Assign):
            trailing.insert(0, self.assign(calls.pop()))
        body = self.statements(calls)  # (positions first .. end - 1)
        end = len(self.positions)
        self.positions.append(None)
        if trailing:
            body.append(ast.If(self.resumes(end), trailing, []))
        if c.record is not None:  # values[count] = g
            g, values = c.record
            body.append(ast.Assign([ast.Subscript(self.param(values), it, ast.Store())],
                                   _first(self.param(g._data))))
        body += [ast.Assign([_name("_start", True)], ast.Constant(0)),
                 ast.AugAssign(_first(count, True), ast.Add(), ast.Constant(1)), test()]
        # a fresh start (a resume inside the body is at a later position than its first)
        entry = ast.If(self.resumes(first), before + fresh,
                       [ast.Assign([_name(go, True)], ast.Constant(True))])
        stmts = [entry, ast.While(_name(go), body, [])]
        if c.count is not None:
            stmts.append(ast.Assign([_first(self.param(c.count._data), True)], it))
        return [ast.If(self.resumes(end), stmts, [])]

    def comparisons(self, condition) -> list:
        """The comparisons that must all hold, in order (`and` tests them in order)."""
        return [ast.Compare(self.value(p.left), [_COMPARE[p.op]()], [self.value(p.right)])
                for p in condition.parts]

    def branch(self, c: Branch, before) -> list:
        """``if`` the condition (tested on a fresh start only; a resume inside a side takes
        that side): each side's statements, its trailing assignments at its end position."""
        first = len(self.positions)
        take = f"take{self.loops}"
        self.loops += 1
        sides, ends = [], []
        for calls in (c.then, c.otherwise):
            calls = list(calls)
            trailing = []
            while calls and isinstance(calls[-1], Assign):
                trailing.insert(0, self.assign(calls.pop()))
            stmts = self.statements(calls)
            ends.append(len(self.positions))
            self.positions.append(None)
            if trailing:
                stmts.append(ast.If(self.resumes(ends[-1]), trailing, []))
            sides.append(stmts or [ast.Pass()])
        test = self.comparisons(c.condition)
        fresh = before + [ast.Assign([_name(take, True)], test[0] if len(test) == 1 else
                                     ast.BoolOp(ast.And(), test))]
        # (resuming: inside `then` up to its end position, else inside `otherwise`)
        resumed = ast.Assign([_name(take, True)], self.resumes(ends[0]))
        stmts = [ast.If(self.resumes(first), fresh, [resumed]),
                 ast.If(_name(take), sides[0], sides[1])]
        return [ast.If(self.resumes(ends[1]), stmts, [])]
