"""linalg.Multigrid: smoothed-aggregation multigrid as cg's preconditioner on P1 Poisson
problems: it converges in fewer iterations than plain cg to the same solution, is a symmetric
positive definite operator (what cg needs), gives the same bits on every target, and refuses
what it cannot do with names."""
import functools

import numpy as np
import pytest
import scipy.sparse.linalg as spla

import relsim as rs
from relsim import linalg
from relsim.linalg import aggregation
from tests.conftest import configured
from tests.linalg import fem


def _f(P):
    return np.cos(2.0 * P[:, 0]) + P[:, 1] * P[:, 2] + 1.0


def _problem(n=6, config=None):
    mesh, K, V, sides = fem.poisson(n, _f, config)
    K.dirichlet(sides, b=V.b, values=0.0)
    return K, V


def test_aggregates_cover_every_coupled_row_once_and_coarsen():
    K, V = _problem(6)
    A = K.to_scipy()
    agg = aggregation.aggregates(A.indptr, A.indices, A.data, A.diagonal(), 0.0)
    dense = A.toarray()
    np.fill_diagonal(dense, 0.0)
    coupled = (dense != 0.0).any(axis=1)  # rows with an off-diagonal entry
    assert (agg[coupled] >= 0).all() and (agg[~coupled] == -1).all()  # Dirichlet rows: none
    count = agg.max() + 1
    assert set(agg[coupled]) == set(range(count)) and count < coupled.sum() / 4
    levels = aggregation.hierarchy(A, max_coarse=20)
    sizes = [lev.A.shape[0] for lev in levels]
    assert sizes[0] == V.size and all(a > b for a, b in zip(sizes, sizes[1:]))
    assert sizes[-1] <= 20 or len(sizes) == 10
    for lev in levels[1:]:  # Galerkin coarse matrices stay symmetric
        assert abs(lev.A - lev.A.T).max() <= 1e-13 * abs(lev.A).max()


def test_multigrid_cg_converges_faster_to_the_same_solution():
    K, V = _problem(10)
    mg = linalg.Multigrid(K, max_coarse=50)
    assert len(mg.levels) >= 3 and mg.levels[0] == V.size
    info = linalg.cg(K, V.b, V.x, rtol=1e-10, M=mg)
    plain = V.x.numpy(copy=True)
    V.x.fill(0.0)
    info_cg = linalg.cg(K, V.b, V.x, rtol=1e-10)
    assert info.converged and info_cg.converged
    assert info.iterations * 2 <= info_cg.iterations, (info.iterations, info_cg.iterations)
    want = spla.spsolve(K.to_scipy().tocsc(), V.b.numpy())
    assert np.allclose(plain, want, rtol=0, atol=1e-9 * abs(want).max())


def test_the_v_cycle_is_a_symmetric_positive_definite_operator():
    K, V = _problem(4)
    mg = linalg.Multigrid(K, max_coarse=10, sweeps=2)
    n = V.size
    r, z = V.new_field("r", rs.f64), V.new_field("z", rs.f64)
    M = np.zeros((n, n))
    for i in range(n):
        e = np.zeros(n)
        e[i] = 1.0
        r.load(e)
        mg.apply(r, z)
        M[:, i] = z.numpy()
    assert abs(M - M.T).max() <= 1e-12 * abs(M).max()
    assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0.0


def _multigrid_solve(config):
    K, V = _problem(6, config)
    mg = linalg.Multigrid(K, max_coarse=20)
    history = []
    info = linalg.cg(K, V.b, V.x, rtol=1e-10, M=mg, config=config,
                     callback=lambda it, norm: history.append(norm))
    assert info.converged
    return V.x.numpy().tobytes(), history


@functools.cache
def _interp_solve():
    """interp's solve, once per test process (every target's test compares with it)."""
    with configured(target="interp"):
        return _multigrid_solve(None)


def test_multigrid_cg_is_the_same_bits_on_every_target(target):
    assert _multigrid_solve(target) == _interp_solve()


def test_bad_use_is_refused_with_names():
    K, V = _problem(3)
    with pytest.raises(TypeError, match="Multigrid needs a linalg.SparseMatrix"):
        linalg.Multigrid(K.operator())
    with pytest.raises(ValueError, match="sweeps must be an int >= 1, got 0"):
        linalg.Multigrid(K, sweeps=0)
    mg = linalg.Multigrid(K, max_coarse=5)
    again = linalg.Multigrid(K, max_coarse=5)  # built again (as after new entries): fine
    assert linalg.cg(K, V.b, V.x, M=again).converged
    with pytest.raises(rs.DataError, match=r"Multigrid mg: a newer Multigrid of the same name "
                                           r"on vertices replaced this one"):
        linalg.cg(K, V.b, V.x.fill(0.0), M=mg)
    K.entries.a.load(2.0 * K.entries.a.numpy())
    with pytest.raises(rs.DataError, match=r"Multigrid mg: the entries of K changed since its "
                                           r"hierarchy was built"):
        linalg.cg(K, V.b, V.x.fill(0.0), M=again)
