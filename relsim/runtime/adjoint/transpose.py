"""Grouping loops that read their rows' float fields, differentiated by transposing the loop.

Row p's loop ``for q in p.cell(o).particles`` (cell lists: the rows of p's cell and of its
neighbours, the offsets o from enclosing constant loops) reads q's fields. The adjoint of such a
read is a reduction into q's adjoint field from inside a loop of run-time length, which relsim
cannot run. But the pairs the loop visits are those with ``cell(q) == cell(p) + o``: when the
offsets come in opposite pairs (o as often as -o: the 27 neighbour cells, or the cell itself),
the same loop header run from q visits exactly the rows p whose loops visit q, once for each
time they do. So the reverse of such a launch is two kernels over the relation:

* the adjoint kernel (row p) reverses everything else as before (p's reads, Globals) and keeps
  the adjoint of each of the loop's accumulators, the same in every iteration (`loops.py`), in a
  field of p's row, and the value of each local from before the loop that the loop reads (`Keep`
  records: stored after the outermost enclosing loop);
* the *transposed* kernel (row q) runs the loop's header from q and, for each partner p, p's
  path to the loop (its branches' tests) and the loop's body with the roles exchanged, each
  accumulation ``acc += e`` becoming ``sum += kept(p) . e`` (an integer count is left out) and
  a local from before the loop p's kept value; differentiated with respect to q's own reads
  only (everything else is a constant there), it adds to q's adjoint fields what the loops of
  its partners read from q.

Both are ordinary kernels (reductions at the row's own key only): deterministic on every target
and thread count, and under MPI the kept fields are exchanged like any field read through keys.
The transposed kernel runs the loop's header from every row, also from rows a branch keeps out
of the loop in the forward kernel: on a bounded grid, their shifted cells must lie in it too
(else relsim's error for a neighbour outside the grid, at the loop's line). What does not fit
is refused at its line (`plan`).
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, fields, replace

from ...types import MatType, ScalarType, VecType, f64
from .. import ir
from ..analysis.access import stmt_exprs
from .records import assigned

PARTNER = "_tp_partner"  # the transposed kernel's loop variable: the row whose loop it replays
SUM = "_tp_sum"  # the weighted sum the transposed kernel differentiates
SLOT = "_tp_slot"  # the transposed kernel's entry of its key vector naming the partner
MAX_OFFSETS = 100_000  # enclosing iterations enumerated to check the offsets' symmetry


@dataclass(frozen=True)
class Transposition:
    loop: object  # the typed ForGroup
    path: tuple  # (typed statement, branch) enclosing it, outermost first; branch None: a loop
    kept: tuple  # (accumulator, its type, the field of the row keeping its adjoint)
    over: object  # the relation the transposed kernel runs over: the grouped rows'
    gather: bool  # the loop is over the row's own group (else over a cell near the row's)
    # (local from before the loop it reads, its type, the field keeping its value, its replay
    # name(s)): the partner's values, read by the transposed kernel
    values: tuple = ()
    counts: tuple = ()  # its integer accumulators (left out of the transposed kernel)


def plan(adj, s, path, carried, env) -> Transposition:
    """The transposition of typed grouping loop `s` of `adj`'s kernel (enclosed by `path`,
    accumulating into `carried`), or a GradientError at the line that keeps it from one.

    Two loops are transposed: over the row's own group, ``for e in v.edges`` (each grouped row
    e finds the rows whose groups hold it through its key field: each of its keys that is one),
    and over the group of a cell near the row's, ``for q in p.cell(o).particles``, the grouped
    rows the kernel's own (cell lists, as above)."""
    g = s.group.grouping
    rel = adj.a.relation
    gather = isinstance(s.group.key, ir.Centred)
    base, offsets = s.group.key, ()
    if isinstance(base, (ir.Affine, ir.Shifted)):
        base, offsets = base.key, base.offsets
    cells = isinstance(base, ir.FieldRead) and isinstance(base.key, ir.Centred) and \
        base.field is g.key_field and g.key_field.arity is None and g.source is rel
    if not (gather or cells):
        raise adj.refuse(f"a loop over {g.target.name}.{g.name} that reads the grouped "
                         f"{g.source.name} rows' float fields from a group other than the "
                         f"row's own or, for the kernel's own rows, its "
                         f"{g.key_field.name} shifted: not transposed", s.loc)
    loops = []
    for st, _branch in path:
        if isinstance(st, ir.ForRange):
            if not all(isinstance(b, ir.Const) for b in (st.start, st.stop, st.step)):
                raise adj.refuse("a grouping loop that reads its rows' float fields inside a "
                                 "loop of run-time length", st.loc)
            loops.append(st)
        elif isinstance(st, ir.If):
            local = next((n for n in st.test.walk() if isinstance(n, ir.Local)), None)
            if local is not None:
                raise adj.refuse(f"a grouping loop that reads its rows' float fields inside a "
                                 f"branch testing local {local.name!r} (only fields, Globals "
                                 f"and constants can be tested again for another row)", st.loc)
        else:
            raise adj.refuse("a grouping loop that reads its rows' float fields inside this "
                             "statement", st.loc)
    _check_symmetric(adj, s, loops, offsets)
    # (the transposed loop of a gather runs in the same enclosing loops: their variables are
    # the same; a cell loop's partner is found at the opposite offset, another iteration)
    free = _check_body(adj, s, {st.var for st in loops} if gather else set())
    values = tuple(_kept_value(adj, s, n, loc, env) for n, loc in free.items()
                   if n not in carried)
    if loops:
        outer = [n for n in carried if n not in env.accumulating]
        if outer:
            raise adj.refuse(f"a grouping loop accumulating into local {outer[0]!r}, which the "
                             f"loops around it do not (start it before the outermost loop)",
                             s.loc)
    kept, counts = [], []
    for n in carried:
        t = adj.a.locals.get(n)
        if t == f64 or isinstance(t, VecType) and t.elem == f64:
            kept.append((n, t, f"{adj.a.kernel_name}__l{s.loc.line}_{n}"))
        elif isinstance(t, ScalarType) and not t.is_float:  # (a count: no derivative)
            counts.append(n)
        else:
            raise adj.refuse(f"a grouping loop accumulating into local {n!r} of type {t!r} "
                             f"(f64 scalars and vectors, and integers, are transposed)", s.loc)
    return Transposition(s, tuple(path), tuple(kept), g.source, gather, values, tuple(counts))


def _kept_value(adj, s, name, loc, env) -> tuple:
    """(name, type, field, replay names) of local `name` from before loop `s`, which the
    transposed kernel reads as the partner's: kept in a field of the row. Its value must be
    the same throughout the loops around `s` (made before the outermost)."""
    t = adj.a.locals.get(name)
    ok = isinstance(t, ScalarType) or isinstance(t, (VecType, MatType)) and t.elem == f64
    if not ok:
        raise adj.refuse(f"local {name!r} of type {t!r}, from before the grouping loop, read in "
                         f"it (the loop reads its rows' float fields and is run again from "
                         f"the other row, which reads the row's value of it from a field: "
                         f"scalars and f64 vectors and matrices only)", loc)
    version = env.version[name]
    parts = set(_names(version))
    if adj.loop_blocks and not parts <= adj.loop_blocks[0][0]:
        raise adj.refuse(f"local {name!r}, which changes in the loops around the grouping loop, "
                         f"read in it (compute it before the outermost loop, or in the "
                         f"grouping loop)", loc)
    return name, t, f"{adj.a.kernel_name}__l{s.loc.line}_{name}__value", version


def _names(version):
    if isinstance(version, tuple):
        return [n for v in version for n in _names(v)]
    return [version]


def _check_symmetric(adj, s, loops, offsets) -> None:
    """The offsets over every iteration of the enclosing loops: o as often as -o."""
    names = [st.var for st in loops]
    ranges = [range(int(st.start.value), int(st.stop.value), int(st.step.value)) for st in loops]
    count = Counter()
    for n, values in enumerate(itertools.product(*ranges)):
        if n >= MAX_OFFSETS:
            raise adj.refuse("a grouping loop inside loops of more than "
                             f"{MAX_OFFSETS} iterations, reading its rows' float fields", s.loc)
        env = dict(zip(names, values))
        count[tuple(_int_value(adj, o, env) for o in offsets)] += 1
    for o, k in count.items():
        if count[tuple(-x for x in o)] != k:
            raise adj.refuse(f"a grouping loop that reads its rows' float fields at cell "
                             f"offsets that are not symmetric (offset {o} is visited {k} "
                             f"times, its opposite {count[tuple(-x for x in o)]}): its pairs "
                             f"cannot be visited again from the other row", s.loc)


def _int_value(adj, e, env) -> int:
    """Integer expression `e` (typed) of the enclosing loops' variables, evaluated."""
    match e:
        case ir.Const():
            return int(e.value)
        case ir.Local() if e.name in env:
            return env[e.name]
        case ir.Cast():
            return _int_value(adj, e.value, env)
        case ir.UnaryOp(op="-"):
            return -_int_value(adj, e.operand, env)
        case ir.BinOp(op=op) if op in ("+", "-", "*", "//", "%"):
            a, b = _int_value(adj, e.left, env), _int_value(adj, e.right, env)
            if op in ("//", "%") and b == 0:
                raise adj.refuse("a cell offset dividing by zero", e.loc)
            return {"+": a + b, "-": a - b, "*": a * b, "//": a // b, "%": a % b}[op]
    raise adj.refuse("a grouping loop reading its rows' float fields at a cell offset that is "
                     "not computed from the enclosing constant loops' variables alone", e.loc)


def _check_body(adj, s, outer) -> dict:
    """The loop's body: no stores, reductions or nested grouping loops; no read of a field the
    kernel writes. The locals it reads that it does not assign (other than its variable and
    `outer`'s), each with where it is first read."""
    for st in ir.walk_stmts(s.body):
        if isinstance(st, (ir.FieldStore, ir.FieldReduce, ir.GlobalReduce, ir.Reduce,
                           ir.ForGroup, ir.ForEach, ir.While)):
            raise adj.refuse("this statement inside a grouping loop that reads its rows' float "
                             "fields (not transposed)", st.loc)
    inside = set(assigned(s.body)) | {st.var for st in ir.walk_stmts(s.body)
                                      if isinstance(st, ir.ForRange)} | outer
    written = {a.target for a in adj.a.summary.accesses if a.mode != "read"}
    free = {}
    for st in ir.walk_stmts(s.body):
        for e in stmt_exprs(st):
            for n in e.walk():
                if isinstance(n, ir.Local) and n.name not in inside and n.name != s.var:
                    free.setdefault(n.name, n.loc)
                if isinstance(n, ir.FieldRead) and isinstance(n.key, ir.Centred) and \
                        n.field in written:
                    raise adj.refuse(f"field {n.field.qualname}, which the kernel writes, read "
                                     f"in a grouping loop that reads its rows' float fields",
                                     n.loc)
    return free


# -- the transposed kernel's forward body (untyped IR) ---------------------------------------
def forward_body(analysed, t, seed) -> tuple:
    """The untyped body of `t`'s transposed kernel over the same relation: ``sum`` over every
    partner's replayed loop body, reduced into Global `seed` (whose adjoint is 1)."""
    param = analysed.param
    by_place = {(type(st).__name__, st.loc.line, st.loc.col): st
                for st in ir.walk_stmts(analysed.untyped)}

    def untyped(st):
        kind = "ForEach" if isinstance(st, ir.ForGroup) else type(st).__name__
        return by_place[(kind, st.loc.line, st.loc.col)]

    loop = untyped(t.loop)
    kept = {n: (field, typ) for n, typ, field in t.kept}
    values = {n: field for n, _, field, _ in t.values}
    loc = loop.loc
    key_field = t.loop.group.grouping.key_field
    slot = ir.Local(loc, SLOT)
    if not t.gather:  # the partner: a row of the cells near this one's, the loop's variable
        partner = ir.Local(loc, PARTNER)
    elif key_field.arity is None:  # the row this one's key names
        partner = ir.Attr(loc, ir.Centred(loc, param), key_field.name)
    else:  # each of the rows its keys name, in turn
        partner = ir.Index(loc, ir.Attr(loc, ir.Centred(loc, param), key_field.name), (slot,))

    def swap(node):
        if isinstance(node, ir.Centred):
            return partner
        if isinstance(node, ir.Local) and node.name == loop.var:
            return ir.Centred(node.loc, param)
        if isinstance(node, ir.Local) and node.name in values:  # the partner's value
            return ir.Attr(node.loc, partner, values[node.name])
        if isinstance(node, ir.Assign) and node.name in t.counts:
            return ir.Pass(node.loc)
        if isinstance(node, ir.Assign) and node.name in kept:
            field, typ = kept[node.name]
            v = node.value  # acc = acc + e or acc - e (`loops.accumulators`)
            weight = ir.Attr(node.loc, partner, field)
            term = ir.Call(node.loc, "dot", (weight, v.right)) if isinstance(typ, VecType) \
                else ir.BinOp(node.loc, "*", weight, v.right)
            return ir.Assign(node.loc, SUM, ir.BinOp(node.loc, v.op, ir.Local(node.loc, SUM),
                                                     term))
        return None

    inner = tuple(_mapped(st, swap) for st in loop.body)
    for st, branch in reversed(t.path):  # the partner's branches, inside the partner loop
        if isinstance(st, ir.If):  # (their tests read no locals: `plan`)
            u = untyped(st)
            test = _mapped(u.test, swap)
            inner = (ir.If(u.loc, test, inner, ()) if branch == 0 else
                     ir.If(u.loc, test, (ir.Pass(u.loc),), inner),)
    if not t.gather:
        inner = (ir.ForEach(loc, PARTNER, loop.seq, inner),)
    elif key_field.arity is not None:
        inner = (ir.ForRange(loc, SLOT, ir.Const(loc, 0), ir.Const(loc, key_field.arity),
                             ir.Const(loc, 1), inner),)
    for st, _ in reversed(t.path):  # the loops' headers around it (the offsets' loops)
        if isinstance(st, ir.ForRange):
            inner = (replace(untyped(st), body=inner),)
    return (ir.Assign(loc, SUM, ir.Const(loc, 0.0)),) + inner + \
        (ir.Reduce(loc, ir.GlobalRead(loc, seed), "+", ir.Local(loc, SUM)),)


def _mapped(node, fn):
    """Untyped `node` rebuilt bottom-up, each node replaced by fn(node) where that is not
    None."""
    changes = {}
    for f in fields(node):
        if f.name in ("loc", "type"):
            continue
        v = getattr(node, f.name)
        if isinstance(v, ir.Node):
            changes[f.name] = _mapped(v, fn)
        elif isinstance(v, tuple) and any(isinstance(x, ir.Node) for x in v):
            changes[f.name] = tuple(_mapped(x, fn) if isinstance(x, ir.Node) else x
                                    for x in v)
    if changes:
        node = replace(node, **changes)
    new = fn(node)
    return node if new is None else new
