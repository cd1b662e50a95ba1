"""Kernel language features, on every backend, checked against hand-computed answers."""
import ctypes
import ctypes.util
import math

import numpy as np
import pytest

import relsim as rs
from tests import heat_graph
from tests.conftest import chain_mesh

# the target tests here are tiny: they run on the cuda target too (tests/conftest.py)
pytestmark = pytest.mark.device_sized


def test_design_heat_example_conserves_heat(target):
    V, E = heat_graph.chain(7, T=np.array([1.0, 0, 0, 3.0, 0, 0, 2.0]), k=1.0)
    dt = rs.Global(rs.f64, 1e-1)
    heat = rs.Global(rs.f64, 0.0)
    conduct, update = heat_graph.kernels(dt, heat, weighted=True)
    heat_graph.step(V, E, conduct, update, target, heat, times=50)
    assert abs(heat.value - 6.0) < 1e-13
    assert np.all(np.diff(V.T.numpy()[:3]) != 0)


def test_vectors_matrices_and_math(target):
    R = rs.Relation("R", 5)
    R.new_field("p", rs.vec(3, rs.f64)).load(np.arange(15.0).reshape(5, 3) / 7 + 0.5)
    R.new_field("m", rs.mat(3, 3, rs.f64)).load(
        np.stack([np.eye(3) * (i + 2) + 0.25 for i in range(5)]))
    R.new_field("out", rs.f64)
    R.new_field("v", rs.vec(3, rs.f64))
    R.new_field("inv", rs.mat(3, 3, rs.f64))

    @rs.func
    def sq(x):
        return x * x

    @rs.kernel
    def k(r):
        a = r.p
        b = (1.0, -2.0, 0.5)
        c = rs.cross(a, b)
        r.out = rs.dot(a, c) + rs.norm(a) + sq(a[0]) + math.sqrt(abs(a[1])) + r.m[1, 1] \
            + rs.det(r.m) + max(a[0], a[2], 0.75) + min(a[1], 0.1) + a[2] ** 2
        r.v = r.m @ a + rs.transpose(r.m) @ b
        r.inv = rs.inverse(r.m)

    R.foreach(k, target)
    p, m = R.p.numpy(), R.m.numpy()
    for i in range(5):
        a, b = p[i], np.array([1.0, -2.0, 0.5])
        want = (np.dot(a, np.cross(a, b)) + np.linalg.norm(a) + a[0] ** 2 + math.sqrt(abs(a[1]))
                + m[i, 1, 1] + np.linalg.det(m[i]) + max(a[0], a[2], 0.75) + min(a[1], 0.1)
                + a[2] ** 2)
        assert R.out.numpy()[i] == pytest.approx(want, rel=1e-12)
        np.testing.assert_allclose(R.v.numpy()[i], m[i] @ a + m[i].T @ b, rtol=1e-12)
        np.testing.assert_allclose(R.inv.numpy()[i], np.linalg.inv(m[i]), rtol=1e-12)


def test_control_flow_loops_and_locals(target):
    R = rs.Relation("R", 6)
    R.new_field("n", rs.i32).load(np.arange(6, dtype=np.int32))
    R.new_field("out", rs.i64)
    R.new_field("f", rs.f32)

    @rs.kernel
    def k(r):
        s = 0
        i = 0
        while i < r.n:
            i += 1
            if i == 2:
                continue
            s += i
        for j in range(0, 10, 3):
            if j > r.n:
                break
            s = s * 2 if j % 2 == 0 else s + j
        acc = (0.0, 0.0)
        for x in (1.0, 2.0):
            acc[0] = acc[0] + x
        acc[1] = acc[0] * 2
        r.out = s
        r.f = acc[1] / 4 + r.n // 2 + (r.n % 4)
        if r.n > 4 and not (r.n == 3 or r.n < 0):
            return
        r.out += 1000

    R.foreach(k, target)

    def ref(n):
        s, i = 0, 0
        while i < n:
            i += 1
            if i == 2:
                continue
            s += i
        for j in range(0, 10, 3):
            if j > n:
                break
            s = s * 2 if j % 2 == 0 else s + j
        return s + (0 if n > 4 else 1000)

    assert R.out.numpy().tolist() == [ref(n) for n in range(6)]
    np.testing.assert_array_equal(R.f.numpy(), np.array([1.5 + n // 2 + n % 4 for n in range(6)],
                                                          dtype=np.float32))


def test_key_vectors_groupings_and_subsets(target):
    V = rs.Relation("V", 5)
    T = rs.Relation("T", 3)
    T.new_key_field("v", V, 3).load([[0, 1, 2], [1, 2, 3], [2, 3, 4]])
    V.new_field("x", rs.f64).load(np.array([1.0, 2.0, 4.0, 8.0, 16.0]))
    V.new_field("deg", rs.i64)
    V.new_field("nbsum", rs.f64)
    T.new_field("s", rs.f64)
    T.group_by("v", "tris")

    @rs.kernel
    def tri_sum(t):
        s = 0.0
        for k in t.v:
            s += k.x
        t.s = s + t.v[2].x * 0

    @rs.kernel
    def count(t):
        for i in range(3):
            t.v[i].deg += 1

    @rs.kernel
    def gather(v):
        acc = 0.0
        for t in v.tris:
            acc += t.s
        v.nbsum = acc

    T.foreach(tri_sum, target)
    T.foreach(count, target)
    V.foreach(gather, target)
    assert T.s.numpy().tolist() == [7.0, 14.0, 28.0]
    assert V.deg.numpy().tolist() == [1, 2, 3, 2, 1]
    assert V.nbsum.numpy().tolist() == [7.0, 21.0, 49.0, 42.0, 28.0]

    V.new_field("mark", rs.i32)
    S = V.subset("odd", np.array([1, 3]))

    @rs.kernel
    def mark(v):
        v.mark = 7

    S.foreach(mark, target)
    assert V.mark.numpy().tolist() == [0, 7, 0, 7, 0]


def test_global_reductions(target):
    R = rs.Relation("R", 7)
    vals = np.array([3.0, -1.0, 4.0, -1.0, 5.0, 9.0, 2.0])
    R.new_field("x", rs.f64).load(vals)
    total, prod = rs.Global(rs.f64, 0.0), rs.Global(rs.i64, 1)
    lo, hi = rs.Global(rs.f64, math.inf), rs.Global(rs.f64, -math.inf)
    amin, amax = rs.Global(rs.f64, math.inf), rs.Global(rs.f64, -math.inf)
    anyneg, allpos = rs.Global(rs.bool_, False), rs.Global(rs.bool_, True)
    vsum = rs.Global(rs.vec(2, rs.f64), (0.0, 0.0))

    @rs.kernel
    def red(r):
        total += r.x
        prod *= int(r.x)
        lo = min(lo, r.x)
        rs.reduce_max(hi, r.x)
        rs.reduce_argmin(amin, r.x)
        rs.reduce_argmax(amax, r.x)
        anyneg |= r.x < 0
        allpos &= r.x > 0
        vsum += (r.x, 1.0)

    R.foreach(red, target)
    s = 0.0
    for v in vals:
        s += v
    assert total.value == s
    assert prod.value == 1080
    assert (lo.value, hi.value) == (-1.0, 9.0)
    assert (amin.value, amin.row) == (-1.0, 1)  # first row attaining the minimum
    assert (amax.value, amax.row) == (9.0, 5)
    assert anyneg.value is True and allpos.value is False
    assert vsum.value.tolist() == [s, 7.0]


def test_key_reductions_min_max_and_components(target):
    V, E = chain_mesh(5)
    V.new_field("lo", rs.f64, init=100.0)
    V.new_field("f", rs.vec(2, rs.f64))
    E.new_field("w", rs.f64).load(np.array([4.0, 1.0, 3.0, 2.0]))

    @rs.kernel
    def k(e):
        e.head.lo = min(e.head.lo, e.w)
        rs.reduce_min(e.tail.lo, e.w)
        e.head.f[0] += e.w
        if e.w > 1.5:
            e.tail.f[1] -= e.w

    E.foreach(k, target)
    assert V.lo.numpy().tolist() == [4.0, 1.0, 1.0, 2.0, 2.0]
    assert V.f.numpy().tolist() == [[0, -4.0], [4.0, 0], [1.0, -3.0], [3.0, -2.0], [2.0, 0]]


def test_captured_constants_and_casts(target):
    R = rs.Relation("R", 3)
    R.new_field("a", rs.f32).load(np.array([1.5, 2.5, -3.5], dtype=np.float32))
    R.new_field("b", rs.i32)
    R.new_field("c", rs.f32)
    scale = 2
    offset = np.float32(0.25)

    @rs.kernel
    def k(r):
        r.b = int(r.a * scale)
        r.c = r.a * 0.1 + offset + rs.f32(r.b)

    R.foreach(k, target)
    a = np.array([1.5, 2.5, -3.5], dtype=np.float32)
    assert R.b.numpy().tolist() == [3, 5, -7]
    want = a * np.float32(0.1) + np.float32(0.25) + np.array([3, 5, -7], dtype=np.float32)
    np.testing.assert_array_equal(R.c.numpy(), want)
    assert R.c.numpy().dtype == np.float32


def test_cbrt_is_the_c_librarys_in_both_precisions(target):
    R = rs.Relation("R", 50)
    x = np.random.default_rng(0).uniform(-1e3, 1e3, 50)
    R.new_field("x", rs.f64).load(x)
    R.new_field("xf", rs.f32).load(x.astype(np.float32))
    R.new_field("y", rs.f64)
    R.new_field("yf", rs.f32)

    @rs.kernel
    def k(r):
        r.y = np.cbrt(r.x)
        r.yf = np.cbrt(r.xf)

    R.foreach(k, target)
    # the meaning is the C library's cbrt (NumPy 2.4 computes its own, which can differ in the
    # last bit); single precision goes through double
    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    libm.cbrt.restype, libm.cbrt.argtypes = ctypes.c_double, [ctypes.c_double]
    want = np.array([libm.cbrt(float(v)) for v in x])
    np.testing.assert_array_equal(R.y.numpy(), want)
    want_f = [libm.cbrt(float(v)) for v in x.astype(np.float32)]
    np.testing.assert_array_equal(R.yf.numpy(), np.array(want_f).astype(np.float32))
    assert np.allclose(want, np.cbrt(x), rtol=1e-15, atol=0)


def test_cbrt_of_a_constant_is_the_c_librarys(target):
    # Numba's np.cbrt is pow(x, 1/3), which LLVM folds as a power for a constant: cbrt(-0.0)
    # was +0.0 and cbrt(1e-3) one ulp off (found by the differential soak)
    R = rs.Relation("R", 3)
    R.new_field("z", rs.f64)
    R.new_field("zf", rs.f32)
    R.new_field("a", rs.f64)
    R.new_field("c", rs.f64)

    @rs.kernel
    def k(r):
        r.z = math.cbrt(-0.0)
        r.zf = np.cbrt(rs.f32(-0.0))
        r.a = math.atan2(0.0, math.cbrt(-0.0))  # pi for -0.0, 0 for +0.0
        r.c = math.cbrt(1e-3)

    R.foreach(k, target)
    assert np.all(np.signbit(R.z.numpy())) and np.all(np.signbit(R.zf.numpy()))
    assert np.all(R.a.numpy() == math.pi)
    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    libm.cbrt.restype, libm.cbrt.argtypes = ctypes.c_double, [ctypes.c_double]
    assert np.all(R.c.numpy() == libm.cbrt(1e-3))


def test_round_is_half_to_even_in_the_float_type(target):
    R = rs.Relation("R", 9)
    xs = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.4999999, 1e300, -7.2, np.nan])
    R.new_field("x", rs.f64).load(xs)
    R.new_field("y", rs.f64)
    R.new_field("z", rs.f32)

    @rs.kernel
    def k(r):
        r.y = round(r.x)
        r.z = np.rint(rs.f32(r.x))

    R.foreach(k, target)
    assert np.array_equal(R.y.numpy().view(np.uint64), np.rint(xs).view(np.uint64))
    with np.errstate(over="ignore"):
        want32 = np.rint(xs.astype(np.float32))
    assert np.array_equal(R.z.numpy().view(np.uint32), want32.view(np.uint32))


def test_round_with_digits_is_refused():
    R = rs.Relation("R", 2)
    R.new_field("x", rs.f64)

    @rs.kernel
    def k(r):
        r.x = round(r.x, 2)

    with pytest.raises(rs.KernelTypeError, match=r"round\(\) takes 1 argument"):
        R.foreach(k, rs.Config(target="interp"))


def test_a_grouping_whose_rows_are_in_order_and_then_not(target):
    """A source relation sorted by the key groups into contiguous ranges (`Grouping.in_order`:
    the cpu then binds no rows array); reloading the key so that it is not sorted any more
    gives the regrouped answer."""
    V = rs.Relation("V", 4)
    E = rs.Relation("E", 6)
    E.new_key_field("owner", V).load(np.array([0, 0, 1, 2, 2, 2]))
    E.new_field("w", rs.f64).load(np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0]))
    V.new_field("total", rs.f64)
    E.group_by("owner", "mine")

    @rs.kernel
    def gather(v):
        s = 0.0
        for e in v.mine:
            s = s * 3.0 + e.w  # order-sensitive: the group's rows must come in row order
        v.total = s

    V.foreach(gather, target)
    assert V.mine.in_order
    assert V.total.numpy().tolist() == [5.0, 4.0, 8.0 * 9 + 16.0 * 3 + 32.0, 0.0]
    E.owner.load(np.array([2, 0, 1, 2, 0, 3]))
    V.foreach(gather, target)
    assert not V.mine.in_order
    assert V.total.numpy().tolist() == [2.0 * 3 + 16.0, 4.0, 1.0 * 3 + 8.0, 32.0]


def test_tuple_unpacking(target):
    """`a, b = x, y` evaluates every value first (a swap swaps); `x, y = v` takes a vector's
    or key vector's components; targets may be fields and components; an @rs.func may return
    a tuple."""
    V = rs.Relation("V", 4)
    V.new_field("x", rs.f64).load(np.array([1.0, 2.0, 4.0, 8.0]))
    T = rs.Relation("T", 2)
    T.new_key_field("v", V, 3).load([[0, 1, 2], [1, 2, 3]])
    T.new_field("p", rs.vec(2, rs.f64)).load(np.arange(4.0).reshape(2, 2))
    T.new_field("o", rs.f64)
    T.new_field("q", rs.vec(2, rs.f64))

    @rs.func
    def twice(x):
        return x, 2.0 * x

    @rs.kernel
    def unpacking(t):
        a, b, c = t.v
        x, y = t.p
        y, x = x, y
        u, w = twice(a.x + b.x)
        t.o = x * 100 + y * 10 + c.x + u + w
        t.q[0], t.q[1] = w, u

    T.foreach(unpacking, target)
    assert T.o.numpy().tolist() == [113.0, 346.0]
    assert T.q.numpy().tolist() == [[6.0, 3.0], [12.0, 6.0]]


def _inverse_as_documented(m):
    """rs.inverse's formula in NumPy, operation for operation: the adjugate times 1 / det
    (det by cofactors along the first row)."""
    if m.shape == (2, 2):
        det = m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]
        adj = np.array([[m[1, 1], -m[0, 1]], [-m[1, 0], m[0, 0]]])
    else:
        a = m.ravel()
        c0, c1, c2 = a[4] * a[8] - a[5] * a[7], a[3] * a[8] - a[5] * a[6], a[3] * a[7] - a[4] * a[6]
        det = (a[0] * c0 - a[1] * c1) + a[2] * c2

        def cof(r0, r1, k0, k1):
            return a[r0 * 3 + k0] * a[r1 * 3 + k1] - a[r0 * 3 + k1] * a[r1 * 3 + k0]
        adj = np.array([[cof(1, 2, 1, 2), cof(0, 2, 2, 1), cof(0, 1, 1, 2)],
                        [cof(1, 2, 2, 0), cof(0, 2, 0, 2), cof(0, 1, 2, 0)],
                        [cof(1, 2, 0, 1), cof(0, 2, 1, 0), cof(0, 1, 0, 1)]])
    r = 1.0 / det
    return adj * r


@pytest.mark.device_sized
def test_inverse_is_the_adjugate_times_the_reciprocal_of_the_determinant(target):
    """One division per matrix (as Eigen computes a small inverse), the same bits on every
    target; within rounding of NumPy's LU inverse."""
    rng = np.random.default_rng(7)
    R = rs.Relation("R", 6)
    R.new_field("a", rs.mat(2, 2)).load(rng.standard_normal((6, 2, 2)) + 2.0 * np.eye(2))
    R.new_field("b", rs.mat(3, 3)).load(rng.standard_normal((6, 3, 3)) + 3.0 * np.eye(3))
    R.new_field("ia", rs.mat(2, 2))
    R.new_field("ib", rs.mat(3, 3))

    @rs.kernel
    def invert(r):
        r.ia = rs.inverse(r.a)
        r.ib = rs.inverse(r.b)

    R.foreach(invert, target)
    for field, inv in ((R.a, R.ia), (R.b, R.ib)):
        for m, got in zip(field.numpy(), inv.numpy()):
            assert got.tobytes() == _inverse_as_documented(m).tobytes()
            np.testing.assert_allclose(got, np.linalg.inv(m), rtol=1e-12, atol=1e-14)
