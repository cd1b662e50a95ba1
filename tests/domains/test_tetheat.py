"""simulations/tetheat.py: P1 conductances from kernels, conservation, output files, CLI."""
import os
import subprocess
import sys

import meshio
import numpy as np
import pytest
from meshio.xdmf import TimeSeriesReader

from relsim.domains import cells, tetmesh
from relsim_simulations import tetheat
from tests.conftest import SIM_CONFIGS, configured

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def p1_conductances(mesh):
    """-K_ij of the P1 stiffness matrix per edge, assembled in NumPy."""
    p, t = mesh.vertices.pos.numpy(), mesh.tets.v.numpy()
    k = np.zeros(len(mesh.edges))
    lookup = {tuple(e): i for i, e in enumerate(mesh.edges.v.numpy())}
    for tet in t:
        J = (p[tet[1:]] - p[tet[0]]).T
        g = np.linalg.inv(J)                       # rows: gradients of the barycentrics 1..3
        grads = np.vstack([-g.sum(0), g])
        vol = np.linalg.det(J) / 6.0
        for a, b in cells.TETRA.edges:
            k[lookup[tuple(sorted((tet[a], tet[b])))]] -= vol * grads[a] @ grads[b]
    return k


@pytest.mark.device_sized
def test_kernels_compute_p1_conductances_and_capacity(use_target):
    mesh = tetmesh.box(2, 2, 1, size=(1.0, 2.0, 0.5))
    setup, *_ = tetheat.build(mesh)
    setup()
    assert np.allclose(mesh.edges.k.numpy(), p1_conductances(mesh), rtol=1e-12, atol=1e-14)
    assert (mesh.edges.k.numpy() >= -1e-15).all()        # Kuhn tets are non-obtuse
    assert np.isclose(mesh.vertices.c.numpy().sum(), 1.0)
    assert np.allclose(mesh.tets.vol.numpy(), 1.0 / len(mesh.tets))


def test_main_conserves_heat_and_writes_series(tmp_path, capsys):
    out = tmp_path / "out"
    rc = tetheat.main(["--n", "2", "--steps", "12", "--every", "5", "--target", "interp",
                       "--output", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "OK: heat conserved" in text
    assert sorted(os.listdir(out)) == ["tetheat.h5", "tetheat.pvd", "tetheat.xdmf",
                                       "tetheat_000000.vtu", "tetheat_000001.vtu",
                                       "tetheat_000002.vtu", "tetheat_000003.vtu"]
    reader = TimeSeriesReader(str(out / "tetheat.xdmf"))
    reader.read_points_cells()
    assert reader.num_steps == 4
    first = meshio.read(out / "tetheat_000000.vtu").point_data["T"]
    _, last, _ = reader.read_data(3)
    assert last["T"].max() < first.max()                # it diffused
    assert np.array_equal(meshio.read(out / "tetheat_000003.vtu").point_data["T"], last["T"])


def test_main_reports_bad_mesh_file(tmp_path, capsys):
    path = tmp_path / "tri.vtu"
    meshio.write(path, meshio.Mesh(np.eye(3), [("triangle", np.array([[0, 1, 2]]))]))
    assert tetheat.main(["--mesh", str(path), "--target", "interp"]) == 2
    assert "no tetra cells" in capsys.readouterr().out


def test_cli_runs_tetheat():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    res = subprocess.run([sys.executable, "-m", "relsim.cli", "run", "tetheat", "--n", "2",
                          "--steps", "5", "--target", "interp"], capture_output=True,
                         text=True, env=env, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert "OK: heat conserved" in res.stdout


@pytest.mark.parametrize("cfg", SIM_CONFIGS.values(), ids=SIM_CONFIGS.keys())
def test_the_captured_step_gives_the_launch_by_launch_bits(cfg):
    """`simulate` replays its step (`rs.capture`) unless capture=False (`--no-capture`)."""
    out = {}
    for capture in (True, False):
        mesh = tetmesh.box(3, 2, 2)
        with configured(**cfg):
            initial, history, dt = tetheat.simulate(mesh, 8, capture=capture)
        out[capture] = (mesh.vertices.T.numpy().tobytes(), [h.hex() for h in history])
    assert out[True] == out[False]
