"""The grid and particle simulations run and pass their own checks."""
import math

import relsim as rs
from relsim_simulations import diffusion2d, particles2d


def test_diffusion_converges_at_second_order():
    e1, _ = diffusion2d.run(16)
    e2, _ = diffusion2d.run(32)
    assert 1.8 < math.log2(e1 / e2) < 2.2


def test_diffusion_writes_paraview_output(tmp_path):
    diffusion2d.run(8, output=str(tmp_path))
    assert (tmp_path / "diffusion2d.pvd").exists()
    assert list(tmp_path.glob("diffusion2d_*.vtu"))


def test_particles_conserve_count_and_bin(tmp_path):
    out = particles2d.simulate(steps=30, n_cells=8, n_particles=400, output=str(tmp_path))
    assert particles2d.check(*out) == []
    g, parts, initial, glob = out
    assert glob["left"].value > 0 and glob["born"].value == 30 * 2 * 3
    assert list(tmp_path.glob("particles_*.vtu"))


def test_particles_interp_matches_cpu():
    res = {}
    for t in ("interp", "cpu"):
        old = rs.config.current()
        rs.configure(target=t)
        try:
            g, parts, initial, glob = particles2d.simulate(steps=4, n_cells=6, n_particles=60)
        finally:
            rs.configure(target=old.target)
        res[t] = (parts.rel.pos.numpy().tobytes(), g.cells.count.numpy().tolist())
    assert res["interp"] == res["cpu"]
