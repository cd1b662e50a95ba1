"""Debug mode (`Config(debug=True)`): the checks a kernel runs with, and how a failure is reported,
one rule for every target. Only the debug variant of a kernel has them: the lowering emits none
when the mode is off.

Checks (the `check` of the KernelCheckError):

* ``non-finite``: a float value that is NaN or +-inf when it is written to a field (a store, a
  value of an inserted row), contributed to a reduction into a field, or contributed to a Global
  (the contribution itself: a fold of finite contributions that overflows is not reported);
* ``division``: a float ``/``, ``//`` or ``%`` (also inside ``inverse``) whose result is NaN or
  +-inf while both operands are finite (``x / 0.0``, ``0.0 / 0.0``, an overflow);
* ``operation``: a float ``+``, ``-`` or ``*`` (also inside vector and matrix arithmetic) whose
  result is NaN or +-inf while both operands are finite (an overflow, ``inf - inf`` cannot
  start there); ``function``: a math function (``log``, ``sqrt``, ``pow``, ...) whose result is
  NaN or +-inf from finite arguments (``log(-1.0)``); ``conversion``: an f64 value too large
  for f32. So a NaN or inf is reported where it was created, with the operand values; one that
  only passes through later operations is not reported again;
* ``int-division``: an integer ``//`` or ``%`` by zero (which otherwise gives 0);
* ``key-range``: a key read from a key field outside [0, size) of the relation it points into;
* ``row-range``: a row `rs.at(R, i)` names outside R;
* ``index-range``: a run-time index of a vector, matrix or key vector outside its length;
* ``neighbour``: a grid neighbour ``k(1, 0)`` of a key (not the kernel's own, which is checked
  per launch anyway) outside a bounded axis.

Report: of the rows where a check failed, the lowest; in it, the first check that failed, in
execution order (program order, loop iterations in turn). `interp` raises at that check. The
compiled code cannot raise inside a parallel loop: each row records its first failure (site
number and value) in per-row arrays, which the launcher scans after the kernel, so the report
is the same for any thread count and schedule. A failed check substitutes a harmless value
(index or key 0) and the row goes on; after the error the kernel's fields may hold partial
results (a compiled launch stops before its folds and row changes).

`Sites` numbers the checks of one compiled kernel; the same `Site` gives the same message on
every target (`Site.error`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import KernelCheckError, KernelRuntimeError
from .. import ir

DIVISIONS = ("/", "//", "%")
ARITHMETIC = ("+", "-", "*")
OPERANDS = 2  # operand values a check records at most (after the value: DebugValues' columns)


@dataclass(frozen=True)
class Site:
    """One check in a kernel's source: what it checks (`check`), where (`loc`), and the words
    of its message: `what` (a field, a Global, an operator), `extent` (a length, or the
    relation a key points into, whose size is read when reporting)."""
    check: str
    loc: ir.Loc
    what: str = ""
    extent: object = None

    def message(self, value: int, operands=()) -> str:
        """The message for the value the check recorded (a float check: `float_code`) and the
        operands it recorded (the float checks of an operation)."""
        seen = " and ".join(repr(float(x)) for x in operands)
        if self.check == "non-finite":
            return f"{_float_name(value)} {self.what}"
        if self.check == "division":
            return f"float '{self.what}' gave {_float_name(value)} from finite operands " \
                f"{seen} (a division by zero, or an overflow)"
        if self.check == "operation":
            return f"float '{self.what}' gave {_float_name(value)} from finite operands " \
                f"{seen} (an overflow)"
        if self.check == "function":
            return f"{self.what}() gave {_float_name(value)} from the finite argument" \
                f"{'s' if len(operands) > 1 else ''} {seen}"
        if self.check == "decomposition":
            return f"rs.{self.what}() gave {_float_name(value)} from a finite matrix (its " \
                f"entries square beyond the float range: above ~1e150, or 1e18 in f32)"
        if self.check == "conversion":
            return f"conversion to {self.what} gave {_float_name(value)} from the finite " \
                f"value {seen} (too large for {self.what})"
        if self.check == "int-division":
            return f"integer {'division' if self.what == '//' else 'modulo'} by zero " \
                f"('{self.what}')"
        if self.check == "key-range":
            rel = self.extent
            return f"key {value} read from key field {self.what} is outside {rel.name} " \
                f"(size {rel.size})"
        if self.check == "row-range":
            rel = self.extent
            return f"rs.at({rel.name}, {value}): row {value} is outside {rel.name} " \
                f"(size {rel.size})"
        if self.check == "index-range":
            return f"index {value} out of range for length {self.extent}"
        if self.check == "neighbour":
            return f"grid neighbour {self.what} of row {value} of {self.extent.name} is " \
                f"outside the grid"
        raise ValueError(self.check)

    def error(self, kernel: str, relation, row: int, value: int, operands=()) -> KernelCheckError:
        return KernelCheckError(self.message(value, operands), self.loc, kernel, self.check,
                                relation.name, int(row))

    @property
    def operands(self) -> int:
        """How many operand values the check records (`OPERANDS` at most)."""
        if self.check in ("division", "operation"):
            return 2
        if self.check == "conversion":
            return 1
        if self.check == "function":
            return self.extent  # the function's argument count
        return 0


class Sites:
    """The checks of one compiled kernel, numbered from 1 in the order first lowered (a site
    lowered again, in another variant of the row loop, keeps its number)."""

    def __init__(self):
        self.items: list[Site] = []
        self._index: dict = {}

    def number(self, site: Site) -> int:
        key = (site.check, site.loc, site.what, id(site.extent) if site.extent is not None
               and not isinstance(site.extent, int) else site.extent)
        n = self._index.get(key)
        if n is None:
            self.items.append(site)
            n = self._index[key] = len(self.items)
        return n

    def __getitem__(self, number: int) -> Site:
        return self.items[number - 1]


def float_code(x) -> int:
    """How a non-finite float is recorded: 0 NaN, 1 +inf, -1 -inf."""
    x = float(x)
    return 0 if math.isnan(x) else (1 if x > 0 else -1)


def _float_name(code: int) -> str:
    return {0: "NaN", 1: "inf", -1: "-inf"}[int(code)]


def written(verb: str, field) -> str:
    """The `what` of a non-finite write: 'stored into field V.T', 'inserted into field P.x'."""
    return f"{verb} field {field.qualname}"


def contributed(op: str, field=None, glob=None) -> str:
    """The `what` of a non-finite contribution to a reduction into a field or a Global."""
    target = f"field {field.qualname}" if field is not None else f"Global {glob.name!r}"
    return f"contributed with '{op}' to {target}"


class OriginChecks:
    """An algebra (`semantics`) that is `base`, but calls `on_result(site, result, operands)`
    after every operation that can create a NaN or an infinity from finite operands: float
    arithmetic and divisions, float math functions, f64 -> f32 conversions, a decomposition's
    results (the caller tests the result and the operands, and records as many operands as the
    site says: `Site.operands`); and `on_int_division(op, divisor)` after an integer division
    or modulo. `loc`: where the operation is in the kernel."""

    def __init__(self, base, loc, on_result, on_int_division):
        self.base, self.loc = base, loc
        self.on_result, self.on_int_division = on_result, on_int_division

    def __getattr__(self, name):
        return getattr(self.base, name)

    def binop(self, op, a, b, t):
        r = self.base.binop(op, a, b, t)
        if t.is_float and (op in DIVISIONS or op in ARITHMETIC):
            self.on_result(Site("division" if op in DIVISIONS else "operation", self.loc, op),
                           r, (a, b))
        elif op in DIVISIONS and t.is_int:
            self.on_int_division(op, b)
        return r

    def math(self, fname, args, t):
        r = self.base.math(fname, args, t)
        if t.is_float:
            self.on_result(Site("function", self.loc, fname, len(args)), r, tuple(args))
        return r

    def function(self, what, key, compute, inputs):
        """A call computed by many operations (`rs.svd`: hundreds), unchecked inside: each
        result is checked once against all the inputs."""
        out = self.base.function(what, key, compute, inputs)
        for r in out:
            self.on_result(Site("decomposition", self.loc, what), r, tuple(inputs))
        return out

    def cast(self, a, src, dst):
        r = self.base.cast(a, src, dst)
        if src.is_float and dst.is_float and dst.dtype.itemsize < src.dtype.itemsize:
            self.on_result(Site("conversion", self.loc, repr(dst)), r, (a,))
        return r


# -- reporting a launch's failures (every compiled backend) ------------------------------------
def raise_flagged(kernel_name: str, err) -> None:
    """Raise the failure a compiled launch flagged in its error word `err` (a 1-element int64
    array, reset to 0 here): a positive value is the line of an index out of range, a negative
    one the line of a random-number counter or seed outside [0, 2**32)."""
    line = int(err[0])
    err[0] = 0
    what = "index out of range" if line > 0 else \
        "rs.uniform/rs.normal counter or seed outside [0, 2**32)"
    raise KernelRuntimeError(f"in kernel {kernel_name!r}: {what} at line {abs(line)} "
                             f"(for at least one row)")


def raise_first_failure(sites: Sites, kernel_name: str, relation, first, values, rows) -> None:
    """Debug mode, after a launch: raise the lowest failed position's first failed check.
    `first[i]` is the number of the first check position i failed (0: none), `values[i]` the
    value it saw, `rows` the launch's rows (None: position i is row i). Returns when no
    position failed."""
    failed = np.flatnonzero(first)
    if not len(failed):
        return
    pos = int(failed[0])
    row = int(rows[pos]) if rows is not None else pos
    site = sites[int(first[pos])]
    raise site.error(kernel_name, relation, row, int(values[pos, 0]),
                     tuple(values[pos, 1:1 + site.operands]))
