"""linalg.direct (SciPy's sparse LU, kept until the entries change), SparseMatrix.from_scipy,
and a direct solve's gradients on a tape (the transposed factors)."""
import numpy as np
import pytest
import scipy.sparse as sp

import relsim as rs
from relsim import linalg
from tests.linalg import systems
from tests.linalg.test_solve_gradients import Graph, _agrees


def test_from_scipy_keeps_the_pattern_and_values_and_sums_duplicates():
    V, E = systems.graph(9, 14, seed=3)
    M = systems.matrix(V, E, c=2.0, w=0.3).tocoo()
    dup = sp.coo_matrix((np.r_[M.data, 1.5], (np.r_[M.row, 0], np.r_[M.col, 4])), shape=M.shape)
    A = linalg.SparseMatrix.from_scipy(V, dup, name="S")
    got = A.to_scipy().toarray()
    want = dup.toarray()
    assert np.array_equal(got, want)
    assert A.entries.size == sp.csr_matrix(dup).nnz + int((dup.diagonal() == 0).sum())
    with pytest.raises(rs.DataError, match=r"SparseMatrix S: a 9 x 8 matrix for the 9 rows of V"):
        linalg.SparseMatrix.from_scipy(V, sp.eye(9, 8), name="S")
    with pytest.raises(rs.DataError, match="from_scipy needs a SciPy sparse matrix, got ndarray"):
        linalg.SparseMatrix.from_scipy(V, np.eye(9))


def test_a_direct_solve_matches_scipy_and_factorises_once_per_matrix():
    V, E = systems.graph(30, 80, seed=4)
    M = systems.matrix(V, E, c=1.0, w=0.4)
    A = linalg.SparseMatrix.from_scipy(V, M, name="D")
    b = np.random.default_rng(0).standard_normal(V.size)
    V.b.load(b)
    info = linalg.direct(A, V.b, V.x)
    assert info.converged and info.residuals[1] < 1e-12 * info.residuals[0]
    want = np.linalg.solve(M.toarray(), b)
    assert np.allclose(V.x.numpy(), want, rtol=1e-12, atol=1e-13)
    lu = A._lu
    linalg.direct(A, V.b, V.x, transpose=True)
    assert A._lu is lu  # the same factors, transposed
    assert np.allclose(V.x.numpy(), np.linalg.solve(M.toarray().T, b), rtol=1e-12, atol=1e-13)
    A.entries.a.load(2.0 * A.entries.a.numpy())  # new entries: factorised again
    linalg.direct(A, V.b, V.x)
    assert A._lu is not lu and np.allclose(V.x.numpy(), want / 2.0, rtol=1e-12, atol=1e-13)
    A.entries.a.fill(0.0)
    with pytest.raises(linalg.SolverError, match="direct: D cannot be factorised"):
        linalg.direct(A, V.b, V.x)
    with pytest.raises(TypeError, match="direct: A must be a linalg.SparseMatrix"):
        linalg.direct(systems.operator(V, E), V.b, V.x)


@pytest.mark.parametrize("transpose", [False, True])
def test_a_direct_solve_is_differentiated_on_a_tape(transpose):
    def solve(A, b, x, rtol=None):
        return linalg.direct(A, b, x, transpose=transpose)

    g = Graph(solve)
    da, db = g.gradients()
    assert np.count_nonzero(da) == da.size
    _agrees(db, lambda b: g.run(b=b), g.b0, range(0, g.V.size, 3))
    picks = np.random.default_rng(2).choice(len(g.a0), 6, replace=False)
    _agrees(da, lambda a: g.run(a=a), g.a0, picks)
