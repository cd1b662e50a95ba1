"""Groupings (the CSR inverse of a key field): the compiled counting sort that builds large ones
gives exactly the rows and offsets of a stable argsort of the keys."""
import numpy as np
import pytest

import relsim as rs
from relsim.relations import grouping


def _by_argsort(keys, n_targets):
    flat = keys.reshape(len(keys), -1).ravel()
    arity = len(flat) // max(1, len(keys))
    offsets = np.zeros(n_targets + 1, dtype=np.int64)
    np.cumsum(np.bincount(flat, minlength=n_targets), out=offsets[1:])
    order = np.argsort(flat, kind="stable")
    return offsets, order // max(1, arity)


@pytest.mark.parametrize("arity", [None, 3])
def test_a_large_grouping_built_again_is_the_stable_argsorts(arity):
    """Keys of 10,000 rows loaded again (as moving particles' are each step): the rebuild,
    past `COUNTING_SORT_FROM` entries, groups every row in ascending order within its group."""
    rng = np.random.default_rng(11)
    S, T = rs.Relation("S", 10_000), rs.Relation("T", 700)
    shape = (S.size,) if arity is None else (S.size, arity)
    kf = S.new_key_field("k", T, arity=arity, values=rng.integers(0, T.size, shape))
    g = S.group_by("k", "members")
    assert S.size * (arity or 1) >= grouping.COUNTING_SORT_FROM
    for _ in range(3):
        offsets, rows = g.arrays()
        want_offsets, want_rows = _by_argsort(kf.numpy(), T.size)
        assert offsets.dtype == np.int64 and rows.dtype == np.int64
        assert (offsets == want_offsets).all() and (rows == want_rows).all()
        kf.load(rng.integers(0, T.size // 2, shape))  # (half the groups empty)


def test_a_first_build_past_its_threshold_is_counted_too(monkeypatch):
    monkeypatch.setattr(grouping, "COUNTING_SORT_FIRST_FROM", 50)
    monkeypatch.setattr(grouping, "COUNTING_SORT_FROM", 10**9)  # (the first build only)
    calls = []
    sort = grouping.counting_sort
    monkeypatch.setattr(grouping, "counting_sort", lambda *a: calls.append(1) or sort(*a))
    S, T = rs.Relation("S", 60), rs.Relation("T", 7)
    keys = np.random.default_rng(2).integers(0, 7, 60)
    S.new_key_field("k", T, values=keys)
    offsets, rows = S.group_by("k", "members").arrays()
    want_offsets, want_rows = _by_argsort(keys, 7)
    assert calls == [1] and (offsets == want_offsets).all() and (rows == want_rows).all()
