"""simulations/fem.py: the Neo-Hookean beam's physics checks at a small size, the same bits on
every target and thread count, output files, and a check that fails loudly."""
import os

import meshio
import numpy as np
import pytest

import relsim as rs
from relsim_simulations import fem
from tests.conftest import configured

CPU = ["--target", "cpu"]  # main() sets the process-wide target: each test pins its own


def run(config, n=1, steps=30, every=10):
    mesh = fem.beam(n)
    with configured(**config):
        history = fem.simulate(mesh, fem.time_step(n), steps, every)
    return mesh.vertices.x.numpy().tobytes(), [v.hex() for k in sorted(history)
                                               for v in history[k]]


def test_the_beam_sags_as_a_cantilever_and_conserves_energy(capsys):
    rc = fem.main(CPU + ["--n", "3", "--steps", "1200", "--every", "20"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "OK: energy conserved" in text
    assert "648 tets" in text


def test_a_failed_check_says_so_and_exits_1(capsys):
    # no coarse linear-tet beam reaches the linear-elastic deflection: a tolerance of 0 fails
    assert fem.main(CPU + ["--n", "2", "--steps", "1000", "--tolerance", "0"]) == 1
    assert "FAILED: the static tip deflection" in capsys.readouterr().out


def test_the_check_catches_energy_drift():
    history = {"energy": [0.0, 0.5, 0.0], "kinetic": [0.0, 1.0, 0.2], "sag": [0.0, 0.4, 0.2]}
    assert any("drifted" in p for p in fem.check(history, drift_tol=0.1))
    history["energy"][1] = float("nan")
    assert any("NaN" in p for p in fem.check(history))


def test_interp_and_cpu_give_the_same_bits():
    assert run(dict(target="interp"), steps=6, every=3) == \
        run(dict(target="cpu"), steps=6, every=3)


def test_one_and_two_threads_give_the_same_bits():
    one = run(dict(target="cpu", threads=1, parallel_threshold=1), n=2)
    assert one == run(dict(target="cpu", threads=2, parallel_threshold=1), n=2)
    assert one == run(dict(target="cpu"), n=2)  # serial


@pytest.mark.skipif("cuda" not in rs.targets(), reason="numba-cuda is not installed")
def test_cuda_gives_the_cpus_bits():
    assert run(dict(target="cuda"), steps=4, every=2) == run(dict(target="cpu"), steps=4,
                                                             every=2)


def test_output_is_a_paraview_series(tmp_path, capsys):
    out = tmp_path / "out"
    assert fem.main(CPU + ["--n", "2", "--steps", "1000", "--every", "250", "--tolerance", "0.5",
                     "--output", str(out)]) == 0  # (n = 2 sags 0.51 of the estimate)
    names = sorted(os.listdir(out))
    assert names == ["fem.pvd"] + [f"fem_{k:06d}.vtu" for k in range(5)]
    steps = [meshio.read(out / f"fem_{k:06d}.vtu") for k in range(5)]
    assert steps[0].point_data["u"].shape == (81, 3)
    assert not steps[0].point_data["u"].any()  # at rest, at first
    assert min(s.point_data["u"][:, 2].min() for s in steps) < -0.1  # it sagged (and swung)
    for s in steps:  # the clamped end never moved
        assert np.all(s.point_data["u"][s.points[:, 0] == 0.0] == 0.0)


def test_the_gallery_picture_renders_from_the_output(tmp_path):
    from relsim_simulations import _render
    out = tmp_path / "out"
    assert fem.main(CPU + ["--n", "1", "--steps", "400", "--every", "200", "--tolerance", "1",
                     "--output", str(out)]) == 0
    files = _render.series_files(str(out / "fem.pvd"))
    assert [os.path.basename(p) for _, p in files] == [f"fem_{k:06d}.vtu" for k in range(3)]
    mesh = meshio.read(files[0][1])
    faces = _render.surface(mesh)
    assert len(faces) == 2 * 2 * (4 + 4 + 1)  # the box's 4x1x1 cube faces, two triangles each
    pytest.importorskip("matplotlib")
    png = _render.render(str(out / "fem.pvd"), str(tmp_path / "fem.png"), "u", warp="u")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
