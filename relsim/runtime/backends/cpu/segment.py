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
import time

import numba
from numba.core.typing.typeof import Purpose, typeof

from ....config import check_choice, choice
from ....relations.global_expr import globals_of
from ...caches import modules
from ...host import compile_jobs, debug_checks
from ...host.jit import describe_callee, entry_point, njit
from .. import base
from ..base import Assign, Branch, CompiledStop, HostStop, Loop, Rebin
from . import lanes, pending
from .segment_code import SegmentCode

# the segment's own: it only calls and indexes, so no reference counting of its ~100 arrays
# (compiling the bicgstab loop's segment: 3.6 -> 2.9 s)
FLAGS = dict(error_model="numpy", boundscheck=False, _nrt=False)
MODES = ("background", "now", "off")  # `Config.segments`: when a segment compiles
POLL_SECONDS = 0.002  # how often a replay waiting for its segment asks the worker


def check(config) -> None:
    """A ConfigError for a `Config.segments` not in MODES (None is checked at its use)."""
    check_choice(config, "segments", MODES, "RELSIM_SEGMENTS", "background")


def mode(config) -> str:
    """`config`'s segment mode: `Config.segments`, else $RELSIM_SEGMENTS, else "background"."""
    return choice(config, "segments", MODES, "RELSIM_SEGMENTS", "background")


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
    launches of a Config with one), cache directory and `Config.segments`. `handed`: on
    several ranks, the lanes the distributed layer merges (in a `HostStop` after the call;
    `lanes` is then None)."""

    __slots__ = ("kernel_name", "calls", "err", "fields", "globals", "lanes", "folded",
                 "threads", "cache_dir", "mode", "keep", "handed")

    def __init__(self, kernel_name, calls, err, fields, globals_, lanes, folded, threads,
                 cache_dir, mode, keep=(), handed=None):
        self.kernel_name, self.calls, self.err = kernel_name, calls, err
        self.keep = keep  # the arrays a call reaches by address only (`parts.Parts.bound`)
        self.fields, self.globals, self.lanes = fields, globals_, lanes
        self.folded = folded  # the Globals its compiled slot folds write
        self.threads, self.cache_dir, self.mode = threads, cache_dir, mode
        self.handed = handed

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
    """The runner of one compiled function running `calls` (`CapturedCall`s, `base.Assign`s,
    `base.Loop`s and `base.Branch`es) in order, running `fallback()` until it is compiled;
    None when they need different thread counts, or for one launch that is one compiled call
    already."""
    launches = [c for c in _walk(calls) if isinstance(c, CapturedCall)]
    threads = {c.threads for c in launches} - {None}  # (of the parallel ones)
    if len(threads) > 1:
        return None
    if len(calls) == 1 and isinstance(calls[0], CapturedCall) and len(calls[0].calls) == 1 \
            and calls[0].lanes is None:
        return None  # one launch, one call: nothing to save
    code = SegmentCode(copy_values)
    body = code.statements(calls) + [ast.Return(ast.Constant(-1))]
    mod = modules.module_for(_source(code.callees, code.params, body), launches[0].cache_dir,
                             "segment")
    for name, fn in code.callees.items():  # (this process's dispatchers: compiled already)
        setattr(mod, name, fn)
    on_disk = modules.on_disk(mod)
    fn = njit(cache=on_disk, **FLAGS)(mod.captured_segment)
    return _Runner(fn, tuple(code.args), calls, code.positions,
                   threads.pop() if threads else None, fallback,
                   on_disk and launches[0].mode == "background")


def _walk(calls):
    """Every call of `calls`, each loop followed by its body's, each branch by its sides'."""
    for c in calls:
        yield c
        if isinstance(c, Loop):
            yield from _walk(c.calls)
        if isinstance(c, Branch):
            yield from _walk(c.then)
            yield from _walk(c.otherwise)


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
    return "# relsim captured segment (rs.capture): launches called in order\nimport math\n" + \
        ast.unparse(module) + "\n"


class _Runner:
    """Calls a compiled segment: pending work on its fields and Globals done first, a flagged
    failure raised as the failing launch would raise it, a sum its lanes left undecided
    summed exactly on the host (the segment then resumes after that launch); until the
    segment is compiled (in the background), `fallback` (its launches)."""

    def __init__(self, fn, args, calls, positions, threads, fallback, background):
        self.fn, self.args, self.threads, self.fallback = fn, args, threads, fallback
        # position -> its launch (None: the end of a loop's body or a branch's side)
        self.positions = tuple(positions)
        # compiled by a worker (not: a module in memory, or Config.segments "now")
        self.background = background
        self.entry = None
        flat = [c for c in _walk(calls) if isinstance(c, (CapturedCall, Assign))]
        launches = [c for c in flat if isinstance(c, CapturedCall)]
        loops = [c for c in _walk(calls) if isinstance(c, Loop)]
        tests = [c.condition for c in _walk(calls) if isinstance(c, (Loop, Branch))]
        self.fields = tuple({id(f): f for c in launches for f in c.fields}.values())
        # keys that follow a value field: computed again (in place) first if it changed
        self.followed = tuple(f for f in self.fields if f.is_key and f.follows is not None)
        self.rebins = tuple(c for c in _walk(calls) if isinstance(c, Rebin))
        # the host's records of what compiled stops change: right at every return to the host
        syncs = {id(s): s for c in _walk(calls) if isinstance(c, CompiledStop)
                 for s in c.syncs}.values()
        self.syncs = tuple(syncs)  # (those with something to do on leaving: `leaves`)
        self.leaves = tuple(s for s in syncs if getattr(s, "leaves", True))
        read = [g for c in flat for g in (
            c.globals if isinstance(c, CapturedCall) else globals_of(c.expr))] + \
            [g for t in tests if t is not None for p in t.parts
             for g in globals_of(p.left) + globals_of(p.right)] + \
            [c.record[0] for c in loops if c.record is not None]
        written = [g for c in flat for g in (
            [c.target] if isinstance(c, Assign) else
            [s[0] for s in (c.lanes or c.handed).sums] + list(c.folded)
            if c.lanes or c.handed else c.folded)] + \
            [c.count for c in loops if c.count is not None]
        self.globals = tuple({id(g): g for g in read + written}.values())
        self.written = tuple({id(g): g for g in written}.values())
        self.signature = tuple(typeof(a, Purpose.argument) for a in (0, *args))
        self.done = None  # the background worker's test, while it compiles
        self.next_poll = 0.0  # (perf_counter) when to read the worker's pipe again
        self.ready = compile_jobs.load_cached(fn, self.signature)

    def compile(self) -> None:
        """Compile the segment now (unless it is, or its machine code is in the cache)."""
        if not compile_jobs.load_cached(self.fn, self.signature):
            self.fn.compile(self.signature)
        self.ready = True

    def poll(self) -> bool:
        """Whether the segment is compiled now (starting its compilation if it has not: in the
        background, or here with `Config(segments="now")`)."""
        return self.ready or not self._waiting()

    def _waiting(self) -> bool:
        """Still compiling in the background (started at the first call)?"""
        if not self.background:
            self.compile()
            return False
        if self.done is None:
            job = compile_jobs.CompileJob(
                self.fn.py_func.__globals__["__file__"], "captured_segment",
                tuple(sorted(dict(FLAGS, cache=True).items())), self.signature, 1)
            try:
                self.done = compile_jobs.background([job])({0})
            except OSError:  # no process to start: compiled here
                self.compile()
                return False
        now = time.perf_counter()
        if now < self.next_poll:  # (reading the worker's pipe costs a system call)
            return True
        self.next_poll = now + POLL_SECONDS
        if not self.done():
            return True
        self.compile()  # (loaded from the cache; compiled here if the worker failed)
        return False

    def __call__(self) -> None:
        if not self.ready and self._waiting():
            return self.fallback()
        for f in self.fields:  # (another target's copy, or folds pending from before)
            r = f.residency
            if r is not None:
                if isinstance(r, pending.FieldFolds):
                    pending.flush(f)
                elif getattr(r, "on_device", False):  # (not the MPI layer's ghost rows)
                    base.bring_to_host((f,))
        for g in self.globals:
            if g.residency is not None:
                g.residency.before_host_read(g)
        for kf in self.followed:
            kf.settle()
        ok = False
        try:
            self.compiled_run()
            ok = True
        finally:
            for r in self.rebins:  # (keys written in their arrays: their versions move now)
                r.done(ok)
        for g in self.written:
            if g.residency is not None:  # (a device copy: now stale)
                g.residency.after_host_write(g)

    def compiled_run(self) -> None:
        """The compiled function's calls, under the segment's thread count."""
        if self.threads is not None and numba.get_num_threads() != self.threads:
            before = numba.get_num_threads()
            numba.set_num_threads(self.threads)
            try:
                self.run()
            finally:
                numba.set_num_threads(before)
        elif self.entry is None or self.syncs:
            self.run()
        else:  # (the run's first call inline: one Python call less a replay)
            code = self.entry(0, *self.args)
            if code != -1:
                self.run(code)

    def run(self, code=None) -> None:
        """Call the compiled function from its start (or go on after a first call's `code`)
        until it has run every launch."""
        start = 0
        while True:
            if code is None:
                code = self._call(start)
            if code == -1:
                return
            if code >= 0:
                c = self.positions[code]
                if isinstance(c, Rebin):  # a row its rule left to the host: all there
                    c.err[0] = 0
                    c.host()
                    start, code = code + 1, None
                    continue
                debug_checks.raise_flagged(c.kernel_name, c.err)
            p = -2 - code  # a host stop, or a launch whose lanes left a sum undecided
            stop = self.positions[p]
            if isinstance(stop, (HostStop, CompiledStop)):
                stop.run()
            else:
                stop.exact_rest()
            start, code = p + 1, None

    def _call(self, start: int) -> int:
        """One call of the compiled function from position `start` (its compiled stops'
        records entered before, left after)."""
        for s in self.syncs:
            s.enter()
        try:
            if self.entry is not None:
                return self.entry(start, *self.args)
            code = self.fn(start, *self.args)  # (the first call; later ones skip the dispatch)
            self.entry = entry_point(self.fn, (start, *self.args))
            return code
        finally:
            for s in self.leaves:
                s.leave()
