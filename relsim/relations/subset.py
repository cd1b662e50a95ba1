"""Subsets: a named, sorted set of rows of a relation; kernels can be mapped over them."""
from __future__ import annotations

import numpy as np

from ..errors import DataError, RelsimError, public
from . import launch


class Subset:
    """A named, sorted set of rows of one relation (``R.subset(name, rows_or_mask)``): kernels
    run over it with ``S.foreach(kernel)``, rows in ascending order; the rows are read-only."""

    def __init__(self, relation, name: str, mask_or_indices):
        self.relation = relation
        self.name = name
        self.rows = as_rows(relation, mask_or_indices, f"subset {relation.name}.{name}")
        self.rows.flags.writeable = False

    @property
    def size(self) -> int:
        """The number of rows in the subset."""
        return len(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def numpy(self) -> np.ndarray:
        """The subset's rows: a read-only sorted int64 array of row indices of its relation."""
        return self.rows

    def foreach(self, kernel, config=None) -> None:
        """Run `kernel` once for each row of the subset (ascending row order semantics);
        errors as `Relation.foreach`."""
        try:
            launch.run(kernel, self.relation, self, config)
        except RelsimError as exc:
            raise public(exc) from exc.__cause__

    def __repr__(self) -> str:
        return f"<Subset {self.relation.name}.{self.name}: {len(self.rows)} rows>"


def as_rows(rel, values, what: str) -> np.ndarray:
    """Normalise a boolean mask or index list into sorted unique int64 rows of `rel`."""
    arr = np.asarray(values)
    if arr.dtype == bool:
        if arr.shape != (rel.size,):
            raise DataError(f"{what}: mask of shape {arr.shape} for {rel.name} of size "
                            f"{rel.size}")
        return np.flatnonzero(arr).astype(np.int64)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise DataError(f"{what}: need a boolean mask or a 1-D array of row indices, got "
                        f"{arr.dtype} of shape {arr.shape}")
    if arr.min() < 0 or arr.max() >= rel.size:
        raise DataError(f"{what}: row indices must lie in [0, {rel.size}) of {rel.name}")
    return np.unique(arr).astype(np.int64)
