"""Captured Python values: compile-time constants, watched for changes at each launch.

A number, tuple or small array a kernel (or an inlined @rs.func) reads from its module's globals
or from a closure becomes a constant of the compiled code. If the script later rebinds that
name (or changes the captured array in place), the kernel silently keeps the old value. So the
frontend records where each captured constant came from (`origin`), and every launch runs
`Watch.check`: an identity test per name (and a byte comparison per captured array); only a
changed identity pays for comparing values. A change is reported once per kernel and name with
a `RelsimWarning` that suggests `rs.Global`. Values from the decorator's frame snapshot
(`Kernel.scope`) are copies already and cannot change; attributes (``cfg.dt``) are not watched.
"""
from __future__ import annotations

import warnings

import numpy as np

from ...errors import RelsimWarning

_MISSING = object()
# the warning points at the user's foreach call: Watch._changed <- check <- execute.run <-
# launch.run <- Relation/Subset.foreach <- the user
_STACKLEVEL = 6


def origin(fn, name: str, value):
    """Where `fn` reads `name` (bound to `value`) at run time: its closure cell, or its module's
    globals dict; None if neither holds `value` (a frame snapshot, a builtin)."""
    code = getattr(fn, "__code__", None)
    if code is not None and fn.__closure__ and name in code.co_freevars:
        cell = fn.__closure__[code.co_freevars.index(name)]
        try:
            if cell.cell_contents is value:
                return cell
        except ValueError:
            return None
    glob = getattr(fn, "__globals__", None)
    if glob is not None and glob.get(name, _MISSING) is value:
        return glob
    return None


class Capture:
    """One captured constant: `name` read from `holder` (a cell or a globals dict), whose value
    was `value` when the kernel was compiled; `loc` is its first use in the kernel."""

    __slots__ = ("name", "holder", "value", "saved", "loc")

    def __init__(self, name, holder, value, loc):
        self.name, self.holder, self.value, self.loc = name, holder, value, loc
        self.saved = _contents(value)

    def current(self):
        if isinstance(self.holder, dict):
            return self.holder.get(self.name, _MISSING)
        try:
            return self.holder.cell_contents
        except ValueError:
            return _MISSING


def _contents(value):
    """What must stay equal: the bytes, dtype and shape of an array; the value itself else."""
    if isinstance(value, np.ndarray):
        return (value.tobytes(), value.dtype.str, value.shape)
    return value


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return _contents(a) == _contents(b)
    try:
        return bool(a == b) or (a != a and b != b)  # NaN stays NaN
    except Exception:  # noqa: BLE001 - an odd __eq__: count it as a change
        return False


class Watch:
    """The captured constants of one compiled kernel, checked at each launch (a few tenths of
    a microsecond: `tests/runtime/test_captures.py` measures it)."""

    __slots__ = ("kernel", "captures", "cells", "globs", "arrays")

    def __init__(self, kernel, captures):
        self.kernel = kernel
        self.captures = list(captures)
        self._rebuild()

    def _rebuild(self) -> None:
        # flat tuples: the check reads no attributes
        caps = self.captures
        self.cells = tuple((c.holder, c.value, c) for c in caps if not isinstance(c.holder, dict))
        self.globs = tuple((c.holder, c.name, c.value, c) for c in caps
                           if isinstance(c.holder, dict))
        self.arrays = tuple((c.value, c.saved[0], c) for c in caps
                            if isinstance(c.value, np.ndarray))

    @classmethod
    def of(cls, kernel, captures):
        """A Watch over `captures` (Capture objects), or None when there is nothing to watch."""
        return cls(kernel, captures) if captures else None

    def check(self) -> None:
        """Warn about any captured name whose value changed since the kernel was compiled."""
        for d, name, value, c in self.globs:
            if d.get(name, _MISSING) is not value:
                self._changed(c)
        if self.cells:
            for cell, value, c in self.cells:
                try:
                    if cell.cell_contents is not value:
                        self._changed(c)
                except ValueError:  # the enclosing function deleted the name
                    self._changed(c)
        if self.arrays:
            for arr, saved, c in self.arrays:
                if arr.tobytes() != saved:
                    self._changed(c)

    def _changed(self, c: Capture) -> None:
        now = c.current()
        if now is not _MISSING and _same(now, c.value) and (
                not isinstance(now, np.ndarray) or _contents(now) == c.saved):
            c.value = now  # an equal value rebound: nothing to say, and the fast path again
            self._rebuild()
            return
        self.captures.remove(c)
        self._rebuild()
        warned = self.kernel._warned_captures
        if c.name in warned:
            return
        warned.add(c.name)
        old = _show(c.saved if not isinstance(c.value, np.ndarray) else
                    np.frombuffer(c.saved[0], dtype=c.saved[1]).reshape(c.saved[2]))
        new = "deleted" if now is _MISSING else f"now {_show(now)}"
        where = f" ({c.loc.filename}, line {c.loc.line})" if c.loc is not None else ""
        warnings.warn(
            f"kernel {self.kernel.name!r} captured {c.name} = {old}{where} as a compile-time "
            f"constant and keeps that value, but {c.name} is {new}; use an rs.Global for a value "
            f"that changes between launches (g = rs.Global(rs.f64, ...); g.value = ...)",
            RelsimWarning, stacklevel=_STACKLEVEL)


def _show(v) -> str:
    if isinstance(v, np.ndarray):
        return np.array2string(v, threshold=8)
    if isinstance(v, np.generic):
        v = v.item()
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
