"""`rs.capture()`: record a step's launches once, replay them without Python between them.

    with rs.capture() as step:   # runs the step once, launch by launch, and records it
        E.foreach(conduct)
        V.foreach(update)
        T.swap(T_new)
    for _ in range(n):
        step()                   # the same launches, in order, with the same bits

A capture records launches (over a relation or a subset, each under the configuration it ran
under), `Field.swap` and `Field.copy_from`. What a replay could not repeat is refused while
recording, with a `CaptureError`: reading a Global's value (Python deciding something from it
would not run again), assigning a Global or loading a field from the host, inserting or
deleting rows from the host.

A replay runs a *plan*: the recorded operations with every launch's compiled form found and
bound once. Consecutive launches whose backend can run them as one call (`Launch.capture_call`,
`Backend.compile_segment`: the cpu target, for launches with no host work after their loop)
become one compiled *segment*; every other launch replays as an ordinary launch. A plan is made
for the arrays the step's fields hold and the relations' structure (sizes, keys, schemas) at
the replay's start, and kept: a double buffer swapped each step uses two plans, each made once.
Anything else changed from the host (a relation resized, keys reloaded, a field added) makes a
new plan at the next replay. A step replays under the configuration it was recorded with; a
launch recorded under the process default refuses to replay once the default is another
(`rs.configure`), naming both.

While an `rs.Tape` records, a replay runs its launches through `foreach`, so the tape records
them as it records any launch.
"""
from __future__ import annotations

from .. import config as _config
from ..errors import CaptureError
from ..relations import global_expr
from ..relations import launch as _launch
from ..relations.field import Field
from . import execute
from .backends.base import Assign, Loop

PLANS_KEPT = 8  # plans kept per step (one per state of its fields' arrays; a double buffer: 2)


class _Launch:
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


class _Swap:
    __slots__ = ("field", "other")

    def __init__(self, field, other):
        self.field, self.other = field, other

    def replay(self) -> None:
        self.field.swap(self.other)

    def __repr__(self) -> str:
        return f"{self.field.qualname}.swap({self.other.qualname})"


class _Copy:
    __slots__ = ("field", "source")

    def __init__(self, field, source):
        self.field, self.source = field, source

    def replay(self) -> None:
        self.field.copy_from(self.source)

    def __repr__(self) -> str:
        return f"{self.field.qualname}.copy_from({self.source.qualname})"


class _Assign:
    __slots__ = ("target", "expr")

    def __init__(self, target, expr):
        self.target, self.expr = target, expr

    def replay(self) -> None:
        global_expr.assign(self.target, self.expr)

    def __repr__(self) -> str:
        return f"rs.assign({global_expr._show(self.target)}, {global_expr._show(self.expr)})"


class _Loop:
    """`rs.while_loop` recorded: its `global_loop.Loop` and its body's operations (None until
    an iteration ran while recording: then recorded at the first replay that runs one)."""

    __slots__ = ("loop", "ops", "step")

    def __init__(self, loop, step):
        self.loop, self.ops, self.step = loop, None, step

    def replay(self) -> None:
        loop, it = self.loop, 0
        while loop.holds(it):
            if self.ops is None:
                self._record()
            else:
                for op in self.ops:
                    op.replay()
            it += 1
        loop.set_count(it)

    def _record(self) -> None:
        """The body's first run: recorded now (its step's plans are made again)."""
        if _launch.recorders:  # (a tape records: the body runs as it is)
            return self.loop.body()
        with Capture() as sub:
            self.loop.body()
        self.ops = sub.ops
        self.step._collect()

    def __repr__(self) -> str:
        body = "not recorded yet" if self.ops is None else "; ".join(map(repr, self.ops))
        return f"rs.while_loop({self.loop.condition!r}, max {self.loop.max_iterations}: " \
            f"{body})"


def _walk(ops):
    """Every operation of `ops`, loop bodies' included (depth first)."""
    for op in ops:
        yield op
        if isinstance(op, _Loop) and op.ops is not None:
            yield from _walk(op.ops)


class Step:
    """A recorded step (made by `rs.capture()`); call it to replay the step."""

    def __init__(self):
        self.ops: list = []
        self.recording = True
        self.plans: dict = {}  # state (see `_state`) -> _Plan
        self.fields: tuple = ()  # every field whose array a plan binds
        self.relations: tuple = ()  # every relation whose structure a plan depends on
        self.replays = 0
        self.default = None  # the default configuration a launch was recorded under, if any
        self.ended = None  # the relations' storage versions when the last replay ended
        self.next = None  # the plan for the state it ended in
        self.eager = False  # compile segments when made (`compile`)

    def __call__(self) -> None:
        self.replays += 1
        if _launch.recorders:  # a tape records: the launches as launches
            if self.recording:
                raise CaptureError("a step cannot replay inside its own `with rs.capture()` "
                                   "block")
            for op in self.ops:
                op.replay()
            return
        if self.default is not None and _config._current is not self.default:
            self._refuse_default()
        # the relations' storage versions move with every change of arrays, keys, sizes or
        # schema: unmoved since the last replay ended, the state is the one it ended in
        versions = tuple([r.storage_version for r in self.relations])
        if versions == self.ended:
            plan = self.next
        else:
            state = self._state()
            plan = self.plans.get(state) or self._plan(state)
        plan.run()
        self.ended = tuple([r.storage_version for r in self.relations])
        self.next = plan.next
        if self.next is None:  # (the state it ends in: found once per plan)
            state = self._state()
            self.next = self.plans.get(state) or self._plan(state)
            if plan.repeatable:
                plan.next = self.next

    @property
    def segments(self) -> int:
        """How many compiled calls a plan replaces launches with (the most of any plan)."""
        return max((len(p.segments) for p in self.plans.values()), default=0)

    def compile(self) -> Step:
        """Compile the compiled segments of every plan now, and of later plans when they are
        made (by default they compile in the background while the first replays run their
        launches one by one)."""
        self.eager = True
        for plan in self.plans.values():
            for segment in plan.segments:
                segment.compile()
        return self

    def __repr__(self) -> str:
        return f"<relsim captured step: {'; '.join(map(repr, self.ops))}>"

    # -- plans ----------------------------------------------------------------------------
    def _state(self) -> tuple:
        """What the plans depend on: the arrays the fields hold, the relations' structure."""
        return tuple(map(id, [f._stored() for f in self.fields])) + \
            tuple((r.structure_version, r.schema_version, r.size) for r in self.relations)

    def _refuse_default(self) -> None:
        op = next(op for op in _walk(self.ops) if isinstance(op, _Launch) and op.follows_default)
        raise CaptureError(f"{op!r} was captured under {op.config!r}, the default "
                           f"configuration then; the default is now {_config.current()!r}: "
                           f"capture the step again (or pass the configuration to foreach)")

    def _plan(self, state) -> _Plan:
        if len(self.plans) >= PLANS_KEPT:
            self.plans.pop(next(iter(self.plans)))
        plan = self.plans[state] = _Plan(self.ops, self.eager)
        return plan

    # -- recording ------------------------------------------------------------------------
    def _finish(self) -> None:
        self.recording = False
        self._collect()

    def _collect(self) -> None:
        """The fields and relations the plans depend on (again after a loop's body was
        recorded late: the plans are made again)."""
        self.plans.clear()
        self.ended = self.next = None
        fields, relations = {}, {}
        for op in _walk(self.ops):
            if isinstance(op, _Launch) and op.follows_default:
                self.default = op.config
            if isinstance(op, _Launch):
                exe = execute.executable(op.kernel, op.relation, op.config)
                relations[id(op.relation)] = op.relation
                for t in exe.analysed.summary.targets():
                    if isinstance(t, Field):
                        fields[id(t)] = t
                        relations[id(t.relation)] = t.relation
            elif isinstance(op, (_Swap, _Copy)):  # (Globals: no arrays or structure to watch)
                for f in (op.field, getattr(op, "other", None), getattr(op, "source", None)):
                    if f is not None:
                        fields[id(f)] = f
                        relations[id(f.relation)] = f.relation
        self.fields, self.relations = tuple(fields.values()), tuple(relations.values())


class _Plan:
    """The operations of one step bound for one state of its fields' arrays: compiled
    segments (one call each) and the operations replayed as they are."""

    def __init__(self, ops, eager=False):
        self.items, self.segments, self.eager = [], [], eager
        # the plan for the state a run ends in (found after the first run), when that state
        # depends on this plan's state alone: no rows inserted or deleted, no keys recomputed
        self.next = None
        self.repeatable = True
        run = []  # (op, [(launch op, launch)], call) of the segment being gathered
        backend = None  # the run's
        undo = []  # swaps made while binding (the plan binds each launch as it will run)
        try:
            for op in ops:
                if isinstance(op, _Assign) and run:  # (computed inside the segment)
                    run.append((op, [], Assign(op.target, op.expr)))
                    continue
                bound = self._bind(op)
                if bound is not None:
                    launched, call, its = bound
                    if run and its is not backend:
                        self._close(run, backend)
                    run.append((op, launched, call))
                    backend = its
                    continue
                self._close(run, backend)
                self.items.append(op.replay)
                if isinstance(op, _Loop):  # (its body may swap, insert rows: state found anew)
                    self.repeatable = False
                if isinstance(op, _Swap):
                    op.field.swap(op.other)  # (what the next launches bind)
                    undo.append(op)
            self._close(run, backend)
        finally:
            for op in reversed(undo):
                op.field.swap(op.other)

    def _bind(self, op):
        """`op` as part of a segment: ([(launch op, launch) it runs], its backend's call
        object, the backend), or None when it replays as it is."""
        if isinstance(op, _Launch):
            exe = execute.executable(op.kernel, op.relation, op.config)
            if exe.analysed.inserts or exe.analysed.deletes or \
                    any(f._followers for f in op.kernel._writes[id(exe)]):
                self.repeatable = False  # (rows move; keys that follow a field it writes)
                return None
            call = exe.capture_call(op.relation, op.subset)
            if call is None:
                return None
            colours = op.kernel._colours[id(exe)]
            if colours is not None:  # (the launch space and keys are this plan's)
                colours.check(op.relation, op.subset)
            return [(op, exe)], call, op.config.backend
        if isinstance(op, _Loop) and op.ops is not None:  # a body of launches and assigns
            launched, calls, backend = [], [], None
            for inner in op.ops:
                if isinstance(inner, _Assign):
                    calls.append(Assign(inner.target, inner.expr))
                    continue
                bound = self._bind(inner)
                if bound is None or backend not in (None, bound[2]):
                    return None
                launched += bound[0]
                calls.append(bound[1])
                backend = bound[2]
            if backend is None:
                return None
            loop = op.loop
            return launched, Loop(loop.condition, tuple(calls), loop.max_iterations,
                                  loop.count), backend
        return None

    def _close(self, run, backend) -> None:
        """Compile the operations gathered in `run` as one segment (or replay them)."""
        tail = []  # assignments after the last launch: after the segment
        while run and isinstance(run[-1][0], _Assign):
            tail.insert(0, run.pop())
        segment = None
        if run:
            replays = tuple(op.replay for op, _, _ in run)

            def fallback():
                for replay in replays:
                    replay()
            segment = backend.compile_segment([c for _, _, c in run], fallback)
        if segment is None:
            self.items += [op.replay for op, _, _ in run]
        else:
            launched = [pair for _, pairs, _ in run for pair in pairs]
            watches = tuple(w for op, exe in launched
                            if (w := op.kernel._watches[id(exe)]) is not None)
            writes = tuple({id(f): f for op, exe in launched
                            for f in op.kernel._writes[id(exe)]}.values())
            self.items.append(_segment_item(segment, watches, writes))
            self.segments.append(segment)
            if self.eager:
                segment.compile()
        run.clear()
        self.items += [op.replay for op, _, _ in tail]

    def run(self) -> None:
        for item in self.items:
            item()


def _segment_item(segment, watches, writes):
    """A compiled segment with what `execute.run` does around each launch: the captured
    constants checked before, the written fields told after."""
    def item():
        for w in watches:
            w.check()
        segment()
        for f in writes:
            f._values_changed()
    return item


class Capture(_launch.Recorder):
    """The recorder `rs.capture()` installs while its block runs."""

    label = "an rs.capture records"

    def __init__(self):
        self.step = Step()
        self.ops = self.step.ops  # where operations are recorded now (a loop's body, ...)
        self.saved: list = []  # the lists `ops` was before each loop now running
        self.loops: list = []  # the _Loop op of each loop now running

    def __enter__(self) -> Step:
        if any(isinstance(r, Capture) for r in _launch.recorders):
            raise CaptureError("rs.capture blocks do not nest: capture the inner step, then "
                               "call it inside the outer block (its launches are recorded)")
        if _launch.recorders:
            raise CaptureError(f"rs.capture cannot start while {_launch.recorders[0].label}: "
                               f"capture the step first, then replay it while the tape records")
        _launch.recorders.append(self)
        return self.step

    def __exit__(self, kind, exc, tb) -> None:
        _launch.recorders.remove(self)
        if kind is None:
            self.step._finish()

    def before_launch(self, kernel, relation, subset, config) -> None:
        cfg = config if config is not None else _config.current()
        self.ops.append(_Launch(kernel, relation, subset, cfg, config is None))

    def before_host_write(self, target, value) -> None:
        raise CaptureError(f"{_name(target)} assigned from the host inside rs.capture: a replay "
                           f"runs the recorded launches only, and would not assign it again; "
                           f"assign it before the block, or compute it in a kernel")

    def before_host_read(self, target) -> None:
        raise CaptureError(f"{_name(target)}.value read inside rs.capture: a replay runs the "
                           f"recorded launches only, so what Python decides from the value "
                           f"would not be decided again; read it after the block or a replay")

    def before_assign(self, target, expr, value) -> None:
        self.ops.append(_Assign(target, expr))

    def before_swap(self, field, other) -> None:
        self.ops.append(_Swap(field, other))

    def before_copy(self, field, source) -> None:
        self.ops.append(_Copy(field, source))

    def before_loop(self, loop) -> None:
        op = _Loop(loop, self.step)
        self.ops.append(op)
        self.loops.append(op)
        self.saved.append(self.ops)
        self.ops = []  # (iterations after the first: not recorded)

    def loop_iteration(self, loop, it: int) -> None:
        if it == 0:  # the body's first run: recorded
            self.loops[-1].ops = self.ops = []
        elif it == 1:
            self.ops = []

    def after_loop(self, loop) -> None:
        self.loops.pop()
        self.ops = self.saved.pop()


def _name(target) -> str:
    if isinstance(target, Field):
        return f"field {target.qualname}"
    return f"Global {target.name!r}" if getattr(target, "name", None) else "a Global"


class CapturedFunction:
    """`rs.capture(fn)`: calls `fn()` once, capturing it, and replays that capture after."""

    def __init__(self, fn):
        self.fn, self.step = fn, None

    def __call__(self) -> None:
        if self.step is not None:
            return self.step()
        with Capture() as step:
            self.fn()
        self.step = step

    def __repr__(self) -> str:
        return f"<relsim captured {getattr(self.fn, '__name__', self.fn)!r}: " \
            f"{'not called yet' if self.step is None else repr(self.step)}>"


def capture(fn=None):
    """`with rs.capture() as step:` runs the block once and records its launches, swaps and
    copies; `step()` replays them (see this module's docstring). `rs.capture(fn)`: a callable
    whose first call runs `fn()` (no arguments) and captures it, and whose later calls replay
    that capture."""
    if fn is not None:
        if not callable(fn):
            raise TypeError(f"rs.capture(fn) takes a function of no arguments, got {fn!r}")
        return CapturedFunction(fn)
    return Capture()
