"""The one rule for values the host puts into relsim storage (`Field.load`, `Global.value`).

A value is stored only if nothing of it is lost:

- a Python number (bool, int, float) into an integer type must convert exactly (1.5 is not
  an integer, 2**40 not an i32); into a float type it is rounded to the nearest (0.1 into an
  f32), but a finite number never becomes inf (1e50 is no f32);
- an array (or a NumPy scalar) must be castable within its kind (`np.can_cast(...,
  "same_kind")`: integers into floats, f32 into f64, not floats into integers), and where the
  cast narrows, every value must fit: a finite f64 that overflows an f32 to inf, or an i64
  outside an i32's range, is refused rather than stored as inf or wrapped.

Anything else is a `DataError` naming what was being written (`label`).
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError


def python_number(value, dtype: np.dtype, label: str, type_name: str):
    """`value` (a bool, int or float) as a scalar of `dtype`, or a DataError: into an integer
    type exactly; into a float type rounded to the nearest, but never overflowing to inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            stored = dtype.type(value)
        except (OverflowError, ValueError):
            stored = None
    if stored is None:
        ok = False
    elif dtype.kind == "f":
        ok = bool(np.isfinite(stored)) or not np.isfinite(float(value))
    else:
        ok = stored.item() == value
    if not ok:
        raise DataError(f"{value!r} cannot be stored in {label} of type {type_name} "
                        f"({'it overflows' if dtype.kind == 'f' else 'not exactly'})")
    return stored


def array(values, dtype: np.dtype, label: str, type_name: str) -> np.ndarray:
    """`values` (anything NumPy makes an array of) as an array, checked to convert to `dtype`
    without loss (see the module's rule); the caller copies it into storage of `dtype`.
    Object arrays pass unchecked (their elements convert one by one on the copy)."""
    arr = np.asarray(values)
    if arr.dtype == object or arr.dtype == dtype:
        return arr
    if not np.can_cast(arr.dtype, dtype, "same_kind"):
        raise DataError(f"cannot store {arr.dtype} values in {label} of type {type_name} "
                        f"without losing information; cast first")
    if np.can_cast(arr.dtype, dtype, "safe") or arr.size == 0:
        return arr
    if dtype.kind == "f":  # a narrower float: overflow to inf is a loss
        with np.errstate(over="ignore"):
            lost = np.isfinite(arr) & ~np.isfinite(arr.astype(dtype))
        what = "overflow"
    elif dtype.kind in "iu" and arr.dtype.kind in "iu":  # a narrower integer: wrapping is one
        info = np.iinfo(dtype)
        lost = (arr < info.min) | (arr > info.max)
        what = "lie outside the range of"
    else:  # (bool: every value fits)
        return arr
    if lost.any():
        first = np.unravel_index(int(np.flatnonzero(lost.ravel())[0]), arr.shape)
        at = f" (at index {first[0] if len(first) == 1 else first})" if arr.ndim else ""
        raise DataError(f"values {what} {label} of type {type_name}: {arr[first]!r}{at} "
                        f"cannot be stored")
    return arr
