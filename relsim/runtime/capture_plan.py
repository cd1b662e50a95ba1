"""A captured step's plan (`runtime/capture.py`): its operations bound for one state of the
fields' arrays, consecutive launches (with the assignments before them and the assignments,
loops and branches between them) handed to their backend as one compiled segment where it can,
the rest replayed as they are."""
from __future__ import annotations

from ..relations import rebinning
from . import execute
from .backends.base import Assign, Branch, HostStop, Loop, Rebin
from .capture_ops import AssignOp, BranchOp, LaunchOp, LoopOp, SwapOp


class Plan:
    """The operations of one step bound for one state of its fields' arrays: compiled
    segments (one call each) and the operations replayed as they are; after an operation that
    moves rows or may swap arrays (a launch inserting rows, a loop replayed in Python), the
    rest as a step of its own (`rest(ops)`), planned for the arrays it finds."""

    def __init__(self, ops, eager, rest):
        self.items, self.segments, self.eager = [], [], eager
        # the plan for the state a run ends in (found after the first run), when that state
        # depends on this plan's state alone: no rows inserted or deleted, no keys recomputed
        self.next = None
        self.repeatable = True
        self.moves = False  # an operation bound so far changes arrays unforeseeably
        self.rest = None  # the step of the operations after it (`rest(ops)`)
        # the launches replayed as they are only until their compiled code is at hand
        # (`Launch.capture_later`: the cpu's tier 0): once all are, the plan is made again
        self.waiting = []
        run = []  # (op, [(launch op, launch)], call) of the segment being gathered
        backend = None  # the run's
        # assignments before a run's first launch: computed inside the segment that launch
        # starts (a step that sets a Global, then launches: one call), else replayed
        lead = []
        undo = []  # swaps made while binding (the plan binds each launch as it will run)
        try:
            for i, op in enumerate(ops):
                if self.moves:  # (rows inserted, a loop that may swap): the operations after
                    # it are a step of their own, planned when it runs, for the arrays then
                    self.items += [a.replay for a, _, _ in lead]
                    self.rest = rest(ops[i:])
                    self.items.append(self.rest)
                    lead = []
                    break
                if isinstance(op, AssignOp):  # (computed inside the segment)
                    (run if run else lead).append((op, [], Assign(op.target, op.expr)))
                    continue
                bound = self._bind(op)
                if bound is not None and bound[2] is None and not run:
                    bound = None  # (a branch of assignments alone: joins a segment only)
                if bound is not None:
                    launched, call, its = bound
                    if its is None:  # (a branch of assignments: computed inside it)
                        run.append((op, launched, call))
                        continue
                    if run and its is not backend:
                        self._close(run, backend)
                    run += lead
                    lead = []
                    run.append((op, launched, call))
                    backend = its
                    continue
                self._close(run, backend)
                self.items += [a.replay for a, _, _ in lead]
                lead = []
                self.items.append(op.replay)
                if isinstance(op, (LoopOp, BranchOp)):  # (its body may swap, insert rows: the
                    # state is found anew)
                    self.repeatable = False
                    self.moves = True
                if isinstance(op, SwapOp):
                    op.field.swap(op.other)  # (what the next launches bind)
                    undo.append(op)
            self._close(run, backend)
            self.items += [a.replay for a, _, _ in lead]
        finally:
            for op in reversed(undo):
                op.field.swap(op.other)

    def _bind(self, op):
        """`op` as part of a segment: ([(launch op, launch) it runs], its backend's call
        object, the backend), or None when it replays as it is."""
        if isinstance(op, LaunchOp):
            exe = execute.executable(op.kernel, op.relation, op.config)
            followers = [kf for f in op.kernel._writes[id(exe)] for kf in f.followed_by()]
            if exe.analysed.inserts or exe.analysed.deletes:
                self.repeatable = False  # (rows move)
                self.moves = True
                return None
            call = exe.capture_call(op.relation, op.subset)
            if call is None and exe.capture_later():
                self.waiting.append(exe)  # (made again once it can join: in tier 0)
            if followers and (call is None or isinstance(call, tuple)):
                self.repeatable = False  # (keys that follow a field it writes, recomputed
                self.moves = True  # by the launch path; on several ranks, as distributed)
                return None
            if call is None:
                return None
            colours = op.kernel._colours[id(exe)]
            if colours is not None:  # (the launch space and keys are this plan's)
                colours.check(op.relation, op.subset)
            if followers:  # keys computed again into their arrays after it (moving
                # particles: their cells and cell lists), which the segment's launches keep:
                # by their compiled rule inside the segment, else on the host
                compiled = [_compiled_rebin(kf) for kf in followers]
                call = (call, *compiled) if None not in compiled else \
                    (call, HostStop(_rebin(followers)))
            return [(op, exe)], call, op.config.backend
        if isinstance(op, LoopOp) and op.ops is not None:  # a body of launches and assigns
            body = self._bind_body(op.ops)
            if body is None or body[2] is None:
                return None
            loop = op.loop
            return body[0], Loop(loop.condition, body[1], loop.max_iterations, loop.count,
                                 loop.record), body[2]
        if isinstance(op, BranchOp):
            sides = [self._bind_body(ops) for ops in op.sides]
            if None in sides or len({s[2] for s in sides} - {None}) > 1:
                return None
            (launched_else, otherwise, b0), (launched_then, then, b1) = sides
            # (backend None: assignments alone, computed in the segment it joins)
            return launched_then + launched_else, Branch(op.branch.condition, then,
                                                         otherwise), b1 or b0
        return None

    def _bind_body(self, ops):
        """The operations of a loop's body or a branch's side as calls of one segment:
        (launches, calls, backend: None when they are assignments alone), or None."""
        launched, calls, backend = [], [], None
        for inner in ops:
            if isinstance(inner, AssignOp):
                calls.append(Assign(inner.target, inner.expr))
                continue
            bound = self._bind(inner)
            if bound is None:
                return None
            if bound[2] is not None:
                if backend not in (None, bound[2]):
                    return None
                backend = bound[2]
            launched += bound[0]
            calls += _flat(bound[1])
        return launched, tuple(calls), backend

    def _close(self, run, backend) -> None:
        """Compile the operations gathered in `run` as one segment (or replay them)."""
        tail = []  # assignments after the last launch: after the segment
        while run and isinstance(run[-1][0], AssignOp):
            tail.insert(0, run.pop())
        segment = None
        if run:
            replays = tuple(op.replay for op, _, _ in run)

            def fallback():
                for replay in replays:
                    replay()
            segment = backend.compile_segment([x for _, _, c in run for x in _flat(c)],
                                              fallback)
        if segment is None:
            self.items += [op.replay for op, _, _ in run]
        else:
            launched = [pair for _, pairs, _ in run for pair in pairs]
            watches = tuple(w for op, exe in launched
                            if (w := op.kernel._watches[id(exe)]) is not None)
            writes = tuple({id(f): f for op, exe in launched
                            for f in op.kernel._writes[id(exe)]}.values())
            self.items.append(segment_item(segment, watches, writes))
            self.segments.append(segment)
            if self.eager:
                segment.compile()
        run.clear()
        self.items += [op.replay for op, _, _ in tail]

    def stale(self) -> bool:
        """Whether every launch it waited for can now join a segment: a plan made now would
        fuse more."""
        return not any(exe.capture_later() for exe in self.waiting)

    def run(self) -> None:
        for item in self.items:
            item()


def _compiled_rebin(kf):
    """A `Rebin` computing `kf`'s keys and groupings again by its compiled rule, or None."""
    made = rebinning.compiled_calls(kf)
    if made is None:
        return None
    calls, flag = made

    def done(ok):
        (rebinning.rewritten if ok else rebinning.abandoned)(kf)
    return Rebin(f"the keys of {kf.qualname}", tuple(calls), flag, kf.rebin_now, done)


def _rebin(followers):
    """The host work after a launch that wrote fields these key fields follow."""
    def rebin():
        for kf in followers:
            kf.rebin_now()
    return rebin


def _flat(call) -> tuple:
    """A launch's capture call as calls in order (a distributed launch gives a tuple)."""
    return call if isinstance(call, tuple) else (call,)


def segment_item(segment, watches, writes):
    """A compiled segment with what `execute.run` does around each launch: the captured
    constants checked before, the written fields told after."""
    def item():
        for w in watches:
            w.check()
        segment()
        for f in writes:  # (keys that follow one were computed after the launch writing it)
            f._values_changed(followers_current=True)
    return item
