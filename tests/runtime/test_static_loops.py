"""`for v in rs.static(...)`: loops unrolled while compiling (`runtime/analysis/static.py`), so grid
offsets may come from a loop. Every target gives the bits of interp and of the hand-written
unrolled kernel; the stencil analysis and the phase rules see the unrolled accesses."""
import numpy as np
import pytest

import relsim as rs
from relsim.runtime.pipeline import analyse

# the target tests here are tiny: they run on the cuda target too (tests/conftest.py)
pytestmark = pytest.mark.device_sized

R1 = 1  # captured: the box filter's radius
DYS = np.array([-1, 1])  # a captured NumPy array: its items are np.int64 constants
WEIGHTS = ((0.25, -1, 0), (0.5, 0, 0), (0.25, 1, 0), (0.125, 0, 1), (-0.125, 0, -1))


def _grid(shape, periodic, seed=3):
    n = int(np.prod(shape))
    C = rs.Relation("C", n)
    C.set_grid(shape, periodic)
    C.new_field("u", rs.f64).load(np.random.default_rng(seed).standard_normal(n))
    C.new_field("a", rs.f64, init=0.0)
    C.new_field("b", rs.f64, init=0.0)
    return C


def _bits(x):
    return np.ascontiguousarray(x).view(np.uint64)


@rs.kernel
def box_static(c):
    s = 0.0
    for dy in rs.static((-1, 0, 1)):
        for dx in rs.static(range(-R1, R1 + 1)):
            s += c(dx, dy).u
    c.a = s / 9.0


@rs.kernel
def box_by_hand(c):
    s = 0.0
    s += c(-1, -1).u
    s += c(0, -1).u
    s += c(1, -1).u
    s += c(-1, 0).u
    s += c(0, 0).u
    s += c(1, 0).u
    s += c(-1, 1).u
    s += c(0, 1).u
    s += c(1, 1).u
    c.b = s / 9.0


def test_box_filter_equals_the_hand_written_stencil(target):
    C = _grid((7, 5), True)
    C.foreach(box_static, target)
    C.foreach(box_by_hand, target)
    assert np.array_equal(_bits(C.a.numpy()), _bits(C.b.numpy()))
    u = C.u.numpy().reshape(5, 7)
    want = sum(np.roll(np.roll(u, -dy, 0), -dx, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    assert np.allclose(C.a.numpy(), want.reshape(-1) / 9.0)
    ref = _grid((7, 5), True)
    ref.foreach(box_static, rs.Config(target="interp"))
    assert np.array_equal(_bits(C.a.numpy()), _bits(ref.a.numpy()))


@rs.func
def tap(c, w, dx, dy):
    return w * c(dx, dy).u  # static loop variables stay constants in a helper


@rs.kernel
def weighted(c):
    s = 0.0
    for w, dx, dy in rs.static(WEIGHTS):  # items unpacked
        s += tap(c, w, dx, dy)
    c.a = s
    for k in rs.static(range(3)):  # nested and triangular: j < k
        for j in rs.static(range(k)):
            c(k - j, 0).b += c.u * (j + 1)


def test_unpacking_helpers_nesting_and_reductions_through_offsets(target):
    out = {}
    for t in ("interp", target.target):
        C = _grid((6, 4), True)
        cfg = rs.Config(target=t, parallel_threshold=target.parallel_threshold)
        C.foreach(weighted, cfg)
        out[t] = (C.a.numpy().copy(), C.b.numpy().copy())
    for a, b in zip(out["interp"], out[target.target]):
        assert np.array_equal(_bits(a), _bits(b))
    u = _grid((6, 4), True).u.numpy().reshape(4, 6)
    want_a = sum(w * np.roll(np.roll(u, -dy, 0), -dx, 1) for w, dx, dy in WEIGHTS)
    # k=1: j=0 -> offset 1 (x1); k=2: j=0 -> offset 2 (x1), j=1 -> offset 1 (x2)
    want_b = 3 * np.roll(u, 1, 1) + np.roll(u, 2, 1)
    assert np.allclose(out["interp"][0], want_a.reshape(-1))
    assert np.allclose(out["interp"][1], want_b.reshape(-1))


@rs.kernel
def wide(c):
    s = 0.0
    for dx in rs.static(range(-2, 3)):
        for dy in rs.static(DYS):
            s += c(dx, dy).u
    c.a = s


def test_stencil_width_and_bounded_axes_see_the_unrolled_offsets(target):
    C = _grid((8, 5), (True, False))
    stencil = analyse(wide, C).stencil
    assert sorted(o for o, _ in stencil) == sorted((dx, dy) for dx in range(-2, 3)
                                                    for dy in (-1, 1))
    line = {loc.line for _, loc in stencil}
    assert len(line) == 1 and "s += c(dx, dy).u" in stencil[0][1].source_line
    with pytest.raises(rs.KernelRuntimeError, match=r"neighbour \(-2, -1\) of row 0 .* interior"):
        C.foreach(wide, target)
    rows = np.arange(C.size)
    inner = C.subset("inner", rows[(rows // 8 >= 1) & (rows // 8 <= 3)])
    inner.foreach(wide, target)
    u = C.u.numpy().reshape(5, 8)
    want = sum(np.roll(u[1 + dy:4 + dy], -dx, 1) for dx in range(-2, 3) for dy in (-1, 1))
    assert np.allclose(C.a.numpy().reshape(5, 8)[1:4], want)
    assert not C.a.numpy().reshape(5, 8)[[0, 4]].any()


@rs.kernel
def first_larger(c):
    for dx in rs.static((-1, 1, 2)):
        if c(dx, 0).u > c.u:
            c.a = dx
            return  # ends the row, as in Python
    c.a = 0.0


def test_return_in_a_static_loop_ends_the_row(target):
    C, ref = _grid((6, 3), True), _grid((6, 3), True)
    C.foreach(first_larger, target)
    ref.foreach(first_larger, rs.Config(target="interp"))
    assert np.array_equal(_bits(C.a.numpy()), _bits(ref.a.numpy()))
    u = C.u.numpy().reshape(3, 6)
    want = np.zeros_like(u)
    for dx in (2, 1, -1):  # the first larger neighbour wins: fill in reverse order
        want = np.where(np.roll(u, -dx, 1) > u, dx, want)
    assert np.array_equal(C.a.numpy(), want.reshape(-1))


def test_loop_variables_are_weak_constants():
    """Each copy binds the item as a literal would be: `x * k` keeps an f32 x's type."""
    R = rs.Relation("R", 3)
    R.new_field("x", rs.f32).load(np.array([1.5, 2.5, -3.0], dtype=np.float32))
    R.new_field("y", rs.f32)

    @rs.kernel
    def k(r):
        acc = r.x * 0
        for f in rs.static((0.5, 2, 3)):
            acc = acc + r.x * f
        r.y = acc

    a = analyse(k, R)
    assert a.locals["acc"] == rs.f32
    R.foreach(k, rs.Config(target="interp"))
    x = np.array([1.5, 2.5, -3.0], dtype=np.float32)
    want = ((x * np.float32(0) + x * np.float32(0.5)) + x * np.float32(2)) + x * np.float32(3)
    assert np.array_equal(R.y.numpy(), want)


def _indices(a):
    """Every index expression of an analysed kernel's typed IR."""
    from relsim.runtime import ir
    return [i for s in ir.walk_stmts(a.body) for c in s.children() if isinstance(c, ir.Expr)
            for e in c.walk() if isinstance(e, ir.Index) for i in e.index]


@rs.kernel
def scatter_static(t):
    M = rs.mat(2, 2)((t.w, 2.0 * t.w), (3.0 * t.w, 4.0 * t.w))
    for k in rs.static(range(4)):
        t.v[2 * (k // 2) + k % 2].a += M[k // 2, k % 2]  # (the same as t.v[k], M[k // 2, ...])


@rs.kernel
def scatter_by_hand(t):
    M = rs.mat(2, 2)((t.w, 2.0 * t.w), (3.0 * t.w, 4.0 * t.w))
    t.v[0].b += M[0, 0]
    t.v[1].b += M[0, 1]
    t.v[2].b += M[1, 0]
    t.v[3].b += M[1, 1]


def test_indices_computed_from_static_loop_variables_are_constants(target):
    """`M[k // 2, k % 2]` and `t.v[2 * i]` in a static loop index at fixed positions: a reduction
    through `t.v[2 * ...]` is a fixed key path (it was refused), and the matrix entry is read
    directly (it was a tuple of every entry indexed at run time: miniFE's element kernel, 64 of
    them, compiled 3x slower)."""
    from relsim.runtime import ir
    V, T = rs.Relation("V", 5), rs.Relation("T", 3)
    T.new_key_field("v", V, 4).load([[0, 1, 2, 3], [1, 2, 3, 4], [4, 0, 2, 1]])
    T.new_field("w", rs.f64).load([1.0, -0.5, 0.25])
    V.new_field("a", rs.f64)
    V.new_field("b", rs.f64)
    T.foreach(scatter_static, target)
    T.foreach(scatter_by_hand, target)
    assert np.array_equal(_bits(V.a.numpy()), _bits(V.b.numpy()))
    assert V.a.numpy()[4] == 4.0 * -0.5 + 1.0 * 0.25  # rows 1 (its v[3]) and 2 (its v[0])
    assert all(isinstance(i, ir.Const) for i in _indices(analyse(scatter_static, T)))


def test_static_outside_a_kernel_is_the_identity():
    r = range(3)
    assert rs.static(r) is r
    t = (-1, 0, 1)
    assert rs.static(t) is t
