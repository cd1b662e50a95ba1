"""Lowering: typed IR -> the Python `ast` of Numba functions.

Every value is scalarised: a vec3 local `p` becomes `v_p_0, v_p_1, v_p_2`; every intermediate
result gets a temporary. The generated module holds:

* `kernel_serial` / `kernel_parallel`: the row loop (`range` / `numba.prange`) around the body;
* `targets_<k>`: for each key-reduced field, the target row of every reduction slot (used to
  build the inverse index that folds the slots in serial order).
"""
from __future__ import annotations

import ast

from ...types import KeyType, KeyVecType, MatType, ScalarType, VecType, i64
from .. import ir, semantics
from ..slots import identity, static_trip
from ..typecheck import elem_of
from .emit import EmitAlgebra, call, const, name, store
from .pending_folds import fold_pending_row


class Params:
    """The arrays a generated function receives, in order, with what binds them at launch."""

    def __init__(self):
        self.items: list = []  # (param name, kind, object)
        self._index: dict = {}

    def get(self, kind: str, obj, hint: str) -> str:
        key = (kind, id(obj))
        if key not in self._index:
            pname = f"_{kind}{len(self.items)}_{hint}"
            self._index[key] = pname
            self.items.append((pname, kind, obj))
        return self._index[key]


class KernelLowerer:
    def __init__(self, analysed, absorb=()):
        self.a = analysed
        # (field, operator, has slot ids) of each pending key reduction this variant folds at
        # the start of each row; their arrays are extra arguments (offsets, slot ids or None
        # when the slots are stored in fold order, slot values)
        self.absorb = tuple(absorb)
        self.params = Params()
        self.alg = EmitAlgebra()
        self.loop_counters: dict = {}  # id(static loop stmt) -> counter variable name
        self.static_ranges: dict = {}  # loop variable -> (min, max + 1) of a static range
        self.layout_of: dict = {}  # id(reduce stmt) -> (layout index, site)
        for k, lay in enumerate(analysed.layouts):
            for site in lay.sites:
                self.layout_of[id(site.stmt)] = (k, site)
        self.insert_of: dict = {}  # id(insert stmt) -> (insert layout index, site)
        for k, lay in enumerate(analysed.inserts):
            for site in lay.sites:
                self.insert_of[id(site.stmt)] = (k, site)

    # -- whole functions ------------------------------------------------------------------
    def module(self) -> ast.Module:
        kernel_body = self.row_loop(self.kernel_row_body)
        targets = []
        for k, lay in enumerate(self.a.layouts):
            if hasattr(lay.target, "relation"):  # a field: its slots need target rows
                body = self.row_loop(lambda lay=lay: self.targets_row_body(lay))
                targets.append((k, body))
        # functions are assembled last: all of them take every array any of them uses
        # over a whole relation the row is the loop index; over a subset, rows[index]
        # (separate functions: Numba compiles only the variants a program launches)
        funcs = [self.function(f"kernel_{mode}{suffix}", kernel_body, fn, rows=rows,
                               extra=self.absorb_params())
                 for mode, fn in (("serial", "range"), ("parallel", "prange"))
                 for suffix, rows in (("", False), ("_rows", True))]
        funcs += [self.function(f"targets_{k}", body, "prange", extra=["_tgt"])
                  for k, body in targets]
        header = ast.parse(
            "import math\nimport numpy as np\nfrom numba import prange\n"
            "_f64, _f32, _i64, _i32, _bool = np.float64, np.float32, np.int64, np.int32, "
            "np.bool_\n_INF = float('inf')\n_NAN = float('nan')\n").body
        mod = ast.Module(header + funcs, [])
        return ast.fix_missing_locations(mod)

    def function(self, fname, loop_stmts, range_fn, extra=(), rows=None):
        fixed = ["_n", "_rows", "_has_rows", "_err"]
        args = fixed + [p for p, _, _ in self.params.items] + list(extra)
        body = [self._rename_range(s, range_fn, rows) for s in loop_stmts]
        return ast.FunctionDef(fname, ast.arguments([], [ast.arg(a) for a in args], None, [],
                                                    [], None, []), body, [], None, None)

    @staticmethod
    def _rename_range(stmt, range_fn, rows=None):
        """The row loop over `range_fn`; the body is shared between the serial and the parallel
        function, not copied (the module is only unparsed: no pass mutates it afterwards).
        `rows` True/False fixes how the row is found (else a run-time test of _has_rows)."""
        body = stmt.body
        if rows is not None:
            row = ast.Subscript(name("_rows"), name("_p"), ast.Load()) if rows else name("_p")
            body = [body[0], ast.Assign([store("_row")], row)] + body[2:]
        return ast.For(stmt.target, call(range_fn, *stmt.iter.args), body, stmt.orelse)

    def row_loop(self, make_body):
        saved = self.alg.out
        self.alg.out = []
        # prange's index is unsigned: make it a signed int64 first (uint64 + int64 -> float64)
        self.alg.out.append(ast.Assign([store("_p")], call("_i64", name("_i"))))
        self.alg.out.append(ast.Assign([store("_row")], ast.IfExp(
            name("_has_rows"), ast.Subscript(name("_rows"), name("_p"), ast.Load()),
            name("_p"))))
        make_body()
        body = self.alg.out
        self.alg.out = saved
        return [ast.For(store("_i"), call("range", name("_n")), body, [])]

    def absorb_params(self) -> list:
        return [f"_absorb{i}_{part}" for i in range(len(self.absorb))
                for part in ("off", "ids", "vals")]

    def kernel_row_body(self):
        mark = len(self.alg.out)
        for k, lay in enumerate(self.a.layouts):
            if lay.conditional:
                self.init_slots(k, lay)
        self.block(self.a.body)
        if self.absorb:  # pending reductions first, in launch order (emitted after the body
            body = self.alg.out[mark:]  # so that the parameters keep their order)
            del self.alg.out[mark:]
            for i, (field, op, has_ids) in enumerate(self.absorb):
                fold_pending_row(self.alg, i, self.field_slots(field, name("_row"), ()), op,
                                 has_ids)
            self.alg.out.extend(body)

    def init_slots(self, k, lay):
        arr = self.params.get("slots", lay, f"{k}")
        et = elem_of(lay.target.type)
        ncomp = lay.target.type.ncomp if hasattr(lay.target, "relation") else \
            lay.target.type.ncomp
        ident = const(identity(lay.op, et), et)
        s = self.alg.fresh("_s")
        base = self.slot_base(lay)
        place = self.slot_place(k, lay, ast.BinOp(base, ast.Add(), name(s)))
        tgt = ast.Subscript(name(arr), ast.Tuple([place, ast.Constant(0)], ast.Load()),
                            ast.Store())
        body = [ast.Assign([_with_comp(tgt, c)], ident) for c in range(ncomp)]
        self.alg.out.append(ast.For(store(s), call("range", ast.Constant(lay.per_row)), body, []))

    def slot_place(self, k, lay, slot):
        """Where slot `slot` lives: a field's slots are stored in the order they are folded
        (grouped by target row, ascending), so the fold reads them contiguously; the kernel
        writes each through the permutation `_spos` (computed once per key-field version)."""
        if not hasattr(lay.target, "relation"):
            return slot
        spos = self.params.get("spos", lay, f"{k}")
        return ast.Subscript(name(spos), slot, ast.Load())

    def stored_slot(self, k, lay, site):
        """Where a site's value is stored: its own slot, or the one it shares (slot_sharing:
        straight-line sites only, stored in row order, the fold reads them through its index)."""
        if lay.stores:
            base = ast.BinOp(name("_p"), ast.Mult(), ast.Constant(lay.stored_per_row))
            return ast.BinOp(base, ast.Add(), ast.Constant(lay.stores[site.offset][0]))
        return self.slot_place(k, lay, self.slot_index(lay, site))

    @staticmethod
    def slot_base(lay):
        return ast.BinOp(name("_p"), ast.Mult(), ast.Constant(lay.per_row))

    def targets_row_body(self, lay):
        """For each site: its static loops, rebuilt around the target key of each slot."""
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
            slot = self.slot_index(lay, site)
            self.alg.out.append(ast.Assign([ast.Subscript(name("_tgt"), slot, ast.Store())], key))
            self.alg.out = outer

    def slot_index(self, lay, site):
        e = ast.BinOp(self.slot_base(lay), ast.Add(), ast.Constant(site.offset))
        for loop, _trip, stride in site.loops:
            term = ast.BinOp(name(self.loop_counters[id(loop)]), ast.Mult(), ast.Constant(stride))
            e = ast.BinOp(e, ast.Add(), term)
        return e

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

    def local_names(self, lname, t) -> list:
        if isinstance(t, KeyType):
            return [f"k_{lname}"]
        if isinstance(t, KeyVecType):
            return [f"k_{lname}_{c}" for c in range(t.n)]
        return [f"v_{lname}_{c}" for c in range(t.ncomp)]

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

    def positions(self, t, index):
        """Flat component positions addressed by `index` on a value of type t: ints if the
        index is constant, else [atom of the first flat position]."""
        shape = t.shape
        idx = [self.norm_index(i, n) for i, n in zip(index, shape)]
        if len(shape) == 2 and len(idx) == 1:
            if isinstance(idx[0], int):
                return [idx[0] * shape[1] + j for j in range(shape[1])]
            return [self.alg.bind(ast.BinOp(idx[0], ast.Mult(), ast.Constant(shape[1])))]
        if all(isinstance(k, int) for k in idx):
            pos = 0
            for k, n in zip(idx, shape):
                pos = pos * n + k
            return [pos]
        pos = idx[0]
        for k, n in zip(idx[1:], shape[1:]):
            pos = self.alg.bind(ast.BinOp(ast.BinOp(pos, ast.Mult(), ast.Constant(n)), ast.Add(),
                                          k if not isinstance(k, int) else ast.Constant(k)))
        return [pos]

    def norm_index(self, i, n):
        """A constant index as an int; a run-time index as a checked, non-negative atom."""
        if isinstance(i, ir.Const):
            v = int(i.value)
            return v + n if v < 0 else v
        if isinstance(i, ir.Local) and i.name in self.static_ranges:
            lo, hi = self.static_ranges[i.name]
            if 0 <= lo and hi <= n:  # a static loop variable known to be in range
                return self.expr(i)[0]
        a = self.expr(i)[0]
        a = self.alg.bind(ast.IfExp(ast.Compare(a, [ast.Lt()], [ast.Constant(0)]),
                                    ast.BinOp(a, ast.Add(), ast.Constant(n)), a))
        # no `raise` inside prange (it would serialise the loop): flag the line, use index 0,
        # and let the launcher raise after the kernel
        fixed = self.alg.fresh()
        self.alg.out.append(ast.Assign([store(fixed)], a))
        check = ast.If(ast.BoolOp(ast.Or(), [ast.Compare(a, [ast.Lt()], [ast.Constant(0)]),
                                             ast.Compare(a, [ast.GtE()], [ast.Constant(n)])]),
                       [self.flag_error(i.loc.line), ast.Assign([store(fixed)], ast.Constant(0))],
                       [])
        self.alg.out.append(check)
        return name(fixed)

    @staticmethod
    def flag_error(line: int) -> ast.stmt:
        return ast.Assign([ast.Subscript(name("_err"), ast.Constant(0), ast.Store())],
                          ast.Constant(line))

    def field_slots(self, field, key_atom, index):
        """Subscript expressions (as (array name, index tuple)) for the addressed components."""
        arr = self.params.get("field", field, field.name)
        t = field.type
        if not index:
            comps = [()] if isinstance(t, ScalarType) else _all_index_tuples(t.shape)
        else:
            idx = [self.norm_index(i, n) for i, n in zip(index, t.shape)]
            idx = [ast.Constant(k) if isinstance(k, int) else k for k in idx]
            if len(t.shape) == 2 and len(idx) == 1:
                comps = [(idx[0], ast.Constant(j)) for j in range(t.shape[1])]
            else:
                comps = [tuple(idx)]
        out = []
        for c in comps:
            parts = [key_atom] + [ast.Constant(x) if isinstance(x, int) else x for x in c]
            sl = parts[0] if len(parts) == 1 else ast.Tuple(parts, ast.Load())
            out.append((arr, sl))
        return out

    def s_FieldStore(self, s):
        key = self.expr(s.key)[0]
        vals = self.expr(s.value)
        for (arr, sl), v in zip(self.field_slots(s.field, key, s.index), vals):
            self.alg.out.append(ast.Assign([ast.Subscript(name(arr), sl, ast.Store())], v))

    def s_FieldReduce(self, s):
        if id(s) in self.layout_of:
            k, site = self.layout_of[id(s)]
            stores = self.a.layouts[k].stores
            if stores and stores[site.offset][1]:
                return  # the negation of an earlier site's value: its slot is shared
            return self.slot_write(s, self.expr(s.value))
        vals = self.expr(s.value)
        key = self.expr(s.key)[0]
        et = elem_of(s.field.type)
        for (arr, sl), v in zip(self.field_slots(s.field, key, s.index), vals):
            cur = self.alg.bind(ast.Subscript(name(arr), sl, ast.Load()))
            new = semantics.reduce_step(self.alg, s.op, cur, v, et)
            self.alg.out.append(ast.Assign([ast.Subscript(name(arr), sl, ast.Store())], new))

    def s_GlobalReduce(self, s):
        self.slot_write(s, self.expr(s.value))

    def slot_write(self, s, vals):
        k, site = self.layout_of[id(s)]
        lay = self.a.layouts[k]
        arr = self.params.get("slots", lay, f"{k}")
        slot = self.alg.bind(self.stored_slot(k, lay, site))
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
            counter = self.alg.fresh("_it")
            self.loop_counters[id(s)] = counter
            saved = self.alg.out
            self.alg.out = []
            self.bind_static_loop_var(s, counter)
            body = self.alg.out + self.sub_block(s.body)
            self.alg.out = saved
            self.alg.out.append(ast.For(store(counter), call("range", ast.Constant(trip)), body,
                                        []))
            return
        bounds = [self.expr(x)[0] for x in (s.start, s.stop, s.step)]
        self.alg.out.append(ast.For(store(var), call("range", *bounds), self.sub_block(s.body),
                                    []))

    def bind_static_loop_var(self, s, counter):
        if isinstance(s, ir.ForRange):
            var = self.local_names(s.var, i64)[0]
            values = range(s.start.value, s.stop.value, s.step.value)
            if values:
                self.static_ranges[s.var] = (min(values), max(values) + 1)
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
        counter = self.alg.fresh("_it")
        self.loop_counters[id(s)] = counter
        saved = self.alg.out
        self.alg.out = []
        self.bind_static_loop_var(s, counter)
        body = self.alg.out + self.sub_block(s.body)
        self.alg.out = saved
        self.alg.out.append(ast.For(store(counter), call("range", ast.Constant(s.seq.type.n)),
                                    body, []))

    def s_ForGroup(self, s):
        key = self.expr(s.group.key)[0]
        g = s.group.grouping
        off = self.params.get("goff", g, g.name)
        rows = self.params.get("grows", g, g.name)
        j = self.alg.fresh("_j")
        lo = self.alg.bind(ast.Subscript(name(off), key, ast.Load()))
        hi = self.alg.bind(ast.Subscript(name(off), ast.BinOp(key, ast.Add(), ast.Constant(1)),
                                         ast.Load()))
        var = self.local_names(s.var, KeyType(g.source))[0]
        bind = ast.Assign([store(var)], ast.Subscript(name(rows), name(j), ast.Load()))
        self.alg.out.append(ast.For(store(j), call("range", lo, hi),
                                    [bind] + self.sub_block(s.body), []))

    def s_Break(self, s):
        self.alg.out.append(ast.Break())

    def s_Continue(self, s):
        self.alg.out.append(ast.Continue())

    def s_Return(self, s):
        self.alg.out.append(ast.Continue())  # top level only: next row

    def s_Pass(self, s):
        pass

    def s_Delete(self, s):
        arr = self.params.get("delete", self.a.relation, "del")
        self.alg.out.append(ast.Assign([ast.Subscript(name(arr), name("_row"), ast.Store())],
                                       ast.Constant(True)))

    def s_Insert(self, s):
        k, site = self.insert_of[id(s)]
        lay = self.a.inserts[k]
        vals = [self.expr(v) for v in s.values]
        slot = self.alg.bind(self.slot_index(lay, site))
        flags = self.params.get(f"ins{k}flag", lay, "flags")
        for f, comps in zip(s.names, vals):
            arr = self.params.get(f"ins{k}val", f, f.name)
            for c, v in enumerate(comps):
                self.alg.out.append(ast.Assign([ast.Subscript(name(arr), ast.Tuple(
                    [slot, ast.Constant(c)], ast.Load()), ast.Store())], v))
        self.alg.out.append(ast.Assign([ast.Subscript(name(flags), slot, ast.Store())],
                                       ast.Constant(True)))

    def e_Affine(self, e):
        k = self.expr(e.key)[0]
        grid = e.type.relation.grid
        checked = isinstance(e.key, ir.Centred)  # checked per launch space, not per access
        delta = 0
        out = k
        for d, n, st, periodic in zip(e.offsets, grid.shape, grid.strides, grid.periodic):
            if d == 0:
                continue
            if checked and not periodic:
                delta += d * st
                continue
            c = self.alg.bind(ast.BinOp(ast.BinOp(k, ast.FloorDiv(), ast.Constant(st)),
                                        ast.Mod(), ast.Constant(n)))
            moved = ast.BinOp(c, ast.Add(), ast.Constant(d))
            if periodic:
                c2 = self.alg.bind(ast.BinOp(moved, ast.Mod(), ast.Constant(n)))
            else:
                c2 = self.alg.bind(moved)
                self.alg.out.append(ast.If(ast.BoolOp(ast.Or(), [
                    ast.Compare(c2, [ast.Lt()], [ast.Constant(0)]),
                    ast.Compare(c2, [ast.GtE()], [ast.Constant(n)])]),
                    [self.flag_error(e.loc.line), ast.Assign([store(c2.id)], c)], []))
            out = self.alg.bind(ast.BinOp(out, ast.Add(), ast.BinOp(
                ast.BinOp(c2, ast.Sub(), c), ast.Mult(), ast.Constant(st))))
        if delta:
            out = self.alg.bind(ast.BinOp(out, ast.Add(), ast.Constant(delta)))
        return [out]

    # -- expressions: each returns a list of atoms (one per component) --------------------
    def expr(self, e) -> list:
        return getattr(self, "e_" + type(e).__name__)(e)

    def e_Const(self, e):
        return [self.alg.const(e.value, e.type)]

    def e_Local(self, e):
        return [name(n) for n in self.local_names(e.name, self.a.locals[e.name])]

    def e_Centred(self, e):
        return [name("_row")]

    def e_GlobalRead(self, e):
        arr = self.params.get("global", e.ref, "g")
        return [self.alg.bind(ast.Subscript(name(arr), ast.Tuple(
            [ast.Constant(0)] + [ast.Constant(x) for x in idx], ast.Load()) if idx else
            ast.Constant(0), ast.Load())) for idx in _all_index_tuples(e.ref.type.shape)]

    def e_FieldRead(self, e):
        key = self.expr(e.key)[0]
        return [self.alg.bind(ast.Subscript(name(arr), sl, ast.Load()))
                for arr, sl in self.field_slots(e.field, key, ())]

    def e_Index(self, e):
        bt = e.base.type
        if isinstance(e.base, ir.FieldRead) and not isinstance(bt, ScalarType):
            key = self.expr(e.base.key)[0]
            return [self.alg.bind(ast.Subscript(name(arr), sl, ast.Load()))
                    for arr, sl in self.field_slots(e.base.field, key, e.index)]
        base = self.expr(e.base)
        pos = self.positions(bt, e.index)
        if isinstance(pos[0], int):
            return [base[p] for p in pos]
        tup = self.alg.bind(ast.Tuple(base, ast.Load()))
        n_out = e.type.ncomp if isinstance(e.type, (VecType, MatType)) else 1
        return [self.alg.bind(ast.Subscript(tup, ast.BinOp(pos[0], ast.Add(), ast.Constant(j))
                                            if j else pos[0], ast.Load())) for j in range(n_out)]

    def e_BinOp(self, e):
        return semantics.binop(self.alg, e.op, self.expr(e.left), self.expr(e.right),
                               e.left.type, e.right.type, e.type)

    def e_UnaryOp(self, e):
        return semantics.unop(self.alg, e.op, self.expr(e.operand), e.type)

    def e_Compare(self, e):
        a, b = self.expr(e.left)[0], self.expr(e.right)[0]
        et = e.left.type if isinstance(e.left.type, ScalarType) else i64
        return [self.alg.compare(e.op, a, b, et)]

    def e_BoolOp(self, e):
        """Short-circuit: later operands are evaluated only when needed."""
        res = self.alg.fresh()
        first = self.expr(e.values[0])[0]
        self.alg.out.append(ast.Assign([store(res)], first))
        for v in e.values[1:]:
            saved = self.alg.out
            self.alg.out = []
            val = self.expr(v)[0]
            self.alg.out.append(ast.Assign([store(res)], val))
            inner = self.alg.out
            self.alg.out = saved
            test = name(res) if e.op == "and" else ast.UnaryOp(ast.Not(), name(res))
            self.alg.out.append(ast.If(test, inner, []))
        return [name(res)]

    def e_IfExp(self, e):
        test = self.expr(e.test)[0]
        n = e.type.ncomp if hasattr(e.type, "ncomp") else 1
        res = [self.alg.fresh() for _ in range(n)]
        branches = []
        for branch in (e.body, e.orelse):
            saved = self.alg.out
            self.alg.out = []
            vals = self.expr(branch)
            self.alg.out.extend(ast.Assign([store(r)], v) for r, v in zip(res, vals))
            branches.append(self.alg.out)
            self.alg.out = saved
        self.alg.out.append(ast.If(test, branches[0], branches[1]))
        return [name(r) for r in res]

    def e_Call(self, e):
        args = [self.expr(a) for a in e.args]
        return semantics.call(self.alg, e.func, args, [a.type for a in e.args], e.type)

    def e_Cast(self, e):
        return semantics.cast(self.alg, self.expr(e.value), e.value.type, e.type)

    def e_TupleExpr(self, e):
        out = []
        for x in e.elts:
            out.extend(self.expr(x))
        return out


def _all_index_tuples(shape):
    if not shape:
        return [()]
    if len(shape) == 1:
        return [(i,) for i in range(shape[0])]
    return [(i, j) for i in range(shape[0]) for j in range(shape[1])]


def _with_comp(sub: ast.Subscript, c: int) -> ast.Subscript:
    t = sub.slice
    return ast.Subscript(sub.value, ast.Tuple([t.elts[0], ast.Constant(c)], ast.Load()),
                         ast.Store())

