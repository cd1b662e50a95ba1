"""One rule for values the host stores (relations/host_values.py): Global.value and Field.load
refuse what they would change (a fraction into an integer, an overflow into inf, a wrapped
integer) with a DataError naming the Global or field, and leave the old value in place."""
import re

import numpy as np
import pytest

import relsim as rs


@pytest.mark.parametrize("dtype, value, why", [
    (rs.i32, 1.5, "not exactly"),
    (rs.i32, 2 ** 40, "not exactly"),
    (rs.i64, 2 ** 70, "not exactly"),
    (rs.f32, 1e50, "it overflows"),
    (rs.f32, -1e300, "it overflows"),
])
def test_a_python_number_that_would_change_is_refused_by_globals_and_fields(dtype, value,
                                                                             why):
    g = rs.Global(dtype, 1, name="g")
    text = re.escape(repr(value))
    with pytest.raises(rs.DataError, match=rf"{text} cannot be stored in Global 'g' of type "
                                           rf"{dtype!r} \({why}\)"):
        g.value = value
    assert g.value == 1  # unchanged
    R = rs.Relation("R", 3)
    f = R.new_field("x", dtype, init=1)
    with pytest.raises(rs.DataError, match=rf"cannot be stored in field R.x of type {dtype!r}"):
        f.load(value)
    assert f.numpy().tolist() == [1, 1, 1]


@pytest.mark.parametrize("dtype, values, what", [
    (rs.f32, np.array([1.0, 1e50, 2.0]), "overflow"),
    (rs.i32, np.array([1, -2 ** 40, 3]), "lie outside the range of"),
])
def test_an_array_that_would_change_is_refused_by_globals_and_fields(dtype, values, what):
    R = rs.Relation("R", 3)
    f = R.new_field("x", dtype, init=1)
    with pytest.raises(rs.DataError, match=rf"values {what} field R.x of type {dtype!r}: "
                                           rf".* \(at index 1\)"):
        f.load(values)
    assert f.numpy().tolist() == [1, 1, 1]
    g = rs.Global(dtype, 1, name="g")
    with pytest.raises(rs.DataError, match=rf"values {what} Global 'g'"):
        g.value = values[1:2].reshape(())
    assert g.value == 1
    with pytest.raises(rs.DataError, match="Global 'g' of type"):
        g.value = values[1]  # a NumPy scalar


def test_a_float_array_into_an_integer_global_is_refused():
    g = rs.Global(rs.i32, 0, name="n")
    with pytest.raises(rs.DataError, match="cannot store float64 values in Global 'n'"):
        g.value = np.array(2.0)


def test_what_fits_is_stored_rounded_to_the_nearest_float():
    g = rs.Global(rs.f32, 0)
    g.value = 0.1
    assert g.value == float(np.float32(0.1))
    for special in (float("inf"), float("-inf")):
        g.value = special
        assert g.value == special
    g.value = float("nan")
    assert np.isnan(g.value)
    n = rs.Global(rs.i32, 0)
    n.value = 2.0  # an integral float is exact
    assert n.value == 2
    n.value = np.array(7, dtype=np.int64)  # fits: stored
    assert n.value == 7
    R = rs.Relation("R", 2)
    R.new_field("x", rs.f32).load(np.array([1e30, np.inf]))
    assert R.x.numpy().tolist() == [float(np.float32(1e30)), float("inf")]
    R.new_field("y", rs.f64).load(float("nan"))  # NaN is NaN in every float type
    assert np.isnan(R.y.numpy()).all()
