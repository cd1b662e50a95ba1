"""The Global merge's host rules, on one process: the NumPy arg rule against the compiled fold
it stands for, and candidates from lanes put in row order."""
from __future__ import annotations

import numpy as np
import pytest

from relsim.runtime.folds import host_folds
from relsim.runtime.parallel.global_merge import NO_ROW, _in_row_order, first_best


def _pool(rng, kind):
    if kind == "ties":
        return np.floor(3 * rng.random(rng.integers(0, 30)))
    if kind == "zeros":
        return np.where(rng.random(rng.integers(0, 30)) < 0.5, 0.0, -0.0)
    vals = rng.standard_normal(rng.integers(0, 30))
    vals[rng.random(len(vals)) < 0.1] = np.nan
    vals[rng.random(len(vals)) < 0.1] = np.inf
    return vals


@pytest.mark.parametrize("kind", ["ties", "zeros", "specials"])
@pytest.mark.parametrize("is_min", [True, False])
def test_first_best_is_the_compiled_arg_fold(kind, is_min):
    """Strictly better or the first NaN, from the Global's value and row: the value and the
    row `host_folds.fold_arg` gives, bit for bit (signed zeros: the first stays)."""
    rng = np.random.default_rng(7 + is_min)
    for _ in range(300):
        vals = _pool(rng, kind)
        rows = np.sort(rng.choice(1000, len(vals), replace=False)).astype(np.int64)
        start = rng.choice([np.inf if is_min else -np.inf, 0.0, -0.0, 1.0, np.nan])
        start_row = int(rng.integers(-1, 5))
        value, row = np.array([start]), np.array([start_row], dtype=np.int64)
        host_folds.fold_arg(value, row, vals.reshape(-1, 1).copy(), 1, rows, True, is_min)
        got = first_best(vals, rows, np.float64(start), start_row, is_min)
        assert np.float64(got[0]).tobytes() == value[0].tobytes() and got[1] == row[0], \
            (vals, rows, start)


def test_lanes_candidates_in_row_order_without_empty_lanes():
    """Candidates (lanes x chunks, components), rows -1 where a lane had none: each
    component's in ascending row; slots' rows (one column) are taken as they are."""
    vals = np.array([[5.0, 1.0], [3.0, 2.0], [4.0, 9.0], [8.0, 7.0]])
    rows = np.array([[30, -1], [10, 40], [-1, 20], [20, 5]], dtype=np.int64)
    v, r = _in_row_order(vals[:, 0], rows, 0)
    assert v.tolist() == [3.0, 8.0, 5.0] and r.tolist() == [10, 20, 30]
    v, r = _in_row_order(vals[:, 1], rows, 1)
    assert v.tolist() == [7.0, 9.0, 2.0] and r.tolist() == [5, 20, 40]
    slots = np.arange(4, dtype=np.int64)
    assert _in_row_order(vals[:, 1], slots, 1)[1] is slots
    assert first_best(*_in_row_order(vals[:, 1], rows, 1), np.float64(np.inf), NO_ROW,
                      True) == (2.0, 40)
