"""Vector and matrix values in kernels: `rs.vec(n[, t])(...)`, `rs.mat(n, m[, t])(rows...)`,
`rs.eye(n[, t])`, and a matrix's column `m[:, j]` / row `m[i, :]`; every target gives
interp's bits."""
import numpy as np
import pytest

import relsim as rs
from relsim.runtime.pipeline import analyse

# the target tests here are tiny: they run on the cuda target too (tests/conftest.py)
pytestmark = pytest.mark.device_sized

N = 3  # captured: a compile-time length
V3 = rs.vec(3)  # a captured constructor without element type
M = np.arange(36.0).reshape(4, 3, 3) / 7 - 2


def _rel():
    R = rs.Relation("R", 4)
    R.new_field("x", rs.f32).load(np.array([0.5, -1.25, 3.0, 7.5], dtype=np.float32))
    R.new_field("y", rs.f64).load(np.array([1.0, 2.0, -0.5, 0.1]))
    R.new_field("j", rs.i64).load(np.array([0, 2, -1, 1]))
    R.new_field("m", rs.mat(3, 3, rs.f64)).load(M)
    for name, t in (("v32", rs.vec(3, rs.f32)), ("v64", rs.vec(3, rs.f64)),
                    ("col", rs.vec(3, rs.f64)), ("row", rs.vec(3, rs.f64)),
                    ("colj", rs.vec(3, rs.f64)), ("mm", rs.mat(2, 3, rs.f32)),
                    ("me", rs.mat(3, 3, rs.f64)), ("e32", rs.mat(2, 2, rs.f32))):
        R.new_field(name, t)
    return R


@rs.kernel
def build(r):
    a = rs.vec(3)(r.x, r.x * 2, 1)  # typed as the tuple: vec3[f32]
    b = rs.vec(N, rs.f64)(r.x, r.x, r.x)  # converted: vec3[f64]
    c = V3(0.5)  # one component for all three (a weak literal: f64)
    d = rs.vec(3, rs.f32)(b)  # a vector converted
    r.v32 = a + d
    r.v64 = b + c
    r.mm = rs.mat(2, 3)((r.x, 0, 1), a)  # rows: a tuple and a vector
    r.me = r.m @ rs.eye(3) + rs.eye(N) * r.y
    r.e32 = rs.eye(2, rs.f32) * r.x
    r.col = r.m[:, 1]
    r.colj = r.m[:, r.j] + r.m[r.j, :] * 0.5
    r.row = r.m[2, :]


def test_constructors_eye_and_columns(target):
    R, ref = _rel(), _rel()
    R.foreach(build, target)
    ref.foreach(build, rs.Config(target="interp"))
    for f in ("v32", "v64", "mm", "me", "e32", "col", "colj", "row"):
        a, b = getattr(R, f).numpy(), getattr(ref, f).numpy()
        assert np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")), f
    x = np.array([0.5, -1.25, 3.0, 7.5], dtype=np.float32)
    y = np.array([1.0, 2.0, -0.5, 0.1])
    j = np.array([0, 2, -1, 1])
    a = np.stack([x, x * 2, np.ones(4, np.float32)], 1)
    assert np.array_equal(R.v32.numpy(), a + x[:, None])
    assert np.array_equal(R.v64.numpy(), np.repeat(x.astype(np.float64)[:, None], 3, 1) + 0.5)
    assert np.array_equal(R.mm.numpy(), np.stack([np.stack([x, 0 * x, 0 * x + 1], 1), a], 1))
    assert np.array_equal(R.me.numpy(), M + np.eye(3) * y[:, None, None])
    assert np.array_equal(R.e32.numpy(), np.eye(2, dtype=np.float32) * x[:, None, None])
    rows = np.arange(4)
    assert np.array_equal(R.col.numpy(), M[:, :, 1])
    assert np.array_equal(R.row.numpy(), M[:, 2, :])
    assert np.array_equal(R.colj.numpy(), M[rows, :, j] + M[rows, j, :] * 0.5)


def test_element_types_given_or_inferred():
    loc = analyse(build, _rel()).locals
    assert loc["a"] == rs.vec(3, rs.f32)
    assert loc["b"] == rs.vec(3, rs.f64)
    assert loc["c"] == rs.vec(3, rs.f64)
    assert loc["d"] == rs.vec(3, rs.f32)

    R = rs.Relation("R", 2)
    R.new_field("k", rs.i32).load(np.array([1, 2], dtype=np.int32))
    R.new_field("out", rs.f64)

    @rs.kernel
    def ints(r):
        p = rs.vec(2)(r.k, 3)  # i32 (the literal adopts it)
        q = rs.mat(2, 2)((1, 0), (0, 1))  # i64, as the nested tuple
        s = rs.eye(2)  # f64, as np.eye
        t = rs.mat(1, 2, rs.f32)(p)  # one row, converted
        r.out = p[0] + q[1, 1] + s[0, 0] + t[0, 1]

    loc = analyse(ints, R).locals
    assert loc["p"] == rs.vec(2, rs.i32)
    assert loc["q"] == rs.mat(2, 2, rs.i64)
    assert loc["s"] == rs.mat(2, 2, rs.f64)
    assert loc["t"] == rs.mat(1, 2, rs.f32)
    R.foreach(ints, rs.Config(target="interp"))
    assert R.out.numpy().tolist() == [1 + 1 + 1 + 3, 2 + 1 + 1 + 3]


def test_a_run_time_column_index_is_checked(target):
    R = _rel()
    R.j.load(np.array([0, 3, 0, 0]))

    @rs.kernel
    def bad(r):
        r.col = r.m[:, r.j]

    with pytest.raises(rs.KernelRuntimeError, match="index"):
        R.foreach(bad, target)
        rs.synchronize()  # (cuda: a launch's error surfaces at the next read or here)


TABLE = rs.Global(rs.mat(4, 3), np.arange(12.0).reshape(4, 3) / 8 - 0.7, name="table")


def test_run_time_indices_into_a_matrix_global(target):
    """`TABLE[r.j, 1]`, `TABLE[r.j]` (a row) and `TABLE[:, r.j]` read the addressed entries
    (each a load from the Global's array) and give interp's bits; an index outside is
    checked as for a local matrix."""
    R = _rel()
    R.j.load(np.array([0, 3, -1, 2]))

    @rs.kernel
    def gather(r):
        r.y = TABLE[r.j, 1] + TABLE[r.j + 0, r.j % 3]
        r.row = TABLE[r.j]
        r.col = rs.vec(3)(TABLE[:, r.j % 3][0], TABLE[:, r.j % 3][1], TABLE[:, r.j % 3][3])

    R.foreach(gather, rs.Config(target="interp"))
    want = {n: R.field(n).numpy().copy() for n in ("y", "row", "col")}
    t = TABLE.value
    j = np.array([0, 3, -1, 2])
    assert np.array_equal(want["y"], t[j, 1] + t[j, j % 3])
    assert np.array_equal(want["row"], t[j])
    R.y.fill(0.0)
    R.row.fill(0.0)
    R.foreach(gather, target)
    for n, w in want.items():
        assert np.array_equal(R.field(n).numpy(), w), n
    R.j.load(np.array([0, 4, 0, 0]))
    with pytest.raises(rs.KernelRuntimeError, match="index"):
        R.foreach(gather, target)
        rs.synchronize()


def test_outside_a_kernel():
    assert np.array_equal(rs.eye(3), np.eye(3)) and rs.eye(3).dtype == np.float64
    assert rs.eye(2, rs.f32).dtype == np.float32
    with pytest.raises(ValueError, match="positive int"):
        rs.eye(0)
    # without an element type a vector/matrix type holds f64 (fields, Globals)
    assert rs.vec(3) == rs.vec(3, rs.f64) and hash(rs.vec(3)) == hash(rs.vec(3, rs.f64))
    assert rs.mat(2, 2) == rs.mat(2, 2, rs.f64) and repr(rs.mat(2, 2)) == "mat2x2[f64]"
    assert rs.Global(rs.vec(2), (1, 2)).value.dtype == np.float64
    with pytest.raises(ValueError, match="positive int"):
        rs.vec(True)
