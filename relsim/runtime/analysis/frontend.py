"""Frontend: a kernel's Python source -> untyped IR.

The function is parsed, never executed (`source.py`: its text and scopes). Names resolve to the
kernel parameter (the centred key), locals, captured relsim Globals, compile-time constants
(Python/NumPy scalars and tuples of them), builtins (`builtin_table`), or `@rs.func` helpers,
which are inlined here. Compile-time calls (`rs.vec(3)`, `rs.eye(3)`) and `rs.static` loops are
evaluated and unrolled by `static.py`.
"""
from __future__ import annotations

import ast
import types

import numpy as np

from ... import builtins as rsb
from ...errors import KernelNameError, KernelSyntaxError, KernelTypeError, PhaseError
from ...relations.globals import Global
from ...types import MatType, ScalarType, VecType
from .. import ir
from ..builtin_table import (
    COMPILE_TIME,
    DECOMPOSITIONS,
    RANDOM,
    RANDOM_KEYWORDS,
    REDUCE_STATEMENTS,
    STATIC_LOOP,
    VECTOR_FUNCTIONS,
    callables,
)
from . import captures, static, unroll_hint
from .source import Scope, Source, StaticObject, assigned_names, visible_names

KNOWN = callables()
_AUG_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
            ast.Mod: "%", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|",
            ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
_CMP_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
            ast.NotEq: "!="}
_REDUCING_AUG = {"+": "+", "-": "+", "*": "*", "|": "or", "&": "and"}
# how error messages name Python constructs kernels do not support (default: the AST class)
_CONSTRUCTS = {
    "Lambda": "lambda expressions", "ListComp": "list comprehensions",
    "SetComp": "set comprehensions", "DictComp": "dict comprehensions",
    "GeneratorExp": "generator expressions", "Dict": "dicts", "Set": "sets",
    "JoinedStr": "f-strings", "Starred": "starred (*args) expressions",
    "NamedExpr": "assignment expressions (:=)", "Await": "'await'", "Yield": "'yield'",
    "YieldFrom": "'yield from'", "Try": "'try' statements", "TryStar": "'try' statements",
    "With": "'with' statements", "AsyncWith": "'async with' statements",
    "AsyncFor": "'async for' loops", "Raise": "'raise' statements",
    "Assert": "'assert' statements", "Delete": "'del' statements",
    "Global": "'global' statements", "Nonlocal": "'nonlocal' statements",
    "Import": "imports", "ImportFrom": "imports", "FunctionDef": "nested function definitions",
    "AsyncFunctionDef": "nested function definitions", "ClassDef": "class definitions",
    "Match": "'match' statements",
}


class Frontend:
    """Converts one kernel (and the helpers it calls, inlined) to untyped IR."""

    def __init__(self, kernel_name: str):
        self.kernel_name = kernel_name
        self.counter = 0
        self.func_stack = []
        self.captures = {}  # (id of holder, name) -> captures.Capture: constants to watch

    # -- entry points ---------------------------------------------------------------------
    def kernel(self, kernel, rename: str = "") -> tuple[str, tuple]:
        """(parameter name, untyped body) of `kernel`; `rename` prefixes its locals."""
        fn = kernel.fn
        src = Source.of(fn)
        args = src.tree.args
        if len(args.args) != 1 or args.vararg or args.kwarg or args.kwonlyargs:
            raise self.syntax("a kernel takes exactly one parameter: the key of the row it "
                              "runs for", src.loc(src.tree))
        param = args.args[0].arg
        scope = Scope(src, visible_names(fn, kernel.scope), param, assigned_names(src.tree),
                      rename=rename)
        body = self.block(src.tree.body, scope, in_func=False)
        return param, body

    def fused(self, parts) -> tuple[str, tuple, tuple]:
        """The kernels `parts` as one body (the locals of each part after the first renamed
        apart; each part's parameter is the row's key): (the first's parameter, the body,
        the parts' bodies)."""
        params, bodies = zip(*(self.kernel(k, f"_{k.name}{j}_" if j else "")
                               for j, k in enumerate(parts)))
        return params[0], tuple(s for b in bodies for s in b), bodies

    def error(self, cls, msg, loc):
        return cls(msg, loc, self.kernel_name)

    def syntax(self, msg, loc):
        return self.error(KernelSyntaxError, msg, loc)

    # -- statements -----------------------------------------------------------------------
    def block(self, stmts, scope, in_func) -> tuple:
        out = []
        for s in stmts:
            if (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                    and isinstance(s.value.value, str)):
                continue  # docstring
            out.extend(self.stmt(s, scope, in_func))
        return tuple(out)

    def stmt(self, s, scope, in_func) -> list:
        loc = scope.src.loc(s)
        pre: list = []
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise self.syntax("chained assignment is not supported in kernels", loc)
            res = self.assign(s.targets[0], s.value, scope, loc, pre)
        elif isinstance(s, ast.AugAssign):
            res = self.aug_assign(s, scope, loc, pre)
        elif isinstance(s, ast.AnnAssign):
            if s.value is None:
                return []
            res = self.assign(s.target, s.value, scope, loc, pre)
        elif isinstance(s, ast.If):
            res = [ir.If(loc, self.expr(s.test, scope, pre), self.block(s.body, scope, in_func),
                         self.block(s.orelse, scope, in_func))]
        elif isinstance(s, ast.While):
            if s.orelse:
                raise self.syntax("'while ... else' is not supported in kernels", loc)
            inner: list = []
            test = self.expr(s.test, scope, inner)
            if inner:
                raise self.syntax("a loop condition cannot call an @rs.func helper; compute "
                                  "it into a local before the loop and at the end of the body",
                                  loc)
            res = [ir.While(loc, test, self.block(s.body, scope, in_func))]
        elif isinstance(s, ast.For):
            res = self.for_loop(s, scope, loc, pre, in_func)
        elif isinstance(s, ast.Break):
            res = [ir.Break(loc)]
        elif isinstance(s, ast.Continue):
            res = [ir.Continue(loc)]
        elif isinstance(s, ast.Pass):
            res = []
        elif isinstance(s, ast.Return):
            if in_func:
                raise self.syntax("'return' is only allowed at the end of an @rs.func (or at "
                                  "the end of each branch of its final if/else)", loc)
            if s.value is not None:
                raise self.syntax("a kernel does not return a value; write results to fields "
                                  "or reduce them into globals", loc)
            res = [ir.Return(loc)]
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            res = self.call_stmt(s.value, scope, loc, pre)
        else:
            raise self.syntax(f"{_construct(s, 'statements')} are not supported in kernels", loc)
        return pre + list(res)

    def assign(self, target, value, scope, loc, pre) -> list:
        if isinstance(target, ast.Name) and scope.is_global_target(target.id):
            red = self.minmax_pattern(target, value, scope, pre)
            if red is None:
                raise self.error(PhaseError, f"cannot assign to Global '{target.id}' in a "
                                 f"kernel (every row would write it: a race); globals are read, "
                                 f"or reduced into with +=, *=, g = min(g, x), g = max(g, x)",
                                 loc)
            return [ir.Reduce(loc, scope.global_ref(target.id, loc), red[0], red[1])]
        if isinstance(target, ast.Name):
            return [ir.Assign(loc, self.local_name(target.id, scope, loc),
                              self.expr(value, scope, pre))]
        if isinstance(target, (ast.Tuple, ast.List)):
            return self.unpack(target, value, scope, loc, pre)
        self.refuse_slice_target(target, scope)
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                and target.value.id in scope.locals:
            return [ir.AssignIndex(loc, self.local_name(target.value.id, scope, loc),
                                   self.indices(target.slice, scope, pre),
                                   self.expr(value, scope, pre))]
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            red = self.minmax_pattern(target, value, scope, pre)
            tgt = self.expr(target, scope, pre)
            if red is not None:
                return [ir.Reduce(loc, tgt, red[0], red[1])]
            return [ir.Store(loc, tgt, self.expr(value, scope, pre))]
        raise self.syntax("unsupported assignment target", loc)

    def unpack(self, target, value, scope, loc, pre) -> list:
        """`a, b = x, y` (every value first, then the targets in order, as Python: `a, b = b,
        a` swaps) and `a, b = v` for a vector or key vector v of exactly that many components
        (checked when typed: `ir.Unpack`); targets are anything assignable, nested too."""
        if any(isinstance(t, ast.Starred) for t in target.elts):
            raise self.syntax("starred targets (a, *rest = ...) are not supported in kernels",
                              loc)
        n = len(target.elts)
        out: list = []
        if isinstance(value, (ast.Tuple, ast.List)):
            if len(value.elts) != n:
                raise self.syntax(f"cannot unpack {len(value.elts)} values into {n} targets",
                                  loc)
            parts = []
            for v in value.elts:
                tmp = self.unpack_temp(scope)
                out.append(ir.Assign(loc, scope.rename + tmp, self.expr(v, scope, pre)))
                parts.append(ast.copy_location(ast.Name(tmp, ast.Load()), v))
        else:
            tmp = self.unpack_temp(scope)
            out.append(ir.Assign(loc, scope.rename + tmp, self.expr(value, scope, pre)))
            out.append(ir.Unpack(loc, scope.rename + tmp, n))
            parts = [ast.copy_location(ast.Subscript(ast.Name(tmp, ast.Load()), ast.Constant(k),
                                                     ast.Load()), value) for k in range(n)]
        for t, part in zip(target.elts, parts):
            out += self.assign(t, ast.fix_missing_locations(part), scope, loc, pre)
        return out

    @staticmethod
    def unpack_temp(scope) -> str:
        """A new local of `scope` that no name of the kernel can be."""
        k = len(scope.locals)
        while f"unpacked__{k}" in scope.locals or f"unpacked__{k}" in scope.captured:
            k += 1
        scope.locals.add(f"unpacked__{k}")
        return f"unpacked__{k}"

    def minmax_pattern(self, target, value, scope, pre):
        """`t = min(t, x)` / `max` (either argument order): a min/max reduction into t."""
        if not (isinstance(value, ast.Call) and len(value.args) == 2 and not value.keywords):
            return None
        obj = self.resolve_static(value.func, scope)
        name = KNOWN.get(id(obj)) if obj is not None else None
        if name not in ("min", "max"):
            return None
        written = ast.unparse(target)
        same = [ast.unparse(a) == written for a in value.args]
        if same[0] == same[1]:
            return None
        other = value.args[1] if same[0] else value.args[0]
        return name, self.expr(other, scope, pre)

    def aug_assign(self, s, scope, loc, pre) -> list:
        op = _AUG_OPS.get(type(s.op))
        if op is None:
            raise self.syntax("unsupported augmented assignment", loc)
        value = self.expr(s.value, scope, pre)
        t = s.target
        self.refuse_slice_target(t, scope)
        if isinstance(t, ast.Name) and scope.is_global_target(t.id):
            if op not in _REDUCING_AUG:
                raise self.error(PhaseError, f"'{op}=' on Global '{t.id}' is not a reduction "
                                 f"(every row would write it: a race); a Global can be reduced "
                                 f"into with += -= *= |= &=, min or max", loc)
            if op == "-":
                value = ir.UnaryOp(loc, "-", value)
            return [ir.Reduce(loc, scope.global_ref(t.id, loc), _REDUCING_AUG[op], value)]
        if isinstance(t, ast.Name):
            name = self.local_name(t.id, scope, loc)
            cur = self.expr(t, scope, pre)
            return [ir.Assign(loc, name, ir.BinOp(loc, op, cur, value))]
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) \
                and t.value.id in scope.locals:
            cur = self.expr(t, scope, pre)
            return [ir.AssignIndex(loc, self.local_name(t.value.id, scope, loc),
                                   self.indices(t.slice, scope, pre),
                                   ir.BinOp(loc, op, cur, value))]
        if isinstance(t, (ast.Attribute, ast.Subscript)):
            tgt = self.expr(t, scope, pre)
            if op in _REDUCING_AUG:
                if op == "-":
                    value = ir.UnaryOp(loc, "-", value)
                return [ir.Reduce(loc, tgt, _REDUCING_AUG[op], value)]
            return [ir.Store(loc, tgt, ir.BinOp(loc, op, tgt, value))]
        raise self.syntax("unsupported augmented assignment target", loc)

    def refuse_slice_target(self, target, scope):
        """`m[:, j] = v`: a slice is read-only (a column or row value)."""
        if isinstance(target, ast.Subscript):
            sl = target.slice
            for x in (sl.elts if isinstance(sl, ast.Tuple) else [sl]):
                if isinstance(x, ast.Slice):
                    raise self.syntax("cannot assign to a slice in a kernel (M[:, j] and "
                                      "M[i, :] are values); assign the components",
                                      scope.src.loc(x))

    def call_stmt(self, call, scope, loc, pre) -> list:
        obj = self.resolve_static(call.func, scope)
        if obj in REDUCE_STATEMENTS:
            if len(call.args) != 2 or call.keywords:
                raise self.syntax(f"rs.{obj.__name__}(target, value) takes two arguments", loc)
            target = call.args[0]
            if isinstance(target, ast.Name) and isinstance(scope.lookup(target.id), Global):
                tgt = scope.global_ref(target.id, loc)
            else:
                tgt = self.expr(target, scope, pre)
            return [ir.Reduce(loc, tgt, REDUCE_STATEMENTS[obj],
                              self.expr(call.args[1], scope, pre))]
        if obj is rsb.delete:
            if len(call.args) != 1 or call.keywords:
                raise self.syntax("rs.delete(key) takes the kernel's own key", loc)
            return [ir.Delete(loc, self.expr(call.args[0], scope, pre))]
        if obj is rsb.insert:
            if len(call.args) != 1:
                raise self.syntax("rs.insert(Relation, field=value, ...) takes the relation and "
                                  "field values by keyword", loc)
            rel = self.resolve_static(call.args[0], scope)
            if not hasattr(rel, "elastic"):
                raise self.error(KernelTypeError, "rs.insert needs a captured Relation as its "
                                 "first argument", loc)
            names = tuple(k.arg for k in call.keywords)
            if None in names:
                raise self.syntax("rs.insert does not take **kwargs", loc)
            values = tuple(self.expr(k.value, scope, pre) for k in call.keywords)
            return [ir.Insert(loc, rel, names, values)]
        if _is_func(obj):
            self.inline(obj, call, scope, loc, pre, want_value=False)
            return []
        if obj is print:
            return [self.print_stmt(call, scope, loc, pre)]
        self.call(call, scope, loc, [])  # raises if the call is not allowed at all
        raise self.syntax("an expression statement must be an rs.reduce_* call or an @rs.func "
                          "call; its value would be lost", loc)

    def print_stmt(self, call, scope, loc, pre) -> ir.Print:
        """`print("x =", x, v.pos)`: literal strings and values, printed per row after the
        launch (`ir.Print`)."""
        if call.keywords:
            raise self.syntax("print() in a kernel takes no keyword arguments (sep=, end=, "
                              "file=); each call prints one line, its items separated by spaces",
                              loc)
        items = []
        for a in call.args:
            if isinstance(a, ast.JoinedStr):
                raise self.syntax("f-strings are not supported in kernels; print the values as "
                                  "separate arguments: print(\"x =\", x)", scope.src.loc(a))
            if isinstance(a, ast.Constant) and isinstance(a.value, str):
                items.append(a.value)
            elif isinstance(a, ast.Starred):
                raise self.syntax("print(*...) is not supported in kernels", scope.src.loc(a))
            else:
                items.append(self.expr(a, scope, pre))
        return ir.Print(loc, tuple(items))

    def for_loop(self, s, scope, loc, pre, in_func) -> list:
        it = s.iter
        if isinstance(it, ast.Call) and self.resolve_static(it.func, scope) is STATIC_LOOP:
            return static.unroll(self, s, scope, in_func)
        if s.orelse:
            raise self.syntax("'for ... else' is not supported in kernels", loc)
        if not isinstance(s.target, ast.Name):
            raise self.syntax("a for loop variable must be a single name", loc)
        var = self.local_name(s.target.id, scope, loc)
        if isinstance(it, ast.Call) and self.resolve_static(it.func, scope) is range:
            if it.keywords or not 1 <= len(it.args) <= 3:
                raise self.syntax("range() takes 1 to 3 positional arguments", loc)
            unroll_hint.check(self, s, scope)
            args = [self.expr(a, scope, pre) for a in it.args]
            one, zero = ir.Const(loc, 1, weak=True), ir.Const(loc, 0, weak=True)
            start, stop, step = ((zero, args[0], one) if len(args) == 1 else
                                 (args[0], args[1], one) if len(args) == 2 else args)
            return [ir.ForRange(loc, var, start, stop, step, self.block(s.body, scope, in_func))]
        seq = self.expr(it, scope, pre)
        return [ir.ForEach(loc, var, seq, self.block(s.body, scope, in_func))]

    # -- expressions ----------------------------------------------------------------------
    def expr(self, e, scope, pre) -> ir.Expr:
        r = self.expr_or_obj(e, scope, pre)
        if isinstance(r, StaticObject):
            return self.obj_value(r, scope)
        return r

    def obj_value(self, r: StaticObject, scope) -> ir.Expr:
        v = r.value
        if isinstance(v, Global):
            return ir.GlobalRead(r.loc, v)
        if isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating)):
            self.capture(r)
            return ir.Const(r.loc, v, weak=isinstance(v, (bool, int, float)))
        if isinstance(v, (tuple, np.ndarray)) and np.asarray(v).dtype.kind in "biuf" \
                and 1 <= np.asarray(v).ndim <= 2:
            self.capture(r)
            arr = np.asarray(v)
            if arr.ndim == 1:
                return ir.TupleExpr(r.loc, tuple(ir.Const(r.loc, x) for x in arr))
            return ir.TupleExpr(r.loc, tuple(ir.TupleExpr(r.loc, tuple(ir.Const(r.loc, x)
                                                                       for x in row))
                                             for row in arr))
        raise self.error(KernelTypeError, f"{type(v).__name__} object {_short(v)} cannot be "
                         f"used as a value in a kernel (captured values must be numbers, tuples "
                         f"of numbers, small NumPy arrays or rs.Global)", r.loc)

    def capture(self, r: StaticObject) -> None:
        """Record a captured name that became a constant, to warn if it changes later."""
        if r.name is None:
            return
        holder = captures.origin(r.fn, r.name, r.value)
        if holder is not None and (id(holder), r.name) not in self.captures:
            self.captures[id(holder), r.name] = captures.Capture(r.name, holder, r.value, r.loc)

    def expr_or_obj(self, e, scope, pre):
        loc = scope.src.loc(e)
        if isinstance(e, ast.Constant):
            if isinstance(e.value, (bool, int, float)):
                return ir.Const(loc, e.value, weak=True)
            raise self.error(KernelTypeError, f"{type(e.value).__name__} constants are not "
                             f"supported in kernels", loc)
        if isinstance(e, ast.Name):
            return scope.name(e.id, loc, self)
        if isinstance(e, ast.Attribute):
            base = self.expr_or_obj(e.value, scope, pre)
            if isinstance(base, StaticObject):
                try:
                    return StaticObject(getattr(base.value, e.attr), loc)
                except AttributeError:
                    raise self.error(KernelNameError, f"{_describe(base.value)} has no attribute "
                                     f"{e.attr!r}", loc) from None
            return ir.Attr(loc, base, e.attr)
        if isinstance(e, ast.Subscript):
            return ir.Index(loc, self.expr(e.value, scope, pre),
                            self.indices(e.slice, scope, pre))
        if isinstance(e, ast.BinOp):
            return ir.BinOp(loc, _AUG_OPS[type(e.op)], self.expr(e.left, scope, pre),
                            self.expr(e.right, scope, pre))
        if isinstance(e, ast.UnaryOp):
            op = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not", ast.Invert: "~"}[type(e.op)]
            return ir.UnaryOp(loc, op, self.expr(e.operand, scope, pre))
        if isinstance(e, ast.BoolOp):
            op = "and" if isinstance(e.op, ast.And) else "or"
            return ir.BoolOp(loc, op, tuple(self.pure_expr(v, scope, loc) for v in e.values))
        if isinstance(e, ast.Compare):
            return self.compare(e, scope, loc, pre)
        if isinstance(e, ast.IfExp):
            return ir.IfExp(loc, self.expr(e.test, scope, pre), self.pure_expr(e.body, scope, loc),
                            self.pure_expr(e.orelse, scope, loc))
        if isinstance(e, ast.Call):
            return self.call(e, scope, loc, pre)
        if isinstance(e, (ast.Tuple, ast.List)):
            return ir.TupleExpr(loc, tuple(self.expr(x, scope, pre) for x in e.elts))
        raise self.syntax(f"{_construct(e, 'expressions')} are not supported in kernels", loc)

    def pure_expr(self, e, scope, loc):
        """An operand evaluated only conditionally: helper calls there must not need statements
        hoisted before the whole expression."""
        inner: list = []
        r = self.expr(e, scope, inner)
        if inner:
            raise self.syntax("an @rs.func call inside 'and'/'or'/'if-else' expressions is not "
                              "supported; assign its result to a local first", loc)
        return r

    def compare(self, e, scope, loc, pre):
        parts = []
        left = self.expr(e.left, scope, pre)
        for op, right_ast in zip(e.ops, e.comparators):
            if type(op) not in _CMP_OPS:
                raise self.syntax(f"'{type(op).__name__}' comparisons are not supported in "
                                  f"kernels", loc)
            right = self.expr(right_ast, scope, pre)
            parts.append(ir.Compare(loc, _CMP_OPS[type(op)], left, right))
            left = right
        return parts[0] if len(parts) == 1 else ir.BoolOp(loc, "and", tuple(parts))

    def indices(self, sl, scope, pre) -> tuple:
        """Index expressions; a full slice `:` (a matrix's column or row) is `ir.FullSlice`."""
        out = []
        for x in (sl.elts if isinstance(sl, ast.Tuple) else [sl]):
            folded = static.loop_index(self, x, scope)
            if folded is not None:
                out.append(ir.Const(scope.src.loc(x), folded, weak=True))
            elif not isinstance(x, ast.Slice):
                out.append(self.expr(x, scope, pre))
            elif x.lower is None and x.upper is None and x.step is None:
                out.append(ir.FullSlice(scope.src.loc(x)))
            else:
                raise self.syntax("slices other than ':' are not supported in kernels "
                                  "(':' takes a matrix's column M[:, j] or row M[i, :])",
                                  scope.src.loc(x))
        return tuple(out)

    def call(self, e, scope, loc, pre):
        obj = self.resolve_static(e.func, scope)
        if KNOWN.get(id(obj)) in RANDOM:
            return self.random_call(e, KNOWN[id(obj)], scope, loc, pre)
        if obj is rsb.at:
            rel = self.resolve_static(e.args[0], scope) if len(e.args) == 2 else None
            if e.keywords or not hasattr(rel, "elastic"):
                raise self.syntax("rs.at(R, i) takes a captured relation and a row number", loc)
            return ir.RowKey(loc, rel, self.expr(e.args[1], scope, pre))
        if e.keywords:
            raise self.syntax("keyword arguments are not supported in kernel calls", loc)
        if obj is None and self.is_kernel_value(e.func, scope):
            # `c(1, 0)`: an affine (grid neighbour) key; offsets computed from constants
            # (`c(dx + 1, 0)` in a static loop) are folded here
            return ir.Affine(loc, self.expr(e.func, scope, pre),
                             tuple(self.offset(a, scope, pre) for a in e.args))
        if obj is None:
            self.expr_or_obj(e.func, scope, [])  # an unknown name or attribute: NameError
            raise self.error(KernelTypeError, "only known math/vector functions, relsim types "
                             "and @rs.func helpers can be called in kernels", loc)
        if _is_func(obj):
            return self.inline(obj, e, scope, loc, pre, want_value=True)
        if any(obj is f for f in COMPILE_TIME.values()):  # rs.eye(3): a constant
            return StaticObject(static.call_value(self, e, scope), loc)
        if obj is STATIC_LOOP:
            raise self.syntax("rs.static(...) is only the iterable of a for loop in a kernel "
                              "(`for i in rs.static(range(3)):`)", loc)
        args = tuple(self.expr(a, scope, pre) for a in e.args)
        if isinstance(obj, ScalarType):
            if len(args) != 1:
                raise self.error(KernelTypeError, f"{obj.name}(x) takes one argument", loc)
            return ir.Cast(loc, args[0], type=obj)
        if isinstance(obj, (VecType, MatType)):  # rs.vec(3)(x, y, z): checked by the typing
            return ir.Cast(loc, ir.TupleExpr(loc, args), type=obj)
        name = KNOWN.get(id(obj))
        if name is None:
            what = getattr(obj, "__qualname__", None) if callable(obj) else None
            what = f"{what}()" if isinstance(what, str) else _short(obj)
            raise self.error(KernelTypeError, f"{what} cannot be called in a kernel; "
                             f"supported: math functions, min/max/abs/pow, int/float/bool, "
                             f"rs types, rs.eye, {'/'.join((*VECTOR_FUNCTIONS, *DECOMPOSITIONS))}, "
                             f"rs.{'/'.join(RANDOM)}, @rs.func",
                             loc)
        if name in ("int", "float", "bool"):
            if len(args) != 1:
                raise self.error(KernelTypeError, f"{name}(x) takes one argument", loc)
        return ir.Call(loc, name, args)

    def random_call(self, e, name, scope, loc, pre):
        """`rs.uniform(p, c0, ..., seed=s)`: the positional arguments, then the seed (0 when not
        given), typed in `calls.random_call`."""
        seed = ir.Const(loc, 0, weak=True)
        for k in e.keywords:
            if k.arg not in RANDOM_KEYWORDS:
                raise self.error(KernelTypeError, f"rs.{name}() takes no keyword argument "
                                 f"{k.arg!r} (only {', '.join(RANDOM_KEYWORDS)}=)",
                                 scope.src.loc(k.value) if k.arg else loc)
            seed = self.expr(k.value, scope, pre)
        args = tuple(self.expr(a, scope, pre) for a in e.args)
        return ir.Call(loc, name, args + (seed,))

    def offset(self, a, scope, pre) -> ir.Expr:
        v = static.constant(self, a, scope)
        if v is static.NOT_STATIC:
            return self.expr(a, scope, pre)
        return self.obj_value(StaticObject(v, scope.src.loc(a)), scope)

    def is_kernel_value(self, e, scope) -> bool:
        """Whether `e` denotes a value computed in the kernel (the key, a local, a field)."""
        while isinstance(e, (ast.Attribute, ast.Subscript, ast.Call)):
            e = e.value if not isinstance(e, ast.Call) else e.func
        return isinstance(e, ast.Name) and not scope.is_static(e.id)

    def resolve_static(self, e, scope):
        """The Python object a dotted name (or a compile-time call: `rs.vec(3)`) denotes, or
        None if it is a kernel value."""
        if isinstance(e, ast.Name):
            return scope.lookup(e.id) if scope.is_static(e.id) else None
        if isinstance(e, ast.Attribute):
            base = self.resolve_static(e.value, scope)
            return getattr(base, e.attr, None) if base is not None else None
        if isinstance(e, ast.Call):
            fn = self.resolve_static(e.func, scope)
            if any(fn is f for f in COMPILE_TIME.values()):
                return static.call_value(self, e, scope)
        return None

    # -- helpers (@rs.func) -----------------------------------------------------------------
    def inline(self, func, call, scope, loc, pre, want_value):
        if call.keywords:
            raise self.syntax("keyword arguments are not supported in kernel calls", loc)
        if func in self.func_stack:
            raise self.syntax(f"@rs.func {func.__name__!r} calls itself; recursion is not "
                              f"supported", loc)
        src = func._source()
        params = [a.arg for a in src.tree.args.args]
        if len(call.args) != len(params):
            raise self.error(KernelTypeError, f"{func.__name__}() takes {len(params)} "
                             f"argument(s), {len(call.args)} given", loc)
        args = [self.expr(a, scope, pre) for a in call.args]
        self.counter += 1
        prefix = f"_{func.__name__}{self.counter}_"
        # a parameter the body never changes, passed a local, names that local (no copy:
        # large kernels built from helpers compile much faster), passed a static loop
        # variable, is that constant (`c(dx, 0)` in the helper is a grid offset); any other
        # gets a local
        changed = assigned_names(src.tree, subscripts=True)
        aliases, consts = {}, {}
        for p, a, node in zip(params, args, call.args):
            if p in changed:
                pre.append(ir.Assign(loc, prefix + p, a))
            elif isinstance(node, ast.Name) and node.id in scope.static:
                consts[p] = scope.static[node.id]
            elif isinstance(a, ir.Local):
                aliases[p] = a.name
            else:
                pre.append(ir.Assign(loc, prefix + p, a))
        inner = Scope(src, visible_names(func.fn, func.scope), None,
                      assigned_names(src.tree) | set(params), rename=prefix, aliases=aliases)
        inner.static.update(consts)
        self.func_stack.append(func)
        try:
            body, has_ret = self.func_body(src.tree.body, inner, prefix + "return")
        finally:
            self.func_stack.pop()
        pre.extend(body)
        if want_value:
            if not has_ret:
                raise self.error(KernelTypeError, f"@rs.func {func.__name__!r} returns no value",
                                 loc)
            return ir.Local(loc, prefix + "return")
        return None

    def func_body(self, stmts, scope, ret_name):
        stmts = [s for s in stmts if not (isinstance(s, ast.Expr) and
                                          isinstance(s.value, ast.Constant))]
        if not stmts:
            return (), False
        *head, last = stmts
        out = list(self.block(head, scope, in_func=True))
        loc = scope.src.loc(last)
        if isinstance(last, ast.Return):
            if last.value is None:
                return tuple(out), False
            p: list = []
            val = self.expr(last.value, scope, p)
            return tuple(out + p + [ir.Assign(loc, ret_name, val)]), True
        if isinstance(last, ast.If) and last.orelse:
            p = []
            test = self.expr(last.test, scope, p)
            b1, r1 = self.func_body(last.body, scope, ret_name)
            b2, r2 = self.func_body(last.orelse, scope, ret_name)
            if r1 != r2:
                raise self.syntax("every branch of the final if/else of an @rs.func must return "
                                  "a value, or none may", loc)
            return tuple(out + p + [ir.If(loc, test, b1, b2)]), r1
        out.extend(self.block([last], scope, in_func=True))
        return tuple(out), False

    def local_name(self, name, scope, loc) -> str:
        if name == scope.param:
            raise self.syntax(f"cannot assign to the kernel parameter {name!r}",
                              loc)
        if name in scope.static:
            raise self.syntax(f"cannot assign to {name!r}, the variable of an rs.static loop "
                              f"(a constant in each copy of the body)", loc)
        return scope.rename + name


def _construct(node, kind: str) -> str:
    name = type(node).__name__
    return _CONSTRUCTS.get(name, f"'{name}' {kind}")


def _is_func(obj) -> bool:
    return getattr(obj, "_relsim_func", False)


def _describe(v) -> str:
    """A compile-time object as messages name it: module 'math', or its (short) repr."""
    return f"module {v.__name__!r}" if isinstance(v, types.ModuleType) else _short(v)


def _short(v) -> str:
    r = repr(v)
    return r if len(r) < 60 else r[:57] + "..."
