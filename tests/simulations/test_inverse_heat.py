"""simulations/inverse_heat.py: two conductivities recovered from thermometers with gradients
from rs.Tape, the same gradient bits on every target."""
import numpy as np
import pytest

import relsim as rs
from relsim_simulations import inverse_heat as sim
from tests.conftest import configured

pytest.importorskip("scipy")
CPU = ["--target", "cpu"]  # main() sets the process-wide target: each test pins its own


def test_the_conductivities_are_recovered(capsys):
    assert sim.main(CPU + ["--n", "3", "--steps", "60", "--every", "10"]) == 0, \
        capsys.readouterr().out
    out = capsys.readouterr().out
    assert "OK: gradient checked, conductivities recovered" in out


def test_the_conductivities_are_recovered_through_implicit_steps(capsys):
    """--implicit: each backward Euler step a linalg.cg solve on the tape, differentiated
    implicitly (one adjoint solve per step); the gradient checked against central differences
    by main, and the result."""
    assert sim.main(CPU + ["--implicit", "--n", "3", "--steps", "6", "--every", "2"]) == 0, \
        capsys.readouterr().out
    out = capsys.readouterr().out
    assert "6 implicit (backward Euler, cg) steps of 10 dt" in out
    assert "OK: gradient checked, conductivities recovered" in out


def test_the_implicit_gradient_is_the_same_bits_on_interp_and_cpu():
    def gradient(config):
        with configured(**config):
            _, run, globals_ = sim.build(2, 4, implicit=True)
            globals_[0].value, globals_[1].value = sim.TRUTH
            record = run(4, 2)
            value, grad = sim.misfit_and_gradient(run, globals_, sim.START, 4, 2, record)
        return value.hex(), grad.tobytes()

    want = gradient(dict(target="interp"))
    assert np.frombuffer(want[1]).all()
    assert gradient(dict(target="cpu", threads=2, parallel_threshold=1)) == want


def test_bad_arguments_say_so():
    with pytest.raises(SystemExit):
        sim.main(CPU + ["--every", "0"])


def gradient(config):
    with configured(**config):
        _, run, globals_ = sim.build(3, 5)
        globals_[0].value, globals_[1].value = sim.TRUTH
        record = run(40, 10)
        value, grad = sim.misfit_and_gradient(run, globals_, sim.START, 40, 10, record)
    return value.hex(), grad.tobytes()


def test_the_gradient_is_the_same_bits_on_every_target():
    want = gradient(dict(target="cpu", threads=1))
    assert np.frombuffer(want[1]).any()
    assert gradient(dict(target="interp")) == want
    assert gradient(dict(target="cpu", threads=2, parallel_threshold=1)) == want
    if "cuda" in rs.targets():
        assert gradient(dict(target="cuda")) == want
