"""`KeyField.follow`: keys that are a function of a value field are computed again, lazily,
when the values changed (every row: written into the array the field owns for them, which
stays read-only to everyone else) or rows were inserted (those rows only, in a new array)."""
import numpy as np
import pytest

import relsim as rs


def _followed(arity):
    T = rs.Relation("bins", 10)
    R = rs.Relation("items", 6, elastic=True)
    R.new_field("x", rs.f64).load(np.linspace(0.0, 9.5, 6))
    calls = []

    def rule(rows):
        calls.append(np.asarray(rows).tolist())
        b = np.floor(R.x.numpy(copy=True)[rows]).astype(np.int64)
        return b if arity is None else np.stack([b, 9 - b], axis=1)

    k = R.new_key_field("bin", T, arity=arity)
    k.follow(R.x, rule)
    return R, k, calls


def _want(x, arity):
    b = np.floor(x).astype(np.int64)
    return b if arity is None else np.stack([b, 9 - b], axis=1)


@pytest.mark.parametrize("arity", [None, 2])
def test_keys_follow_their_values_lazily_and_only_where_needed(arity):
    R, k, calls = _followed(arity)
    x = np.array([9.9, 0.1, 3.5, 3.6, 7.0, 2.2])
    R.x.load(x)
    assert calls == []  # (nothing reads the keys yet)
    first = k.numpy()
    assert calls == [list(range(6))]
    assert first.tolist() == _want(x, arity).tolist()
    assert not first.flags.writeable and k.numpy().tolist() == first.tolist()
    assert len(calls) == 1  # (read again: nothing to compute)
    R.insert(2, x=np.array([5.5, 8.25]))  # inserted: only their keys are computed
    grown = k.numpy()
    assert calls[1] == [6, 7]
    assert grown.tolist() == _want(np.r_[x, 5.5, 8.25], arity).tolist()
    x2 = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    R.x.load(x2)  # every value changed: every key computed again, a new array (the rows
    # were inserted since: the field owns none of their size yet)
    again = k.numpy()
    assert calls[2] == list(range(8))
    assert again.tolist() == _want(x2, arity).tolist()
    assert again.dtype == first.dtype and not again.flags.writeable
    assert not np.shares_memory(np.asarray(again), np.asarray(grown))
    stored, version = k._stored(), k.version
    x3 = x2[::-1].copy()
    R.x.load(x3)  # again: into the same array, its version moved
    assert k.numpy().tolist() == _want(x3, arity).tolist() and calls[3] == list(range(8))
    assert k._stored() is stored and k.version == version + 1
    assert not k.numpy().flags.writeable
