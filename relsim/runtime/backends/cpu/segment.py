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

from ...caches import modules
from ...host import compile_jobs, debug_checks
from ...host.jit import describe_callee, entry_point, njit
from .. import base
from . import pending

FLAGS = dict(error_model="numpy", boundscheck=False)  # the segment's own (it only calls)


class CapturedCall:
    """One launch as bound: `calls` ((compiled function, arguments), the kernel's first),
    its error word, the fields and Globals whose pending work must be done before it, its
    thread count (parallel launches of a Config with one) and cache directory."""

    __slots__ = ("kernel_name", "calls", "err", "fields", "globals", "threads", "cache_dir")

    def __init__(self, kernel_name, calls, err, fields, globals_, threads, cache_dir):
        self.kernel_name, self.calls, self.err = kernel_name, calls, err
        self.fields, self.globals, self.threads = fields, globals_, threads
        self.cache_dir = cache_dir


def compile_segment(calls: list[CapturedCall], fallback):
    """The runner of one compiled function calling every call of `calls` in order, running
    `fallback()` (the launches) until it is compiled; None when they need different thread
    counts."""
    threads = {c.threads for c in calls} - {None}  # (of the parallel ones)
    if len(threads) > 1:
        return None
    params, args, index = [], [], {}  # parameter names, their values, array id -> name
    callees, body = {}, []

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

    for k, c in enumerate(calls):
        for j, (fn, fargs) in enumerate(c.calls):
            name = f"f{k}_{j}"
            callees[name] = fn
            body.append(ast.Expr(ast.Call(ast.Name(name, ast.Load()),
                                          [param(a) for a in fargs], [])))
            if j == 0:  # the kernel: stop at a flagged failure (the launch would raise)
                failed = ast.Compare(ast.Subscript(param(c.err), ast.Constant(0), ast.Load()),
                                     [ast.NotEq()], [ast.Constant(0)])
                body.append(ast.If(failed, [ast.Return(ast.Constant(k))], []))
    body.append(ast.Return(ast.Constant(-1)))
    mod = modules.module_for(_source(callees, params, body), calls[0].cache_dir, "segment")
    for name, fn in callees.items():  # (this process's dispatchers: compiled already)
        setattr(mod, name, fn)
    on_disk = modules.on_disk(mod)
    fn = njit(cache=on_disk, **FLAGS)(mod.captured_segment)
    return _Runner(fn, tuple(args), calls, threads.pop() if threads else None, fallback,
                   on_disk)


def _source(callees, params, body) -> str:
    """The segment's module: what it calls (`_CALLEES`), then the function."""
    described = {name: describe_callee(fn) for name, fn in callees.items()}
    table = ast.Assign([ast.Name("_CALLEES", ast.Store())],
                       ast.Dict([ast.Constant(k) for k in described],
                                [ast.Constant(v) for v in described.values()]))
    fn_def = ast.FunctionDef(
        "captured_segment", ast.arguments([], [ast.arg(p) for p in params], None, [], [], None,
                                          []), body, [], None, type_params=[])
    module = ast.fix_missing_locations(ast.Module([table, fn_def], []))
    return "# relsim captured segment (rs.capture): launches called in order\n" + \
        ast.unparse(module) + "\n"


class _Runner:
    """Calls a compiled segment: pending work on its fields done first, a flagged failure
    raised as the failing launch would raise it; until the segment is compiled (in the
    background), its launches."""

    def __init__(self, fn, args, calls, threads, fallback, background):
        self.fn, self.args, self.threads, self.fallback = fn, args, threads, fallback
        self.background = background  # (a module in memory: no worker can compile it)
        self.entry = None
        self.names = tuple(c.kernel_name for c in calls)
        self.errs = tuple(c.err for c in calls)
        self.fields = tuple({id(f): f for c in calls for f in c.fields}.values())
        self.globals = tuple({id(g): g for c in calls for g in c.globals}.values())
        self.signature = tuple(typeof(a, Purpose.argument) for a in args)
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
                failed = self.fn(*self.args)
            finally:
                numba.set_num_threads(before)
        elif self.entry is not None:
            failed = self.entry(*self.args)
        else:  # the first call; later ones skip the dispatch
            failed = self.fn(*self.args)
            self.entry = entry_point(self.fn, self.args)
        if failed >= 0:
            debug_checks.raise_flagged(self.names[failed], self.errs[failed])
