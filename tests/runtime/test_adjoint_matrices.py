"""Gradients through matrix functions: rs.eigh, rs.svd and rs.polar (the adjoint pass's
`decompositions.py`) against central differences on random 2x2 and 3x3 matrices, at repeated
singular values for polar, for inverted matrices (det < 0), and the same bits on every target;
rs.outer."""
import numpy as np
import pytest

import relsim as rs
from tests.conftest import configured
from tests.test_tape import CONFIGS, agrees_with_central


def problem(kind, n, F0, seed=0):
    rng = np.random.default_rng(seed)
    C = rs.Relation("C", len(F0))
    C.new_field("F", rs.mat(n, n, rs.f64)).load(F0)
    C.new_field("a", rs.vec(n, rs.f64)).load(rng.standard_normal((len(F0), n)))
    C.new_field("b", rs.vec(n, rs.f64)).load(rng.standard_normal((len(F0), n)))
    loss = rs.Global(rs.f64, 0.0)

    if kind == "svd":
        @rs.kernel
        def measure(c):
            U, S, V = rs.svd(c.F * 1.5)
            loss += rs.dot(S, c.a) + rs.dot(U @ c.a, c.b) + rs.dot(V @ c.b, c.a) * S[0]
    elif kind == "eigh":
        @rs.kernel
        def measure(c):
            w, Q = rs.eigh(c.F + rs.transpose(c.F))
            loss += rs.dot(w, c.a) * w[0] + rs.dot(Q @ c.a, c.b)
    elif kind == "outer":
        @rs.kernel
        def measure(c):
            M = rs.outer(c.F @ c.a, c.b) @ c.F
            loss += rs.dot(M @ c.a, c.b) + rs.det(rs.outer(c.a, c.F[0]) + c.F)
    else:
        @rs.kernel
        def measure(c):
            R, P = rs.polar(c.F)
            loss += rs.dot(R @ c.a, c.b) + rs.dot(P @ c.b, c.a) + rs.polar(c.F)[1][0, 0]

    def run(F, tape=None):
        C.F.load(F)
        if tape is None:
            loss.value = 0.0
            C.foreach(measure)
            return loss.value
        with tape:
            loss.value = 0.0
            C.foreach(measure)
        tape.backward(loss)
        return C.F.grad.numpy(copy=True)

    return run


def matrices(n, seed, inverted=False):
    rng = np.random.default_rng(seed)
    F = np.eye(n) + 0.4 * rng.standard_normal((4, n, n))
    if inverted:
        F[:, 0, :] *= -1.0  # det < 0: the signed convention's last singular value is negative
    return F


def check(kind, n, F0):
    run = problem(kind, n, F0)
    grad = run(F0.copy(), rs.Tape())
    agrees_with_central(grad, run, F0, what=(kind, n))
    return grad


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("kind", ["svd", "eigh", "polar", "outer"])
def test_against_central_differences(kind, n):
    grad = check(kind, n, matrices(n, seed=n))
    assert np.count_nonzero(grad) >= 4 * n * n // 2


@pytest.mark.parametrize("kind", ["svd", "polar"])
def test_inverted_matrices(kind):
    F = matrices(3, seed=7, inverted=True)
    assert (np.linalg.det(F) < 0).all()
    check(kind, 3, F)


def test_polar_at_repeated_singular_values():
    """R and P have derivatives where the singular vectors do not (F = a rotation times a
    multiple of the identity): polar's rule divides by s_i + s_j only."""
    c, s = np.cos(0.3), np.sin(0.3)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    F = np.stack([rot * 1.25, np.eye(3), rot @ np.diag([1.0, 1.0, 2.0]), np.eye(3) * 0.5])
    grad = check("polar", 3, F)
    assert np.isfinite(grad).all()


def test_the_same_bits_on_every_target():
    F = matrices(3, seed=11)
    answers = set()
    for config in CONFIGS.values():
        with configured(**config):
            for kind in ("svd", "eigh", "polar"):
                answers.add((kind, problem(kind, 3, F)(F.copy(), rs.Tape()).tobytes()))
    assert len(answers) == 3
