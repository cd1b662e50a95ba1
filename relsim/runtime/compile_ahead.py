"""Compiling kernels ahead of their first launch, on several cores (`rs.precompile`).

Numba compiles one function at a time in a process (its compiler lock), and a large program's
first run spends most of its time there: LULESH compiles 19 functions one after the other in its
first cycle, on one core. Given the launches a program is about to make, `precompile` binds each
one as its first launch would (the variant it runs and its argument types are then known), asks
the backend which compilations that needs (`Launch.compile_jobs`), and shares them between this
process and worker processes (largest first, each to the least loaded), which write Numba's
on-disk cache. It returns when all are done; the launches then load what the workers compiled.

Only kernels whose generated module this process wrote (`cache.written`: a cold cache) are
shared out; a warm run starts no worker. Workers are plain subprocesses
(``python -m relsim.runtime.compile_ahead``), not a multiprocessing pool: a spawned pool would
import the user's main script again and run the simulation in every worker. A job a worker
fails on is left to its launch, which compiles it as without `precompile` and reports any error
at the user's line.
"""
from __future__ import annotations

import atexit
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .. import config as _config
from . import cache


@dataclass(frozen=True)
class CompileJob:
    """One function of a generated module to compile for one signature (picklable but for
    `here`, which compiles it in this process)."""
    path: str  # the generated module's file
    function: str  # the function's name in it
    options: tuple  # Numba jit options, as sorted (name, value) pairs
    signature: tuple  # Numba types of the arguments
    cost: int  # an estimate of its compile time, to balance the processes
    here: object = field(default=None, compare=False, repr=False)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "here"}

    def __setstate__(self, state):
        self.__dict__.update(state, here=None)


_running: list = []  # worker processes not known to have finished


def _cores() -> int:
    """The cores this process may run on (its affinity, where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _nothing(relation, subset) -> list:
    return []  # a launch that compiles nothing ahead (Launch.compile_jobs is optional)


def precompile(launches, config=None, workers: int | None = None) -> int:
    """Compile the kernels of `launches` — ``(kernel, relation_or_subset)`` pairs, as the
    program will launch them — in this process and up to `workers` others at once (default:
    one per CPU core but this one), before their first launch; returns the number of
    compilations shared out (0 when the cache is warm or there is no core to spare). Results
    never change; only the first launches get faster."""
    from ..relations.relation import Relation
    from ..relations.subset import Subset
    from .execute import executable

    cfg = config if config is not None else _config.current()
    jobs = {}
    for kernel, where in launches:
        if isinstance(where, Subset):
            relation, subset = where.relation, where
        elif isinstance(where, Relation):
            relation, subset = where, None
        else:
            raise TypeError(f"precompile takes (kernel, relation or subset) pairs, got "
                            f"{where!r}")
        exe = executable(kernel, relation, cfg)
        if getattr(exe, "path", None) not in cache.written:
            continue  # its module was in the cache: so, most likely, is its machine code
        for job in getattr(exe, "compile_jobs", _nothing)(relation, subset):
            jobs.setdefault((job.path, job.function, job.signature), job)
    # one function's signatures all go to one process: Numba's cache index of a function is
    # read, extended and written back, so two processes saving different signatures of it at
    # once could pair one's index entry with the other's machine code
    groups: dict = {}
    for job in jobs.values():
        groups.setdefault((job.path, job.function), []).append(job)
    n = min(workers if workers is not None else _cores() - 1, len(groups) - 1)
    if n < 1:  # nothing to share: the launches compile as they come
        return 0
    shares, loads = [[] for _ in range(n + 1)], [0] * (n + 1)  # shares[0]: this process
    for group in sorted(groups.values(), key=lambda g: -sum(j.cost for j in g)):
        i = loads.index(min(loads))
        shares[i].extend(group)
        loads[i] += sum(j.cost for j in group)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2])] +
                                        [p for p in sys.path if p])
    procs = []
    for share in shares[1:]:
        proc = subprocess.Popen([sys.executable, "-m", "relsim.runtime.compile_ahead"],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
        proc.stdin.write(pickle.dumps(share))
        proc.stdin.close()
        procs.append(proc)
    _running.extend(procs)
    for job in shares[0]:
        try:
            job.here()
        except Exception:  # noqa: BLE001, S112  (its launch compiles it again and reports)
            continue
    for proc in procs:
        proc.wait()
        _running.remove(proc)
    cache.written.difference_update(job.path for job in jobs.values())  # in Numba's cache now
    return len(jobs)


@atexit.register
def _stop_workers() -> None:
    for proc in _running:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _running.clear()


def _worker() -> None:
    from numba import njit
    for job in pickle.loads(sys.stdin.buffer.read()):
        try:
            fn = getattr(cache.module_at(Path(job.path)), job.function)
            njit(**dict(job.options))(fn).compile(job.signature)
        except Exception:  # noqa: BLE001, S112  (the launch compiles it again and reports)
            continue


if __name__ == "__main__":
    _worker()
