"""A simulation never reports a pass on a NaN or an infinity (issue 12: `max T nan` followed by
`OK: heat conserved`)."""
import numpy as np

from relsim_simulations import heat
from relsim_simulations._checks import nonfinite


def test_nonfinite_names_the_array_the_count_and_the_first_row():
    assert nonfinite(T=np.ones(4), pos=np.zeros((3, 2))) == []
    T = np.array([1.0, np.nan, 2.0, np.inf])
    pos = np.zeros((3, 2))
    pos[2, 1] = -np.inf
    assert nonfinite(T=T, pos=pos) == [
        "T: 2 NaN or infinite value(s), the first at row 1",
        "pos: 1 NaN or infinite value(s), the first at row 2"]
    assert nonfinite(rms=[0.5, float("nan")]) == \
        ["rms: 1 NaN or infinite value(s), the first at row 1"]


def test_heat_blowing_up_fails(capsys):
    # far beyond the stable step: the temperatures overflow to inf, then NaN
    assert heat.main(["--nx", "20", "--ny", "20", "--dt", "1e3", "--steps", "300"]) == 1
    out = capsys.readouterr().out
    assert "FAILED: T:" in out and "OK" not in out
    assert heat.main(["--nx", "20", "--ny", "20", "--steps", "5"]) == 0
