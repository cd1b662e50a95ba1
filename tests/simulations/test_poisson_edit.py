"""simulations/poisson_edit.py: Poisson image editing by relsim.optimize.least_squares; the
checks pass (the exact minimiser, the source's gradients inside the mask, the target outside)
and fail when the target is not held; the iterates are the same bits on every target."""
import pytest

import relsim as rs
from relsim import optimize
from relsim_simulations import poisson_edit as sim
from tests.conftest import configured

pytest.importorskip("scipy")
CPU = ["--target", "cpu"]  # main() sets the process-wide target: each test pins its own


def test_the_checks_pass(capsys):
    assert sim.main(CPU + ["--n", "32"]) == 0, capsys.readouterr().out
    assert "checks: passed" in capsys.readouterr().out


def test_a_target_not_held_fails_the_check(capsys):
    """The checks are not empty: with the target's weight near 0 the blend floats away from
    the target outside the mask."""
    assert sim.main(CPU + ["--n", "24", "--weight", "1e-9"]) == 1
    assert "checks: FAILED" in capsys.readouterr().out


def solve(config):
    with configured(**config):
        G, run, residuals, *_ = sim.build(12)
        info = optimize.least_squares(run, residuals, G.u, weights={G.rd: 100.0},
                                      method="gn", max_iterations=3)
        return G.u.numpy().tobytes(), info.costs


def test_the_iterates_are_the_same_bits_on_every_target():
    want = solve(dict(target="cpu", threads=1))
    assert solve(dict(target="interp")) == want
    assert solve(dict(target="cpu", threads=2, parallel_threshold=1)) == want
    if "cuda" in rs.targets():
        assert solve(dict(target="cuda")) == want
