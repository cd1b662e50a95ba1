"""Bad arguments to the random draws `rs.uniform` / `rs.normal`: KernelTypeErrors (TypeErrors)
at the user's line, the caret under the offending argument."""
import numpy as np

import relsim as rs
from tests.fails.helpers import expect_error


def rel():
    R = rs.Relation("R", 3)
    R.new_field("x", rs.f64).load(np.array([1.0, -2.0, 3.0]))
    R.new_field("n", rs.i32).load(np.array([1, 2, 3], dtype=np.int32))
    R.new_field("out", rs.f64)
    return R


def type_error(k, *words, **kw):
    return expect_error(rel(), k, rs.KernelTypeError, TypeError, *words, **kw)


def test_a_float_counter():
    @rs.kernel
    def k(r):
        r.out = rs.uniform(r, r.x)  # <- here

    type_error(k, "rs.uniform()", "counter c0 must be an integer, not f64", under="r.x")


def test_a_float_seed():
    @rs.kernel
    def k(r):
        r.out = rs.normal(r, r.n, 2, seed=r.x * 2.0)  # <- here

    type_error(k, "rs.normal()", "the seed must be an integer, not f64", under="r.x * 2.0")


def test_no_counter():
    @rs.kernel
    def k(r):
        r.out = rs.normal(r)  # <- here

    type_error(k, "rs.normal(p, c0[, c1[, c2]], seed=...)", "1 argument(s) given",
               "at least one counter", under="rs.normal(r)")


def test_too_many_counters():
    @rs.kernel
    def k(r):
        r.out = rs.uniform(r, 1, 2, 3, 4)  # <- here

    type_error(k, "1 to 3 counters", "5 argument(s) given", under="rs.uniform(r, 1, 2, 3, 4)")


def test_p_is_a_key_or_an_integer():
    @rs.kernel
    def k(r):
        r.out = rs.uniform(r.x, 1)  # <- here

    type_error(k, "p must be a key (its row is used) or an integer, not f64", under="r.x")


def test_a_constant_counter_out_of_range():
    @rs.kernel
    def k(r):
        r.out = rs.uniform(r, 0, -1)  # <- here

    type_error(k, "counter c1 is -1, outside [0, 2**32)", under="-1")


def test_a_constant_seed_out_of_range():
    big = 2 ** 32

    @rs.kernel
    def k(r):
        r.out = rs.uniform(r, 0, seed=big)  # <- here

    type_error(k, "the seed is 4294967296, outside [0, 2**32)", under="big")


def test_an_unknown_keyword():
    @rs.kernel
    def k(r):
        r.out = rs.uniform(r, 0, stream=2)  # <- here

    type_error(k, "rs.uniform() takes no keyword argument 'stream'", "(only seed=)", under="2")
