"""Fields: typed columns of a relation, stored as NumPy arrays of shape (rows,) + value shape."""
from __future__ import annotations

import weakref

import numpy as np

from ..errors import DataError, entry_point
from ..types import KeyType, KeyVecType, MatType, ScalarType, VecType, as_value_type
from . import host_values
from . import launch as _launch
from .rebinning import groupings_over
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


class KeyField(Field):
    """A field whose values are rows of another relation (scalar or fixed-arity vector).

    Rows inserted into an elastic relation without a value for a key field get key 0, unless
    the key field has a rule (`derive`): then their keys are computed by it when the keys are
    next read (by a kernel, a grouping over the key field, or the host)."""

    @staticmethod
    def storage_dtype(target_size: int):
        """The NumPy type keys into a relation of `target_size` rows are stored in (int32 below
        2^31 - 1 rows, else int64): an array built in it can be loaded with ``copy=False``."""
        return key_dtype(target_size)

    is_key = True
    _derive = None  # fn(rows) -> keys of rows inserted without one (see derive)
    _unset = None  # bool mask of the rows whose keys `_derive` has yet to compute
    _followers = ()  # (key fields follow value fields only)
    follows = None  # the value field its keys follow (`follow`), or None
    compiled_rule = None  # (compiled function, extra arguments) of its `follow` rule, or None
    _owned = None  # the writable array behind its keys when they follow a field

    @property
    def _data(self) -> np.ndarray:
        if self._unset is not None:
            self._derive_unset()
        return self._keys

    @_data.setter
    def _data(self, arr) -> None:
        self._keys = arr

    def _stored(self) -> np.ndarray:
        return self._keys

    def derive(self, fn) -> KeyField:
        """Compute the keys of rows inserted without one (``R.insert`` or ``rs.insert`` in a
        kernel that does not set this field) with ``fn(rows)``: an int array of the new rows,
        returning their keys. It runs lazily, once, when the keys are next read; a grouping over
        the field then includes the new rows. (`particles.Particles.locate` sets one: new
        particles are binned into their cells.)"""
        self._derive = fn
        return self

    def follow(self, field, fn, compiled=None) -> KeyField:
        """Keep the keys a function of `field` (a value field of the same relation): ``fn(rows)``
        computes the keys of `rows` (an int array) from it. Whenever `field`'s values change (a
        launch writes it, the host loads it), every key is computed again when the keys are
        next read (by a kernel, a grouping over this field, or the host); rows inserted
        without a key are computed then too (as with `derive`). (`grid.locate` sets one, so
        particles that moved are in their new cells at the next kernel that looks.)

        `compiled`: optionally ``(rule, params)``, a Numba-compiled function of a module's top
        level and a tuple, with ``rule(values, keys, flag, *params)`` writing every row's key
        (scalar keys) into `keys` from `field`'s array `values`, the same keys `fn` gives, or
        setting ``flag[0] = 1`` for a row it leaves to `fn` (which then computes them all,
        raising its errors). A captured step (`rs.capture`) runs it inside its compiled call
        after the launch that writes `field`."""
        if getattr(field, "relation", None) is not self.relation or field.is_key:
            raise DataError(f"key field {self.qualname} can follow a value field of "
                            f"{self.relation.name}, not {getattr(field, 'qualname', field)!r}")
        if compiled is not None and not (
                isinstance(compiled, tuple) and len(compiled) == 2 and
                hasattr(compiled[0], "py_func") and isinstance(compiled[1], tuple)):
            raise DataError(f"key field {self.qualname}: follow(..., compiled=) takes (a Numba "
                            f"compiled function, a tuple of its extra arguments), got "
                            f"{compiled!r}")
        self.compiled_rule = compiled
        self._derive = fn
        self.follows = field
        refs = field._followers
        if not any(ref() is self for ref in refs):
            refs.append(weakref.ref(self))
        self._own_keys()
        return self

    def _own_keys(self) -> bool:
        """Hold the keys in an array of the field's own (`_owned`, behind a read-only view),
        which the `follow` rule's keys are written into; True when it already did."""
        if self._owned is not None and self._owned.shape == self._keys.shape and \
                self._keys.base is self._owned:
            return True
        self._owned = np.array(self._keys)
        view = self._owned.view()
        view.flags.writeable = False
        self.data = view  # (the same keys: launches bind the new array)
        self.relation._storage_changed()
        return False

    def settle(self) -> None:
        """Bring the keys (computed again by the `follow` rule if the rows moved) and the
        groupings over them up to date now."""
        if self._unset is not None:
            self._derive_unset()
        for g in groupings_over(self):
            g.offsets()

    def _recompute_all(self) -> None:
        """Every key is stale: computed again (by the `follow` rule) when next read, into the
        same array (`_derive_unset`)."""
        if self._unset is not None and self._unset.size == self.relation.size and \
                self._unset.all():
            return  # (already: a launch after launch that moves the rows changes nothing)
        self._unset = np.ones(self.relation.size, dtype=bool)
        self.relation._keys_rewritten()  # (launches bind again, and read the new keys)

    def rebin_now(self) -> None:
        """Compute every key again now by the `follow` rule, into the same array, and the
        groupings over them (a captured step does it after each launch that writes the field
        it follows)."""
        self._unset = np.ones(self.relation.size, dtype=bool)
        self.settle()

    def _mark_unset(self, start: int) -> None:
        """Rows from `start` on were inserted without keys: `_derive` computes them later."""
        if self._derive is None or start >= self.relation.size:
            return
        unset = np.zeros(self.relation.size, dtype=bool)
        if self._unset is not None:
            unset[:len(self._unset)] = self._unset[:self.relation.size]
        unset[start:] = True
        self._unset = unset

    def _keep_rows(self, keep) -> None:
        """Compact the storage (and the rows still to derive) to the rows where `keep`."""
        data = np.array(self._keys[keep])
        data.flags.writeable = False
        if self._unset is not None:
            unset = self._unset[keep]
            self._unset = unset if unset.any() else None
        self.data = data

    def _derive_unset(self) -> None:
        rows = np.flatnonzero(self._unset)
        unset, self._unset = self._unset, None
        try:
            keys = np.asarray(self._derive(rows))
            self._check_keys(keys, (len(rows),) + self.type.shape, rows)
        except BaseException:
            self._unset = unset  # still to do: the next read tries again
            raise
        if len(rows) == self.relation.size:  # every key (the rows moved): written into the
            # array the field owns for them, so a launch's binding keeps its arrays (one that
            # computed something from the keys binds again: it compares the field's version)
            self._own_keys()
            self._owned[...] = keys.reshape(self._owned.shape)
            self.version += 1
            self._host_written()
            self.relation._keys_rewritten()
            return
        data = self._keys.copy()
        data[rows] = keys
        data.flags.writeable = False
        self.data = data
        self.version += 1
        self.relation._storage_changed()

    def __init__(self, relation, name: str, target, arity: int | None = None):
        self.target = target
        self.arity = arity
        vtype = KeyType(target) if arity is None else KeyVecType(target, arity)
        self.relation = relation
        self.name = name
        self.type = vtype
        self.data = np.zeros((relation.size,) + vtype.shape, dtype=key_dtype(target.size))
        self.data.flags.writeable = False
        self.version = 0

    def numpy(self, copy: bool = False) -> np.ndarray:
        """A read-only view of the key rows (or a writable copy); change them with `load` so
        groupings stay valid. (For an elastic relation, the view also goes stale, and raises
        when used, once the keys are loaded again.)"""
        return self.data.copy() if copy else self._handed_out(self.data)

    def load(self, values, copy: bool = True) -> KeyField:
        """Replace every key. Bad values change nothing; if the field never held loaded keys
        (``R.new_key_field(name, target).load(bad)``) it is removed from its relation again,
        so that nothing half-built stays behind. With ``copy=False`` a C-contiguous array of
        the keys' storage type (`key_dtype`) becomes the field's storage, read-only, without a
        copy (for set-up code handing over an array it built: it must not change it after)."""
        _launch.refuse_while_recording(f"loading keys into {self.qualname}")
        arr = np.asarray(values)
        try:
            self._check_keys(arr, (self.relation.size,) + self.type.shape)
        except DataError as exc:
            if self.version == 0 and self.relation._drop_field(self):
                raise DataError(f"{exc}; {self.qualname} never held keys, so it was removed "
                                f"again (add it with new_key_field(..., values=...))") from None
            raise
        dtype = key_dtype(self.target.size)
        if not copy and arr.dtype == dtype and arr.flags.c_contiguous:
            data = arr.view()  # (a view: the flag below is the field's, not the caller's)
        else:
            data = np.array(arr, dtype=dtype)
        data.flags.writeable = False
        self._unset = None  # every key given
        self.data = data
        self.version += 1
        self.relation._storage_changed()
        return self

    def _check_keys(self, arr, want, rows=None) -> None:
        """Refuse keys of the wrong shape or outside the target; `rows`: the rows `arr` is for,
        when its keys were derived (see `derive`) rather than loaded."""
        how = "" if rows is None else " (inserted; its key derived by the field's rule)"
        if arr.shape != want:
            raise DataError(f"cannot load an array of shape {arr.shape} into key field "
                            f"{self.qualname} of shape {want}")
        if arr.size and arr.dtype.kind not in "iu":
            raise DataError(f"key field {self.qualname} needs integer rows, got {arr.dtype}")
        if arr.size and (arr.min() < 0 or arr.max() >= self.target.size):
            bad = np.flatnonzero(((arr < 0) | (arr >= self.target.size)).reshape(len(arr), -1)
                                 .any(axis=1))
            row = int(bad[0] if rows is None else rows[bad[0]])
            raise DataError(f"key field {self.qualname}: row {row}{how} holds "
                            f"{arr[bad[0]].tolist()}, outside {self.target.name} "
                            f"(size {self.target.size}); {len(bad)} bad row(s) in all")

    def fill(self, value):
        """Point every row at row `value` of the target relation (checked as `load`)."""
        return self.load(np.full((self.relation.size,) + self.type.shape, value))

    def _resize(self, size: int) -> None:
        new = np.zeros((size,) + self.type.shape, dtype=self._keys.dtype)
        n = min(size, self._keys.shape[0])
        new[:n] = self._keys[:n]
        new.flags.writeable = False
        if self._unset is not None:
            unset = np.zeros(size, dtype=bool)
            unset[:n] = self._unset[:n]
            self._unset = unset if unset.any() else None
        self.data = new


# Keys are stored as int32 while their target has fewer rows than this (half the bytes of int64:
# a memory-bound kernel reading keys, such as a sparse matrix's product, reads a third less),
# else as int64; a target that grows past it widens the keys into it (`widen_keys`).
INT32_KEYS_BELOW = 2 ** 31 - 1


def key_dtype(target_size: int):
    """The storage type of keys into a relation of `target_size` rows."""
    return np.int32 if target_size < INT32_KEYS_BELOW else np.int64


def widen_keys(target) -> None:
    """After `target` grew: keys into it stored as int32 become int64 once they must."""
    if target.size < INT32_KEYS_BELOW:
        return
    for kf in target._incoming():
        if kf._keys.dtype != np.int64:
            data = kf._keys.astype(np.int64)
            data.flags.writeable = False
            kf.data = data
            kf.version += 1
            kf.relation._storage_changed()


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
