"""Globals: host-visible values that kernels read, or reduce into.

The value lives in a host array. While the runtime keeps a newer value elsewhere (a reduction
whose fold a launch left pending until the value is next needed, a device copy), it attaches an
object as ``residency`` (`relsim/runtime/backends/base.Residency`), called before the host array
is read (``value``, ``row``, ``data``) and after the host assigned the value.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError
from ..types import as_value_type
from . import global_expr, host_values
from . import launch as _launch

# how a float Global adds the contributions of a launch (`Global(sum=...)`)
SUMS = ("exact", "ordered")


class Global(global_expr.Operand):
    """A scalar / vector / matrix value. Kernels read it, or reduce into it (+ * min max and
    or, arg-min/arg-max). After an arg reduction, ``g.row`` is the row that attained it.

    `sum`, for a float Global: how a launch's ``+=`` / ``-=`` contributions are added.
    ``"exact"`` (default): their exact sum with the value before, rounded once (`math.fsum`'s
    value): it depends on no order, so not on the rows' order either. ``"ordered"``: added one
    by one, each addition rounded, in the serial order (ascending row, program order within a
    row), starting from the value: what a serial C loop computes, e.g. to follow a reference
    code's history bit for bit. Both give the same bits on every target, thread count and rank
    count; "ordered" folds the contributions serially after the loop (slower)."""

    # (arithmetic and comparisons of scalar f64 Globals build expressions for rs.assign and
    # rs.while_loop: `global_expr.Operand`)
    SUMS = SUMS
    no_gradient = None  # why the last tape.backward could not give this Global's gradient

    def __init__(self, dtype, init=0, name: str | None = None, *, sum: str = "exact"):
        self.type = as_value_type(dtype)
        self.name = name  # for messages; kernels name it after the variable they capture
        if sum not in SUMS:
            raise ValueError(f"Global sum must be one of {', '.join(map(repr, SUMS))}, got "
                             f"{sum!r}")
        if sum != "exact" and not self.type.elem.is_float:
            raise ValueError(f"sum={sum!r} is for float Globals (an integer sum is the same in "
                             f"any order), got dtype {self.type!r}")
        self._sum = sum
        self._data = np.zeros((1,) + self.type.shape, dtype=self.type.dtype)
        self._row_data = np.full(1, -1, dtype=np.int64)
        self.residency = None  # set by the runtime while the host array is not current
        self.value = init

    @property
    def sum(self) -> str:
        """How a launch adds its float contributions: "exact" or "ordered" (fixed at creation:
        compiled kernels depend on it)."""
        return self._sum

    @property
    def data(self) -> np.ndarray:
        """The host storage (shape ``(1,) + type.shape``), brought up to date first."""
        if self.residency is not None:
            self.residency.before_host_read(self)
        return self._data

    @property
    def row_data(self) -> np.ndarray:
        """The host storage of ``row`` (shape ``(1,)``, int64; -1 when no arg reduction set
        it), brought up to date first."""
        if self.residency is not None:
            self.residency.before_host_read(self)
        return self._row_data

    @property
    def value(self):
        """The value: a Python number for a scalar Global, a NumPy array for a vector or
        matrix one. Assigning it checks the value as `Field.load` does (a DataError for a
        fraction into an integer type, or a value the type cannot hold)."""
        if _launch.recorders:  # (an rs.capture refuses: its replays would not read it)
            _launch.host_read(self)
        if self.residency is not None:
            self.residency.before_host_read(self)
        if not self.type.shape:  # a scalar: straight to a Python number
            return self._data.item(0)
        return self._data[0].copy()

    @value.setter
    def value(self, v) -> None:
        if not (type(v) is float and self._data.dtype == np.float64 and not self.type.shape):
            v = self._checked(v)  # (the common case skips it: a solver sets Globals often)
        if _launch.recorders:  # a tape records what the assignment overwrites
            _launch.host_write(self, v)
        self._data[0] = v
        self._row_data[0] = -1
        if self.residency is not None:
            self.residency.after_host_write(self)

    @property
    def grad(self):
        """After `tape.backward(L)`: the derivative of L with respect to this Global's value
        when the tape started (a float, or an array for a vector Global)."""
        if self.no_gradient:
            raise DataError(self.no_gradient)
        adjoint = getattr(self, "_adjoint", None)
        if adjoint is None:
            label = f"Global {self.name!r}" if self.name else "this Global"
            raise DataError(f"{label} has no gradient: no tape.backward has differentiated a "
                            f"program reading it")
        return adjoint.value

    def _checked(self, v) -> np.ndarray:
        """v as an array of this Global's type and shape (or a scalar to broadcast)."""
        label = f"Global {self.name!r}" if self.name else "Global"
        dtype = self._data.dtype
        if isinstance(v, (bool, int, float)):  # one rule with Field.load (host_values)
            return host_values.python_number(v, dtype, label, repr(self.type))
        try:
            arr = np.asarray(v)
        except (TypeError, ValueError, OverflowError) as exc:
            raise DataError(f"{label} of type {self.type!r} cannot hold {v!r} ({exc})") from None
        if arr.shape not in (self.type.shape, ()):
            raise DataError(f"{label} of type {self.type!r} cannot hold a value of shape "
                            f"{arr.shape}")
        if arr.dtype == object or arr.dtype.kind not in "biuf":
            raise DataError(f"{label} of type {self.type!r} cannot hold {v!r}")
        return host_values.array(arr, dtype, label, repr(self.type))

    @property
    def row(self) -> int:
        """Row that attained the value in the last arg-min/arg-max reduction (-1 if none)."""
        return int(self.row_data[0])

    def __repr__(self) -> str:
        label = f" {self.name}" if self.name else ""
        value = self.data[0]  # (not `value`: an rs.capture refuses reads of that)
        value = value.item() if not self.type.shape else value
        return f"<Global{label} {self.type!r} = {value!r}>"


global_expr.GLOBAL = Global  # (arithmetic on Globals builds its expressions)
