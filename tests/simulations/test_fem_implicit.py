"""simulations/_fem_implicit.py (`relsim run fem --implicit`): implicit Euler by Newton-CG on
the incremental potential. Stable far past the explicit step, first-order convergent to the
explicit run at small steps, and its checks. (Newton-CG's iterates are the same bits on every
target and thread count: tests/optimize/test_minimize.py; here the interp target would take
minutes, a Hessian-vector product of the Neo-Hookean energy ~0.2 s a run on it.)"""
import numpy as np
import pytest

import relsim as rs
from relsim_simulations import _fem_implicit as fem_implicit
from relsim_simulations import fem

CPU = ["--target", "cpu"]  # main() sets the process-wide target: each test pins its own


def test_stable_at_50_times_the_explicit_step_and_settles_to_the_static_shape(capsys):
    # n = 2: the coarse beam's static sag is 0.515 of the linear-elastic estimate (as the
    # explicit run's is; fem's docstring), hence the tolerance
    rc = fem.main(CPU + ["--implicit", "--n", "2", "--steps", "30", "--tolerance", "0.5"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "50 times the explicit step" in text and "OK: energy dissipated" in text


def test_small_steps_converge_to_the_explicit_run_at_first_order():
    """Backward Euler's error is O(dt): against the explicit run (symplectic Euler at a 2x and
    4x smaller step, its phase error second order in dt), the tip's sag differs about half as
    much when the implicit step halves, and by a few percent of the sag at 2x the explicit
    step."""
    n, every = 1, 16
    dt = fem.time_step(n)
    steps = 192  # 0.2 s: about half the first swing's period
    explicit = np.array(fem.simulate(fem.beam(n), dt, steps, every)["sag"])
    errors = []
    for k in (2, 4):
        history, _ = fem_implicit.simulate(fem.beam(n), k * dt, steps // k, every // k)
        errors.append(np.abs(np.array(history["sag"]) - explicit).max())
    assert errors[0] < 0.05 * explicit.max(), errors
    assert 1.5 < errors[1] / errors[0] < 2.5, errors


def test_the_checks_catch_a_rising_energy_and_a_swing_that_does_not_settle():
    static = fem.static_deflection() * 0.8
    history = {"energy": [0.0, -1.0, -0.5, -2.0], "kinetic": [0.0] * 4,
               "sag": [0.0, static, static, static]}
    assert any("rose" in p for p in fem_implicit.check(history, static))
    history = {"energy": [0.0, -1.0, -2.0, -3.0], "kinetic": [0.0] * 4,
               "sag": [static, 0.0, static, 2.0 * static]}
    assert any("did not shrink" in p for p in fem_implicit.check(history, static))
    history["energy"][2] = float("nan")
    assert any("NaN" in p for p in fem_implicit.check(history, static))


def test_a_newton_solve_that_does_not_converge_says_so():
    mesh = fem.beam(1)
    setup, step, _, _ = fem_implicit.build(mesh, 50.0 * fem.time_step(1), max_newton=1)
    setup()
    with pytest.raises(rs.DataError, match=r"Newton-CG stopped without converging "
                                           r"\(max_iterations"):
        step()
