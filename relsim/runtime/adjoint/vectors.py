"""Vectors in the adjoint pass (`generate.Adjoint`): an f64 vector is replayed component by
component, its atom ``("vec", [atom, ...])``; a vector field or Global is read as one value
and its components named (its adjoint, one vector reduction); `dot`, `norm`, `cross` and
component-wise arithmetic become the scalar operations they are."""
from __future__ import annotations

from ...types import VecType, f64
from .. import ir
from .records import Load, is_vec


class Vectors:
    """A mixin of `Adjoint`: `flatten_vec(e, env, out)` and vector atoms."""

    def vec_node(self, atoms, loc):
        """The untyped IR of a vector built from the components `atoms`."""
        return ir.Cast(loc, ir.TupleExpr(loc, tuple(self.node(a) for a in atoms)),
                       type=VecType(len(atoms), f64))

    def components(self, atom, n):
        """The n component atoms of vector atom `atom`, or `atom` n times (a scalar)."""
        return atom[1] if atom[0] == "vec" else [atom] * n

    def load_vec(self, key, target, name, loc, out) -> tuple:
        """Read the components of vector field `target` through `key` (None: a Global) into
        locals; record one vector load (its adjoint: one vector reduction)."""
        out = self.hoisted(key, out)
        names = []
        for i in range(target.type.n):
            value = ir.GlobalRead(loc, target) if key is None else \
                ir.Attr(loc, key, target.name)
            c = self.fresh(f"{name}{i}", f64, loc)
            out.stmts.append(ir.Assign(loc, c, ir.Index(loc, value, (ir.Const(loc, i),))))
            names.append(c)
        out.records.append(Load(tuple(names), key, target, loc))
        return ("vec", [("local", c) for c in names])

    def flatten_vec(self, e, env, out) -> tuple:
        """The replay of f64 vector expression `e`: a vector atom."""
        match e:
            case ir.TupleExpr():
                return ("vec", [self.flatten(x, env, out) for x in e.elts])
            case ir.Local():
                return ("vec", [("local", c) for c in env.version[e.name]])
            case ir.FieldRead() if isinstance(e.key, ir.Centred) and e.field in self.shadowed:
                return ("vec", [("local", c) for c in env.shadow[e.field]])
            case ir.FieldRead():
                return self.load_vec(self.rewrite(e.key, env), e.field, e.field.name, e.loc,
                                     out)
            case ir.GlobalRead():
                return self.load_vec(None, e.ref, "g", e.loc, out)
            case ir.BinOp(op=op) if op in ("+", "-", "*", "/"):
                a, b = self.flatten(e.left, env, out), self.flatten(e.right, env, out)
                n = e.type.n
                return ("vec", [self.define(op, (x, y), e.loc, out) for x, y in
                                zip(self.components(a, n), self.components(b, n))])
            case ir.UnaryOp(op=op) if op in ("-", "+"):
                a = self.flatten(e.operand, env, out)
                return ("vec", [self.define("neg" if op == "-" else "pos", (x,), e.loc, out)
                                for x in a[1]])
            case ir.Call(func="cross"):
                a, b = (self.flatten(x, env, out)[1] for x in e.args)
                out_c = []
                for i, j in ((1, 2), (2, 0), (0, 1)):
                    p = self.define("*", (a[i], b[j]), e.loc, out)
                    q = self.define("*", (a[j], b[i]), e.loc, out)
                    out_c.append(self.define("-", (p, q), e.loc, out))
                return ("vec", out_c)
            case ir.Cast() if e.value.type == e.type:
                return self.flatten(e.value, env, out)
        raise self.refuse(f"this vector expression ({type(e).__name__} "
                          f"{getattr(e, 'op', getattr(e, 'func', ''))}; not differentiated yet)",
                          e.loc)

    def vector_call(self, e, env, out):
        """`dot(a, b)` and `norm(a)` of f64 vectors: their scalar atom (None: not one)."""
        if e.func not in ("dot", "norm") or not all(is_vec(a.type) for a in e.args):
            return None
        args = [self.flatten(a, env, out)[1] for a in e.args]
        a, b = (args[0], args[0]) if e.func == "norm" else args
        total = self.define("*", (a[0], b[0]), e.loc, out)
        for x, y in zip(a[1:], b[1:]):
            total = self.define("+", (total, self.define("*", (x, y), e.loc, out)), e.loc, out)
        return self.define("sqrt", (total,), e.loc, out) if e.func == "norm" else total
