"""Lowering of typed IR statements to Python `ast`, shared by every compiled target: one row of
a kernel, with its reduction slot and insert slot writes. A target's driver (the CPU's row
loops: `backends/cpu/loops.py`) subclasses `BodyLowerer`, supplies the seam described there, and
assembles the module.
"""
from __future__ import annotations

import ast

from ...types import KeyType, KeyVecType, elem_of, i64
from .. import ir, semantics
from ..analysis.slots import identity, static_trip
from ..host import prints
from ..host.debug_checks import contributed, written
from .emit import call, const, name, store, unsigned
from .expr import POS, ROW, ExprLowerer


class BodyLowerer(ExprLowerer):
    """Statements, and the writes of reduction / insert slots, for one row of a kernel.

    The seam with a target's driver (`cpu_loops.CpuLowerer`; a CUDA driver the same way):

    * the driver binds `POS` and `ROW` (int64) before the statements `emit_row` appends, and
      wraps them in its functions (header, signature: `params.items` in order, after its own);
    * `slot_place(k, lay, slot)`: the storage index of slot `slot` (an `ast` int expression)
      of reduction layout k: plain here; the CPU stores key-reduction slots pre-permuted;
    * `next_row()`: the statement that ends the row early (`return` at a kernel's top level);
    * `parks(lay)`: whether reduction layout `lay` parks its contributions in its slots (the
      CPU's direct scatter adds a field's straight to the field instead).
    """

    def __init__(self, analysed, debug=None):
        super().__init__(analysed, debug)
        self.loop_counters: dict = {}  # id(static loop stmt) -> counter variable name
        self.layout_of: dict = {}  # id(reduce stmt) -> (layout index, site)
        for k, lay in enumerate(analysed.layouts):
            for site in lay.sites:
                self.layout_of[id(site.stmt)] = (k, site)
        self.print_site = {id(s): k for k, s in enumerate(prints.sites(analysed.body))}
        self.insert_of: dict = {}  # id(insert stmt) -> (insert layout index, site)
        for k, lay in enumerate(analysed.inserts):
            for site in lay.sites:
                self.insert_of[id(site.stmt)] = (k, site)

    # -- the seam -------------------------------------------------------------------------
    def slot_place(self, k, lay, slot):
        """Where slot `slot` of reduction layout k is stored: at its number."""
        return slot

    def next_row(self) -> ast.stmt:
        """The statement that ends this row (`return` in the kernel body)."""
        raise NotImplementedError

    def parks(self, lay) -> bool:
        """Whether reduction layout `lay`'s contributions are written to its slots."""
        return True

    def emit_row(self):
        """Append one row's statements to `self.alg.out`: the identities of conditionally
        reached slots, then the kernel body."""
        for k, lay in enumerate(self.a.layouts):
            if lay.conditional and self.parks(lay):
                self.init_slots(k, lay)
        self.block(self.a.body)

    # -- reduction and insert slots -------------------------------------------------------
    def init_slots(self, k, lay):
        arr = self.params.slots(k, lay).name
        et = elem_of(lay.target.type)
        ncomp = lay.target.type.ncomp
        ident = const(identity(lay.op, et), et)
        s = self.alg.fresh("_s")
        base = self.slot_base(lay)
        place = unsigned(self.slot_place(k, lay, ast.BinOp(base, ast.Add(), name(s))))
        tgt = ast.Subscript(name(arr), ast.Tuple([place, ast.Constant(0)], ast.Load()),
                            ast.Store())
        body = [ast.Assign([_with_comp(tgt, c)], ident) for c in range(ncomp)]
        self.alg.out.append(ast.For(store(s), call("range", ast.Constant(lay.per_row)), body, []))

    def stored_slot(self, k, lay, site):
        """Where a site's value is stored: its own slot, or the one it shares (slot_sharing:
        straight-line sites only, stored in row order, the fold reads them through its index)."""
        if lay.stores:
            base = ast.BinOp(name(POS), ast.Mult(), ast.Constant(lay.stored_per_row))
            return ast.BinOp(base, ast.Add(), ast.Constant(lay.stores[site.offset][0]))
        return self.slot_place(k, lay, self.slot_index(lay, site))

    @staticmethod
    def slot_base(lay):
        return ast.BinOp(name(POS), ast.Mult(), ast.Constant(lay.per_row))

    def slot_index(self, lay, site, base=None):
        """Slot number of `site` of layout `lay` in this row (from `base`, default the row's
        first slot)."""
        e = ast.BinOp(self.slot_base(lay) if base is None else base, ast.Add(),
                      ast.Constant(site.offset))
        for loop, _trip, stride in site.loops:
            term = ast.BinOp(name(self.loop_counters[id(loop)]), ast.Mult(), ast.Constant(stride))
            e = ast.BinOp(e, ast.Add(), term)
        return e

    def slot_write(self, s, vals, arr=None, slot=None):
        """Write a reduction's value to its slot (or to slot `slot` of array `arr`: the CPU's
        shared slots); the other components of a component reduction get the identity."""
        k, site = self.layout_of[id(s)]
        lay = self.a.layouts[k]
        if arr is None:
            arr = self.params.slots(k, lay).name
            slot = self.alg.bind(self.stored_slot(k, lay, site))
        slot = unsigned(slot)
        first = 0
        if isinstance(s, ir.FieldReduce) and s.index:
            # a component of a vector field: the slot holds the whole value, others identity
            t = s.field.type
            pos = self.positions(t, s.index)
            et = elem_of(t)
            ident = const(identity(lay.op, et), et)
            if not lay.conditional:
                for c in range(t.ncomp):
                    self.alg.out.append(ast.Assign([ast.Subscript(name(arr), ast.Tuple(
                        [slot, ast.Constant(c)], ast.Load()), ast.Store())], ident))
            if not isinstance(pos[0], int):
                first_atom = pos[0]
                for j, v in enumerate(vals):
                    col = ast.BinOp(first_atom, ast.Add(), ast.Constant(j))
                    self.alg.out.append(ast.Assign([ast.Subscript(name(arr), ast.Tuple(
                        [slot, col], ast.Load()), ast.Store())], v))
                return
            first = pos[0]
        for j, v in enumerate(vals):
            self.alg.out.append(ast.Assign([ast.Subscript(name(arr), ast.Tuple(
                [slot, ast.Constant(first + j)], ast.Load()), ast.Store())], v))

    # -- statements -----------------------------------------------------------------------
    def block(self, body):
        for s in body:
            getattr(self, "s_" + type(s).__name__)(s)

    def sub_block(self, body) -> list:
        saved = self.alg.out
        self.alg.out = []
        self.block(body)
        out = self.alg.out or [ast.Pass()]
        self.alg.out = saved
        return out

    def s_Assign(self, s):
        vals = self.expr(s.value)
        for n, v in zip(self.local_names(s.name, self.a.locals[s.name]), vals):
            self.alg.out.append(ast.Assign([store(n)], v))

    def s_AssignIndex(self, s):
        t = self.a.locals[s.name]
        names = self.local_names(s.name, t)
        vals = self.expr(s.value)
        positions = self.positions(t, s.index)
        if all(isinstance(p, int) for p in positions):
            for p, v in zip(positions, vals):
                self.alg.out.append(ast.Assign([store(names[p])], v))
            return
        # dynamic index: a chain of ifs over the possible positions
        pos, n_each = positions[0], len(vals)
        chain = [self.flag_error(s.loc.line)]
        for start in reversed(range(0, t.ncomp, n_each)):
            body = [ast.Assign([store(names[start + j])], v) for j, v in enumerate(vals)]
            test = ast.Compare(pos, [ast.Eq()], [ast.Constant(start)])
            chain = [ast.If(test, body, chain)]
        self.alg.out.extend(chain)

    def s_FieldStore(self, s):
        key = self.expr(s.key)[0]
        vals = self.expr(s.value)
        self.check_finite(vals, s.field.type, s.loc, written("stored into", s.field))
        for (arr, sl), v in zip(self.field_slots(s.field, key, s.index), vals):
            self.alg.out.append(ast.Assign([ast.Subscript(name(arr), sl, ast.Store())], v))

    def s_FieldReduce(self, s):
        if self.debug is not None:
            return self.checked_reduce(s)
        if id(s) in self.layout_of:
            k, site = self.layout_of[id(s)]
            stores = self.a.layouts[k].stores
            if stores and stores[site.offset][1]:
                return  # the negation of an earlier site's value: its slot is shared
            return self.slot_write(s, self.expr(s.value))
        vals = self.expr(s.value)
        self.reduce_in_place(s, self.expr(s.key)[0], vals)

    def reduce_operands(self, s):
        """Debug: the target key and the contribution, in the oracle's order (the key's checks
        run even where the key is not needed: a parked slot), and the contribution's check."""
        key = self.expr(s.key)[0]
        vals = self.expr(s.value)
        self.check_finite(vals, s.field.type, s.loc, contributed(s.op, field=s.field))
        return key, vals

    def checked_reduce(self, s):
        """`s_FieldReduce` in debug mode (the same writes, after the checks)."""
        key, vals = self.reduce_operands(s)
        if id(s) not in self.layout_of:
            return self.reduce_in_place(s, key, vals)
        k, site = self.layout_of[id(s)]
        stores = self.a.layouts[k].stores
        if not (stores and stores[site.offset][1]):  # else a shared slot holds its value
            self.slot_write(s, vals)

    def reduce_in_place(self, s, key, vals):
        """field[key] = field[key] op value, component by component (the fold rule)."""
        et = elem_of(s.field.type)
        for (arr, sl), v in zip(self.field_slots(s.field, key, s.index), vals):
            cur = self.alg.bind(ast.Subscript(name(arr), sl, ast.Load()))
            new = semantics.reduce_step(self.alg, s.op, cur, v, et)
            self.alg.out.append(ast.Assign([ast.Subscript(name(arr), sl, ast.Store())], new))

    def s_GlobalReduce(self, s):
        vals = self.expr(s.value)
        self.check_finite(vals, s.ref.type, s.loc, contributed(s.op, glob=s.ref))
        self.slot_write(s, vals)

    def s_If(self, s):
        test = self.expr(s.test)[0]
        self.alg.out.append(ast.If(test, self.sub_block(s.body), self.sub_block(s.orelse)
                                   if s.orelse else []))

    def s_While(self, s):
        saved = self.alg.out
        self.alg.out = []
        test = self.expr(s.test)[0]
        head = self.alg.out
        self.alg.out = saved
        body = head + [ast.If(ast.UnaryOp(ast.Not(), test), [ast.Break()], [])] + \
            self.sub_block(s.body)
        self.alg.out.append(ast.While(ast.Constant(True), body, []))

    def s_ForRange(self, s):
        trip = static_trip(s)
        var = self.local_names(s.var, i64)[0]
        if trip is not None:
            self.static_loop(s, trip)
            return
        bounds = [self.expr(x)[0] for x in (s.start, s.stop, s.step)]
        self.alg.out.append(ast.For(store(var), call("range", *bounds), self.sub_block(s.body),
                                    []))

    def targets_row_body(self, lay):
        """The row body of `targets_<k>` (every compiled target): for each site of layout `lay`,
        its static loops, rebuilt around the target key of each slot, stored in `_tgt`."""
        for site in lay.sites:
            outer = self.alg.out
            for loop, trip, _stride in site.loops:
                counter = self.alg.fresh("_it")
                self.loop_counters[id(loop)] = counter
                body: list = []
                self.alg.out.append(ast.For(store(counter), call("range", ast.Constant(trip)),
                                            body, []))
                self.alg.out = body
                self.bind_static_loop_var(loop, counter)
            key = self.expr(site.key)[0]
            slot = unsigned(self.slot_index(lay, site))
            self.alg.out.append(ast.Assign([ast.Subscript(name("_tgt"), slot, ast.Store())], key))
            self.alg.out = outer

    def bind_static_loop_var(self, s, counter):
        if isinstance(s, ir.ForRange):
            var = self.local_names(s.var, i64)[0]
            value = ast.BinOp(ast.Constant(s.start.value), ast.Add(), ast.BinOp(
                name(counter), ast.Mult(), ast.Constant(s.step.value)))
            self.alg.out.append(ast.Assign([store(var)], value))
            return
        seq = self.expr(s.seq)
        elt_t = KeyType(s.seq.type.relation) if isinstance(s.seq.type, KeyVecType) \
            else s.seq.type.elem
        var = self.local_names(s.var, elt_t)[0]
        tup = self.alg.bind(ast.Tuple(seq, ast.Load()))
        self.alg.out.append(ast.Assign([store(var)], ast.Subscript(tup, name(counter),
                                                                   ast.Load())))

    def s_ForEach(self, s):
        self.static_loop(s, s.seq.type.n)

    def static_loop(self, s, trip: int):
        """A loop with a compile-time trip count: a counter from 0, the loop variable bound
        from it (its slots are numbered by the counter)."""
        counter = self.alg.fresh("_it")
        self.loop_counters[id(s)] = counter
        saved = self.alg.out
        self.alg.out = []
        self.bind_static_loop_var(s, counter)
        body = self.alg.out + self.sub_block(s.body)
        self.alg.out = saved
        self.alg.out.append(ast.For(store(counter), call("range", ast.Constant(trip)), body,
                                    []))

    def s_ForGroup(self, s):
        key = self.expr(s.group.key)[0]
        g = s.group.grouping
        off = self.params.group_offsets(g).name
        rows = self.params.group_rows(g).name
        j = self.alg.fresh("_j")
        # (indexed as unsigned, as fields are (`field_slots`): a key and a position are never
        # negative, and Numba's negative-index wraparound for a signed index, a branch per
        # access inside the loop, cost a sparse product's parallel variant ~10%)
        lo = self.alg.bind(ast.Subscript(name(off), unsigned(key), ast.Load()))
        hi = self.alg.bind(ast.Subscript(
            name(off), unsigned(ast.BinOp(key, ast.Add(), ast.Constant(1))), ast.Load()))
        var = self.local_names(s.var, KeyType(g.source))[0]
        # a backend may bind an empty rows array for a grouping whose rows are in order
        # (`Grouping.in_order`): the group's rows are then its positions (a load less per row;
        # an empty grouping has no positions to run over either way)
        in_order = ast.Compare(ast.Subscript(ast.Attribute(name(rows), "shape", ast.Load()),
                                             ast.Constant(0), ast.Load()),
                               [ast.Eq()], [ast.Constant(0)])
        bind = ast.Assign([store(var)], ast.IfExp(
            in_order, name(j), ast.Subscript(name(rows), unsigned(name(j)), ast.Load())))
        self.alg.out.append(ast.For(store(j), call("range", lo, hi),
                                    [bind] + self.sub_block(s.body), []))

    def s_Break(self, s):
        self.alg.out.append(ast.Break())

    def s_Continue(self, s):
        self.alg.out.append(ast.Continue())

    def s_Return(self, s):
        self.alg.out.append(self.next_row())  # top level only

    def s_Print(self, s):
        """Mark the row's print at this site and store its values (`host/prints.py`)."""
        k = self.print_site[id(s)]
        flags = self.params.print_flags(k).name
        self.alg.out.append(ast.Assign([ast.Subscript(name(flags), unsigned(name(POS)),
                                                      ast.Store())], ast.Constant(1)))
        for x, kind, col, _n in prints.layout(s)[2]:
            if kind == "s":
                continue
            arr = self.params.print_values(k, kind).name
            for c, v in enumerate(self.expr(x)):
                at = ast.Tuple([unsigned(name(POS)), ast.Constant(col + c)], ast.Load())
                self.alg.out.append(ast.Assign([ast.Subscript(name(arr), at, ast.Store())], v))

    def s_Pass(self, s):
        pass

    def s_Delete(self, s):
        arr = self.params.delete_flags(self.a.relation).name
        self.alg.out.append(ast.Assign([ast.Subscript(name(arr), unsigned(name(ROW)),
                                                      ast.Store())], ast.Constant(True)))

    def s_Insert(self, s):
        k, site = self.insert_of[id(s)]
        lay = self.a.inserts[k]
        vals = [self.expr(v) for v in s.values]
        for f, comps in zip(s.names, vals):
            self.check_finite(comps, f.type, s.loc, written("inserted into", f))
        slot = unsigned(self.alg.bind(self.slot_index(lay, site)))
        flags = self.params.insert_flags(k, lay).name
        for f, comps in zip(s.names, vals):
            arr = self.params.insert_values(k, lay, f).name
            for c, v in enumerate(comps):
                self.alg.out.append(ast.Assign([ast.Subscript(name(arr), ast.Tuple(
                    [slot, ast.Constant(c)], ast.Load()), ast.Store())], v))
        self.alg.out.append(ast.Assign([ast.Subscript(name(flags), slot, ast.Store())],
                                       ast.Constant(True)))


def _with_comp(sub: ast.Subscript, c: int) -> ast.Subscript:
    t = sub.slice
    return ast.Subscript(sub.value, ast.Tuple([t.elts[0], ast.Constant(c)], ast.Load()),
                         ast.Store())
