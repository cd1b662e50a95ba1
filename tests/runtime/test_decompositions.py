"""rs.eigh, rs.svd, rs.polar of 2x2 and 3x3 matrices (runtime/decompositions.py): accurate
against NumPy, in the documented convention (rotations, a negative last singular value for an
inverted matrix), the same bits on every target, tuple results unpacked or indexed, and
refusals at the line."""
import numpy as np
import pytest

import relsim as rs
from relsim.runtime import decompositions
from relsim.runtime.numpy_algebra import NumpyAlgebra
from tests.fails.helpers import expect_error, marked_line

EPS = {np.float64: 2.2e-16, np.float32: 1.2e-7}


def _family(n, rng, count=400):
    """Random matrices, and the hard ones: near rank-deficient, repeated and nearly repeated
    singular values, diagonal, small integers, zero, huge and tiny scales."""
    out = [np.zeros((n, n)), np.eye(n), -np.eye(n), np.diag(np.arange(1.0, n + 1)),
           np.ones((n, n)), np.outer(np.arange(1.0, n + 1), np.ones(n))]
    for k in range(count):
        m = rng.standard_normal((n, n))
        kind = k % 6
        if kind == 1:
            m = m @ np.diag([1.0, 1e-5, 1e-10][:n]) @ rng.standard_normal((n, n))
        elif kind == 2:
            q, _ = np.linalg.qr(rng.standard_normal((n, n)))
            m = q @ np.diag([1.0, 1.0 + 1e-9, 2.0][:n]) @ q.T
        elif kind == 3:
            m = np.diag(rng.standard_normal(n))
        elif kind == 4:
            m = rng.integers(-2, 3, (n, n)).astype(float)
        elif kind == 5:
            m = m * 10.0 ** rng.integers(-60, 60)
        out.append(m)
    return out


def _run(name, m, dtype=np.float64):
    """The decomposition as every target computes it (the oracle's algebra), split in parts."""
    et = rs.f64 if dtype == np.float64 else rs.f32
    n = m.shape[0]
    flat = getattr(decompositions, name)(NumpyAlgebra(), [dtype(x) for x in m.ravel()], n, et)
    flat = np.array(flat, dtype=np.float64)
    shapes = {"eigh": [(n,), (n, n)], "svd": [(n, n), (n,), (n, n)], "polar": [(n, n), (n, n)]}
    parts, at = [], 0
    for shape in shapes[name]:
        size = int(np.prod(shape))
        parts.append(flat[at:at + size].reshape(shape))
        at += size
    return parts


def _is_rotation(q, tol):
    n = q.shape[0]
    return np.abs(q.T @ q - np.eye(n)).max() <= tol and abs(np.linalg.det(q) - 1.0) <= tol


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_accurate_against_numpy_in_the_documented_convention(n, dtype):
    rng = np.random.default_rng(7 + n)
    eps = EPS[dtype]
    count = 400 if dtype == np.float64 else 100
    for m in _family(n, rng, count):
        if dtype == np.float32 and not 1e-18 < np.abs(m).max() < 1e18:
            continue
        m = m.astype(dtype).astype(np.float64)  # the matrix the f32 decomposition sees
        scale = max(np.abs(m).max(), 1e-300)
        sym = np.tril(m) + np.tril(m, -1).T  # eigh reads the lower triangle
        w, q = _run("eigh", m, dtype)
        assert np.abs(w - np.linalg.eigvalsh(sym)).max() <= 40 * eps * scale
        assert np.all(np.diff(w) >= 0)
        assert np.abs(sym @ q - q * w).max() <= 40 * eps * scale
        assert _is_rotation(q, 40 * eps)
        u, s, v = _run("svd", m, dtype)
        assert np.abs(np.abs(s) - np.linalg.svd(m, compute_uv=False)).max() <= 40 * eps * scale
        assert np.abs(u @ np.diag(s) @ v.T - m).max() <= 40 * eps * scale
        assert _is_rotation(u, 40 * eps) and _is_rotation(v, 40 * eps)
        assert s[0] >= s[n - 2] >= 0 and s[n - 2] >= abs(s[-1]) - 40 * eps * scale
        if abs(np.linalg.det(m)) > 1e-6 * scale ** n:
            assert np.sign(s[-1]) == np.sign(np.linalg.det(m))  # negative when inverted
        else:
            assert s[:-1].min() >= 0
        r, p = _run("polar", m, dtype)
        assert np.abs(r @ p - m).max() <= 40 * eps * scale
        assert _is_rotation(r, 40 * eps)
        assert np.array_equal(p, p.T)


def test_an_inverted_matrix_keeps_rotations():
    f = np.diag([2.0, 1.0, -0.5])  # a tet squashed through itself
    u, s, v = _run("svd", f)
    assert s.tolist() == [2.0, 1.0, -0.5]
    assert _is_rotation(u, 1e-15) and _is_rotation(v, 1e-15)
    r, p = _run("polar", f)
    assert np.array_equal(r, np.eye(3)) and np.array_equal(p, f)


def _matrices(k=7):
    R = rs.Relation("M", k)
    rng = np.random.default_rng(3)
    f = rng.standard_normal((k, 3, 3))
    f[0] = 0.0  # the zero matrix, a rank-one one, an inverted one
    f[1] = np.outer([1.0, 2.0, 3.0], [0.5, -1.0, 2.0])
    f[2] = np.diag([1.0, 2.0, -3.0])
    R.new_field("F", rs.mat(3, 3)).load(f)
    R.new_field("G", rs.mat(2, 2, rs.f32)).load(f[:, :2, :2])
    for name, t in [("U", rs.mat(3, 3)), ("S", rs.vec(3)), ("V", rs.mat(3, 3)),
                    ("R", rs.mat(3, 3)), ("P", rs.mat(3, 3)), ("w", rs.vec(3)),
                    ("Q", rs.mat(3, 3)), ("s2", rs.vec(2, rs.f32)), ("w2", rs.vec(2)),
                    ("P2", rs.mat(2, 2, rs.f32))]:
        R.new_field(name, t)
    return R


@rs.kernel
def decompose(m):
    U, S, V = rs.svd(m.F)
    m.U = U
    m.S = S
    m.V = V
    both = rs.eigh(m.F + rs.transpose(m.F))
    m.w = both[0]
    m.Q = both[1]
    m.s2 = rs.svd(m.G)[1]
    m.w2 = rs.eigh(rs.mat(2, 2)((1.0, 2.0), (2.0, m.F[0, 0])))[0]
    m.P2 = rs.polar(m.G)[-1]


OUTPUTS = ("U", "S", "V", "w", "Q", "s2", "w2", "P2")  # (3x3 polar: svd's operations)


@rs.kernel
def svd_only(m):
    U, S, V = rs.svd(m.F)
    m.U = U
    m.S = S
    m.R, m.P = rs.polar(m.F)


@pytest.mark.device_sized
def test_the_same_bits_on_every_target(target):
    want = _matrices()
    want.foreach(decompose, rs.Config(target="interp"))
    got = _matrices()
    got.foreach(decompose, target)
    for name in OUTPUTS:
        a, b = got.field(name).data, want.field(name).data
        assert a.tobytes() == b.tobytes(), name
    f, u, s, v = want.F.data, want.U.data, want.S.data, want.V.data
    assert np.abs(np.einsum("rij,rj,rkj->rik", u, s, v) - f).max() < 1e-14
    assert want.S.data[2].tolist() == [3.0, 2.0, -1.0]  # diag(1, 2, -3): inverted


def test_no_nan_origin_report_on_singular_matrices():
    R = _matrices()
    R.foreach(svd_only, rs.Config(target="cpu", debug=True))
    assert np.abs(np.einsum("rij,rjk->rik", R.R.data, R.P.data) - R.F.data).max() < 1e-14
    assert np.isfinite(R.U.data).all() and np.all(R.S.data[0] == 0.0)


def test_host_functions_follow_the_kernel_convention():
    R = _matrices()
    R.foreach(decompose, rs.Config(target="cpu"))
    for k in range(R.size):
        u, s, v = rs.svd(R.F.data[k])
        assert np.allclose(s, R.S.data[k], atol=1e-12)
        assert np.allclose(u @ np.diag(s) @ v.T, R.F.data[k], atol=1e-12)
        assert _is_rotation(u, 1e-12) and _is_rotation(v, 1e-12)
        r, p = rs.polar(R.F.data[k])
        if s[1] - abs(s[2]) > 1e-6:  # R is unique when the smallest two |S| differ
            assert np.allclose(r, R.U.data[k] @ R.V.data[k].T, atol=1e-9)
        assert np.allclose(r @ p, R.F.data[k], atol=1e-12) and _is_rotation(r, 1e-12)
        w, q = rs.eigh(R.F.data[k] + R.F.data[k].T)
        assert np.allclose(w, R.w.data[k], atol=1e-12) and _is_rotation(q, 1e-12)


def test_refusals():
    R = _matrices()
    R.new_field("x", rs.vec(3))

    @rs.kernel
    def of_a_vector(m):
        m.x = rs.svd(m.x)[1]  # <- here

    expect_error(R, of_a_vector, rs.KernelTypeError, TypeError, "needs a 2x2 or 3x3 matrix",
                 under="rs.svd(m.x)")

    @rs.kernel
    def stored_whole(m):
        m.U = rs.svd(m.F)  # <- here

    expect_error(R, stored_whole, rs.KernelTypeError, TypeError, "tuple(mat3x3[f64]")

    @rs.kernel
    def two_targets(m):
        U, S = rs.svd(m.F)  # <- here

    expect_error(R, two_targets, rs.KernelTypeError, TypeError,
                 "cannot unpack a value of 3 values")

    @rs.kernel
    def run_time_index(m):
        k = 1
        if m.F[0, 0] > 0.0:
            k = 2
        m.V = rs.svd(m.F)[k]  # <- here

    expect_error(R, run_time_index, rs.KernelTypeError, TypeError, "one constant index",
                 under="rs.svd(m.F)[k]")

    @rs.kernel
    def arithmetic(m):
        m.U = rs.polar(m.F) * 2.0  # <- here

    expect_error(R, arithmetic, rs.KernelTypeError, TypeError, "tuple(")


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_debug_mode_names_a_decomposition_that_overflows(target):
    R = rs.Relation("M", 3)
    R.new_field("F", rs.mat(2, 2)).load(np.array([np.eye(2), np.eye(2) * 1e200, np.eye(2)]))
    R.new_field("S", rs.vec(2))

    @rs.kernel
    def singular_values(m):
        m.S = rs.svd(m.F)[1]  # <- here

    with pytest.raises(rs.KernelCheckError) as info:
        R.foreach(singular_values, rs.Config(target=target, debug=True))
    err = info.value
    assert "rs.svd() gave" in str(err) and "from a finite matrix" in str(err)
    assert err.row == 1 and err.loc.line == marked_line(singular_values)
