"""Access analysis: which fields and globals a typed kernel touches, how, and through which key
paths. The AccessSummary is backend-neutral: phase checking, lowering, and (later) halo inference
read it."""
from __future__ import annotations

from dataclasses import dataclass

from .. import ir


@dataclass(frozen=True)
class Access:
    target: object  # Field or Global
    mode: str  # read / write / reduce
    op: str | None  # reduction operator
    centred: bool  # through the kernel's own key (only meaningful for fields)
    path: str  # the key path as written, e.g. "e.head.flux"
    loc: ir.Loc
    offsets: tuple | None = None  # grid offsets when reached through c(dx, dy[, dz])


@dataclass(frozen=True)
class AccessSummary:
    relation: object
    accesses: tuple

    def for_target(self, target) -> list:
        return [a for a in self.accesses if a.target is target]

    def targets(self) -> list:
        seen, out = set(), []
        for a in self.accesses:
            if id(a.target) not in seen:
                seen.add(id(a.target))
                out.append(a.target)
        return out

    def stencil(self) -> list:
        """Sorted grid offsets the kernel reaches from its own key (`c(1, 0)` -> (1, 0)): the
        ghost width a partitioned grid needs for this kernel."""
        return sorted({a.offsets for a in self.accesses if a.offsets is not None})

    def render(self) -> str:
        lines = []
        for t in self.targets():
            name = getattr(t, "qualname", None) or _global_label(t)
            acc = self.for_target(t)
            modes = sorted({a.mode + (f"({a.op})" if a.op else "") for a in acc})
            where = "centred" if all(a.centred for a in acc) else "through keys"
            paths = sorted({a.path for a in acc})
            lines.append(f"  {name}: {', '.join(modes)}; {where}; via {', '.join(paths)}")
        if self.stencil():
            lines.append(f"  stencil (offsets from the kernel's own key): {self.stencil()}")
        return "\n".join(lines)


def summarize(relation, body: tuple) -> AccessSummary:
    out: list = []
    for s in ir.walk_stmts(body):
        if isinstance(s, ir.FieldStore):
            out.append(Access(s.field, "write", None, _is_centred(s.key), _path(s.key, s.field),
                              s.loc))
        elif isinstance(s, ir.FieldReduce):
            out.append(Access(s.field, "reduce", s.op, _is_centred(s.key),
                              _path(s.key, s.field), s.loc, _offsets(s.key)))
        elif isinstance(s, ir.GlobalReduce):
            out.append(Access(s.ref, "reduce", s.op, True, _global_label(s.ref), s.loc))
        for e in stmt_exprs(s):
            for node in e.walk():
                if isinstance(node, ir.FieldRead):
                    out.append(Access(node.field, "read", None, _is_centred(node.key),
                                      _path(node.key, node.field), node.loc,
                                      _offsets(node.key)))
                elif isinstance(node, ir.GlobalRead):
                    out.append(Access(node.ref, "read", None, True, _global_label(node.ref),
                                      node.loc))
                elif isinstance(node, ir.GroupRead):
                    kf = node.grouping.key_field
                    out.append(Access(kf, "read", None, False,
                                      f"{ir.show_expr(node.key)}.{node.grouping.name}", node.loc))
    return AccessSummary(relation, tuple(out))


def _global_label(g) -> str:
    return f"Global {g.name}" if g.name else "Global"


def stmt_exprs(s):
    """Expressions a statement evaluates (not the nested statement bodies)."""
    if isinstance(s, ir.Insert):
        return s.values
    if isinstance(s, ir.Delete):
        return (s.key,)
    if isinstance(s, ir.Print):
        return tuple(x for x in s.items if isinstance(x, ir.Expr))
    if isinstance(s, (ir.FieldStore, ir.FieldReduce)):
        return (s.key, *s.index, s.value)
    if isinstance(s, (ir.Assign, ir.GlobalReduce)):
        return (s.value,)
    if isinstance(s, ir.AssignIndex):
        return (*s.index, s.value)
    if isinstance(s, (ir.If, ir.While)):
        return (s.test,)
    if isinstance(s, ir.ForRange):
        return (s.start, s.stop, s.step)
    if isinstance(s, ir.ForEach):
        return (s.seq,)
    if isinstance(s, ir.ForGroup):
        return (s.group,)
    return ()


def _offsets(key: ir.Expr):
    """The grid offsets of `c(dx, dy)` applied to the kernel's own key, else None."""
    if isinstance(key, ir.Affine) and isinstance(key.key, ir.Centred):
        return key.offsets
    return None


def _is_centred(key: ir.Expr) -> bool:
    return isinstance(key, ir.Centred)


def _path(key, field) -> str:
    return f"{key_text(key)}.{field.name}"


def key_text(e) -> str:
    """A key expression as the user wrote it (no types): e.head, t.v[2], k."""
    if isinstance(e, (ir.Centred, ir.Local)):
        return e.name.split("_", 2)[-1] if e.name.startswith("_") else e.name
    if isinstance(e, ir.FieldRead):
        return f"{key_text(e.key)}.{e.field.name}"
    if isinstance(e, ir.GroupRead):
        return f"{key_text(e.key)}.{e.grouping.name}"
    if isinstance(e, ir.Index):
        idx = ", ".join(str(i.value) if isinstance(i, ir.Const) else key_text(i)
                        for i in e.index)
        return f"{key_text(e.base)}[{idx}]"
    if isinstance(e, ir.Cast):
        return key_text(e.value)
    if isinstance(e, ir.Affine):
        return f"{key_text(e.key)}({', '.join(map(str, e.offsets))})"
    if isinstance(e, ir.RowKey):
        return f"rs.at({e.relation.name}, ...)"
    if isinstance(e, ir.Shifted):
        return f"{key_text(e.key)}({', '.join('...' for _ in e.offsets)})"
    return "<expr>"
