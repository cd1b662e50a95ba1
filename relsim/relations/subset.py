"""Subsets: a named, sorted set of rows of a relation; kernels can be mapped over them."""
from __future__ import annotations

import numpy as np

from . import launch


class Subset:
    def __init__(self, relation, name: str, mask_or_indices):
        from .relation import as_rows
        self.relation = relation
        self.name = name
        self.rows = as_rows(relation, mask_or_indices, f"subset {relation.name}.{name}")
        self.rows.flags.writeable = False

    @property
    def size(self) -> int:
        return len(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def numpy(self) -> np.ndarray:
        return self.rows

    def foreach(self, kernel, config=None) -> None:
        """Run `kernel` once for each row of the subset (ascending row order semantics)."""
        launch.run(kernel, self.relation, self, config)

    def __repr__(self) -> str:
        return f"<Subset {self.relation.name}.{self.name}: {len(self.rows)} rows>"
