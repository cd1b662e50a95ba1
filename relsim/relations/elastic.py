"""Elastic relations: rows inserted and deleted (particles).

Deleting compacts the surviving rows in order. Keys *into* the relation are kept valid: every
key field that targets it is renumbered, and a key that still points at a deleted row is refused
with an error naming the key field and row (nothing is changed then). Subsets are renumbered;
groupings rebuild themselves from their (renumbered) key fields.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError
from .key_field import widen_keys


def _check_elastic(rel) -> None:
    if not rel.elastic:
        raise DataError(f"relation {rel.name} is not elastic; create it with "
                        f"rs.Relation({rel.name!r}, size, elastic=True) to insert or delete rows")


def resize(rel, size: int) -> None:
    for f in rel._fields.values():
        f._resize(size)
    rel.size = size
    rel._storage_changed()
    widen_keys(rel)  # keys into it may need int64 now


def append_rows(rel, count: int, values: dict) -> None:
    """Append `count` rows; `values` maps field names to arrays of `count` rows (others zero)."""
    _check_elastic(rel)
    unknown = set(values) - set(rel._fields)
    if unknown:
        raise DataError(f"{rel.name} has no field(s) {sorted(unknown)} to insert into")
    old = rel.size
    staged = {}
    for name, vals in values.items():
        f = rel._fields[name]
        arr = np.asarray(vals)
        want = (count,) + f.type.shape
        if arr.shape != want and arr.shape != f.type.shape and arr.shape != ():
            raise DataError(f"inserting into {f.qualname}: got shape {arr.shape}, need {want}")
        if f.is_key and count and (np.min(arr) < 0 or np.max(arr) >= f.target.size):
            raise DataError(f"inserting into key field {f.qualname}: rows outside "
                            f"{f.target.name} (size {f.target.size})")
        staged[name] = arr
    resize(rel, old + count)
    for name, arr in staged.items():
        f = rel._fields[name]
        if f.is_key:
            data = f._stored().copy()
            data[old:] = arr
            data.flags.writeable = False
            f.data = data
        else:
            f._write_new_rows(old, arr)
        f.version += 1
    for f in rel._fields.values():  # keys not given: derived later, if the field has a rule
        if f.is_key and f.name not in staged:
            f._mark_unset(old)


def delete_rows(rel, mask) -> None:
    """Delete the rows where `mask` is true, keeping the others in order."""
    _check_elastic(rel)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (rel.size,):
        raise DataError(f"delete mask of shape {mask.shape} for {rel.name} of size {rel.size}")
    if not mask.any():
        return
    keep = ~mask
    new_index = np.full(rel.size, -1, dtype=np.int64)
    new_index[keep] = np.arange(int(keep.sum()))
    incoming = rel._incoming()
    for kf in incoming:  # refuse before changing anything
        keys = kf.data if kf.relation is not rel else kf.data[keep]
        if keys.size and (new_index[keys] < 0).any():
            bad = np.argwhere((new_index[keys] < 0).reshape(len(keys), -1).any(axis=1))[0, 0]
            raise DataError(f"cannot delete rows of {rel.name}: key field {kf.qualname} row "
                            f"{int(bad)} still points at deleted row(s) "
                            f"{np.asarray(keys[bad]).tolist()}; update or delete it first")
    for f in rel._fields.values():
        if f.is_key:  # keys still to derive stay so (a deleted particle is never binned)
            f._keep_rows(keep)
        else:
            f._keep_value_rows(keep)
        f.version += 1
    rel.size = int(keep.sum())
    for kf in incoming:
        data = new_index[kf.data].astype(kf.data.dtype)
        data.flags.writeable = False
        kf.data = data
        kf.version += 1
        kf.relation._storage_changed()
    for s in rel._subsets.values():
        rows = new_index[s.rows]
        s.rows = rows[rows >= 0]
        s.rows.flags.writeable = False
    rel._storage_changed()
