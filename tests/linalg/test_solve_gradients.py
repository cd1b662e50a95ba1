"""Gradients through linalg solves on an rs.Tape (linalg/adjoint.py): a solve is one step,
differentiated implicitly (one more solve with A^T), with respect to b and the matrix entries,
and through them to what assembled them; against central differences, the same bits on every
target; a matrix-free operator is refused when recorded."""
import numpy as np
import pytest

import relsim as rs
from relsim import linalg
from relsim.domains import tetmesh
from tests.conftest import configured
from tests.linalg import systems


def _central(f, x, i, h):
    up, down = x.copy(), x.copy()
    up[i] += h
    down[i] -= h
    return (f(up) - f(down)) / (2 * h)


def _agrees(grad, f, x, picks, h=1e-5, tol=1e-6):
    for i in picks:
        fd = _central(f, x, i, h)
        assert abs(grad[i] - fd) <= tol * max(1.0, abs(fd)), (i, grad[i], fd)


class Heat:
    """An implicit heat step's system on a tet box: A = M / dt + sum_t kappa_t K_t, assembled
    by a kernel from per-tet conductivities, solved by cg; loss = sum(w x + x^2 / 2)."""

    def __init__(self):
        m = tetmesh.box(2)
        V, T = self.V, self.T = m.vertices, m.tets
        for f in ("b", "x", "w"):
            V.new_field(f, rs.f64)
        rng = np.random.default_rng(3)
        self.b0 = rng.uniform(0.5, 1.5, V.size)
        V.w.load(rng.standard_normal(V.size))
        T.new_field("kappa", rs.f64)
        self.k0 = rng.uniform(0.5, 2.0, T.size)
        self.A = A = linalg.SparseMatrix.from_elements(T.v, name="K")  # (test_sparse's names:
        # the solver kernels compiled for them serve here too)
        loss = self.loss = rs.Global(rs.f64, 0.0)

        T.new_field("Ke", rs.vec(16))  # each tet's unit stiffness, then mass
        T.new_field("Me", rs.f64)

        @rs.kernel
        def element(t):
            p0 = t.v[0].pos
            J = rs.mat(3, 3)(t.v[1].pos - p0, t.v[2].pos - p0, t.v[3].pos - p0)
            vol = rs.det(J) / 6.0
            Ji = rs.inverse(J)
            G = rs.mat(4, 3)(-(Ji[:, 0] + Ji[:, 1] + Ji[:, 2]), Ji[:, 0], Ji[:, 1], Ji[:, 2])
            for k in rs.static(range(16)):
                t.Ke[k] = vol * rs.dot(G[k // 4], G[k % 4])
            t.Me = vol / 4.0 * 10.0  # the lumped mass over dt

        T.foreach(element)

        @rs.kernel
        def assemble(t):
            for k in rs.static(range(16)):
                t.K[k].a += t.kappa * t.Ke[k]
            for d in rs.static((0, 5, 10, 15)):  # the diagonal entries (i, i)
                t.K[d].a += t.Me

        @rs.kernel
        def misfit(v):
            loss += v.w * v.x + 0.5 * v.x * v.x

        self.assemble, self.misfit = assemble, misfit

    def run(self, b=None, kappa=None, tape=None, solver=linalg.cg):
        V, T, A = self.V, self.T, self.A
        V.b.load(self.b0 if b is None else b)
        T.kappa.load(self.k0 if kappa is None else kappa)
        V.x.fill(0.0)
        with tape if tape is not None else _nothing():
            A.entries.a.fill(0.0)
            T.foreach(self.assemble)
            info = solver(A, V.b, V.x, rtol=1e-13)
            self.loss.value = 0.0
            V.foreach(self.misfit)
        assert info.converged
        return self.loss.value

    def gradients(self, solver=linalg.cg):
        tape = rs.Tape()
        self.run(tape=tape, solver=solver)
        tape.backward(self.loss)
        return self.V.b.grad.numpy(copy=True), self.T.kappa.grad.numpy(copy=True)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_cg_solve_is_differentiated_for_b_and_through_the_assembly():
    h = Heat()
    db, dk = h.gradients()
    assert np.count_nonzero(db) == db.size and np.count_nonzero(dk) == dk.size
    # the derivative with respect to b is A^-1 (w + x) (A symmetric): checked exactly first
    A = h.A.to_scipy().toarray()
    x = np.linalg.solve(A, h.b0)
    assert np.allclose(db, np.linalg.solve(A, h.V.w.numpy() + x), rtol=1e-11, atol=1e-12)
    rng = np.random.default_rng(0)
    _agrees(db, lambda b: h.run(b=b), h.b0, rng.choice(h.V.size, 4, replace=False))
    _agrees(dk, lambda k: h.run(kappa=k), h.k0, rng.choice(h.T.size, 4, replace=False))


class Graph:
    """A nonsymmetric sparse system on a random graph, its entries and b loaded before the
    tape; loss = sum(w x^2)."""

    def __init__(self, solver):
        V, E = self.V, _ = systems.graph(12, 30, seed=2)
        rng = np.random.default_rng(1)
        self.A = A = linalg.SparseMatrix(V, E.tail.numpy(), E.head.numpy(), name="N")
        rows, cols = A.entries.row.numpy(), A.entries.col.numpy()
        self.a0 = np.where(rows == cols, 8.0, rng.uniform(-1.0, 1.0, len(rows)))
        self.b0 = rng.standard_normal(V.size)
        V.new_field("w", rs.f64).load(rng.standard_normal(V.size))
        self.solver = solver
        loss = self.loss = rs.Global(rs.f64, 0.0)

        @rs.kernel
        def misfit(v):
            loss += v.w * v.x * v.x

        self.misfit = misfit

    def run(self, a=None, b=None, tape=None):
        V = self.V
        self.A.entries.a.load(self.a0 if a is None else a)
        V.b.load(self.b0 if b is None else b)
        V.x.fill(0.0)
        with tape if tape is not None else _nothing():
            assert self.solver(self.A, V.b, V.x, rtol=1e-13).converged
            self.loss.value = 0.0
            V.foreach(self.misfit)
        return self.loss.value

    def gradients(self):
        tape = rs.Tape()
        self.run(tape=tape)
        tape.backward(self.loss)
        return self.A.entries.a.grad.numpy(copy=True), self.V.b.grad.numpy(copy=True)


@pytest.mark.parametrize("solver", [linalg.bicgstab, linalg.gmres])
def test_nonsymmetric_solves_are_differentiated_for_b_and_every_entry(solver):
    g = Graph(solver)
    da, db = g.gradients()
    assert np.count_nonzero(da) == da.size
    _agrees(db, lambda b: g.run(b=b), g.b0, range(0, g.V.size, 3))
    picks = np.random.default_rng(1).choice(len(g.a0), 6, replace=False)
    _agrees(da, lambda a: g.run(a=a), g.a0, picks)


def test_solve_gradients_are_the_same_bits_on_every_target(target):
    with configured(target="interp"):
        expected = Graph(linalg.bicgstab).gradients()
    with configured(target=target.target, parallel_threshold=target.parallel_threshold):
        got = Graph(linalg.bicgstab).gradients()
    assert got[0].tobytes() == expected[0].tobytes()
    assert got[1].tobytes() == expected[1].tobytes()


def test_a_matrix_free_solve_on_a_tape_is_refused_naming_the_way_out():
    V, E = systems.graph(10, 9)
    A = systems.operator(V, E)
    with rs.Tape(), pytest.raises(rs.GradientError, match=r"linalg.cg is recorded on an "
                                                          r"rs.Tape with a matrix-free "
                                                          r"Operator.*assemble A"):
        linalg.cg(A, V.b, V.x)
