"""KeyField.derive: keys of rows inserted without one are computed lazily, once, by the field's
rule, and only for rows still there; groupings over the field include the new rows."""
import numpy as np
import pytest

import relsim as rs


def build():
    V = rs.Relation("V", 3)
    P = rs.Relation("P", 2, elastic=True)
    P.new_field("x", rs.i64).load([10, 11])
    k = P.new_key_field("k", V, values=[2, 0])
    P.group_by(k, "ps")
    calls = []

    def rule(rows):
        calls.append(rows.tolist())
        return P.x.numpy()[rows] % 3

    k.derive(rule)
    return V, P, k, calls


def test_keys_of_inserted_rows_are_derived_when_read_once():
    V, P, k, calls = build()
    P.insert(2, x=[12, 13])
    P.insert(1, x=[14])
    assert calls == []  # nothing read yet
    assert k.numpy().tolist() == [2, 0, 0, 1, 2]
    assert calls == [[2, 3, 4]]
    assert k.numpy().tolist() == [2, 0, 0, 1, 2] and len(calls) == 1
    off, rows = V.ps.offsets(), V.ps.rows()
    assert off.tolist() == [0, 2, 3, 5] and rows.tolist() == [1, 2, 3, 0, 4]


def test_the_grouping_reads_derive_and_deleted_rows_are_never_derived():
    V, P, k, calls = build()
    P.insert(2, x=[12, 13])
    P.delete([0, 2])
    assert P.size == 2 and calls == []
    assert V.ps.offsets().tolist() == [0, 1, 2, 2]  # row 0 (was 1): key 0; row 1 (was 3): 1
    assert calls == [[1]]


def test_given_keys_are_kept_and_load_replaces_pending_ones():
    V, P, k, calls = build()
    P.insert(1, x=[12], k=[1])
    assert k.numpy().tolist() == [2, 0, 1] and calls == []
    P.insert(1, x=[13])
    k.load([0, 0, 0, 0])
    assert k.numpy().tolist() == [0, 0, 0, 0] and calls == []


def test_a_rule_giving_bad_keys_is_an_error_naming_the_row_until_fixed():
    V, P, k, calls = build()
    k.derive(lambda rows: np.full(len(rows), 7))
    P.insert(1, x=[12])
    for _ in range(2):
        with pytest.raises(rs.DataError, match=r"P\.k: row 2 \(inserted.*outside V"):
            k.numpy()
    k.derive(lambda rows: np.zeros(len(rows), dtype=np.int64))
    assert k.numpy().tolist() == [2, 0, 0]
