"""simulations/sph.py: the dam break's checks, the same bits on every target and thread count,
and errors that say what is wrong."""
import numpy as np
import pytest

import relsim as rs
from relsim_simulations import sph
from tests.conftest import configured

CPU = ["--target", "cpu"]  # main() sets the process-wide target: each test pins its own


def corner(n=3):
    """A small piece of the tank: the column's lower part and the walls around it (~240
    particles, for the interpreter and the CUDA simulator)."""
    pos, flags, dx, origin, size = sph.layout(n, 8, 1.0)
    keep = (pos[:, 0] < 0.7) & (pos[:, 2] < 0.9)
    return pos[keep], flags[keep], dx, origin, size


def run(config, steps=1, piece=None):
    with configured(**config):
        _, parts, step, observe, _, _ = sph.assemble(*(piece or corner()))
        seen = []
        for _ in range(steps):
            step()
            seen.append(observe())
        P = parts.rel
        state = [P.pos.numpy().tobytes(), P.vel.numpy().tobytes(), P.rho.numpy().tobytes()]
    return state, [repr(sorted(s.items())) for s in seen]


def test_the_layout_is_a_column_in_a_walled_tank():
    pos, flags, dx, origin, size = sph.layout(4, 8, 5.0)
    assert flags.sum() == 4 * 8 * 8 and dx == 0.25
    fluid = pos[flags]
    assert fluid[:, 0].max() < sph.A and fluid[:, 2].max() < 2 * sph.A
    assert np.all(pos - origin > 0) and np.all(pos - origin < size)
    walls = pos[~flags]  # three layers below the floor and behind each end
    assert np.isclose(walls[:, 2].min(), -2.5 * dx) and np.isclose(walls[:, 0].max(), 5 + 2.5 * dx)
    assert len(np.unique(pos.round(9), axis=0)) == len(pos)  # no two particles at one place


def test_the_column_collapses_like_martin_and_moyces(capsys):
    assert sph.main(CPU + ["--n", "4", "--until", "1.3"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "OK: particle count and mass exact" in out and "T 1.219:" in out


def test_failed_checks_and_bad_sizes_say_so(capsys):
    assert sph.main(CPU + ["--n", "3", "--until", "0.9", "--front", "0"]) == 1
    assert "FAILED: the front at T = 0.832 is Z = " in capsys.readouterr().out
    assert sph.main(CPU + ["--n", "2"]) == 2
    assert "needs n >= 3" in capsys.readouterr().out
    assert sph.main(CPU + ["--depth", "5"]) == 2
    assert "3 cell-list cells" in capsys.readouterr().out
    facts = {"fluid": 10, "mass": 0.5}
    history = {"front": [1.0, 1.1], "T": [0.0, 0.5], "count": [10, 9], "mass": [5.0, 5.0],
               "near": [1.0, 0.4], "top": [1.0, 1.07]}
    problems = " ".join(sph.check(history, facts))
    for words in ("particles became [9, 10]", "only 40% of the fluid", "compressed to 1.07"):
        assert words in problems
    history.update(count=[10, 10], mass=[5.0, 4.5], front=[1.0, float("nan")])
    assert "front: 1 NaN or infinite value(s)" in " ".join(sph.check(history, facts))
    history["front"] = [1.0, 1.1]
    assert "mass 5.0 became [4.5, 5.0]" in " ".join(sph.check(history, facts))


def test_interp_and_cpu_give_the_same_bits():
    assert run(dict(target="interp")) == run(dict(target="cpu"))


def test_one_and_two_threads_give_the_same_bits():
    piece = sph.layout(3, 8, 1.5)
    one = run(dict(target="cpu", threads=1, parallel_threshold=1), steps=20, piece=piece)
    assert one == run(dict(target="cpu", threads=2, parallel_threshold=1), steps=20, piece=piece)


@pytest.mark.skipif("cuda" not in rs.targets(), reason="numba-cuda is not installed")
def test_cuda_gives_the_cpus_bits():
    assert run(dict(target="cuda")) == run(dict(target="cpu"))
