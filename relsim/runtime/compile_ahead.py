"""Compiling kernels ahead of their first launch, on several cores (`rs.precompile`).

Numba compiles one function at a time in a process (its compiler lock), and a large program's
first run spends most of its time there: LULESH compiles 19 functions one after the other in its
first cycle, on one core. Given the launches a program is about to make, `precompile` binds each
one as its first launch would (the variant it runs and its argument types are then known), asks
the backend which compilations that needs (`Launch.compile_jobs`), and shares them between this
process and worker processes (largest first, each to the least loaded), which write Numba's
on-disk cache. It returns when all are done; the launches then load what the workers compiled.

Only compilations Numba's disk cache cannot give are shared out (those it can are loaded at
once, as the launch would): a warm run starts no worker.

Tiers (``background=True``): a launch whose parallel variant is not compiled yet runs its
serial one (same bits; about a third of the compile time) until one more worker, started at a
lower priority and not waited for, has put the parallel variants in the disk cache; the
executable (`CpuExecutable.set_tier0`) checks that worker cheaply at each launch and binds the
parallel variants once it is done. Workers are plain subprocesses
(``python -m relsim.runtime.compile_ahead``), not a multiprocessing pool: a spawned pool would
import the user's main script again and run the simulation in every worker. A job a worker
fails on is left to its launch, which compiles it as without `precompile` and reports any error
at the user's line.
"""
from __future__ import annotations

import atexit
import contextlib
import importlib
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
    path: str  # the generated module's file, or the dotted name of one of relsim's modules
    function: str  # the function's name in it (a relsim module's: its dispatcher's py_func's)
    options: tuple  # Numba jit options, as sorted (name, value) pairs
    signature: tuple  # Numba types of the arguments
    cost: int  # an estimate of its compile time, to balance the processes
    here: object = field(default=None, compare=False, repr=False)
    # loads its machine code from Numba's disk cache when there; whether it did
    cached: object = field(default=None, compare=False, repr=False)

    @property
    def parallel(self) -> bool:
        return dict(self.options).get("parallel", False)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("here", "cached")}

    def __setstate__(self, state):
        self.__dict__.update(state, here=None, cached=None)


def load_cached(fn, signature) -> bool:
    """Load dispatcher `fn`'s machine code for `signature` (a tuple of Numba types) from Numba's
    disk cache if it is there, as its first call would; whether `fn` now has it."""
    from numba.core.compiler_lock import global_compiler_lock
    if tuple(signature) in fn.overloads:
        return True
    try:
        with global_compiler_lock:
            cres = fn._cache.load_overload(tuple(signature), fn.targetctx)
            if cres is None:
                return False
            if not cres.objectmode:
                fn.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
            fn.add_overload(cres)
    except Exception:  # noqa: BLE001 (Numba internals moved: its first call loads or compiles)
        return False
    return True


_running: list = []  # worker processes not known to have finished


def _cores() -> int:
    """The cores this process may run on (its affinity, where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _nothing(relation, subset) -> list:
    return []  # a launch that compiles nothing ahead (Launch.compile_jobs is optional)


def precompile(launches, config=None, workers: int | None = None,
               background: bool = False) -> int:
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
    change: every variant gives the same bits."""
    from ..relations.relation import Relation
    from ..relations.subset import Subset
    from .execute import executable

    cfg = config if config is not None else _config.current()
    jobs, later, tiered = {}, {}, []
    for kernel, where in launches:
        if isinstance(where, Subset):
            relation, subset = where.relation, where
        elif isinstance(where, Relation):
            relation, subset = where, None
        else:
            raise TypeError(f"precompile takes (kernel, relation or subset) pairs, got "
                            f"{where!r}")
        exe = executable(kernel, relation, cfg)
        todo = _uncompiled(exe, relation, subset)
        if background and any(j.parallel for j in todo) and hasattr(exe, "set_tier0"):
            keys = [(job.path, job.function, job.signature) for job in todo]
            for key, job in zip(keys, todo):
                later.setdefault(key, job)
            exe.set_tier0(True)  # `tier_done` is set once the worker runs
            tiered.append((exe, keys))
            todo = _uncompiled(exe, relation, subset)  # bound again: its serial variant
        for job in todo:
            jobs.setdefault((job.path, job.function, job.signature), job)
    # one function's signatures all go to one process: Numba's cache index of a function is
    # read, extended and written back, so two processes saving different signatures of it at
    # once could pair one's index entry with the other's machine code
    groups: dict = {}
    for job in jobs.values():
        groups.setdefault((job.path, job.function), []).append(job)
    n = min(workers if workers is not None else _cores() - 1, len(groups) - 1)
    if n < 1:  # nothing to share: the launches compile as they come
        _in_background(later, tiered)
        return len(later)
    shares, loads = [[] for _ in range(n + 1)], [0] * (n + 1)  # shares[0]: this process
    for group in sorted(groups.values(), key=lambda g: -sum(j.cost for j in g)):
        i = loads.index(min(loads))
        shares[i].extend(group)
        loads[i] += sum(j.cost for j in group)
    procs = [_start(share) for share in shares[1:]]
    for job in shares[0]:
        try:
            job.here()
        except Exception:  # noqa: BLE001, S112  (its launch compiles it again and reports)
            continue
    for proc in procs:
        proc.wait()
        _running.remove(proc)
    _in_background(later, tiered)  # started last: the compilations waited for come first
    return len(jobs) + len(later)


def _in_background(later: dict, tiered: list) -> None:
    """Start the background worker for the jobs `later` (smallest first, so that a short run
    still leaves some in the cache), and tell each tiered launch how to learn that its own
    are done."""
    if not later:
        return
    order = sorted(later, key=lambda key: later[key].cost)
    progress = _Progress(_start([later[key] for key in order], background=True))
    index = {key: i for i, key in enumerate(order)}
    for exe, keys in tiered:
        exe.tier_done = progress.test({index[key] for key in keys})


def _uncompiled(exe, relation, subset) -> list:
    """The compilations `exe`'s next launch over `relation` / `subset` needs that Numba's disk
    cache cannot give (those it can are loaded now, as that launch would)."""
    return [job for job in getattr(exe, "compile_jobs", _nothing)(relation, subset)
            if job.cached is None or not job.cached()]


def _start(jobs, background: bool = False):
    """A worker process compiling `jobs` into Numba's disk cache, stopped at exit if still
    running; a background one runs at a lower priority than the program and is left to finish
    after it (so that the next run finds every parallel variant; Ctrl-C stops it too)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2])] +
                                        [p for p in sys.path if p])
    args = [sys.executable, "-m", "relsim.runtime.compile_ahead"] + \
        (["--background"] if background else [])
    proc = subprocess.Popen(args, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE if background else subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    proc.stdin.write(pickle.dumps(jobs))
    proc.stdin.close()
    if not background:
        _running.append(proc)
    return proc


class _Progress:
    """What a background worker has finished: it writes the index of each job once that job's
    machine code is in the cache (or its compilation failed: its launch then compiles it)."""

    def __init__(self, proc):
        self.proc, self.done, self.ended, self.buf = proc, set(), False, b""
        try:
            os.set_blocking(proc.stdout.fileno(), False)
            self.piped = True
        except (OSError, AttributeError):  # no non-blocking pipes: learn only that it ended
            self.piped = False

    def poll(self) -> None:
        if not self.piped:
            self.ended = self.proc.poll() is not None
            return
        while not self.ended:
            try:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
            except BlockingIOError:
                return
            if not chunk:  # the worker exited: everything it wrote has been read
                self.ended = True
                self.proc.wait()
                return
            self.buf += chunk
            *lines, self.buf = self.buf.split(b"\n")
            self.done.update(int(line) for line in lines if line.strip())

    def test(self, wanted: set):
        """A cheap test (a non-blocking read of the worker's pipe) of whether the jobs
        `wanted` are done, or the worker ended."""
        def done() -> bool:
            self.poll()
            return self.ended or wanted <= self.done
        return done


@atexit.register
def _stop_workers() -> None:
    for proc in _running:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _running.clear()


def _worker() -> None:
    from numba import njit
    background = report = "--background" in sys.argv[1:]
    if background and hasattr(os, "nice"):
        os.nice(10)  # the program's serial launches run meanwhile: they come first
    for i, job in enumerate(pickle.loads(sys.stdin.buffer.read())):
        try:
            if job.path.endswith(".py"):  # a generated module
                fn = njit(**dict(job.options))(getattr(cache.module_at(Path(job.path)),
                                                       job.function))
            else:  # one of relsim's compiled folds
                fn = next(v for v in vars(importlib.import_module(job.path)).values()
                          if getattr(getattr(v, "py_func", None), "__name__", "") ==
                          job.function)
            if not background:
                fn.compile(job.signature)
                continue
            # another program's background worker may be compiling the same function into the
            # same cache (Numba's index is read-modify-write): one at a time, and only once
            with _cache_lock(Path(fn._cache.cache_path)):
                if not load_cached(fn, job.signature):
                    fn.compile(job.signature)
        except Exception:  # noqa: BLE001, S112  (the launch compiles it again and reports)
            pass
        if background and report:  # its launch may now load it
            try:
                sys.stdout.write(f"{i}\n")
                sys.stdout.flush()
            except OSError:  # the program has ended: compile the rest for the next run
                report = False


@contextlib.contextmanager
def _cache_lock(directory: Path):
    """An exclusive lock on a directory of Numba's disk cache (where fcntl exists)."""
    try:
        import fcntl
    except ImportError:  # not on POSIX: no lock
        yield
        return
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".compile.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


if __name__ == "__main__":
    _worker()
