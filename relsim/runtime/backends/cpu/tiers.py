"""Tiered start-up: a launch whose compiled code Numba has neither compiled nor cached (a
kernel's parts wrapper, `parts.py`, with its part function compiled with `noalias`; a split
scatter; relsim's parallel folds) runs serially meanwhile (the same bits: the part function
as a plain dispatcher, `parts.Tier0`, cheaper to compile; the direct scatter) while this process's
background worker (`host/compile_jobs.background`, one niced process) compiles the parallel
one into Numba's disk cache; the launch binds it once the worker says it is there
(`CpuExecutable.launch` asks cheaply at each launch). A program's first run thus starts
computing after the serial compilations, a run at a size past the parallel threshold after a
small one does not stall, and the next run loads every variant.

`Config.startup` says whether launches do this ("tiered") or compile the parallel variant at
the first launch that needs it ("wait"); None takes $RELSIM_STARTUP, else "tiered".
`rs.precompile(..., background=True)` tiers the launches it is given in the same way, ahead of
their first launch. On several MPI ranks the distributed layer turns it off (`first_launch`:
rank 0 compiles each function once, the others load it)."""
from __future__ import annotations

import atexit
import contextlib
from dataclasses import replace

import numpy as np
from numba import typeof
from numba.core import types as numba_types

from ....config import check_choice, choice
from ....relations.key_field import key_dtype
from ...host import compile_jobs, jit
from . import ownership, parallel_for

MODES = ("tiered", "wait")
# the rows a split's slot targets are computed for, a chunk at a time (read-only, as a
# subset's: `CpuExecutable.slot_targets`); only its type matters here
_READ_ONLY_ROWS = np.zeros(0, dtype=np.int64)
_READ_ONLY_ROWS.flags.writeable = False


def check(config) -> None:
    """A ConfigError for a `Config.startup` not in MODES (None is checked at its use)."""
    check_choice(config, "startup", MODES, "RELSIM_STARTUP", "tiered")


def mode(config) -> str:
    """`config`'s start-up mode: `Config.startup`, else $RELSIM_STARTUP, else "tiered"."""
    return choice(config, "startup", MODES, "RELSIM_STARTUP", "tiered")


def start(exe, b) -> bool:
    """When the new binding `b` of `exe` calls code to compile behind tier 0 (jobs marked
    `parallel`: a parts wrapper, a split scatter, a parallel fold) neither compiled nor in the
    disk cache: give what it needs to the background worker and set `exe` on its serial variants
    until the worker is done (`exe.tier_done`); whether it did. A job is given once per
    launch: one the worker failed on is compiled by the launch itself, as without tiers."""
    if exe.tier0 or exe.tier_done is not None:  # (a serial launch too: its part function's
        return False  # wrapper compiles behind the plain function, `parts.Tier0`)
    types = jit.fingerprints(exe.calls_of(b))
    if types is not None and types in exe.tiered_types:
        return False  # (its jobs were given, or found compiled or cached, before)
    jobs = [job for job in exe.jobs_of(b) if (job.path, job.function, job.signature)
            not in exe.tiered_jobs and not job.cached()]  # (cached ones are loaded here)
    if types is not None:
        exe.tiered_types.add(types)
    if not any(job.parallel for job in jobs):
        return False
    try:
        done = compile_jobs.background(jobs)(set(range(len(jobs))))
    except OSError:  # no process to start: the launch compiles them
        return False
    exe.tiered_jobs.update((job.path, job.function, job.signature) for job in jobs)
    exe.set_tier0(True)
    exe.tier_done = done
    return True


_RELSIM = __name__.split(".")[0] + "."  # relsim's own modules (`helpers_ahead`)


def helpers_ahead(exe, b) -> None:
    """Give relsim's own compiled helpers that the new binding `b` calls after its kernel (the
    folds of its Globals' lanes, `CpuExecutable.calls_of`), when neither compiled nor in the
    disk cache, to the background worker first (`compile_jobs.helper_in_background`): it
    compiles them on the other core while this process compiles the kernel's code, which the
    launch calls first; the launch then loads them, or waits for the worker's compilation to
    end (`compiled._in_turn`) rather than compiling them again. (A float Global sum's rounding
    took 0.6 s of a cold smoke run on the main process.)"""
    for fn, args in exe.calls_of(b)[1:]:
        if getattr(fn, "py_func", None) is not None and \
                fn.py_func.__module__.startswith(_RELSIM) and not fn.targetoptions.get("parallel"):
            compile_jobs.helper_in_background(fn, tuple(fn.typeof_pyval(a) for a in args))


def runner_behind() -> None:
    """The runners a parallel launch and a serial one call (`parallel_for.run_parts`,
    `run_serial`: relsim's helpers) given to the background worker when not cached, as a
    launch enters tier 0: a first run that ends before its parallel variants are ready never
    compiles the first (0.37 s: a cold smoke run's next run compiled it), one of 2 threads
    launches none serially after tier 0, and the ranks of a first `mpiexec` run, a thread
    each, would compile the second (0.19 s)."""
    ints = numba_types.int64
    for runner in (parallel_for.run_parts, parallel_for.run_serial):
        compile_jobs.helper_in_background(runner, (ints, ints))


# (launch, relation, subset) of the launches `rs.precompile` left in tier 0 until the background
# worker has compiled what planning their parallel variant needs (`planning_jobs`): once it
# has, the next launch of any kernel binds them (`bind_awaiting`), so that a kernel launched
# once (miniFE's element loop) still has its parallel variant compiled behind the run
awaiting: list = []


def bind_awaiting(now: bool = False) -> None:
    """Bind the parallel variant of each awaiting launch whose planning code is compiled
    (with `now`: every one, compiling what the worker has not yet), its plan made with it,
    and give what that variant still needs to the background worker (`start`); a launch
    that left tier 0 itself is dropped."""
    for entry in list(awaiting):
        exe, relation, subset = entry
        if not exe.tier0:
            awaiting.remove(entry)
        elif now or (exe.tier_done is not None and exe.tier_done()):
            awaiting.remove(entry)
            exe.set_tier0(False)
            start(exe, exe.current(relation, subset))


@atexit.register
def _bind_awaiting_at_exit() -> None:
    """A run that ends before its awaiting launches were bound (LULESH's 10 cycles: the
    worker had not compiled the hourglass kernel's slot targets yet) binds them now, so that
    the background worker, which finishes after the program, compiles their parallel
    variants: the next run finds them, as it would had they been bound before the run."""
    if awaiting:
        with contextlib.suppress(Exception):  # (exiting: the next run tiers them itself)
            bind_awaiting(now=True)


def plan_ahead(exe, b) -> None:
    """`b`, a launch run serially because it is below the parallel threshold, reduces into
    fields through keys (the direct scatter): give the background worker, once per launch,
    what a parallel launch of it would first compile on the host to plan its split scatter
    (`planning_jobs`), so that a run past the threshold after small ones does not stall on
    them (1-3 s on a 2-core machine). Sets `exe.planned_ahead` to a cheap test of whether the
    worker is done with them."""
    jobs = planning_jobs(exe, b)
    done = lambda: True  # noqa: E731
    if jobs:
        try:
            done = compile_jobs.background(jobs)(set(range(len(jobs))))
        except OSError:  # no process to start: planned when a parallel launch needs it
            pass
    exe.planned_ahead = done


def planning_jobs(exe, b) -> list:
    """What a parallel launch of `exe` would first compile on the host to plan its split
    scatter, for the arguments' types of `b` (a binding of it, serial): its slot targets
    (`targets_<k>`) and `ownership.split_chunks`'s folds, as `CompileJob`s neither compiled
    nor in the disk cache (those there are loaded now). Empty for a kernel reducing into no
    field through keys."""
    ints = typeof(0)
    jobs = {}
    for k, lay in enumerate(exe.analysed.layouts):
        if not getattr(lay, "on_field", False):
            continue
        tgt = np.empty(0, dtype=key_dtype(lay.target.relation.size))
        job = exe.job(exe.targets[k], (b.n, _READ_ONLY_ROWS, True, exe.err, *b.args, tgt), True)
        if job is not None and not job.cached():  # (first: what the variant waits on)
            jobs[(job.path, job.function, job.signature)] = replace(job, cost=1)
        tgt_t, i64 = typeof(tgt), typeof(np.empty(0, np.int64))
        own_t = mixed_t = typeof(np.empty(0, np.int32))  # (mixed: int32 below 2^31 positions)
        for fn, sig in ((ownership._fold_owners, (tgt_t, ints, ints, i64, own_t)),
                        (ownership._shared_rows, (own_t,)),
                        (ownership._count_shared, (tgt_t, ints, own_t, ints, mixed_t, i64, ints)),
                        (ownership._place_shared, (tgt_t, ints, own_t, ints, mixed_t, i64,
                                                   i64))):
            job = compile_jobs.helper_job(fn, sig)
            if not job.cached():
                jobs[(job.path, job.function, job.signature)] = job
    return list(jobs.values())
