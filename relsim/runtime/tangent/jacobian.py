"""The Jacobian J of residual kernels, and the diagonal of J^T J (what Opt computes for its
Jacobi preconditioner: per unknown value u_j, the sum over the residuals r_k of
(dr_k / du_j)^2), by kernels generated from the residual kernels.

A residual kernel reads the unknowns at *sites*: reads of an unknown field through a key made
of the row's own key, key fields and grid offsets (no locals), or reads of an unknown Global.
For each site and each component of its value (`sites`), a kernel over the residual kernel's
rows (`Diagonal`, a tangent kernel seeded with the unit vector at that site alone) computes the
derivative of every residual value the row stores with respect to the site, sums their squares
(times the residual field's weight) in a local, and adds it into the site's row of the
unknown's diagonal field (``<f>__diag``; for a Global, a Global). It stores nothing else.
`Entries` is the same kernel storing, instead, each residual's derivative with respect to the
site in a field of the residual's row (``<r>__J<tag>``) and the row the site's key names
(``<r>__Jcol<tag>``, from the unknown's relation's row-number field): the entries of J, which
the host assembles (two sites reading one value in a row add up there: J exactly).

Two sites that read the same unknown value in one row (``e.head.u`` and ``e.tail.u`` of an edge
from a vertex to itself) are squared apart, so the cross term is missing there: the result is
then a diagonal of a nearby matrix, which is what a preconditioner needs. What the generator
cannot treat this way (a site inside a loop or keyed by a local, a residual reduced through
keys or stored in a loop body twice, a kernel writing other float fields) raises `Unsupported`:
the caller goes without.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from ...types import VecType, f64
from .. import ir
from ..adjoint.records import is_diff, is_vec
from .expressions import zero
from .generate import Tangent


class Unsupported(Exception):
    """This kernel's diagonal cannot be generated (the message says why)."""


DIAGONAL = "__diag"  # an unknown field's diagonal field: <name>__diag


@dataclass
class Site:
    key: object  # typed key expression (None: a Global)
    target: object  # the unknown field or Global
    components: int  # 1 for a scalar, n for a vec(n)
    text: str  # the key's form, to merge reads of one value


def sites(analysed, unknowns) -> list:
    """The sites at which kernel `analysed` reads `unknowns` (ids of fields and Globals)."""
    found: dict = {}

    def visit(body, depth):
        for s in body:
            for c in s.children():
                if not isinstance(c, ir.Expr):
                    continue
                for e in c.walk():
                    target = e.field if isinstance(e, ir.FieldRead) else \
                        e.ref if isinstance(e, ir.GlobalRead) else None
                    if target is None or id(target) not in unknowns:
                        continue
                    if depth:
                        raise Unsupported(f"{_name(target)} is read inside a loop")
                    key = getattr(e, "key", None)
                    if key is not None and any(isinstance(x, ir.Local) for x in key.walk()):
                        raise Unsupported(f"{_name(target)} is read through a key in a local")
                    t = target.type
                    if not (t == f64 or is_vec(t)):
                        raise Unsupported(f"{_name(target)} is not an f64 scalar or vector")
                    text = repr(form(key)) if key is not None else ""
                    found.setdefault((text, id(target)), Site(key, target, getattr(t, "n", 1),
                                                              text))
            for name in ("body", "orelse"):
                sub = getattr(s, name, None)
                if isinstance(sub, tuple):
                    loop = isinstance(s, (ir.ForRange, ir.ForEach, ir.ForGroup, ir.While))
                    visit(sub, depth + loop)

    visit(analysed.body, 0)
    return list(found.values())


def form(e):
    """Expression `e` without its source locations and types: reads of one value at two places
    of a kernel have one form."""
    if isinstance(e, ir.Node):
        return (type(e).__name__,) + tuple(
            form(getattr(e, f.name)) for f in fields(e) if f.name not in ("loc", "type"))
    if isinstance(e, tuple):
        return tuple(form(x) for x in e)
    if isinstance(e, (int, float, str, bool)) or e is None:
        return e
    return ("object", id(e))


def _name(t) -> str:
    return getattr(t, "qualname", None) or f"Global {getattr(t, 'name', '')!r}"


class Diagonal(Tangent):
    """The kernel body adding, for `site` and `component`, sum_k w_k (dr_k / d site)^2 into the
    site's diagonal: `residuals` maps id(field) -> its weight (a float); `diagonal_global(g, c)`
    is the Global holding component c of unknown Global g's diagonal."""

    ACC = "_diag_acc"

    def __init__(self, analysed, site, component, residuals, diagonal_global):
        super().__init__(analysed, lambda t: False, lambda g: None)
        self.site, self.component = site, component
        self.weights = residuals
        self.diagonal_global = diagonal_global
        self.read_fields = {id(e.field) for s in ir.walk_stmts(analysed.body)
                            for c in s.children() if isinstance(c, ir.Expr)
                            for e in c.walk() if isinstance(e, ir.FieldRead)}
        if self.read_fields & set(residuals):
            raise Unsupported("the kernel reads a residual field it stores")

    def refuse(self, what, loc):
        return Unsupported(what)

    def _unit(self, t, loc):
        if isinstance(t, VecType):
            return ir.Cast(loc, ir.TupleExpr(loc, tuple(
                ir.Const(loc, 1.0 if i == self.component else 0.0) for i in range(t.n))),
                type=t)
        return ir.Const(loc, 1.0)

    def field_tangent(self, field):
        return None

    def global_tangent(self, g):
        return None

    def t_FieldRead(self, e):
        s = self.site
        if e.field is s.target and s.key is not None and repr(form(e.key)) == s.text:
            return self._unit(e.field.type, e.loc)
        return None

    def t_GlobalRead(self, e):
        return self._unit(e.ref.type, e.loc) if e.ref is self.site.target else None

    def body(self) -> tuple:
        loc = self.a.body[0].loc
        acc = ir.Local(loc, self.ACC)
        s = self.site
        if s.key is None:
            target = ir.GlobalRead(loc, self.diagonal_global(s.target, self.component))
        else:
            target = ir.Attr(loc, self.primal(s.key), s.target.name + DIAGONAL)
            if s.components > 1:
                target = ir.Index(loc, target, (ir.Const(loc, self.component),))
        return (ir.Assign(loc, self.ACC, ir.Const(loc, 0.0)),) + \
            tuple(self.block(self.a.body)) + (ir.Reduce(loc, target, "+", acc),)

    # -- statements: nothing is stored but the sum of squares --------------------------------
    def s_Print(self, s):
        return []

    def use(self, s, d) -> list:
        """What the derivative `d` (None: 0) of residual store `s` adds: w d^2 to the sum."""
        if d is None:
            return []
        loc = s.loc
        w = self.weights[id(s.field)]
        square = ir.Call(loc, "dot", (d, d)) if is_vec(s.value.type) else \
            ir.BinOp(loc, "*", d, d)
        if w != 1.0:
            square = ir.BinOp(loc, "*", ir.Const(loc, float(w)), square)
        return [ir.Assign(loc, self.ACC, ir.BinOp(loc, "+", ir.Local(loc, self.ACC), square))]

    def s_FieldStore(self, s):
        w = self.weights.get(id(s.field))
        if w is None:
            if is_diff(s.field.type) or s.field.type.is_float and id(s.field) in self.read_fields:
                raise Unsupported(f"the kernel stores {s.field.qualname}, not a residual")
            return []
        if not isinstance(s.key, ir.Centred) or s.index:
            raise Unsupported(f"residual {s.field.qualname} is stored through a key or in part")
        if self.depth:
            raise Unsupported(f"residual {s.field.qualname} is stored inside a loop")
        return self.use(s, self.tangent(s.value))

    def s_FieldReduce(self, s):
        if id(s.field) in self.weights:
            raise Unsupported(f"residual {s.field.qualname} is reduced into")
        if is_diff(s.field.type):
            raise Unsupported(f"the kernel reduces into {s.field.qualname}, not a residual")
        return []

    def s_GlobalReduce(self, s):
        return []  # (a diagonal kernel writes nothing of the program's)


ROW = "__rowno"  # an unknown's relation's row-number field (i64): the column of J it names


def entry_names(residual, tag: str) -> tuple:
    """(the field of `residual`'s relation holding a site's derivatives, the field holding
    the row of the unknown that site reads)."""
    return f"{residual.name}__J{tag}", f"{residual.name}__Jcol{tag}"


class Entries(Diagonal):
    """The kernel body storing, for `site` and `component` (named `tag`), each residual's
    derivative with respect to the site (0 where none flows) and the site's row (`ROW` of the
    unknown's relation) in fields of the residual's row (`entry_names`)."""

    def __init__(self, analysed, site, component, residuals, tag):
        super().__init__(analysed, site, component, residuals, None)
        self.tag = tag

    def body(self) -> tuple:
        return tuple(self.block(self.a.body))

    def use(self, s, d) -> list:
        loc, me = s.loc, ir.Centred(s.loc, self.a.param)
        value_name, col_name = entry_names(s.field, self.tag)
        out = [ir.Store(loc, ir.Attr(loc, me, value_name),
                        d if d is not None else zero(s.value.type, loc))]
        if self.site.key is not None:
            out.append(ir.Store(loc, ir.Attr(loc, me, col_name),
                                ir.Attr(loc, self.primal(self.site.key), ROW)))
        return out
