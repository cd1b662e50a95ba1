"""simulations/arap.py: as-rigid-as-possible deformation by relsim.optimize.least_squares; the
checks pass, the cost is SciPy's, the vtu is written, and the iterates are the same bits on
every target."""
import numpy as np
import pytest

import relsim as rs
from relsim import optimize
from relsim_simulations import arap as sim
from tests.conftest import configured

pytest.importorskip("scipy")
CPU = ["--target", "cpu"]  # main() sets the process-wide target: each test pins its own


def test_the_checks_pass_and_the_cost_is_scipys(capsys, tmp_path):
    out = tmp_path / "arap.vtu"
    assert sim.main(CPU + ["--nx", "16", "--ny", "8", "--check-scipy", "--output",
                           str(out)]) == 0, capsys.readouterr().out
    text = capsys.readouterr().out
    assert "checks: passed" in text and "relative difference" in text and out.exists()


def test_a_wrong_handle_target_fails_the_check(capsys):
    """The check is not empty: handles that cannot be met (weight 1e-6: the handles barely
    count) leave them far from their targets, and the run fails."""
    assert sim.main(CPU + ["--nx", "12", "--ny", "6", "--weight", "1e-6"]) == 1
    assert "checks: FAILED" in capsys.readouterr().out


def solve(config):
    with configured(**config):
        mesh, run, res, unk, rest, _ = sim.build(10, 5)
        info = optimize.least_squares(run, res, unk, weights={res[1]: 100.0},
                                      max_iterations=5)
        return mesh.vertices.p.numpy().tobytes(), info.costs


def test_the_iterates_are_the_same_bits_on_every_target():
    want = solve(dict(target="cpu", threads=1))
    assert solve(dict(target="interp")) == want
    assert solve(dict(target="cpu", threads=2, parallel_threshold=1)) == want
    if "cuda" in rs.targets():
        assert solve(dict(target="cuda")) == want
    assert np.isfinite(np.frombuffer(want[0])).all()
