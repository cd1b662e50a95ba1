"""OP2 Airfoil: the op2mesh relations, the port's determinism (interp = cpu = cpu-serial, any
thread count) and bit-exactness against the hand-written Numba baseline in bench/.

Meshes are generated in-process (I=20, J=30 is the CI-sized mesh, 400 x 600 the standard one for
the 100-iteration check against the published rms; RELSIM_AIRFOIL_MESH may name the file)."""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys

import numba
import numpy as np
import pytest

import relsim as rs
from relsim import domains
from relsim_simulations import airfoil
from relsim_simulations.airfoil import solver

ROOT = pathlib.Path(__file__).resolve().parents[2]
I, J = 20, 30  # noqa: E741


def _handwritten():
    path = ROOT / "bench" / "airfoil_numba.py"
    if not path.exists():
        pytest.skip("bench/airfoil_numba.py not present")
    spec = importlib.util.spec_from_file_location("airfoil_numba_peer", path)
    mod = importlib.util.module_from_spec(spec)
    # registered: Numba's cache finds the module of a cached function by name
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def mesh():
    return domains.get("op2mesh").naca_mesh(I, J)


def _run(mesh, iterations, target="cpu", threads=None):
    cfg = rs.Config(target=target, threads=threads,
                    parallel_threshold=1 if target == "cpu" else 1 << 30)
    if threads is not None:
        numba.set_num_threads(threads)
    try:
        af = solver.build(mesh)
        hist = solver.solve(af, iterations, cfg)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return hist, af.cells.q.numpy().copy()


def test_op2mesh_relations_are_the_reference_sets_and_maps(mesh):
    m = domains.get("op2mesh").mesh_relations(mesh)
    assert [r.size for r in m] == [1891, 1800, 3530, 140]
    assert m.edges.pecell.type.n == 2 and m.edges.pecell.type.relation is m.cells
    assert m.edges.pedge.type.n == 2 and m.edges.pedge.type.relation is m.nodes
    assert m.cells.pcell.type.n == 4 and m.bedges.pbedge.type.n == 2
    assert m.bedges.pbecell.type.relation is m.cells
    np.testing.assert_array_equal(m.edges.pecell.numpy(), mesh.ecell)
    np.testing.assert_array_equal(m.cells.pcell.numpy(), mesh.cell)
    np.testing.assert_array_equal(m.bedges.pbecell.numpy(), mesh.becell)
    np.testing.assert_array_equal(m.nodes.x.numpy(), mesh.x)
    assert m.bedges.bound.numpy().dtype == np.int32
    assert sorted(set(m.bedges.bound.numpy().tolist())) == [1, 2]


def test_load_reads_the_ascii_format(tmp_path, mesh):
    op2 = domains.get("op2mesh")
    path = tmp_path / "grid.dat"
    op2.write_op2(mesh, path)
    m = op2.load(path)
    np.testing.assert_array_equal(m.edges.pedge.numpy(), mesh.edge)
    np.testing.assert_array_equal(m.nodes.x.numpy(), mesh.x)


def test_constants_are_the_float32_literals():
    assert solver.GAM == 1.399999976158142 and solver.GM1 == 0.3999999761581421
    assert solver.CFL == 0.8999999761581421 and solver.EPS == 0.05000000074505806
    assert solver.QINF == (1.0, 0.4732863856704763, 0.0, 2.612000150442132)


def test_interp_cpu_and_serial_agree_bitwise(mesh):
    want_h, want_q = _run(mesh, 1, "interp")  # one iteration runs every kernel twice
    for target in ("cpu", "cpu-serial"):
        h, q = _run(mesh, 1, target)
        assert h.tobytes() == want_h.tobytes(), target
        assert q.tobytes() == want_q.tobytes(), target


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 Numba threads")
def test_one_and_two_threads_agree_bitwise(mesh):
    h1, q1 = _run(mesh, 10, "cpu", threads=1)
    h2, q2 = _run(mesh, 10, "cpu", threads=2)
    assert h1.tobytes() == h2.tobytes()
    assert q1.tobytes() == q2.tobytes()


def test_bit_exact_with_the_handwritten_numba(mesh):
    peer = _handwritten()
    want_h, want_q = peer.run(mesh, 25)
    h, q = _run(mesh, 25, "cpu")
    assert h.tobytes() == want_h.tobytes()
    assert q.tobytes() == want_q.tobytes()
    assert 1e-3 < h[-1] < h[0]  # the residual falls


def test_run_prints_the_table_and_writes_full_precision_json(tmp_path, capsys):
    out = tmp_path / "rms.json"
    assert airfoil.main(["--size", "4", "6", "--iterations", "6", "--every", "3",
                         "--json", str(out)]) == 0
    text = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert len(data["rms"]) == 6 and data["ncell"] == 72
    assert f"    6  {data['rms'][5]:10.5e}" in text and f"    3  {data['rms'][2]:10.5e}" in text
    h, q = _run(domains.get("op2mesh").naca_mesh(4, 6), 6)
    assert data["rms"] == h.tolist()  # JSON floats round-trip exactly
    assert data["q_sha256"] == solver.q_sha256(q)


def test_output_writes_the_flow_per_cell_of_the_quad_mesh(tmp_path, capsys):
    import meshio
    out = tmp_path / "flow.vtu"
    assert airfoil.main(["--size", "4", "6", "--iterations", "3", "--output", str(out)]) == 0
    m = meshio.read(out)
    (block,) = m.cells
    assert block.type == "quad" and len(block.data) == 72
    q = np.asarray(_run(domains.get("op2mesh").naca_mesh(4, 6), 3)[1])
    assert np.array_equal(m.cell_data["density"][0], q[:, 0])
    mach = m.cell_data["mach"][0]
    assert np.all(np.isfinite(mach)) and 0.0 < mach.min() and mach.max() < 1.0
    from relsim_simulations import _render
    assert _render.series_files(str(out)) == [(0.0, str(out))]  # a single .vtu: one step
    pytest.importorskip("matplotlib")
    png = _render.render(str(out), str(tmp_path / "flow.png"), "mach", view=(90, -90),
                         window=(-0.4, 1.6, -0.6, 0.6))
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit, match="no face"):
        _render.render(str(out), str(tmp_path / "none.png"), "mach", window=(50, 60, 50, 60))


def test_a_run_restarted_from_a_checkpoint_ends_with_the_same_bits(tmp_path, capsys):
    full, ckpt, restarted = (tmp_path / f"{n}.json" for n in ("full", "ckpt", "restarted"))
    common = ["--size", "4", "6", "--every", "100"]
    assert airfoil.main([*common, "--iterations", "9", "--json", str(full)]) == 0
    assert airfoil.main([*common, "--iterations", "5", "--json", str(ckpt), "--checkpoint",
                         str(tmp_path / "c.h5"), "--checkpoint-every", "2"]) == 0
    assert airfoil.main([*common, "--iterations", "9", "--json", str(restarted), "--restart",
                         str(tmp_path / "c.h5")]) == 0
    assert "restarted from" in capsys.readouterr().out
    want, got = json.loads(full.read_text()), json.loads(restarted.read_text())
    assert got["rms"] == want["rms"] and got["q_sha256"] == want["q_sha256"]  # (from it. 4)
    with pytest.raises(SystemExit):
        airfoil.main([*common, "--checkpoint", "x.h5", "--checkpoint-every", "0"])


def test_cli_dispatches_run_and_bench_names():
    from relsim import cli
    assert "airfoil" in cli.simulations()
    with pytest.raises(SystemExit, match="no simulation"):
        cli.main(["bench", "nosuchsim"])


def test_standard_mesh_100_iterations():
    """The standard mesh: the file named by RELSIM_AIRFOIL_MESH, else generated in-process (the
    generator reproduces the file bit for bit: tests/domains/test_op2mesh.py checks its sha256).
    About 15 s."""
    op2 = domains.get("op2mesh")
    path = os.environ.get("RELSIM_AIRFOIL_MESH")
    mesh = op2.read_op2(path) if path else op2.naca_mesh(400, 600)
    assert mesh.ncell == solver.STANDARD_NCELL
    h, q = _run(mesh, 100, "cpu")
    assert f"{h[99]:10.5e}".strip() == solver.PUBLISHED_RMS[100]
    try:
        peer = _handwritten()
    except pytest.skip.Exception:
        return
    want_h, want_q = peer.run(mesh, 100)
    assert h.tobytes() == want_h.tobytes() and q.tobytes() == want_q.tobytes()


def test_explicit_gather_formulation_gives_the_same_bits(mesh):
    from relsim_simulations.airfoil import gather
    h, q = _run(mesh, 10, "cpu")
    g = gather.build(mesh)
    hg = gather.solve(g, 10, rs.Config(target="cpu", parallel_threshold=1))
    assert hg.tobytes() == h.tobytes()
    assert g.cells.q.numpy().tobytes() == q.tobytes()


def test_bench_smoke(tmp_path, capsys):
    md = tmp_path / "benchmarks.md"
    assert airfoil.bench(["--size", "3", "4", "--iterations", "3", "--repeats", "1",
                          "--threads", "1", "--no-startup", "--profile", "2", "--markdown", str(md),
                          "--png", str(tmp_path / "a.png")]) == 0
    out = capsys.readouterr().out
    assert "relsim = hand-written Numba bit for bit (rms history and q): yes" in out
    assert "relsim = relsim-gather bit for bit: yes" in out
    text = md.read_text()
    assert text.startswith("# relsim benchmarks") and "## Airfoil" in text
    assert "| relsim " in text and "| numba " in text
