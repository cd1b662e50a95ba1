"""`rs.static` loops used wrongly: each error names the problem and points at the user's line
(in the unrolled body, the line of the loop body the copy came from)."""
import numpy as np

import relsim as rs
from tests.fails.helpers import expect_error

ROWS = tuple(range(1025))


def grid():
    C = rs.Relation("C", 12)
    C.set_grid((4, 3), True)
    C.new_field("u", rs.f64).load(np.arange(12.0))
    C.new_field("n", rs.i64, init=2)
    C.new_field("a", rs.f64, init=0.0)
    return C


def syntax_error(R, k, *words, **kw):
    return expect_error(R, k, rs.KernelSyntaxError, SyntaxError, *words, **kw)


def type_error(R, k, *words, **kw):
    return expect_error(R, k, rs.KernelTypeError, TypeError, *words, **kw)


def test_break_in_a_static_loop():
    @rs.kernel
    def k(c):
        for dx in rs.static((-1, 0, 1)):
            if c(dx, 0).u > 5.0:
                break  # <- here
            c.a += c(dx, 0).u

    syntax_error(grid(), k, "'break' in a static loop", "unrolls", under="break")


def test_continue_in_a_static_loop():
    @rs.kernel
    def k(c):
        for dx in rs.static((-1, 0, 1)):
            if dx == 0:
                continue  # <- here
            c.a += c(dx, 0).u

    syntax_error(grid(), k, "'continue' in a static loop", under="continue")


def test_break_of_an_inner_plain_loop_is_allowed():
    @rs.kernel
    def k(c):
        for dx in rs.static((-1, 1)):
            for i in range(3):
                if i == c.n:
                    break
                c.a += c(dx, 0).u

    C = grid()
    C.foreach(k, rs.Config(target="interp"))
    u = np.arange(12.0).reshape(3, 4)
    assert np.array_equal(C.a.numpy(), (2 * (np.roll(u, 1, 1) + np.roll(u, -1, 1))).reshape(-1))


def test_a_run_time_iterable():
    @rs.kernel
    def k(c):
        for _ in rs.static(range(c.n)):  # <- here
            c.a += 1.0

    type_error(grid(), k, "rs.static must be a compile-time constant", "'c.n' is computed in "
               "the kernel", under="c.n")


def test_a_local_in_the_iterable():
    @rs.kernel
    def k(c):
        m = 3
        for i in rs.static((0, m)):  # <- here
            c.a += c(i, 0).u

    type_error(grid(), k, "compile-time constant", "'m' is computed in the kernel", under="m")


def test_not_iterable():
    @rs.kernel
    def k(c):
        for _ in rs.static(3):  # <- here
            c.a += 1.0

    type_error(grid(), k, "tuple, list, range or NumPy array", under="3")


def test_too_many_items():
    @rs.kernel
    def k(c):
        for _ in rs.static(ROWS):  # <- here
            c.a += 1.0

    type_error(grid(), k, "1025 times", "at most 1024", under="ROWS")


def test_items_that_do_not_unpack():
    @rs.kernel
    def k(c):
        for dx, dy in rs.static(((1, 0), (0, 1, 2))):  # <- here
            c.a += c(dx, dy).u

    type_error(grid(), k, "cannot unpack (0, 1, 2) into 2 names", under="dx, dy")


def test_assigning_the_loop_variable():
    @rs.kernel
    def k(c):
        for dx in rs.static((1, 2)):
            dx += 1  # <- here
            c.a += c(dx, 0).u

    syntax_error(grid(), k, "cannot assign to 'dx'", "rs.static loop")


def test_static_outside_a_for_loop():
    @rs.kernel
    def k(c):
        c.a = c(rs.static(1), 0).u  # <- here

    syntax_error(grid(), k, "only the iterable of a for loop", under="rs.static(1)")


def test_a_float_item_as_a_grid_offset():
    @rs.kernel
    def k(c):
        for dx in rs.static((0.5, 1.0)):
            c.a += c(dx, 0).u  # <- here

    type_error(grid(), k, "integer offsets", "(got f64, i64)", under="c(dx, 0)")


def test_phase_rules_see_every_copy():
    @rs.kernel
    def k(c):
        for dx in rs.static((-1, 1)):
            c.a += c(dx, 0).u  # <- here
        c.u = 0.0  # <- also

    expect_error(grid(), k, rs.PhaseError, ValueError, "field C.u", "read and written",
                 under="c(dx, 0).u", also=True)
