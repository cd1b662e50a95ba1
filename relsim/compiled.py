"""`njit` for relsim's own compiled functions (generated kernels, folds, exact sums, the
set-up helpers of relations and linalg): Numba's, cached in relsim's cache folder, with a
leaner load from that cache.

Before it loads a cached function, Numba sets up its whole compiler (`BaseContext.refresh`:
every typing and lowering registry, and third-party extensions): ~0.2 s of a warm start that
compiles nothing. Loading machine code needs only Numba's runtime (NRT, for allocations); the C
helpers and math symbols are installed when the target context is made, and a parallel
function's threading layer is started by the cached library itself (`reload_init`). So the
functions made here load with just the runtime set up, and a program that does compile
something sets the compiler up then, as every compilation does (`CompilerBase.__init__`).

Where this Numba's cache lacks the pieces this relies on, the stock cache stays in place. This
module sits below every layer (it knows only the configuration's cache folder), so the data
model and the solvers compile their set-up with it too.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings

import numba
from numba.core import caching
from numba.core.compiler_lock import global_compiler_lock

from .errors import RelsimWarning

try:
    from numba.core.runtime import rtsys
except ImportError:  # pragma: no cover - an older layout: keep Numba's own loading
    rtsys = None
try:
    import fcntl
except ImportError:  # not on POSIX: processes sharing a cache compile a function each
    fcntl = None

_LEAN = rtsys is not None and hasattr(caching.FunctionCache, "_load_overload") and \
    hasattr(caching.FunctionCache, "_guard_against_spurious_io_errors")


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


class _HelperLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Where relsim's own compiled helpers (folds, exact sums, ownership; functions in relsim's
    package files) are cached: in relsim's cache folder (``$RELSIM_CACHE_DIR``, else
    ``~/.cache/relsim``, then ``numba/``) rather than beside their source, where an installed
    package may be read-only or shared by every user. Numba's ``NUMBA_CACHE_DIR`` still comes
    first; generated modules (in that cache folder already) keep their own ``__pycache__``."""

    def __init__(self, py_func, py_file):
        from .config import default_cache_path

        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(default_cache_path(), "numba",
                                        self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if os.path.commonpath([_PACKAGE, os.path.abspath(py_file)]) != _PACKAGE:
            return None
        return super().from_function(py_func, py_file)


class _HelperCacheImpl(caching.CompileResultCacheImpl):
    _locator_classes = [caching.UserProvidedCacheLocator, _HelperLocator] + \
        [c for c in caching.CompileResultCacheImpl._locator_classes
         if c is not caching.UserProvidedCacheLocator]


class _RelsimCache(caching.FunctionCache):
    """Numba's per-function disk cache, relsim's helpers located by `_HelperLocator`."""

    _impl_class = _HelperCacheImpl


class _LeanLoadCache(_RelsimCache):
    """Numba's per-function disk cache, loading with only the runtime initialised."""

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)  # idempotent: a flag after the first call
        try:
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)
        except Exception as exc:  # noqa: BLE001 - a damaged index or data file
            _drop(self, exc)
        return None  # not cached (or the guard swallowed an I/O error on Windows)


def _drop(cache, exc) -> None:
    """Numba's disk cache of one function could not be read (truncated, bad bytes): warn, and
    empty its index so that the function is compiled and saved again."""
    warnings.warn(f"relsim: Numba's disk cache of {cache._py_func.__qualname__} in "
                  f"{cache._cache_path} is damaged ({type(exc).__name__}: {exc}); it is dropped "
                  f"and the function compiled again", RelsimWarning, stacklevel=4)
    try:
        cache._cache_file.flush()  # an empty index: the old data files are never read again
    except OSError:
        pass


def lean_loading(dispatcher):
    """`dispatcher` (cache=True), loading from the disk cache without the compiler set-up, and
    compiling with room for deep recursion (`_deep`), one process at a time (`_in_turn`)."""
    if type(getattr(dispatcher, "_cache", None)) is caching.FunctionCache:
        dispatcher._cache = (_LeanLoadCache if _LEAN else _RelsimCache)(dispatcher.py_func)
    # (its first call compiles through this)
    dispatcher.compile = _in_turn(dispatcher, _deep(dispatcher.compile))
    return dispatcher


def _in_turn(dispatcher, compile_fn):
    """`compile_fn` (a dispatcher's `compile`) run holding a lock on the function's file in
    Numba's disk cache, so that processes sharing the cache (the ranks of an MPI run, which
    launch the same kernels at the same moment; test workers) take turns: the first compiles
    and saves, the others then load what it saved (Numba's `compile` looks in the disk cache
    first) instead of compiling it again each. Only a compilation this thread starts from
    outside Numba's compiler takes the lock: a callee compiled within another compilation runs
    under Numba's own lock, and waiting there could wait on a process waiting on us."""
    def compile(sig):
        lock = _lock_path(dispatcher, sig)
        if lock is None:
            return compile_fn(sig)
        with _file_lock(lock):
            return compile_fn(sig)
    return compile


def _lock_path(dispatcher, sig) -> str | None:
    """The lock file of `dispatcher`'s disk cache, or None where no lock is taken: no disk
    cache (or no fcntl), compiled for `sig` already, or inside a compilation."""
    cache = getattr(dispatcher, "_cache", None)
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    if index is None or fcntl is None or global_compiler_lock.is_locked():
        return None
    try:
        if tuple(sig) in dispatcher.overloads:
            return None
    except TypeError:  # (a Signature: Numba's compile takes it as it is)
        pass
    return index + ".lock"


@contextlib.contextmanager
def _file_lock(path: str):
    """An exclusive lock on file `path` (made if missing); none where it cannot be made (a
    read-only cache: Numba does not save there either)."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fh = open(path, "a")
    except OSError:
        yield
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# Numba's SSA reconstruction recurses about once per basic block on the way back to a
# definition; a large generated function compiled as another's callee (an outlined parallel
# loop body: miniFE's element assembly, ~3,900 lines) starts that deep inside the caller's own
# compilation and passed Python's default limit of 1,000 frames.
RECURSION_LIMIT = 20_000


def _deep(compile_fn):
    """`compile_fn` (a dispatcher's `compile`) run with a recursion limit of at least
    RECURSION_LIMIT, the previous limit restored after it."""
    def compile(sig):
        limit = sys.getrecursionlimit()
        if limit >= RECURSION_LIMIT:
            return compile_fn(sig)
        sys.setrecursionlimit(RECURSION_LIMIT)
        try:
            return compile_fn(sig)
        finally:
            sys.setrecursionlimit(limit)
    return compile


def njit(*args, no_alias=False, **options):
    """`numba.njit`, whose cached functions (``cache=True``) load with `lean_loading`;
    ``no_alias=True`` compiles with `assume_no_alias`."""
    if args and callable(args[0]):  # @njit without arguments
        return lean_loading(numba.njit(**options)(args[0]))

    def decorate(fn):
        made = lean_loading(numba.njit(*args, **options)(fn))
        return assume_no_alias(made) if no_alias else made

    return decorate


def assume_no_alias(dispatcher):
    """`dispatcher`, compiled telling LLVM that no two of its array arguments share memory
    (Numba's ``noalias`` flag, which it sets on the bodies of ``prange`` loops it finds free of
    aliases and which no jit option reaches): loads and stores through one array then move
    past stores through another. For relsim's generated loops, whose arrays are distinct by
    construction (`backends/cpu/parts.py`)."""
    compiler = getattr(dispatcher, "_compiler", None)
    customize = getattr(compiler, "_customize_flags", None)
    if customize is None:  # (another Numba: compiled without it, the same results)
        return dispatcher

    def with_no_alias(flags):
        flags = customize(flags)
        flags.noalias = True
        return flags

    compiler._customize_flags = with_no_alias
    dispatcher.no_alias = True
    cache = getattr(dispatcher, "_cache", None)
    if isinstance(cache, caching.Cache):  # (its machine code apart from the same function's
        key = cache._index_key            # without the flag, in one index: another key)
        cache._index_key = lambda sig, codegen: (*key(sig, codegen), "noalias")
    return dispatcher


class NotCached(Exception):
    """`cfunc(..., load_only=True)` found no machine code in the disk cache."""


def cfunc(signature, load_only=False, **options):
    """`numba.cfunc` (compiled, or loaded from the disk cache with ``cache=True``, when it
    decorates), a cached one loading as `lean_loading`'s do; with `load_only`, None unless
    it is in the disk cache."""
    from numba.core import sigutils
    from numba.core.ccallback import CFunc

    cache = options.pop("cache", False)

    def decorate(fn):
        made = CFunc(fn, sigutils.normalize_signature(signature), locals={}, options=options)
        if cache:
            made.enable_caching()
            if type(made._cache) is caching.FunctionCache:
                made._cache = (_LeanLoadCache if _LEAN else _RelsimCache)(fn)
        if load_only:
            made._compile_uncached = _not_cached
            try:
                made.compile()
            except NotCached:
                return None
            return made
        made.compile()
        return made

    return decorate


def _not_cached():
    raise NotCached
