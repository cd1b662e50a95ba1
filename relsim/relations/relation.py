"""Relations: tables of rows with typed fields, subsets and groupings."""
from __future__ import annotations

import difflib
import weakref

import numpy as np

from ..errors import DataError, RelsimError, SchemaError, public
from . import elastic, launch
from .field import Field
from .grouping import Grouping
from .key_field import KeyField
from .subset import Subset, as_rows


class Relation:
    """A table of `size` rows. Kernels are mapped over it with ``R.foreach(kernel)``."""

    def __init__(self, name: str, size: int, elastic: bool = False):
        if not isinstance(name, str) or not name.isidentifier():
            raise SchemaError(f"relation name must be an identifier, got {name!r}")
        size = int(size)
        if size < 0:
            raise DataError(f"relation {name!r}: size must be >= 0, got {size}")
        self.name = name
        self.size = size
        self.elastic = bool(elastic)  # rows may be inserted and deleted (particles)
        self.grid = None  # GridShape when rows are the cells of a structured grid
        # how rows are distributed over MPI ranks (set by the runtime when running on several)
        self.partition = None
        self._keys_in: list = []  # weak references to key fields that point at this relation
        self._fields: dict[str, Field] = {}
        self._subsets: dict[str, Subset] = {}
        self._groupings: dict[str, Grouping] = {}
        # bumped whenever a field's storage array is replaced: compiled launches re-bind then
        self.storage_version = 0
        # bumped with it, except when value fields only exchanged their arrays (`Field.swap`):
        # a launch may then take up again a binding it made for the arrays it finds
        self.structure_version = 0
        self.keys_version = 0  # keys computed again in place (`_keys_rewritten`)
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
        for table, what in ((self._fields, "field"), (self._groupings, "grouping"),
                            (self._subsets, "subset")):
            if name in table:
                raise SchemaError(f"{self.name} already has a {what} named {name!r} "
                                  f"({_describe(table[name])}); choose another name")
        if name in _RESERVED:
            raise SchemaError(f"{self.name}: {name!r} is reserved")

    def new_field(self, name: str, dtype, init=0) -> Field:
        """Add a field of `dtype` (rs.f64, rs.vec(3, rs.f64), ...) filled with `init` (one
        value, or an array of one per row). Bad `init` values raise before the field is added:
        the relation is then unchanged."""
        self._check_new_name(name)
        f = Field(self, name, dtype, init)
        self._fields[name] = f
        self._schema_changed()
        return f

    def new_key_field(self, name: str, target: Relation, arity: int | None = None,
                      values=None, copy: bool = True) -> KeyField:
        """Add a field whose values are rows of `target` (`arity` keys per row if given),
        loaded with `values` if given (else every key is row 0; ``copy=False``: see
        `KeyField.load`). Bad `values` raise before the field is added: the relation is then
        unchanged (as after ``new_key_field(...).load(bad)``, which removes the field again)."""
        self._check_new_name(name)
        if not isinstance(target, Relation):
            raise SchemaError(f"{self.name}.{name}: key target must be a Relation, "
                              f"got {target!r}")
        if arity is not None and (not isinstance(arity, int) or arity < 1):
            raise SchemaError(f"{self.name}.{name}: arity must be a positive int")
        f = KeyField(self, name, target, arity)
        if values is not None:
            f.load(values, copy=copy)
        target._keys_in.append(weakref.ref(f))
        self._fields[name] = f
        self._schema_changed()
        return f

    def field(self, name: str) -> Field:
        """The field `name` (as ``R.name``); a SchemaError naming the fields R has if none."""
        try:
            return self._fields[name]
        except KeyError:
            raise SchemaError(f"relation {self.name} has no field {name!r}; it has "
                              f"{sorted(self._fields) or 'none'}") from None

    @property
    def fields(self) -> dict:
        """{name: Field} of this relation's fields and key fields, in the order added."""
        return dict(self._fields)

    def has_field(self, name: str) -> bool:
        """Whether this relation has a field or key field `name`."""
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

    def drop_subset(self, name: str) -> None:
        """Remove subset `name` of this relation (the Subset object stays valid for launches),
        e.g. to make a new one under the same name."""
        if name not in self._subsets:
            raise SchemaError(f"{self.name} has no subset named {name!r}; its subsets: "
                              f"{', '.join(sorted(self._subsets)) or 'none'}")
        del self._subsets[name]

    @property
    def subsets(self) -> dict:
        """{name: Subset} of this relation's subsets."""
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
        """The grouping `name` this relation's `group_by` made (KeyError if none)."""
        return self._groupings[name]

    def drop_grouping(self, name: str) -> None:
        """Remove grouping `name` of this relation (kernels that loop over it no longer
        compile), e.g. to group the rows of a new relation under the same name."""
        if name not in self._groupings:
            raise SchemaError(f"{self.name} has no grouping named {name!r}; its groupings: "
                              f"{', '.join(sorted(self._groupings)) or 'none'}")
        del self._groupings[name]
        self._schema_changed()

    @property
    def groupings(self) -> dict:
        """{name: Grouping} of the groupings made by this relation's `group_by`."""
        return dict(self._groupings)

    @property
    def nbytes(self) -> int:
        """Bytes of host memory this relation holds: its fields' arrays (key fields' too), its
        subsets' rows and its groupings' indexes, as far as built (a device copy is not
        counted; `memory()` says which part holds what)."""
        return sum(self.memory().values())

    def memory(self) -> dict:
        """{part: bytes of host memory}: ``field <name>``, ``subset <name>``, ``grouping
        <name>`` (its offsets and rows, once a launch has built them)."""
        out = {f"field {name}": f._data.nbytes for name, f in self._fields.items()}
        out.update((f"subset {name}", s.rows.nbytes) for name, s in self._subsets.items())
        for name, g in self._groupings.items():
            out[f"grouping {name}"] = sum(a.nbytes for a in (g._offsets, g._rows)
                                         if a is not None)
        return out

    # -- structured grids and elastic relations ---------------------------------------------
    def set_grid(self, shape, periodic=False) -> None:
        """Declare that rows are the cells of a grid of `shape` (first axis fastest: row =
        i + n0*j + n0*n1*k), so kernels can reach neighbours with affine keys `c(1, 0)`.
        `periodic` is one flag or one per axis."""
        self.grid = GridShape.make(shape, periodic, self)

    def insert(self, count: int, **values) -> None:
        """Append `count` rows (elastic relations only); unnamed fields start at zero."""
        launch.refuse_while_recording(f"{self.name}.insert")
        elastic.append_rows(self, int(count), values)

    def delete(self, mask_or_rows) -> None:
        """Delete rows (elastic relations only), keeping the others in order; keys into this
        relation are renumbered, or the call is refused if one points at a deleted row."""
        launch.refuse_while_recording(f"{self.name}.delete")
        rows = np.asarray(mask_or_rows)
        if rows.dtype != bool:
            mask = np.zeros(self.size, dtype=bool)
            mask[as_rows(self, rows, f"{self.name}.delete")] = True
            rows = mask
        elastic.delete_rows(self, rows)

    def _drop_field(self, f) -> bool:
        """Remove field `f` (a key field whose first load failed); whether it was here."""
        if self._fields.get(f.name) is not f:
            return False
        del self._fields[f.name]
        if self.__dict__.get(f.name) is f:  # (kept by __getattr__)
            del self.__dict__[f.name]
        self._schema_changed()
        return True

    def _incoming(self) -> list:
        alive = [r() for r in self._keys_in]
        return [kf for kf in alive if kf is not None and kf.relation._fields.get(kf.name) is kf]

    # -- running kernels -------------------------------------------------------------------
    def foreach(self, kernel, config=None) -> None:
        """Run `kernel` once for every row (in any order; results as if in row order).
        A RelsimError (a kernel that does not compile, or fails) comes out of here without
        relsim's internal frames, unless RELSIM_TRACEBACK=full."""
        try:
            launch.run(kernel, self, None, config)
        except RelsimError as exc:
            raise public(exc) from exc.__cause__

    # -- bookkeeping -------------------------------------------------------------------------
    def _schema_changed(self) -> None:
        self.schema_version += 1
        self._storage_changed()

    def _storage_changed(self) -> None:
        # every change of storage arrays or size must come through here (launches re-bind)
        self.structure_version += 1
        self._arrays_exchanged()

    def _keys_rewritten(self) -> None:
        # the keys of a key field that follows a value field were computed again into the
        # same array (moving particles): launches bind again (a binding reuses its arrays when
        # nothing in it came from the keys' values), colourings prove again (`keys_version`)
        self.keys_version += 1
        self._arrays_exchanged()

    def _arrays_exchanged(self) -> None:
        # value fields exchanged their arrays, nothing else changed (`Field.swap`)
        self.storage_version += 1
        launch.storage_changed()

    def __getattr__(self, name):
        # convenient read access: R.T is R.field("T"), R.edges is a grouping, R.boundary a subset.
        # Found once, the object is kept as an instance attribute, so the next R.T is a plain
        # lookup (~0.5 us less: this hook runs only after a failed lookup has raised); a name
        # the class or the instance already uses is never shadowed (none is then found here).
        d = self.__dict__
        for table in ("_fields", "_groupings", "_subsets"):
            if table in d and name in d[table]:
                obj = d[table][name]
                if not hasattr(type(self), name):
                    d[name] = obj
                return obj
        known = [n for table in ("_fields", "_groupings", "_subsets") for n in d.get(table, ())]
        close = difflib.get_close_matches(name, known, n=1)
        listing = "; ".join(f"{what}: {', '.join(d.get(table, ())) or 'none'}" for what, table in
                            (("fields", "_fields"), ("subsets", "_subsets"),
                             ("groupings", "_groupings")))
        raise AttributeError(f"relation {d.get('name', '?')!r} has no field, subset or grouping "
                             f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else "") +
                             f"; its {listing}")


class GridShape:
    """The shape and per-axis periodicity of a structured grid relation."""

    __slots__ = ("shape", "periodic", "strides")

    def __init__(self, shape, periodic):
        self.shape, self.periodic = shape, periodic
        strides, s = [], 1
        for n in shape:
            strides.append(s)
            s *= n
        self.strides = tuple(strides)

    @classmethod
    def make(cls, shape, periodic, rel):
        shape = tuple(int(n) for n in shape)
        if not shape or any(n < 1 for n in shape):
            raise DataError(f"{rel.name}: grid shape must be positive, got {shape}")
        if int(np.prod(shape)) != rel.size:
            raise DataError(f"{rel.name}: grid shape {shape} has {int(np.prod(shape))} cells "
                            f"but the relation has {rel.size} rows")
        per = (bool(periodic),) * len(shape) if isinstance(periodic, (bool, int)) else \
            tuple(bool(p) for p in periodic)
        if len(per) != len(shape):
            raise DataError(f"{rel.name}: {len(per)} periodic flags for {len(shape)} axes")
        return cls(shape, per)

    def coords(self, rows):
        """Per-axis coordinates of `rows` (arrays)."""
        return [(np.asarray(rows) // st) % n for st, n in zip(self.strides, self.shape)]

    def __repr__(self) -> str:
        return f"GridShape({self.shape}, periodic={self.periodic})"


_RESERVED = {"foreach", "field", "fields", "subset", "subsets", "group_by", "grouping",
             "groupings", "new_field", "new_key_field", "name", "size", "grid", "elastic",
             "insert", "delete", "set_grid", "partition"}


def new_relation(name: str, size: int) -> Relation:
    """A new relation `name` of `size` rows: the same as ``Relation(name, size)``."""
    return Relation(name, size)


def _describe(obj) -> str:
    """What an existing field, grouping or subset is, for a name clash."""
    target = getattr(obj, "target", None)
    if getattr(obj, "is_key", False) and target is not None:
        shape = getattr(obj.type, "shape", ())
        many = f"{shape[0]} keys" if shape else "a key"
        return f"{many} into {target.name}, per row"
    if hasattr(obj, "type"):
        return f"of type {obj.type!r}"
    return type(obj).__name__
