"""bench/gpu_check.py --tiny end to end (in numba's CUDA simulator here): every part runs and
prints its row, cuda's answers bit-exact with the cpu's, in one table."""
import os
import pathlib
import subprocess
import sys

import pytest

import relsim as rs

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.skipif("cuda" not in rs.targets(), reason="numba.cuda is not importable")
def test_gpu_check_tiny_runs_every_part():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(ROOT)] + sys.path))
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--tiny",
                          "--tests", "42 passed"], capture_output=True, text=True, env=env,
                         timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    table = text[text.index("| part"):]
    for what in ("cuda tests on the device | 42 passed", "LULESH s=2, first 2 cycles",
                 "LULESH s=3", "Airfoil 72 cells, 3 iterations", "heat, Kuhn cube n=2",
                 "streaming update", "launch overhead", "elastic particles (300 rows): 1% "
                 "deleted + re-inserted per launch"):
        assert what in " ".join(table.split()), (what, table)
    assert "failed" not in table and "stopped" not in table
    assert table.count("bit-exact vs cpu: yes") == 3  # LULESH x2, Airfoil
    assert table.count("cuda = cpu bit for bit after 3 launches: yes") == 3
    assert "relsim cuda = serial Numba loop bit for bit: yes" in table


@pytest.mark.skipif("cuda" not in rs.targets(), reason="numba.cuda is not importable")
def test_gpu_check_skips_a_part_without_time_and_says_why():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(ROOT)] + sys.path))
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--tiny",
                          "--budget", "5", "--parts", "airfoil"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert "Airfoil | skipped: time budget (5 s left, the part needs ~30 s)" in \
        " ".join(out.stdout.split()), out.stdout + out.stderr
