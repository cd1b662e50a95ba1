"""relsim.optimize.least_squares: residual kernels, unknowns in Globals and fields, solved by
Levenberg-Marquardt and Gauss-Newton with the dense and the matrix-free inner solve; the results
agree with SciPy's least_squares, the iterates are the same bits on every target, and bad input
is refused with names (a non-finite residual with the kernel's line and row)."""
import math

import numpy as np
import pytest
import scipy.optimize as so

import relsim as rs
from relsim import optimize
from tests.conftest import configured

X = np.linspace(1.0, 20.0, 40)
TRUE = np.array([240.0, 0.055, 3.0])
START = np.array([500.0, 1e-4, 1.0])


def _model(b, x):
    return b[0] * (1.0 - np.exp(-b[1] * x)) + b[2] * np.sin(x)


def _fit():
    """An exponential rise plus a sine through noisy data (a NIST Misra1a-like model with
    a third parameter), the parameters in a vec(3) Global."""
    y = _model(TRUE, X) + np.random.default_rng(0).normal(0.0, 0.5, X.size)
    Obs = rs.Relation("obs", X.size)
    Obs.new_field("x", rs.f64).load(X)
    Obs.new_field("y", rs.f64).load(y)
    Obs.new_field("r", rs.f64)
    b = rs.Global(rs.vec(3), START, name="b")

    @rs.kernel
    def resid(o):
        o.r = b[0] * (1.0 - math.exp(-b[1] * o.x)) + b[2] * math.sin(o.x) - o.y

    return Obs, b, resid, y


def _scipy(y):
    sol = so.least_squares(lambda p: _model(p, X) - y, START, method="lm", xtol=1e-15,
                           ftol=1e-15, gtol=1e-15)
    return sol.x, 0.5 * float(np.sum(sol.fun ** 2))


@pytest.mark.parametrize("inner", ["dense", "sparse", "cg"])
def test_levenberg_marquardt_agrees_with_scipy(inner):
    Obs, b, resid, y = _fit()
    info = optimize.least_squares(lambda: Obs.foreach(resid), Obs.r, b, inner=inner,
                                  max_iterations=300)
    want_x, want_cost = _scipy(y)
    assert info.converged, info
    assert abs(info.cost - want_cost) <= 1e-9 * want_cost
    assert np.allclose(b.value, want_x, rtol=1e-7, atol=0.0), (b.value, want_x)
    assert info.costs[0] > 1e5 and info.costs == sorted(info.costs, reverse=True)
    assert np.array_equal(Obs.r.numpy(), _model(b.value, X) - y) or \
        np.allclose(Obs.r.numpy(), _model(b.value, X) - y, rtol=0, atol=1e-9)
    if inner == "dense":
        assert info.transpose_products == 0  # (J by columns: a forward run per unknown)
        assert info.jacobian_products >= 3 * (len(info.costs) - 1)
    elif inner == "sparse":  # (J from the generated kernels: no forward or reverse runs)
        assert info.jacobian_products == 1 and info.transpose_products == 0
        assert info.inner_iterations > 0 and info.preconditioned
    else:
        assert info.inner_iterations > 0 and info.transpose_products > info.iterations
        assert info.preconditioned  # (the diagonal of J^T J from the residual kernel)


def test_gauss_newton_and_lm_solve_rosenbrock_from_the_classic_start():
    P = rs.Relation("pt", 1)
    P.new_field("x", rs.vec(2)).load([[-1.2, 1.0]])
    P.new_field("r", rs.vec(2))

    @rs.kernel
    def rosen(p):
        p.r = rs.vec(2)(10.0 * (p.x[1] - p.x[0] * p.x[0]), 1.0 - p.x[0])

    for method in ("gn", "lm"):
        P.x.load([[-1.2, 1.0]])
        info = optimize.least_squares(lambda: P.foreach(rosen), P.r, P.x, method=method)
        assert info.converged and info.cost < 1e-20, (method, info)
        assert np.allclose(P.x.numpy(), [[1.0, 1.0]], rtol=0, atol=1e-10)


def _smoothing(n=60, factor=2.0):
    """A field of unknowns: u on a chain, data term u - f, a smoothing term over the edges, and
    a nonlinear term."""
    V = rs.Relation("chain", n)
    E = rs.Relation("links", n - 1)
    E.new_key_field("tail", V, values=np.arange(n - 1))
    E.new_key_field("head", V, values=np.arange(1, n))
    f = np.sin(np.linspace(0, 3, n)) + 0.3 * np.random.default_rng(1).standard_normal(n)
    V.new_field("f", rs.f64).load(f)
    V.new_field("u", rs.f64)
    V.new_field("rd", rs.f64)
    E.new_field("rs_", rs.f64)

    @rs.kernel
    def data(v):
        v.rd = v.u - v.f + 0.2 * math.sin(3.0 * v.u)

    @rs.kernel
    def smooth(e):
        e.rs_ = factor * (e.head.u - e.tail.u)

    def run(config=None):
        V.foreach(data, config)
        E.foreach(smooth, config)

    def scipy_cost():
        def fun(u):
            return np.concatenate([u - f + 0.2 * np.sin(3 * u), factor * (u[1:] - u[:-1])])
        sol = so.least_squares(fun, np.zeros(n), xtol=1e-15, ftol=1e-15, gtol=1e-15)
        return 0.5 * float(np.sum(sol.fun ** 2)), sol.x

    return V, E, run, scipy_cost


@pytest.mark.parametrize("inner,precondition", [("auto", "jacobi"), ("sparse", "jacobi"),
                                                ("sparse", "multigrid"), ("cg", "jacobi")])
def test_a_field_of_unknowns_by_the_sparse_and_the_matrix_free_solve(inner, precondition):
    V, E, run, scipy_cost = _smoothing(80)  # (more than 64 unknowns: "auto" is "sparse")
    info = optimize.least_squares(run, [V.rd, E.rs_], V.u, inner=inner, max_iterations=100,
                                  precondition=precondition)
    want, u = scipy_cost()
    assert info.converged and abs(info.cost - want) <= 1e-9 * want, (info, want)
    assert np.allclose(V.u.numpy(), u, rtol=0, atol=1e-6)
    assert info.inner_iterations > 0 and info.preconditioned
    assert (info.transpose_products > 0) == (inner == "cg")


def test_weights_are_the_residuals_scaled():
    """A weight of 1/4 on residuals 2 (u_h - u_t) is the cost of residuals u_h - u_t."""
    V, E, run, _ = _smoothing(20, factor=2.0)
    weighted = optimize.least_squares(run, [V.rd, E.rs_], V.u, weights={E.rs_: 0.25})
    u_weighted = V.u.numpy(copy=True)
    V2, E2, run2, scipy_cost = _smoothing(20, factor=1.0)
    plain = optimize.least_squares(run2, [V2.rd, E2.rs_], V2.u)
    assert weighted.converged and plain.converged
    assert abs(weighted.cost - plain.cost) <= 1e-12 * plain.cost
    assert np.allclose(u_weighted, V2.u.numpy(), rtol=0, atol=1e-9)
    assert abs(plain.cost - scipy_cost()[0]) <= 1e-9 * plain.cost


@pytest.mark.device_sized  # (the cuda target in the simulator too)
def test_iterates_are_the_same_bits_on_every_target(target):
    def solve(config):
        out = []
        for inner in ("sparse", "cg"):
            V, E, run, _ = _smoothing(12)
            info = optimize.least_squares(lambda run=run: run(config), [V.rd, E.rs_], V.u,
                                          inner=inner, max_iterations=6)
            out.append((V.u.numpy().tobytes(), info.costs, info.iterations))
        return out

    with configured(target="interp"):
        want = solve(None)
    assert solve(target) == want


def test_bad_input_is_refused_with_names():
    Obs, b, resid, y = _fit()
    run = lambda: Obs.foreach(resid)  # noqa: E731
    with pytest.raises(ValueError, match="method must be 'lm' or 'gn', got 'newton'"):
        optimize.least_squares(run, Obs.r, b, method="newton")
    with pytest.raises(ValueError, match="inner must be 'auto', 'dense', 'sparse' or 'cg'"):
        optimize.least_squares(run, Obs.r, b, inner="qr")
    with pytest.raises(ValueError, match="precondition must be 'jacobi' or 'multigrid'"):
        optimize.least_squares(run, Obs.r, b, precondition="ilu")
    with pytest.raises(ValueError, match="precondition='multigrid' needs the assembled step"):
        optimize.least_squares(run, Obs.r, b, inner="cg", precondition="multigrid")
    with pytest.raises(rs.DataError, match="unknowns must be f64 fields and Globals"):
        optimize.least_squares(run, Obs.r, Obs.y.relation.new_key_field("k", Obs, values=np.zeros(
            X.size, dtype=int)))
    with pytest.raises(rs.DataError, match="obs.r is both a residual and an unknown"):
        optimize.least_squares(run, Obs.r, [b, Obs.r])
    unused = rs.Global(rs.f64, 1.0, name="unused")
    with pytest.raises(rs.DataError, match="no residual depends on the unknown Global 'unused'"):
        optimize.least_squares(run, Obs.r, [b, unused])
    Obs.new_field("lr", rs.f64)

    @rs.kernel
    def logs(o):
        o.lr = math.log(b[1] * o.x - 0.01) - o.y

    b.value = START
    with pytest.raises(rs.DataError, match=r"(?s)residual obs.lr is nan at row 0 \(iteration "
                                           r"0\).*kernel 'logs'.*log.*line \d+, in logs"):
        optimize.least_squares(lambda: Obs.foreach(logs), Obs.lr, b)
