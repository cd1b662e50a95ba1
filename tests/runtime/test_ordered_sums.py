"""A float Global made with sum="ordered" adds its contributions one by one, each addition
rounded, in ascending row and program order within a row, from its value before the launch:
what a serial loop computes, on every target and thread count (MPI: tests/runtime/parallel)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relsim as rs
from tests.runtime.test_global_sums import CONFIGS, SETTINGS

N = 97


class Ordered:
    """A relation and a kernel adding to ordered Globals (f64, f32, a vector) from several
    sites: a loop, a branch a row may skip, a subtraction."""

    def __init__(self):
        self.R = rs.Relation("R", N)
        self.R.new_field("x", rs.f64)
        self.R.new_field("xf", rs.f32)
        self.total = total = rs.Global(rs.f64, 0.0, name="total", sum="ordered")
        self.t32 = t32 = rs.Global(rs.f32, 0.0, name="t32", sum="ordered")
        self.vec = vec = rs.Global(rs.vec(2, rs.f64), 0.0, name="vec", sum="ordered")
        self.exact = exact = rs.Global(rs.f64, 0.0, name="exact")

        @rs.kernel
        def add(r):
            for k in range(2):
                total += r.x * (k + 1.0)
            if r.x > 0.0:
                total -= 0.75
            t32 += r.xf
            vec += (r.x, -0.5 * r.x)
            exact += r.x

        self.add = add

    def run(self, x, init, cfg):
        self.R.x.load(x)
        self.R.xf.load(x.astype(np.float32))
        self.total.value, self.exact.value = init, init
        self.t32.value = np.float32(init)
        self.vec.value = (init, -0.0)
        self.R.foreach(self.add, cfg)
        return self.total.value, self.t32.value, np.array(self.vec.value), self.exact.value


def serial(x, init):
    """The kernel's sums as a serial loop computes them (NumPy scalars: each step rounded)."""
    total, t32 = np.float64(init), np.float32(init)
    vec = [np.float64(init), np.float64(-0.0)]
    for v in x:
        for k in range(2):
            total = total + v * (k + 1.0)
        if v > 0.0:
            total = total - 0.75
        t32 = t32 + np.float32(v)
        vec = [vec[0] + v, vec[1] + (-0.5 * v)]
    return total, t32, np.array(vec)


def _bits(a):
    return np.asarray(a).tobytes()


ORDERED = Ordered()
values = st.lists(st.one_of(st.floats(-1e6, 1e6), st.sampled_from([1e16, -1e16, 1.0, -0.0])),
                  min_size=N, max_size=N)


@settings(**SETTINGS)
@given(x=values, init=st.sampled_from([0.0, -0.0, 1.5, 1e16]))
def test_an_ordered_sum_is_the_serial_loops_on_every_target(x, init):
    x = np.array(x)
    with np.errstate(over="ignore"):
        want = serial(x, init)
    for cfg in CONFIGS:
        got = ORDERED.run(x, init, cfg)
        for g, w in zip(got[:3], want):
            assert _bits(np.asarray(g, dtype=np.asarray(w).dtype)) == _bits(w), (cfg, g, w)


def test_ordered_and_exact_differ_where_rounding_depends_on_the_order():
    x = np.zeros(N)
    x[:7] = [1e16, 1.0, -1e16, 3.0, 1.0, 1e16, -1e16]
    for cfg in CONFIGS:
        total, _, vec, exact = ORDERED.run(x, 0.0, cfg)
        assert vec[0] == 4.0 and exact == 5.0, cfg  # left to right: 1e16 + 1.0 rounds to 1e16
        # the large ones cancel first: nothing is lost on the way
        large_first = ORDERED.run(np.concatenate([x[[0, 2, 5, 6]], x[[1, 3, 4]], x[7:]]), 0.0,
                                  cfg)
        assert large_first[3] == 5.0 and large_first[2][0] == 5.0, cfg


def test_a_subset_launch_adds_its_rows_in_ascending_order():
    R = rs.Relation("R", 40)
    x = 10.0 ** np.arange(-20.0, 20.0)
    R.new_field("x", rs.f64).load(x)
    g = rs.Global(rs.f64, 0.0, sum="ordered")

    @rs.kernel
    def add(r):
        g += r.x

    rows = np.array([3, 39, 0, 17, 38, 5])
    want = np.float64(0.0)
    for i in np.sort(rows):
        want = want + x[i]
    sub = R.subset("some", np.isin(np.arange(40), rows))
    for cfg in CONFIGS:
        g.value = 0.0
        sub.foreach(add, cfg)
        assert g.value == want, cfg


@pytest.mark.parametrize("dtype,kw,match", [
    (rs.f64, {"sum": "fast"}, "sum must be one of 'exact', 'ordered'"),
    (rs.i64, {"sum": "ordered"}, "for float Globals"),
])
def test_a_bad_sum_is_refused(dtype, kw, match):
    with pytest.raises(ValueError, match=match):
        rs.Global(dtype, 0, **kw)


def test_the_default_is_exact_and_sum_is_read_only():
    g = rs.Global(rs.f64, 0.0)
    assert g.sum == "exact" and rs.Global(rs.f32, 0.0, sum="ordered").sum == "ordered"
    with pytest.raises(AttributeError):
        g.sum = "ordered"
    assert math.isfinite(g.value)
