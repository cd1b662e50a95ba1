"""Vector and matrix constructors, rs.eye and slices used wrongly: KernelTypeError (or
KernelSyntaxError for slice syntax) at the user's line."""
import numpy as np

import relsim as rs
from tests.fails.helpers import expect_error


def rel():
    R = rs.Relation("R", 3)
    R.new_field("x", rs.f64).load(np.array([1.0, -2.0, 3.0]))
    R.new_field("n", rs.i64, init=2)
    R.new_field("p", rs.vec(2, rs.f64))
    R.new_field("m", rs.mat(2, 2, rs.f64))
    R.new_field("out", rs.f64)
    return R


def type_error(R, k, *words, **kw):
    return expect_error(R, k, rs.KernelTypeError, TypeError, *words, **kw)


def syntax_error(R, k, *words, **kw):
    return expect_error(R, k, rs.KernelSyntaxError, SyntaxError, *words, **kw)


def test_vec_component_count():
    @rs.kernel
    def k(r):
        q = rs.vec(3)(r.x, r.x)  # <- here
        r.out = q[0]

    type_error(rel(), k, "rs.vec(3)(...) takes 3 components", "got 2",
               under="rs.vec(3)(r.x, r.x)")


def test_vec_with_element_type_component_count():
    @rs.kernel
    def k(r):
        r.p = rs.vec(2, rs.f32)(r.x, r.x, r.x)  # <- here

    type_error(rel(), k, "rs.vec(2, f32)(...) takes 2 components", "got 3")


def test_vec_of_a_vector_of_another_length():
    @rs.kernel
    def k(r):
        q = rs.vec(3)(r.p)  # <- here
        r.out = q[0]

    type_error(rel(), k, "converts a vector of 3 components", "vec2[f64]", under="r.p")


def test_vec_length_computed_in_the_kernel():
    @rs.kernel
    def k(r):
        q = rs.vec(r.n)(r.x)  # <- here
        r.out = q[0]

    type_error(rel(), k, "the arguments of rs.vec() must be a compile-time constant",
               "'r.n' is computed in the kernel", under="r.n")


def test_vec_bad_length():
    @rs.kernel
    def k(r):
        q = rs.vec(0)(r.x)  # <- here
        r.out = q[0]

    type_error(rel(), k, "vec length must be a positive int", under="rs.vec(0)")


def test_mat_row_major_entries():
    @rs.kernel
    def k(r):
        r.m = rs.mat(2, 2)(r.x, 0.0, 0.0, r.x)  # <- here

    type_error(rel(), k, "takes 2 rows", "got 4 argument(s)",
               "rs.mat(2, 2)((..., ...), (..., ...))")


def test_mat_row_length():
    @rs.kernel
    def k(r):
        r.m = rs.mat(2, 2)((r.x, 0.0), (0.0, r.x, 1.0))  # <- here

    type_error(rel(), k, "2 rows of 2 components each", "vec3[f64]", under="(0.0, r.x, 1.0)")


def test_eye_size_computed_in_the_kernel():
    @rs.kernel
    def k(r):
        e = rs.eye(r.n)  # <- here
        r.out = e[0, 0]

    type_error(rel(), k, "the arguments of rs.eye()", "'r.n' is computed", under="r.n")


def test_column_of_a_vector():
    @rs.kernel
    def k(r):
        r.out = r.p[:, 0][0]  # <- here

    type_error(rel(), k, "column m[:, j] or row m[i, :]", "vec2[f64], not a matrix", under=":")


def test_both_axes_sliced():
    @rs.kernel
    def k(r):
        q = r.m[:, :]  # <- here
        r.out = q[0, 0]

    type_error(rel(), k, "one ':' and one index")


def test_partial_slice():
    @rs.kernel
    def k(r):
        r.p = r.m[1:, 0]  # <- here

    syntax_error(rel(), k, "slices other than ':'", under="1:")


def test_assign_to_a_column():
    @rs.kernel
    def k(r):
        r.m[:, 0] = r.p  # <- here

    syntax_error(rel(), k, "cannot assign to a slice", under=":")
