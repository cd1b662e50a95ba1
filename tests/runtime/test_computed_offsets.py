"""Grid neighbours at offsets computed when the kernel runs (`c(di, dj)`): semi-Lagrangian
advection bit for bit against NumPy on every target, the boundary rules (periodic axes wrap,
leaving a bounded axis is an error at the line), and the refusals (reads only; the phase rules
as for any key read)."""
import math

import numpy as np
import pytest

import relsim as rs
from tests import advection

pytestmark = pytest.mark.device_sized  # tiny: the cuda target (simulator) runs them too


def test_semi_lagrangian_advection_matches_numpy_bit_for_bit(target):
    nx, ny = 12, 9
    C, advect, copy = advection.build(nx, ny)
    q, u, v = (C.field(f).numpy().copy() for f in ("q", "u", "v"))
    got = advection.run(C, advect, copy, 3, target)
    for _ in range(3):
        q = advection.numpy_step(q, u, v, nx, ny)
    assert got.tobytes() == q.tobytes()


def _bounded(nx=5, ny=4):
    C = rs.Relation("bounded", nx * ny)
    C.set_grid((nx, ny), (True, False))  # x periodic, y bounded
    C.new_field("q", rs.f64).load(np.arange(nx * ny, dtype=np.float64))
    C.new_field("dx", rs.i64)
    C.new_field("dy", rs.i32)  # (any integer type)
    C.new_field("out", rs.f64)
    return C


def test_a_periodic_axis_wraps_and_a_bounded_one_is_checked(target):
    C = _bounded()

    @rs.kernel
    def shift(c):
        c.out = c(c.dx, c.dy).q

    i = np.arange(20) % 5
    j = np.arange(20) // 5
    dx = np.array([-7, 13, 0, -1, 4] * 4)  # wraps either way, any distance
    C.dx.load(dx)
    for bad in (-j - 1, 4 - j):  # one row below the bounded axis, one above
        C.dy.load(bad)
        with pytest.raises(rs.KernelRuntimeError):
            C.foreach(shift, target)
            rs.synchronize()  # (cuda: a launch's error surfaces at the next read or here)
    dy = np.where(j % 2 == 0, 3 - j, -j)  # to the last and to the first row of cells
    C.dy.load(dy)
    C.foreach(shift, target)
    want = ((i + dx) % 5 + 5 * (j + dy)).astype(np.float64)
    assert C.out.numpy().tolist() == want.tolist()


def test_the_error_points_at_the_line():
    C = _bounded()
    C.dy.load(np.full(20, 9))

    @rs.kernel
    def far(c):
        c.out = c(0, c.dy).q

    line = next(n for n, text in enumerate(open(__file__), 1) if "c.out = c(0, c.dy).q" in text)
    with pytest.raises(rs.KernelRuntimeError, match=f"line {line}"):  # (cpu: checked cheaply)
        C.foreach(far, rs.Config(target="cpu"))
    for cfg in (rs.Config(target="interp"), rs.Config(target="cpu", debug=True)):
        with pytest.raises(rs.KernelRuntimeError) as info:  # the line with its caret, the row
            C.foreach(far, cfg)
        assert "c.out = c(0, c.dy).q" in str(info.value) and "^" in str(info.value), \
            str(info.value)
        assert "row 0" in str(info.value), str(info.value)


def test_offsets_must_be_integers():
    C = _bounded()

    @rs.kernel
    def floaty(c):
        c.out = c(0.5 * c.q, 0).q

    with pytest.raises(rs.KernelTypeError, match="integer offsets"):
        C.foreach(floaty, rs.Config(target="interp"))


def test_reads_only_and_the_phase_rules():
    C = _bounded()

    @rs.kernel
    def reads_what_it_writes(c):
        c.q = c(c.dx, 0).q  # another row's q, while each row writes its own

    @rs.kernel
    def reduces_through_it(c):
        c(c.dx, 0).out += 1.0

    @rs.kernel
    def writes_through_it(c):
        c(c.dx, 0).out = 1.0

    with pytest.raises(rs.PhaseError) as info:
        C.foreach(reads_what_it_writes, rs.Config(target="interp"))
    assert str(info.value).count("line") >= 2, str(info.value)  # both sites named
    for k in (reduces_through_it, writes_through_it):
        with pytest.raises(rs.KernelError):
            C.foreach(k, rs.Config(target="interp"))


def test_offsets_from_math_floor_of_a_float(target):
    """The usual way to compute them: int(math.floor(x)), negative values included."""
    C = rs.Relation("line", 7)
    C.set_grid((7,), True)
    C.new_field("x", rs.f64).load(np.array([-2.5, -0.5, 0.0, 0.25, 3.75, 9.0, -13.1]))
    C.new_field("q", rs.f64).load(np.arange(7.0) * 10)
    C.new_field("out", rs.f64)

    @rs.kernel
    def pick(c):
        c.out = c(int(math.floor(c.x))).q

    C.foreach(pick, target)
    want = [((r + math.floor(x)) % 7) * 10.0 for r, x in enumerate(C.x.numpy())]
    assert C.out.numpy().tolist() == want


def test_a_key_from_a_computed_row(target):
    """rs.at(R, i): the key of row i of any relation, read through; a row outside R is an
    error at the line."""
    V = rs.Relation("atV", 5)
    V.new_field("x", rs.f64).load(np.arange(5.0) * 10)
    R = rs.Relation("atR", 4)
    R.new_field("j", rs.i64).load(np.array([4, 0, 2, 2]))
    R.new_field("y", rs.f64)

    @rs.kernel
    def pick(r):
        r.y = rs.at(V, r.j).x + rs.at(V, (r.j + 1) % 5).x

    R.foreach(pick, target)
    assert R.y.numpy().tolist() == [40.0, 10.0, 50.0, 50.0]
    R.j.load(np.array([4, 0, 7, 2]))
    with pytest.raises(rs.KernelRuntimeError):
        R.foreach(pick, target)
        rs.synchronize()  # (cuda: a launch's error surfaces at the next read or here)
    with pytest.raises(rs.KernelCheckError, match=r"row 2 of atR: rs.at\(atV, 7\): row 7 is "
                       r"outside atV \(size 5\)"):
        R.foreach(pick, rs.Config(target=target.target, debug=True))


def test_rs_at_is_read_only():
    V = rs.Relation("atW", 3)
    V.new_field("x", rs.f64)
    V.new_field("j", rs.i64)

    @rs.kernel
    def writes(v):
        rs.at(V, v.j).x = 1.0

    @rs.kernel
    def reads_what_it_writes(v):
        v.x = rs.at(V, v.j).x + 1.0

    with pytest.raises(rs.PhaseError, match="only the kernel's own row may be written"):
        V.foreach(writes, rs.Config(target="interp"))
    with pytest.raises(rs.PhaseError, match="read and written"):
        V.foreach(reads_what_it_writes, rs.Config(target="interp"))
