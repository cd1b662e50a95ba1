"""The thread count of the OpenBLAS that NumPy (and SciPy) loaded, for benchmarks that put a
relsim kernel on t threads next to ``numpy.dot`` or a SciPy solver: without it OpenBLAS uses
every core whatever t is. Found among the shared libraries this process has mapped (Linux
``/proc/self/maps``) by the usual entry points (``openblas_set_num_threads``, and the
``scipy_openblas*`` names of the NumPy/SciPy wheels); without threadpoolctl. Where nothing is
found (another BLAS, another OS), `set_threads` does nothing and `describe` says so.

`interleaved` is `_common.interleaved` with an untimed set-up call before each batch, for
variants that differ in the BLAS thread count.
"""
from __future__ import annotations

import ctypes
import time

_SUFFIXES = ("", "64_", "_64")
_PREFIXES = ("openblas", "scipy_openblas")


def _libraries() -> list:
    """[(path, (set, get) functions)] of every OpenBLAS mapped into this process."""
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({f for f in (line.split()[-1] for line in fh if line.strip())
                            if "openblas" in f.rsplit("/", 1)[-1].lower() and ".so" in f})
    except OSError:
        return []
    found = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    setter.argtypes, getter.restype = [ctypes.c_int], ctypes.c_int
                    found.append((path, (setter, getter)))
                    break
            else:
                continue
            break
    return found


def set_threads(n: int) -> bool:
    """Give every mapped OpenBLAS `n` threads; True if there was one to set."""
    libs = _libraries()
    for _, (setter, _) in libs:
        setter(int(n))
    return bool(libs)


# how long OpenBLAS's worker threads keep spinning after a call before they sleep (its default
# THREAD_TIMEOUT, 2**28 cycles, is ~0.1 s here), with room
IDLE_S = 0.3


def quiet() -> None:
    """Set OpenBLAS to 1 thread and wait until its workers sleep: after a multi-threaded BLAS
    call they spin on the other cores for ~0.1 s, and a relsim launch on t threads timed in that
    window finds a core taken (measured: a 2-thread exact dot at 1M rows took 680 us right after
    a 2-thread numpy.dot, 350 us after this). An untimed set-up for relsim's variants."""
    set_threads(1)
    time.sleep(IDLE_S)


def describe() -> str:
    """'OpenBLAS (k libraries) on n threads' (or why not known), for a table's notes."""
    libs = _libraries()
    if not libs:
        return "BLAS threads not controlled (no OpenBLAS found among the loaded libraries)"
    counts = sorted({getter() for _, (_, getter) in libs})
    return (f"{len(libs)} OpenBLAS librar{'y' if len(libs) == 1 else 'ies'} on "
            f"{'/'.join(map(str, counts))} thread(s)")


def interleaved(variants: dict, repeats: int, number: int = 1) -> dict:
    """Per-call seconds for each variant, {name: [one per repeat]}, as `_common.interleaved`
    (round-robin, the order reversed every other repeat), where `variants` maps a name to
    (set_up or None, fn): set_up (such as ``lambda: set_threads(1)``) runs, untimed, before
    each batch of `number` calls of fn."""
    out = {name: [] for name in variants}
    clock = time.perf_counter
    items = list(variants.items())
    for r in range(repeats):
        for name, (set_up, fn) in (items if r % 2 == 0 else items[::-1]):
            if set_up is not None:
                set_up()
            t0 = clock()
            for _ in range(number):
                fn()
            out[name].append((clock() - t0) / number)
    return out
