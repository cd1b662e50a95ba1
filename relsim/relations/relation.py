"""Relations: tables of rows with typed fields, subsets and groupings."""
from __future__ import annotations

import numpy as np

from ..errors import DataError, SchemaError
from . import launch
from .field import Field, KeyField
from .grouping import Grouping
from .subset import Subset


class Relation:
    """A table of `size` rows. Kernels are mapped over it with ``R.foreach(kernel)``."""

    def __init__(self, name: str, size: int):
        if not isinstance(name, str) or not name.isidentifier():
            raise SchemaError(f"relation name must be an identifier, got {name!r}")
        size = int(size)
        if size < 0:
            raise DataError(f"relation {name!r}: size must be >= 0, got {size}")
        self.name = name
        self.size = size
        self._fields: dict[str, Field] = {}
        self._subsets: dict[str, Subset] = {}
        self._groupings: dict[str, Grouping] = {}
        # bumped whenever a field's storage array is replaced: compiled launches re-bind then
        self.storage_version = 0
        # bumped whenever the set of fields/groupings changes: kernels are re-analysed then
        self.schema_version = 0

    def __repr__(self) -> str:
        return f"<Relation {self.name}: {self.size} rows, fields {list(self._fields)}>"

    def __len__(self) -> int:
        return self.size

    # -- schema ----------------------------------------------------------------------------
    def _check_new_name(self, name: str) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise SchemaError(f"{self.name}: names must be identifiers, got {name!r}")
        if name in self._fields or name in self._groupings or name in self._subsets:
            raise SchemaError(f"{self.name} already has a field, subset or grouping "
                              f"named {name!r}")
        if name in _RESERVED:
            raise SchemaError(f"{self.name}: {name!r} is reserved")

    def new_field(self, name: str, dtype, init=0) -> Field:
        """Add a field of `dtype` (rs.f64, rs.vec(3, rs.f64), ...) filled with `init`."""
        self._check_new_name(name)
        f = Field(self, name, dtype, init)
        self._fields[name] = f
        self._schema_changed()
        return f

    def new_key_field(self, name: str, target: Relation, arity: int | None = None) -> KeyField:
        """Add a field whose values are rows of `target` (`arity` keys per row if given)."""
        self._check_new_name(name)
        if not isinstance(target, Relation):
            raise SchemaError(f"{self.name}.{name}: key target must be a Relation, "
                              f"got {target!r}")
        if arity is not None and (not isinstance(arity, int) or arity < 1):
            raise SchemaError(f"{self.name}.{name}: arity must be a positive int")
        f = KeyField(self, name, target, arity)
        self._fields[name] = f
        self._schema_changed()
        return f

    def field(self, name: str) -> Field:
        try:
            return self._fields[name]
        except KeyError:
            raise SchemaError(f"relation {self.name} has no field {name!r}; it has "
                              f"{sorted(self._fields) or 'none'}") from None

    @property
    def fields(self) -> dict:
        return dict(self._fields)

    def has_field(self, name: str) -> bool:
        return name in self._fields

    # -- subsets and groupings ---------------------------------------------------------------
    def subset(self, name: str, mask_or_indices=None) -> Subset:
        """Create a subset from a boolean mask or row indices; with one argument, look it up."""
        if mask_or_indices is None:
            try:
                return self._subsets[name]
            except KeyError:
                raise SchemaError(f"relation {self.name} has no subset {name!r}") from None
        self._check_new_name(name)
        s = Subset(self, name, mask_or_indices)
        self._subsets[name] = s
        return s

    @property
    def subsets(self) -> dict:
        return dict(self._subsets)

    def group_by(self, key_field, name: str) -> Grouping:
        """Index this relation's rows by a key field: the target relation gets a group `name`,
        so a kernel over the target can loop ``for r in t.<name>:`` in ascending row order."""
        kf = key_field if isinstance(key_field, Field) else self.field(key_field)
        if not kf.is_key or kf.relation is not self:
            raise SchemaError(f"group_by needs a key field of {self.name}, got {kf!r}")
        target = kf.target
        target._check_new_name(name)
        g = Grouping(target, name, kf)
        target._groupings[name] = g
        target._schema_changed()
        return g

    def grouping(self, name: str) -> Grouping:
        return self._groupings[name]

    @property
    def groupings(self) -> dict:
        return dict(self._groupings)

    # -- running kernels -------------------------------------------------------------------
    def foreach(self, kernel, config=None) -> None:
        """Run `kernel` once for every row (in any order; results as if in row order)."""
        launch.run(kernel, self, None, config)

    # -- bookkeeping -------------------------------------------------------------------------
    def _schema_changed(self) -> None:
        self.schema_version += 1
        self.storage_version += 1

    def _storage_changed(self) -> None:
        self.storage_version += 1

    def __getattr__(self, name):
        # convenient read access: R.T is R.field("T"), R.edges is a grouping, R.boundary a subset
        d = self.__dict__
        for table in ("_fields", "_groupings", "_subsets"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"relation {d.get('name', '?')!r} has no field, subset or grouping "
                             f"{name!r}")


_RESERVED = {"foreach", "field", "fields", "subset", "subsets", "group_by", "grouping",
             "groupings", "new_field", "new_key_field", "name", "size"}


def new_relation(name: str, size: int) -> Relation:
    return Relation(name, size)


def as_rows(rel: Relation, values, what: str) -> np.ndarray:
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
