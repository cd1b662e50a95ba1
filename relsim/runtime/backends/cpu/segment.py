"""Captured steps on the cpu (`rs.capture`): consecutive launches as one compiled call.

A launch whose binding does all its work in compiled functions — the kernel's loop, then the
folds of its reductions into fields (run at once here, where an ordinary launch may leave them
pending: the same folds in the same order, so the same bits) — is a `CapturedCall`: the
functions and their arguments as bound. `compile_segment` generates (as Python `ast`) one
function calling them in order, each kernel followed by a test of its error word, and compiles
it with Numba: the launches' compiled loops are called from compiled code (a parallel loop keeps
its parallel region), with no Python between them. A replay calls it through its machine-code
entry (`host.jit.entry_point`), so its arguments are not typed again.

A launch with host work after its loop (Global reductions, row changes, prints, debug checks,
lanes), or whose fields hold another target's newer copy, is not captured: it replays as a
launch between segments.
"""
from __future__ import annotations

import ast

import numba
import numpy as np

from ...host import debug_checks
from ...host.jit import entry_point, njit
from .. import base
from . import pending


class CapturedCall:
    """One launch as bound: `calls` ((compiled function, arguments), the kernel's first),
    its error word, the fields and Globals whose pending work must be done before it."""

    __slots__ = ("kernel_name", "calls", "err", "fields", "globals", "threads")

    def __init__(self, kernel_name, calls, err, fields, globals_, threads):
        self.kernel_name, self.calls, self.err = kernel_name, calls, err
        self.fields, self.globals, self.threads = fields, globals_, threads


def compile_segment(calls: list[CapturedCall]):
    """The runner of one compiled function calling every call of `calls` in order (None when
    they need different thread counts)."""
    threads = {c.threads for c in calls} - {None}  # (of the parallel ones)
    if len(threads) > 1:
        return None
    params, args, index = [], [], {}  # parameter names, their values, array id -> name
    namespace, body = {}, []

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
            namespace[name] = fn
            body.append(ast.Expr(ast.Call(ast.Name(name, ast.Load()),
                                          [param(a) for a in fargs], [])))
            if j == 0:  # the kernel: stop at a flagged failure (the launch would raise)
                failed = ast.Compare(ast.Subscript(param(c.err), ast.Constant(0), ast.Load()),
                                     [ast.NotEq()], [ast.Constant(0)])
                body.append(ast.If(failed, [ast.Return(ast.Constant(k))], []))
    body.append(ast.Return(ast.Constant(-1)))
    fn_def = ast.FunctionDef(
        "captured_segment", ast.arguments([], [ast.arg(p) for p in params], None, [], [], None,
                                          []), body, [], None, type_params=[])
    module = ast.fix_missing_locations(ast.Module([fn_def], []))
    exec(compile(module, "<relsim captured segment>", "exec"), namespace)
    return _Runner(njit(namespace["captured_segment"]), tuple(args), calls,
                   threads.pop() if threads else None)


class _Runner:
    """Calls a compiled segment: pending work on its fields done first, a flagged failure
    raised as the failing launch would raise it."""

    def __init__(self, fn, args, calls, threads):
        self.fn, self.args, self.threads = fn, args, threads
        self.entry = None
        self.names = tuple(c.kernel_name for c in calls)
        self.errs = tuple(c.err for c in calls)
        self.fields = tuple({id(f): f for c in calls for f in c.fields}.values())
        self.globals = tuple({id(g): g for c in calls for g in c.globals}.values())

    def __call__(self) -> None:
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
        else:  # the first call compiles; later ones skip the dispatch
            failed = self.fn(*self.args)
            self.entry = entry_point(self.fn, self.args)
        if failed >= 0:
            debug_checks.raise_flagged(self.names[failed], self.errs[failed])
