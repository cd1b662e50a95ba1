"""The finding kernels of a tangent launch with min/max reductions into floats: which
contribution each fold will choose, found on the values before the launch (`rs.Tangents` runs
them first, as `rs.Tape` runs the reverse mode's).

Each is the kernel's row replayed without changing anything: a field the row stores at its own
key is followed in a local from its value before the launch (its *shadow*: the row's later reads
see what it stored, as they would), other reductions are dropped, and per min/max reduction:

1. into a float field, ``key.<f>__best = min(key.<f>__best, x)`` (max): the best contribution
   per target row; into a float Global, an arg reduction into its finding Global (the row);
2. (fields, a second kernel) where ``x`` is that best (or both are NaN) and the best beats
   ``key.<f>`` (the value before the launch), ``key.<f>__pick = min(key.<f>__pick,
   ordinal)``: the contribution's place in the fold order, ``row * sites + site`` (the reverse
   mode's numbering, `adjoint/field_picks.py`), the first of the best, as the fold keeps it.
"""
from __future__ import annotations

from .. import ir
from ..adjoint.field_picks import BEST, PICK
from ..adjoint.records import ROW_FIELD, is_diff
from .expressions import Expressions, refusal

ARG = {"min": "argmin", "max": "argmax", "argmin": "argmin", "argmax": "argmax"}


class Finder(Expressions):
    """The finding kernels' bodies of `analysed` (`stage(1)`, `stage(2)`); `found_global(g)`:
    the Global an arg reduction finds g's chosen row into."""

    def __init__(self, analysed, found_global):
        self.a = analysed
        self._found = found_global
        self.shadowed = {id(s.field): s.field for s in ir.walk_stmts(analysed.body)
                         if isinstance(s, ir.FieldStore)}
        self.sites: dict = {}
        for s in ir.walk_stmts(analysed.body):
            if isinstance(s, ir.FieldReduce) and s.op in ("min", "max") and \
                    is_diff(s.field.type):
                self.sites[id(s.field)] = self.sites.get(id(s.field), 0) + 1
        self.picks = {}  # Global -> op, fields -> op (what `_find_chosen_rows` reads)
        self.field_picks = {}

    def refuse(self, what, loc):
        return refusal(self.a.kernel_name, what, loc)

    def field_tangent(self, field):
        return None

    def global_tangent(self, g):
        return None

    def local_tangent(self, name):
        return None

    def _shadow(self, field) -> str:
        return f"_shadow_{field.name}"

    def p_FieldRead(self, e):
        if isinstance(e.key, ir.Centred) and id(e.field) in self.shadowed:
            return ir.Local(e.loc, self._shadow(e.field))
        return super().p_FieldRead(e)

    # -- the bodies ---------------------------------------------------------------------------
    def stage(self, which: int) -> tuple:
        self.which, self.seen = which, {}
        loc = self.a.body[0].loc if self.a.body else None
        top = [ir.Assign(loc, self._shadow(f), ir.Attr(loc, ir.Centred(loc, self.a.param),
                                                       f.name))
               for f in self.shadowed.values()]
        return tuple(top + self.block(self.a.body))

    def block(self, stmts) -> list:
        out = []
        for s in stmts:
            m = getattr(self, "f_" + type(s).__name__, None)
            if m is None:
                raise self.refuse(f"this statement ({type(s).__name__})", s.loc)
            out.extend(m(s))
        return out or [ir.Pass(stmts[0].loc if stmts else None)]

    def f_Pass(self, s):
        return [s]

    f_Break = f_Continue = f_Return = f_Pass

    def f_Print(self, s):
        return []

    def f_Assign(self, s):
        return [ir.Assign(s.loc, s.name, self.primal(s.value))]

    def f_AssignIndex(self, s):
        return [ir.AssignIndex(s.loc, s.name, tuple(self.primal(i) for i in s.index),
                               self.primal(s.value))]

    def f_FieldStore(self, s):
        if not isinstance(s.key, ir.Centred):
            raise self.refuse(f"a store into {s.field.qualname} through another key", s.loc)
        name, value = self._shadow(s.field), self.primal(s.value)
        if s.index:
            return [ir.AssignIndex(s.loc, name, tuple(self.primal(i) for i in s.index), value)]
        return [ir.Assign(s.loc, name, value)]

    def f_FieldReduce(self, s):
        if not (s.op in ("min", "max") and is_diff(s.field.type)):
            return []
        f, loc = s.field, s.loc
        site = self.seen.get(id(f), 0)
        self.seen[id(f)] = site + 1
        self.field_picks[f] = s.op
        key = self.primal(s.key)
        value = self.primal(s.value)
        best = ir.Attr(loc, key, f.name + BEST)
        if self.which == 1:
            return [ir.Reduce(loc, best, s.op, value)]
        row = ir.Attr(loc, ir.Centred(loc, self.a.param), ROW_FIELD)
        ordinal = ir.BinOp(loc, "+", ir.BinOp(loc, "*", row, ir.Const(loc, self.sites[id(f)])),
                           ir.Const(loc, site))
        now = ir.Attr(loc, key, f.name)
        beats = ir.Compare(loc, "<" if s.op == "min" else ">", best, now)
        nan = ir.BoolOp(loc, "and", (_isnan(loc, best), ir.UnaryOp(loc, "not",
                                                                    _isnan(loc, now))))
        equal = ir.BoolOp(loc, "or", (ir.Compare(loc, "==", value, best), ir.BoolOp(
            loc, "and", (_isnan(loc, value), _isnan(loc, best)))))
        return [ir.If(loc, ir.BoolOp(loc, "and", (equal, ir.BoolOp(loc, "or", (beats, nan)))),
                      (ir.Reduce(loc, ir.Attr(loc, key, f.name + PICK), "min", ordinal),), ())]

    def f_GlobalReduce(self, s):
        if not (s.op in ARG and is_diff(s.ref.type)):
            return []
        self.picks[s.ref] = s.op
        if self.which != 1:
            return []
        return [ir.Reduce(s.loc, ir.GlobalRead(s.loc, self._found(s.ref)), ARG[s.op],
                          self.primal(s.value))]

    def f_If(self, s):
        return [ir.If(s.loc, self.primal(s.test), tuple(self.block(s.body)),
                      tuple(self.block(s.orelse)) if s.orelse else ())]

    def f_While(self, s):
        return [ir.While(s.loc, self.primal(s.test), tuple(self.block(s.body)))]

    def f_ForRange(self, s):
        return [ir.ForRange(s.loc, s.var, self.primal(s.start), self.primal(s.stop),
                            self.primal(s.step), tuple(self.block(s.body)))]

    def f_ForEach(self, s):
        return [ir.ForEach(s.loc, s.var, self.primal(s.seq), tuple(self.block(s.body)))]

    def f_ForGroup(self, s):
        return [ir.ForEach(s.loc, s.var, self.primal(s.group), tuple(self.block(s.body)))]


def _isnan(loc, e):
    return ir.Call(loc, "isnan", (e,))
