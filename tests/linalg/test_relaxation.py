"""linalg.SSOR and linalg.Chebyshev as cg's preconditioners, and the smoothers Multigrid may
use: a sweep is the multicolour Gauss-Seidel / Chebyshev recurrence written out in NumPy, bit
for bit; each preconditioner is a symmetric positive definite operator (what cg needs), cuts
cg's iterations, gives the same bits on every target, and refuses bad use with names."""
import functools

import numpy as np
import pytest
import scipy.sparse as sp

import relsim as rs
from relsim import linalg
from relsim.linalg import aggregation, smoothers
from tests.conftest import configured


def _system(n=40, seed=3):
    """A random weighted graph Laplacian plus a positive diagonal (SPD, many colours) as a
    SparseMatrix over a relation V with fields b, x."""
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, 4 * n)
    j = (i + rng.integers(1, 6, 4 * n)) % n
    w = rng.uniform(0.5, 2.0, 4 * n)
    W = sp.coo_matrix((w, (i, j)), shape=(n, n)).tocsr()
    W = W + W.T
    L = sp.diags(np.asarray(W.sum(axis=1)).ravel() + rng.uniform(0.1, 1.0, n)) - W
    V = rs.Relation("V", n)
    V.new_field("b", rs.f64).load(rng.standard_normal(n))
    V.new_field("x", rs.f64)
    return linalg.SparseMatrix.from_scipy(V, L.tocsr(), name="L"), V


def _dense(M, V):
    """The preconditioner M as a dense matrix, column by column."""
    r, z = V.new_field("r_", rs.f64), V.new_field("z_", rs.f64)
    out = np.zeros((V.size, V.size))
    for i in range(V.size):
        e = np.zeros(V.size)
        e[i] = 1.0
        r.load(e)
        M.apply(r, z)
        out[:, i] = z.numpy()
    return out


def test_ssor_is_multicolour_sor_forward_then_backward_bit_for_bit():
    A, V = _system()
    M = linalg.SSOR(A, omega=1.3)
    assert len(M.colours) >= 3
    L = A.to_scipy()
    d = L.diagonal()
    b = V.b.numpy()
    x = np.zeros(V.size)
    for colours in (M.colours, M.colours[::-1]):  # forward, then backward
        for colour in colours:
            new = x.copy()
            for i in colour.rows:  # rows of one colour never read each other
                s = b[i]
                for k in range(L.indptr[i], L.indptr[i + 1]):
                    if L.indices[k] != i:
                        s -= L.data[k] * x[L.indices[k]]
                new[i] = x[i] + 1.3 * ((1.0 / d[i]) * s - x[i])
            x = new
    z = V.new_field("z", rs.f64)
    M.apply(V.b, z)
    assert z.numpy().tobytes() == x.tobytes()


def test_chebyshev_is_the_three_term_recurrence_bit_for_bit():
    A, V = _system()
    M = linalg.Chebyshev(A, degree=4)
    L = A.to_scipy()
    d = L.diagonal()
    rho = aggregation.spectral_radius(L, d)
    steps = smoothers.chebyshev_coefficients(rho, 1.0, 4)
    b = V.b.numpy()
    D = 1.0 / d
    dv = steps[0][1] * D * b
    x = dv.copy()
    for c1, c2 in steps[1:]:
        Ax = np.array([sum(L.data[k] * x[L.indices[k]] for k in range(L.indptr[i],
                                                                       L.indptr[i + 1]))
                       for i in range(V.size)])
        dv = c1 * dv + c2 * D * (b - Ax)
        x = x + dv
    z = V.new_field("z", rs.f64)
    M.apply(V.b, z)
    assert np.array_equal(z.numpy(), x)


@pytest.mark.parametrize("make", [lambda A: linalg.SSOR(A), lambda A: linalg.SSOR(A, 1.5, 2),
                                  lambda A: linalg.Chebyshev(A, 1),
                                  lambda A: linalg.Chebyshev(A, 5)],
                         ids=["sgs", "ssor-2", "cheb-1", "cheb-5"])
def test_a_preconditioner_is_symmetric_positive_definite(make):
    A, V = _system(30)
    M = _dense(make(A), V)
    assert abs(M - M.T).max() <= 1e-12 * abs(M).max()
    assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0.0


@pytest.mark.parametrize("smoother,sweeps", [("jacobi", 2), ("chebyshev", 3),
                                             ("gauss-seidel", 1), ("gauss-seidel", 2)])
def test_every_multigrid_smoother_gives_a_symmetric_positive_definite_cycle(smoother, sweeps):
    A, V = _system(60)
    mg = linalg.Multigrid(A, smoother=smoother, sweeps=sweeps, omega=1.2, max_coarse=8)
    assert len(mg.levels) >= 2
    M = _dense(mg, V)
    assert abs(M - M.T).max() <= 1e-12 * abs(M).max()
    assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0.0


def test_each_preconditioner_cuts_cgs_iterations_to_the_same_solution():
    A, V = _system(400, seed=5)
    want = sp.linalg.spsolve(A.to_scipy().tocsc(), V.b.numpy())
    plain = linalg.cg(A, V.b, V.x, rtol=1e-10).iterations
    for M in (linalg.SSOR(A), linalg.Chebyshev(A, 4),
              linalg.Multigrid(A, smoother="gauss-seidel", max_coarse=20),
              linalg.Multigrid(A, smoother="chebyshev", sweeps=3, max_coarse=20, name="m2")):
        V.x.fill(0.0)
        info = linalg.cg(A, V.b, V.x, rtol=1e-10, M=M)
        assert info.converged and info.iterations * 3 <= plain * 2, (M, info.iterations, plain)
        assert np.abs(V.x.numpy() - want).max() <= 1e-8 * np.abs(want).max()


def _preconditioned_solves(config):
    A, V = _system(80)
    out = []
    for M in (linalg.SSOR(A, omega=1.2), linalg.Chebyshev(A, 3),
              linalg.Multigrid(A, smoother="gauss-seidel", max_coarse=10),
              linalg.Multigrid(A, smoother="chebyshev", sweeps=2, max_coarse=10, name="m2")):
        V.x.fill(0.0)
        history = []
        assert linalg.cg(A, V.b, V.x, rtol=1e-10, M=M, config=config,
                         callback=lambda it, norm, h=history: h.append(norm)).converged
        out.append((V.x.numpy().tobytes(), history))
    return out


@functools.cache
def _interp_solves():
    """interp's solves, once per test process (every target's test compares with them)."""
    with configured(target="interp"):
        return _preconditioned_solves(None)


@pytest.mark.device_sized  # (the cuda target in the simulator too)
def test_preconditioned_cg_is_the_same_bits_on_every_target(target):
    assert _preconditioned_solves(target) == _interp_solves()


def test_bad_use_is_refused_with_names():
    A, V = _system(20)
    with pytest.raises(TypeError, match="SSOR needs a linalg.SparseMatrix"):
        linalg.SSOR(A.operator())
    with pytest.raises(ValueError, match=r"SSOR: omega must be a number in \(0, 2\), got 2.0"):
        linalg.SSOR(A, omega=2.0)
    with pytest.raises(ValueError, match="Chebyshev: sweeps must be an int >= 1, got 0"):
        linalg.Chebyshev(A, degree=0)
    with pytest.raises(ValueError, match="Multigrid: smoother must be one of 'jacobi', "
                                         "'chebyshev', 'gauss-seidel', got 'sor'"):
        linalg.Multigrid(A, smoother="sor")
    with pytest.raises(rs.DataError, match="a SSOR name must be an identifier, got 'a b'"):
        linalg.SSOR(A, name="a b")
    M = linalg.SSOR(A)
    again = linalg.SSOR(A)  # built again (its colours replace the first one's): fine
    assert linalg.cg(A, V.b, V.x, M=again).converged
    assert linalg.cg(A, V.b, V.x.fill(0.0), M=M).converged
    A.entries.a.load(2.0 * A.entries.a.numpy())
    with pytest.raises(rs.DataError, match=r"SSOR ssor: the entries of L changed since it was "
                                           r"built; build a SSOR again"):
        linalg.cg(A, V.b, V.x.fill(0.0), M=again)
