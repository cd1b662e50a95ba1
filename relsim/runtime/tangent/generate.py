"""The tangent of a kernel (forward mode): from its typed IR, the untyped IR of a kernel over the
same rows that computes what the kernel computes *and* its directional derivative, in one pass.

Each statement is kept and, before it, its tangent statement is emitted (before: the tangent of
``x = f(x)`` reads the old x):

* a float local ``x = e`` gets ``x__dot = de`` (0 where no tangent reaches e);
* a store into a float field ``key.F = e`` gets ``key.F__dot = de`` (F's tangent field, on F's
  relation), a reduction ``key.F += e`` gets ``key.F__dot += de``, a reduction into a float
  Global ``g += e`` one into g's tangent Global;
* ``if``, loops (``range``, key vectors, groupings, ``while``), ``break``, ``continue`` and an
  early ``return`` keep their shape, with the tangent statements inside: forward mode follows
  the branch and the iterations the forward kernel takes, so loops carrying state and early
  exits need nothing more.

A min or max reduction into a float (and argmin/argmax into a float Global) passes on the
tangent of the contribution the fold chose: the reverse mode's finding kernels run first and
mark the chosen contribution per target row (``<field>__pick``, its place in the fold order, as
the adjoint does) or the row per Global (`rs.Tape`'s chosen-row Globals); the chosen one adds
its tangent into a selection (``<field>__dsel``, a selection Global), which `rs.Tangents` makes
the target's tangent where a contribution won (elsewhere the value before the launch won, and
its tangent stays).

A float field or Global carries a tangent where `active` says so (the seeds of an `rs.Tangents`
and what the launches before this one wrote); a field this kernel writes carries one too (its
tangent field holds the tangent of its values before the launch: 0 where none was seeded). The
tangent kernel is an ordinary kernel: the same phase rules, every target, the same bits on any
thread count; its tangent reductions are relsim's deterministic reductions.

Refused with a `GradientError` at the kernel's line: what the reverse mode refuses too (float
types other than f64 carrying a tangent, min/max and product reductions into floats that carry
one, rs.insert and rs.delete, the matrix decompositions).
"""
from __future__ import annotations

from ...relations.field import Field
from ...relations.globals import Global
from .. import ir
from ..adjoint.field_picks import PICK
from ..adjoint.records import ROW_FIELD, is_diff
from .expressions import Expressions, refusal, tangent_name, zero

SELECTED = "__dsel"  # a min/max-reduced field's selected tangent: <name>__dsel
PICKS = ("min", "max", "argmin", "argmax")


class Tangent(Expressions):
    """The tangent kernel's body of `analysed` (`body()`). `active(target)`: whether float field
    or Global `target` carries a tangent into this launch; `tangent_global(g)`: g's tangent
    Global; `pick_globals(g)`: (the Global holding the row g's min/max reduction chose, g's
    selection Global)."""

    def __init__(self, analysed, active, tangent_global, pick_globals=None):
        self.a = analysed
        self._active = active
        self._tangent_global = tangent_global
        self._pick_globals = pick_globals
        # min/max-reduced float fields: how many such sites each has, and how many are seen
        self.sites: dict = {}
        for st in ir.walk_stmts(analysed.body):
            if isinstance(st, ir.FieldReduce) and st.op in ("min", "max") and \
                    is_diff(st.field.type):
                self.sites[id(st.field)] = self.sites.get(id(st.field), 0) + 1
        self.seen: dict = {}
        self.depth = 0  # loops around the statement being made
        written = {}
        for x in analysed.summary.accesses:
            if x.mode != "read" and isinstance(x.target, (Field, Global)) and \
                    not getattr(x.target, "is_key", False) and is_diff(x.target.type):
                written[id(x.target)] = x.target
        self.written = tuple(written.values())
        self._writes = set(written)
        # loop variables over the components of a vector: no tangent (`s_ForEach`)
        self._plain = {s.var for s in ir.walk_stmts(analysed.body) if isinstance(s, ir.ForEach)}

    # -- what carries a tangent -----------------------------------------------------------
    def carries(self, target) -> bool:
        return is_diff(target.type) and (id(target) in self._writes or self._active(target))

    def field_tangent(self, field):
        return tangent_name(field.name) if self.carries(field) else None

    def global_tangent(self, g):
        return self._tangent_global(g) if self.carries(g) else None

    def local_tangent(self, name):
        t = self.a.locals.get(name)
        return tangent_name(name) if t is not None and is_diff(t) and \
            name not in self._plain else None

    def refuse(self, what, loc):
        return refusal(self.a.kernel_name, what, loc)

    # -- statements -----------------------------------------------------------------------
    def body(self) -> tuple:
        return tuple(self.block(self.a.body))

    def block(self, stmts) -> list:
        out = []
        for s in stmts:
            m = getattr(self, "s_" + type(s).__name__, None)
            if m is None:
                raise self.refuse(f"this statement ({type(s).__name__})", s.loc)
            made = m(s)
            pending = self.__dict__.get("pending")
            if pending:  # (helper locals the statement's tangent uses: `Expressions.helper`)
                out.extend(pending)
                pending.clear()
            out.extend(made)
        return out or [ir.Pass(stmts[0].loc if stmts else None)]

    def s_Pass(self, s):
        return [s]

    s_Break = s_Continue = s_Return = s_Pass

    def s_Print(self, s):
        return [ir.Print(s.loc, tuple(x if isinstance(x, str) else self.primal(x)
                                      for x in s.items))]

    def s_Assign(self, s):
        primal = ir.Assign(s.loc, s.name, self.primal(s.value))
        name = self.local_tangent(s.name)
        if name is None:
            self.tangent(s.value)  # (refuses a non-f64 float a tangent reaches)
            return [primal]
        d = self.tangent(s.value)
        t = self.a.locals[s.name]
        if isinstance(d, ir.Local) and d.name == name:  # (z += a constant: dz unchanged; the
            return [primal]  # tape takes a loop's z__dot = z__dot as state, not accumulation)
        return [ir.Assign(s.loc, name, d if d is not None else zero(t, s.loc)), primal]

    def s_AssignIndex(self, s):
        index = tuple(self.primal(i) for i in s.index)
        primal = ir.AssignIndex(s.loc, s.name, index, self.primal(s.value))
        name = self.local_tangent(s.name)
        if name is None:
            return [primal]
        d = self.tangent(s.value)
        return [ir.AssignIndex(s.loc, name, index,
                               d if d is not None else zero(s.value.type, s.loc)), primal]

    def _target(self, key, name, index, loc):
        attr = ir.Attr(loc, self.primal(key), name)
        return ir.Index(loc, attr, tuple(self.primal(i) for i in index)) if index else attr

    def s_FieldStore(self, s):
        primal = ir.Store(s.loc, self._target(s.key, s.field.name, s.index, s.loc),
                          self.primal(s.value))
        d = self.tangent(s.value)
        if not is_diff(s.field.type):
            return [primal]
        value_type = s.value.type
        tgt = self._target(s.key, tangent_name(s.field.name), s.index, s.loc)
        return [ir.Store(s.loc, tgt, d if d is not None else zero(value_type, s.loc)), primal]

    def s_FieldReduce(self, s):
        primal = ir.Reduce(s.loc, self._target(s.key, s.field.name, s.index, s.loc), s.op,
                           self.primal(s.value))
        d = self.tangent(s.value)
        if not is_diff(s.field.type):
            return [primal]
        if s.op in ("min", "max") and s.field.type.shape == ():
            return self._picked_field(s, d) + [primal]
        if s.op != "+":
            if d is None and not self._active(s.field):
                return [primal]
            raise self.refuse(f"a {s.op!r} reduction into float field {s.field.qualname} "
                              f"(forward mode differentiates '+', min and max reductions into "
                              f"floats)", s.loc)
        if d is None:
            return [primal]
        return [ir.Reduce(s.loc, self._target(s.key, tangent_name(s.field.name), s.index,
                                              s.loc), "+", d), primal]

    def s_GlobalReduce(self, s):
        primal = ir.Reduce(s.loc, ir.GlobalRead(s.loc, s.ref), s.op, self.primal(s.value))
        d = self.tangent(s.value)
        if not is_diff(s.ref.type):
            return [primal]
        if s.op in PICKS:
            return self._picked_global(s, d) + [primal]
        if s.op != "+":
            if d is None and not self._active(s.ref):
                return [primal]
            raise self.refuse(f"a {s.op!r} reduction into a float Global (forward mode "
                              f"differentiates '+', min and max reductions into floats)", s.loc)
        if d is None:
            return [primal]
        return [ir.Reduce(s.loc, ir.GlobalRead(s.loc, self._tangent_global(s.ref)), "+", d),
                primal]

    def _row(self, loc):
        return ir.Attr(loc, ir.Centred(loc, self.a.param), ROW_FIELD)

    def _picked_field(self, s, d) -> list:
        """The tangent of ``key.f = min(key.f, x)`` (max): if this contribution is the one the
        fold chose (its ordinal, `adjoint/field_picks.py`'s numbering, is the pick), its
        tangent goes to f's selection."""
        loc, f = s.loc, s.field
        self._not_in_loop(s)
        site = self.seen.get(id(f), 0)
        self.seen[id(f)] = site + 1
        if d is None:
            return []  # (a constant contribution: the selection's 0 stands)
        ordinal = ir.BinOp(loc, "+", ir.BinOp(loc, "*", self._row(loc),
                                              ir.Const(loc, self.sites[id(f)])),
                           ir.Const(loc, site))
        mine = ir.Compare(loc, "==", ordinal, self._target(s.key, f.name + PICK, (), loc))
        select = ir.Reduce(loc, self._target(s.key, f.name + SELECTED, s.index, loc), "+", d)
        return [ir.If(loc, mine, (select,), ())]

    def _picked_global(self, s, d) -> list:
        """The tangent of a min/max/arg reduction into float Global g: the chosen row's
        contribution's tangent goes to g's selection Global."""
        self._not_in_loop(s)
        if d is None:
            return []
        loc = s.loc
        chosen, selection = self._pick_globals(s.ref)
        mine = ir.Compare(loc, "==", self._row(loc), ir.GlobalRead(loc, chosen))
        return [ir.If(loc, mine, (ir.Reduce(loc, ir.GlobalRead(loc, selection), "+", d),), ())]

    def _not_in_loop(self, s) -> None:
        if self.depth:
            raise self.refuse(f"a {s.op!r} reduction into a float inside a loop (the chosen "
                              f"contribution is told by its row and place, as the reverse mode "
                              f"does: one per row)", s.loc)

    def loop_body(self, body) -> tuple:
        self.depth += 1
        try:
            return tuple(self.block(body))
        finally:
            self.depth -= 1

    def s_If(self, s):
        return [ir.If(s.loc, self.primal(s.test), tuple(self.block(s.body)),
                      tuple(self.block(s.orelse)) if s.orelse else ())]

    def s_While(self, s):
        return [ir.While(s.loc, self.primal(s.test), self.loop_body(s.body))]

    def s_ForRange(self, s):
        return [ir.ForRange(s.loc, s.var, self.primal(s.start), self.primal(s.stop),
                            self.primal(s.step), self.loop_body(s.body))]

    def s_ForEach(self, s):
        if is_diff(getattr(s.seq.type, "elem", None)) and self.tangent(s.seq) is not None:
            raise self.refuse("a loop over the components of a float vector a tangent reaches "
                              "(loop over range(n) and index it)", s.loc)
        return [ir.ForEach(s.loc, s.var, self.primal(s.seq), self.loop_body(s.body))]

    def s_ForGroup(self, s):
        return [ir.ForEach(s.loc, s.var, self.primal(s.group), self.loop_body(s.body))]

    def s_Insert(self, s):
        raise self.refuse("rs.insert (rows that come and go are not differentiated)", s.loc)

    s_Delete = s_Insert
