"""Captured steps on the cpu (`rs.capture`): consecutive launches as one compiled call.

A launch whose binding does all its work in compiled functions — the kernel's loop, then the
folds of its reductions into fields (run at once here, where an ordinary launch may leave them
pending: the same folds in the same order, so the same bits) — is a `CapturedCall`: the
functions and their arguments as bound. `compile_segment` generates (as Python `ast`) one
function calling them in order, each kernel followed by a test of its error word, and compiles
it with Numba: the launches' compiled loops are called from compiled code (a parallel loop keeps
its parallel region), with no Python between them. A replay calls it through its machine-code
entry (`host.jit.entry_point`), so its arguments are not typed again.

Compiling a segment links its callees' machine code and optimises the whole (~2 s for the fem
beam's two kernels), so it is a generated module in the cache directory like a kernel's (its
callees named in `_CALLEES`: generated modules by their files, whose names hash their source,
relsim's helpers with their file's hash), cached on disk by Numba, and compiled by a background
worker (`compile_jobs`) while the first replays run their launches one by one (the same bits);
`Step.compile()` compiles it now instead.

A launch with host work after its loop (Global reductions, row changes, prints, debug checks,
lanes), or whose fields hold another target's newer copy, is not captured: it replays as a
launch between segments.
"""
from __future__ import annotations

import ast

import numba
import numpy as np
from numba.core.typing.typeof import Purpose, typeof

from ....relations.global_expr import Expr, globals_of
from ...caches import modules
from ...folds import lane_sums
from ...host import compile_jobs, debug_checks
from ...host.jit import describe_callee, entry_point, njit
from .. import base
from ..base import Assign
from . import lanes, pending

FLAGS = dict(error_model="numpy", boundscheck=False)  # the segment's own (it only calls)
MODES = ("background", "now", "off")  # `Config.segments`: when a segment compiles


class CompiledFold:
    """A Global's slot fold that is one compiled call (`CpuExecutable.make_fold`: arg, integer,
    boolean, min/max folds; not an exact sum): called as the launch folds it, or by a
    segment."""

    __slots__ = ("fn", "args")

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __call__(self) -> None:
        self.fn(*self.args)


class CapturedCall:
    """One launch as bound: `calls` ((compiled function, arguments), the kernel's first),
    its error word, the fields and Globals whose pending work must be done before it, its
    float64 Global sums in lanes (`lanes.LaneSums`, or None), its thread count (parallel
    launches of a Config with one), cache directory and `Config.segments`."""

    __slots__ = ("kernel_name", "calls", "err", "fields", "globals", "lanes", "folded",
                 "threads", "cache_dir", "mode")

    def __init__(self, kernel_name, calls, err, fields, globals_, lanes, folded, threads,
                 cache_dir, mode):
        self.kernel_name, self.calls, self.err = kernel_name, calls, err
        self.fields, self.globals, self.lanes = fields, globals_, lanes
        self.folded = folded  # the Globals its compiled slot folds write
        self.threads, self.cache_dir, self.mode = threads, cache_dir, mode

    def exact_rest(self) -> None:
        """After its loop ran in a segment, whose lanes left a sum undecided: the exact path
        (`LaneSums.finish`'s), then the folds after the loop."""
        lanes.EXACT_PATH["count"] += 1
        if self.lanes.rerun is not None:
            fn, args = self.lanes.rerun
            fn(*args)
        self.lanes.exact_sums()
        for fn, args in self.calls[1:]:
            fn(*args)


@njit(cache=True, **FLAGS)
def copy_values(dst, src):
    """dst[:] = src (a Global's components, rounded from its lanes)."""
    for i in range(dst.shape[0]):
        dst[i] = src[i]


def compile_segment(calls: list, fallback):
    """The runner of one compiled function running `calls` (`CapturedCall`s and
    `base.Assign`s) in order, running `fallback()` until it is compiled; None when they need
    different thread counts, or for one launch that is one compiled call already."""
    launches = [c for c in calls if isinstance(c, CapturedCall)]
    threads = {c.threads for c in launches} - {None}  # (of the parallel ones)
    if len(threads) > 1:
        return None
    if len(calls) == 1 and len(launches[0].calls) == 1 and launches[0].lanes is None:
        return None  # one launch, one call: nothing to save

    params, args, index = [], [], {}  # parameter names, their values, array id -> name
    callees, body, before = {}, [], []  # (before: assignments ahead of the next launch)

    def param(value) -> ast.Name:
        if isinstance(value, np.ndarray):
            name = index.get(id(value))
            if name is None:
                name = index[id(value)] = f"a{len(params)}"
                params.append(name)
                args.append(value)
            return ast.Name(name, ast.Load())
        params.append(f"a{len(params)}")
        args.append(value)
        return ast.Name(params[-1], ast.Load())

    def call(name, fn, fargs) -> ast.Call:
        callees[name] = fn
        return ast.Call(ast.Name(name, ast.Load()), [param(a) for a in fargs], [])

    def value(x) -> ast.expr:  # an expression of Globals (global_expr)
        if isinstance(x, float):
            return ast.Constant(x)
        if not isinstance(x, Expr):
            return ast.Subscript(param(x._data), ast.Constant(0), ast.Load())
        if x.op == "neg":
            return ast.UnaryOp(ast.USub(), value(x.args[0]))
        if x.op == "abs":
            return ast.Call(ast.Name("abs", ast.Load()), [value(x.args[0])], [])
        return ast.BinOp(value(x.args[0]), _BINOPS[x.op](), value(x.args[1]))

    k = 0
    for c in calls:
        if isinstance(c, Assign):
            target = ast.Subscript(param(c.target._data), ast.Constant(0), ast.Store())
            before.append(ast.Assign([target], value(c.expr)))
            continue
        block = before + [ast.Expr(call(f"f{k}_0", *c.calls[0]))]
        before = []
        failed = ast.Compare(ast.Subscript(param(c.err), ast.Constant(0), ast.Load()),
                             [ast.NotEq()], [ast.Constant(0)])
        block.append(ast.If(failed, [ast.Return(ast.Constant(k))], []))  # (the launch raises)
        if c.lanes is not None:  # rounded from the lanes, or the exact path on the host
            for j, (_g, flat, q0, q1, out, _fold) in enumerate(c.lanes.sums):
                decided = call(f"f{k}_lanes{j}", lane_sums.finish,
                               (c.lanes.lanes, q0, q1, c.lanes.depth, flat, out))
                block.append(ast.If(ast.UnaryOp(ast.Not(), decided),
                                    [ast.Return(ast.Constant(-2 - k))], []))
            for j, (_g, flat, _q0, _q1, out, _fold) in enumerate(c.lanes.sums):
                if out is not flat:
                    block.append(ast.Expr(call(f"f{k}_copy{j}", copy_values, (flat, out))))
        block += [ast.Expr(call(f"f{k}_{j}", *fa)) for j, fa in enumerate(c.calls[1:], 1)]
        resumes = ast.Compare(ast.Name("_start", ast.Load()), [ast.LtE()], [ast.Constant(k)])
        body.append(ast.If(resumes, block, []))
        k += 1
    body += before  # (none: a segment ends with a launch)
    body.append(ast.Return(ast.Constant(-1)))
    mod = modules.module_for(_source(callees, params, body), launches[0].cache_dir, "segment")
    for name, fn in callees.items():  # (this process's dispatchers: compiled already)
        setattr(mod, name, fn)
    on_disk = modules.on_disk(mod)
    fn = njit(cache=on_disk, **FLAGS)(mod.captured_segment)
    return _Runner(fn, tuple(args), calls, threads.pop() if threads else None, fallback,
                   on_disk and launches[0].mode == "background")


_BINOPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div}


def _source(callees, params, body) -> str:
    """The segment's module: what it calls (`_CALLEES`), then the function."""
    described = {name: describe_callee(fn) for name, fn in callees.items()}
    table = ast.Assign([ast.Name("_CALLEES", ast.Store())],
                       ast.Dict([ast.Constant(k) for k in described],
                                [ast.Constant(v) for v in described.values()]))
    fn_def = ast.FunctionDef(
        "captured_segment", ast.arguments([], [ast.arg(p) for p in ["_start", *params]], None,
                                          [], [], None, []), body, [], None, type_params=[])
    module = ast.fix_missing_locations(ast.Module([table, fn_def], []))
    return "# relsim captured segment (rs.capture): launches called in order\n" + \
        ast.unparse(module) + "\n"


class _Runner:
    """Calls a compiled segment: pending work on its fields and Globals done first, a flagged
    failure raised as the failing launch would raise it, a sum its lanes left undecided
    summed exactly on the host (the segment then resumes after that launch); until the
    segment is compiled (in the background), `fallback` (its launches)."""

    def __init__(self, fn, args, calls, threads, fallback, background):
        self.fn, self.args, self.threads, self.fallback = fn, args, threads, fallback
        # compiled by a worker (not: a module in memory, or Config.segments "now")
        self.background = background
        self.entry = None
        launches = [c for c in calls if isinstance(c, CapturedCall)]
        self.launches = tuple(launches)
        self.fields = tuple({id(f): f for c in launches for f in c.fields}.values())
        read = [g for c in calls for g in (
            c.globals if isinstance(c, CapturedCall) else globals_of(c.expr))]
        written = [g for c in calls for g in (
            [c.target] if isinstance(c, Assign) else
            [s[0] for s in c.lanes.sums] + list(c.folded) if c.lanes else c.folded)]
        self.globals = tuple({id(g): g for g in read + written}.values())
        self.written = tuple({id(g): g for g in written}.values())
        self.signature = tuple(typeof(a, Purpose.argument) for a in (0, *args))
        self.done = None  # the background worker's test, while it compiles
        self.ready = compile_jobs.load_cached(fn, self.signature)

    def compile(self) -> None:
        """Compile the segment now (unless it is, or its machine code is in the cache)."""
        if not compile_jobs.load_cached(self.fn, self.signature):
            self.fn.compile(self.signature)
        self.ready = True

    def _waiting(self) -> bool:
        """Still compiling in the background (started at the first call)?"""
        if not self.background:
            self.compile()
            return False
        if self.done is None:
            job = compile_jobs.CompileJob(
                self.fn.py_func.__globals__["__file__"], "captured_segment",
                tuple(sorted(FLAGS.items())), self.signature, 1)
            try:
                self.done = compile_jobs.Progress(
                    compile_jobs.start([job], background=True)).test({0})
            except OSError:  # no process to start: compiled here
                self.compile()
                return False
        if not self.done():
            return True
        self.compile()  # (loaded from the cache; compiled here if the worker failed)
        return False

    def __call__(self) -> None:
        if not self.ready and self._waiting():
            return self.fallback()
        for f in self.fields:  # (another target's copy, or folds pending from before)
            if f.residency is not None:
                if isinstance(f.residency, pending.FieldFolds):
                    pending.flush(f)
                else:
                    base.bring_to_host((f,))
        for g in self.globals:
            if g.residency is not None:
                g.residency.before_host_read(g)
        if self.threads is not None and numba.get_num_threads() != self.threads:
            before = numba.get_num_threads()
            numba.set_num_threads(self.threads)
            try:
                self.run()
            finally:
                numba.set_num_threads(before)
        else:
            self.run()
        for g in self.written:
            if g.residency is not None:  # (a device copy: now stale)
                g.residency.after_host_write(g)

    def run(self) -> None:
        start = 0
        while True:
            if self.entry is not None:
                code = self.entry(start, *self.args)
            else:  # the first call; later ones skip the dispatch
                code = self.fn(start, *self.args)
                self.entry = entry_point(self.fn, (start, *self.args))
            if code == -1:
                return
            if code >= 0:
                c = self.launches[code]
                debug_checks.raise_flagged(c.kernel_name, c.err)
            k = -2 - code  # its lanes left a sum undecided
            self.launches[k].exact_rest()
            start = k + 1
