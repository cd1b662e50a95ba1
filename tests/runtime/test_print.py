"""print() in kernels (runtime/host/prints.py): one line per row that reaches a print, prefixed
with the kernel, relation and row, written after the launch in row order (then program order
within a row), the same text on every target and thread count; refusals at the line."""
import numpy as np
import pytest

import relsim as rs
from tests.fails.helpers import expect_error

pytestmark = pytest.mark.device_sized  # tiny: the cuda target (simulator) runs them too


def _relation():
    R = rs.Relation("R", 6)
    R.new_field("x", rs.f64).load(np.array([4.0, -1.0, 0.5, 2.0, -3.25, 1e-300]))
    R.new_field("p", rs.vec(2, rs.f32)).load(np.arange(12.0).reshape(6, 2))
    R.new_field("n", rs.i64).load(np.arange(6) * 7)
    V = rs.Relation("Vk", 3)
    R.new_key_field("k", V, values=[2, 1, 0, 2, 1, 0])
    return R


@rs.kernel
def show(r):
    if r.x < 0.0:
        print("negative x =", r.x, "at", r.p, r.n, r.x < -2.0, r.k)
        return
    print(r.x * 2.0, rs.eye(2))


WANT = [
    "[show R row 0] 8.0 ((1.0, 0.0), (0.0, 1.0))",
    "[show R row 1] negative x = -1.0 at (2.0, 3.0) 7 False 1",
    "[show R row 2] 1.0 ((1.0, 0.0), (0.0, 1.0))",
    "[show R row 3] 4.0 ((1.0, 0.0), (0.0, 1.0))",
    "[show R row 4] negative x = -3.25 at (8.0, 9.0) 28 True 1",
    "[show R row 5] 2e-300 ((1.0, 0.0), (0.0, 1.0))",
]


def test_lines_in_row_order_on_every_target(target, capsys):
    R = _relation()
    R.foreach(show, target)
    assert capsys.readouterr().out.splitlines() == WANT
    R.subset("some", [4, 1, 3]).foreach(show, target)  # (a subset: its rows, ascending)
    assert capsys.readouterr().out.splitlines() == [WANT[1], WANT[3], WANT[4]]
    R.foreach(show, target)  # each launch prints its own lines once
    assert capsys.readouterr().out.splitlines() == WANT


@pytest.mark.parametrize("threads", [1, 2])
def test_the_parallel_variant_prints_the_same(threads, capsys):
    R = _relation()
    R.foreach(show, rs.Config(target="cpu", threads=threads, parallel_threshold=1))
    assert capsys.readouterr().out.splitlines() == WANT


def test_refusals():
    R = _relation()

    @rs.kernel
    def in_loop(r):
        for i in range(r.n):
            print(i)  # <- here

    expect_error(R, in_loop, rs.KernelTypeError, TypeError, "print() inside a loop",
                 under="print(i)")

    @rs.kernel
    def formatted(r):
        print(f"x={r.x}")  # <- here

    expect_error(R, formatted, rs.KernelSyntaxError, SyntaxError, "f-strings",
                 under='f"x={r.x}"')

    @rs.kernel
    def with_sep(r):
        print(r.x, sep=",")  # <- here

    expect_error(R, with_sep, rs.KernelSyntaxError, SyntaxError, "no keyword arguments",
                 under='print(r.x, sep=",")')
