"""relsim.optimize.minimize (L-BFGS): an energy reduced by kernels, its gradient by the tape;
the extended Rosenbrock function to its minimum as SciPy's L-BFGS-B finds it, a Global among
the unknowns, the same bits on every target, and bad input refused."""
import numpy as np
import pytest
import scipy.optimize as so

import relsim as rs
from relsim import optimize
from tests.conftest import configured


def _rosenbrock(n=20):
    """sum over pairs (x[2i], x[2i+1]) of 100 (x[2i+1] - x[2i]^2)^2 + (1 - x[2i])^2, the
    unknowns a field of n rows, the pairs a relation with two keys into it."""
    X = rs.Relation("xs", n)
    X.new_field("x", rs.f64).load(np.tile([-1.2, 1.0], n // 2))
    P = rs.Relation("pairs", n // 2)
    P.new_key_field("a", X, values=np.arange(0, n, 2))
    P.new_key_field("b", X, values=np.arange(1, n, 2))
    energy = rs.Global(rs.f64, 0.0, name="energy")

    @rs.kernel
    def rosen(p):
        energy += 100.0 * (p.b.x - p.a.x * p.a.x) ** 2 + (1.0 - p.a.x) ** 2

    def run(config=None):
        energy.value = 0.0
        P.foreach(rosen, config)

    return X, energy, run


@pytest.mark.parametrize("method", ["lbfgs", "newton-cg"])
def test_rosenbrocks_minimum_as_scipy_finds_it(method):
    X, energy, run = _rosenbrock()
    info = optimize.minimize(run, energy, X.x, method=method, gtol=1e-9, max_iterations=500)
    assert info.converged and info.energy < 1e-16, info
    assert np.allclose(X.x.numpy(), 1.0, rtol=0, atol=1e-8)
    assert info.energies[0] > info.energies[-1] and info.gradients == info.iterations + 1
    assert (info.hessian_products > 0) == (method == "newton-cg")

    def f(x):
        a, b = x[0::2], x[1::2]
        return float(np.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2))

    sol = so.minimize(f, np.tile([-1.2, 1.0], 10), method="L-BFGS-B",
                      options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 2000})
    assert np.allclose(sol.x, X.x.numpy(), rtol=0, atol=1e-4)


def _scaled_rosenbrock(scale):
    """`_rosenbrock`'s energy times `scale` (a Global of the kernel)."""
    X, energy, _ = _rosenbrock()
    unit = rs.Global(rs.f64, scale)
    P = rs.Relation("pairs_scaled", 10)
    P.new_key_field("a", X, values=np.arange(0, 20, 2))
    P.new_key_field("b", X, values=np.arange(1, 20, 2))

    @rs.kernel
    def rosen(p):
        energy += unit * (100.0 * (p.b.x - p.a.x * p.a.x) ** 2 + (1.0 - p.a.x) ** 2)

    def program():
        energy.value = 0.0
        P.foreach(rosen)

    return X, energy, program


def test_newton_cg_takes_the_same_steps_whatever_the_energys_units():
    """The inexact-Newton forcing term is relative to the first gradient: an energy in other
    units (times 1e6, gtol with it) takes the same iterations and Hessian products."""
    counts = []
    for scale in (1.0, 1e6):
        X, energy, program = _scaled_rosenbrock(scale)
        info = optimize.minimize(program, energy, X.x, method="newton-cg", gtol=1e-9 * scale,
                                 max_iterations=500)
        assert info.converged, info
        counts.append((info.iterations, info.hessian_products))
    assert counts[0] == counts[1], counts


def test_a_global_unknown_and_a_field_together():
    V = rs.Relation("pts", 30)
    rng = np.random.default_rng(2)
    V.new_field("p", rs.f64).load(rng.standard_normal(30))
    V.new_field("q", rs.f64)
    c = rs.Global(rs.f64, 0.0, name="c")
    energy = rs.Global(rs.f64, 0.0, name="e2")

    @rs.kernel
    def spread(v):                        # minimised at c = mean(p), q = (p - c) / 1.01
        energy += (v.q + c - v.p) ** 2 + 0.01 * v.q * v.q

    def run():
        energy.value = 0.0
        V.foreach(spread)

    info = optimize.minimize(run, energy, [V.q, c], gtol=1e-12)
    p = V.p.numpy()
    c_want = float(p.mean())
    assert info.converged and abs(c.value - c_want) < 1e-8
    assert np.allclose(V.q.numpy(), (p - c_want) / 1.01, rtol=0, atol=1e-8)


@pytest.mark.device_sized  # (the cuda target in the simulator too)
def test_iterates_are_the_same_bits_on_every_target(target):
    def solve(config):
        out = []
        for method in ("lbfgs", "newton-cg"):
            X, energy, run = _rosenbrock(6)
            info = optimize.minimize(lambda run=run: run(config), energy, X.x, method=method,
                                     max_iterations=8)
            out.append((X.x.numpy().tobytes(), info.energies))
        return out

    with configured(target="interp"):
        want = solve(None)
    assert solve(target) == want


def test_bad_input_is_refused():
    X, energy, run = _rosenbrock(4)
    with pytest.raises(ValueError, match="method must be 'lbfgs' or 'newton-cg', got 'bfgs'"):
        optimize.minimize(run, energy, X.x, method="bfgs")
    with pytest.raises(rs.DataError, match="the energy must be an f64 scalar Global"):
        optimize.minimize(run, X.x, X.x)
    with pytest.raises(rs.DataError, match="unknowns must be f64 fields and Globals"):
        optimize.minimize(run, energy, "x")
