"""Globals: host-visible values that kernels read, or reduce into."""
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
        self.data = np.zeros((1,) + self.type.shape, dtype=self.type.dtype)
        self.row_data = np.full(1, -1, dtype=np.int64)
        self.value = init

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
        self.data[0] = arr
        self.row_data[0] = -1

    @property
    def row(self) -> int:
        """Row that attained the value in the last arg-min/arg-max reduction (-1 if none)."""
        return int(self.row_data[0])

    def __repr__(self) -> str:
        label = f" {self.name}" if self.name else ""
        return f"<Global{label} {self.type!r} = {self.value!r}>"
