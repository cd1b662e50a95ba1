"""`@rs.kernel` and `@rs.func`: Python functions that relsim parses (never runs) and compiles."""
from __future__ import annotations

import inspect
import sys


def _defining_scope(depth: int) -> dict:
    """A snapshot of the local names where the decorator was applied: a kernel that reduces
    into a Global defined in an enclosing function (`heat += ...`) makes that name a Python
    local, so it is neither a global nor a closure cell; it is found here."""
    try:
        frame = sys._getframe(depth + 1)
    except ValueError:  # pragma: no cover
        return {}
    if frame.f_code.co_name == "<module>":
        return {}
    return dict(frame.f_locals)


class Kernel:
    """A kernel: runs once per row of the relation it is mapped over (``R.foreach(k)``)."""

    def __init__(self, fn, scope=None):
        if not inspect.isfunction(fn):
            raise TypeError(f"@rs.kernel decorates a function, not {type(fn).__name__}")
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.scope = scope or {}
        self._plans: dict = {}
        self._watches: dict = {}  # plan key -> runtime.captures.Watch (or None): see _plans
        self._warned_captures: set = set()  # captured names already reported as changed
        # (relation, config, schema_version, executable, watch) of the latest launch: its
        # fast path
        self._last = (None, None, -1, None, None)

    @property
    def source_text(self) -> str:
        try:
            return inspect.getsource(self.fn)
        except OSError:
            return ""

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel {self.name!r} is not called directly; run it over a relation "
                        f"with R.foreach({self.name})")

    def __repr__(self) -> str:
        return f"<relsim kernel {self.name}>"


class Func:
    """A helper callable from kernels: inlined at each call and specialised to its argument
    types. Outside kernels it is the plain Python function."""

    _relsim_func = True

    def __init__(self, fn, scope=None):
        self.fn = fn
        self.scope = scope or {}
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._src = None

    def _source(self):
        if self._src is None:
            from .runtime.source import Source
            self._src = Source.of(self.fn)
        return self._src

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self) -> str:
        return f"<relsim func {self.__name__}>"


def kernel(fn) -> Kernel:
    """Decorator: make `fn(key)` a relsim kernel."""
    return Kernel(fn, _defining_scope(1))


def func(fn) -> Func:
    """Decorator: make `fn` a helper that kernels can call (inlined)."""
    return Func(fn, _defining_scope(1))
