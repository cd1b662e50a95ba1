"""min/max reductions into float fields through keys in the adjoint pass (`generate.Adjoint`):
the derivative goes to the contribution the forward fold chose for each target row, or, when
none beat the row's value before the launch, to that value (it passes through).

The forward folds a target row's contributions in slot order (ascending source row, then the
sites in program order), keeping the current value unless a contribution is strictly better (a
NaN beats a number). Two finding kernels, run by the tape before the adjoint (`finders`), each
the replay of the row plus, per such reduction:

1. ``key.<f>__best = min(key.<f>__best, x)`` (max): the best contribution per target row;
2. where ``x`` is that best (or both are NaN) and the best beats ``key.<f>`` (the value before
   the launch), ``key.<f>__pick = min(key.<f>__pick, ordinal)``, the contribution's place in
   the fold order (``row * sites + site``): the first of the best, as the fold kept it.

The adjoint then sends ``key.<f>__grad`` to the contribution whose ordinal is the pick; the
tape clears the adjoint of each row a contribution won (`won`), since its value before the
launch did not matter.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from .records import ROW_FIELD, grad_name

NONE = 2 ** 63 - 1  # <f>__pick of a row no contribution won
BEST, PICK = "__best", "__pick"


@dataclass
class FieldPick:  # `key.f = min(key.f, atom)` (max): the chosen contribution gets f's adjoint
    key: object
    field: object
    atom: tuple
    ordinal: object  # untyped IR: the contribution's place in the fold order
    loc: object


class FieldPicks:
    """A mixin of `Adjoint`: `pick_field` (in `s_FieldReduce`) and `field_pick_adjoint`."""

    def pick_field(self, s, env, out) -> None:
        f, loc = s.field, s.loc
        if self.loops:
            raise self.refuse(f"a '{s.op}' reduction into float field {f.qualname} inside a "
                              f"loop (not differentiated yet)", loc)
        if f in self.shadowed:
            raise self.refuse(f"a '{s.op}' reduction into float field {f.qualname}, which the "
                              f"kernel also reads at the row's own key (not differentiated "
                              f"yet)", loc)
        sites = self.field_sites.setdefault(f, [])
        if sites and sites[0] != s.op:
            raise self.refuse(f"both 'min' and 'max' reductions into field {f.qualname} in "
                              f"one kernel (not differentiated yet)", loc)
        sites.append(s.op)
        atom = self.flatten(s.value, env, out)
        key = self.rewrite(s.key, env)
        value = self.node(atom)
        best = ir.Attr(loc, key, f.name + BEST)
        first = ir.Reduce(loc, best, s.op, value)
        total = sum(1 for st in ir.walk_stmts(self.a.body) if isinstance(st, ir.FieldReduce)
                    and st.field is f and st.op in ("min", "max"))
        row = ir.Attr(loc, self.centred(loc), ROW_FIELD)
        ordinal = ir.BinOp(loc, "+", ir.BinOp(loc, "*", row, ir.Const(loc, total)),
                           ir.Const(loc, len(sites) - 1))
        beats = ir.Compare(loc, "<" if s.op == "min" else ">", best, ir.Attr(loc, key, f.name))
        nan = ir.BoolOp(loc, "and", (_isnan(loc, best), ir.UnaryOp(
            loc, "not", _isnan(loc, ir.Attr(loc, key, f.name)))))
        equal = ir.BoolOp(loc, "or", (ir.Compare(loc, "==", value, best), ir.BoolOp(
            loc, "and", (_isnan(loc, value), _isnan(loc, best)))))
        second = ir.If(loc, ir.BoolOp(loc, "and", (equal, ir.BoolOp(loc, "or", (beats, nan)))),
                       (ir.Reduce(loc, ir.Attr(loc, key, f.name + PICK), "min", ordinal),), ())
        for stmt, stage in ((first, 1), (second, 2)):
            self.pick_stmts.add(id(stmt))  # (in the finding kernels only)
            self.field_stage[id(stmt)] = stage
            out.stmts.append(stmt)
        out.records.append(FieldPick(key, f, atom, ordinal, loc))

    def field_pick_adjoint(self, r) -> list:
        loc = r.loc
        mine = ir.Compare(loc, "==", r.ordinal, ir.Attr(loc, r.key, r.field.name + PICK))
        body = self.accumulate(r.atom, ir.Attr(loc, r.key, grad_name(r.field)), loc)
        return [ir.If(loc, mine, tuple(body), ())] if body else []

    def finder_stages(self) -> tuple:
        """The ids of the finding statements of stage 1 and of stage 2 (field picks)."""
        one = {i for i, s in self.field_stage.items() if s == 1}
        return one, set(self.field_stage) - one


def _isnan(loc, e):
    return ir.Call(loc, "isnan", (e,))


def picked_fields(analysed) -> list:
    """The float fields launch `analysed` reduces into with min or max (through keys)."""
    from ...relations.field import Field
    return list({id(a.target): a.target for a in analysed.summary.accesses
                 if isinstance(a.target, Field) and a.mode == "reduce" and
                 a.op in ("min", "max") and a.target.type.name == "f64"}.values())

