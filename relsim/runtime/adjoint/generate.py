"""The adjoint of a kernel: from its typed IR, the untyped IR of a kernel over the same rows that
propagates derivatives backwards through one launch (reverse mode).

A row of the adjoint kernel first *replays* the forward row in single-assignment form: every
float value the forward row computes gets a local of its own (``_r<n>_<name>``), each user local
a new one at each assignment, an ``if`` a condition local and, after it, a selection for each
local either branch changed; a field the row stores (or reduces at its own key and reads) is
followed as a local, its *shadow*. Nothing is stored. The values are those of the forward launch
because the tape restores, before the adjoint launch, what the forward launch overwrote.

Then the *reverse sweep* walks the replay backwards, each local's adjoint (``<local>_d``)
accumulating the derivative of the loss with respect to it:

* an operation sends its adjoint times each partial derivative (`derivatives.py`) to its
  arguments;
* a float field read sends its adjoint to the field's adjoint field (``<field>__grad``):
  ``key.<field>__grad += a`` through the key it was read by (a reduction through keys: the
  phase rules make it race-free, and relsim's reductions make it deterministic);
* a float Global read sends it to the Global's adjoint Global (an exact sum);
* a reduction ``key.f += x`` (or into a Global) is the reverse of a read: ``x`` gets
  ``key.f__grad``;
* a stored field's adjoint is read at the row's own key into its last shadow, and set to zero
  (the value it had is overwritten), before the sweep adds back what the row's reads of the old
  value contribute;
* an ``if`` runs the reverse of the branch the forward row took;
* a loop whose locals from before it are only accumulated into runs again, each iteration
  recomputed and then reversed (`Adjoint.loop`); a grouping loop reading its rows' float
  fields leaves those reads' adjoints to a transposed kernel (`transpose.py`); a loop carrying
  state (``x = f(x)``, while loops) is reversed iteration by iteration, each one's start
  recomputed from the loop's (`state_loops.py`).

f64 vectors and matrices are replayed entry by entry (`vectors.py`). What is not differentiated
yet is refused with a `GradientError` at the kernel's line: grouping loops that cannot be
transposed, loops of run-time length reading float fields through keys the iteration computes,
early exits, float types other than f64, reductions into float fields other than ``+``,
``rs.insert`` and ``rs.delete``. A min/max/arg reduction into a Global sends its adjoint to the row
it chose: a *finding* kernel (the replay and an arg reduction) runs first (`relsim/tape.py`).

Here: the replay and the whole body; `untype.py` writes what is not differentiated back as
untyped IR, `sweep.py` is the reverse sweep, `records.py` what the replay records for it,
`vectors.py` the vectors and matrices, `loops.py` the loops, `transpose.py` the grouping loops
that read their rows, `state_loops.py` the loops carrying state.
"""
from __future__ import annotations

from ...errors import GradientError
from ...relations.field import Field
from ...relations.globals import Global
from ...types import KeyType, KeyVecType, ScalarType, TupleType, bool_, f64
from .. import ir
from ..builtin_table import RANDOM
from . import derivatives
from .decompositions import Decompositions
from .field_picks import FieldPicks
from .loops import Loops
from .records import (
    Accum,
    Block,
    Branch,
    Def,
    Env,
    Load,
    Pick,
    Sink,
    adj_name,
    fold_expr,
    grad_name,
    is_diff,
    is_float,
    is_mat,
    is_vec,
    without,
    zero,
)
from .state_loops import StateLoops
from .sweep import Sweep
from .untype import Untype
from .vectors import Matrices, Vectors

# the reductions whose derivative goes to the row they chose, and the arg reduction finding it
PICKS = {"min": "argmin", "max": "argmax", "argmin": "argmin", "argmax": "argmax"}


class Adjoint(Untype, Sweep, Vectors, Matrices, Decompositions, FieldPicks, Loops,
              StateLoops):
    """The adjoint of one analysed kernel: `body()` -> untyped IR statements."""

    def __init__(self, analysed, adjoint_global, pick_global=None, only_centred=False):
        self.a = analysed
        self.param = analysed.param
        self.adjoint_global = adjoint_global  # Global -> its adjoint Global
        # Global -> the Globals finding the row a min/max/arg reduction into it chose
        # (`Picker`): (its value and row, the chosen row for the adjoint)
        self.pick_global = pick_global
        self.picks: dict = {}  # Global -> the op of the (one) pick reduction into it
        self.pick_stmts: set = set()  # id() of the finding reductions in the replay
        self.field_sites: dict = {}  # field -> its min/max reductions' operators, in order
        self.field_stage: dict = {}  # id() of a field pick's finding statement -> 1 or 2
        self.count = 0
        self.types: dict = {}  # replay local -> type
        self.branch_locals: dict = {}  # locals first assigned inside a branch -> type
        self.depth = 0  # inside how many branches
        self.loops = 0  # inside how many loops
        self.accumulations: set = set()  # id() of the replay's in-place accumulations
        self.loop_blocks: list = []  # (locals before the loop, its hoisted reads), outermost first
        self.key_alias: dict = {}  # replay key local -> the row's key or a loop's key it holds
        self.path: list = []  # (typed loop or if, branch) enclosing the statement replayed
        self.transposed: list = []  # grouping loops whose rows' reads are transposed
        self.pending_keeps: list = []  # their Keep records, for after the outermost loop
        # only reads at the row's own key carry derivatives (a transposed kernel: `transpose`)
        self.only_centred = only_centred
        self.shadowed = self._shadowed_fields()

    # -- names and small nodes ------------------------------------------------------------
    def fresh(self, hint, t, loc, declare=True) -> str:
        """A new replay local of type `t`; one made inside a branch is also assigned a zero
        at the top (`declare`), so the reverse sweep may read it after the branch."""
        self.count += 1
        name = f"_r{self.count}_{hint}"
        self.types[name] = t
        declare = declare and self.depth > 0
        if declare:
            self.branch_locals[name] = t
        keys = (KeyType, KeyVecType)
        if not (isinstance(t, keys) or isinstance(t, ScalarType) and
                (t.name == "f64" or not t.is_float)) or declare and isinstance(t, keys):
            raise self.refuse(f"a value of type {t!r} here (only f64 values, and integer, bool "
                              f"and key ones beside them, are differentiated so far)", loc)
        return name

    def refuse(self, what, loc) -> GradientError:
        return GradientError(f"cannot differentiate {what}", loc, self.a.kernel_name)

    def centred(self, loc):
        return ir.Centred(loc, self.param)

    def node(self, atom):
        kind, v = atom
        if kind == "vec":
            return self.vec_node(v, ir.NOLOC)
        if kind == "mat":
            return self.mat_node(v, ir.NOLOC)
        return ir.Local(ir.NOLOC, v) if kind == "local" else v

    def _shadowed_fields(self) -> set:
        """Fields the row follows as locals: stored at its own key, or reduced at its own key
        and also read there (from the kernel's access summary)."""
        acc = self.a.summary.accesses
        stored = {a.target for a in acc if a.mode == "write"}
        here = {(a.target, a.mode) for a in acc if a.centred and isinstance(a.target, Field)}
        return stored | {t for t, mode in here if mode == "reduce" and (t, "read") in here}

    # -- the replay -------------------------------------------------------------------------
    def flatten(self, e, env, out: Block) -> tuple:
        """Emit the replay of float expression `e` into `out`; its atom."""
        if isinstance(e, ir.Index) and isinstance(e.base.type, TupleType):  # a decomposition's
            return self.part_atom(self.tuple_of(e.base, env, out)[1][int(e.index[0].value)])
        if is_vec(e.type):
            return self.flatten_vec(e, env, out)
        if is_mat(e.type):
            return self.flatten_mat(e, env, out)
        if isinstance(e, ir.Index) and (is_vec(e.base.type) or is_mat(e.base.type)) and \
                is_float(e.type):
            if not all(isinstance(i, ir.Const) for i in e.index):
                raise self.refuse("a vector's or matrix's entry at a run-time index (not "
                                  "differentiated yet)", e.loc)
            entry = self.flatten(e.base, env, out)[1]
            for i in e.index:
                entry = entry[int(i.value)]
            return entry
        if not is_float(e.type):
            if isinstance(e.type, ScalarType) and e.type.is_float:
                raise self.refuse(f"a {e.type!r} value (only f64 so far)", e.loc)
            if not isinstance(e.type, (ScalarType, KeyType)) and \
                    not type(e.type).__name__.startswith("KeyVec"):
                raise self.refuse(f"a value of type {e.type!r} (matrices and vectors of other "
                                  f"than f64 are not differentiated yet)", e.loc)
            return ("value", self.rewrite(e, env))
        match e:
            case ir.Const():
                return ("const", ir.Const(e.loc, float(e.value)))
            case ir.Local():
                return ("local", env.version[e.name])
            case ir.FieldRead() if isinstance(e.key, ir.Centred) and e.field in self.shadowed:
                return ("local", env.shadow[e.field])
            case ir.FieldRead():
                key = self.rewrite(e.key, env)
                out = self.hoisted(key, out)
                name = self.fresh(e.field.name, f64, e.loc)
                out.stmts.append(ir.Assign(e.loc, name, ir.Attr(e.loc, key, e.field.name)))
                if self.carries(key):
                    out.records.append(Load(name, key, e.field, e.loc))
                return ("local", name)
            case ir.GlobalRead():
                out = self.hoisted(None, out)
                name = self.fresh("g", f64, e.loc)
                out.stmts.append(ir.Assign(e.loc, name, ir.GlobalRead(e.loc, e.ref)))
                if self.carries(None):
                    out.records.append(Load(name, None, e.ref, e.loc))
                return ("local", name)
            case ir.BinOp(op=op) if op in ("+", "-", "*", "/", "**"):
                args = (self.flatten(e.left, env, out), self.flatten(e.right, env, out))
                return self.define(op, args, e.loc, out)
            case ir.UnaryOp(op=op) if op in ("-", "+"):
                args = (self.flatten(e.operand, env, out),)
                return self.define("neg" if op == "-" else "pos", args, e.loc, out)
            case ir.Call(func=f) if f in RANDOM:  # a draw is a constant of the program
                return ("value", self.rewrite(e, env))
            case ir.Call(func=f):
                atom = self.vector_call(e, env, out)
                if atom is not None:
                    return atom
                if any(not isinstance(a.type, ScalarType) for a in e.args):
                    raise self.refuse(f"{f}() of a vector or matrix (not differentiated yet)",
                                      e.loc)
                if derivatives.unknown(f):
                    raise self.refuse(f"{f}() (no derivative rule)", e.loc)
                args = tuple(self.flatten(a, env, out) for a in e.args)
                return self.define(f, args, e.loc, out)
            case ir.Cast() if is_float(e.value.type):
                return self.flatten(e.value, env, out)
            case ir.Cast():  # an int or bool made a float: no derivative flows through
                return ("value", self.rewrite(e, env))
            case ir.IfExp():
                return self.select(e, env, out)
        raise self.refuse(f"this expression ({type(e).__name__} {getattr(e, 'op', '')})",
                          e.loc)

    def carries(self, key) -> bool:
        """Whether a read through `key` (None: a Global's) carries a derivative here."""
        return not self.only_centred or isinstance(key, ir.Centred)

    def define(self, op, args, loc, out) -> tuple:
        name = self.fresh("t", f64, loc)
        out.stmts.append(ir.Assign(loc, name, self.apply(op, [self.node(a) for a in args], loc)))
        out.records.append(Def(name, op, args, loc))
        return ("local", name)

    @staticmethod
    def apply(op, args, loc):
        if op == "copy" or op == "pos":
            return args[0]
        if op == "neg":
            return ir.UnaryOp(loc, "-", args[0])
        if op in ("+", "-", "*", "/", "**"):
            return ir.BinOp(loc, op, args[0], args[1])
        return ir.Call(loc, op, tuple(args))

    def select(self, e, env, out) -> tuple:
        """`x if c else y`: an if in the replay, so only the branch taken is computed."""
        cond = self.fresh("c", bool_, e.loc)
        out.stmts.append(ir.Assign(e.loc, cond, self.rewrite(e.test, env)))
        merged = self.fresh("sel", f64, e.loc)
        self.depth += 1
        sides = []
        for branch in (e.body, e.orelse):
            blk = Block()
            atom = self.flatten(branch, env, blk)
            tmp = self.fresh("side", f64, e.loc)
            blk.stmts.append(ir.Assign(e.loc, tmp, self.node(atom)))
            blk.records.append(Def(tmp, "copy", (atom,), e.loc))
            sides.append((blk, tmp))
        self.depth -= 1
        (b, tb), (o, to) = sides
        out.stmts.append(ir.If(e.loc, ir.Local(e.loc, cond), tuple(b.stmts), tuple(o.stmts)))
        out.stmts.append(ir.Assign(e.loc, merged, ir.IfExp(e.loc, ir.Local(e.loc, cond),
                                                         ir.Local(e.loc, tb),
                                                         ir.Local(e.loc, to))))
        out.records.append(Branch(cond, b.records, o.records, [(merged, tb, to)], e.loc))
        return ("local", merged)

    def block(self, stmts, env, out: Block) -> None:
        for s in stmts:
            m = getattr(self, "s_" + type(s).__name__, None)
            if m is None:
                what = {"ForRange": "a loop", "ForEach": "a loop", "ForGroup": "a loop",
                        "While": "a loop", "Return": "an early return", "Break": "a break",
                        "Continue": "a continue", "Insert": "rs.insert",
                        "Delete": "rs.delete"}.get(type(s).__name__, type(s).__name__)
                raise self.refuse(f"{what} (not differentiated yet)", s.loc)
            m(s, env, out)

    def s_Pass(self, s, env, out):
        pass

    def s_Print(self, s, env, out):
        pass  # the adjoint prints nothing

    def s_Assign(self, s, env, out):
        t = self.a.locals.get(s.name, s.value.type)
        acc = env.accumulating.get(s.name)
        if acc is not None:  # `x = x + e` in a loop (`loop`): x updated in place
            atom = self.flatten(s.value.right, env, out)
            if isinstance(acc, tuple):  # a vector: component by component
                pairs = zip(acc, self.components(atom, len(acc)))
            else:
                pairs = ((acc, atom),)
            for a, part in pairs:
                stmt = ir.Assign(s.loc, a, ir.BinOp(s.loc, s.value.op, ir.Local(s.loc, a),
                                                    self.node(part)))
                self.accumulations.add(id(stmt))
                out.stmts.append(stmt)
                if is_float(self.types[a]):
                    out.records.append(Accum(a, part, -1.0 if s.value.op == "-" else 1.0,
                                             s.loc))
            return
        if isinstance(s.value.type, TupleType):  # `tmp = rs.svd(F)` (then unpacked)
            env.version[s.name] = self.tuple_of(s.value, env, out)
            return
        if is_vec(s.value.type) or is_mat(s.value.type):
            env.version[s.name] = self.copies(s.name, self.flatten(s.value, env, out), s.loc,
                                              out)
            return
        if is_float(s.value.type):
            atom = self.flatten(s.value, env, out)
            name = self.fresh(s.name, f64, s.loc)
            out.stmts.append(ir.Assign(s.loc, name, self.node(atom)))
            out.records.append(Def(name, "copy", (atom,), s.loc))
        else:
            if isinstance(t, ScalarType) and t.is_float:
                raise self.refuse(f"local {s.name!r} of type {t!r} (only f64 so far)", s.loc)
            node = self.node(self.flatten(s.value, env, out))
            if isinstance(node, (ir.Centred, ir.Local)) and isinstance(t, KeyType):
                self.count += 1  # another name for a key (an inlined rs.func's parameter):
                name = f"_r{self.count}_{s.name}"  # its uses read the key itself
                self.types[name] = t
                self.key_alias[name] = node
            else:
                name = self.fresh(s.name, s.value.type, s.loc)
                out.stmts.append(ir.Assign(s.loc, name, node))
        env.version[s.name] = name

    def s_AssignIndex(self, s, env, out):
        if not isinstance(env.version.get(s.name), tuple):
            raise self.refuse("an assignment into a matrix or a non-f64 vector (not "
                              "differentiated yet)", s.loc)
        atom = self.flatten(s.value, env, out)
        env.version[s.name] = self.component(env.version[s.name], s.index, atom, s.name,
                                             s.loc, out)

    def s_FieldStore(self, s, env, out):
        if self.loops:
            raise self.refuse("a field stored inside a loop (not differentiated yet)", s.loc)
        if is_mat(s.field.type) and not s.index:
            env.shadow[s.field] = self.copies(s.field.name, self.flatten(s.value, env, out),
                                              s.loc, out)
            return
        if is_vec(s.field.type):
            atom = self.flatten(s.value, env, out)
            env.shadow[s.field] = self.component(env.shadow[s.field], s.index, atom,
                                                 s.field.name, s.loc, out) if s.index else \
                self.copies(s.field.name, atom, s.loc, out)
            return
        if s.index:
            raise self.refuse("a store into a component of a matrix field (not differentiated "
                              "yet)", s.loc)
        atom = self.flatten(s.value, env, out)
        name = self.fresh(s.field.name, s.value.type, s.loc)
        out.stmts.append(ir.Assign(s.loc, name, self.node(atom)))
        if is_float(s.field.type):
            out.records.append(Def(name, "copy", (atom,), s.loc))
        env.shadow[s.field] = name

    def s_FieldReduce(self, s, env, out):
        if is_vec(s.field.type):
            return self.reduce_vec(s, env, out)
        if is_mat(s.field.type):
            raise self.refuse(f"a reduction into matrix field {s.field.qualname} (not "
                              f"differentiated yet)", s.loc)
        if s.index:
            raise self.refuse("a reduction into a component of a matrix field (not "
                              "differentiated yet)", s.loc)
        floating = is_float(s.field.type)
        if floating and s.op in ("min", "max"):  # the derivative goes to the chosen row
            return self.pick_field(s, env, out)
        if floating and s.op != "+":
            raise self.refuse(f"a '{s.op}' reduction into float field {s.field.qualname} "
                              f"(only '+' so far)", s.loc)
        atom = self.flatten(s.value, env, out)
        if s.field in self.shadowed:  # reduced at the row's own key and read there
            if self.loops:
                raise self.refuse(f"field {s.field.qualname}, read at the row's own key and "
                                  f"reduced into inside a loop (not differentiated yet)", s.loc)
            name = self.fresh(s.field.name, s.field.type, s.loc)
            prev = ("local", env.shadow[s.field])
            op = "+" if floating else s.op
            out.stmts.append(ir.Assign(s.loc, name, fold_expr(op, self.node(prev),
                                                          self.node(atom), s.loc)))
            if floating:
                out.records.append(Def(name, "+", (prev, atom), s.loc))
            env.shadow[s.field] = name
        elif floating:
            out.records.append(Sink(self.rewrite(s.key, env), s.field, atom, s.loc))

    def s_GlobalReduce(self, s, env, out):
        if is_mat(s.ref.type) or is_vec(s.ref.type) and s.op != "+":
            raise self.refuse(f"a '{s.op}' reduction into a {s.ref.type!r} Global (not "
                              f"differentiated yet)", s.loc)
        if is_vec(s.ref.type) and s.op == "+":
            out.records.append(Sink(None, s.ref, self.flatten(s.value, env, out), s.loc))
            return
        if not is_float(s.ref.type):
            if isinstance(s.ref.type, ScalarType) and s.ref.type.is_float:
                raise self.refuse(f"a reduction into a {s.ref.type!r} Global", s.loc)
            return  # an integer or bool result carries no derivative
        atom = self.flatten(s.value, env, out)
        if s.op in PICKS:  # min, max, argmin, argmax: the derivative goes to the chosen row
            if s.ref in self.picks:
                name = f" {s.ref.name!r}" if s.ref.name else ""
                raise self.refuse(f"a second '{s.op}' reduction into Global{name} in one "
                                  f"kernel (not differentiated yet)", s.loc)
            self.picks[s.ref] = s.op
            find = ir.Reduce(s.loc, ir.GlobalRead(s.loc, self.pick_global(s.ref)[0]),
                             PICKS[s.op], self.node(atom))
            self.pick_stmts.add(id(find))  # (in the finding kernel only: `finder_body`)
            out.stmts.append(find)
            out.records.append(Pick(s.ref, atom, s.loc))
            return
        if s.op != "+":
            raise self.refuse(f"a '{s.op}' reduction into a float Global (not differentiated "
                              f"yet)", s.loc)
        out.records.append(Sink(None, s.ref, atom, s.loc))

    def s_If(self, s, env, out):
        cond = self.fresh("c", bool_, s.loc)
        out.stmts.append(ir.Assign(s.loc, cond, self.rewrite(s.test, env)))
        self.depth += 1
        results = []
        for i, branch in enumerate((s.body, s.orelse)):
            inner = env.copy()
            blk = Block()
            self.path.append((s, i))
            try:
                self.block(branch, inner, blk)
            finally:
                self.path.pop()
            results.append((inner, blk))
        self.depth -= 1
        (eb, bb), (eo, bo) = results
        out.stmts.append(ir.If(s.loc, ir.Local(s.loc, cond), tuple(bb.stmts) or
                               (ir.Pass(s.loc),), tuple(bo.stmts)))
        merges = []
        for table, tb, to in (("version", eb.version, eo.version),
                              ("shadow", eb.shadow, eo.shadow)):
            for key in dict.fromkeys(list(getattr(env, table)) + [k for k in tb if k in to]):
                if key not in tb or key not in to:
                    getattr(env, table).pop(key, None)  # assigned on one path only
                    continue
                vb, vo = tb[key], to[key]
                hint = key if isinstance(key, str) else key.name
                getattr(env, table)[key] = self.merge(cond, hint, vb, vo, merges, s.loc, out)
        out.records.append(Branch(cond, bb.records, bo.records, merges, s.loc))

    def merge(self, cond, hint, vb, vo, merges, loc, out) -> str:
        """The local after an if for one that was `vb` in its body and `vo` in its else (a
        vector's or matrix's names: each merged)."""
        if isinstance(vb, tuple):
            return tuple(self.merge(cond, hint, b, o, merges, loc, out) for b, o in zip(vb, vo))
        if vb == vo:
            return vb
        t = self.types[vb]
        if isinstance(t, (KeyType, KeyVecType)):  # (only another name for one key gets here)
            a, b = self.local(vb, loc), self.local(vo, loc)
            if type(a) is type(b) and getattr(a, "name", None) == getattr(b, "name", None):
                return vb
            raise self.refuse(f"key local {hint!r}, which the branches of this if set to "
                              f"different keys (a read through it would need a reduction "
                              f"through a key a branch chooses)", loc)
        m = self.fresh(hint, t, loc)
        out.stmts.append(ir.Assign(loc, m, ir.IfExp(loc, ir.Local(loc, cond),
                                                    self.local(vb, loc), self.local(vo, loc))))
        if is_float(t):
            merges.append((m, vb, vo))
        return m

    # -- the whole body ---------------------------------------------------------------------
    def body(self) -> tuple:
        loc = self.a.body[0].loc if self.a.body else ir.NOLOC
        env = Env({}, {})
        top = Block()
        for f in sorted(self.shadowed, key=lambda f: f.name):  # the row's values at the start
            key = self.centred(loc)
            if is_vec(f.type):
                env.shadow[f] = tuple(c for _, c in self.load_vec(key, f, f.name, loc, top)[1])
                continue
            if is_mat(f.type):
                env.shadow[f] = tuple(tuple(c for _, c in row) for row in
                                      self.load_mat(key, f, f.name, loc, top)[1])
                continue
            name = self.fresh(f.name, f.type, loc)
            top.stmts.append(ir.Assign(loc, name, ir.Attr(loc, key, f.name)))
            if is_float(f.type):
                top.records.append(Load(name, key, f, loc))
            env.shadow[f] = name
        self.block(self.a.body, env, top)
        stmts = [ir.Assign(loc, n, zero(t, loc)) for n, t in self.branch_locals.items()]
        one, two = self.finder_stages()  # (field picks: two finding kernels)
        self.finder = tuple(without(stmts + top.stmts, two)) if self.picks or one else None
        self.finder2 = tuple(without(stmts + top.stmts, self.pick_stmts - two)) if two else \
            None
        stmts += without(top.stmts, self.pick_stmts)
        stmts += [ir.Assign(loc, adj_name(n), ir.Const(loc, 0.0)) for n, t in self.types.items()
                  if is_float(t)]
        for f in sorted(self.shadowed, key=lambda f: f.name):
            if not is_diff(f.type):
                continue  # the final value's adjoint, then the old value's: from zero
            grad = ir.Attr(loc, self.centred(loc), grad_name(f))
            for c, index in _entries(env.shadow[f], ()):
                d = adj_name(c)
                part = ir.Index(loc, grad, tuple(ir.Const(loc, i) for i in index)) \
                    if index else grad
                stmts.append(ir.Assign(loc, d, ir.BinOp(loc, "+", ir.Local(loc, d), part)))
            nothing = ("const", ir.Const(loc, 0.0))
            zero_value = self.vec_node([nothing] * f.type.n, loc) if is_vec(f.type) else \
                self.mat_node([[nothing] * f.type.m] * f.type.n, loc) if is_mat(f.type) else \
                ir.Const(loc, 0.0)
            stmts.append(ir.Store(loc, grad, zero_value))
        stmts += self.reverse(top.records)
        return tuple(stmts)

    def adjoint_fields(self) -> set:
        """The float fields whose adjoint fields the adjoint kernel uses."""
        return {a.target for a in self.a.summary.accesses
                if isinstance(a.target, Field) and is_diff(a.target.type)}

    def globals_used(self) -> set:
        """The float Globals whose adjoint Globals the adjoint kernel uses."""
        return {a.target for a in self.a.summary.accesses
                if isinstance(a.target, Global) and is_diff(a.target.type)}


def _entries(names, index):
    """(name, index) of each scalar local in `names` (a name, or nested tuples of them)."""
    if not isinstance(names, tuple):
        return [(names, index)]
    return [e for i, n in enumerate(names) for e in _entries(n, index + (i,))]
