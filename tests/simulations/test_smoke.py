"""simulations/smoke.py: stable fluids' checks, the same bits (fields, history, every CG
residual) on every target and thread count, and errors that say what is wrong."""
import numpy as np
import pytest

import relsim as rs
from relsim_simulations import smoke
from tests.conftest import configured

CPU = ["--target", "cpu"]  # main() sets the process-wide target: each test pins its own


def run(config, n=16, steps=2, rtol=smoke.RTOL):
    with configured(**config):
        C, history = smoke.simulate(n, steps=steps, rtol=rtol)
    state = b"".join(C.field(f).numpy().tobytes() for f in ("ux", "uy", "d", "p"))
    return state, [repr(v) for k in sorted(history) for v in history[k]]


def test_the_plume_rises_divergence_free(capsys):
    assert smoke.main(CPU + ["--n", "16", "--steps", "30"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "OK: divergence-free" in out and "CG iterations per step: mean" in out


def test_the_source_block_and_the_projection():
    g, step, measured, _, _ = smoke.build(32)
    C = g.cells
    assert len(smoke.source_rows(C.center.numpy())) == 4 * 2  # 4 x 2 cells at n = 32
    info = step()
    before, after, mass, height = measured()
    assert info.converged and after <= 1e-8 * 32 * before and before > 0
    assert 0.0 < mass <= 8.0 and 0.0625 < height < 0.1875  # the source's smoke, moved < 1 cell
    ux, uy = C.ux.numpy().reshape(32, 32), C.uy.numpy().reshape(32, 32)  # [j, i]
    div = (np.roll(ux, -1, axis=1) - ux + np.roll(uy, -1, axis=0) - uy) * 32
    assert np.abs(div).max() == pytest.approx(after, rel=1e-6, abs=1e-12)


def test_failed_checks_and_bad_sizes_say_so(capsys):
    assert smoke.main(CPU + ["--n", "16", "--steps", "1"]) == 1  # nothing has risen yet
    assert "FAILED: the smoke did not rise" in capsys.readouterr().out
    assert smoke.main(CPU + ["--n", "8", "--steps", "1"]) == 2
    assert "no cell centre in the source block" in capsys.readouterr().out
    assert smoke.main(CPU + ["--n", "2"]) == 2
    assert "too small" in capsys.readouterr().out
    history = {"before": [1.0, 1.0], "after": [0.0, 1e-3], "mass": [1.0, 1.0],
               "height": [0.1, 0.2], "iterations": [3, 3], "converged": [True, False],
               "residuals": [[1.0, 0.0], [1.0, 0.0]]}
    problems = smoke.check(history, 16, 1e-8)
    assert any("max |div u|" in p and "step 2" in p for p in problems), problems
    assert any("CG did not converge at 1 step(s), the first step 2" in p for p in problems)
    history["after"][1] = float("nan")
    assert any("NaN" in p for p in smoke.check(history, 16))


def test_interp_and_cpu_give_the_same_bits():
    assert run(dict(target="interp")) == run(dict(target="cpu"))


def test_one_and_two_threads_give_the_same_bits():
    one = run(dict(target="cpu", threads=1, parallel_threshold=1))
    assert one == run(dict(target="cpu", threads=2, parallel_threshold=1))


@pytest.mark.skipif("cuda" not in rs.targets(), reason="numba-cuda is not installed")
def test_cuda_gives_the_cpus_bits():
    tiny = dict(n=14, steps=1, rtol=1e-3)  # a few CG iterations: the simulator is slow
    assert run(dict(target="cuda"), **tiny) == run(dict(target="cpu"), **tiny)
