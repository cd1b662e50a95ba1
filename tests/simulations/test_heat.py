"""simulations/heat.py: heat conserved to round-off, its step replayed by `rs.capture` with the
bits of the launch-by-launch step on every target and thread count."""
import pytest

from relsim_simulations import heat
from tests.conftest import SIM_CONFIGS, configured


@pytest.mark.parametrize("cfg", SIM_CONFIGS.values(), ids=SIM_CONFIGS.keys())
def test_the_captured_step_gives_the_launch_by_launch_bits(cfg):
    out = {}
    for capture in (True, False):
        with configured(**cfg):
            V, initial, history = heat.simulate(7, 5, 12, 0.1, capture=capture)
        out[capture] = (V.T.numpy().tobytes(), [h.hex() for h in history])
    assert out[True] == out[False]
    assert abs(float.fromhex(out[True][1][-1]) - initial) <= 1e-13 * abs(initial)


@pytest.mark.parametrize("flag", [[], ["--no-capture"]])
def test_main_conserves_heat_either_way(flag, capsys):
    assert heat.main(["--nx", "9", "--ny", "6", "--steps", "20", "--target", "cpu"] + flag) == 0
    assert "OK: heat conserved to round-off" in capsys.readouterr().out
