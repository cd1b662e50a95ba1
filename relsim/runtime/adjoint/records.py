"""The adjoint pass's records of a kernel row's replay (in forward order, for the reverse
sweep), its name table, and small helpers over the IR (`generate.py`)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...types import MatType, VecType, f64
from .. import ir

# the int64 field (each row's own number) the tape adds to a relation whose launches pick rows
ROW_FIELD = "row__tape"


def is_float(t) -> bool:
    return t == f64


def is_vec(t) -> bool:
    """An f64 vector (differentiated component by component)."""
    return isinstance(t, VecType) and t.elem == f64


def is_mat(t) -> bool:
    """An f64 matrix (differentiated entry by entry)."""
    return isinstance(t, MatType) and t.elem == f64


def is_diff(t) -> bool:
    """A type whose values carry derivatives: f64 scalars, vectors and matrices."""
    return is_float(t) or is_vec(t) or is_mat(t)


def grad_name(f) -> str:
    """The name of field `f`'s adjoint field on its relation."""
    return f.grad_name


# records of the replay, in forward order, for the reverse sweep
@dataclass
class Def:  # name = op(args); args: ("local", name) | ("const", Const) | ("value", expr)
    name: str
    op: str
    args: tuple
    loc: object


@dataclass
class Load:  # name = a float field (key, field) or Global (None, global) read; a vector's:
    name: object  # its components' names (a tuple)
    key: object
    target: object
    loc: object


@dataclass
class Sink:  # `key.field += atom` or `global += atom`: atom gets the target's adjoint
    key: object
    target: object
    atom: tuple  # a scalar atom, or ("vec", [atoms])
    loc: object
    index: tuple = ()  # a component of a vector field


@dataclass
class Pick:  # `g = min(g, atom)` (max, argmin, argmax): the chosen row's atom gets g's adjoint
    glob: object
    atom: tuple
    loc: object


@dataclass
class Decomp:  # parts = func(matrix rows): eigh, svd or polar (`decompositions.py`)
    func: str
    rows: list  # the matrix's entries (atoms), row by row
    parts: tuple  # each part's local names: a vector's tuple, a matrix's tuple of rows
    svd: tuple | None  # polar: U, S, V read too
    loc: object


@dataclass
class Accum:  # acc = acc + sign * atom, in a loop
    acc: str
    atom: tuple
    sign: float
    loc: object


@dataclass
class Loop:
    header: object  # body -> the loop statement
    body: list  # the replay of one iteration
    records: list
    own: list  # the float locals an iteration assigns
    loc: object


@dataclass
class Keep:  # the row's field `field` = the adjoint of accumulator `names` (`transpose.py`),
    field: str  # or with `value`, the value of local `names`
    names: object  # the local, or a vector's component locals (a tuple; a matrix's: of rows)
    loc: object
    value: bool = False


@dataclass
class Branch:
    cond: str
    body: list
    orelse: list
    merges: list  # (merged, from body, from orelse) float locals
    loc: object


@dataclass
class Block:
    stmts: list = field(default_factory=list)
    records: list = field(default_factory=list)



@dataclass
class Env:
    version: dict  # user local -> replay local
    shadow: dict  # field -> replay local holding its value at the row's own key
    accumulating: dict = field(default_factory=dict)  # user local -> its loop accumulator

    def copy(self):
        return Env(dict(self.version), dict(self.shadow), dict(self.accumulating))


def adj_name(name: str) -> str:
    return f"{name}_d"


def zero(t, loc):
    if t.name in ("f64", "i64", "bool"):
        return ir.Const(loc, {"f64": 0.0, "i64": 0, "bool": False}[t.name])
    return ir.Cast(loc, ir.Const(loc, 0), type=t)  # another integer type


def fold_expr(op, a, b, loc):
    if op in ("+", "*"):
        return ir.BinOp(loc, op, a, b)
    if op in ("min", "max"):
        return ir.Call(loc, op, (a, b))
    return ir.BoolOp(loc, op, (a, b))


def without(stmts, ids) -> list:
    """`stmts` without the statements whose id() is in `ids`, also inside branches and loops."""
    out = []
    for st in stmts:
        if id(st) in ids:
            continue
        if isinstance(st, ir.If):
            st = ir.If(st.loc, st.test, tuple(without(st.body, ids)) or (ir.Pass(st.loc),),
                       tuple(without(st.orelse, ids)))
        elif isinstance(st, (ir.ForRange, ir.ForEach, ir.While)):
            st = replace(st, body=tuple(without(st.body, ids)) or (ir.Pass(st.loc),))
        out.append(st)
    return out


def safe_key(key) -> bool:
    """Whether reading through untyped `key` cannot fail: the row's own key, key fields, key
    vectors at constant entries (and locals holding keys)."""
    return all(isinstance(n, (ir.Centred, ir.Attr, ir.Local, ir.Const)) or
               isinstance(n, ir.Index) and all(isinstance(i, ir.Const) for i in n.index)
               for n in key.walk())


def without_reads_through(records, var) -> list:
    """`records` without the float reads through local `var` (also inside branches and
    loops)."""
    out = []
    for r in records:
        if isinstance(r, Load) and isinstance(r.key, ir.Local) and r.key.name == var:
            continue
        if isinstance(r, Branch):
            r = replace(r, body=without_reads_through(r.body, var),
                        orelse=without_reads_through(r.orelse, var))
        elif isinstance(r, Loop):
            r = replace(r, records=without_reads_through(r.records, var))
        out.append(r)
    return out


def reads_through_keys(records) -> bool:
    """Whether `records` (also inside branches and loops) read a float field."""
    for r in records:
        if isinstance(r, Load) and r.key is not None:
            return True
        inner = r.body + r.orelse if isinstance(r, Branch) else \
            r.records if isinstance(r, Loop) else []
        if reads_through_keys(inner):
            return True
    return False


def assigned(stmts):
    """The locals `stmts` assign, nested statements included, in order."""
    for st in ir.walk_stmts(stmts):
        if isinstance(st, ir.Assign):
            yield st.name


def is_key_vector(e) -> bool:
    return type(getattr(e, "type", None)).__name__.startswith("KeyVec")
