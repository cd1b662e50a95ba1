"""The backend interface: everything the runtime, the MPI layer, `rs.explain` and
`rs.precompile` ask of a target. Read this and `docs/architecture.md` ("Writing a backend") to
write one; nothing else is called on a backend or its launches (no `hasattr` probing).

A **backend** (registered as a target with `rs.register_backend(name, backend)` or the
``relsim.backends`` entry-point group) turns an analysed kernel into a `Launch`. It implements
`Backend.compile`; every other hook has a default here.

A **launch** (the compiled form of one kernel over one relation under one configuration)
implements `Launch.launch`; the rest is optional, with defaults here. Wrappers around a launch
(the MPI layer's `DistributedLaunch`) forward every hook.

**Where data lives.** Fields and Globals keep a host array (``field._data``, ``g._data``): the
data model's view. A backend that keeps newer values elsewhere — reductions whose fold it left
pending (cpu), a device copy (cuda), ghost rows (MPI) — attaches a `Residency` to the field or
Global (``obj.residency``); the data model calls it before the host array is read and after the
host wrote it, and knows nothing else of how kernels run. A backend reads and writes the host
arrays it is given only after bringing them up to date (``residency.before_host_read``), and
detaches its residency when the host array is current again. **The host's duty**: a backend
computing on the host arrays calls `bring_to_host(fields)` before a launch for the fields that
launch uses whose residency is a device copy (``on_device``); a device residency, when it is
attached, moves the storage epoch (`runtime/epoch.py`), so a launch re-checks which of its
fields have one only when the epoch moved.

**Binding.** A compiled backend's generated function takes the parameters the shared lowering
lists (`lowering/params.py`: field and Global storage, grouping arrays, reduction slots and
their places, insert and delete flags and values, relation sizes, debug arrays); each backend
binds every kind to its own memory. `host/binding.py` holds what is the same for all: the
relations a launch re-binds for, a slot array filled with the operator's identity.

**Failures.** A launch raises a `KernelRuntimeError` for a flagged index or random-number
error and, with ``Config(debug=True)``, the lowest failing row's `KernelCheckError`
(`host/debug_checks.py`: `raise_flagged`, `raise_first_failure`), before any of its folds or
row changes is applied.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

# Config options every target's compiled launches depend on (`Backend.key`)
COMMON_OPTIONS = ("target", "debug", "fast_math", "distributed", "cache_dir")


class Launch(ABC):
    """One kernel compiled for one relation and configuration."""

    analysed = None  # the runtime.pipeline.Analysed it was compiled from
    source: str | None = None  # generated module source, if any (rs.explain)
    path: str | None = None  # the file holding `source` (tracebacks point into it)
    # the debug variant's check sites (`host/debug_checks.Sites`: what `rs.explain` lists), or
    # None when the launch runs no debug checks
    sites = None

    # -- several ranks --------------------------------------------------------------------
    # True when the launch hands over what the MPI layer merges: its Global contributions go to
    # `partials`, its inserted and deleted rows to `row_sink` and its print lines to
    # `print_sink` whenever those are set
    distributable = False
    # set by the MPI layer (`parallel.global_merge.GlobalMerge`): ``partials.collect(glob, op,
    # values, per_row, rows)`` receives a Global's slots instead of the launch folding them
    partials = None
    # Globals whose float64 sums the launch may hand over as lanes instead of slots
    # (``partials.collect_lanes(sums, lanes_ran)``, when ``partials.takes_lanes()`` at binding)
    lane_globals = ()
    # set by the MPI layer (`parallel.elastic.RowChanges`): receives rows inserted and deleted
    # (`host/row_changes.apply_flagged`'s `sink`) instead of the relations changing
    row_sink = None
    # set by the MPI layer (`parallel.print_gather.PrintGather`): receives the launch's print
    # lines (`host/prints.emit`'s `sink`) instead of stdout
    print_sink = None

    # whether the segments its capture calls join run `CompiledStop`s' calls (else a captured
    # step on several ranks returns to the host for each exchange and merge: `HostStop`)
    runs_compiled_stops = False

    # -- tiered start-up (`rs.precompile(..., background=True)`) ---------------------------
    # called at each launch when not None; once it returns True, the launch binds its
    # preferred (parallel) variants again (see `set_tier0`)
    tier_done = None
    # whether a launch may tier itself when it binds (`Config.startup`: the cpu's
    # `backends/cpu/tiers.py`); the MPI layer turns it off (its ranks compile a function once)
    self_tiering = False
    # whether captured segments this launch joins may be compiled by a background worker
    # while their launches replay (`Config.segments`); the MPI layer turns it off
    background_segments = True

    @abstractmethod
    def launch(self, relation, subset) -> None:
        """Run the kernel once for every row of `relation`, or of `subset` (a `Subset` of it)
        when not None, with the serial meaning (rows in ascending order, program order within a
        row): results may not depend on how the rows are scheduled."""

    def compile_jobs(self, relation, subset) -> list:
        """The compilations the next launch over `relation` (or `subset`) needs, as
        `host.compile_jobs.CompileJob`s not in any cache yet, so that `rs.precompile` can run
        them on other cores (default: none: the launch compiles what it needs itself)."""
        return []

    def planning_jobs(self, relation, subset) -> list:
        """The compilations that binding the preferred variant over `relation` (or `subset`)
        would run on the host to plan it (the cpu's split scatter), as `CompileJob`s not in any
        cache, listed from the binding of the fastest-compiling variant, which it leaves in
        place (`set_tier0(True)`); [] when it needs none, the launch unchanged (default)."""
        return []

    def set_tier0(self, on: bool) -> None:  # noqa: B027 (optional: most launches have one tier)
        """`on`: run the variants that compile fastest (same bits) until `tier_done()` says
        the preferred ones are compiled; off: the preferred ones again (default: no tiers)."""

    def capture_call(self, relation, subset):
        """For a captured step (`rs.capture`): what the launch over `relation` (or `subset`)
        runs, bound to the arrays the fields hold now, as an object this backend's
        `Backend.compile_segment` takes, or a tuple of them in order (`HostStop`s around a
        call: a distributed launch's); or None when the launch must run as a launch (host
        work after its loop; the default)."""
        return None

    def capture_later(self) -> bool:
        """Whether a `capture_call` that gave None now may give a call later, with nothing
        changed but the compiled code at hand (the cpu: in tier 0, until its parallel variants
        are compiled); a captured step's plan is then made again (default: False)."""
        return False

    def describe_halo(self, relation, subset=None) -> str | None:
        """What this process runs and reads for a launch over `relation` (or `subset`) when rows
        are distributed over ranks (`rs.explain`); None when they are not (default)."""
        return None


class Backend(ABC):
    """A target's compiler (one object per registered target)."""

    name = "?"
    # the `rs.Config` options this backend owns (beyond `COMMON_OPTIONS`): it validates them
    # (`check_options`) and its compiled launches are keyed by them (`key`); other targets'
    # launches do not move when they change
    options: tuple = ()

    @abstractmethod
    def compile(self, analysed, config) -> Launch:
        """The launchable form of `analysed` (the `runtime.pipeline.Analysed` of one kernel
        over one relation: typed IR, access summary, phase information, reduction slot layouts)
        under `config`. The runtime caches the result per (kernel, relation schema,
        `key(config)`) and calls its `launch` for every launch."""

    def compile_segment(self, calls, fallback):
        """One callable (no arguments) running `calls` in order — `Launch.capture_call`
        results, `Assign`s, `Loop`s and `Branch`es — with the launches' bits and errors, or
        `fallback()` (the launches) until it is ready, with a ``compile()`` method making it
        ready now and a ``poll()`` method telling whether it is (starting its compilation); or
        None to replay them one by one (default)."""
        return None

    def check_options(self, config) -> None:  # noqa: B027 (optional: most targets own none)
        """Raise a ConfigError for a value of one of `options` this backend cannot use (called
        for every `rs.Config` built, whatever its target: a bad value is refused up front)."""

    def key(self, config) -> tuple:
        """What of `config` this backend's compiled launches depend on."""
        return tuple(getattr(config, name) for name in COMMON_OPTIONS + self.options)

    def configure(self, config) -> None:  # noqa: B027  (optional: most targets have none)
        """`config` became the process default (`rs.configure`): apply its process-wide
        settings or raise a ConfigError (default: none)."""

    def threads(self, config) -> int:
        """Threads a launch under `config` uses (reports print it; default: 1)."""
        return 1

    def share_cores(self, cores: int) -> None:  # noqa: B027  (optional)
        """Several ranks run on this node: this process should use at most `cores` cores
        (default: nothing to do)."""

    def unavailable(self) -> str | None:
        """Why this target cannot run kernels on this machine now (no device, say), or None
        (default: it can). Tools that try every target (the soak) skip those that cannot."""
        return None

    def synchronize(self) -> None:  # noqa: B027  (optional: most targets never queue)
        """Wait for every launch this target queued and raise the first failed one's error
        (`rs.synchronize()`; default: launches complete before they return)."""


class Assign:
    """In a captured step: the scalar float64 Global `target` set to `expr` (a float, a
    Global, or a `relations.global_expr.Expr` of them), computed when the step reaches it."""

    __slots__ = ("target", "expr")

    def __init__(self, target, expr):
        self.target, self.expr = target, expr


class Loop:
    """In a captured step: `calls` (capture calls, `Assign`s, `Loop`s) run while `condition`
    (a `relations.global_expr.Condition` or `AllOf`, or None) holds, at most `max_iterations`
    times; the count of iterations stored in the Global `count` (or None), and after each
    iteration i, with `record` = (Global, array), the Global's value in array[i]."""

    __slots__ = ("condition", "calls", "max_iterations", "count", "record")

    def __init__(self, condition, calls, max_iterations, count, record=None):
        self.condition, self.calls = condition, calls
        self.max_iterations, self.count, self.record = max_iterations, count, record


class HostStop:
    """In a captured step: host work between two compiled calls (`run()`, no arguments; a
    distributed launch's ghost exchange before its loop, its Global merge after it): the
    segment returns to the host for it, then goes on from the next call."""

    __slots__ = ("run",)

    def __init__(self, run):
        self.run = run


class CompiledStop:
    """In a captured step: host work a backend's segment may run as compiled code (a
    distributed launch's ghost exchanges and Global merge: `parallel/captured_mpi.py`):
    `calls` ((function, arguments), each returning 0 to go on), run in order; at the first
    nonzero result the segment returns to the host for `run()`, which does the rest, and
    goes on after it. `syncs`: objects whose `enter()` is called before each call into the
    compiled segment and `leave()` after it returns (the host's record of what the calls
    change, such as which ghost rows are current, kept right at every return; one whose
    `leaves` is False only enters). A backend
    that runs no such calls (`Launch.runs_compiled_stops`) is never given one."""

    __slots__ = ("run", "calls", "syncs")

    def __init__(self, run, calls, syncs=()):
        self.run, self.calls, self.syncs = run, calls, syncs


class Rebin:
    """In a captured step, after a launch that wrote a field keys follow (moving particles'
    cells): those keys and the groupings over them computed again in their arrays by compiled
    `calls` ((function, arguments), the `follow` rule's first), which a segment runs as it runs
    a launch's; the rule sets `err[0]` for a row it leaves to the host: `host()` then computes
    them all there (raising the domain's error), and the segment goes on after it. `done(ok)`
    after a compiled run of the segment (`ok`: it ran to its end)."""

    __slots__ = ("kernel_name", "calls", "err", "lanes", "host", "done")

    def __init__(self, kernel_name, calls, err, host, done):
        self.kernel_name, self.calls, self.err, self.lanes = kernel_name, calls, err, None
        self.host, self.done = host, done


class Branch:
    """In a captured step: `then` (capture calls, `Assign`s, `Loop`s, `Branch`es) when
    `condition` (a `relations.global_expr.Condition` or `AllOf`) holds, else `otherwise`."""

    __slots__ = ("condition", "then", "otherwise")

    def __init__(self, condition, then, otherwise):
        self.condition, self.then, self.otherwise = condition, then, otherwise


def variant_note(options, debug: bool) -> str:
    """What a generated module's first line says of its variant: debug checks, products that
    may fuse. It also keeps variants apart in the disk cache (named by the text; Numba's
    index ignores the jit flags)."""
    return (", with debug checks" if debug else "") + \
        (", products may fuse (fast_math)" if options.fast_math else "")


def on_device(fields) -> tuple:
    """Those of `fields` whose residency is a device copy (``on_device``)."""
    return tuple(f for f in fields if getattr(f.residency, "on_device", False))


def bring_to_host(fields) -> None:
    """Before a host-side launch touching `fields`: download those a device holds newer, and
    drop their device copies (the launch may write the host arrays; the device backend makes
    a new copy at its next launch)."""
    for f in fields:
        r = f.residency
        if getattr(r, "on_device", False):  # (another backend's residency may be there)
            r.before_host_read(f)
            f.residency = None


class Residency(Protocol):
    """Attached by the runtime as ``field.residency`` / ``global.residency`` while the host array
    is not the current copy of the values; None otherwise."""

    def before_host_read(self, obj) -> None:
        """Bring `obj`'s host array up to date (it is about to be read, or handed out)."""

    def after_host_write(self, obj) -> None:
        """The host just wrote `obj`'s host array: what was kept elsewhere is outdated."""

    # Optional, for a field of an elastic relation whose rows change (`relations.elastic`):
    # make the change where the values are, and return the field's new host array (which the
    # residency then mirrors, current or not), or None / False to let the host make it (after
    # a `before_host_read`, as for any host write).

    def keep_rows(self, field, keep):
        """Keep the rows where the bool mask `keep` is true, in order."""

    def resize_rows(self, field, size):
        """Change the row count to `size`: rows kept from the start, new rows zero."""

    def write_rows(self, field, start, values) -> bool:
        """Set the rows from `start` on (just added) to `values` (host values)."""
