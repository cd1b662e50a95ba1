"""Compile jobs: the compilations a launch needs, and the worker processes that run them into
Numba's disk cache (below the backends, which describe their jobs with `CompileJob`; the user's
entry point `rs.precompile` is `runtime/precompile.py`, above `execute`).

Workers are plain subprocesses (``python -m relsim.runtime.host.compile_jobs``), not a
multiprocessing pool: a spawned pool would import the user's main script again and run the
simulation in every worker. A job a worker fails on is left to its launch, which compiles it as
if nothing had been compiled ahead and reports any error at the user's line. One background
worker per process (`background`: tiered start-up, captured segments, helpers) runs niced,
takes jobs as the program finds them and reports each finished one on a pipe (`Background`).
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import importlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..caches import modules


@dataclass(frozen=True)
class CompileJob:
    """One function of a generated module to compile for one signature (picklable but for
    `here`, which compiles it in this process)."""
    path: str  # the generated module's file, or the dotted name of one of relsim's modules
    function: str  # the function's name in it (a relsim module's: its dispatcher's py_func's)
    # Numba jit options, as sorted (name, value) pairs; or ("call", "module.function"): the
    # worker calls that function of relsim's with (path, *signature), and it compiles and
    # saves (a kernel's parallel parts wrapper: `backends/cpu/parts.compile_wrapper`)
    options: tuple
    signature: tuple  # Numba types of the arguments (or the call's further arguments)
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


running: list = []  # worker processes not known to have finished


def cores() -> int:
    """The cores this process may run on (its affinity, where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def in_background(later: dict, tiered: list) -> None:
    """Give the jobs `later` to the background worker (smallest first, so that a short run
    still leaves some in the cache), and tell each tiered launch how to learn that its own
    are done."""
    if not later:
        return
    order = sorted(later, key=lambda key: later[key].cost)
    done = background([later[key] for key in order])
    index = {key: i for i, key in enumerate(order)}
    for exe, keys in tiered:
        exe.tier_done = done({index[key] for key in keys})


_helpers: dict = {}  # (module, function, signature) -> its background worker's `done` test


# the cost of a helper job that only speeds up a path with a slower way to the same bits (an
# exact fold): the worker takes the cheapest job first, so it comes after the kernels'
# parallel variants (smoke's first undecided sum had the worker compile the exact fold for
# 5 s before any of them: the whole run stayed in tier 0)
AFTER_KERNELS = 1 << 40


def helper_in_background(fn, signature, cost: int = 1):
    """One of relsim's compiled helpers `fn` (a cached njit dispatcher) for `signature`:
    (True, None) when its machine code is here or in Numba's disk cache (now loaded), else
    (False, done) after giving it, once per process, to the background worker, as a job of
    `cost` (default: before anything dearer; `AFTER_KERNELS`); ``done()`` tells, cheaply,
    when `load_cached` may find it. For a helper whose first compilation would stall a
    launch for seconds while a slower way to the same bits exists."""
    if load_cached(fn, signature):
        return True, None
    key = (fn.py_func.__module__, fn.py_func.__name__, tuple(signature))
    if key not in _helpers:
        job = helper_job(fn, signature, cost)
        try:
            _helpers[key] = background([job])({0})
        except OSError:  # no process to start: the slower way it is
            _helpers[key] = lambda: False
    return False, _helpers[key]


def helper_job(fn, signature, cost: int = 1) -> CompileJob:
    """The `CompileJob` of one of relsim's compiled helpers `fn` for `signature` (a worker
    finds it by its module's name)."""
    return CompileJob(fn.py_func.__module__, fn.py_func.__name__, (), tuple(signature), cost,
                      functools.partial(fn.compile, tuple(signature)),
                      functools.partial(load_cached, fn, tuple(signature)))


_background: dict = {}  # NUMBA_CACHE_DIR -> this process's background worker (`Background`)


def background(jobs):
    """Give `jobs` to this process's background worker (started at the first call, again if
    it ended): one niced process compiles everything the program compiles ahead in the
    background (tiered launches' parallel variants, captured segments, helpers), the cheapest
    job given so far first, while the program runs what it has. Returns ``test(wanted)``: a
    cheap test of whether the jobs at positions `wanted` of `jobs` are done. Raises OSError
    when no process can be started."""
    where = os.environ.get("NUMBA_CACHE_DIR", "")  # (a worker writes where it started)
    worker = _background.get(where)
    if worker is None or worker.ended or worker.proc.poll() is not None:
        worker = _background[where] = Background()
    return worker.submit(jobs)


def start(jobs, background: bool = False, shared: str | None = None):
    """A worker process compiling `jobs` into Numba's disk cache, stopped at exit if still
    running; a background one (`Background`) runs at a lower priority than the program, takes
    more jobs on its stdin while it runs, and is left to finish after the program (so that the
    next run finds every parallel variant; Ctrl-C stops it too); a `shared` one (`Sharing`)
    takes more jobs too, and claims each in that folder before compiling it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[3])] +
                                        [p for p in sys.path if p])
    args = [sys.executable, "-m", "relsim.runtime.host.compile_jobs"] + \
        (["--background"] if background else []) + \
        (["--shared", shared] if shared is not None else [])
    proc = subprocess.Popen(args, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE if background else subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    if not background:
        if shared is None:
            proc.stdin.write(_frame(jobs))
            proc.stdin.close()
        running.append(proc)
    return proc


class Background:
    """The background worker: lists of jobs written to its stdin as they come (`_frame`), each
    job's index (counted over all lists) written back on its stdout once its machine code is in
    the cache (or its compilation failed: its launch then compiles it). Its stdin closes when
    the program ends: it then finishes what it was given and exits."""

    def __init__(self):
        self.proc = start([], background=True)
        self.given, self.done, self.ended, self.buf = 0, set(), False, b""
        try:
            os.set_blocking(self.proc.stdout.fileno(), False)
            self.piped = True
        except (OSError, AttributeError):  # no non-blocking pipes: learn only that it ended
            self.piped = False

    def submit(self, jobs):
        first = self.given
        self.proc.stdin.write(_frame(list(jobs)))
        self.proc.stdin.flush()
        self.given += len(jobs)
        return lambda wanted: self.test({first + i for i in wanted})

    def close(self) -> None:
        """No more jobs: the worker finishes those it has (unread reports are dropped)."""
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:  # (it ended early: nothing to tell it)
                pass

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


class Sharing:
    """Compilations shared out as they are found (`rs.precompile`): `offer` sends jobs to
    `workers` processes started at the first offer, each of which compiles the dearest job
    offered so far that nobody has claimed (`claim`: a file made in a folder of their own, the
    first to make it compiles); `finish` has this process do the same with everything offered,
    then waits for the workers. A job is thus compiled once, by whoever is free first: the
    workers start while this process is still analysing the next kernels, and nobody waits on
    a share that was estimated too small. Nothing offered (a warm cache): nothing started."""

    def __init__(self, workers: int):
        self.workers = workers
        self.claims = None  # the claims folder, made with the workers at the first offer
        self.procs: list = []
        self.offered: dict = {}  # (path, function, signature) -> job, in order

    def offer(self, jobs) -> None:
        new = [job for job in jobs if _key(job) not in self.offered]
        if not new:
            return
        for job in new:
            self.offered[_key(job)] = job
        if self.claims is None:
            self.claims = tempfile.mkdtemp(prefix="relsim-claims-")
            self.procs = [start([], shared=self.claims) for _ in range(self.workers)]
        for proc in self.procs:
            try:
                proc.stdin.write(_frame(new))
                proc.stdin.flush()
            except OSError:  # (it ended: the others, or this process, compile them)
                pass

    def finish(self) -> None:
        for proc in self.procs:  # no more jobs: each ends once nothing unclaimed is left
            try:
                proc.stdin.close()
            except OSError:
                pass
        try:
            for job in sorted(self.offered.values(), key=lambda j: -j.cost):
                if claim(self.claims, job):
                    try:
                        job.here()
                    except Exception:  # noqa: BLE001, S112  (its launch compiles it again)
                        continue
        finally:
            self._end(kill=False)

    def abandon(self) -> None:
        """Nothing more is compiled ahead (the program failed while offering): the workers
        are stopped, the claims folder removed."""
        self._end(kill=True)

    def _end(self, kill: bool) -> None:
        """Wait for the workers (killed first with `kill`), then remove the claims folder."""
        for proc in self.procs:
            if kill and proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc in running:
                running.remove(proc)
        if self.claims is not None:
            shutil.rmtree(self.claims, ignore_errors=True)


def _key(job) -> tuple:
    return (job.path, job.function, job.signature)


def claim(claims: str, job) -> bool:
    """Whether this process is the first to claim `job` in folder `claims` (it then compiles
    it): the claim is a file made there, which only one process can create."""
    name = hashlib.sha1(repr(_key(job)).encode()).hexdigest()
    try:
        os.close(os.open(os.path.join(claims, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:  # claimed already (FileExistsError), or the program finished sharing
        return False
    return True


@atexit.register
def _stop_workers() -> None:
    for proc in running:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    running.clear()
    for worker in _background.values():  # told that no more jobs come: it finishes its own
        worker.close()
    _background.clear()


def _frame(jobs) -> bytes:
    """A list of jobs as the workers read it: its pickle's length (8 bytes), then the pickle."""
    data = pickle.dumps(jobs)
    return len(data).to_bytes(8, "little") + data


class _Reader:
    """The jobs written to file descriptor `fd` (`_frame`s), as they come."""

    def __init__(self, fd: int):
        self.fd, self.buf, self.closed = fd, b"", False

    def take(self, wait: bool) -> list:
        """The jobs written since the last call: waiting for some when `wait` (then [] only
        once `fd` has closed), else only what can be read without waiting."""
        out: list = []
        while not self.closed and (wait and not out or _readable(self.fd)):
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                self.closed = True
                break
            self.buf += chunk
            while len(self.buf) >= 8 and \
                    len(self.buf) >= 8 + int.from_bytes(self.buf[:8], "little"):
                size = int.from_bytes(self.buf[:8], "little")
                out.extend(pickle.loads(self.buf[8:8 + size]))
                self.buf = self.buf[8 + size:]
        return out


def _jobs(fd: int, largest_first: bool = False):
    """(index, job) of each job written to file descriptor `fd` (`_frame`s, numbered in the
    order given), cheapest first among those given so far (a captured segment or a helper
    before a parallel kernel: the launches waiting on them run slowest meanwhile; or, with
    `largest_first`, the dearest: a shared precompile's, `Sharing`), until it closes and none
    is left."""
    reader, pending, given = _Reader(fd), [], 0
    while True:
        # take what has been written (waiting only when there is nothing to do)
        for job in reader.take(wait=not pending):
            pending.append((-job.cost if largest_first else job.cost, given, job))
            given += 1
        if not pending:
            return
        pending.sort(key=lambda p: p[:2])
        _, i, job = pending.pop(0)
        yield i, job


def _readable(fd: int) -> bool:
    """Whether reading `fd` would not block (where the OS cannot tell for a pipe: False, and
    jobs written meanwhile are taken once those at hand are done)."""
    import select
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return False


def _worker() -> None:
    try:  # (it compiles: it never joins the MPI job of a rank that started it, whose
        import mpi4py  # launcher's variables it inherits; `parallel/compiled_mpi` imports MPI)
        mpi4py.rc.initialize = mpi4py.rc.finalize = False
    except ImportError:
        pass
    background = report = "--background" in sys.argv[1:]
    claims = sys.argv[sys.argv.index("--shared") + 1] if "--shared" in sys.argv[1:] else None
    if background and hasattr(os, "nice"):
        os.nice(10)  # the program's serial launches run meanwhile: they come first
    for i, job in _jobs(sys.stdin.fileno(), largest_first=claims is not None):
        if claims is not None and not claim(claims, job):
            continue  # the program, or another worker, compiles it
        try:
            _compile(job, background)
        except Exception:  # noqa: BLE001, S112  (the launch compiles it again and reports)
            pass
        if background and report:  # its launch may now load it
            try:
                sys.stdout.write(f"{i}\n")
                sys.stdout.flush()
            except OSError:  # the program has ended: compile the rest for the next run
                report = False


def _compile(job, background: bool) -> None:
    """Compile `job` into Numba's disk cache (a background worker: once, under a lock on the
    cache, and not when another program's worker has saved it meanwhile)."""
    # (relsim's njit: compiling under the function's lock, `compiled._in_turn`, as another
    # process may be compiling another signature of it: `Sharing`)
    from ...compiled import njit
    from .jit import jit_callees
    call = dict(job.options).get("call")
    if call:  # compiled (and saved) by one of relsim's functions: call(path, *signature)
        where, name = call.rsplit(".", 1)
        getattr(importlib.import_module(where), name)(job.path, *job.signature)
        return
    if job.path.endswith(".py"):  # a generated module, its callees compiled first
        module = modules.module_at(Path(job.path))
        jit_callees(module, **dict(job.options))
        fn = getattr(module, job.function)  # (a callee is a dispatcher already)
        fn = fn if hasattr(fn, "py_func") else njit(**dict(job.options))(fn)
    else:  # one of relsim's compiled folds
        fn = next(v for v in vars(importlib.import_module(job.path)).values()
                  if getattr(getattr(v, "py_func", None), "__name__", "") == job.function)
    if not background:
        fn.compile(job.signature)
        return
    # another program's background worker may be compiling the same function into the same
    # cache (Numba's index is read-modify-write): one at a time, and only once
    with _cache_lock(Path(fn._cache.cache_path)):
        if not load_cached(fn, job.signature):
            fn.compile(job.signature)


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
