"""The reverse sweep of the adjoint pass (`generate.Adjoint`): the replay's records, last first,
each sending its adjoint back to what it read."""
from __future__ import annotations

from .. import ir
from . import derivatives
from .field_picks import FieldPick
from .records import (
    ROW_FIELD,
    Accum,
    Branch,
    Decomp,
    Def,
    Keep,
    Load,
    Loop,
    Pick,
    Sink,
    adj_name,
    grad_name,
    is_float,
    without,
)
from .state_loops import StateLoop


class Sweep:
    """A mixin of `Adjoint`: `reverse(records)`."""

    def grad_read(self, key, target, loc):
        if key is None:
            return ir.GlobalRead(loc, self.adjoint_global(target))
        return ir.Attr(loc, key, grad_name(target))

    def grad_target(self, key, target, loc):
        """What a reduction into `target`'s adjoint names: its adjoint Global, or its adjoint
        field through `key`."""
        if key is None:
            return ir.GlobalRead(loc, self.adjoint_global(target))
        return ir.Attr(loc, key, grad_name(target))

    def accumulate(self, atom, amount, loc) -> list:
        if atom[0] != "local" or not is_float(self.types.get(atom[1])):
            return []
        d = adj_name(atom[1])
        return [ir.Assign(loc, d, ir.BinOp(loc, "+", ir.Local(loc, d), amount))]

    def reverse(self, records) -> list:
        out = []
        for r in reversed(records):
            loc = r.loc
            match r:
                case Def(name=name, op=op, args=args):
                    a = ir.Local(loc, adj_name(name))
                    constant = tuple(k != "local" for k, _ in args)
                    parts = derivatives.partials(op, tuple(self.node(x) for x in args),
                                                 ir.Local(loc, name), loc, constant)
                    for atom, p in zip(args, parts):
                        if p is not None:
                            out += self.accumulate(atom, derivatives.adjoint(op, a, p, loc),
                                                   loc)
                case Load(name=tuple() as names, key=key, target=target):
                    a = self.mat_node([[("local", adj_name(c)) for c in row] for row in names],
                                      loc) if isinstance(names[0], tuple) else \
                        self.vec_node([("local", adj_name(n)) for n in names], loc)
                    out.append(ir.Reduce(loc, self.grad_target(key, target, loc), "+", a))
                case Load(name=name, key=key, target=target):
                    a = ir.Local(loc, adj_name(name))
                    if key is None:
                        out.append(ir.Reduce(loc, ir.GlobalRead(loc, self.adjoint_global(target)),
                                             "+", a))
                    else:
                        out.append(ir.Reduce(loc, ir.Attr(loc, key, grad_name(target)), "+", a))
                case Sink(key=key, target=target, atom=("vec", parts)):
                    grad = self.grad_read(key, target, loc)
                    for i, c in enumerate(parts):
                        out += self.accumulate(c, ir.Index(loc, grad, (ir.Const(loc, i),)), loc)
                case Sink(key=key, target=target, atom=atom, index=index) if index:
                    grad = ir.Index(loc, self.grad_read(key, target, loc), index)
                    out += self.accumulate(atom, grad, loc)
                case Sink(key=key, target=target, atom=atom):
                    out += self.accumulate(atom, self.grad_read(key, target, loc), loc)
                case Pick(glob=g, atom=atom):  # the row the reduction chose, if any
                    _, chosen = self.pick_global(g)
                    mine = ir.Compare(loc, "==", ir.Attr(loc, ir.Centred(loc, self.param),
                                                         ROW_FIELD),
                                      ir.GlobalRead(loc, chosen))
                    body = self.accumulate(atom, self.grad_read(None, g, loc), loc)
                    if body:
                        out.append(ir.If(loc, mine, tuple(body), ()))
                case FieldPick():
                    out += self.field_pick_adjoint(r)
                case Decomp():
                    out += self.decomposition_adjoint(r)
                case Accum(acc=acc, atom=atom, sign=sign):
                    a = ir.Local(loc, adj_name(acc))
                    out += self.accumulate(atom, a if sign > 0 else ir.UnaryOp(loc, "-", a),
                                           loc)
                case StateLoop():
                    out += self.state_loop_adjoint(r)
                case Keep(field=field, names=names, value=kept_value):
                    name = (lambda c: c) if kept_value else adj_name
                    if isinstance(names, tuple) and names and isinstance(names[0], tuple):
                        value = self.mat_node([[("local", name(c)) for c in row]
                                               for row in names], loc)
                    elif isinstance(names, tuple):
                        value = self.vec_node([("local", name(c)) for c in names], loc)
                    else:
                        value = ir.Local(loc, name(names))
                    out.append(ir.Store(loc, ir.Attr(loc, ir.Centred(loc, self.param), field),
                                        value))
                case Loop(header=header, body=body, records=recs, own=own):
                    again = [ir.Assign(loc, adj_name(n), ir.Const(loc, 0.0)) for n in own]
                    again += without(body, self.accumulations)
                    out.append(header(tuple(again + self.reverse(recs)) or (ir.Pass(loc),)))
                case Branch(cond=cond, body=body, orelse=orelse, merges=merges):
                    sides = []
                    for pick, recs in ((1, body), (2, orelse)):
                        stmts = []
                        for m in merges:
                            stmts += self.accumulate(("local", m[pick]),
                                                     ir.Local(loc, adj_name(m[0])), loc)
                        sides.append(stmts + self.reverse(recs))
                    if sides[0] or sides[1]:
                        out.append(ir.If(loc, ir.Local(loc, cond),
                                         tuple(sides[0]) or (ir.Pass(loc),), tuple(sides[1])))
        return out

