"""simulations/throw.py: a mass-spring net's launch velocity optimised with rs.Tape gradients
so its centre reaches a target after bouncing; the gradient's bits on every target."""
import numpy as np
import pytest

import relsim as rs
from relsim_simulations import throw as sim
from tests.conftest import configured

pytest.importorskip("scipy")
CPU = ["--target", "cpu"]  # main() sets the process-wide target: each test pins its own


def test_the_centre_reaches_the_target(capsys):
    assert sim.main(CPU + ["--m", "3", "--steps", "500"]) == 0, capsys.readouterr().out
    assert "OK: gradient checked, the centre reaches the target" in capsys.readouterr().out


def gradient(config):
    with configured(**config):
        throw, g, _ = sim.build(3)
        g[5].value, g[6].value = 1.0, 0.3
        value, grad = sim.loss_and_gradient(throw, g, sim.START, 60)
    return value.hex(), grad.tobytes()


def test_the_gradient_is_the_same_bits_on_every_target():
    want = gradient(dict(target="cpu", threads=1))
    assert np.frombuffer(want[1]).all()
    assert gradient(dict(target="interp")) == want
    assert gradient(dict(target="cpu", threads=2, parallel_threshold=1)) == want
    if "cuda" in rs.targets():
        assert gradient(dict(target="cuda")) == want
