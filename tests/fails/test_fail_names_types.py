"""Unknown names and fields (KernelNameError, a NameError), type errors (KernelTypeError, a
TypeError), and locals used before they are assigned, each reported at the user's line."""
import math

import numpy as np

import relsim as rs
from tests.conftest import chain_mesh
from tests.fails.helpers import expect_error


def rel():
    R = rs.Relation("R", 3)
    R.new_field("x", rs.f64).load(np.array([1.0, -2.0, 3.0]))
    R.new_field("n", rs.i32)
    R.new_field("p", rs.vec(3, rs.f64))
    R.new_field("out", rs.f64)
    return R


def name_error(R, k, *words, **kw):
    return expect_error(R, k, rs.KernelNameError, NameError, *words, **kw)


def type_error(R, k, *words, **kw):
    return expect_error(R, k, rs.KernelTypeError, TypeError, *words, **kw)


# -- names ---------------------------------------------------------------------------------------
def test_unknown_name():
    @rs.kernel
    def k(r):
        r.out = r.x * undefined_scale  # <- here  # noqa: F821

    name_error(rel(), k, "'undefined_scale'", "not defined", under="undefined_scale")


def test_a_bare_math_function_says_how_to_import_it():
    @rs.kernel
    def k(r):
        r.out = sqrt(r.x)  # <- here  # noqa: F821

    name_error(rel(), k, "'sqrt' is not defined", "from math import sqrt", "math.sqrt",
               "np.sqrt", under="sqrt")


def test_unknown_module_attribute():
    @rs.kernel
    def k(r):
        r.out = math.sqr(r.x)  # <- here

    name_error(rel(), k, "module 'math'", "no attribute 'sqr'", under="math.sqr")


def test_unknown_field_read_lists_the_fields():
    @rs.kernel
    def k(r):
        r.out = r.y + 1.0  # <- here

    name_error(rel(), k, "relation R", "'y'", "fields: n, out, p, x", under="r.y")


def test_unknown_field_through_a_key():
    V, E = chain_mesh(4)
    V.new_field("T", rs.f64)
    E.new_field("d", rs.f64)

    @rs.kernel
    def k(e):
        e.d = e.head.temp  # <- here

    name_error(E, k, "relation V", "'temp'", "fields: T", under="e.head.temp")


def test_unknown_field_written():
    @rs.kernel
    def k(r):
        r.outt = r.x  # <- here

    name_error(rel(), k, "'outt'", "fields: n, out, p, x")


def test_local_used_before_assignment():
    @rs.kernel
    def k(r):
        r.out = y * 2.0  # <- here  # noqa: F821
        y = r.x

    name_error(rel(), k, "local 'y'", "used before it is assigned", under="y")


def test_local_assigned_in_one_branch_only():
    @rs.kernel
    def k(r):
        if r.x > 0.0:
            y = r.x
        r.out = y  # <- here

    name_error(rel(), k, "local 'y'", "may be used before it is assigned", "one branch")


def test_local_assigned_only_in_a_loop_that_may_not_run():
    @rs.kernel
    def k(r):
        i = 0
        while i < r.n:
            last = i
            i += 1
        r.out = last  # <- here

    name_error(rel(), k, "local 'last'", "may be used before it is assigned", "zero times")


def test_locals_assigned_on_every_path_are_accepted():
    @rs.kernel
    def k(r):
        if r.x > 0.0:
            y = r.x
        elif r.x < -1.0:
            y = -r.x
        else:
            return
        for i in range(2):
            z = y * i
        r.out = y + z

    R = rel()
    R.out.load(np.array([9.0, 9.0, 9.0]))
    R.foreach(k, rs.Config(target="interp"))
    assert R.out.numpy().tolist() == [2.0, 4.0, 6.0]


# -- types ---------------------------------------------------------------------------------------
def test_float_into_an_int_field_needs_int():
    @rs.kernel
    def k(r):
        r.n = r.x * 2.0  # <- here

    type_error(rel(), k, "f64", "field R.n", "int()")


def test_scalar_into_a_vector_field():
    @rs.kernel
    def k(r):
        r.p = r.x  # <- here

    type_error(rel(), k, "scalar", "field R.p")


def test_add_vec3_and_vec2():
    @rs.kernel
    def k(r):
        q = (r.x, 1.0)
        s = r.p + q  # <- here
        r.out = s[0]

    type_error(rel(), k, "operator '+'", "mismatched shapes", "vec3", "vec2", under="r.p + q")


def test_unsupported_function_call_statement():
    @rs.kernel
    def k(r):
        input(r.x)  # <- here

    type_error(rel(), k, "input()", "cannot be called in a kernel", under="input(r.x)")


def test_unsupported_function_call_value():
    @rs.kernel
    def k(r):
        r.out = float(np.sum(r.p))  # <- here

    type_error(rel(), k, "sum()", "cannot be called in a kernel", under="np.sum(r.p)")


def test_func_called_with_the_wrong_number_of_arguments():
    @rs.func
    def lerp(a, b, t):
        return a + (b - a) * t

    @rs.kernel
    def k(r):
        r.out = lerp(r.x, 1.0)  # <- here

    type_error(rel(), k, "lerp()", "takes 3 argument(s), 2 given", under="lerp(r.x, 1.0)")


def test_type_error_inside_a_func_points_into_the_func():
    @rs.func
    def bad(v):
        return v + (1.0, 2.0)  # <- here

    @rs.kernel
    def k(r):
        r.p = bad(r.p)

    type_error(rel(), k, "mismatched shapes", where=bad)


def test_assign_to_a_key_field():
    V, E = chain_mesh(4)

    @rs.kernel
    def k(e):
        e.head = e.tail  # <- here

    type_error(E, k, "key field E.head", "read-only")


def test_reduce_into_a_key_field():
    V, E = chain_mesh(4)

    @rs.kernel
    def k(e):
        e.tail += 1  # <- here

    type_error(E, k, "key field E.tail", "read-only")


def test_string_constant():
    @rs.kernel
    def k(r):
        label = "hot"  # <- here
        r.out = r.x if label else 0.0

    type_error(rel(), k, "str constants", "not supported", under='"hot"')


def test_captured_value_that_is_not_a_number():
    table = {"scale": 2.0}

    @rs.kernel
    def k(r):
        r.out = r.x * table  # <- here

    type_error(rel(), k, "dict object", "cannot be used as a value", under="table")


def test_unknown_function():
    @rs.kernel
    def k(r):
        r.out = smooth(r.x)  # <- here  # noqa: F821

    name_error(rel(), k, "'smooth'", "not defined", under="smooth")


def test_float_constant_that_does_not_fit_an_int():
    @rs.kernel
    def k(r):
        r.n = int(1e300)  # <- here

    type_error(rel(), k, "1e+300", "does not fit in i64")
