"""The CPU's row-loop drivers around the shared body lowering (`body.py`). The generated module
holds:

* `kernel_parallel` over the launch's positions, as a part function (`parts.py`: part ``_t``
  of ``_nt`` of the positions; a serial launch runs it as part 0 of 1, a parallel one as one
  part per thread):
  the row is the position over a whole relation, `_rows[position]` over a subset (a test of
  `_has_rows` the row loop makes at run time, which LLVM hoists: measured, no slower than a
  function for each on 2M-row gathers, axpys, dots and scatters at 1 and 2 threads). One
  function serves both, so a program launching a kernel over a whole relation and over subsets
  (every `mpiexec` rank runs its share of the rows) compiles it once, and its serial and
  parallel launches run the same compiled function;
* `targets_<k>`: for each key-reduced field, the target row of every reduction slot (used to
  build the inverse index that folds the slots in serial order, and the owned/shared split);
* when the kernel reduces into fields through keys, two more ways to apply those reductions
  (`scatter`; Globals keep their slots): `kernel_direct` (serial) adds each contribution
  straight to the field, in row order; `kernel_split` runs contiguous blocks of rows in
  parallel (parts of the blocks of `_bounds`), each adding its contributions to the targets it owns
  directly and parking those to shared targets in `_shv<k>` at `_own<k>[m * per_row + site]`
  (`ownership.py`; m = `_mixed[pos]`, the row's index among the rows reaching a shared target),
  folded afterwards in slot order (in a row with no shared target, `_mixed[pos]` -1, every
  site adds directly; the body is emitted once, each site tests the row's index). All three
  give the same bits;
* over a grid relation of two or more axes (and no reductions into fields through keys):
  `kernel_grid`, nested loops over a box of cells (`grid_loops.py`; parts of its outer axis);
* when the kernel sums into float64 Globals (and reduces into no field through keys):
  `kernel_lanes_parallel` (parts of its chunks of rows), which adds those contributions into
  the TwoSum lanes of `folds.lane_sums` as they go (`_lanes`, one chunk of rows per outer
  iteration), instead of
  parking them in slots; the launch then rounds the lanes once (`lane_sums.finish`). A kernel
  whose only effects are its Global reductions (`pure_reduction`) writes no Global slots
  there: when the check cannot decide, the launch runs it again with its slots (same inputs,
  same contributions). Any other kernel also writes its slots, summed exactly in that case.

A field's reduction slots are written pre-permuted into fold order (`_spos`). A variant built
with `absorb` first folds, in each row, the slots of key reductions another launch left
pending on a field the kernel touches only at its own key (`pending_folds.py`).

Each function is lowered with a ``range`` loop and, for the parallel ones, a ``prange`` twin;
`parts.as_parts` turns each ``prange`` function into its part function (the module's
`_PARTS`, called by their wrappers through their machine-code addresses) and drops the
``range`` twin. Every
function takes `_n, _rows, _has_rows, _err`, then `params.items` in order, then its own extra
arguments (the absorbed folds' arrays; `_tgt` for `targets_<k>`); a part function takes
``_t, _nt`` first.
"""
from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from .... import philox
from ....relations.field import Field
from ....types import elem_of, f64
from ... import ir, semantics
from ...folds import lane_sums
from ...lowering import copy_propagation, dead_assignments, hoist, load_reuse, single_assignment
from ...lowering.body import BodyLowerer
from ...lowering.emit import call, functions_block, name, store, unsigned
from ...lowering.expr import ERR, POS, ROW
from ...lowering.pending_folds import fold_pending_row
from . import choice, fused, libm, outline, parts, row_work, stack
from .grid_loops import GridPlan

MIXED_ROW = "_mixed_row"  # split: this row's index among those reaching a shared target, or -1
# the parallel functions a large body of which is outlined (`outline`): the grid loops (one
# line of cells per call). Not the others: outlined, LULESH's large row kernels ran 6-28%
# slower (kinematics, q_limiter) and Airfoil's split and lanes loops ~18% (the same bits)
OUTLINED_LOOPS = frozenset({"kernel_grid"})
# every other parallel function is outlined too where its body is huge (`outline.HUGE`
# statements: generated adjoint and tangent kernels, none of the user kernels measured; a
# kernel relsim generates from `outline.HUGE_GENERATED`), where Numba's parallel passes take
# minutes and a call a block of rows costs nothing (outlined before Numba's parfor passes
# left, `parts.py`; kept: the body compiles as a function of its own)
# the serial twin of each parallel function, dropped: its launches run the parallel one's
# part function over all its iterations, as one part (`parts.as_parts`: one compilation)
SERIAL_TWINS = {"kernel_serial": "kernel_parallel",
                "kernel_lanes_serial": "kernel_lanes_parallel", "kernel_grid_serial": "kernel_grid"}
LANE = "_j"  # lanes variants: the row's lane
CHUNK_LANES = "_ln"  # lanes variants: the chunk's lanes, (components, STATE, LANES)
ONE = "_one"  # lanes variants: 1.0 the optimiser cannot see (`fused.one`)


def _inlined_sources() -> str:
    h = hashlib.sha256()
    for module in (philox, stack, fused, choice, libm):
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:16]


_HEADER = ("import math\nimport numpy as np\nfrom numba import prange\n"
           "from relsim.runtime.backends.cpu import libm as _libm\n"
           "from relsim.runtime.backends.cpu import stack as _stack\n"
           "from relsim.runtime.backends.cpu import fused as _fused\n"
           "from relsim.runtime.backends.cpu import choice as _choice\n"
           "from relsim import philox as _philox\n"
           "_u64 = np.uint64\n"
           "_f64, _f32, _i64, _i32, _bool = np.float64, np.float32, np.int64, np.int32, "
           "np.bool_\n_INF = float('inf')\n_NAN = float('nan')\n"
           # Numba compiles relsim.philox and the intrinsics into a kernel's machine code and
           # caches it by the generated module's text: naming their sources there recompiles on
           # a change
           f"_INLINED_SOURCES = '{_inlined_sources()}'\n")


class CpuLowerer(BodyLowerer):
    def __init__(self, analysed, absorb=(), debug=None, fused=False):
        super().__init__(analysed, debug)
        self.alg.pick_call = "_choice.pick"  # cheap choices without a branch (`choice.py`)
        # (field, operator, has slot ids) of each pending key reduction this variant folds at
        # the start of each row; their arrays are extra arguments (offsets, slot ids or None
        # when the slots are stored in fold order, slot values)
        self.absorb = tuple(absorb)
        # how the function being lowered applies reductions into fields through keys:
        # "slots" (parked, folded after the kernel), "direct" or "split" (see the docstring)
        self.scatter = "slots"
        self.field_layouts = [k for k, lay in enumerate(analysed.layouts)
                              if lay.on_field]
        self.grid_plan = None  # set while the grid loops' fast body is lowered
        # float64 Global sums the lanes variants accumulate: layout index -> first component
        self.lane_offsets = lane_layouts(analysed) if debug is None and not self.field_layouts \
            else {}
        # Global min/max, arg-min/arg-max and integer sums the lanes variants fold per chunk
        # of rows as they go (`chunk_layouts`): layout index -> operator
        self.chunk_ops = chunk_layouts(analysed) if debug is None and not self.field_layouts \
            else {}
        self.lane_store = not pure_reduction(analysed)  # the lanes variants also write slots
        self.lanes = False  # set while the lanes variants' body is lowered
        self.fused = fused  # the TwoSum lanes add partly with fused multiply-adds (`fused`)

    # -- the seam (body.BodyLowerer) ------------------------------------------------------
    def slot_place(self, k, lay, slot):
        """Where slot `slot` lives: a field's slots are stored in the order they are folded
        (grouped by target row, ascending), so the fold reads them contiguously; the kernel
        writes each through the permutation `_spos` (computed once per key-field version)."""
        if not lay.on_field:  # a Global's: folded serially, in order
            return super().slot_place(k, lay, slot)
        spos = self.params.slot_places(k, lay).name
        return ast.Subscript(name(spos), unsigned(slot), ast.Load())

    def next_row(self) -> ast.stmt:
        return ast.Continue()  # the next iteration of the row loop

    def e_Affine(self, e):
        if self.grid_plan is not None and isinstance(e.key, ir.Centred):
            return [self.grid_plan.neighbour(self.alg, e.offsets)]
        return super().e_Affine(e)

    def parks(self, lay) -> bool:
        if self.lanes and not lay.on_field:  # folded in the loop: slots only for the exact path
            k = next(i for i, other in enumerate(self.a.layouts) if other is lay)
            if k in self.chunk_ops:
                return False
            if k in self.lane_offsets:
                return self.lane_store
        return self.scatter == "slots" or not lay.on_field

    def s_GlobalReduce(self, s):
        k = self.layout_of[id(s)][0] if self.lanes and id(s) in self.layout_of else None
        if k in self.chunk_ops:
            return self.chunk_fold(k, self.chunk_ops[k], s)
        if k not in self.lane_offsets:
            return super().s_GlobalReduce(s)
        vals = self.expr(s.value)
        if self.lane_store:
            self.slot_write(s, vals)
        for c, v in enumerate(vals):
            self.two_sum_into_lane(self.lane_offsets[k] + c, v)

    def chunk_fold(self, k, op, s):
        """Fold the row's contribution into lane `_j` of chunk `_ci` of Global layout k: an
        integer sum into `_cv<k>[_ci, component, _j]`; a min/max or arg-min/arg-max keeps the
        lane's first best value there and its row in `_cr<k>[...]` (`semantics.arg_better`:
        strictly better, or the first NaN). `lanes.Chunks` folds the lanes after the launch
        into the slot fold's value and row (`host_folds.fold_candidates`)."""
        et = elem_of(s.ref.type)
        vals = semantics.cast(self.alg, self.expr(s.value), s.value.type, s.ref.type)

        def at(arr, c, ctx=None):
            idx = ast.Tuple([name("_ci"), ast.Constant(c), name(LANE)], ast.Load())
            return ast.Subscript(name(arr), idx, ctx or ast.Load())

        for c, v in enumerate(vals):
            cur = self.alg.bind(at(f"_cv{k}", c))
            if op == "+":
                new = self.alg.binop("+", cur, v, et)
                self.alg.out.append(ast.Assign([at(f"_cv{k}", c, ast.Store())], new))
                continue
            arg_op = op if op in ("argmin", "argmax") else "arg" + op
            take = semantics.arg_better(self.alg, arg_op, cur, v, et)
            self.alg.out.append(ast.If(take, [
                ast.Assign([at(f"_cv{k}", c, ast.Store())], v),
                ast.Assign([at(f"_cr{k}", c, ast.Store())], name(ROW))], []))

    def two_sum_into_lane(self, q, v):
        """Add v to component q's lane `_j` of the chunk's lanes `_ln` (s, e, p: see
        `lane_sums`): s + v == t + err exactly (TwoSum), err and |err| summed."""
        bind, out = self.alg.bind, self.alg.out

        def lane(part):
            idx = ast.Tuple([ast.Constant(q), ast.Constant(part), name(LANE)], ast.Load())
            return ast.Subscript(name(CHUNK_LANES), idx, ast.Load())

        def op(a, o, b):
            return ast.BinOp(a, o(), b)

        def add(a, b):  # a + b on the fused multiply-add pipes (`fused`), else plainly
            return call("_fused.fma", a, name(ONE), b) if self.fused else op(a, ast.Add, b)

        def neg(a):
            return ast.UnaryOp(ast.USub(), a)

        x = bind(call("_f64", v))
        a = bind(lane(0))
        t = bind(op(a, ast.Add, x))
        z = bind(op(t, ast.Sub, a))
        # err = (a - (t - z)) + (x - z); its first two subtractions and e + err on fma pipes
        err = bind(op(add(neg(add(neg(z), t)), a), ast.Add, op(x, ast.Sub, z)))
        for part, value in ((0, t), (1, add(err, lane(1))),
                            (2, op(lane(2), ast.Add, call("abs", err)))):
            target = lane(part)
            target.ctx = ast.Store()
            out.append(ast.Assign([target], value))

    def s_FieldReduce(self, s):
        if self.scatter == "slots" or id(s) not in self.layout_of:
            return super().s_FieldReduce(s)
        if self.debug is not None:
            key, vals = self.reduce_operands(s)
        else:
            vals = self.expr(s.value)
            key = self.expr(s.key)[0]
        if self.scatter == "direct":
            return self.reduce_in_place(s, key, vals)
        # split: in a row reaching no shared target (most rows) directly; in a mixed row an
        # owned target (place -1) directly, a shared one through its parked slot. The test is
        # per site, so the row's body is generated (and compiled) once, not twice
        k, site = self.layout_of[id(s)]
        saved = self.alg.out
        self.alg.out = []
        self.reduce_in_place(s, key, vals)
        direct, self.alg.out = self.alg.out, []
        lay = self.a.layouts[k]  # (a mixed row's places: at its index among the mixed rows)
        at = ast.BinOp(name(MIXED_ROW), ast.Mult(), ast.Constant(lay.per_row))
        place = self.alg.bind(ast.Subscript(name(f"_own{k}"),
                                            unsigned(self.slot_index(lay, site, at)), ast.Load()))
        mixed, self.alg.out = self.alg.out, []
        self.slot_write(s, vals, f"_shv{k}", place)
        parked, self.alg.out = self.alg.out, saved
        mixed.append(ast.If(ast.Compare(place, [ast.Lt()], [ast.Constant(0)]), direct, parked))
        self.alg.out.append(ast.If(ast.Compare(name(MIXED_ROW), [ast.GtE()], [ast.Constant(0)]),
                                   mixed, direct))

    # -- functions and row loops ----------------------------------------------------------
    def module(self) -> ast.Module:
        kernel_body = self.row_loop(self.kernel_row_body)
        targets = []
        for k, lay in enumerate(self.a.layouts):
            if lay.on_field:  # a field: its slots need target rows
                body = self.row_loop(lambda lay=lay: self.targets_row_body(lay))
                targets.append((k, body))
        # functions are assembled last: all of them take every array any of them uses
        # over a whole relation the row is the loop index; over a subset, rows[index]
        # (separate functions: Numba compiles only the variants a program launches)
        # (an absorbing variant lowers the other variants' bodies too, and drops them: every
        # function takes the same parameters, which lowering them registers)
        scattered = {}
        if self.field_layouts:
            for mode in ("direct", "split"):
                self.scatter = mode
                scattered[mode] = self.row_loop(self.kernel_row_body)
            self.scatter = "slots"
        grid = self.a.relation.grid
        grid_bodies = None
        if grid is not None and len(grid.shape) >= 2 and not self.field_layouts:
            self.grid_plan = GridPlan(grid, self.params.grid_shape(self.a.relation).name)
            fast = self.row_loop(self.kernel_row_body)
            self.grid_plan.peel = True
            peeled = self.row_loop(self.kernel_row_body)
            fast_body = fast[0].body[2:]
            if outline.large(fast_body):  # one copy: see GridPlan.function
                fast_body = None
            grid_bodies = (peeled[0].body[2:], fast_body)
        plan, self.grid_plan = self.grid_plan, None
        if self.absorb:
            scattered, grid_bodies = {}, None
        lanes_loop = None
        if (self.lane_offsets or self.chunk_ops) and not self.absorb:
            self.lanes = True
            lanes_loop = self.row_loop(self.kernel_row_body)
            self.lanes = False
        funcs = [self.function(f"kernel_{mode}", kernel_body, fn, extra=self.absorb_params())
                 for mode, fn in (("serial", "range"), ("parallel", "prange"))]
        if scattered:
            funcs.append(self.function("kernel_direct", scattered["direct"], "range"))
            funcs.append(self.split_function("kernel_split", scattered["split"]))
        funcs += [self.function(f"targets_{k}", body, "range", extra=["_tgt"])
                  for k, body in targets]
        if lanes_loop is not None:
            funcs += [self.lanes_function(f"kernel_lanes_{mode}", lanes_loop, fn)
                      for mode, fn in (("serial", "range"), ("parallel", "prange"))]
        if grid_bodies is not None:
            args = ["_n", "_rows", "_has_rows", ERR] + [p.name for p in self.params.items] + \
                ["_lo", "_hi"]
            for fname, fn in (("kernel_grid", "prange"), ("kernel_grid_serial", "range")):
                funcs.append(plan.function(fname, args, *grid_bodies, fn))
            funcs.append(ast.Assign([store("_GRID_REACH")], ast.Constant(plan.reach)))
        bodies = []  # the large loops' bodies, as callees (`outline`)
        made = {}  # (one function for the same body in several variants)
        for i, fn in enumerate(funcs):
            if isinstance(fn, ast.FunctionDef):
                body, funcs[i] = outline.outlined(fn, self.outline_from(fn.name), made)
                if body is not None:
                    bodies.append(body)
        funcs, part_fns = parts.as_parts(funcs, SERIAL_TWINS)
        header = ast.parse(_HEADER).body
        part_names = ast.Assign([store("_PARTS")], ast.Tuple(
            [ast.Constant(f.name) for f in part_fns], ast.Load()))
        mod = ast.Module(header + functions_block(self.alg, bodies + part_fns) + [part_names] +
                         funcs, [])
        _number_statements(mod.body)
        return mod

    def outline_from(self, fname) -> int:
        """How many statements a parallel loop's body of function `fname` needs to be
        outlined (`outline.py`): the grid loops' and a debug variant's from
        `outline.OUTLINE_STATEMENTS` (a debug run is for finding errors: its parallel variants
        compiled in 7-10 s inline, the checks' branches in every row), a generated kernel's
        from `outline.HUGE_GENERATED`, any other's from `outline.HUGE`."""
        if fname in OUTLINED_LOOPS or self.debug is not None:
            return outline.OUTLINE_STATEMENTS
        return outline.HUGE_GENERATED if self.a.generated else outline.HUGE

    def function(self, fname, loop_stmts, range_fn, extra=()):
        fixed = ["_n", "_rows", "_has_rows", ERR]
        args = fixed + [p.name for p in self.params.items] + list(extra)
        body = [self._rename_range(s, range_fn) for s in loop_stmts]
        return ast.FunctionDef(fname, ast.arguments([], [ast.arg(a) for a in args], None, [],
                                                    [], None, []), body, [], None, None)

    def split_function(self, fname, split_loop):
        """The row loop split into the contiguous blocks `_bounds`, the blocks in parallel. In
        a row none of whose targets is shared (`_mixed[pos]` -1: most rows) every site adds
        directly; in the others (`_mixed[pos]`: the row's index among them) each site looks up
        its slot's place (`_own<k>`, kept for those rows only)."""
        extra = ["_bounds", "_mixed"] + [f"_{part}{k}" for k in self.field_layouts
                                         for part in ("own", "shv")]
        (split,) = split_loop
        mixed = ast.Assign([store(MIXED_ROW)],
                           ast.Subscript(name("_mixed"), unsigned(name(POS)), ast.Load()))
        body = split.body[:2] + [mixed] + split.body[2:]
        loop = [ast.For(split.target, split.iter, body, [])]
        fn = self.function(fname, loop, "range", extra=extra)
        rows_loop = fn.body[0]
        bound = lambda i: ast.Subscript(name("_bounds"), i, ast.Load())  # noqa: E731
        rows_loop.iter = call("range", bound(name("_b")),
                              bound(ast.BinOp(name("_b"), ast.Add(), ast.Constant(1))))
        nblocks = ast.BinOp(ast.Subscript(ast.Attribute(name("_bounds"), "shape", ast.Load()),
                                          ast.Constant(0), ast.Load()), ast.Sub(), ast.Constant(1))
        fn.body = [ast.For(store("_b"), call("prange", nblocks), [rows_loop], [])]
        return fn

    def lanes_function(self, fname, lanes_loop, range_fn):
        """The row loop cut into `_lanes.shape[0]` chunks (`range_fn` over them), each chunk's
        rows in blocks of LANES, row `_b + _j` into lane `_j`. The chunk's float lanes live on
        the stack (`stack.zeros`: in registers, not stored back each block) and are copied to
        `_lanes[_ci]` after its rows. A small row body (no grouping loops) runs the whole blocks
        without a bounds test and the last few rows in a second copy of the body (measured: the
        test alone kept a dot product's loop 1.5x slower); a large one is not copied (compile
        time)."""
        chunks = [f"_{part}{k}" for k, op in self.chunk_ops.items()
                  for part in (("cv",) if op == "+" else ("cv", "cr"))]
        fn = self.function(fname, lanes_loop, "range", extra=["_lanes"] + chunks)
        (row_loop,) = fn.body
        width = ast.Constant(lane_sums.LANES)

        def assign(target, value):
            return ast.Assign([store(target)], value)

        def op(a, o, b):
            return ast.BinOp(a, o(), b)

        def loop(var, it, body):
            return ast.For(store(var), it, body, [])

        body = row_loop.body
        lo, hi, chunk = name("_lo"), name("_hi"), name("_ci")
        if row_work.operations(self.a.body) < row_work.LIGHT_ROW and \
                not row_work.grouping_loops(self.a.body):
            blocks = [
                assign("_full", op(lo, ast.Add, op(op(op(hi, ast.Sub, lo), ast.FloorDiv, width),
                                                   ast.Mult, width))),
                loop("_b", call("range", lo, name("_full"), width), [
                    loop(LANE, call("range", width),
                         [assign("_i", op(name("_b"), ast.Add, name(LANE)))] + body)]),
                loop("_i", call("range", name("_full"), hi),
                     [assign(LANE, op(name("_i"), ast.Sub, name("_full")))] + body)]
        else:
            blocks = [loop("_b", call("range", lo, hi, width), [loop(LANE, call("range", width), [
                assign("_i", op(name("_b"), ast.Add, name(LANE))),
                ast.If(ast.Compare(name("_i"), [ast.GtE()], [hi]), [ast.Continue()], [])] +
                body)])]
        ncomp = sum(lay.target.type.ncomp for k, lay in enumerate(self.a.layouts)
                    if k in self.lane_offsets)
        if ncomp:  # (else only chunk-folded Globals: no float lanes)
            start = [assign(CHUNK_LANES, call("_stack.zeros", *(
                ast.Constant(v) for v in (ncomp, lane_sums.STATE, lane_sums.LANES))))]
            out = ast.Subscript(name("_lanes"), ast.Tuple(
                [chunk, name("_q"), name("_k"), name(LANE)], ast.Load()), ast.Store())
            lane = ast.Subscript(name(CHUNK_LANES), ast.Tuple(
                [name("_q"), name("_k"), name(LANE)], ast.Load()), ast.Load())
            copy_out = [loop("_q", call("range", ast.Constant(ncomp)), [
                loop("_k", call("range", ast.Constant(lane_sums.STATE)), [
                    loop(LANE, call("range", width), [ast.Assign([out], lane)])])])]
        else:
            start, copy_out = [], []
        nch = name("_nch")
        one = [assign(ONE, call("_fused.one"))] if ncomp and self.fused else []
        fn.body = one + [
            assign("_nch", ast.Subscript(ast.Attribute(name("_lanes"), "shape", ast.Load()),
                                         ast.Constant(0), ast.Load())),
            loop("_c", call(range_fn, nch), [
                assign("_ci", call("_i64", name("_c"))),  # prange's index is unsigned
                assign("_lo", op(op(name("_n"), ast.Mult, chunk), ast.FloorDiv, nch)),
                assign("_hi", op(op(name("_n"), ast.Mult, op(chunk, ast.Add, ast.Constant(1))),
                                 ast.FloorDiv, nch)),
            ] + start + blocks + copy_out),
        ]
        return fn

    @staticmethod
    def _rename_range(stmt, range_fn):
        """The row loop over `range_fn`; the body is shared between the serial and the parallel
        function, not copied (the module is only unparsed: no pass mutates it afterwards)."""
        return ast.For(stmt.target, call(range_fn, *stmt.iter.args), stmt.body, stmt.orelse)

    def row_loop(self, make_body):
        saved = self.alg.out
        self.alg.out = []
        # prange's index is unsigned: make it a signed int64 first (uint64 + int64 -> float64)
        self.alg.out.append(ast.Assign([store(POS)], call("_i64", name("_i"))))
        self.alg.out.append(ast.Assign([store(ROW)], ast.IfExp(
            name("_has_rows"), ast.Subscript(name("_rows"), unsigned(name(POS)), ast.Load()),
            name(POS))))
        make_body()
        # (per row: nothing outside reads its locals)
        body = single_assignment.rename(self.alg.out)
        if self.debug is None:  # (a debug variant checks each operation where it was)
            body = load_reuse.reuse(body)
        body = copy_propagation.propagate(body)
        if self.debug is None:
            body = hoist.invariants(dead_assignments.drop(body))
        self.alg.out = saved
        return [ast.For(store("_i"), call("range", name("_n")), body, [])]

    def absorb_params(self) -> list:
        return [f"_absorb{i}_{part}" for i in range(len(self.absorb))
                for part in ("off", "ids", "vals")]

    def kernel_row_body(self):
        mark = len(self.alg.out)
        self.emit_row()
        if self.absorb:  # pending reductions first, in launch order (emitted after the body
            body = self.alg.out[mark:]  # so that the parameters keep their order)
            del self.alg.out[mark:]
            for i, (field, op, has_ids) in enumerate(self.absorb):
                fold_pending_row(self.alg, i, self.field_slots(field, name(ROW), ()), op,
                                 has_ids, elem_of(field.type))
            self.alg.out.extend(body)


def lane_layouts(analysed) -> dict:
    """{layout index: first lane component} of the kernel's exact float64 Global sums, in
    layout order (each Global's components consecutive). An ordered sum stays in slots."""
    out, q = {}, 0
    for k, lay in enumerate(analysed.layouts):
        if not lay.on_field and semantics.sums_exactly(lay.target, lay.op) and \
                elem_of(lay.target.type) == f64:
            out[k] = q
            q += lay.target.type.ncomp
    return out


def chunk_layouts(analysed) -> dict:
    """{layout index: operator} of the kernel's Global reductions the lanes variants fold per
    chunk of rows in the loop (`CpuLowerer.chunk_fold`): min/max, arg-min/arg-max, and integer
    sums every row reaches (one a row may skip stays in slots: a slot's identity store and
    its conditional store merge into one branch-free store, which a lane's read-add-write
    under the row's branch cannot: 2-3x slower on a random condition)."""
    out = {}
    for k, lay in enumerate(analysed.layouts):
        et = elem_of(lay.target.type)
        if not lay.on_field and (lay.op in ("min", "max", "argmin", "argmax") or
                                 (lay.op == "+" and et.is_int and not lay.conditional)):
            out[k] = lay.op
    return out


def pure_reduction(analysed) -> bool:
    """Whether the kernel's only effects are its reductions into Globals: it writes no field
    and inserts or deletes no row, so running it twice gives the same contributions."""
    return not analysed.inserts and not analysed.deletes and all(
        a.mode == "read" for a in analysed.summary.accesses if isinstance(a.target, Field))


def _number_statements(stmts) -> None:
    """Give every statement a line number: `ast.unparse` reads one from statements (for type
    comments) and nothing else needs them. Cheaper than `ast.fix_missing_locations`, which
    visits every expression node too (~0.3 s of a warm run of a large program)."""
    for s in stmts:
        s.lineno = 1
        for part in ("body", "orelse"):
            sub = getattr(s, part, None)
            if sub:
                _number_statements(sub)
