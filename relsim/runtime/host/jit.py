"""Calling relsim's compiled functions: a generated module's callees made dispatchers
(`jit_callees`), described for another process (`describe_callee`, `callee`), and a launch's
machine-code entry (`entry_point`). The cached `njit` itself is `relsim.compiled`'s.
"""
from __future__ import annotations

import hashlib
import importlib
import sys
from pathlib import Path

from numba.core import caching
from numba.core.typing.typeof import Purpose, typeof

try:  # Numba's own dispatch keys its type lookups on these (C code: ~0.2 us an argument)
    from numba._dispatcher import compute_fingerprint
except ImportError:  # (another Numba: `fingerprints` says it cannot tell)
    compute_fingerprint = None

from ...compiled import njit
from ..caches import modules

__all__ = ["njit", "jit_callees", "describe_callee", "callee", "entry_point", "fingerprints"]


def jit_callees(module, **flags) -> None:
    """Make each function `module._FUNCTIONS` names (a generated module's callees: functions its
    kernels share, large loops' bodies, part functions) a serial `njit` dispatcher with
    `flags`, once: the kernels calling them find dispatchers, as Numba needs."""
    flags.pop("parallel", None)
    # a cpu kernel's part functions (`backends/cpu/parts`): called only by their wrappers,
    # through their machine-code addresses (no Python entry), their arrays never overlapping
    # (`compiled.assume_no_alias`)
    parts = set(getattr(module, "_PARTS", ()))
    for fname in getattr(module, "_FUNCTIONS", ()):
        if not hasattr(getattr(module, fname), "py_func"):  # (a module executed before)
            own = dict(flags, no_cpython_wrapper=True) if fname in parts else flags
            setattr(module, fname, njit(no_alias=fname in parts, **own)(
                getattr(module, fname)))
    for name, described in getattr(module, "_CALLEES", {}).items():
        if not hasattr(module.__dict__.get(name), "py_func"):
            setattr(module, name, callee(*described[:3]))


def describe_callee(dispatcher) -> tuple:
    """(where, function, options, fingerprint) naming one of relsim's compiled functions for a
    generated module that calls it (`_CALLEES`; `callee` makes it again in another process):
    where is a generated module's file (its name holds its source's hash) or one of relsim's
    modules (then fingerprint is its file's hash: a cached caller is not taken for another
    version's)."""
    py = dispatcher.py_func
    mod = sys.modules[py.__module__]
    # (`cache` is not a target option: without it, the dispatcher another process makes would
    # compile the callee again instead of loading the machine code this one saved)
    cached = not isinstance(getattr(dispatcher, "_cache", None), (type(None), caching.NullCache))
    options = described_options({**dispatcher.targetoptions, "cache": cached})
    if py.__module__.startswith("relsim_gen_"):
        return (mod.__file__, py.__name__, options, "")
    with open(mod.__file__, "rb") as f:
        return (py.__module__, py.__name__, options, hashlib.sha256(f.read()).hexdigest()[:16])


def described_options(options: dict) -> tuple:
    """Jit `options` as a description sent to another process holds them: sorted pairs,
    hashable (a ``fastmath`` set as a sorted tuple; `jit_options` turns it back)."""
    return tuple(sorted((k, tuple(sorted(v)) if isinstance(v, (set, frozenset)) else v)
                        for k, v in options.items()))


def jit_options(described: tuple) -> dict:
    """The jit options `described_options` described."""
    return {k: set(v) if k == "fastmath" and isinstance(v, tuple) else v for k, v in described}


def callee(where: str, function: str, options: tuple):
    """The dispatcher `describe_callee` described."""
    flags = jit_options(options)
    flags.pop("nopython", None)  # (njit's own: it warns when given it)
    if where.endswith(".py"):
        module = modules.module_at(Path(where))
        jit_callees(module, **flags)
        return njit(**flags)(getattr(module, function))
    return next(v for v in vars(importlib.import_module(where)).values()
                if getattr(getattr(v, "py_func", None), "__name__", "") == function)


def entry_point(dispatcher, args):
    """The machine-code entry of `dispatcher` compiled for exactly the types of `args` (a
    launch's fixed arguments, called through the dispatcher once already): calling it skips
    Numba's dispatch, which types every argument and looks up the overload on each call (~0.25
    us of a launch with 10 arguments, ~0.6 us with 13). The dispatcher itself when it has no
    overload for exactly these types (or is not a Numba dispatcher)."""
    overloads = getattr(dispatcher, "overloads", None)
    if not overloads:
        return dispatcher
    try:
        return overloads[tuple(typeof(a, Purpose.argument) for a in args)].entry_point
    except (KeyError, ValueError, TypeError, AttributeError):
        return dispatcher


def fingerprints(calls):
    """A hashable summary of the Numba types of the arguments of `calls` ((dispatcher,
    arguments) pairs) with the dispatchers: equal summaries, equal types, at a fraction of the
    cost of typing them (Numba's own dispatch fingerprints). None when an argument has none."""
    if compute_fingerprint is None:
        return None
    try:
        return tuple((fn, tuple(compute_fingerprint(a) for a in args)) for fn, args in calls)
    except (ValueError, TypeError, NotImplementedError):
        return None
