"""The scalar algebra that emits Python `ast`: every operation becomes `_tN = <op>` in the
current block and yields the name `_tN`. Used through `semantics`, so vector operations are
emitted in exactly the order the `interp` oracle evaluates them."""
from __future__ import annotations

import ast
import copy
import math
import re

import numpy as np

from ...types import bool_, f32, f64, i32, i64
from ..builtin_table import MATH

_BINOPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "//": ast.FloorDiv,
           "%": ast.Mod, "&": ast.BitAnd, "|": ast.BitOr, "^": ast.BitXor, "<<": ast.LShift,
           ">>": ast.RShift}
_CMPOPS = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE, "==": ast.Eq, "!=": ast.NotEq}
ROW = "_row"  # the relation row being run, in generated code (`expr.ExprLowerer` binds it)
CAST_FN = {bool_: "_bool", i32: "_i32", i64: "_i64", f32: "_f32", f64: "_f64"}
# what a side of a choice may compute whatever the condition (`speculable`): total on every
# input (no trap, no memory access, no error flag) and cheap (a division is neither always:
# an adjoint's `0 if d == 0 else d * (1 / x)` computed on every row made LULESH's backward ~6%
# slower)
_SPECULABLE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor, ast.USub,
                   ast.UAdd, ast.Not, ast.Invert)
_SPECULABLE_CALLS = {*CAST_FN.values(), "math.isfinite", "math.isnan", "math.isinf"}
TEMPORARY = re.compile(r"_t[0-9]+")  # the names `EmitAlgebra.fresh` makes
SPECULATE_AT_MOST = 12  # statements of a choice's sides, together


def name(n: str, ctx=None) -> ast.Name:
    return ast.Name(n, ctx or ast.Load())


def store(n: str) -> ast.Name:
    return ast.Name(n, ast.Store())


def call(fn: str, *args) -> ast.Call:
    if "." in fn:
        mod, attr = fn.split(".")
        f = ast.Attribute(name(mod), attr, ast.Load())
    else:
        f = name(fn)
    return ast.Call(f, list(args), [])


def const(value, t) -> ast.expr:
    if t == bool_:
        return ast.Constant(bool(value))
    if t.is_float:
        v = float(value)
        if math.isnan(v):
            node = name("_NAN")
        elif math.isinf(v):
            node = name("_INF") if v > 0 else ast.UnaryOp(ast.USub(), name("_INF"))
        elif v == 0.0 and math.copysign(1.0, v) < 0:
            node = ast.UnaryOp(ast.USub(), ast.Constant(0.0))
        else:
            node = ast.Constant(v)
        return node if t == f64 else call(CAST_FN[t], node)
    v = int(np.asarray(value).astype(t.dtype))
    node = ast.Constant(v) if v >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-v))
    return node if t == i64 else call(CAST_FN[t], node)


def _int_constant(x) -> bool:
    return isinstance(x, ast.Constant) and type(x.value) is int


# float64 arithmetic on two constants, done here as the compiled code would do it (Python's
# floats are IEEE binary64, rounded to nearest: the same bits); a division by zero is left to
# the compiled code (Python raises)
_FOLDED = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
           "/": lambda x, y: x / y if y != 0.0 else None}


def _folded(op, a, b, t):
    """The constant `a op b` when both are float constants of an f64 operation, else None."""
    if t != f64 or op not in _FOLDED or not (
            isinstance(a, ast.Constant) and type(a.value) is float and
            isinstance(b, ast.Constant) and type(b.value) is float):
        return None
    v = _FOLDED[op](a.value, b.value)
    if v is None or math.isnan(v) or math.isinf(v) or v == 0.0 and math.copysign(1.0, v) < 0:
        return None  # (as a name or an operation: an atom, as other constants, it is not)
    return ast.Constant(v)


def _atom(x) -> bool:
    return isinstance(x, (ast.Name, ast.Constant))


def _is_true(x) -> bool:
    return isinstance(x, ast.Constant) and x.value is True


class EmitAlgebra:
    """Emits statements into `self.out` (the block being built)."""

    def __init__(self):
        self.out: list = []
        self.counter = 0
        # the function generated code calls for a choice between two values computed already
        # (`pick`), where the target has one; None: a choice is a branch
        self.pick_call: str | None = None
        # name -> ast.FunctionDef of each separate function the code calls (`function`); the
        # driver puts them in the module and its backend compiles each as a callee
        self.functions: dict = {}

    def fresh(self, prefix="_t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def bind(self, value: ast.expr) -> ast.expr:
        if isinstance(value, (ast.Name, ast.Constant)):
            return value
        n = self.fresh()
        self.out.append(ast.Assign([store(n)], value))
        return name(n)

    def const(self, value, t):
        return self.bind(const(value, t))

    def binop(self, op, a, b, t):
        if op == "&" and t == bool_:  # True & x is x (folded constant comparisons)
            if _is_true(a):
                return b
            if _is_true(b):
                return a
        folded = _folded(op, a, b, t)
        if folded is not None:
            return folded
        e = ast.BinOp(a, _BINOPS[op](), b)
        if t == i32 or (t == bool_ and op not in ("&", "|", "^")):
            e = call(CAST_FN[t], e)  # Numba computes small ints in int64: wrap back
        return self.bind(e)

    def neg(self, a, t):
        e = ast.UnaryOp(ast.USub(), a)
        return self.bind(call("_i32", e) if t == i32 else e)

    def invert(self, a, t):
        e = ast.UnaryOp(ast.Invert(), a)
        return self.bind(call("_i32", e) if t == i32 else e)

    def not_(self, a):
        return self.bind(ast.UnaryOp(ast.Not(), a))

    def compare(self, op, a, b, t):
        if _int_constant(a) and _int_constant(b):  # exact: folded (a random draw's checks)
            return ast.Constant(bool({"<": a.value < b.value, "<=": a.value <= b.value,
                                      ">": a.value > b.value, ">=": a.value >= b.value,
                                      "==": a.value == b.value, "!=": a.value != b.value}[op]))
        return self.bind(ast.Compare(a, [_CMPOPS[op]()], [b]))

    def cast(self, a, src, dst):
        return self.bind(call(CAST_FN[dst], a))

    def select(self, c, a, b, t):
        if self.pick_call is not None and _atom(a) and _atom(b):  # computed already: one
            return self.pick(c, a, b)  # select instruction, no branch (`pick`)
        return self.bind(ast.IfExp(c, a, b))

    def function(self, what, key, compute, inputs):
        """`compute(algebra, inputs)` (hundreds of operations: `rs.svd`) emitted once per `key`
        as a module function `_fn_<key>` of the input atoms, called here: the row loop stays
        small (Numba's parallel-loop passes cost far more than linear in a loop body's size)
        and every kernel variant of the module shares it. Same operations, same bits."""
        fname = f"_fn_{key}"
        if fname not in self.functions:
            sub = copy.copy(self)
            sub.out, sub.counter = [], 0
            params = [f"_a{k}" for k in range(len(inputs))]
            res = compute(sub, [name(a) for a in params])
            sub.out.append(ast.Return(ast.Tuple(list(res), ast.Load())))
            self.functions[fname] = ast.FunctionDef(
                fname, ast.arguments([], [ast.arg(a) for a in params], None, [], [], None, []),
                sub.out, [], None, None)
        n_results = len(self.functions[fname].body[-1].value.elts)
        tup = self.bind(call(fname, *inputs))
        return [self.bind(ast.Subscript(tup, ast.Constant(k), ast.Load()))
                for k in range(n_results)]

    def repeat(self, count, state, step):
        """`step` (atoms -> the next atoms: the operations it emits) applied `count` times to
        `state`, as a loop whose body is one step's code over loop-carried locals: the same
        operations in the same order as `count` copies, 1/count of the code to compile (a 3x3
        SVD's Jacobi sweeps). Returns the final state's atoms."""
        carried = [self.fresh("_r") for _ in state]
        self.out.extend(ast.Assign([store(v)], value) for v, value in zip(carried, state))
        saved, self.out = self.out, []
        nxt = step([name(v) for v in carried])
        if len(nxt) != len(carried):
            raise AssertionError("a repeated step must return as many values as it takes")
        # a value that is itself a carried local (passed on to another's place) is read into
        # a temporary first: the carried locals are assigned after all of them are read
        held = {}
        for v in nxt:
            if isinstance(v, ast.Name) and v.id in carried and v.id not in held:
                held[v.id] = self.fresh()
                self.out.append(ast.Assign([store(held[v.id])], name(v.id)))
        body = self.out + [
            ast.Assign([store(c)], name(held[v.id]) if isinstance(v, ast.Name) and
                       v.id in held else v) for c, v in zip(carried, nxt)]
        self.out = saved
        self.out.append(ast.For(store(self.fresh("_k")), call("range", ast.Constant(count)),
                                body, []))
        return [name(v) for v in carried]

    def math(self, fname, args, t):
        """A call of math.<fname> (Numba lowers it to the C library or an LLVM intrinsic) or
        np.<fname>, as `builtin_table.MATH` says."""
        module = MATH[fname].lowered if fname in MATH else None
        if module is None:
            raise ValueError(f"no lowering for {fname}")
        return self.bind(call(f"{module}.{fname}", *args))

    def draw(self, fname, args):
        """A counter-based random draw: a call of `relsim.philox.<fname>` (register_jitable:
        compiled into the kernel), imported by generated modules as `_philox`."""
        return self.bind(call(f"_philox.{fname}", *args))

    def pick(self, c, a, b):
        """`a if c else b` of atoms computed already, with no branch (`pick_call`)."""
        return self.bind(call(self.pick_call, c, a, b))

    def speculable(self, statements) -> bool:
        """Whether `statements` (the sides of a choice, lowered) may run whatever the
        condition, so the choice is a `pick` instead of a branch: the target has a pick, they
        are few, and each assigns a fresh temporary (`fresh`: no other statement assigns it) a
        cheap operation that cannot fail (no division, check, or memory access but a read of
        the row's own field)."""
        return self.pick_call is not None and len(statements) <= SPECULATE_AT_MOST and all(
            isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
            and TEMPORARY.fullmatch(s.targets[0].id) and self._speculable(s.value)
            for s in statements)

    def _speculable(self, e) -> bool:
        if isinstance(e, (ast.Name, ast.Constant)):
            return True
        if isinstance(e, ast.BinOp):
            return isinstance(e.op, _SPECULABLE_OPS) and self._speculable(e.left) and \
                self._speculable(e.right)
        if isinstance(e, ast.UnaryOp):
            return isinstance(e.op, _SPECULABLE_OPS) and self._speculable(e.operand)
        if isinstance(e, ast.Compare):
            return self._speculable(e.left) and all(map(self._speculable, e.comparators))
        if isinstance(e, ast.Call):
            return dotted(e.func) in (*_SPECULABLE_CALLS, self.pick_call) and \
                not e.keywords and all(map(self._speculable, e.args))
        return _centred_read(e)


def _centred_read(e) -> bool:
    """Whether `e` reads a field at the row being run (``_fieldK[_u64(_row)]``, with constant
    components after it): in bounds wherever the row is."""
    if not (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name)
            and e.value.id.startswith("_field")):
        return False
    first, *rest = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
    return isinstance(first, ast.Call) and dotted(first.func) == "_u64" and \
        [dotted(a) for a in first.args] == [ROW] and \
        all(isinstance(i, ast.Constant) and type(i.value) is int for i in rest)


def dotted(e) -> str | None:
    """The name `e` is (``f`` or ``module.f``), else None."""
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name):
        return f"{e.value.id}.{e.attr}"
    return None


def functions_block(alg, more=()) -> list:
    """The module statements of the separate functions `alg` emitted (`EmitAlgebra.function`)
    and the functions `more` (a backend's own callees), and `_FUNCTIONS`, their names, by which
    a backend compiles each as a callee."""
    funcs = list(alg.functions.values()) + list(more)
    names = ast.Tuple([ast.Constant(f.name) for f in funcs], ast.Load())
    return funcs + [ast.Assign([store("_FUNCTIONS")], names)]


def unparse(module: ast.Module) -> str:
    """`ast.unparse(module)`, faster when statements are shared: the row body of a kernel sits in
    several functions (serial, parallel, over a subset, ...) as the same statement objects, so
    each statement's text is produced once per indentation and copied after that (identical
    output; unparsing was ~0.3 s of a warm run of a large program)."""
    base = getattr(ast, "_Unparser", None)
    if base is None:  # not CPython's unparser: the plain one
        return ast.unparse(module)
    return _memo_unparser(base)().visit(module)


def _memo_unparser(base):
    class MemoUnparser(base):
        def __init__(self):
            super().__init__()
            self._memo = {}

        def traverse(self, node):
            if not isinstance(node, ast.stmt):
                return super().traverse(node)
            key = (id(node), self._indent, bool(self._source))
            text = self._memo.get(key)
            if text is not None:
                self._source.extend(text)
                return None
            start = len(self._source)
            super().traverse(node)
            self._memo[key] = self._source[start:]
            return None

    return MemoUnparser


def unsigned(index: ast.expr) -> ast.expr:
    """`index` (never negative) as an unsigned integer, for a subscript: Numba then emits no
    negative-index wraparound (a test and a branch per access, which also stops LLVM
    vectorising a row loop, as the lanes of a Global sum are)."""
    return index if isinstance(index, ast.Call) and dotted(index.func) == "_u64" else \
        call("_u64", index)
