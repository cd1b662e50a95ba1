"""`rs.Tape`: reverse-mode derivatives of a relsim program.

    with rs.Tape() as tape:
        for _ in range(steps):
            E.foreach(conduct)
            V.foreach(update)
        loss.value = 0.0
        V.foreach(misfit)            # loss += (v.T - v.T_seen) ** 2
    tape.backward(loss)
    V.T.grad.numpy()                 # dloss / dT at the tape's start
    kappa.grad                       # dloss / dkappa (a Global the kernels read)

While recording, the tape notes each launch (kernel, relation or subset, configuration) and
each host assignment (`Field.load`, `Global.value = ...`), with a copy of what it is about to
overwrite: the fields and Globals the launch writes or reduces into. `backward(L)` walks the
record backwards: it puts back what each launch overwrote, so the launch's inputs are as the
forward launch saw them, and launches the launch's adjoint kernel (`runtime/adjoint`), which
sends the derivatives of L on to what the launch read, through the same keys: the adjoint of a
read through a key is a reduction through it, and relsim's reductions are deterministic, so the
gradients are the same bits on any thread count and target. A host assignment zeroes the
adjoint of what it replaced: what the host computes in Python (say from a Global it read) and
assigns is a constant to `backward`. Afterwards the fields and Globals hold their values at the
end of the recording again.

``F.grad`` is the adjoint field of field F (``F.name + "__grad"`` on its relation), ``g.grad``
the value of Global g's adjoint. (A relation one of whose launches reduces into a Global with
min, max or an arg reduction also gets ``row__tape``, each row's number: the adjoint compares
it with the row the reduction chose.) Memory: the tape keeps a copy of every value a recorded launch
overwrites, or, with ``rs.Tape(checkpoint_every=K)``, only the values at the start of each
segment of K launches (`backward` recomputes a segment before reversing it). Inside a tape: no
`rs.insert`/`rs.delete`, and writes to fields go through ``load`` (a write into ``F.numpy()``
goes unseen).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from . import config as _config
from .adjoint_step import _Step, _step_accesses
from .errors import GradientError
from .relations import launch as _launch
from .relations.field import Field
from .relations.globals import Global
from .runtime import ir
from .runtime.adjoint import ROW_FIELD, Adjoint, AdjointKernel, GivenKernel, blind_spots
from .runtime.adjoint.field_picks import BEST, NONE, PICK, picked_fields
from .runtime.adjoint.records import is_diff
from .runtime.pipeline import analyse
from .types import f64, i64


@dataclass
class _Launch:
    kernel: object
    relation: object
    subset: object
    config: object
    analysed: object
    saved: list  # (field or Global, its value before the launch)


@dataclass
class _HostWrite:
    target: object  # a Field or a Global
    saved: object  # its value before (None in a checkpointed segment)
    new: object  # the value assigned (to assign it again when a segment is recomputed)


@dataclass
class _Segment:
    """`checkpoint_every` launches (and the assignments among them): the values its writes
    overwrite, as they were at its start."""
    events: list
    start: dict  # id(target) -> (target, value at the segment's start)
    launches: int = 0


class Tape(_launch.Recorder):
    """Records a program for `backward` (see the module's docstring). With `checkpoint_every`
    = K, the tape keeps, for each segment of K launches, only the values at the segment's start
    of what the segment overwrites; `backward` recomputes each segment forward (keeping, for
    that segment only, what each launch overwrites) before reversing it: memory in proportion
    to the segments, not the launches, for one more forward run, with the same gradients bit
    for bit."""

    def __init__(self, checkpoint_every: int | None = None):
        if checkpoint_every is not None and (type(checkpoint_every) is not int or
                                             checkpoint_every < 1):
            raise GradientError(f"checkpoint_every must be a positive int (launches per "
                                f"segment) or None, not {checkpoint_every!r}")
        self.checkpoint_every = checkpoint_every
        self.events: list = []
        self.segments: list = []

    # -- recording ----------------------------------------------------------------------------
    @staticmethod
    def recording() -> bool:
        """Whether a tape records now (code with an `AdjointStep` of its own asks)."""
        return any(isinstance(r, Tape) for r in _launch.recorders)

    label = "an rs.Tape records"

    def __enter__(self) -> Tape:
        for r in _launch.recorders:
            if not isinstance(r, Tape):
                hint = ": record the replays instead (a tape records each `step()` it sees)" \
                    if hasattr(r, "step") else ""
                raise GradientError(f"an rs.Tape cannot start while {r.label}{hint}")
        self.events = []  # a tape records afresh each time (its adjoint kernels stay compiled)
        self.segments = []
        _launch.recorders.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _launch.recorders.remove(self)

    def before_launch(self, kernel, relation, subset, config) -> None:
        """Recorder hook (relsim calls it, a program does not): records the launch about to
        run, with the values it will overwrite."""
        if isinstance(kernel, GivenKernel) and not getattr(kernel, "recordable", False):
            return  # (the tape's own adjoint and finding kernels; tangent kernels are recorded)
        cfg = config if config is not None else _config.current()
        base = relation if subset is None else subset.relation
        a = analysis_of(kernel, base, cfg)
        if a.inserts or a.deletes:
            stmt = next(s for s in ir.walk_stmts(a.body) if isinstance(s, (ir.Insert,
                                                                             ir.Delete)))
            raise GradientError("cannot record rs.insert or rs.delete on a tape (rows that "
                                "come and go are not differentiated)", stmt.loc, kernel.name)
        if self.checkpoint_every is None:
            saved = [(t, _value_of(t)) for t in _written(a)]
        else:
            seg = self._segment(launch=True)
            for t in _written(a):
                seg.start.setdefault(id(t), (t, _value_of(t)))
            saved = []
        self.events.append(_Launch(kernel, base, subset, cfg, a, saved))

    def before_step(self, step) -> None:
        """Recorder hook: records an `AdjointStep` about to run (`rs.record_step`)."""
        if self.checkpoint_every is None:
            saved = [(t, _value_of(t)) for t in step.writes]
        else:
            seg = self._segment(launch=True)
            for t in step.writes:
                seg.start.setdefault(id(t), (t, _value_of(t)))
            saved = []
        self.events.append(_Step(step, saved))

    def before_host_write(self, target, value) -> None:
        """Recorder hook: records a host assignment (a `load`, a Global's ``value``) with the
        value it overwrites."""
        new = value.copy() if isinstance(value, np.ndarray) else value
        if self.checkpoint_every is None:
            self.events.append(_HostWrite(target, _value_of(target), new))
            return
        self._segment(launch=False).start.setdefault(id(target), (target, _value_of(target)))
        self.events.append(_HostWrite(target, None, new))

    def _segment(self, launch: bool) -> _Segment:
        """The segment the next event belongs to (a launch past `checkpoint_every` opens a
        new one)."""
        if not self.segments or launch and \
                self.segments[-1].launches == self.checkpoint_every:
            self.segments.append(_Segment([], {}))
        seg = self.segments[-1]
        seg.launches += launch
        seg.events.append(len(self.events))
        return seg

    # -- the reverse pass ---------------------------------------------------------------------
    def backward(self, loss) -> None:
        """Derivatives of the float Global `loss` (written while recording) with respect to
        every float field and Global the recorded program read, at the tape's start:
        ``F.grad``, ``g.grad``. Or of ``sum(seed * value)`` over the final values of the
        fields and Globals of a dict ``{target: seed}`` (a seed shaped like the field's values,
        or the Global's): the vector-Jacobian product with those seeds."""
        launches = [e for e in self.events if isinstance(e, _Launch)]
        seeds = self._seeds(loss, launches)
        if self in _launch.recorders:
            raise GradientError("tape.backward inside `with tape:`; call it after the block")
        fields, globals_ = self._touched(launches)
        fields |= {t for t, _ in seeds if isinstance(t, Field)}
        fields |= {t for e in self.events if isinstance(e, _Step)
                   for t in e.step.reads + e.step.writes}
        for t in fields | globals_ | {e.target for e in self.events
                                      if isinstance(e, _HostWrite)}:
            t.no_gradient = None  # (what the last backward said; this one says it anew)
        for f in fields:  # adjoint fields: made once (a schema change), zeroed each time
            if not f.relation.has_field(f.grad_name):
                f.relation.new_field(f.grad_name, f.type)
            else:
                f.grad.load(0.0)
        for g in globals_ | {t for t, _ in seeds if isinstance(t, Global)}:
            _adjoint(g).value = 0.0
        for e in launches:
            prepare_picks(e.relation, e.analysed)
        for e in launches:  # grouping loops transposed: their accumulators' adjoints per row
            adj = self._adjoint_kernel(e)
            if adj.kept and e.subset is not None:
                t = adj.transpositions[0]
                raise GradientError(f"cannot differentiate a grouping loop that reads its rows' "
                                    f"float fields in a launch over subset {e.subset.name!r} "
                                    f"(transposed over the whole relation only)", t.loop.loc,
                                    e.kernel.name)
            for name, t in adj.kept:
                if not e.relation.has_field(name):
                    e.relation.new_field(name, t)
        blind = self._blind_spots()
        final = [(t, _value_of(t)) for t in _all_written(self.events)]
        for t, seed in seeds:
            if isinstance(t, Field):
                t.grad.load(seed)
            else:
                _adjoint(t).value = seed
        if self.checkpoint_every is None:
            self._reverse(self.events)
        else:
            for seg in reversed(self.segments):
                for t, v in seg.start.values():
                    _restore(t, v)
                self._reverse(self._recompute([self.events[i] for i in seg.events]))
        for t, v in final:
            _restore(t, v)
        for t, why in blind.values():  # (after the reverse pass, which reads .grad itself)
            t.no_gradient = why

    def _blind_spots(self) -> dict:
        """Warn of the float targets whose gradient this tape cannot give (`blind_spots`);
        those `backward` then marks, so that their ``.grad`` says why instead of answering 0
        or nothing."""
        events = [("host", e.target) if isinstance(e, _HostWrite) else
                  ("launch", e.step.name, _step_accesses(e.step)) if isinstance(e, _Step) else
                  ("launch", e.kernel.name, e.analysed.summary.accesses) for e in self.events]
        found = blind_spots.reasons(events)
        w = blind_spots.warning(found, events)
        if w is not None:
            warnings.warn(w, stacklevel=3)
        return found

    @staticmethod
    def _seeds(loss, launches) -> list:
        """[(target, seed)] for `backward`'s argument: a loss Global (seed 1), or a dict of
        float fields and Globals and their seeds, checked."""
        if isinstance(loss, dict):
            seeds = []
            for t, seed in loss.items():
                if not isinstance(t, (Field, Global)) or not is_diff(t.type):
                    raise GradientError(f"tape.backward's seeds are for float fields and "
                                        f"Globals (f64 scalars, vectors, matrices), not {t!r}")
                shape = (t.relation.size,) + t.type.shape if isinstance(t, Field) else \
                    t.type.shape
                value = np.asarray(seed, dtype=np.float64)
                if value.shape != shape and not (isinstance(t, Field) and value.ndim == 0):
                    raise GradientError(f"the seed for {t!r} has shape {value.shape}; its "
                                        f"values have shape {shape}")
                seeds.append((t, value if value.shape or isinstance(t, Field) else
                              float(value)))
            if not seeds:
                raise GradientError("tape.backward was given no seeds")
            return seeds
        if not isinstance(loss, Global) or loss.type != f64:
            raise GradientError(f"tape.backward takes a float64 scalar Global (the loss), or "
                                f"a dict of float fields and Globals to their seeds, not "
                                f"{loss!r}")
        if not any(loss in _written(e.analysed) for e in launches):
            label = f"the loss Global {loss.name!r}" if loss.name else "the loss Global"
            raise GradientError(f"{label} was not reduced into by any launch the tape "
                                f"recorded: record the launches that compute it inside "
                                f"`with tape:`")
        return [(loss, 1.0)]

    @staticmethod
    def _recompute(events) -> list:
        """Run a segment's events forward again from its start, keeping what each overwrites
        (as an unsegmented tape does); the events with those values."""
        again = []
        for e in events:
            if isinstance(e, _Step):
                again.append(_Step(e.step, [(t, _value_of(t)) for t in e.step.writes]))
                e.step.run()
                continue
            if isinstance(e, _HostWrite):
                again.append(_HostWrite(e.target, _value_of(e.target), e.new))
                _restore(e.target, e.new)
                continue
            saved = [(t, _value_of(t)) for t in _written(e.analysed)]
            again.append(_Launch(e.kernel, e.relation, e.subset, e.config, e.analysed, saved))
            (e.relation if e.subset is None else e.subset).foreach(e.kernel, e.config)
        return again

    def _reverse(self, events) -> None:
        """Each event's adjoint, last first, each launch's inputs put back first."""
        for e in reversed(events):
            if isinstance(e, _Step):
                for t, v in e.saved:
                    _restore(t, v)
                e.step.reverse()
                continue
            if isinstance(e, _HostWrite):
                _restore(e.target, e.saved)
                if isinstance(e.target, Field) and e.target.relation.has_field(
                        e.target.grad_name):
                    e.target.grad.load(0.0)
                elif isinstance(e.target, Global) and getattr(e.target, "_adjoint", None):
                    e.target._adjoint.value = 0.0
                continue
            for t, v in e.saved:
                _restore(t, v)
            adj = self._adjoint_kernel(e)
            space = e.relation if e.subset is None else e.subset
            chose = _find_chosen_rows(adj, space, e.config)
            space.foreach(adj, e.config)
            for k, over in adj.transposed():  # what loops read from other rows, back to them
                over.foreach(k, e.config)
            for g in chose:  # a row won: the Global's value before the launch did not matter
                g._adjoint.value = 0.0
            for f in adj.field_picks:  # likewise for each row of a field a contribution won
                won = f.relation.field(f.name + PICK).numpy(copy=True) != NONE
                if won.any():
                    grad = f.grad.numpy(copy=True)
                    grad[won] = 0.0
                    f.grad.load(grad)

    def held_bytes(self) -> int:
        """Bytes of the values the tape keeps for `backward` (what recorded launches and
        assignments overwrote)."""
        values = [v for seg in self.segments for _, v in seg.start.values()]
        for e in self.events:
            values += [v for _, v in e.saved] if isinstance(e, (_Launch, _Step)) else \
                [e.saved, e.new]
        return sum(np.asarray(v.value if isinstance(v, _GlobalValue) else v).nbytes
                   for v in values if v is not None)

    def zero(self) -> None:
        """Set every adjoint of the recorded program to zero."""
        fields, globals_ = self._touched([e for e in self.events if isinstance(e, _Launch)])
        fields |= {t for e in self.events if isinstance(e, _Step)
                   for t in e.step.reads + e.step.writes}
        for f in fields:
            if f.relation.has_field(f.grad_name):  # (not .grad: it may say why there is none)
                f.relation.field(f.grad_name).load(0.0)
        for g in globals_:
            if getattr(g, "_adjoint", None) is not None:
                g._adjoint.value = 0.0

    def _touched(self, launches):
        fields, globals_ = set(), set()
        for e in launches:
            gen = Adjoint(e.analysed, _adjoint)
            fields |= gen.adjoint_fields()
            globals_ |= gen.globals_used()
        return fields, globals_

    def _adjoint_kernel(self, e):
        cache = e.kernel.__dict__.setdefault("_adjoints", {})
        key = (id(e.relation), id(e.analysed))
        k = cache.get(key)
        if k is None:
            k = cache[key] = AdjointKernel(e.kernel, e.analysed, _adjoint, _pick_globals)
        return k


def analysis_of(kernel, relation, cfg):
    """The kernel's analysis over `relation` as it is now, kept with the kernel (as its adjoint
    and tangent kernels are: tapes recorded again, and rs.Tangents, reuse them)."""
    key = (id(relation), relation.schema_version)
    kept = kernel.__dict__.setdefault("_tape_analysed", {})
    a = kept.get(key)
    if a is None:
        a = kept[key] = analyse(kernel, relation, cfg.cache_path())
    return a


def _adjoint(g):
    """Global g's adjoint Global (made on first use)."""
    a = getattr(g, "_adjoint", None)
    if a is None:
        a = g._adjoint = Global(g.type, 0.0, name=f"{g.name or 'global'}__grad")
    return a


def _pick_globals(g):
    """(the Global an arg reduction finds the chosen row into, the Global holding that row
    for the adjoint) of Global `g` (made on first use)."""
    p = getattr(g, "_picks", None)
    if p is None:
        p = g._picks = (Global(f64, 0.0, name=f"{g.name or 'global'}__found"),
                        Global(i64, -1, name=f"{g.name or 'global'}__row"))
    return p


def prepare_picks(relation, analysed) -> None:
    """The fields the finding kernels of a launch's min/max reductions need: each row's number
    on `relation` (for the rows min/max reductions chose), and per float field reduced by min or
    max its best and chosen contribution per row."""
    if picks_rows(analysed) and not relation.has_field(ROW_FIELD):
        relation.new_field(ROW_FIELD, i64).load(np.arange(relation.size))
    for f in picked_fields(analysed):
        for suffix, t in ((BEST, f64), (PICK, i64)):
            if not f.relation.has_field(f.name + suffix):
                f.relation.new_field(f.name + suffix, t)


def picks_rows(a) -> bool:
    """Whether launch `a` reduces into a float Global with min, max, argmin or argmax, or into
    a float field with min or max."""
    return any(isinstance(x.target, Global) and x.op in ("min", "max", "argmin", "argmax")
               and x.target.type == f64 for x in a.summary.accesses) or \
        bool(picked_fields(a))


def _find_chosen_rows(adj, space, config) -> list:
    """Before `adj` runs: find, with its finding kernel, the row each min/max/arg reduction
    of the forward launch chose (from the Global's value before the launch: the value wins
    ties and takes no row); set each Global's chosen row (-1: none). The Globals a row won."""
    if adj.finder is None:
        return []
    for f, op in adj.field_picks.items():
        f.relation.field(f.name + BEST).load(math.inf if op == "min" else -math.inf)
        f.relation.field(f.name + PICK).load(NONE)
    starts = {}
    for g, op in adj.picks.items():
        found, _ = _pick_globals(g)
        starts[g] = g.value
        found.value = math.inf if op in ("min", "argmin") else -math.inf
    space.foreach(adj.finder, config)
    if adj.finder2 is not None:
        space.foreach(adj.finder2, config)
    won = []
    for g, op in adj.picks.items():
        found, chosen = _pick_globals(g)
        value, start = found.value, starts[g]
        better = value < start if op in ("min", "argmin") else value > start
        if better or math.isnan(value) and not math.isnan(start):
            chosen.value = found.row
            won.append(g)
        else:
            chosen.value = -1
    return won


def _written(a) -> list:
    """The value fields and Globals launch `a` stores or reduces into (its access summary)."""
    return list({id(x.target): x.target for x in a.summary.accesses
                 if x.mode != "read" and not getattr(x.target, "is_key", False)}.values())


def _all_written(events) -> list:
    out = {}
    for e in events:
        for t in (_written(e.analysed) if isinstance(e, _Launch) else
                  e.step.writes if isinstance(e, _Step) else [e.target]):
            out[id(t)] = t
    return list(out.values())


@dataclass
class _GlobalValue:  # a Global's value, and the row an arg reduction left with it
    value: object
    row: int


def _value_of(t):
    if isinstance(t, Field):
        return t.numpy(copy=True)
    v = t.value
    return _GlobalValue(v.copy() if isinstance(v, np.ndarray) else v, t.row)


def _restore(t, v) -> None:
    if isinstance(t, Field):
        t.load(v)
    elif isinstance(v, _GlobalValue):
        t.value = v.value
        t.row_data[0] = v.row  # (assigning the value forgets the row)
    else:  # a value the host assigned
        t.value = v
