"""Vectors and matrices in the adjoint pass (`generate.Adjoint`): an f64 vector is replayed
component by component, its atom ``("vec", [atom, ...])``, a matrix row by row; a vector or
matrix field or Global is read as its entries (its adjoint, one reduction of the whole value);
`dot`, `norm`, `cross`, ``@``, `transpose`, `inverse`, `det` and entry-wise arithmetic become
the scalar operations they are."""
from __future__ import annotations

from ...types import MatType, VecType, f64
from .. import ir
from .records import Def, Load, Sink, is_mat, is_vec


class Vectors:
    """A mixin of `Adjoint`: `flatten_vec(e, env, out)`, vector atoms, and vector (and matrix)
    locals and fields: `copies`, `component`, `reduce_vec`."""

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
        if self.carries(key):
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
            case ir.BinOp(op="@"):  # a matrix times a vector
                rows = self.flatten(e.left, env, out)[1]
                v = self.flatten(e.right, env, out)[1]
                return ("vec", [self.sum_of_products(row, v, e.loc, out) for row in rows])
            case ir.Index() if is_mat(e.base.type) and len(e.index) == 1 and \
                    isinstance(e.index[0], ir.Const):  # a matrix's row
                return ("vec", self.flatten(e.base, env, out)[1][int(e.index[0].value)])
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

    def copies(self, hint, atom, loc, out) -> tuple:
        """New locals holding vector atom `atom`'s components (each a copy): their names (for
        a matrix atom, a tuple of its rows' names)."""
        if atom[0] == "mat":
            return tuple(self.copies(f"{hint}{i}", ("vec", row), loc, out)
                         for i, row in enumerate(atom[1]))
        names = []
        for i, c in enumerate(atom[1]):
            name = self.fresh(f"{hint}{i}", f64, loc)
            out.stmts.append(ir.Assign(loc, name, self.node(c)))
            out.records.append(Def(name, "copy", (c,), loc))
            names.append(name)
        return tuple(names)

    def component(self, names, index, atom, hint, loc, out) -> tuple:
        """`names` (a vector's component locals) with component `index` replaced by a copy of
        scalar `atom`."""
        if not all(isinstance(i, ir.Const) for i in index):
            raise self.refuse("a vector's component at a run-time index (not differentiated "
                              "yet)", loc)
        k = int(index[0].value)
        name = self.fresh(f"{hint}{k}", f64, loc)
        out.stmts.append(ir.Assign(loc, name, self.node(atom)))
        out.records.append(Def(name, "copy", (atom,), loc))
        return names[:k] + (name,) + names[k + 1:]

    def reduce_vec(self, s, env, out):
        """`key.f += x` (or `key.f[i] += x`) into an f64 vector field."""
        if s.op != "+":
            raise self.refuse(f"a '{s.op}' reduction into float field {s.field.qualname} "
                              f"(only '+' so far)", s.loc)
        atom = self.flatten(s.value, env, out)
        if s.field not in self.shadowed:
            out.records.append(Sink(self.rewrite(s.key, env), s.field, atom, s.loc,
                                    tuple(self.rewrite(i, env) for i in s.index)))
            return
        if self.loops:
            raise self.refuse(f"field {s.field.qualname}, read at the row's own key and "
                              f"reduced into inside a loop (not differentiated yet)", s.loc)
        old = env.shadow[s.field]
        if s.index:
            k = int(s.index[0].value)
            total = self.define("+", (("local", old[k]), atom), s.loc, out)
            env.shadow[s.field] = self.component(old, s.index, total, s.field.name, s.loc, out)
        else:
            sums = [self.define("+", (("local", o), c), s.loc, out)
                    for o, c in zip(old, self.components(atom, len(old)))]
            env.shadow[s.field] = self.copies(s.field.name, ("vec", sums), s.loc, out)

    def vector_call(self, e, env, out):
        """`dot(a, b)` and `norm(a)` of f64 vectors, `det(m)` of a 2 x 2 or 3 x 3 f64 matrix:
        their scalar atom (None: not one of them)."""
        if e.func == "det" and is_mat(e.args[0].type) and e.args[0].type.shape in ((2, 2),
                                                                                   (3, 3)):
            return self.det(self.flatten(e.args[0], env, out)[1], e.loc, out)
        if e.func not in ("dot", "norm") or not all(is_vec(a.type) for a in e.args):
            return None
        args = [self.flatten(a, env, out)[1] for a in e.args]
        a, b = (args[0], args[0]) if e.func == "norm" else args
        total = self.define("*", (a[0], b[0]), e.loc, out)
        for x, y in zip(a[1:], b[1:]):
            total = self.define("+", (total, self.define("*", (x, y), e.loc, out)), e.loc, out)
        return self.define("sqrt", (total,), e.loc, out) if e.func == "norm" else total


class Matrices:
    """A mixin of `Adjoint`: f64 matrices, row by row, each row a vector's components
    (``("mat", [[atom, ...], ...])``): constructors from rows, matrix fields and Globals,
    entry-wise arithmetic, ``@``, `transpose`, `outer`, `inverse` and `det` of 2 x 2 and 3 x 3
    as the scalar operations they are (the decompositions: `decompositions.py`)."""

    def mat_node(self, rows, loc):
        n, m = len(rows), len(rows[0])
        return ir.Cast(loc, ir.TupleExpr(loc, tuple(self.vec_node(r, loc) for r in rows)),
                       type=MatType(n, m, f64))

    def load_mat(self, key, target, name, loc, out) -> tuple:
        """Read the entries of matrix field `target` through `key` (None: a Global) into
        locals; record one matrix load."""
        out = self.hoisted(key, out)
        n, m = target.type.shape
        names = []
        for i in range(n):
            row = []
            for j in range(m):
                value = ir.GlobalRead(loc, target) if key is None else \
                    ir.Attr(loc, key, target.name)
                c = self.fresh(f"{name}{i}{j}", f64, loc)
                out.stmts.append(ir.Assign(loc, c, ir.Index(
                    loc, value, (ir.Const(loc, i), ir.Const(loc, j)))))
                row.append(c)
            names.append(tuple(row))
        if self.carries(key):
            out.records.append(Load(tuple(names), key, target, loc))
        return ("mat", [[("local", c) for c in row] for row in names])

    def flatten_mat(self, e, env, out) -> tuple:
        """The replay of f64 matrix expression `e`: a matrix atom."""
        d = self.define
        match e:
            case ir.TupleExpr():
                return ("mat", [self.flatten(x, env, out)[1] for x in e.elts])
            case ir.Local():
                return ("mat", [[("local", c) for c in row] for row in env.version[e.name]])
            case ir.FieldRead() if isinstance(e.key, ir.Centred) and e.field in self.shadowed:
                return ("mat", [[("local", c) for c in row] for row in env.shadow[e.field]])
            case ir.FieldRead():
                return self.load_mat(self.rewrite(e.key, env), e.field, e.field.name, e.loc,
                                     out)
            case ir.GlobalRead():
                return self.load_mat(None, e.ref, "g", e.loc, out)
            case ir.BinOp(op="@"):
                a, b = self.flatten(e.left, env, out)[1], self.flatten(e.right, env, out)[1]
                return ("mat", [[self.sum_of_products(row, [b[k][j] for k in range(len(b))],
                                                      e.loc, out)
                                 for j in range(len(b[0]))] for row in a])
            case ir.BinOp(op=op) if op in ("+", "-", "*", "/"):
                a, b = self.flatten(e.left, env, out), self.flatten(e.right, env, out)
                n, m = e.type.shape
                ra = a[1] if a[0] == "mat" else [[a] * m] * n
                rb = b[1] if b[0] == "mat" else [[b] * m] * n
                return ("mat", [[d(op, (x, y), e.loc, out) for x, y in zip(p, q)]
                                for p, q in zip(ra, rb)])
            case ir.UnaryOp(op="-"):
                rows = self.flatten(e.operand, env, out)[1]
                return ("mat", [[d("neg", (x,), e.loc, out) for x in row] for row in rows])
            case ir.Call(func="transpose"):
                rows = self.flatten(e.args[0], env, out)[1]
                return ("mat", [list(col) for col in zip(*rows)])
            case ir.Call(func="outer"):
                a, b = (self.flatten(x, env, out)[1] for x in e.args)
                return ("mat", [[d("*", (x, y), e.loc, out) for y in b] for x in a])
            case ir.Call(func="inverse") if e.type.shape in ((2, 2), (3, 3)):
                return self.inverse(self.flatten(e.args[0], env, out)[1], e.loc, out)
        raise self.refuse(f"this matrix expression ({type(e).__name__} "
                          f"{getattr(e, 'op', getattr(e, 'func', ''))}; not differentiated yet)",
                          e.loc)

    def sum_of_products(self, xs, ys, loc, out):
        total = self.define("*", (xs[0], ys[0]), loc, out)
        for x, y in zip(xs[1:], ys[1:]):
            total = self.define("+", (total, self.define("*", (x, y), loc, out)), loc, out)
        return total

    def cofactors(self, a, loc, out):
        """The cofactor matrix of 2 x 2 or 3 x 3 matrix `a` (rows of atoms)."""
        d = self.define
        if len(a) == 2:
            return [[a[1][1], d("neg", (a[1][0],), loc, out)],
                    [d("neg", (a[0][1],), loc, out), a[0][0]]]
        out_rows = []
        for i in range(3):
            row = []
            for j in range(3):
                r0, r1 = [k for k in range(3) if k != i]
                c0, c1 = [k for k in range(3) if k != j]
                p = d("*", (a[r0][c0], a[r1][c1]), loc, out)
                q = d("*", (a[r0][c1], a[r1][c0]), loc, out)
                minor = d("-", (p, q), loc, out)
                row.append(minor if (i + j) % 2 == 0 else d("neg", (minor,), loc, out))
            out_rows.append(row)
        return out_rows

    def det(self, a, loc, out):
        cof = self.cofactors(a, loc, out)
        return self.sum_of_products(a[0], cof[0], loc, out)

    def inverse(self, a, loc, out) -> tuple:
        cof = self.cofactors(a, loc, out)
        det = self.sum_of_products(a[0], cof[0], loc, out)
        n = len(a)
        return ("mat", [[self.define("/", (cof[j][i], det), loc, out) for j in range(n)]
                        for i in range(n)])
