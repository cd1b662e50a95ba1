"""The typed IR back to untyped IR, with the adjoint replay's names (`generate.Adjoint`): what
the adjoint kernel computes but does not differentiate (conditions, keys, integers)."""
from __future__ import annotations

from dataclasses import dataclass

from ...types import VecType, f64
from .. import ir
from .records import is_key_vector


@dataclass
class _Typed:  # where a row of a replayed matrix is built, and its type
    loc: object
    type: object


class Untype:
    """A mixin of `Adjoint`: `rewrite(e, env)`."""

    def rewrite(self, e, env):
        """`e` (typed, no derivative taken through it) as untyped IR over the replay's locals."""
        m = getattr(self, "r_" + type(e).__name__, None)
        if m is None:
            raise self.refuse(f"this expression ({type(e).__name__})", e.loc)
        return m(e, env)

    def r_Const(self, e, env):
        return ir.Const(e.loc, e.value)

    def r_Local(self, e, env):
        name = env.version[e.name]
        return self.local(name, e.loc) if isinstance(name, str) else self.replayed(name, e)

    def local(self, name, loc):
        """Replay local `name` as an expression: the key it names, for another name of a key
        (`key_alias`: never assigned), else the local."""
        alias = self.key_alias.get(name)
        return alias if alias is not None else ir.Local(loc, name)

    def replayed(self, name, e):
        """The replay's local `name`, or a vector built from the component locals `name`."""
        if isinstance(name, tuple) and name and isinstance(name[0], tuple):  # a matrix
            rows = tuple(self.replayed(row, _Typed(e.loc, VecType(len(row), f64)))
                         for row in name)
            return ir.Cast(e.loc, ir.TupleExpr(e.loc, rows), type=e.type)
        if isinstance(name, tuple):
            return ir.Cast(e.loc, ir.TupleExpr(e.loc, tuple(ir.Local(e.loc, c) for c in name)),
                           type=e.type)
        return ir.Local(e.loc, name)

    def r_Centred(self, e, env):
        return ir.Centred(e.loc, e.name)

    def r_GlobalRead(self, e, env):
        return ir.GlobalRead(e.loc, e.ref)

    def r_FieldRead(self, e, env):
        if isinstance(e.key, ir.Centred) and e.field in self.shadowed:
            return self.replayed(env.shadow[e.field], e)
        return ir.Attr(e.loc, self.rewrite(e.key, env), e.field.name)

    def r_Affine(self, e, env):
        return ir.Affine(e.loc, self.rewrite(e.key, env),
                         tuple(ir.Const(e.loc, int(s)) for s in e.offsets))

    def r_Shifted(self, e, env):
        return ir.Affine(e.loc, self.rewrite(e.key, env),
                         tuple(self.rewrite(o, env) for o in e.offsets))

    def r_RowKey(self, e, env):
        return ir.RowKey(e.loc, e.relation, self.rewrite(e.index, env))

    def r_Index(self, e, env):
        if not is_key_vector(e.base):
            raise self.refuse("an index into a vector or matrix (not differentiated yet)",
                              e.loc)
        return ir.Index(e.loc, self.rewrite(e.base, env),
                        tuple(self.rewrite(i, env) for i in e.index))

    def r_BinOp(self, e, env):
        return ir.BinOp(e.loc, e.op, self.rewrite(e.left, env), self.rewrite(e.right, env))

    def r_UnaryOp(self, e, env):
        return ir.UnaryOp(e.loc, e.op, self.rewrite(e.operand, env))

    def r_Compare(self, e, env):
        return ir.Compare(e.loc, e.op, self.rewrite(e.left, env), self.rewrite(e.right, env))

    def r_BoolOp(self, e, env):
        return ir.BoolOp(e.loc, e.op, tuple(self.rewrite(v, env) for v in e.values))

    def r_IfExp(self, e, env):
        return ir.IfExp(e.loc, self.rewrite(e.test, env), self.rewrite(e.body, env),
                        self.rewrite(e.orelse, env))

    def r_Call(self, e, env):
        return ir.Call(e.loc, e.func, tuple(self.rewrite(a, env) for a in e.args))

    def r_Cast(self, e, env):
        fn = {"f64": "float", "i64": "int", "bool": "bool"}.get(getattr(e.type, "name", ""))
        if fn is None:
            raise self.refuse(f"a conversion to {e.type!r}", e.loc)
        return ir.Call(e.loc, fn, (self.rewrite(e.value, env),))

