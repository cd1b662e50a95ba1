"""Fields: typed columns of a relation, stored as NumPy arrays of shape (rows,) + value shape."""
from __future__ import annotations

import numpy as np

from ..errors import DataError, entry_point
from ..types import MatType, ScalarType, VecType, as_value_type
from . import host_values
from . import launch as _launch
from .views import ElasticView


class Field:
    """A typed column of a relation (scalar, small vector or small matrix per row).

    The field's values live in a host array (``numpy()``). While the runtime keeps newer values
    elsewhere (reductions whose fold a launch left pending, a device copy), it attaches an object
    as ``residency``, which is called before the host array is read and after the host wrote it
    (`relsim/runtime/backends/base.Residency`); the data model knows nothing else of how kernels
    run. `numpy()` hands the array out and marks the field *exposed*: the runtime then keeps it
    current after each launch, since the holder may read it at any time."""

    is_key = False
    residency = None  # set by the runtime while the host array is not current
    exposed = False  # numpy() handed the storage out: it must be current after every launch
    no_gradient = None  # why the last tape.backward could not give this field's gradient

    @property
    def data(self) -> np.ndarray:
        """The host array, brought up to date first (what relsim itself reads and writes)."""
        if self.residency is not None:
            self.residency.before_host_read(self)
        return self._data

    @data.setter
    def data(self, arr) -> None:
        if self.residency is not None:
            self.residency.before_host_read(self)
        self._data = arr
        self._host_written()

    def _host_written(self) -> None:
        if self.residency is not None:
            self.residency.after_host_write(self)

    def __init__(self, relation, name: str, vtype, init=0):
        self.relation = relation
        self.name = name
        self.type = as_value_type(vtype)
        self.data = np.zeros((relation.size,) + self.type.shape, dtype=self.type.dtype)
        self.version = 0
        self._followers = []  # weak references to key fields computed from this field
        if init is not None and not _zero_of_fresh_storage(init):
            self.fill(init)

    def followed_by(self) -> list:
        """The key fields that follow this field (`KeyField.follow`)."""
        return [kf for ref in self._followers if (kf := ref()) is not None]

    def _values_changed(self, followers_current: bool = False) -> None:
        """The values changed (a host load, a launch that wrote the field): key fields that
        follow it (`KeyField.follow`) recompute their keys when next read, unless
        `followers_current` (a captured step computed them after its launch)."""
        self.version += 1
        if self._followers and not followers_current:
            live = [ref for ref in self._followers if ref() is not None]
            self._followers[:] = live
            for ref in live:
                ref()._recompute_all()

    @property
    def qualname(self) -> str:
        """``"Relation.field"``: how errors and messages name this field."""
        return f"{self.relation.name}.{self.name}"

    @property
    def grad_name(self) -> str:
        """The name of this field's adjoint field on its relation (`rs.Tape`)."""
        return f"{self.name}__grad"

    @property
    def grad(self) -> Field:
        """After `tape.backward(L)`: the derivative of L with respect to this field's values
        when the tape started, as a field of the same type on the same relation."""
        if self.no_gradient:
            raise DataError(self.no_gradient)
        if not self.relation.has_field(self.grad_name):
            raise DataError(f"field {self.qualname} has no gradient: no tape.backward has "
                            f"differentiated a program reading it")
        return self.relation.field(self.grad_name)

    def __repr__(self) -> str:
        return f"<Field {self.qualname}: {self.type!r}>"

    # -- data in and out -------------------------------------------------------------------
    @entry_point  # (a queued launch's error may surface at this read: without relsim's frames)
    def numpy(self, copy: bool = False, local: bool = False) -> np.ndarray:
        """The field's storage as a NumPy array (a view: no copy; writes go to the field). The
        array stays current: the runtime brings it up to date after every launch.
        With ``copy=True``, a copy of the current values instead (the field is not affected).

        On several MPI ranks this is every row's value on every rank (gathered from the ranks
        that own them: a collective call, every rank must make it); ``local=True`` gives a copy
        of the rows this rank owns instead (``relation.partition.owned_rows``), without
        communication.

        The rows of an elastic relation move to a new array when rows are inserted or deleted:
        its fields' views are `views.ElasticView` objects, which raise a DataError when used after
        that (call ``numpy()`` again) rather than show the old rows."""
        if local:
            return self._local()
        if copy:
            return self.data.copy()
        self.exposed = True
        return self._handed_out(self.data)

    def _local(self) -> np.ndarray:
        part = self.relation.partition
        if part is None:
            return self.data.copy()
        # owned rows are current in the host array whenever nothing else is pending on it
        r = self.residency
        if r is not None and not getattr(r, "follows_storage", False):
            r.before_host_read(self)
        return self._stored()[part.owned_rows]

    def _handed_out(self, arr: np.ndarray) -> np.ndarray:
        return ElasticView.of(self, arr) if self.relation.elastic else arr

    def _stored(self) -> np.ndarray:
        """The storage array as it is (no update from the runtime, no derived keys)."""
        return self._data

    def load(self, values, local: bool = False) -> Field:
        """Copy `values` (an array of shape (rows,)+value shape, or one value) into the field.
        On several MPI ranks `values` is the whole array (the same on every rank); with
        ``local=True``, the values of the rows this rank owns only (``relation.partition.
        owned_rows``, in that order): each rank loads its own, without communication."""
        if local and self.relation.partition is not None:
            return self._load_local(values)
        label, dtype = f"field {self.qualname}", self._data.dtype
        if isinstance(values, (bool, int, float)):  # a Python number (the rule: host_values)
            values = host_values.python_number(values, dtype, label, repr(self.type))
        arr = np.asarray(values)
        want = (self.relation.size,) + self.type.shape
        if arr.shape not in (want, self.type.shape, ()):
            raise DataError(f"cannot load an array of shape {arr.shape} into field "
                            f"{self.qualname} of shape {want}")
        arr = host_values.array(arr, dtype, label, repr(self.type))
        self._check(arr)
        if _launch.recorders:  # a tape records what the load overwrites
            _launch.host_write(self, arr)
        self._host_written()  # every value is replaced: what is kept elsewhere is outdated
        self.data[...] = arr
        self._host_written()
        self._values_changed()
        return self

    def _load_rows(self, rows: np.ndarray, values) -> None:
        """Set the values at `rows` from the host, as `load` sets every row, without an array
        of every row (relsim's own set-up code: a matrix's Dirichlet rows among its 14M
        entries at miniFE 80^3, where a whole copy took 112 MB). While a tape records, or on
        a partitioned relation, through `load`."""
        if _launch.recorders or self.relation.partition is not None:
            arr = self.data.copy()
            arr[rows] = values
            self.load(arr)
            return
        self.data[rows] = values  # (the getter brings the host array up to date first)
        self._host_written()
        self._values_changed()

    def _load_local(self, values) -> Field:
        _launch.refuse_while_recording(f"{self.qualname}.load(..., local=True)")
        part = self.relation.partition
        arr = np.asarray(values)
        want = (part.owned,) + self.type.shape
        if arr.shape != want:
            raise DataError(f"cannot load an array of shape {arr.shape} into the {part.owned} "
                            f"rows of field {self.qualname} this rank owns (need {want})")
        arr = host_values.array(arr, self._stored().dtype, f"field {self.qualname}",
                                repr(self.type))
        self._check(arr)
        r = self.residency
        if r is not None and not getattr(r, "follows_storage", False):
            r.before_host_read(self)  # (what the runtime holds elsewhere lands first)
        self._stored()[part.owned_rows] = arr
        self._values_changed()
        part.written_locally(self)  # the other rows are other ranks' now
        return self

    def fill(self, value) -> Field:
        """Set every row to `value` (checked as `load` checks it)."""
        return self.load(value)

    def copy_from(self, other: Field) -> Field:
        """Copy another field's values (same relation size and type) into this one."""
        if other.type != self.type or other.relation.size != self.relation.size:
            raise DataError(f"cannot copy {other.qualname} ({other.type!r}) into "
                            f"{self.qualname} ({self.type!r})")
        if _launch.recorders:
            _launch.copied(self, other)
            if not _launch.effects():  # (a side a capture traces: recorded only)
                return self
        self.data[...] = other.data
        self._host_written()
        self._values_changed()
        return self

    def swap(self, other: Field) -> None:
        """Exchange the storage of two fields of the same relation and type (no copy)."""
        if other.relation is not self.relation or other.type != self.type:
            raise DataError(f"can only swap fields of the same relation and type: "
                            f"{self.qualname} ({self.type!r}) and {other.qualname} "
                            f"({other.type!r})")
        if _launch.recorders:
            _launch.swapped(self, other)
            if not _launch.effects():  # (a side a capture traces: recorded only)
                return
        mine, theirs = self.residency, other.residency
        if _moves(mine) and _moves(theirs) and not self.is_key:
            # what is current belongs to the storage: the residencies move with the arrays
            self._data, other._data = other._data, self._data
            self.residency, other.residency = theirs, mine
        else:
            self.data, other.data = other.data, self.data
        self._values_changed()
        other._values_changed()
        if self.is_key:  # (what keys are reaches further: groupings, scatter plans)
            self.relation._storage_changed()
        else:
            self.relation._arrays_exchanged()

    def _check(self, arr) -> None:
        pass

    def _resize(self, size: int) -> None:
        moved = None if self.is_key else _hook(self, "resize_rows", size)
        if moved is not None:  # the runtime resized the copy it keeps elsewhere
            self._data = moved
            return
        new = np.zeros((size,) + self.type.shape, dtype=self.data.dtype)
        n = min(size, self.data.shape[0])
        new[:n] = self.data[:n]
        self.data = new

    def _keep_value_rows(self, keep) -> None:
        """Compact a value field to the rows where `keep` (an elastic relation's delete)."""
        moved = _hook(self, "keep_rows", keep)
        if moved is not None:
            self._data = moved
        else:
            self.data = self.data[keep].copy()

    def _write_new_rows(self, start: int, values) -> None:
        """Set the rows from `start` on (just inserted) to `values`."""
        if not _hook(self, "write_rows", start, values):
            self.data[start:] = values


def _zero_of_fresh_storage(init) -> bool:
    """`init` is a Python 0 (0, 0.0, False), which new storage (``np.zeros``) already holds,
    and no tape records host writes: the field need not be filled. Filling it would touch every
    page of the storage, which the system maps only at first touch, on this thread; unfilled,
    the first launch that writes the field touches them on its threads (miniFE 80^3's
    14M-entry matrix: up to 0.24 s of its set-up on this project's machine)."""
    return type(init) in (int, float, bool) and init == 0 and not _launch.recorders


def _hook(field, name, *args):
    """A row change made by the field's residency where it keeps the values (its new host
    array, or True), or None / False when there is none or it leaves the change to the host
    (`relsim/runtime/backends/base.Residency`)."""
    fn = getattr(field.residency, name, None)
    return fn(field, *args) if fn is not None else None


def _moves(residency) -> bool:
    """Whether `residency` (None, or the runtime's) may move to another field with its array."""
    return residency is None or getattr(residency, "follows_storage", False)


def is_value_type(t) -> bool:
    return isinstance(t, (ScalarType, VecType, MatType))
