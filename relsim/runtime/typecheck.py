"""Type checking: untyped IR -> typed IR with every conversion explicit (Cast nodes).

Rules: Python literals are weak (they adopt the other operand's type); otherwise the wider type
wins (bool < i32 < i64 < f32 < f64). A local's type is the join of everything assigned to it.
Implicit conversions on assignment may narrow floats (f64 -> f32) but never turn floats into ints.
"""
from __future__ import annotations

from dataclasses import replace

from ..errors import KernelNameError, KernelSyntaxError, KernelTypeError
from ..types import (
    GroupType,
    KeyType,
    KeyVecType,
    MatType,
    ScalarType,
    VecType,
    bool_,
    f64,
    i64,
    promote,
    scalar_of,
)
from . import ir

FLOAT_MATH = {"sqrt", "cbrt", "exp", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan",
              "asin", "acos", "atan", "sinh", "cosh", "tanh", "floor", "ceil", "fabs", "trunc"}
FLOAT_MATH2 = {"atan2", "hypot", "copysign"}
PREDICATES = {"isnan", "isinf", "isfinite"}
ARITH = {"+", "-", "*", "/", "//", "%", "**"}
BITWISE = {"&", "|", "^", "<<", ">>"}


def is_value(t) -> bool:
    return isinstance(t, (ScalarType, VecType, MatType))


def elem_of(t) -> ScalarType:
    return t.elem if isinstance(t, (VecType, MatType)) else t


def with_elem(t, e: ScalarType):
    if isinstance(t, VecType):
        return VecType(t.n, e)
    if isinstance(t, MatType):
        return MatType(t.n, t.m, e)
    return e


def join(a, b):
    """The type a local must have to hold values of types a and b, or None."""
    if a == b:
        return a
    if isinstance(a, ScalarType) and isinstance(b, ScalarType):
        return promote(a, b)
    if type(a) is type(b) and isinstance(a, (VecType, MatType)) and a.shape == b.shape:
        return with_elem(a, promote(a.elem, b.elem))
    return None


def can_assign(src, dst) -> bool:
    if src == dst:
        return True
    if not (is_value(src) and is_value(dst)) or src.shape != dst.shape:
        return False
    s, d = elem_of(src), elem_of(dst)
    if d.is_bool:
        return s.is_bool
    if d.is_int:
        return not s.is_float
    return True


class TypeChecker:
    def __init__(self, kernel_name: str, relation, param: str):
        self.kernel_name = kernel_name
        self.relation = relation
        self.param = param
        self.env: dict = {}
        self.first_loc: dict = {}

    def err(self, msg, loc, cls=KernelTypeError):
        return cls(msg, loc, self.kernel_name)

    def check(self, body: tuple) -> tuple:
        for _ in range(20):
            before = dict(self.env)
            self.defined: set = set()
            typed = self.block(body, loop_depth=0)
            if self.env == before:
                return typed
        raise self.err("local variable types do not settle", body[0].loc if body else None)

    # -- statements -------------------------------------------------------------------------
    def block(self, body, loop_depth) -> tuple:
        return tuple(self.stmt(s, loop_depth) for s in body)

    def stmt(self, s, depth):
        m = getattr(self, "s_" + type(s).__name__)
        return m(s, depth)

    def s_Assign(self, s, depth):
        v = self.expr(s.value)
        if isinstance(v.type, GroupType):
            raise self.err("a grouping can only be looped over (`for r in key.group:`)", s.loc)
        t = v.type
        old = self.env.get(s.name)
        if old is not None:
            j = join(old, t)
            if j is None:
                raise self.err(f"local {_user(s.name)!r} holds {old!r} (first assigned at line "
                               f"{self.first_loc[s.name].line}) and cannot also hold {t!r}",
                               s.loc)
            t = j
        else:
            self.first_loc[s.name] = s.loc
        self.env[s.name] = t
        self.defined.add(s.name)
        return replace(s, value=self.convert(v, t, s.loc))

    def s_AssignIndex(self, s, depth):
        t = self.env.get(s.name)
        if t is None or s.name not in self.defined:
            raise self.unassigned(s.name, s.loc)
        base = ir.Local(s.loc, s.name, type=t)
        target = self.index(ir.Index(s.loc, base, s.index), base)
        v = self.expr(s.value)
        return replace(s, index=target.index,
                       value=self.convert(v, target.type, s.loc, f"local {_user(s.name)!r}"))

    def s_Store(self, s, depth):
        tgt = self.expr(s.target)
        key, field, index = self.field_target(tgt, s.loc, "assign to")
        v = self.expr(s.value)
        if field.is_key:
            raise self.err(f"key field {field.qualname} is read-only in kernels; load it from "
                           f"Python with .load()", s.loc)
        return ir.FieldStore(s.loc, key, field, index,
                             self.convert(v, tgt.type, s.loc, f"field {field.qualname}"))

    def s_Reduce(self, s, depth):
        v = self.expr(s.value)
        op = s.op
        if isinstance(s.target, ir.GlobalRead):
            g = s.target.ref
            t = g.type
            if op in ("argmin", "argmax") and not isinstance(t, ScalarType):
                raise self.err(f"{op} reductions need a scalar Global, not {t!r}", s.loc)
            self.check_reduce_op(op, t, s.loc)
            return ir.GlobalReduce(s.loc, g, op, self.convert(v, t, s.loc, "the Global"))
        tgt = self.expr(s.target)
        key, field, index = self.field_target(tgt, s.loc, "reduce into")
        if op in ("argmin", "argmax"):
            raise self.err(f"{op} reductions go into a Global (value and row), not a field",
                           s.loc)
        if field.is_key:
            raise self.err(f"key field {field.qualname} is read-only in kernels", s.loc)
        self.check_reduce_op(op, tgt.type, s.loc)
        return ir.FieldReduce(s.loc, key, field, index, op,
                              self.convert(v, tgt.type, s.loc, f"field {field.qualname}"))

    def check_reduce_op(self, op, t, loc):
        e = elem_of(t)
        if op in ("and", "or") and not e.is_bool:
            raise self.err(f"'{op}' reductions need a bool target, not {t!r}", loc)
        if op not in ("and", "or") and e.is_bool:
            raise self.err(f"'{op}' reductions need a numeric target; use |= or &= on bools",
                           loc)

    def field_target(self, tgt, loc, what):
        if isinstance(tgt, ir.FieldRead):
            return tgt.key, tgt.field, ()
        if isinstance(tgt, ir.Index) and isinstance(tgt.base, ir.FieldRead):
            return tgt.base.key, tgt.base.field, tgt.index
        raise self.err(f"cannot {what} this expression; only fields (key.field or "
                       f"key.field[i]), locals and Globals can be targets", loc)

    # Definite assignment: self.defined holds the locals assigned on every path to the current
    # statement; a local assigned in only one branch of an if, or in a loop that may run zero
    # times or leave early, is not defined after it.
    def s_If(self, s, depth):
        test = self.truth(self.expr(s.test))
        before = set(self.defined)
        body = self.block(s.body, depth)
        after_body, self.defined = self.defined, set(before)
        orelse = self.block(s.orelse, depth)
        live = [d for d, b in ((after_body, body), (self.defined, orelse)) if not _exits(b)]
        if live:
            self.defined = set.intersection(*live)
        return replace(s, test=test, body=body, orelse=orelse)

    def loop_body(self, body, depth, before, runs: bool):
        """A loop body; `runs`: it certainly runs at least once (a static, non-empty trip)."""
        typed = self.block(body, depth + 1)
        if not runs or any(isinstance(x, (ir.Break, ir.Continue)) for x in ir.walk_stmts(body)):
            self.defined = before
        return typed

    def s_While(self, s, depth):
        test = self.truth(self.expr(s.test))
        return replace(s, test=test, body=self.loop_body(s.body, depth, set(self.defined), False))

    def s_ForRange(self, s, depth):
        bounds = [self.int_expr(x, "range() bounds") for x in (s.start, s.stop, s.step)]
        if isinstance(bounds[2], ir.Const) and bounds[2].value == 0:
            raise self.err("range() step must not be zero", s.step.loc)
        runs = all(isinstance(b, ir.Const) for b in bounds) and \
            len(range(*(b.value for b in bounds))) > 0
        before = set(self.defined)
        self.bind_loop_var(s.var, i64, s.loc)
        return replace(s, start=bounds[0], stop=bounds[1], step=bounds[2],
                       body=self.loop_body(s.body, depth, before, runs))

    def s_ForEach(self, s, depth):
        seq = self.expr(s.seq)
        t = seq.type
        before = set(self.defined)
        if isinstance(t, GroupType):
            self.bind_loop_var(s.var, KeyType(t.relation), s.loc)
            return ir.ForGroup(s.loc, s.var, seq, self.loop_body(s.body, depth, before, False))
        if isinstance(t, KeyVecType):
            self.bind_loop_var(s.var, KeyType(t.relation), s.loc)
        elif isinstance(t, VecType):
            self.bind_loop_var(s.var, t.elem, s.loc)
        else:
            raise self.err(f"cannot loop over a value of type {t!r}; loop over range(), a key "
                           f"vector, a vector or a grouping", s.seq.loc)
        return replace(s, seq=seq, body=self.loop_body(s.body, depth, before, t.n > 0))

    def bind_loop_var(self, name, t, loc):
        old = self.env.get(name)
        if old is not None and old != t:
            raise self.err(f"loop variable {_user(name)!r} ({t!r}) is also used as {old!r}", loc)
        self.env[name] = t
        self.first_loc.setdefault(name, loc)
        self.defined.add(name)

    def s_Break(self, s, depth):
        if depth == 0:
            raise self.err(f"'{type(s).__name__.lower()}' outside a loop", s.loc,
                           KernelSyntaxError)
        return s

    s_Continue = s_Break

    def s_Return(self, s, depth):
        if depth:
            raise self.err("an early 'return' inside a loop is not supported; set a flag and "
                           "break", s.loc, KernelSyntaxError)
        return s

    def s_Pass(self, s, depth):
        return s

    def s_Delete(self, s, depth):
        key = self.expr(s.key)
        if not isinstance(key, ir.Centred):
            raise self.err("rs.delete takes the kernel's own key (deleting another row would "
                           "race with that row's own kernel instance)", s.loc)
        if not self.relation.elastic:
            raise self.err(f"rs.delete needs an elastic relation; {self.relation.name} is not "
                           f"(create it with elastic=True)", s.loc)
        return replace(s, key=key)

    def s_Insert(self, s, depth):
        rel = s.relation
        if not rel.elastic:
            raise self.err(f"rs.insert needs an elastic relation; {rel.name} is not (create it "
                           f"with elastic=True)", s.loc)
        fields, values = [], []
        for name, value in zip(s.names, s.values):
            if not rel.has_field(name):
                raise self.err(f"relation {rel.name} has no field {name!r}; fields: "
                               f"{', '.join(sorted(rel.fields)) or 'none'}", s.loc,
                               KernelNameError)
            f = rel.field(name)
            v = self.expr(value)
            if f.is_key:
                if v.type != f.type:
                    raise self.err(f"{f.qualname} holds {f.type!r}, not {v.type!r}", v.loc)
            else:
                v = self.convert(v, f.type, s.loc, f"field {f.qualname}")
            fields.append(f)
            values.append(v)
        return replace(s, names=tuple(fields), values=tuple(values))

    def e_Affine(self, e):
        key = self.expr(e.key)
        t = key.type
        grid = getattr(getattr(t, "relation", None), "grid", None)
        if not isinstance(t, KeyType) or grid is None:
            raise self.err(f"only keys of grid relations can be offset like c(1, 0); this is "
                           f"{t!r}", e.loc)
        offs = [self.expr(o) for o in e.offsets]
        if len(offs) != len(grid.shape) or not all(
                isinstance(o, ir.Const) and isinstance(o.type, ScalarType) and o.type.is_int
                for o in offs):
            raise self.err(f"a {len(grid.shape)}-D grid key takes {len(grid.shape)} integer "
                           f"constant offsets, e.g. c({', '.join(['0'] * len(grid.shape))})",
                           e.loc)
        steps = tuple(int(o.value) for o in offs)
        if isinstance(key, ir.Affine):  # c(1, 0)(0, 1) == c(1, 1)
            steps = tuple(a + b for a, b in zip(key.offsets, steps))
            key = key.key
        if not any(steps):
            return key
        return ir.Affine(e.loc, key, steps, type=t)

    # -- expressions ------------------------------------------------------------------------
    def expr(self, e) -> ir.Expr:
        return getattr(self, "e_" + type(e).__name__)(e)

    def e_Const(self, e):
        try:
            t = scalar_of(e.value)
        except TypeError:
            raise self.err(f"unsupported constant {e.value!r}", e.loc) from None
        return replace(e, type=t)

    def e_Local(self, e):
        if e.name not in self.env or e.name not in self.defined:
            raise self.unassigned(e.name, e.loc)
        return replace(e, type=self.env[e.name])

    def unassigned(self, name, loc):
        if name not in self.env:
            return self.err(f"local {_user(name)!r} is used before it is assigned", loc,
                            KernelNameError)
        return self.err(f"local {_user(name)!r} may be used before it is assigned: it is not "
                        f"assigned on every path to here (only in one branch of an 'if', or in "
                        f"a loop that may run zero times or break early); assign it before",
                        loc, KernelNameError)

    def e_Centred(self, e):
        return replace(e, type=KeyType(self.relation))

    def e_GlobalRead(self, e):
        return replace(e, type=e.ref.type)

    def e_Attr(self, e):
        obj = self.expr(e.obj)
        t = obj.type
        if not isinstance(t, KeyType):
            hint = " (index a key vector first, e.g. t.v[0].pos)" if isinstance(t, KeyVecType) \
                else ""
            raise self.err(f"'.{e.name}' needs a key of a relation, but this is {t!r}{hint}",
                           e.loc)
        rel = t.relation
        if rel.has_field(e.name):
            f = rel.field(e.name)
            return ir.FieldRead(e.loc, obj, f, type=f.type)
        if e.name in rel.groupings:
            g = rel.grouping(e.name)
            return ir.GroupRead(e.loc, obj, g, type=GroupType(g.source, g))
        raise self.err(f"relation {rel.name} has no field or grouping {e.name!r}; fields: "
                       f"{', '.join(sorted(rel.fields)) or 'none'}", e.loc, KernelNameError)

    def e_Index(self, e):
        return self.index(e, self.expr(e.base))

    def index(self, e, base):
        t = base.type
        idx = tuple(self.int_expr(i, "an index") for i in e.index)
        if isinstance(t, (VecType, KeyVecType)):
            if len(idx) != 1:
                raise self.err(f"{t!r} takes one index", e.loc)
            self.check_bound(idx[0], t.n)
            rt = t.elem if isinstance(t, VecType) else KeyType(t.relation)
        elif isinstance(t, MatType):
            if len(idx) == 2:
                self.check_bound(idx[0], t.n)
                self.check_bound(idx[1], t.m)
                rt = t.elem
            elif len(idx) == 1:
                self.check_bound(idx[0], t.n)
                rt = VecType(t.m, t.elem)
            else:
                raise self.err(f"{t!r} takes one or two indices", e.loc)
        else:
            raise self.err(f"a value of type {t!r} cannot be indexed", e.loc)
        return ir.Index(e.loc, base, idx, type=rt)

    def check_bound(self, idx, n):
        if isinstance(idx, ir.Const) and not -n <= idx.value < n:
            raise self.err(f"index {idx.value} is out of range for length {n}", idx.loc)

    def int_expr(self, x, what):
        x = self.expr(x)
        if not (isinstance(x.type, ScalarType) and (x.type.is_int)):
            raise self.err(f"{what} must be an integer, not {x.type!r}", x.loc)
        return x if x.type == i64 or isinstance(x, ir.Const) else self.cast(x, i64)

    def truth(self, x):
        if x.type == bool_:
            return x
        if isinstance(x.type, ScalarType):
            return ir.Compare(x.loc, "!=", x, self.cast(ir.Const(x.loc, 0, weak=True, type=i64),
                                                       x.type), type=bool_)
        raise self.err(f"a {x.type!r} value has no truth value here", x.loc)

    def e_BinOp(self, e):
        a, b = self.expr(e.left), self.expr(e.right)
        op = e.op
        if op == "@":
            return self.matmul(e, a, b)
        for x in (a, b):
            if not is_value(x.type):
                raise self.err(f"operator '{op}' is not defined for {x.type!r}", x.loc)
        if op in BITWISE:
            if not all(isinstance(x.type, ScalarType) and not x.type.is_float for x in (a, b)):
                raise self.err(f"operator '{op}' needs integers or bools", e.loc)
            a, b, t = self.unify(a, b)
            return ir.BinOp(e.loc, op, a, b, type=t)
        if op == "**":
            if not (isinstance(a.type, ScalarType) and isinstance(b.type, ScalarType)):
                raise self.err("'**' needs scalar operands", e.loc)
            return calls.power(self, e, a, b)
        # arithmetic: bools count as i64
        a, b = (self.cast(x, with_elem(x.type, i64)) if elem_of(x.type).is_bool else x
                for x in (a, b))
        a, b, et = self.unify(a, b)
        if op == "/" and not et.is_float:
            a, b, et = (self.cast(a, with_elem(a.type, f64)), self.cast(b, with_elem(b.type, f64)),
                        f64)
        shape_a, shape_b = a.type.shape, b.type.shape
        if shape_a and shape_b and shape_a != shape_b:
            raise self.err(f"operator '{op}' on mismatched shapes {a.type!r} and {b.type!r}",
                           e.loc)
        if (shape_a or shape_b) and op in ("//", "%"):
            raise self.err(f"operator '{op}' needs scalars", e.loc)
        rt = a.type if shape_a else b.type
        return ir.BinOp(e.loc, op, a, b, type=with_elem(rt, et))

    def matmul(self, e, a, b):
        ta, tb = a.type, b.type
        et = promote(elem_of(ta), elem_of(tb)) if is_value(ta) and is_value(tb) else None
        if isinstance(ta, MatType) and isinstance(tb, VecType) and ta.m == tb.n:
            rt = VecType(ta.n, et)
        elif isinstance(ta, VecType) and isinstance(tb, MatType) and ta.n == tb.n:
            rt = VecType(tb.m, et)
        elif isinstance(ta, MatType) and isinstance(tb, MatType) and ta.m == tb.n:
            rt = MatType(ta.n, tb.m, et)
        else:
            raise self.err(f"'@' needs matrix @ vector or matrix @ matrix of matching sizes, "
                           f"not {ta!r} @ {tb!r}", e.loc)
        a, b = self.cast(a, with_elem(ta, et)), self.cast(b, with_elem(tb, et))
        return ir.BinOp(e.loc, "@", a, b, type=rt)

    def unify(self, a, b):
        """Cast a and b to one element type (weak literals adopt the other's)."""
        ea, eb = elem_of(a.type), elem_of(b.type)
        wa, wb = _is_weak(a), _is_weak(b)
        if wa and not wb:
            et = eb if (eb.is_float or not ea.is_float) else promote(ea, eb)
        elif wb and not wa:
            et = ea if (ea.is_float or not eb.is_float) else promote(ea, eb)
        else:
            et = promote(ea, eb)
        return self.cast(a, with_elem(a.type, et)), self.cast(b, with_elem(b.type, et)), et

    def cast(self, x, t):
        if x.type == t:
            return x
        if isinstance(x, ir.Const) and isinstance(t, ScalarType):
            return ir.Const(x.loc, t.dtype.type(x.value).item(), type=t)
        return ir.Cast(x.loc, x, type=t)

    def convert(self, x, t, loc, what=None):
        """Implicit conversion on assignment, with a clear error when it would lose meaning.
        `what` names the target in messages, e.g. "field V.T"."""
        if x.type == t:
            return x
        dst = f"{what} ({t!r})" if what else f"a {t!r} target"
        if isinstance(x.type, ScalarType) and isinstance(t, (VecType, MatType)):
            raise self.err(f"cannot assign a scalar to {dst}; build the value with a tuple "
                           f"or the type, e.g. {t!r}(...)", loc)
        if not can_assign(x.type, t):
            raise self.err(f"cannot assign a {x.type!r} value to {dst}"
                           + (" (use int() to truncate)" if elem_of(t).is_int else ""), loc)
        return self.cast(x, t)

    def e_UnaryOp(self, e):
        x = self.expr(e.operand)
        if e.op == "not":
            return ir.UnaryOp(e.loc, "not", self.truth(x), type=bool_)
        if not is_value(x.type):
            raise self.err(f"operator '{e.op}' is not defined for {x.type!r}", e.loc)
        if e.op == "~":
            if not isinstance(x.type, ScalarType) or not x.type.is_int:
                raise self.err("'~' needs an integer", e.loc)
            return ir.UnaryOp(e.loc, "~", x, type=x.type)
        if elem_of(x.type).is_bool:
            x = self.cast(x, with_elem(x.type, i64))
        if e.op == "+":
            return x
        if isinstance(x, ir.Const):
            return replace(x, value=-x.value)
        return ir.UnaryOp(e.loc, "-", x, type=x.type)

    def e_Compare(self, e):
        a, b = self.expr(e.left), self.expr(e.right)
        if isinstance(a.type, KeyType) and isinstance(b.type, KeyType):
            if e.op not in ("==", "!=") or a.type != b.type:
                raise self.err("keys can only be compared with == and != to keys of the same "
                               "relation", e.loc)
            return ir.Compare(e.loc, e.op, a, b, type=bool_)
        for x in (a, b):
            if not isinstance(x.type, ScalarType):
                raise self.err(f"cannot compare {x.type!r} values (compare components)", x.loc)
        a, b, _ = self.unify(a, b)
        return ir.Compare(e.loc, e.op, a, b, type=bool_)

    def e_BoolOp(self, e):
        vals = tuple(self.truth(self.expr(v)) for v in e.values)
        return ir.BoolOp(e.loc, e.op, vals, type=bool_)

    def e_IfExp(self, e):
        test = self.truth(self.expr(e.test))
        a, b = self.expr(e.body), self.expr(e.orelse)
        if isinstance(a.type, KeyType) or isinstance(b.type, KeyType):
            if a.type != b.type:
                raise self.err(f"both branches must have the same type: {a.type!r} and "
                               f"{b.type!r}", e.loc)
            return ir.IfExp(e.loc, test, a, b, type=a.type)
        t = join(a.type, b.type) if not (_is_weak(a) or _is_weak(b)) else None
        if t is None:
            if is_value(a.type) and is_value(b.type) and a.type.shape == b.type.shape:
                a, b, et = self.unify(a, b)
                t = with_elem(a.type, et)
            else:
                raise self.err(f"both branches must have the same type: {a.type!r} and "
                               f"{b.type!r}", e.loc)
        return ir.IfExp(e.loc, test, self.cast(a, t), self.cast(b, t), type=t)

    def e_TupleExpr(self, e):
        elts = [self.expr(x) for x in e.elts]
        if not elts:
            raise self.err("empty tuples are not values", e.loc)
        if all(isinstance(x.type, ScalarType) for x in elts):
            strong = [x.type for x in elts if not _is_weak(x)] or [x.type for x in elts]
            et = strong[0]
            for t in strong[1:]:
                et = promote(et, t)
            if any(x.type.is_float for x in elts) and not et.is_float:
                et = f64
            if et.is_bool:
                et = bool_
            return ir.TupleExpr(e.loc, tuple(self.cast(x, et) for x in elts),
                                type=VecType(len(elts), et))
        if all(isinstance(x.type, VecType) for x in elts) and \
                len({x.type.n for x in elts}) == 1:
            et = elts[0].type.elem
            for x in elts[1:]:
                et = promote(et, x.type.elem)
            t = MatType(len(elts), elts[0].type.n, et)
            return ir.TupleExpr(e.loc, tuple(self.cast(x, VecType(t.m, et)) for x in elts),
                                type=t)
        raise self.err("a tuple in a kernel must be a vector of scalars or a matrix of equal "
                       "length rows", e.loc)

    def e_Cast(self, e):
        t = e.type
        if isinstance(e.value, ir.TupleExpr):  # rs.vec(3)(a, b, c) / mat constructor
            v = self.expr(e.value)
            if len(e.value.elts) == 1 and isinstance(v.type.elem, ScalarType) and \
                    isinstance(t, VecType):
                comp = self.cast(v.elts[0], t.elem)
                return ir.TupleExpr(e.loc, (comp,) * t.n, type=t)
            if v.type.shape != t.shape:
                raise self.err(f"{t!r} needs {t.shape} components, got {v.type.shape}", e.loc)
            return self.cast(v, t)
        v = self.expr(e.value)
        if not isinstance(v.type, ScalarType):
            raise self.err(f"cannot convert {v.type!r} to {t!r}", e.loc)
        if t.is_bool:
            return self.truth(v)
        return self.cast(v, t)

    def e_Call(self, e):
        args = [self.expr(a) for a in e.args]
        return calls.type_call(self, e, args)


def _exits(body) -> bool:
    """Whether control never falls through the end of `body` (break, continue, return)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ir.Break, ir.Continue, ir.Return)):
        return True
    return isinstance(last, ir.If) and _exits(last.body) and _exits(last.orelse)


def _is_weak(x) -> bool:
    return isinstance(x, ir.Const) and x.weak


def _user(name: str) -> str:
    """The user's spelling of a (possibly inlined-and-renamed) local."""
    if name.startswith("_") and "_" in name[1:]:
        parts = name[1:].split("_", 1)
        if parts[0][-1:].isdigit():
            return parts[1]
    return name


from . import calls  # noqa: E402  (calls uses the helpers above)
