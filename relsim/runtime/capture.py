"""`rs.capture()`: record a step's launches once, replay them without Python between them.

    with rs.capture() as step:   # runs the step once, launch by launch, and records it
        E.foreach(conduct)
        V.foreach(update)
        T.swap(T_new)
    for _ in range(n):
        step()                   # the same launches, in order, with the same bits

A capture records launches (over a relation or a subset, each under the configuration it ran
under), `Field.swap`, `Field.copy_from`, `rs.assign`, `rs.while_loop` and `rs.cond`, both of
whose sides it records, the one not taken traced (`capture_ops.py`).
What a replay could not repeat is refused while recording, with a `CaptureError`: reading a
Global's value (Python deciding something from it would not run again), assigning a Global or
loading a field from the host, inserting or deleting rows from the host.

A replay runs a *plan* (`capture_plan.py`): the recorded operations with every launch's
compiled form found and bound once. Consecutive launches whose backend can run them as one
call (`Launch.capture_call`, `Backend.compile_segment`: the cpu target, for launches whose work
after the loop is compiled), with the assignments before the first of them and the assignments,
loops and branches between them, become one compiled *segment*; every other operation replays
as it ran. A plan is made
for the arrays the step's fields hold and the relations' structure (sizes, keys, schemas) at
the replay's start, and kept: a double buffer swapped each step uses two plans, each made once.
Anything else changed from the host (a relation resized, keys reloaded, a field added) makes a
new plan at the next replay, as does a plan made while a launch could not yet join a segment
until its compiled code is at hand (the cpu's tier 0: `Launch.capture_later`), once it can.
A step replays under the configuration it was recorded with; a
launch recorded under the process default refuses to replay once the default is another
(`rs.configure`), naming both.

While an `rs.Tape` records, a replay runs its launches through `foreach`, so the tape records
them as it records any launch.
"""
from __future__ import annotations

from .. import config as _config
from ..errors import CaptureError
from ..relations import launch as _launch
from ..relations.field import Field
from . import epoch, execute, parallel
from .capture_ops import AssignOp, BranchOp, CopyOp, LaunchOp, LoopOp, SwapOp, walk
from .capture_plan import Plan

PLANS_KEPT = 8  # plans kept per step (one per state of its fields' arrays; a double buffer: 2)


class Step:
    """A recorded step (made by `rs.capture()`); call it to replay the step."""

    def __init__(self):
        self.ops: list = []
        self.recording = True
        self.plans: dict = {}  # state (see `_state`) -> Plan
        self.fields: tuple = ()  # every field whose array a plan binds
        self.relations: tuple = ()  # every relation whose structure a plan depends on
        self.replays = 0
        self.default = None  # the default configuration a launch was recorded under, if any
        self.ended = None  # the relations' storage versions when the last replay ended
        self.ended_epoch = None  # and the process's count of storage changes (`epoch`) then
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
            if _config._current != self.default:  # (configure may make an equal one again)
                self._refuse_default()
            self.default = _config._current
        # the relations' storage versions move with every change of arrays, keys, sizes or
        # schema: unmoved since the last replay ended, the state is the one it ended in. Each
        # such change also moves the process's count (`epoch`): unmoved, no relation's moved
        # (a replay of a small step: ~0.3 us less)
        start = epoch.value
        if start == self.ended_epoch:
            plan, versions = self.next, self.ended
        else:
            versions = tuple([r.storage_version for r in self.relations])
            if versions == self.ended:
                plan = self.next
            else:
                state = self._state()
                plan = self.plans.get(state) or self._plan(state)
        if plan.waiting and plan.stale():  # (made while launches were in tier 0)
            plan = self._replan(plan)
        plan.run()
        if not plan.repeatable:  # (the state it ends in depends on more than its start)
            self.ended = self.next = self.ended_epoch = None
            return
        if plan.next is None:  # the state it ends in: found once per plan
            state = self._state()
            plan.next = self.plans.get(state) or self._plan(state)
        end = epoch.value
        self.ended = versions if end == start else \
            tuple([r.storage_version for r in self.relations])
        self.ended_epoch = end
        self.next = plan.next

    @property
    def segments(self) -> int:
        """How many compiled calls a plan replaces launches with (the most of any plan)."""
        return max((len(p.segments) for p in self.plans.values()), default=0)

    def compiled(self) -> bool | None:
        """For the arrays the fields hold now: None when no operation of the step becomes a
        compiled segment on its backend (it replays launch by launch); else whether every
        segment is compiled (starting the compilation of those that are not: in the
        background, unless `Config(segments="now")`). Recorded steps only."""
        if self.recording:
            raise CaptureError("a step cannot be asked about inside its own rs.capture block")
        state = self._state()
        plan = self.plans.get(state) or self._plan(state)
        if plan.waiting and plan.stale():  # (made while launches were in tier 0)
            plan = self._replan(plan)
        done = [segment.poll() for segment in plan.segments]  # (each polled: each starts)
        rest = None if plan.rest is None else plan.rest.compiled()
        if not done and rest is None:
            return None
        return all(done) and rest is not False

    def compile(self) -> Step:
        """Compile the compiled segments of every plan now, and of later plans when they are
        made (by default they compile in the background while the first replays run their
        launches one by one)."""
        self.eager = True
        for plan in self.plans.values():
            for segment in plan.segments:
                segment.compile()
            if plan.rest is not None:
                plan.rest.compile()
        return self

    def __repr__(self) -> str:
        return f"<relsim captured step: {'; '.join(map(repr, self.ops))}>"

    # -- plans ----------------------------------------------------------------------------
    def _state(self) -> tuple:
        """What the plans depend on: the arrays the fields hold, the relations' structure."""
        return tuple(map(id, [f._stored() for f in self.fields])) + \
            tuple((r.structure_version, r.schema_version, r.size) for r in self.relations)

    def _refuse_default(self) -> None:
        op = next(op for op in walk(self.ops) if isinstance(op, LaunchOp) and op.follows_default)
        raise CaptureError(f"{op!r} was captured under {op.config!r}, the default "
                           f"configuration then; the default is now {_config.current()!r}: "
                           f"capture the step again (or pass the configuration to foreach)")

    def _replan(self, stale: Plan) -> Plan:
        """A plan for the state now in place of `stale`, whose waiting launches now have
        their compiled code (the plans leading to it find theirs again)."""
        state = self._state()
        plan = self.plans.get(state)
        if plan is None or plan is stale:
            self.plans.pop(state, None)
            plan = self._plan(state)
        for other in self.plans.values():
            if other.next is stale:
                other.next = None
        return plan

    def _plan(self, state) -> Plan:
        if len(self.plans) >= PLANS_KEPT:
            self.plans.pop(next(iter(self.plans)))
        plan = self.plans[state] = Plan(self.ops, self.eager, self._rest)
        return plan

    # -- recording ------------------------------------------------------------------------
    def _finish(self) -> None:
        self.recording = False
        self._collect()

    def _rest(self, ops) -> Step:
        """The step of `ops` (what follows an operation that moves rows or may swap arrays):
        planned when it runs, for the arrays its fields hold then."""
        rest = Step()
        rest.ops, rest.eager = list(ops), self.eager
        rest._finish()
        return rest

    def record_body(self, op) -> None:
        """Run the body of `op` (a LoopOp whose body did not run while recording) and record
        its operations; this step's plans are made again."""
        with Capture() as sub:
            op.loop.body()
        op.ops = sub.ops
        self._collect()

    def _collect(self) -> None:
        """The fields and relations the plans depend on (again after a loop's body was
        recorded late: the plans are made again)."""
        self.plans.clear()
        self.ended = self.next = self.ended_epoch = None
        fields, relations = {}, {}
        for op in walk(self.ops):
            if isinstance(op, LaunchOp) and op.follows_default:
                self.default = op.config
            if isinstance(op, LaunchOp):
                exe = execute.executable(op.kernel, op.relation, op.config)
                relations[id(op.relation)] = op.relation
                for t in exe.analysed.summary.targets():
                    if isinstance(t, Field):
                        fields[id(t)] = t
                        relations[id(t.relation)] = t.relation
            elif isinstance(op, (SwapOp, CopyOp)):  # (Globals: no arrays or structure to watch)
                for f in (op.field, getattr(op, "other", None), getattr(op, "source", None)):
                    if f is not None:
                        fields[id(f)] = f
                        relations[id(f.relation)] = f.relation
        self.fields, self.relations = tuple(fields.values()), tuple(relations.values())


class Capture(_launch.Recorder):
    """The recorder `rs.capture()` installs while its block runs."""

    label = "an rs.capture records"
    traces_branches = True  # (the side rs.cond's condition does not pick: traced, recorded)

    def __init__(self):
        self.step = Step()
        self.ops = self.step.ops  # where operations are recorded now (a loop's body, ...)
        self.saved: list = []  # the lists `ops` was before each loop or branch now running
        self.loops: list = []  # the LoopOp op of each loop now running
        self.branches: list = []  # the BranchOp of each rs.cond now running

    def __enter__(self) -> Step:
        if any(isinstance(r, Capture) for r in _launch.recorders):
            raise CaptureError("rs.capture blocks do not nest: capture the inner step, then "
                               "call it inside the outer block (its launches are recorded)")
        if _launch.recorders:
            raise CaptureError(f"rs.capture cannot start while {_launch.recorders[0].label}: "
                               f"capture the step first, then replay it while the tape records")
        _launch.recorders.append(self)
        parallel.capturing()
        return self.step

    def __exit__(self, kind, exc, tb) -> None:
        _launch.recorders.remove(self)
        if kind is None:
            self.step._finish()

    def before_launch(self, kernel, relation, subset, config) -> None:
        cfg = config if config is not None else _config.current()
        self.ops.append(LaunchOp(kernel, relation, subset, cfg, config is None))

    def before_host_write(self, target, value) -> None:
        raise CaptureError(f"{_name(target)} assigned from the host inside rs.capture: a replay "
                           f"runs the recorded launches only, and would not assign it again; "
                           f"assign it before the block, or compute it in a kernel")

    def before_host_read(self, target) -> None:
        raise CaptureError(f"{_name(target)}.value read inside rs.capture: a replay runs the "
                           f"recorded launches only, so what Python decides from the value "
                           f"would not be decided again; read it after the block or a replay")

    def before_assign(self, target, expr, value) -> None:
        self.ops.append(AssignOp(target, expr))

    def before_swap(self, field, other) -> None:
        self.ops.append(SwapOp(field, other))

    def before_copy(self, field, source) -> None:
        self.ops.append(CopyOp(field, source))

    def before_loop(self, loop) -> None:
        op = LoopOp(loop, self.step)
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

    def before_branch(self, branch) -> None:
        op = BranchOp(branch)
        self.ops.append(op)
        self.saved.append(self.ops)
        self.branches.append(op)

    def branch_side(self, branch, taken: bool) -> None:
        self.ops = self.branches[-1].sides[taken]

    def after_branch(self, branch) -> None:
        self.branches.pop()
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
