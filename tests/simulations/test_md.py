"""simulations/md.py: the Lennard-Jones fluid's checks, the same bits on every target and
thread count, and errors that say what is wrong."""
import numpy as np
import pytest

import relsim as rs
from relsim_simulations import md
from tests.conftest import configured

CPU = ["--target", "cpu"]  # main() sets the process-wide target: each test pins its own


def run(config, m=3, steps=2, density=0.2):  # a gas: 108 atoms, 3 cells a side
    with configured(**config):
        atoms, history = md.simulate(m, steps=steps, every=1, density=density)
    return atoms.rel.pos.numpy().tobytes(), [v.hex() for k in sorted(history)
                                             for v in history[k]]


def test_the_lattice_has_the_density_and_temperature():
    pos, vel, side = md.lattice(4)
    assert len(pos) == 256 and np.isclose(256 / side ** 3, md.DENSITY)
    assert np.all((pos >= 0) & (pos < side))
    assert np.allclose(vel.sum(axis=0), 0.0, atol=1e-12)
    assert np.isclose((vel * vel).sum() / (3 * 255), md.TEMPERATURE)


def test_the_liquid_conserves_energy_and_momentum(capsys):
    assert md.main(CPU + ["--m", "5", "--steps", "200"]) == 0, capsys.readouterr().out
    assert "OK: energy conserved" in capsys.readouterr().out


def test_failed_checks_and_bad_sizes_say_so(capsys):
    assert md.main(CPU + ["--m", "5", "--steps", "20", "--drift", "0"]) == 1
    assert "FAILED: total energy drifted" in capsys.readouterr().out
    assert md.main(CPU + ["--m", "3", "--steps", "1"]) == 2  # 108 atoms of liquid: a box too small
    assert "cell lists need at least 3" in capsys.readouterr().out
    history = {"energy": [1.0, 1.0], "kinetic": [1.0, 1.0], "momentum": [0.0, 1.0]}
    assert any("momentum" in p for p in md.check(history, 10, 10))
    assert any("became" in p for p in md.check(history, 10, 9))


def test_interp_and_cpu_give_the_same_bits():
    assert run(dict(target="interp")) == run(dict(target="cpu"))


def test_one_and_two_threads_give_the_same_bits():
    one = run(dict(target="cpu", threads=1, parallel_threshold=1))
    assert one == run(dict(target="cpu", threads=2, parallel_threshold=1))


@pytest.mark.skipif("cuda" not in rs.targets(), reason="numba-cuda is not installed")
def test_cuda_gives_the_cpus_bits():
    assert run(dict(target="cuda")) == run(dict(target="cpu"))
