"""Type checking: untyped IR -> typed IR with every conversion explicit (Cast nodes).

This module checks statements (targets, reductions, loops, definite assignment, inserts and
deletes) and names, fields and indices; the typing rules of operators and conversions are in
`operators.py` (mixed into the TypeChecker), those of builtin calls in `calls.py`.
"""
from __future__ import annotations

from dataclasses import replace

from ...errors import KernelNameError, KernelSyntaxError, KernelTypeError
from ...types import (
    GroupType,
    KeyType,
    KeyVecType,
    MatType,
    ScalarType,
    TupleType,
    VecType,
    elem_of,
    i64,
    scalar_of,
)
from .. import ir
from . import calls
from .operators import OperatorTyping, join


class TypeChecker(OperatorTyping):
    """Types one kernel body (run over `relation`, key parameter `param`) until the locals'
    types settle."""

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

    def s_Print(self, s, depth):
        if depth > 0:
            raise self.err("print() inside a loop is not supported yet (each print prints one "
                           "line per row): print after the loop, or in an rs.static loop",
                           s.loc)
        items = []
        for x in s.items:
            if isinstance(x, str):
                items.append(x)
                continue
            v = self.expr(x)
            if not isinstance(v.type, (ScalarType, VecType, MatType, KeyType)):
                raise self.err(f"print() takes strings, numbers, vectors, matrices and keys, "
                               f"not {v.type!r}", x.loc)
            items.append(v)
        return replace(s, items=tuple(items))

    def s_Unpack(self, s, depth):
        t = self.env[s.name]
        n = t.n if isinstance(t, (VecType, KeyVecType)) else \
            len(t.parts) if isinstance(t, TupleType) else None
        if n is None:
            what = "a matrix (unpack its rows: M[0, :], ...)" if isinstance(t, MatType) else \
                repr(t)
            raise self.err(f"cannot unpack {what} into {s.count} targets: only a vector or a "
                           f"key vector", s.loc)
        if n != s.count:
            what = "values" if isinstance(t, TupleType) else "components"
            raise self.err(f"cannot unpack a value of {n} {what} ({t!r}) into {s.count} "
                           f"targets", s.loc)
        return ir.Pass(s.loc)

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
            if op == "*" and elem_of(t).is_float:
                raise self.err(f"'*=' into float Global {g.name!r} has no order-independent "
                               f"result (a float product depends on the order of its factors, "
                               f"and Global reductions run in any order); sum logarithms "
                               f"instead: g += math.log(x), then math.exp(g.value)", s.loc)
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

    def e_RowKey(self, e):
        return ir.RowKey(e.loc, e.relation, self.int_expr(e.index, "the row of rs.at(R, row)"),
                         type=KeyType(e.relation))

    def e_Affine(self, e):
        key = self.expr(e.key)
        t = key.type
        grid = getattr(getattr(t, "relation", None), "grid", None)
        if not isinstance(t, KeyType) or grid is None:
            raise self.err(f"only keys of grid relations can be offset like c(1, 0); this is "
                           f"{t!r}", e.loc)
        offs = [self.expr(o) for o in e.offsets]
        if len(offs) != len(grid.shape) or not all(
                isinstance(o.type, ScalarType) and o.type.is_int for o in offs):
            raise self.err(f"a {len(grid.shape)}-D grid key takes {len(grid.shape)} integer "
                           f"offsets, e.g. c({', '.join(['0'] * len(grid.shape))}) or "
                           f"c(di, dj) with int di, dj (got "
                           f"{', '.join(repr(o.type) for o in offs)})", e.loc)
        if not all(isinstance(o, ir.Const) for o in offs):  # computed when the kernel runs
            return ir.Shifted(e.loc, key, tuple(self.cast(o, i64) for o in offs), type=t)
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
        return ir.typed(e, t)

    def e_Local(self, e):
        if e.name not in self.env or e.name not in self.defined:
            raise self.unassigned(e.name, e.loc)
        return ir.typed(e, self.env[e.name])

    def unassigned(self, name, loc):
        if name not in self.env:
            return self.err(f"local {_user(name)!r} is used before it is assigned", loc,
                            KernelNameError)
        return self.err(f"local {_user(name)!r} may be used before it is assigned: it is not "
                        f"assigned on every path to here (only in one branch of an 'if', or in "
                        f"a loop that may run zero times or break early); assign it before",
                        loc, KernelNameError)

    def e_Centred(self, e):
        return ir.typed(e, KeyType(self.relation))

    def e_GlobalRead(self, e):
        return ir.typed(e, e.ref.type)

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
        if any(isinstance(i, ir.FullSlice) for i in e.index):
            return self.slice_index(e, base)
        idx = tuple(self.int_expr(i, "an index") for i in e.index)
        if isinstance(t, TupleType):
            if len(idx) != 1 or not isinstance(idx[0], ir.Const):
                raise self.err(f"{t!r} takes one constant index (or unpack it: "
                               f"{', '.join('abcdefgh'[:len(t.parts)])} = ...)", e.loc)
            self.check_bound(idx[0], len(t.parts))
            k = int(idx[0].value) % len(t.parts)
            return ir.Index(e.loc, base, (ir.Const(idx[0].loc, k, type=i64),), type=t.parts[k])
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

    def slice_index(self, e, base):
        """`m[i, :]`: row i (as `m[i]`); `m[:, j]`: column j, row j of `transpose(m)` (no
        arithmetic: the same components, picked by a constant or run-time j)."""
        t = base.type
        sl = next(i for i in e.index if isinstance(i, ir.FullSlice))
        if not isinstance(t, MatType) or len(e.index) != 2 or \
                all(isinstance(i, ir.FullSlice) for i in e.index):
            what = "one ':' and one index" if isinstance(t, MatType) else \
                f"this is {t!r}, not a matrix"
            raise self.err(f"a slice in a kernel takes a matrix's column m[:, j] or row "
                           f"m[i, :] ({what})", sl.loc)
        i, j = e.index
        if isinstance(j, ir.FullSlice):
            return self.index(replace(e, index=(i,)), base)
        tr = ir.Call(e.loc, "transpose", (base,), type=MatType(t.m, t.n, t.elem))
        return self.index(replace(e, index=(j,)), tr)

    def check_bound(self, idx, n):
        if isinstance(idx, ir.Const) and not -n <= idx.value < n:
            raise self.err(f"index {idx.value} is out of range for length {n}", idx.loc)

    def int_expr(self, x, what):
        x = self.expr(x)
        if not (isinstance(x.type, ScalarType) and (x.type.is_int)):
            raise self.err(f"{what} must be an integer, not {x.type!r}", x.loc)
        return x if x.type == i64 or isinstance(x, ir.Const) else self.cast(x, i64)

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


def _user(name: str) -> str:
    """The user's spelling of a (possibly inlined-and-renamed) local."""
    if name.startswith("_") and "_" in name[1:]:
        parts = name[1:].split("_", 1)
        if parts[0][-1:].isdigit():
            return parts[1]
    return name

