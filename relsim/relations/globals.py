"""Globals: host-visible values that kernels read, or reduce into.

A compiled kernel that reduces into a Global parks its contributions in per-row slots; folding
them (serially, in row order) is deferred until the value is next needed: read on the host
(``value``, ``row``, ``data``), read or reduced by another launch (the backend calls `flush`
first), or before the slots are overwritten. Assigning ``value`` first discards pending
contributions: the assignment overwrites whatever they would have produced, so skipping their fold
changes no result (a loop that resets a sum before each stage folds only the stage it reads).
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError
from ..types import as_value_type


class Global:
    """A scalar / vector / matrix value. Kernels read it, or reduce into it (+ * min max and
    or, arg-min/arg-max). After an arg reduction, ``g.row`` is the row that attained it."""

    def __init__(self, dtype, init=0, name: str | None = None):
        self.type = as_value_type(dtype)
        self.name = name  # for messages; kernels name it after the variable they capture
        self._data = np.zeros((1,) + self.type.shape, dtype=self.type.dtype)
        self._row_data = np.full(1, -1, dtype=np.int64)
        self.pending = None  # a deferred fold of reduction slots (a callable), or None
        self.value = init

    # -- deferred folds ---------------------------------------------------------------------
    def defer(self, fold) -> None:
        """Record `fold` (which folds one launch's slots into this Global) to run when the
        value is next needed. A fold still pending runs first: folds keep launch order."""
        if self.pending is not None:
            self.flush()
        self.pending = fold

    def flush(self) -> None:
        """Run the pending fold, if any."""
        fold, self.pending = self.pending, None
        if fold is not None:
            fold()

    @property
    def data(self) -> np.ndarray:
        """The storage (shape ``(1,) + type.shape``), with pending contributions folded in."""
        if self.pending is not None:
            self.flush()
        return self._data

    @property
    def row_data(self) -> np.ndarray:
        if self.pending is not None:
            self.flush()
        return self._row_data

    @property
    def value(self):
        v = self.data[0]
        return v.item() if v.ndim == 0 else v.copy()

    @value.setter
    def value(self, v) -> None:
        arr = np.asarray(v)
        if arr.shape not in (self.type.shape, ()):
            raise DataError(f"Global of type {self.type!r} cannot hold a value of shape "
                            f"{arr.shape}")
        self.pending = None  # overwritten: pending contributions cannot change the result
        self._data[0] = arr
        self._row_data[0] = -1

    @property
    def row(self) -> int:
        """Row that attained the value in the last arg-min/arg-max reduction (-1 if none)."""
        return int(self.row_data[0])

    def __repr__(self) -> str:
        label = f" {self.name}" if self.name else ""
        return f"<Global{label} {self.type!r} = {self.value!r}>"
