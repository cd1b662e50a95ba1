"""Index checks left out where the kernel's IR bounds the index (`analysis/int_ranges.py`): a
static loop's variable and affine expressions of it read a table without a check; every other
run-time index keeps its check, and every target gives interp's bits."""
import numpy as np
import pytest

import relsim as rs
from relsim.runtime import execute, ir
from relsim.runtime.analysis.int_ranges import Ranges
from relsim.runtime.pipeline import analyse

pytestmark = pytest.mark.device_sized

TABLE = rs.Global(rs.mat(8, 2), np.arange(16.0).reshape(8, 2) / 3.0, name="int_ranges_table")


@rs.func
def row_of(g):
    k = 2 * g  # rows 0, 2, 4, 6 and the next ones: 1 .. 7
    return TABLE[k, 0] + TABLE[k + 1, 1]


@rs.kernel
def table_sum(r):
    s = 0.0
    for g in range(4):
        s += row_of(g) * r.x
    r.y = s


def _relation():
    R = rs.Relation("R", 5)
    R.new_field("x", rs.f64).load(np.linspace(-1.0, 1.5, 5))
    R.new_field("y", rs.f64)
    R.new_field("j", rs.i64).load(np.array([0, 3, 7, 1, 2]))
    return R


def _locals(kernel, R):
    a = analyse(kernel, R)
    ranges = Ranges(a.body)
    found = {}
    for s in ir.walk_stmts(a.body):
        if isinstance(s, ir.Assign):
            found.setdefault(s.name, ranges.of(ir.Local(s.loc, s.name, type=s.value.type)))
    return found


def test_static_loop_variables_and_affine_expressions_of_them_have_ranges():
    found = _locals(table_sum, _relation())
    k = [r for name, r in found.items() if name.endswith("k")]
    assert k == [(0, 6)]  # 2 * g, g in range(4)
    assert found["s"] is None  # a float


def test_a_table_read_in_a_static_loop_has_no_check_and_the_same_values(target):
    R = _relation()
    R.foreach(table_sum, rs.Config(target="interp"))
    want = R.y.numpy(copy=True)
    R.y.fill(0.0)
    R.foreach(table_sum, target)
    np.testing.assert_array_equal(R.y.numpy(), want)
    t = TABLE.value
    np.testing.assert_allclose(want, R.x.numpy() * sum(t[2 * g, 0] + t[2 * g + 1, 1]
                                                       for g in range(4)), rtol=1e-15)
    if target.target == "cpu":
        assert "_err[0] =" not in execute.executable(table_sum, R, target).source


@rs.kernel
def reused_name(r):
    s = 0.0
    for i in range(2):  # a static loop binds i ...
        s += TABLE[i, 0]
    for i in range(r.j):  # ... and a run-time one too: TABLE[i] must stay checked
        s += TABLE[i, 1]
    r.y = s


@rs.kernel
def counted(r):
    s = 0.0
    i = 0
    for _g in range(3):
        i = i + 3  # its own earlier value: no range
        s += TABLE[i, 0]
    r.y = s


@pytest.mark.parametrize("kernel", [reused_name, counted])
def test_an_index_the_ir_does_not_bound_stays_checked(target, kernel):
    R = _relation()
    if kernel is reused_name:  # rows 0..j - 1 of the table: j = 9 leaves it
        R.j.load(np.array([0, 3, 8, 1, 2]))
        R.foreach(kernel, target)
        t = TABLE.value
        want = [t[0, 0] + t[1, 0] + t[:j, 1].sum() for j in (0, 3, 8, 1, 2)]
        np.testing.assert_allclose(R.y.numpy(), want, rtol=1e-15)
        R.j.load(np.array([0, 3, 9, 1, 2]))
    with pytest.raises(rs.KernelRuntimeError, match="index"):
        R.foreach(kernel, target)
        R.y.numpy()  # (cuda: raised when the queued launch is waited for)


def test_ranges_of_expressions():
    loc = ir.NOLOC
    i64 = rs.i64
    g = ir.Local(loc, "g", type=i64)
    body = (ir.ForRange(loc, "g", ir.Const(loc, 1), ir.Const(loc, 7), ir.Const(loc, 2), ()),
            ir.Assign(loc, "a", ir.BinOp(loc, "-", ir.Const(loc, 10), ir.BinOp(
                loc, "*", g, ir.Const(loc, -3), type=i64), type=i64)),
            ir.Assign(loc, "b", ir.UnaryOp(loc, "-", g, type=i64)),
            ir.Assign(loc, "c", ir.BinOp(loc, "*", g, ir.Const(loc, 2 ** 30), type=i64)),
            ir.ForRange(loc, "d", ir.Const(loc, 0), ir.Local(loc, "n", type=i64),
                        ir.Const(loc, 1), ()))
    r = Ranges(body)
    assert r.of(g) == (1, 5)  # 1, 3, 5
    assert r.of(ir.Local(loc, "a", type=i64)) == (13, 25)
    assert r.of(ir.Local(loc, "b", type=i64)) == (-5, -1)
    assert r.of(ir.Local(loc, "c", type=i64)) is None  # past int32: could wrap there
    assert r.of(ir.Local(loc, "d", type=i64)) is None  # a run-time range
    assert r.of(ir.Local(loc, "n", type=i64)) is None  # never bound here
    assert r.of(ir.Const(loc, True)) is None
