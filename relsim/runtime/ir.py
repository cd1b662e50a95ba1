"""The kernel IR: small immutable nodes, each with the user's source location.

The frontend builds untyped nodes (``type`` is None); the type checker returns a new tree with
every expression's ``type`` set and implicit conversions made explicit as ``Cast`` nodes.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any


@dataclass(frozen=True)
class Loc:
    filename: str
    line: int
    col: int
    end_col: int
    source_line: str
    func: str = ""

    def render(self) -> str:
        text = self.source_line.rstrip("\n")
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        width = max(1, min(self.end_col, len(text)) - self.col)
        caret = " " * (self.col - indent) + "^" * width
        where = f', in {self.func}' if self.func else ""
        return f'  File "{self.filename}", line {self.line}{where}\n    {stripped}\n    {caret}'

    def short(self) -> str:
        return f"{self.filename}:{self.line}"


NOLOC = Loc("<relsim>", 0, 0, 1, "")


class Node:
    loc: Loc

    def children(self):
        names = _CHILD_FIELDS.get(type(self))
        if names is None:
            names = _child_fields(type(self))
        for n in names:
            v = getattr(self, n)
            if isinstance(v, Node):
                yield v
            elif isinstance(v, tuple):
                for x in v:
                    if isinstance(x, Node):
                        yield x

    def walk(self):
        """This node and every node below it, depth first, each before its children (in
        field order); iterative: analysing a large kernel walks its IR several times."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            kids = list(node.children())
            kids.reverse()
            stack.extend(kids)


# the fields that may hold nodes, per node class (a Loc and a type never do)
_CHILD_FIELDS: dict = {}


def _child_fields(cls) -> tuple:
    names = _CHILD_FIELDS[cls] = tuple(f.name for f in fields(cls)
                                       if f.name not in ("loc", "type"))
    return names


def typed(e, t):
    """`e` with type `t`: ``dataclasses.replace(e, type=t)`` without re-running the
    constructor (the type checker types every expression this way)."""
    new = object.__new__(type(e))
    new.__dict__.update(e.__dict__)
    new.__dict__["type"] = t
    return new


def _node(cls):
    return dataclass(frozen=True, eq=False, repr=False)(cls)


# ---------------------------------------------------------------- expressions
@_node
class Expr(Node):
    loc: Loc
    type: Any = field(default=None, kw_only=True)


@_node
class Const(Expr):
    value: Any
    weak: bool = False  # a Python literal: adopts the other operand's type


@_node
class Local(Expr):
    name: str


@_node
class Centred(Expr):
    """The key of the row the kernel runs for (the kernel's parameter)."""
    name: str


@_node
class GlobalRead(Expr):
    ref: Any  # relsim Global


@_node
class Attr(Expr):
    """Untyped `obj.name`; the type checker turns it into FieldRead or GroupRead."""
    obj: Expr
    name: str


@_node
class FieldRead(Expr):
    key: Expr
    field: Any  # relsim Field


@_node
class GroupRead(Expr):
    key: Expr
    grouping: Any  # relsim Grouping


@_node
class Affine(Expr):
    """`c(1, 0)`: the grid neighbour of key `key` at integer `offsets` (typed: ints)."""
    key: Expr
    offsets: tuple


@_node
class RowKey(Expr):
    """`rs.at(R, i)`: the key of row `index` (an i64 expression) of `relation`, checked to lie
    in it when the kernel runs; only read through, like `Shifted`."""
    relation: Any
    index: Expr


@_node
class Shifted(Expr):
    """`c(di, dj)` with offsets computed when the kernel runs (typed: i64 expressions): the grid
    neighbour of key `key` under the grid's boundary rule (periodic axes wrap; leaving a bounded
    axis is an error). Only read through (the phase rules treat it as any key read)."""
    key: Expr
    offsets: tuple


@_node
class Index(Expr):
    base: Expr
    index: tuple  # of Expr (one, or two for a matrix entry)


@_node
class FullSlice(Expr):
    """`:` in an untyped index: `m[:, j]` (a column) or `m[i, :]` (a row); the type checker
    rewrites it (a column is a row of the transpose)."""


@_node
class BinOp(Expr):
    op: str  # + - * / // % ** @ & | ^ << >>
    left: Expr
    right: Expr


@_node
class UnaryOp(Expr):
    op: str  # - + not ~
    operand: Expr


@_node
class Compare(Expr):
    op: str  # < <= > >= == !=
    left: Expr
    right: Expr


@_node
class BoolOp(Expr):
    op: str  # and / or (short-circuit)
    values: tuple


@_node
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@_node
class Call(Expr):
    func: str  # builtin name
    args: tuple


@_node
class Cast(Expr):
    value: Expr  # .type is the target type


@_node
class TupleExpr(Expr):
    """A vector (or, nested, a matrix) value built from components."""
    elts: tuple


# ---------------------------------------------------------------- statements
@_node
class Stmt(Node):
    loc: Loc


@_node
class Assign(Stmt):
    name: str
    value: Expr


@_node
class AssignIndex(Stmt):
    """`a[i] = x` on a local vector / matrix."""
    name: str
    index: tuple
    value: Expr


@_node
class Store(Stmt):
    """Untyped `<expr>.name = value` or `<expr>.name[i] = value`."""
    target: Expr  # Attr or Index(Attr)
    value: Expr


@_node
class FieldStore(Stmt):
    key: Expr
    field: Any
    index: tuple  # () for the whole value
    value: Expr


@_node
class Reduce(Stmt):
    """Untyped `target op= value` where the target is a field path or a captured Global."""
    target: Expr
    op: str
    value: Expr


@_node
class FieldReduce(Stmt):
    key: Expr
    field: Any
    index: tuple
    op: str  # + * min max and or
    value: Expr


@_node
class GlobalReduce(Stmt):
    ref: Any
    op: str  # + * min max and or argmin argmax
    value: Expr


@_node
class Delete(Stmt):
    """`rs.delete(p)`: remove the kernel's own row (applied after the kernel)."""
    key: Expr


@_node
class Insert(Stmt):
    """`rs.insert(P, x=..., v=...)`: append a row to elastic relation P after the kernel."""
    relation: Any
    names: tuple
    values: tuple


@_node
class If(Stmt):
    test: Expr
    body: tuple
    orelse: tuple


@_node
class While(Stmt):
    test: Expr
    body: tuple


@_node
class ForRange(Stmt):
    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple


@_node
class ForEach(Stmt):
    """`for k in <key vector or value vector>` (fixed length)."""
    var: str
    seq: Expr
    body: tuple


@_node
class ForGroup(Stmt):
    """`for r in key.<grouping>`: the rows pointing at `key`, ascending."""
    var: str
    group: Expr  # GroupRead
    body: tuple


@_node
class Break(Stmt):
    pass


@_node
class Continue(Stmt):
    pass


@_node
class Return(Stmt):
    """Early exit from the kernel for this row."""


@_node
class Print(Stmt):
    """`print(...)` in a kernel: `items` are literal strings and (typed) values, in order; one
    line per row that reaches it, written after the launch in row order (`host/prints.py`)."""
    items: tuple


@_node
class Unpack(Stmt):
    """`a, b = v`: the frontend assigned v to local `name` and each target from `name[k]`;
    this checks that v has exactly `count` components (typed away into a Pass)."""
    name: str
    count: int


@_node
class Pass(Stmt):
    pass


def with_type(node: Expr, t) -> Expr:
    return replace(node, type=t)


def walk_stmts(body):
    """Every statement in `body`, nested ones included, in program order."""
    for s in body:
        yield s
        for name in ("body", "orelse"):
            sub = getattr(s, name, None)
            if isinstance(sub, tuple):
                yield from walk_stmts(sub)


def dump(body, indent: int = 0) -> str:
    """A readable listing of (typed) IR statements."""
    pad = "  " * indent
    out = []
    for s in body:
        head = f"{pad}{type(s).__name__}"
        attrs = []
        for f in fields(s):
            if f.name in ("loc", "body", "orelse"):
                continue
            attrs.append(f"{f.name}={_show(getattr(s, f.name))}")
        out.append(f"{head}({', '.join(attrs)})  # line {s.loc.line}")
        for name in ("body", "orelse"):
            sub = getattr(s, name, None)
            if isinstance(sub, tuple) and sub:
                out.append(f"{pad}  {name}:")
                out.append(dump(sub, indent + 2))
    return "\n".join(out)


def _show(v) -> str:
    if isinstance(v, Expr):
        return show_expr(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(_show(x) for x in v) + ")"
    if hasattr(v, "qualname"):
        return v.qualname
    return repr(v)


def show_expr(e: Expr) -> str:
    t = f":{e.type!r}" if e.type is not None else ""
    if isinstance(e, Const):
        return f"{e.value!r}{t}"
    if isinstance(e, (Local, Centred)):
        return f"{e.name}{t}"
    if isinstance(e, GlobalRead):
        return f"global{t}"
    if isinstance(e, FieldRead):
        return f"{show_expr(e.key)}.{e.field.name}{t}"
    if isinstance(e, GroupRead):
        return f"{show_expr(e.key)}.{e.grouping.name}"
    if isinstance(e, Attr):
        return f"{show_expr(e.obj)}.{e.name}"
    if isinstance(e, Index):
        return f"{show_expr(e.base)}[{', '.join(show_expr(i) for i in e.index)}]{t}"
    if isinstance(e, Affine):
        return f"{show_expr(e.key)}({', '.join(map(str, e.offsets))})"
    if isinstance(e, Shifted):
        return f"{show_expr(e.key)}({', '.join(show_expr(o) for o in e.offsets)})"
    if isinstance(e, (BinOp, Compare)):
        return f"({show_expr(e.left)} {e.op} {show_expr(e.right)}){t}"
    if isinstance(e, UnaryOp):
        return f"({e.op} {show_expr(e.operand)}){t}"
    if isinstance(e, BoolOp):
        return "(" + f" {e.op} ".join(show_expr(v) for v in e.values) + ")"
    if isinstance(e, IfExp):
        return f"({show_expr(e.body)} if {show_expr(e.test)} else {show_expr(e.orelse)})"
    if isinstance(e, Call):
        return f"{e.func}({', '.join(show_expr(a) for a in e.args)}){t}"
    if isinstance(e, Cast):
        return f"{e.type!r}({show_expr(e.value)})"
    if isinstance(e, TupleExpr):
        return "(" + ", ".join(show_expr(x) for x in e.elts) + f"){t}"
    if isinstance(e, FullSlice):
        return ":"
    return type(e).__name__
