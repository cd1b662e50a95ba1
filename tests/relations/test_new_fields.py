"""A field whose initial values are refused is never added: the name stays free and the relation
(fields, schema and storage versions, the key target's incoming keys) is unchanged."""
import numpy as np
import pytest

import relsim as rs


def snapshot(R, target=None):
    state = (dict(R.fields), R.schema_version, dict(R.groupings))
    if target is not None:
        state += (len(target._incoming()),)
    return state


@pytest.mark.parametrize("bad", [
    [0, 1, 7],  # a row outside the target
    [0, -1, 2],  # negative
    [0, 1],  # wrong length
    [0.0, 1.0, 2.0],  # not integers
])
def test_new_key_field_with_bad_values_adds_nothing(bad):
    V, E = rs.Relation("V", 4), rs.Relation("E", 3)
    before = snapshot(E, V)
    with pytest.raises(rs.DataError, match="E.head"):
        E.new_key_field("head", V, values=bad)
    assert snapshot(E, V) == before
    assert not E.has_field("head")
    head = E.new_key_field("head", V, values=[1, 2, 3])  # the name is free
    assert head.numpy().tolist() == [1, 2, 3] and E.head is head
    assert V._incoming() == [head]


@pytest.mark.parametrize("bad", [[0, 1, 7], [0, 1], [0.0, 1.0, 2.0]])
def test_a_failed_first_load_removes_the_new_key_field(bad):
    V, E = rs.Relation("V", 4), rs.Relation("E", 3)
    before = snapshot(E, V)
    with pytest.raises(rs.DataError, match="E.head never held keys, so it was removed"):
        E.new_key_field("head", V).load(bad)
    after = snapshot(E, V)  # (the schema changed twice: its version moved on)
    assert after[0] == before[0] and after[2:] == before[2:] and not E.has_field("head")
    head = E.new_key_field("head", V).load([1, 2, 3])  # the name is free
    assert head.numpy().tolist() == [1, 2, 3] and V._incoming() == [head]
    with pytest.raises(rs.DataError) as err:  # a field that held keys keeps them
        head.load(bad)
    assert "removed" not in str(err.value)
    assert E.head is head and head.numpy().tolist() == [1, 2, 3]


def test_new_key_field_with_values_and_arity():
    V, T = rs.Relation("V", 5), rs.Relation("T", 2)
    with pytest.raises(rs.DataError, match="T.v"):
        T.new_key_field("v", V, 3, values=[[0, 1, 2]])  # one row of two
    assert not T.has_field("v")
    v = T.new_key_field("v", V, 3, values=np.array([[0, 1, 2], [2, 3, 4]]))
    assert v.numpy().tolist() == [[0, 1, 2], [2, 3, 4]]


@pytest.mark.parametrize("dtype, bad", [
    (rs.f64, "abc"),
    (rs.i32, 1.5),  # not exactly representable
    (rs.f64, np.zeros(5)),  # wrong length
    (rs.vec(3, rs.f64), (1.0, 2.0)),  # wrong value shape
])
def test_new_field_with_bad_init_adds_nothing(dtype, bad):
    R = rs.Relation("R", 3)
    R.new_field("x", rs.f64)
    before = snapshot(R)
    with pytest.raises(rs.DataError, match="R.T"):
        R.new_field("T", dtype, init=bad)
    assert snapshot(R) == before and not R.has_field("T")
    assert R.new_field("T", dtype).numpy().shape[0] == 3  # the name is free


def test_new_field_with_an_array_init():
    R = rs.Relation("R", 3)
    T = R.new_field("T", rs.f64, init=np.array([1.0, 2.0, 3.0]))
    assert T.numpy().tolist() == [1.0, 2.0, 3.0]
