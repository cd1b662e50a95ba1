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
        self._watches: dict = {}  # id(compiled launch) -> runtime.captures.Watch (or None)
        self._writes: dict = {}  # id(compiled launch) -> the value fields its launches change
        self._colours: dict = {}  # id(compiled launch) -> colouring.Colouring (or None)
        self._warned_captures: set = set()  # captured names already reported as changed
        # (relation, config, schema_version, executable, watch, writes, colours) of the latest
        # launch: its fast path
        self._last = (None, None, -1, None, None, (), None)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel {self.name!r} is not called directly; run it over a relation "
                        f"with R.foreach({self.name})")

    def __repr__(self) -> str:
        return f"<relsim kernel {self.name}>"


class FusedKernel(Kernel):
    """Several kernels run as one over the same relation: for each row, the first kernel's
    body, then the second's, ... (`rs.fuse`). The rows are streamed once instead of once per
    kernel. Accepted only where that gives the results of running the kernels one after the
    other (checked when it is first launched: `runtime/pipeline.py`)."""

    def __init__(self, parts, name=None):
        if len(parts) < 2:
            raise TypeError("rs.fuse takes two kernels or more")
        for k in parts:
            if not isinstance(k, Kernel):
                raise TypeError(f"rs.fuse takes @rs.kernel kernels, not {k!r}")
            if isinstance(k, FusedKernel):
                raise TypeError(f"rs.fuse: {k!r} is fused already: pass its kernels instead")
        self.parts = tuple(parts)
        super().__init__(parts[0].fn, parts[0].scope)
        self.name = name or "+".join(k.name for k in parts)
        self.__doc__ = f"{self.name}: " + ", then ".join(k.name for k in parts) + ", per row"

    def __repr__(self) -> str:
        return f"<relsim fused kernel {self.name}>"


def fuse(*kernels, name: str | None = None) -> FusedKernel:
    """One kernel that runs `kernels` (over the same relation) as one pass: for each row, the
    first kernel's body, then the next's. ``R.foreach(rs.fuse(a, b))`` gives the bits of
    ``R.foreach(a); R.foreach(b)`` and reads and writes the rows once. Refused (a PhaseError
    or KernelSyntaxError naming both kernels' lines) where it could not give those bits: a
    later kernel reading what an earlier one reduces into through keys or into a Global, two
    kernels reducing into the same field through keys or into the same Global, an early
    ``return``, ``rs.delete`` or ``rs.insert`` in any kernel but the last, and anything one
    kernel alone may not do (a later kernel reading another row of a field an earlier one
    writes is the phase rule's read-and-written)."""
    return FusedKernel(kernels, name)


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
            from .runtime.analysis.source import Source
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
