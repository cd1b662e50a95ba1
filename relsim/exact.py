"""`rs.exact_sum`: the sum of an array of floats, exactly rounded, by the fold of relsim's float
Global sums (`runtime/folds/exact_sum.py`, compiled): the same bits whatever the order of the
values, on every machine; for finite values whose sum does not overflow, `math.fsum`'s bits, at
a few nanoseconds a value. Host code that must agree bit for bit across processes and ranks
(relsim.optimize's dot products) sums with it."""
from __future__ import annotations

import numpy as np

from .runtime.folds import exact_sum as _exact


def exact_sum(values) -> float:
    """The sum of `values` (any array-like of floats, any shape), exactly rounded to float64:
    NaN if any is NaN (or +inf meets -inf), an infinity if one is there, else the exact sum
    rounded once to nearest (``+0.0`` for an exact zero)."""
    a = np.asarray(values, dtype=np.float64).ravel()
    acc = _exact.new()
    if a.size:
        _exact.add_array(acc, a)
    return float(_exact.round_f64(acc))
