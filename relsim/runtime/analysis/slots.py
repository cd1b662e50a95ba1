"""Reduction slots: where each contribution of a row to a key-reduced field or a reduced Global
is parked before it is folded in serial order.

Each row owns `per_row` consecutive slots per target, numbered in program order (a site inside a
static loop gets one slot per iteration). Contributions are folded after the kernel: a field's
target rows fold their slots in ascending slot order (= ascending source row, then program order),
a Global folds all slots in order. Slots a row does not reach keep the operator's identity, which
folds as an exact no-op. This gives the serial meaning bit for bit on any number of threads.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ...errors import KernelSyntaxError
from ...types import KeyType, KeyVecType
from .. import ir
from . import slot_sharing


@dataclass(frozen=True)
class Site:
    stmt: ir.Stmt
    offset: int  # constant part of the slot number
    loops: tuple  # ((loop stmt, trip, stride), ...) outermost first
    key: ir.Expr | None  # for field sites: the target key with key locals substituted


@dataclass(frozen=True)
class Layout:
    target: object  # Field or Global
    op: str
    per_row: int
    sites: tuple
    conditional: bool  # some slot may be skipped: initialise slots to the identity per row
    # per slot: (stored slot, negated) when sites share stored values (`slot_sharing`); else ()
    stores: tuple = ()

    @property
    def on_field(self) -> bool:
        """Whether the target is a field (reduced through keys); else a Global or, for insert
        layouts, a relation."""
        return hasattr(self.target, "relation")

    @property
    def stored_per_row(self) -> int:
        """Slots a row stores (fewer than `per_row` when some share a stored value)."""
        return 1 + max(i for i, _ in self.stores) if self.stores else self.per_row


def static_trip(s) -> int | None:
    if isinstance(s, ir.ForRange):
        if all(isinstance(x, ir.Const) for x in (s.start, s.stop, s.step)):
            return len(range(s.start.value, s.stop.value, s.step.value))
        return None
    if isinstance(s, ir.ForEach):
        return s.seq.type.n
    return None


def layouts(body: tuple, phase, kernel_name: str) -> list:
    key_defs = _single_key_defs(body)
    early_exit = any(isinstance(s, (ir.Break, ir.Continue, ir.Return))
                     for s in ir.walk_stmts(body))
    out = []
    targets = [(f, op) for f, op in phase.key_reduced.items()] + \
        [(g, op) for g, op in phase.global_reduced.items()]
    for target, op in targets:
        walker = _Walker(target, key_defs, kernel_name)
        n = walker.block(body, 0, (), False)
        lay = Layout(target, op, n, tuple(walker.sites), walker.conditional or early_exit)
        if lay.on_field:  # a field's: sites may share stored values
            lay = replace(lay, stores=slot_sharing.shared_stores(lay, body))
        out.append(lay)
    return out


def insert_layouts(body: tuple, kernel_name: str) -> list:
    """One layout per relation the kernel inserts into: a row's insert slots in program
    order; a slot whose statement did not run stays empty (its flag false)."""
    out = []
    rels = []
    for s in ir.walk_stmts(body):
        if isinstance(s, ir.Insert) and all(r is not s.relation for r in rels):
            rels.append(s.relation)
    for rel in rels:
        walker = _Walker(rel, {}, kernel_name)
        n = walker.block(body, 0, (), False)
        out.append(Layout(rel, "insert", n, tuple(walker.sites), True))
    return out


class _Walker:
    def __init__(self, target, key_defs, kernel_name, probe=False):
        self.target, self.key_defs, self.kernel_name = target, key_defs, kernel_name
        self.probe = probe  # only counting slots (loop variables are not bound yet)
        self.sites: list = []
        self.conditional = False

    def block(self, body, cur, loops, cond) -> int:
        start = cur
        for s in body:
            cur += self.stmt(s, cur, loops, cond)
        return cur - start

    def stmt(self, s, cur, loops, cond) -> int:
        if isinstance(s, ir.Insert):
            if s.relation is not self.target:
                return 0
            self.sites.append(Site(s, cur, loops, None))
            return 1
        if isinstance(s, (ir.FieldReduce, ir.GlobalReduce)):
            mine = (s.field if isinstance(s, ir.FieldReduce) else s.ref) is self.target
            if not mine:
                return 0
            key = None
            if isinstance(s, ir.FieldReduce) and not self.probe:
                key = self.static_key(s.key, loops, s.loc)
            self.conditional |= cond
            self.sites.append(Site(s, cur, loops, key))
            return 1
        if isinstance(s, ir.If):
            n1 = self.block(s.body, cur, loops, True)
            return n1 + self.block(s.orelse, cur + n1, loops, True)
        if isinstance(s, (ir.ForRange, ir.ForEach, ir.While, ir.ForGroup)):
            probe = _Walker(self.target, self.key_defs, self.kernel_name, probe=True)
            inner = probe.block(s.body, 0, (), False)
            if inner == 0:
                return 0
            trip = static_trip(s)
            if trip is None:
                raise KernelSyntaxError(
                    "a reduction into a field through a key, or into a Global, cannot sit in "
                    "a loop whose trip count is not a compile-time constant (while, range with "
                    "run-time bounds, grouping loops); accumulate into a local inside the loop "
                    "and reduce once after it", probe.sites[0].stmt.loc, self.kernel_name)
            self.block(s.body, cur, loops + ((s, trip, inner),), cond)
            # the walk above appended sites with offsets relative to `cur`; iterations add
            return trip * inner
        return 0

    def static_key(self, key, loops, loc):
        loop_vars = {lp.var: lp for lp, _, _ in loops}
        try:
            return _resolve(key, loop_vars, self.key_defs)
        except _NotStatic as exc:
            raise KernelSyntaxError(
                f"the target of a reduction through a key must be a fixed key path (key fields "
                f"indexed by constants, static loop variables or arithmetic on them); here it "
                f"depends on {exc}",
                loc, self.kernel_name) from None


class _NotStatic(Exception):
    pass


def _resolve(e, loop_vars, key_defs):
    if isinstance(e, ir.Centred):
        return e
    if isinstance(e, ir.Const):
        return e
    if isinstance(e, ir.Local):
        if e.name in loop_vars:
            lp = loop_vars[e.name]
            if isinstance(lp, ir.ForEach) and not isinstance(lp.seq.type, KeyVecType):
                raise _NotStatic(f"the value loop variable {e.name!r}")
            return e
        if e.name in key_defs:
            return _resolve(key_defs[e.name], loop_vars, key_defs)
        raise _NotStatic(f"the local {e.name.split('_', 2)[-1]!r}")
    if isinstance(e, ir.FieldRead) and e.field.is_key:
        return replace(e, key=_resolve(e.key, loop_vars, key_defs))
    if isinstance(e, ir.Index) and isinstance(e.base.type, KeyVecType):
        return replace(e, base=_resolve(e.base, loop_vars, key_defs),
                       index=tuple(_resolve(i, loop_vars, key_defs) for i in e.index))
    if isinstance(e, ir.Cast):
        return replace(e, value=_resolve(e.value, loop_vars, key_defs))
    if isinstance(e, ir.Affine):
        return replace(e, key=_resolve(e.key, loop_vars, key_defs))
    raise _NotStatic("a computed value")


def _single_key_defs(body) -> dict:
    """Key and key-vector locals assigned exactly once (never loop variables): name -> defining
    expr."""
    count: dict = {}
    defs: dict = {}
    for s in ir.walk_stmts(body):
        if isinstance(s, ir.Assign):
            count[s.name] = count.get(s.name, 0) + 1
            defs[s.name] = s.value
        elif isinstance(s, (ir.ForRange, ir.ForEach, ir.ForGroup)):
            count[s.var] = count.get(s.var, 0) + 2
    return {n: d for n, d in defs.items()
            if count[n] == 1 and isinstance(d.type, (KeyType, KeyVecType))}


def identity(op: str, elem):
    """The exact identity of a reduction operator (x op identity == x bit for bit)."""
    if op == "+":
        return -0.0 if elem.is_float else 0
    if op == "*":
        return 1
    if op in ("min", "argmin"):
        return float("inf") if elem.is_float else _int_max(elem)
    if op in ("max", "argmax"):
        return float("-inf") if elem.is_float else -_int_max(elem) - 1
    if op == "and":
        return True
    if op == "or":
        return False
    raise ValueError(op)


def _int_max(elem) -> int:
    import numpy as np
    return int(np.iinfo(elem.dtype).max)
