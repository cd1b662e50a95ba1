"""linalg.SparseMatrix: element assembly through keys (the bits of every target, NumPy's
matrix), Dirichlet rows, the row-wise product in a solve, and a P1 Poisson problem with a
manufactured solution converging at O(h^2)."""
import numpy as np
import pytest
import scipy.sparse.linalg as spla

import relsim as rs
from relsim import linalg
from tests.linalg import fem


def _exact(P):
    return np.sin(np.pi * P[:, 0]) * np.sin(np.pi * P[:, 1]) * np.sin(np.pi * P[:, 2])


def _f(P):
    return 3 * np.pi ** 2 * _exact(P)


@pytest.mark.device_sized
def test_element_assembly_is_numpys_matrix_with_the_same_bits_on_every_target(target):
    want = fem.poisson(2, _f, rs.Config(target="interp"))
    mesh, K, V, _ = fem.poisson(2, _f, target)
    assert K.entries.a.numpy().tobytes() == want[1].entries.a.numpy().tobytes()
    assert V.b.numpy().tobytes() == want[2].b.numpy().tobytes()
    A = K.to_scipy().toarray()
    assert np.allclose(A, fem.stiffness_numpy(mesh), rtol=0, atol=1e-14)
    assert np.allclose(A.sum(axis=1), 0.0, atol=1e-13)  # a Laplacian: constants in its kernel
    # the pattern: every pair of vertices sharing a tet (and the diagonal), in CSR order
    E = K.entries
    code = E.row.numpy() * V.size + E.col.numpy()
    tets = mesh.tets.v.numpy()
    pairs = {(a, c) for t in tets for a in t for c in t} | {(i, i) for i in range(V.size)}
    assert code.tolist() == sorted(a * V.size + c for a, c in pairs)


@pytest.mark.device_sized
def test_the_product_and_a_solve_agree_with_scipy(target):
    mesh, K, V, sides = fem.poisson(2, _f, target)
    K.dirichlet(sides, b=V.b)
    A = K.to_scipy()
    u, Au = K.operator().x, K.operator().y
    u.load(np.random.default_rng(2).standard_normal(V.size))
    K.operator()(target)
    assert np.allclose(Au.numpy(), A @ u.numpy(), rtol=1e-14, atol=1e-14)
    info = linalg.cg(K, V.b, V.x, rtol=1e-12, config=target)
    assert info.converged
    assert np.allclose(V.x.numpy(), spla.spsolve(A.tocsc(), V.b.numpy()), atol=1e-10)


def test_dirichlet_rows_keep_the_matrix_symmetric_and_move_columns_to_b():
    mesh, K, V, sides = fem.poisson(2, _f)
    A0, b0 = K.to_scipy().toarray(), V.b.numpy(copy=True)
    vals = np.linspace(1.0, 2.0, len(sides))
    K.dirichlet(sides, b=V.b, values=vals)
    A, b = K.to_scipy().toarray(), V.b.numpy()
    free = np.setdiff1d(np.arange(V.size), sides)
    assert np.array_equal(A, A.T)
    assert np.array_equal(A[np.ix_(sides, sides)], np.eye(len(sides)))
    assert not A[np.ix_(free, sides)].any()
    assert np.array_equal(A[np.ix_(free, free)], A0[np.ix_(free, free)])
    assert np.array_equal(b[sides], vals)
    assert np.allclose(b[free], b0[free] - A0[np.ix_(free, sides)] @ vals, rtol=1e-14)
    # bit for bit as miniFE's impose_dirichlet: per row, s = the moved a * value added in
    # column order from 0, then b -= s once
    fixed = dict(zip(sides.tolist(), vals.tolist()))
    for i in free:
        s = 0.0
        for j in np.flatnonzero(A0[i]):
            if j in fixed:
                s += A0[i, j] * fixed[j]
        assert b[i] == b0[i] - s, i
    # the solution of the reduced system takes the imposed values
    linalg.cg(K, V.b, V.x, rtol=1e-12)
    assert np.allclose(V.x.numpy()[sides], vals, atol=1e-10)


def test_poisson_with_a_manufactured_solution_converges_at_second_order():
    """-Laplace u = 3 pi^2 u on the unit cube, u = sin(pi x) sin(pi y) sin(pi z) (zero on the
    sides): the nodal error of the P1 solution falls ~4x per halving of h."""
    cfg = rs.Config(target="cpu")
    errors = []
    for n in (4, 8, 16):
        mesh, K, V, sides = fem.poisson(n, _f, cfg)
        K.dirichlet(sides, b=V.b, values=0.0)
        d = V.new_field("d", rs.f64)
        K.diagonal(d)
        info = linalg.cg(K, V.b, V.x, rtol=1e-12, M=d, config=cfg)
        assert info.converged
        errors.append(np.abs(V.x.numpy() - _exact(V.pos.numpy())).max())
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert (rates > 1.75).all() and rates[-1] > 1.9, (errors, rates)


def test_bad_patterns_and_connectivity_are_refused_with_names():
    V = rs.Relation("V", 4)
    V.new_field("w", rs.f64)
    with pytest.raises(rs.DataError, match=r"SparseMatrix A: entry \(1, 4\) is outside the 4 "
                                           r"rows of V"):
        linalg.SparseMatrix(V, [0, 1], [0, 4])
    with pytest.raises(rs.DataError, match="needs an element relation's key vector"):
        linalg.SparseMatrix.from_elements(V.w)
    with pytest.raises(rs.DataError, match="must be an identifier"):
        linalg.SparseMatrix(V, [0], [0], name="my matrix")
