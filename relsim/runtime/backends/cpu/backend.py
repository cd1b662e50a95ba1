"""The `cpu` backend: Numba; a kernel's loop is a part function (`parts.py`) run on every thread
for large iteration spaces, as one part on the calling thread for small ones (identical
results: nothing depends on the order rows run in).

Launch path (kept lean: no analysis, no argument rebuilding unless storage changed):
  1. re-bind arrays if any relation's storage changed (and rebuild the slot inverse indexes);
     checked through the global storage epoch first, so an unchanged launch costs one compare;
  2. run the kernel serially or in parallel (chosen, with its arguments, at bind time);
  3. leave the folds of its reduction slots pending (`pending.py`): a Global's until its
     value is next needed, a field's until the next launch that touches the field, which
     absorbs them (folding each row first, in a compiled variant) when it touches the field
     only at its own key over the whole relation, and otherwise folds them before it runs
     (`settle`); the host and relsim internals fold them on access (the field's residency).

With `Config(debug=True)` the kernel is lowered with its debug checks (another module: the
normal one is unchanged); each row records its first failed check, and the first post-step
raises the lowest row's (`check_debug`), before any fold or row change.
"""
from __future__ import annotations

import functools
import os

import numba
import numpy as np

from ....errors import ConfigError
from ....relations.field import Field
from ....types import elem_of
from ... import epoch
from ...caches import lowered, modules
from ...folds import host_folds
from ...host import binding, debug_checks, prints
from ...host.compile_jobs import CompileJob, load_cached
from ...host.jit import entry_point as jit_entry_point
from ...host.jit import jit_callees, njit
from ...lowering import (
    DeleteFlags,
    FieldStorage,
    GroupOffsets,
    InsertFlags,
)
from ...lowering.emit import unparse
from .. import base
from ..base import Backend, Launch, variant_note
from . import fused, parts, pending, row_work, segment, threading_layer, tiers
from . import scatter as cpu_scatter
from .binder import Binder
from .loops import CpuLowerer, chunk_layouts, lane_layouts, pure_reduction


class CpuBackend(Backend):
    """Targets ``cpu`` (parallel above `Config.parallel_threshold` rows) and ``cpu-serial``
    (``serial=True``: always the serial variant)."""

    def __init__(self, serial: bool = False):
        self.serial = serial
        self.name = "cpu-serial" if serial else "cpu"
        threading_layer.prepare()  # before Numba starts its threading layer

    options = ("threads", "parallel_threshold", "scatter", "segments", "startup")

    def compile_segment(self, calls, fallback):
        return segment.compile_segment(calls, fallback)

    def check_options(self, config) -> None:
        t = config.threads
        if t is not None and (not isinstance(t, int) or isinstance(t, bool) or t < 1):
            raise ConfigError(f"threads must be a positive int, got {t!r}")
        p = config.parallel_threshold
        if not isinstance(p, int) or isinstance(p, bool) or p < 0:
            raise ConfigError(f"parallel_threshold must be an int >= 0, got {p!r}")
        if config.scatter not in cpu_scatter.SCHEMES:
            raise ConfigError(f"scatter must be one of {', '.join(cpu_scatter.SCHEMES)}, got "
                              f"{config.scatter!r}")
        segment.check(config)
        tiers.check(config)

    def share_cores(self, cores: int) -> None:
        """Ranks on one node share its cores: this one takes `cores` Numba threads (at least
        one), unless NUMBA_NUM_THREADS says otherwise."""
        if "NUMBA_NUM_THREADS" not in os.environ:
            numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS, cores)))
            epoch.bump()

    def configure(self, config) -> None:
        if config.threads is not None:
            _check_threads(config.threads)
            numba.set_num_threads(config.threads)
        epoch.bump()  # launches re-check their bindings (a scheme depends on the thread count)

    def threads(self, config) -> int:
        return 1 if self.serial else config.threads or numba.get_num_threads()

    def compile(self, analysed, options):
        sites = debug_checks.Sites() if options.debug else None
        note = variant_note(options, sites is not None)

        fma = fused.available()  # (the lowering differs: so does the cache's entry)

        def lower():
            lowerer = CpuLowerer(analysed, debug=sites, fused=fma)
            module_ast = lowerer.module()
            # (the text names no kernel, relation or field: kernels alike but for their names
            # share one module, compiled once; `rs.explain` gives the names)
            return "# relsim generated kernel" + note + "\n" + unparse(module_ast) + "\n", \
                lowerer.params.items

        source, params = lowered.lowered(analysed, options, "cpu" + note + " fma" * fma, lower,
                                               debug=sites is not None)
        mod = modules.module_for(source, options.cache_path(), "kernel")
        return CpuExecutable(analysed, params, mod, source, options, self.serial, sites)


def _check_threads(threads: int) -> None:
    if threads > numba.config.NUMBA_NUM_THREADS:
        raise ConfigError(f"threads={threads} exceeds the Numba thread pool "
                          f"({numba.config.NUMBA_NUM_THREADS}); set NUMBA_NUM_THREADS")


class _Variants(dict):
    """Compiled variants of a generated function, each made on first use by `make(key)`."""

    def __init__(self, make):
        super().__init__()
        self.make = make

    def __missing__(self, key):
        fn = self[key] = self.make(key)
        return fn


class CpuExecutable(Binder, Launch):
    distributable = True  # hands Global contributions and row changes to `partials`, `row_sink`
    runs_compiled_stops = True  # (`segment_code`: a captured step's MPI calls in its segment)

    def __init__(self, analysed, params, mod, source, options, serial, sites=None):
        self.analysed = analysed
        self.sites = sites  # debug_checks.Sites of the debug variant (None: no checks)
        self.params = params
        self.source = source
        self.path = mod.__file__
        # (a module the cache directory could not hold lives in memory: nothing to cache)
        self.flags = flags = dict(cache=modules.on_disk(mod), error_model="numpy",
                                  boundscheck=False)
        if options.fast_math:  # LLVM may fuse a product and a sum (where the CPU has FMA)
            flags["fastmath"] = {"contract"}

        cache_dir = options.cache_path()

        def jit(fn):
            return njit(**flags)(fn)

        functions = {}  # a part function (a callee of the module) -> its `parts.PartFunction`

        def run(fname, mode):  # a variant running part function `fname` (`parts`): mode
            # "parallel", "serial" or "tier0" (`parts.Tier0`, while the wrapper compiles)
            if fname not in functions:
                functions[fname] = parts.PartFunction(getattr(mod, fname), cache_dir, flags)
            if mode == "tier0":
                return parts.Tier0(functions[fname])
            return parts.Parts(functions[fname], serial=mode == "serial")

        jit_callees(mod, **flags)  # shared functions, outlined loop bodies (`outline`)

        # each dispatcher is made when a binding first picks it (making one costs ~0.7 ms, and
        # a program launches few of the variants); one serves launches over a whole relation
        # and over a subset. The row loops keyed by parallel, the scatters by their scheme
        self.row_loops = _Variants(lambda mode: run("kernel_parallel", mode))
        if hasattr(mod, "kernel_direct"):  # it reduces into fields through keys
            self.scatters = _Variants(lambda scheme: run("kernel_split", "parallel")
                                      if scheme == "split" else jit(mod.kernel_direct))
        self.scatter = options.scatter
        self.scatter_share = cpu_scatter.scatter_share(analysed)
        grid = analysed.relation.grid
        if hasattr(mod, "kernel_grid"):  # nested loops over a box of a grid of its axes
            self.grid_loops = _Variants(lambda mode: run("kernel_grid", mode))
            self.grid = (len(grid.shape), grid.periodic)  # (the shape is bound per launch)
            self.grid_reach = mod._GRID_REACH  # the shortest axis 0 the loops can run on
        else:
            self.grid_loops = None
        # float64 Global sums accumulated in the loop (`lanes.py`), keyed by parallel
        lanes_variant = hasattr(mod, "kernel_lanes_parallel")
        self.lane_offsets = lane_layouts(analysed) if lanes_variant else {}
        # and the Global reductions they fold per chunk of rows (`lanes.Chunks`)
        self.chunk_ops = chunk_layouts(analysed) if lanes_variant else {}
        self.lanes_pure = pure_reduction(analysed)
        # on several ranks, the float64 sums a launch may hand over as lanes
        # (`Launch.lane_globals`)
        self.lane_globals = () if options.fast_math else \
            tuple(analysed.layouts[k].target for k in self.lane_offsets)
        self.lanes_fns = _Variants(lambda mode: run("kernel_lanes_parallel", mode))
        # serial: they run once per binding, and a parallel compilation costs ~2.4x
        self.targets = _Variants(lambda k: jit(getattr(mod, f"targets_{k}")))
        self.force_serial = serial
        self.threads = options.threads
        if self.threads is not None:
            _check_threads(self.threads)
        self.threshold = options.parallel_threshold
        self.group_loops = row_work.grouping_loops(analysed.body)  # rows that weigh more
        self.row_ops = row_work.operations(analysed.body)  # (or less)
        self.relations = binding.relations_of(analysed, params)
        self.host_fields = tuple({id(p.field): p.field for p in params
                                  if isinstance(p, FieldStorage)}.values())
        self.options = options
        self.absorbing_fns: dict = {}
        # fields whose key reductions this kernel folds; fields it reads or writes, and whether
        # it could absorb their pending reductions (numeric, only at its own key, same relation)
        self.gather_fields = tuple(lay.target for lay in analysed.layouts
                                   if isinstance(lay.target, Field))
        self.touched = []
        for t in analysed.summary.targets():
            if not isinstance(t, Field) or t.is_key:
                continue
            acc = analysed.summary.for_target(t)
            if all(a.mode == "reduce" and not a.centred for a in acc):
                continue  # only reduced into through keys: its folds queue behind pending ones
            absorbable = all(a.centred for a in acc) and t.relation is analysed.relation and \
                all(t is not g for g in self.gather_fields) and not elem_of(t.type).is_bool
            self.touched.append((t, absorbable))
        self.bindings: dict = {}
        # per launch space, the binding before the last re-binding, while only value fields'
        # arrays were exchanged since (`Field.swap`): taken up again when the fields hold its
        # arrays again (a double buffer swapped each step re-binds twice, not every step)
        self.kept: dict = {}
        self.array_fields = tuple({id(f): f for f in (*self.host_fields,
                                                      *self.gather_fields)}.values())
        # the groupings whose builds it binds (a build's offsets are a new array)
        self.groupings = tuple({id(p.grouping): p.grouping for p in params
                                if isinstance(p, GroupOffsets)}.values())
        self.print_stmts = prints.sites(analysed.body)  # the kernel's print sites, in order
        # which of the bound arrays (`bound_arrays`) are keys' or groupings', and whether a
        # binding can take new ones of those in (`swap_keys`): nothing it holds is computed
        # from their contents (no reductions into fields through keys, no row changes, prints
        # or debug checks)
        self.key_arrays = tuple(f.is_key for f in self.array_fields) + \
            (True,) * len(self.groupings)
        self.swaps_keys = any(self.key_arrays) and sites is None and \
            not self.print_stmts and \
            not any(isinstance(lay.target, Field) for lay in analysed.layouts) and \
            not any(isinstance(p, (DeleteFlags, InsertFlags)) for p in params)
        # tier 0 (`tiers.py`; `rs.precompile(..., background=True)`): launches run the serial
        # variants (same bits) until `tier_done()` says the parallel ones are in Numba's disk
        # cache; (path, function, signature) of the jobs given to the background worker
        self.tier0 = False
        self.tier_done = None
        self.self_tiering = not serial and tiers.mode(options) == "tiered"
        self.tiered_jobs: set = set()
        # the argument types (`jit.fingerprints`) of bindings whose compilations were seen to:
        # a binding made again for new arrays of the same types (particles' keys, each step)
        # asks Numba for no types (~3 us an argument)
        self.tiered_types: set = set()
        self.planned_ahead = None  # (`tiers.plan_ahead`)
        self.err = np.zeros(1, dtype=np.int64)  # a failed check's line (-line: see flag_error)
        self.err_view = memoryview(self.err)  # reads err[0] as a Python int, cheaply

    # -- launching ------------------------------------------------------------------------
    def launch(self, relation, subset) -> None:
        if tiers.awaiting:  # (precompiled launches waiting for their plans' code)
            tiers.bind_awaiting()
        if self.tier_done is not None and self.tier_done():
            self.set_tier0(False)  # the parallel variants are compiled: bind them
        b = self.bindings.get(subset)
        if b is None or b.epoch != epoch.value or b.size != relation.size:
            b = self.refresh(relation, subset, b)
        # (asking Numba for its thread count takes two locks, ~1-2 us: only when it matters)
        if self.threads is not None and b.parallel and numba.get_num_threads() != self.threads:
            return self.launch_with_threads(relation, subset)
        if b.device:  # fields it uses have device copies: bring them here
            base.bring_to_host(b.device)
        for g in b.globals:  # read here, or reduced into (folds keep launch order)
            if g.residency is not None:
                g.residency.before_host_read(g)
        if pending.fields or b.outstanding:
            fn, args = self.settle(b)
        else:
            fn, args = b.fn, b.call_args
        if fn is b.fn and b.entry:
            b.entry(*b.entry_args)  # the binding's arguments never change: no dispatch
        else:
            fn(*args)
            if fn is b.fn:  # from its second call on (a binding used once, as when every
                # launch re-binds, would pay the types' lookup for nothing)
                b.entry, b.entry_args = (False, ()) if b.entry is None else \
                    self.entry_of(fn, args)
        if b.prints is not None:  # the rows' print lines, before any error of the launch
            self.write_prints(b, relation)
        if self.err_view[0]:
            debug_checks.raise_flagged(self.analysed.kernel_name, self.err)
        if b.lanes is not None:  # Globals folded in the loop: their values now
            if self.partials is not None:  # (on several ranks: merged with the others')
                if fn is not b.fn:  # (a subset launch never runs the absorbing variant)
                    raise AssertionError("a distributed launch ran without its lanes")
                self.partials.collect_lanes(b.lanes)
            elif fn is b.fn:
                b.lanes.finish()
            else:  # the variant folding pending reductions first (`settle`) parks them all
                b.lanes.exact()
        for fn, args in b.post:
            fn(*args)
        for pf in b.deferred:  # key-reduction folds: left pending unless the field is exposed
            if pf.field.exposed:
                pf.fold()
            else:
                pending.defer(pf.field, pf)
                b.outstanding += 1
        if self.partials is None:
            for g, fold, _, _ in b.folds:
                pending.defer_global(g, fold)
        else:  # on several ranks: the distributed layer merges the contributions
            for g, _, lay, vals in b.folds:
                self.partials.collect(g, lay.op, vals, lay.per_row, b.rows if b.has_rows else None)

    def mode(self, parallel: bool) -> str:
        """How a launch runs a kernel's part function (`parts`): in parallel, serially, or,
        in tier 0, serially through its plain dispatcher (`parts.Tier0`)."""
        return "parallel" if parallel else "tier0" if self.tier0 else "serial"

    @staticmethod
    def entry_of(fn, args) -> tuple:
        """(the machine-code entry of `fn` for `args`, the arguments it takes): a part
        function's runner with the wrapper's and the pack's addresses (the pack kept with
        them), else `fn`'s own for `args` (`jit.entry_point`)."""
        if isinstance(fn, (parts.Parts, parts.Tier0)):
            run, call_args, _ = fn.bound(args)  # (call_args holds a pack: `parts.Pinned`)
            return jit_entry_point(run, call_args), call_args
        return jit_entry_point(fn, args), args

    def capture_call(self, relation, subset):
        """The launch as bound now, for a captured step (`segment.CapturedCall`), when all it
        does runs compiled: Global reductions folded by compiled folds (not exact sums from
        slots, nor the lanes' chunks) or float64 sums in lanes; no row changes, prints, debug
        checks or other target's copies (those replay as launches). On several ranks
        (`partials` set) only float64 sums in lanes, handed to the distributed layer
        (`CapturedCall.handed`), which merges them on the host."""
        if self.tier_done is not None or segment.mode(self.options) == "off":
            return None
        b = self.current(relation, subset)
        followed = self.followed_keys()
        if followed and not self.can_keep_binding(subset):
            return None  # (it reads keys a step computes again in their arrays)
        if b.device or b.prints is not None or b.debug is not None or \
                (b.lanes is not None and b.lanes.chunks):
            return None
        folds = [fold for _, fold, _, _ in b.folds]
        post = [(fn, args) for fn, args in b.post if hasattr(fn, "py_func")]
        if len(post) != len(b.post) or not all(isinstance(f, segment.CompiledFold)
                                                for f in folds):  # (host work after the loop)
            return None
        lanes, handed = b.lanes, None
        if self.partials is not None:  # (slots are merged from the host: a launch)
            if folds:
                return None
            lanes, handed = None, b.lanes
        if b.outstanding:  # its last launch's folds, still pending: folded now (the same)
            for f in self.gather_fields:
                pending.flush(f)
        first, keep = ((b.fn, b.call_args), b.call_args)
        if isinstance(b.fn, parts.Parts):  # its runner, the pack kept with the arrays
            fn, call_args, packed = b.fn.bound(b.call_args)
            first, keep = (fn, call_args), (b.call_args, packed)
        calls = (first, *post, *((pf.fn, pf.args) for pf in b.deferred),
                 *((f.fn, f.args) for f in folds))
        mode = segment.mode(self.options)
        if mode == "background" and not self.background_segments:
            mode = "now"
        return segment.CapturedCall(self.analysed.kernel_name, calls, self.err,
                                    self.array_fields + followed, b.globals, lanes,
                                    tuple(g for g, *_ in b.folds),
                                    self.threads if b.parallel else None,
                                    self.options.cache_path(), mode, keep=keep, handed=handed)

    def capture_later(self) -> bool:
        """In tier 0 (`capture_call` gives None): once its parallel variants are compiled."""
        return self.tier_done is not None and segment.mode(self.options) != "off"

    def write_prints(self, b, relation) -> None:
        flags, fvals, ivals = b.prints
        prints.emit(prints.lines(self.analysed.kernel_name, relation, self.print_stmts, flags,
                                 fvals, ivals, b.rows if b.has_rows else None), self.print_sink)
        for f in flags:
            f.fill(0)

    def set_tier0(self, on: bool) -> None:
        """Run the serial variants (`on`; until `tier_done()`, once `rs.precompile` sets it), or
        the chosen ones again; the bindings are made again at the next launch (pending folds
        keep their own arrays)."""
        self.tier0, self.tier_done = on, None
        self.bindings.clear()
        self.kept.clear()
        if on:
            tiers.runner_behind()

    def settle(self, b):
        """Before a launch, with reductions pending somewhere: fold this kernel's own pending
        slots (about to be overwritten), and the pending reductions into every field it reads
        or writes: folded now, or, for a field it touches only at its own key while running
        over the whole relation, absorbed (the kernel folds each row first, as it goes).
        Returns the function to call and its arguments."""
        direct = b.scheme in ("direct", "split")  # adds to its fields as it runs
        if b.outstanding or direct:
            for f in self.gather_fields:
                pending.flush(f)
        absorbing = []
        for f, absorbable in self.touched:
            if pending.folds_of(f):
                if absorbable and not b.has_rows and not direct:
                    absorbing.append(f)
                else:
                    pending.flush(f)
        if not absorbing:
            return b.fn, b.call_args
        pfs = [pf for f in absorbing for pf in pending.folds_of(f)]
        folds = tuple((pf.field, host_folds.OP_NAMES[pf.op], pf.absorb_args[1] is not None)
                      for pf in pfs)
        fn = self.absorbing(folds, b.parallel)  # compiled before the folds leave their fields
        for f in absorbing:
            for pf in pending.take(f):
                pf.owner.outstanding -= 1
        return fn, b.row_args + tuple(a for pf in pfs for a in pf.absorb_args)

    def absorbing(self, folds, parallel):
        """The kernel (over a whole relation) that first folds, row by row, pending reductions
        passed as extra arguments (`folds`: their operators and shapes; compiled once each)."""
        key = (tuple((f.name, op, has_ids) for f, op, has_ids in folds), parallel)
        fn = self.absorbing_fns.get(key)
        if fn is None:
            lowerer = CpuLowerer(self.analysed, absorb=folds, debug=self.sites)
            source = "# relsim generated kernel, folding pending reductions first" + \
                variant_note(self.options, False) + "\n" + unparse(lowerer.module()) + "\n"
            if [p.name for p in lowerer.params.items] != [p.name for p in self.params]:
                raise AssertionError("absorbing variant lowered with different parameters")
            mod = modules.module_for(source, self.options.cache_path(), "kernel_absorb")
            jit_callees(mod, **self.flags)
            fn = parts.Parts(parts.PartFunction(mod.kernel_parallel, self.options.cache_path(),
                                                self.flags), serial=not parallel)
            self.absorbing_fns[key] = fn
        return fn

    def compile_jobs(self, relation, subset) -> list:
        """The compilations the next launch over `relation` (or `subset`) needs, as
        `compile_ahead.CompileJob`s: the function its binding calls and the compiled folds it
        runs after it (a scatter's shared slots, parked slots), each for its arguments' types
        and not compiled (or loaded) yet (binding now, as that launch would; the launch then
        reuses the binding)."""
        return self.jobs_of(self.current(relation, subset))

    def planning_jobs(self, relation, subset) -> list:
        """A split scatter's plan (`tiers.planning_jobs`), listed from the serial binding; the
        parallel one is bound once they are compiled (`tiers.bind_awaiting`)."""
        if not self.gather_fields or self.force_serial or self.scatter not in ("auto", "split"):
            return []
        self.set_tier0(True)
        jobs = tiers.planning_jobs(self, self.current(relation, subset))
        if jobs:  # (bound once they are compiled: `tiers.bind_awaiting`)
            tiers.awaiting.append((self, relation, subset))
        else:
            self.set_tier0(False)
        return jobs

    @staticmethod
    def calls_of(b) -> list:
        """(dispatcher, arguments) of each compiled function binding `b`'s launch calls,
        relsim's folds of its Globals' lanes among them (compiled ahead with the kernel, a
        float sum's rounding took 0.6 s of a cold smoke or miniFE run on the main process)."""
        return [(b.fn, b.call_args)] + [(fn, args) for fn, args in b.post
                                        if hasattr(fn, "typeof_pyval")] + \
            [(pf.fn, pf.args) for pf in b.deferred] + \
            ([] if b.lanes is None else b.lanes.host_calls())

    def jobs_of(self, b) -> list:
        """The compilations binding `b`'s launch needs (see `compile_jobs`)."""
        jobs = (self.job(fn, args, fn is b.fn) for fn, args in self.calls_of(b))
        return [job for job in jobs if job is not None]

    def job(self, fn, args, generated: bool):
        """The `CompileJob` of dispatcher `fn` for `args` (None when compiled here already):
        a function of the generated module (`generated`: its size estimates the time; a part
        function's wrapper, `parts.PartFunction.job`) or one of relsim's folds, found by its
        module's name (small: compiled first)."""
        if isinstance(fn, parts.Parts):  # its wrapper and the part function it calls
            return fn.function.job(args, len(self.source))
        if isinstance(fn, parts.Tier0):
            return fn.job(args, self.path, len(self.source))
        signature = tuple(fn.typeof_pyval(a) for a in args)
        if signature in fn.overloads:
            return None
        if generated:
            options = tuple(sorted(self.flags.items()))
            where, cost = self.path, len(self.source)
        else:
            options = tuple(sorted(fn.targetoptions.items()))
            where, cost = fn.py_func.__module__, 5000
        return CompileJob(where, fn.py_func.__name__, options, signature, cost,
                          functools.partial(fn.compile, signature),
                          functools.partial(load_cached, fn, signature))

    def launch_with_threads(self, relation, subset) -> None:
        """A launch under a Config with its own thread count (restored afterwards)."""
        before = numba.get_num_threads()
        numba.set_num_threads(self.threads)
        try:
            self.launch(relation, subset)
        finally:
            numba.set_num_threads(before)
