"""Python syntax the kernel language does not support: KernelSyntaxError (a SyntaxError) at the
line that uses it."""
import math
import os

import numpy as np

import relsim as rs
from tests.fails.helpers import expect_error, kernel_from_file

CASES = os.path.join(os.path.dirname(__file__), "cases", "uncompilable.py")


def rel():
    R = rs.Relation("R", 3)
    R.new_field("x", rs.f64).load(np.array([1.0, 2.0, 3.0]))
    R.new_field("p", rs.vec(3, rs.f64))
    R.new_field("out", rs.f64)
    return R


def syntax_error(R, k, *words, **kw):
    return expect_error(R, k, rs.KernelSyntaxError, SyntaxError, *words, **kw)


def test_lambda():
    @rs.kernel
    def k(r):
        f = (lambda x: x * 2)  # <- here  # noqa: E731
        r.out = f

    syntax_error(rel(), k, "lambda", "not supported", under="lambda x: x * 2")


def test_list_comprehension():
    @rs.kernel
    def k(r):
        r.p = [c * 2.0 for c in r.p]  # <- here

    syntax_error(rel(), k, "list comprehension", "not supported")


def test_try():
    @rs.kernel
    def k(r):
        try:  # <- here
            r.out = 1.0 / r.x
        except ZeroDivisionError:
            r.out = 0.0

    syntax_error(rel(), k, "'try'", "not supported")


def test_with():
    @rs.kernel
    def k(r):
        with np.errstate(all="ignore"):  # <- here
            r.out = 1.0 / r.x

    syntax_error(rel(), k, "'with'", "not supported")


def test_slice():
    @rs.kernel
    def k(r):
        r.out = r.p[0:2][0]  # <- here

    syntax_error(rel(), k, "slices", under="0:2")


def test_unpacking_a_different_number_of_values():
    @rs.kernel
    def k(r):
        a, b = r.x, 2.0, 3.0  # <- here
        r.out = a * b

    syntax_error(rel(), k, "cannot unpack 3 values into 2 targets")


def test_starred_unpacking():
    @rs.kernel
    def k(r):
        a, *b = r.x, 2.0, 3.0  # <- here
        r.out = a

    syntax_error(rel(), k, "starred targets")


def test_unpacking_a_vector_into_too_many_targets():
    @rs.kernel
    def k(r):
        a, b, c, d = r.p  # <- here
        r.out = a * b

    expect_error(rel(), k, rs.KernelTypeError, TypeError,
                 "cannot unpack a value of 3 components (vec3[f64]) into 4 targets")


def test_unpacking_a_scalar():
    @rs.kernel
    def k(r):
        a, b = r.x  # <- here
        r.out = a * b

    expect_error(rel(), k, rs.KernelTypeError, TypeError, "cannot unpack f64 into 2 targets")


def test_keyword_arguments():
    @rs.kernel
    def k(r):
        r.out = math.copysign(r.x, y=-1.0)  # <- here

    syntax_error(rel(), k, "keyword arguments")


def test_keyword_arguments_to_a_func():
    @rs.func
    def scale(x, s):
        return x * s

    @rs.kernel
    def k(r):
        r.out = scale(r.x, s=2.0)  # <- here

    syntax_error(rel(), k, "keyword arguments", under="scale(r.x, s=2.0)")


def test_keyword_arguments_to_a_func_statement():
    @rs.func
    def store(r, v):
        r.out = v

    @rs.kernel
    def k(r):
        store(r, v=2.0)  # <- here

    syntax_error(rel(), k, "keyword arguments")


def test_return_with_a_value():
    @rs.kernel
    def k(r):
        r.out = r.x
        return r.out  # <- here

    syntax_error(rel(), k, "does not return a value")


def test_early_return_in_a_loop():
    @rs.kernel
    def k(r):
        for i in range(3):
            if r.p[i] < 0.0:
                return  # <- here
        r.out = 1.0

    syntax_error(rel(), k, "early 'return' inside a loop", "break")


def test_break_outside_a_loop():
    # Python refuses to compile this, so the kernel's source lives in cases/ (see helpers)
    k = kernel_from_file(CASES, "break_outside_loop")
    syntax_error(rel(), k, "'break' outside a loop")


def test_continue_outside_a_loop():
    k = kernel_from_file(CASES, "continue_outside_loop")
    syntax_error(rel(), k, "'continue' outside a loop")
