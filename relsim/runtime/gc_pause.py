"""Python's cyclic garbage collector paused while a kernel is analysed and lowered
(`execute.executable`; not while Numba compiles, whose garbage is freed as usual).

Analysis allocates tens of thousands of IR nodes that live as long as the compiled kernel, so
the collector's passes during it find nothing to free, yet they took 0.07-0.09 s of a warm
LULESH start (two full passes over every object Numba and relsim hold). Paused here, the
collector runs once afterwards, as usual. Reentrant; a collector the program disabled stays
disabled.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager

_depth = 0


@contextmanager
def collector_paused():
    global _depth
    was_enabled = gc.isenabled() if _depth == 0 else False
    _depth += 1
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        _depth -= 1
        if was_enabled:
            gc.enable()
