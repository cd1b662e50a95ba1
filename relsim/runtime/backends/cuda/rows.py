"""The CUDA driver around the shared body lowering (`body.py`): the same statements and
expressions (so the same `semantics`), inside `numba.cuda` kernels. The generated module holds
plain functions that the cuda backend (`backends/cuda/backend.py`) compiles with ``cuda.jit``:

* `kernel` over a whole relation (the row is the position) and `kernel_rows` over a subset (the
  row is `_rows[position]`): one thread per row, a grid-stride loop over the positions, so any
  launch shape covers every row;
* `targets_<k>`: for each key-reduced field, the target row of every reduction slot (the host
  builds the inverse index from it, `host_folds.build_inverse`, once per key version);
* `gather_<k>`: one thread per target row of key-reduced field k folds the row's slots in
  ascending slot order through the inverse index (`pending_folds.fold_pending_row`: the one fold
  rule, `semantics.reduce_step`), no atomics: the bits of the serial loop.

Reduction slots are stored at their number (not pre-permuted as on the cpu), so the gathers read
them through the slot ids. Every kernel function takes `_n, _rows, _has_rows, _err`, then
`params.items` in order (then `_tgt` for `targets_<k>`); a gather takes `_n` (target rows), the
field's storage and the index (`_absorb0_off`, `_absorb0_ids`, `_absorb0_vals`).

Math functions are called from `cuda_libm` (`_dev.<name>`, `_f32` suffix in single precision),
and so are float products (`_dev.mul`: never fused into a multiply-add, see `CudaEmitAlgebra`).
"""
from __future__ import annotations

import ast

from ....types import elem_of, f32
from ...builtin_table import MATH
from ...lowering.body import BodyLowerer
from ...lowering.emit import EmitAlgebra, call, functions_block, name, store, unsigned
from ...lowering.expr import ERR, POS, ROW
from ...lowering.pending_folds import fold_pending_row

_HEADER = ("import math\nimport numpy as np\nfrom numba import cuda\n"
           "from relsim.runtime.backends.cuda import libm as _dev\n"
           "from relsim import philox as _philox\n"
           "_u64 = np.uint64\n"
           "_f64, _f32, _i64, _i32, _bool = np.float64, np.float32, np.int64, np.int32, "
           "np.bool_\n_INF = float('inf')\n_NAN = float('nan')\n")


class CudaEmitAlgebra(EmitAlgebra):
    """The emitting algebra, with math calls and float products through `cuda_libm` (`_dev`):
    libdevice on a GPU, the oracle's functions in the simulator; products as CUDA's
    ``__dmul_rn`` / ``__fmul_rn``: NVVM contracts a product and a sum into one fused
    multiply-add (one rounding instead of two) even without fast-math, which the host never
    does; a product rounded on its own is never fused."""

    def __init__(self, fused: bool = False):
        super().__init__()
        self.fused = fused  # Config(fast_math=True): plain products, which NVVM may fuse

    def binop(self, op, a, b, t):
        if op == "*" and t.is_float and not self.fused:
            return self.bind(call("_dev.mul_f32" if t == f32 else "_dev.mul", a, b))
        return super().binop(op, a, b, t)

    def math(self, fname, args, t):
        fn = MATH.get(fname)
        if fn is None or fn.lowered is None:
            return super().math(fname, args, t)  # not lowered (semantics expands it): an error
        return self.bind(call(f"_dev.{fname}{'_f32' if t == f32 else ''}", *args))


class CudaLowerer(BodyLowerer):
    """`debug`: a `debug_checks.Sites` to lower the debug variant (the shared lowering emits the
    checks; the backend binds `DebugFirst`/`DebugValues`/`RelationSize`), else None.
    `fast_math`: float products as plain products, which NVVM fuses with sums into FMAs."""

    def __init__(self, analysed, debug=None, fast_math=False):
        super().__init__(analysed, debug)
        self.alg = CudaEmitAlgebra(fused=fast_math)

    # -- the seam (body.BodyLowerer) ------------------------------------------------------
    def next_row(self) -> ast.stmt:
        return ast.Continue()  # the next position of the grid-stride loop

    # -- functions ------------------------------------------------------------------------
    def module(self) -> ast.Module:
        whole = self.row_loop(self.emit_row, rows=False)
        subset = self.row_loop(self.emit_row, rows=True)
        targets = [(k, self.row_loop(lambda lay=lay: self.targets_row_body(lay), rows=None))
                   for k, lay in enumerate(self.a.layouts) if lay.on_field]
        gathers = [(k, self.gather_body(lay)) for k, lay in enumerate(self.a.layouts)
                   if lay.on_field]
        # assembled last: every kernel takes every array any of them uses
        fixed = ["_n", "_rows", "_has_rows", ERR] + [p.name for p in self.params.items]
        funcs = [_function("kernel", fixed, whole), _function("kernel_rows", fixed, subset)]
        funcs += [_function(f"targets_{k}", fixed + ["_tgt"], body) for k, body in targets]
        for k, body in gathers:
            field = self.a.layouts[k].target
            args = ["_n", self.params.field(field).name] + \
                [f"_absorb0_{part}" for part in ("off", "ids", "vals")]
            funcs.append(_function(f"gather_{k}", args, body))
        mod = ast.Module(ast.parse(_HEADER).body + functions_block(self.alg) + funcs, [])
        return ast.fix_missing_locations(mod)

    def row_loop(self, make_body, rows):
        """The grid-stride loop over positions `_i`; `rows` True/False: the row is `_rows[_p]`
        / the position; None: tested at run time (`targets_<k>` serve both)."""
        saved = self.alg.out
        self.alg.out = [ast.Assign([store(POS)], call("_i64", name("_i")))]
        at = ast.Subscript(name("_rows"), unsigned(name(POS)), ast.Load())
        row = at if rows else name(POS)
        if rows is None:
            row = ast.IfExp(name("_has_rows"), at, name(POS))
        self.alg.out.append(ast.Assign([store(ROW)], row))
        make_body()
        body, self.alg.out = self.alg.out, saved
        return [_grid_stride("_i", name("_n"), body)]

    def gather_body(self, lay):
        """One target row per position: fold its slots, in slot order, into the field."""
        field = lay.target
        saved = self.alg.out
        self.alg.out = [ast.Assign([store(ROW)], call("_i64", name("_i")))]
        fold_pending_row(self.alg, 0, self.field_slots(field, name(ROW), ()), lay.op, True,
                         elem_of(field.type))
        body, self.alg.out = self.alg.out, saved
        return [_grid_stride("_i", name("_n"), body)]


def _grid_stride(var, n, body) -> ast.For:
    """for var in range(cuda.grid(1), n, cuda.gridsize(1)): body"""
    start = call("cuda.grid", ast.Constant(1))
    step = call("cuda.gridsize", ast.Constant(1))
    return ast.For(store(var), call("range", start, n, step), body, [])


def _function(fname, args, body) -> ast.FunctionDef:
    return ast.FunctionDef(fname, ast.arguments([], [ast.arg(a) for a in args], None, [], [],
                                                None, []), body, [], None, None)
