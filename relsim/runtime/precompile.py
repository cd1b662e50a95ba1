"""Compiling kernels ahead of their first launch, on several cores (`rs.precompile`).

Numba compiles one function at a time in a process (its compiler lock), and a large program's
first run spends most of its time there: LULESH compiles 19 functions one after the other in its
first cycle, on one core. Given the launches a program is about to make, `precompile` binds each
one as its first launch would (the variant it runs and its argument types are then known), asks
the backend which compilations that needs (`Launch.compile_jobs`), and shares them between this
process and worker processes, which write Numba's on-disk cache (`compile_jobs.Sharing`): each
kernel's jobs go to the workers as soon as it is lowered, so that they compile while this
process lowers the next kernels; then this process compiles what is left, each job going to
whoever is free first (the dearest first). It returns when all are done; the launches then load
what the workers compiled. (A split fixed in advance by estimated cost left LULESH's main process
idle for 3.6 of its 6.3 s of compiling, waiting on a worker given too much.)

Only compilations Numba's disk cache cannot give are shared out (those it can are loaded at
once, as the launch would): a warm run starts no worker.

Tiers (``background=True``): a launch whose compiled code is not ready yet (a kernel's parts
wrapper, `backends/cpu/parts.py`; a split scatter; a parallel fold) runs a serial variant that
compiles faster (same bits: the part function as a plain dispatcher, the direct scatter)
until one more worker, started at a
lower priority and not waited for, has put the parallel variants in the disk cache; the
executable (`CpuExecutable.set_tier0`) checks that worker cheaply at each launch and binds the
parallel variants once it is done. Workers are plain subprocesses
(`host/compile_jobs.py`).
"""
from __future__ import annotations

from .. import config as _config
from . import parallel
from .host import compile_jobs


def precompile(launches, config=None, workers: int | None = None,
               background: bool | None = False) -> int:
    """Compile the kernels of `launches` — ``(kernel, relation_or_subset)`` pairs, as the
    program will launch them — in this process and up to `workers` others at once (default:
    one per CPU core but this one), before their first launch; returns the number of
    compilations done ahead (0 when the cache is warm).

    With `background`, the launches that will run a parallel variant not yet compiled run the
    serial one instead (it compiles in about a third of the time) until a worker process,
    started here and left running, has compiled its parallel variant into Numba's disk cache
    (smallest first); its next launch then loads it. A short run thus starts sooner and a long
    one starts computing sooner; a worker still running when the program ends finishes its
    compilations on its own, at low priority, so that the next run finds them. Results never
    change: every variant gives the same bits. `background=None`: the launches whose start-up
    mode is "tiered" (`Config.startup`, `$RELSIM_STARTUP`) as with `background`, the others
    left to their first launch (with "wait" nothing is compiled ahead)."""
    from ..relations.relation import Relation
    from ..relations.subset import Subset
    from .execute import executable

    cfg = config if config is not None else _config.current()
    rank = parallel.ranks().rank
    n = workers if workers is not None else compile_jobs.cores() - 1
    # rank 0 compiles what is waited for; the others load it (`first_launch`)
    sharing = compile_jobs.Sharing(n) if n >= 1 and rank == 0 else None
    later, tiered = {}, []
    try:
        for kernel, where in launches:
            if isinstance(where, Subset):
                relation, subset = where.relation, where
            elif isinstance(where, Relation):
                relation, subset = where, None
            else:
                raise TypeError(f"precompile takes (kernel, relation or subset) pairs, got "
                                f"{where!r}")
            exe = executable(kernel, relation, cfg)
            behind = exe.self_tiering if background is None else background
            if background is None and not behind:
                continue  # (not tiered: compiled at its first launch, as without precompile)
            if behind and _planned_behind(exe, relation, subset, later, tiered):
                if sharing is not None:  # (its serial variant's)
                    sharing.offer(_uncompiled(exe, relation, subset))
                continue
            todo = _uncompiled(exe, relation, subset)
            if behind and any(j.parallel for j in todo):
                _tier(exe, todo, later, tiered)
                todo = _uncompiled(exe, relation, subset)  # bound again: its serial variant
            if sharing is not None:  # (workers start on them while the next are lowered)
                sharing.offer(todo)
    except BaseException:  # (a kernel that does not compile: raised as it is)
        if sharing is not None:
            sharing.abandon()
        raise
    if sharing is not None:
        sharing.finish()
    # started last: the compilations waited for come first
    compile_jobs.in_background(later, tiered)
    return (len(sharing.offered) if sharing is not None else 0) + len(later)


def _tier(exe, todo, later, tiered) -> None:
    """Run `exe`'s serial variants until the background worker has compiled `todo` (its
    parallel variant's jobs, added to `later`)."""
    keys = [(job.path, job.function, job.signature) for job in todo]
    for key, job in zip(keys, todo):
        later.setdefault(key, job)
    exe.set_tier0(True)  # `tier_done` is set once the worker runs
    tiered.append((exe, keys))


def _planned_behind(exe, relation, subset, later, tiered) -> bool:
    """Whether `exe`'s preferred variant is planned on the host with code not compiled yet
    (`Launch.planning_jobs`: a split scatter's slot targets and ownership folds; binding it
    only to list its jobs compiled those here, before any job was offered: ~0.9 s of LULESH's
    cold start, 1.4 s of miniFE's, on the cores the serial variants needed): then it runs its
    serial variant until the background worker has compiled them, and, bound again, tiers
    itself for what its preferred variant still needs (`self_tiering`)."""
    if not exe.self_tiering:
        return False
    plan = exe.planning_jobs(relation, subset)
    if plan:
        _tier(exe, plan, later, tiered)
    return bool(plan)


def _uncompiled(exe, relation, subset) -> list:
    """The compilations `exe`'s next launch over `relation` / `subset` needs that Numba's disk
    cache cannot give (those it can are loaded now, as that launch would)."""
    return [job for job in exe.compile_jobs(relation, subset)
            if job.cached is None or not job.cached()]
