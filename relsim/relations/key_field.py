"""Key fields: fields whose values are rows of another relation (`KeyField`), their storage
type (`key_dtype`: int32 while the target is small) and their widening when it grows."""
from __future__ import annotations

import weakref

import numpy as np

from ..errors import DataError
from ..types import KeyType, KeyVecType
from . import launch as _launch
from .field import Field
from .rebinning import groupings_over


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
