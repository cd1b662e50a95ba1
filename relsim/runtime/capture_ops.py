"""The operations a captured step (`runtime/capture.py`) records, each replayable as it ran:
a launch, a swap or copy of fields, an `rs.assign`, an `rs.while_loop` with its body's
operations, an `rs.cond` with its sides' operations."""
from __future__ import annotations

from ..relations import global_branch, global_expr, global_loop
from ..relations import launch as _launch


class LaunchOp:
    __slots__ = ("kernel", "relation", "subset", "config", "follows_default")

    def __init__(self, kernel, relation, subset, config, follows_default):
        self.kernel, self.relation, self.subset = kernel, relation, subset
        self.config, self.follows_default = config, follows_default

    def replay(self) -> None:  # (the plain launch: a tape records it)
        (self.relation if self.subset is None else self.subset).foreach(self.kernel,
                                                                         self.config)

    def __repr__(self) -> str:
        space = self.relation.name if self.subset is None else \
            f"{self.relation.name}.{self.subset.name}"
        return f"{space}.foreach({self.kernel.name})"


class SwapOp:
    __slots__ = ("field", "other")

    def __init__(self, field, other):
        self.field, self.other = field, other

    def replay(self) -> None:
        self.field.swap(self.other)

    def __repr__(self) -> str:
        return f"{self.field.qualname}.swap({self.other.qualname})"


class CopyOp:
    __slots__ = ("field", "source")

    def __init__(self, field, source):
        self.field, self.source = field, source

    def replay(self) -> None:
        self.field.copy_from(self.source)

    def __repr__(self) -> str:
        return f"{self.field.qualname}.copy_from({self.source.qualname})"


class AssignOp:
    __slots__ = ("target", "expr")

    def __init__(self, target, expr):
        self.target, self.expr = target, expr

    def replay(self) -> None:
        global_expr.assign(self.target, self.expr)

    def __repr__(self) -> str:
        return f"rs.assign({global_expr._show(self.target)}, {global_expr._show(self.expr)})"


class LoopOp:
    """`rs.while_loop` recorded: its `global_loop.Loop` and its body's operations (None until
    an iteration ran while recording: then recorded at the first replay that runs one)."""

    __slots__ = ("loop", "ops", "step")

    def __init__(self, loop, step):
        self.loop, self.ops, self.step = loop, None, step

    def replay(self) -> None:
        loop, it = self.loop, 0
        if _launch.recorders:  # (recorded in turn, by a tape or an outer capture: a loop)
            body = loop.body if self.ops is None else _replaying(self.ops)
            global_loop.run(global_loop.Loop(loop.condition, body, loop.max_iterations,
                                             loop.count, loop.record))
            return
        while loop.holds(it):
            if self.ops is None:
                self._record()
            else:
                for op in self.ops:
                    op.replay()
            loop.recorded(it)
            it += 1
        loop.set_count(it)

    def _record(self) -> None:
        """The body's first run: recorded now (its step's plans are made again)."""
        self.step.record_body(self)

    def __repr__(self) -> str:
        body = "not recorded yet" if self.ops is None else "; ".join(map(repr, self.ops))
        return f"rs.while_loop({self.loop.condition!r}, max {self.loop.max_iterations}: " \
            f"{body})"


class BranchOp:
    """`rs.cond` recorded: its `global_branch.Branch` and the operations of each side,
    `sides[taken]` (both recorded while capturing: the side not taken traced)."""

    __slots__ = ("branch", "sides")

    def __init__(self, branch):
        self.branch, self.sides = branch, [[], []]

    def replay(self) -> None:
        if _launch.recorders:  # (recorded in turn, by a tape or an outer capture: a branch)
            global_branch.run(global_branch.Branch(self.branch.condition,
                                                   _replaying(self.sides[True]),
                                                   _replaying(self.sides[False])))
            return
        for op in self.sides[bool(self.branch.condition.holds())]:
            op.replay()

    def __repr__(self) -> str:
        then, otherwise = ("; ".join(map(repr, ops)) or "pass" for ops in self.sides[::-1])
        return f"rs.cond({self.branch.condition!r}: {then} else {otherwise})"


def _replaying(ops):
    """A function replaying `ops` in order."""
    def replay():
        for op in ops:
            op.replay()
    return replay


def walk(ops):
    """Every operation of `ops`, loop bodies' and branch sides' included (depth first)."""
    for op in ops:
        yield op
        if isinstance(op, LoopOp) and op.ops is not None:
            yield from walk(op.ops)
        if isinstance(op, BranchOp):
            for side in op.sides:
                yield from walk(side)
