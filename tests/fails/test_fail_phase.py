"""Phase rules: kernels that could race or depend on row order are refused at compile time, at
the user's line (both lines for a conflict); the centred and read-only mixes they allow run."""
import numpy as np
import pytest

import relsim as rs
from tests import heat_graph
from tests.fails.helpers import expect_error


def mesh():
    V, E = heat_graph.chain(5, T=1.0, k=2.0)
    E.new_field("d", rs.f64)
    return V, E


# -- fields reached through a key ----------------------------------------------------------------
def test_write_through_a_key():
    V, E = mesh()

    @rs.kernel
    def push(e):
        d = e.k
        e.head.T = d  # <- here

    exc = expect_error(E, push, rs.PhaseError, ValueError, "field V.T", "'e.head.T'", "written",
                       "race", under="e.head.T = d")
    assert "+=" in exc.message  # suggests reducing instead


def test_augmented_non_reduction_through_a_key_is_a_write():
    V, E = mesh()

    @rs.kernel
    def halve(e):
        e.tail.T /= 2.0  # <- here

    expect_error(E, halve, rs.PhaseError, ValueError, "field V.T", "'e.tail.T'", "written")


def test_read_and_reduce_one_field_through_keys():
    V, E = mesh()

    @rs.kernel
    def smear(e):
        t = e.tail.T  # <- here
        e.head.T += t * e.k  # <- also

    expect_error(E, smear, rs.PhaseError, ValueError, "field V.T", "read and reduced with '+'",
                 "not both", under="e.tail.T", also=True)


def test_conflict_points_at_the_read_through_a_key_not_the_centred_one():
    V = rs.Relation("V", 4)
    V.new_key_field("nxt", V).load(np.array([1, 2, 3, 0]))
    V.new_field("T", rs.f64, init=1.0)
    V.new_field("out", rs.f64)

    @rs.kernel
    def warm_and_look(v):
        v.T = v.T + 1.0  # <- also
        v.out = v.nxt.T  # <- here

    expect_error(V, warm_and_look, rs.PhaseError, ValueError, "field V.T", "read and written",
                 under="v.nxt.T", also=True)


def test_centred_read_of_a_field_reduced_through_a_key():
    V = rs.Relation("V", 4)
    V.new_key_field("next", V).load(np.array([1, 2, 3, 0]))
    V.new_field("m", rs.f64, init=1.0)

    @rs.kernel
    def shift(v):
        v.next.m += 0.5  # <- also
        v.m = 0.0 if v.m > 3.0 else v.m  # <- here

    exc = expect_error(V, shift, rs.PhaseError, ValueError, "field V.m", "read and", also=True)
    assert "(v.next.m)" in exc.extra[0][0]


def test_reduce_one_field_with_two_operators():
    V, E = mesh()

    @rs.kernel
    def mixed(e):
        e.head.flux += e.k  # <- here
        e.tail.flux = min(e.tail.flux, e.k)  # <- also

    expect_error(E, mixed, rs.PhaseError, ValueError, "field V.flux", "'+'", "'min'",
                 "one reduction operator", also=True)


# -- globals ---------------------------------------------------------------------------------------
def test_read_and_reduce_a_global():
    V, _ = mesh()
    total = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def running(v):
        total += v.T  # <- also
        v.flux = total  # <- here

    expect_error(V, running, rs.PhaseError, ValueError, "Global 'total'",
                 "read and reduced with '+'",
                 also=True, under="total")


def test_reduce_a_global_with_two_operators():
    V, _ = mesh()
    g = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def both(v):
        g += v.T  # <- here
        g = max(g, v.T)  # <- also

    expect_error(V, both, rs.PhaseError, ValueError, "Global 'g'", "'+'", "'max'", also=True)


def test_assign_to_a_global():
    V, _ = mesh()
    g = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def overwrite(v):
        v.flux = v.T
        g = 1.0  # <- here  # noqa: F841

    expect_error(V, overwrite, rs.PhaseError, ValueError, "Global 'g'", "cannot assign",
                 "min(g, x)")


def test_divide_assign_a_global():
    V, _ = mesh()
    g = rs.Global(rs.f64, 1.0)

    @rs.kernel
    def shrink(v):
        g /= v.T  # <- here

    expect_error(V, shrink, rs.PhaseError, ValueError, "Global 'g'", "'/='", "not a reduction")


def test_multiply_assign_a_float_global():
    V, _ = mesh()
    g = rs.Global(rs.f64, 1.0)
    n = rs.Global(rs.i64, 1)

    @rs.kernel
    def product(v):
        n *= 3  # integers: exact whatever the order (wrapping), accepted
        g *= v.T  # <- here

    expect_error(V, product, rs.KernelTypeError, TypeError, "'*=' into float Global 'g'",
                 "order-independent", "math.log")


# -- reductions must have a static slot layout ---------------------------------------------------
def test_key_reduction_in_a_while_loop():
    V, E = mesh()

    @rs.kernel
    def spin(e):
        i = 0
        while i < 3:
            e.head.flux += e.k  # <- here
            i += 1

    expect_error(E, spin, rs.KernelSyntaxError, SyntaxError, "trip count",
                 "compile-time constant", "reduce once after it", under="e.head.flux += e.k")


def test_global_reduction_in_a_run_time_range():
    V = rs.Relation("V", 3)
    V.new_field("n", rs.i32, init=2)
    g = rs.Global(rs.i64, 0)

    @rs.kernel
    def count(v):
        for _ in range(v.n):
            g += 1  # <- here

    expect_error(V, count, rs.KernelSyntaxError, SyntaxError, "trip count")


def test_key_reduction_through_a_computed_key():
    V, E = mesh()

    @rs.kernel
    def pick(e):
        (e.head if e.k > 1.0 else e.tail).flux += 1.0  # <- here

    expect_error(E, pick, rs.KernelSyntaxError, SyntaxError, "fixed key path", "computed value")


def test_key_reduction_through_a_key_indexed_by_a_local():
    V = rs.Relation("V", 4)
    T = rs.Relation("T", 2)
    T.new_key_field("v", V, 3).load([[0, 1, 2], [1, 2, 3]])
    T.new_field("corner", rs.i64, init=1)
    V.new_field("deg", rs.i64)

    @rs.kernel
    def mark(t):
        c = t.corner % 3
        t.v[c].deg += 1  # <- here

    expect_error(T, mark, rs.KernelSyntaxError, SyntaxError, "fixed key path", "local 'c'")


# -- what the rules allow ------------------------------------------------------------------------
def test_centred_read_write_reduce_mix_is_accepted():
    V, _ = mesh()
    V.T.load(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))

    @rs.kernel
    def centred(v):
        v.flux = v.T * 2.0
        v.flux += v.T
        v.flux = min(v.flux, 10.0)
        v.T = v.flux - v.T

    V.foreach(centred, rs.Config(target="interp"))
    assert V.flux.numpy().tolist() == [3.0, 6.0, 9.0, 10.0, 10.0]
    assert V.T.numpy().tolist() == [2.0, 4.0, 6.0, 6.0, 5.0]


def test_key_reads_with_a_different_centred_write_are_accepted():
    V, E = mesh()
    V.T.load(np.array([1.0, 2.0, 4.0, 8.0, 16.0]))
    total = rs.Global(rs.f64, 0.0)
    hi = rs.Global(rs.f64, 0.0)

    @rs.kernel
    def grad(e):
        h = e.head
        e.d = e.k * (h.T - e.tail.T)
        h.flux += e.d
        e.tail.flux += -e.d
        total += e.d
        hi = max(hi, e.d)

    E.foreach(grad, rs.Config(target="interp"))
    assert E.d.numpy().tolist() == [2.0, 4.0, 8.0, 16.0]
    assert V.flux.numpy().tolist() == [-2.0, -2.0, -4.0, -8.0, 16.0]
    assert (total.value, hi.value) == (30.0, 16.0)


# -- every backend reports the same error ---------------------------------------------------------
@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_same_errors_on_every_target(target):
    V, E = mesh()

    @rs.kernel
    def conflict(e):
        e.head.flux += 1.0  # <- here
        e.tail.flux *= 2.0  # <- also

    expect_error(E, conflict, rs.PhaseError, ValueError, "field V.flux", "'+'", "'*'",
                 target=target, also=True)

    @rs.kernel
    def bad_type(v):
        v.flux = v.T * ((1.0, 2.0, 3.0) + (1.0, 2.0))[0]  # <- here

    expect_error(V, bad_type, rs.KernelTypeError, TypeError, "operator '+'", "mismatched shapes",
                 target=target, under="(1.0, 2.0, 3.0) + (1.0, 2.0)")
