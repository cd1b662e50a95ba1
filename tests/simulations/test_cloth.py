"""simulations/cloth.py: the cloth's checks at a small size, the same bits on every target and
thread count, output files, and checks that fail loudly."""
import os

import meshio
import numpy as np
import pytest

import relsim as rs
from relsim_simulations import cloth
from tests.conftest import configured

CPU = ["--target", "cpu"]  # main() sets the process-wide target: each test pins its own


def run(config, n=2, frames=2, substeps=5):
    mesh, pairs = cloth.sheet(n)
    with configured(**config):
        history, _ = cloth.simulate(mesh, pairs, frames, substeps)
    return mesh.vertices.x.numpy().tobytes(), [v.hex() for k in sorted(history)
                                               for v in history[k]]


def test_the_sheet_has_edges_and_bending_pairs():
    mesh, pairs = cloth.sheet(3)
    assert len(pairs) == mesh.edges.size + (mesh.edges.size - 12)  # a bend per interior edge
    pos = mesh.vertices.pos.numpy()
    bends = pairs[mesh.edges.size:]
    assert np.all(np.linalg.norm(pos[bends[:, 0]] - pos[bends[:, 1]], axis=1) > 1 / 3 - 1e-12)


def test_the_cloth_lands_on_the_sphere_without_going_through(capsys):
    assert cloth.main(CPU + ["--n", "6", "--frames", "40"]) == 0, capsys.readouterr().out
    assert "OK: the cloth rests on the sphere" in capsys.readouterr().out


def test_failed_checks_say_so_and_exit_1(capsys):
    assert cloth.main(CPU + ["--n", "4", "--frames", "30", "--strain", "0"]) == 1
    assert "FAILED: an edge was stretched" in capsys.readouterr().out
    assert cloth.main(CPU + ["--n", "4", "--frames", "5"]) == 1  # it has not fallen that far yet
    assert "never reached the sphere" in capsys.readouterr().out
    history = {"closest": [0.3, 0.2], "strain": [0.0, 0.01]}
    assert any("inside the sphere" in p for p in cloth.check(history))
    history["strain"][0] = float("nan")
    assert any("NaN" in p for p in cloth.check(history))


def test_interp_and_cpu_give_the_same_bits():
    assert run(dict(target="interp")) == run(dict(target="cpu"))


def test_one_and_two_threads_give_the_same_bits():
    one = run(dict(target="cpu", threads=1, parallel_threshold=1), n=6, frames=3, substeps=20)
    assert one == run(dict(target="cpu", threads=2, parallel_threshold=1), n=6, frames=3,
                      substeps=20)
    assert one == run(dict(target="cpu"), n=6, frames=3, substeps=20)


@pytest.mark.skipif("cuda" not in rs.targets(), reason="numba-cuda is not installed")
def test_cuda_gives_the_cpus_bits():
    assert run(dict(target="cuda"), frames=1, substeps=3) == \
        run(dict(target="cpu"), frames=1, substeps=3)


def test_output_is_a_paraview_series(tmp_path):
    out = tmp_path / "out"
    assert cloth.main(CPU + ["--n", "4", "--frames", "30", "--output", str(out)]) == 0
    names = sorted(os.listdir(out))
    assert names == ["cloth.pvd"] + [f"cloth_{k:06d}.vtu" for k in range(30)]
    last = meshio.read(out / "cloth_000029.vtu")
    x = last.point_data["x"]
    pinned = (last.points[:, 1] == 0.0) & np.isin(last.points[:, 0], [0.0, 1.0])
    assert np.array_equal(x[pinned][:, 2], [cloth.HEIGHT, cloth.HEIGHT])  # never moved
    assert x[~pinned][:, 2].min() < cloth.HEIGHT - 0.2  # the rest fell
